/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The window's door without the window (tl-headless.h). Nothing here decides anything about the
 * run: the document, the job and its steps are the window's, so what this writes is what the
 * window would show after the run's last sub-iteration. */
#include "tl-headless.h"
#include <stdio.h>
#include "tl-dataset.h"
#include "dataset/tl-formats.h"
#include "run/tl-run-sidecar.h"
#include "tl-race-job.h"

static int fail(GError *error) {
  fprintf(stderr, "tomolab --run: %s\n", error->message);
  g_error_free(error);
  return 1;
}

int tl_headless_run(const char *run_path, const char *output, const char *device) {
  GError *error = NULL;
  g_autoptr(TlRunSpec) run = tl_run_spec_load(run_path, &error);
  if (!run || (output && !tl_run_spec_set(run, "output", output, &error)) ||
      (device && !tl_run_spec_set(run, "device", device, &error)) ||
      !tl_run_spec_validate(run, &error))
    return fail(error);
  if (!run->data || !run->output) {
    fprintf(stderr, "tomolab --run: %s: %s\n", run_path,
            !run->data ? "no data = FILE" : "no output = FILE (or --output IMAGE)");
    return 1;
  }
  /* what the window has no way to run: refused rather than left out of the image */
  if (run->kernels || run->resume || run->checkpoint) {
    fprintf(stderr, "tomolab --run: %s: %s: the window runs no %s from a run file (use "
            "tomolab-cli recon --run)\n", run_path,
            run->kernels ? "kernels" : run->resume ? "resume" : "checkpoint",
            run->kernels ? "edited kernels" : "checkpoints");
    return 1;
  }
  g_autoptr(TlDocument) d = tl_document_load(run->data, &error);
  if (!d) return fail(error);
  if (!tl_document_iterative(d)) {
    fprintf(stderr, "tomolab --run: data = %s holds an image: nothing to reconstruct\n", run->data);
    return 1;
  }
  g_autoptr(TlContext) ctx = tl_context_new(run->device, &error);
  if (!ctx) return fail(error);
  g_autoptr(TlJob) job = tl_document_new_job(d, ctx, run, &error);
  if (!job) return fail(error);
  if (run->start) {
    g_autoptr(TlImage) x0 = tl_image_load(run->start, &error);
    if (!x0 || !job->vt->set_image || !job->vt->set_image(job, x0, &error)) {
      if (!error)
        g_set_error(&error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s takes no start image",
                    tl_run_spec_algorithm(run));
      g_prefix_error(&error, "start = %s: ", run->start);
      return fail(error);
    }
  }
  /* the window's count: the run's iterations (a scatter = sss run's rounds included) times the
   * job's sub-iterations per iteration; a direct method is one step */
  gboolean direct = tl_run_algorithm_direct(tl_run_spec_algorithm(run));
  guint steps = direct ? 1 : tl_run_spec_total_iterations(run) * job->sub_iterations_per_iteration;
  for (guint i = 0; i < steps; i++) {
    TlJobStep st = {0};
    gboolean ok = job->vt->step(job, NULL, &st, &error);
    if (ok && !run->quiet)
      fprintf(stderr, "tomolab --run: sub-iteration %u/%u  %.2f s\n", st.sub_iterations, steps,
              st.seconds);
    tl_job_step_clear(&st);
    if (!ok) return fail(error);
  }
  g_autoptr(TlImage) img = tl_image_new(&job->grid);
  tl_image_set_unit(img, job->unit);
  const TlFormatClass *f = tl_format_for_output(run->output, TL_DATA_IMAGE, NULL, &error);
  if (!f || !tl_array_download(job->vt->image(job), img->data, &error) ||
      !tl_format_save(f, img, run->output, &error))
    return fail(error);
  /* a searched centre is written as the column found, as ct-recon writes it */
  g_autofree char *note = NULL;
  g_autoptr(TlRunSpec) found = d->ds && d->ds->centre_found
                                   ? tl_run_spec_with_centre(run, d->ds->centre,
                                                             d->ds->search.metric, &note)
                                   : NULL;
  const char *notes[] = {note, NULL};
  if (!tl_run_sidecar_write_notes(run->output, found ? found : run, tl_context_info(ctx)->name,
                                  img->unit, notes, &error))
    return fail(error);
  if (!run->quiet) fprintf(stderr, "tomolab --run: wrote %s\n", run->output);
  return 0;
}

int tl_headless_race(const char *race_path, const char *csv, const char *device) {
  GError *error = NULL;
  g_autoptr(TlRaceSpec) spec = tl_race_spec_load(race_path, &error);
  if (!spec || (csv && !tl_race_spec_set(spec, "csv", csv, &error)) ||
      (device && !tl_race_spec_set(spec, "device", device, &error)) ||
      !tl_race_spec_validate(spec, &error))
    return fail(error);
  if (!spec->data || !spec->csv) {
    fprintf(stderr, "tomolab --race: %s: %s\n", race_path,
            !spec->data ? "no data = FILE" : "no csv = FILE (or --csv FILE)");
    return 1;
  }
  g_autoptr(TlDocument) d = tl_document_load(spec->data, &error);
  if (!d) return fail(error);
  g_autoptr(TlContext) ctx = tl_context_new(spec->device, &error);
  if (!ctx) return fail(error);
  g_autoptr(TlRaceBoard) board = tl_race_board_new();
  g_autoptr(TlJob) job = tl_race_job_new(ctx, spec, d->ds, board, &error);
  if (!job) return fail(error);
  /* the Race window's runner count: one sub-iteration per round, the race's updates */
  for (guint i = 0; i < spec->updates; i++) {
    TlJobStep st = {0};
    gboolean ok = job->vt->step(job, NULL, &st, &error);
    tl_job_step_clear(&st);
    if (!ok) return fail(error);
  }
  g_autofree char *text = tl_race_board_csv(board);
  if (!g_file_set_contents(spec->csv, text ? text : "", -1, &error)) return fail(error);
  fprintf(stderr, "tomolab --race: wrote %s\n", spec->csv);
  return 0;
}
