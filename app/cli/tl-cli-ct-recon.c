/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli ct-recon: FDK, FBP, SIRT, (OS-)SART, CGLS or MLEM of a CT scan (any CT format of the
 * format table: .tlct, Data Exchange HDF5...) into an image. */
#include "tl-cli-ct-common.h"
#include "ct/tl-ct-centre.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-simulate.h"
#include "image/tl-file.h"
#include "tl-cli.h"
#include "dataset/tl-dataset.h"
#include "tl-registry.h"
#include "tl-cli-run.h"
#include "run/tl-run-sidecar.h"
#include "run/tl-run-ct-direct.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define VERB "ct-recon"

typedef struct {
  guint iterations;
  gboolean quiet;
} Progress;

static void on_progress(const TlCtReconProgress *p, gpointer data) {
  Progress *pr = data;
  if (!pr->quiet) {
    fprintf(stderr, "ct-recon: iteration %u/%u", p->iteration, pr->iterations);
    if (p->n_subsets > 1) fprintf(stderr, " subset %u/%u", p->subset + 1, p->n_subsets);
    if (!isnan(p->objective)) fprintf(stderr, "  objective %.10g", p->objective);
    if (!isnan(p->rmse)) fprintf(stderr, "  RMSE %.6g", p->rmse);
    fprintf(stderr, "  %.2f s\n", p->seconds);
  }
}

static double rmse(const TlImage *a, const TlImage *b) {
  guint64 n = tl_image_grid_n_voxels(&a->grid);
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += ((double)a->data[i] - b->data[i]) * (a->data[i] - b->data[i]);
  return sqrt(s / n);
}

/* Parallel beam: detector pixels of `mm` (files such as Data Exchange store no size, so
 * their loader assumed 1 mm): rows 0 and 1 of each matrix and the suggested grid scale. */
static gboolean tl_cli_ct_set_pixel_size(TlCtData *d, double mm, GError **error) {
  TlCtGeometry *g = d->geometry;
  const double *P0 = tl_ct_geometry_matrix(g, 0);
  double old = 1.0 / sqrt(P0[0] * P0[0] + P0[1] * P0[1] + P0[2] * P0[2]);
  for (guint k = 0; k < g->n_views; k++) {
    double *P = g->matrices + 12 * (gsize)k;
    for (int r = 0; r < 2; r++)
      for (int i = 0; i < 3; i++) P[4 * r + i] *= old / mm;
  }
  if (d->has_grid)
    for (int i = 0; i < 3; i++) {
      d->grid.voxel_mm[i] *= (float)(mm / old);
      d->grid.origin_mm[i] *= (float)(mm / old);
    }
  return tl_ct_geometry_validate(g, error);
}

/* Parallel beam: keep detector rows [first, end) only, one slice per row: v -> v - first
 * (row 1 of each matrix -= first x row 2) and the suggested grid's z range cut to match. */
static gboolean tl_cli_ct_keep_rows(TlCtData *d, const char *text, GError **error) {
  TlCtGeometry *g = d->geometry;
  guint64 a = 0, b = 0;
  char *end = NULL;
  a = g_ascii_strtoull(text, &end, 10);
  gboolean ok = end != text && *end == ':';
  if (ok) {
    const char *t = end + 1;
    b = g_ascii_strtoull(t, &end, 10);
    ok = end != t && *end == 0;
  }
  if (!ok || a >= b || b > g->det_v) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "--slices '%s': expected FIRST:END with 0 <= FIRST < END <= %u (detector rows)",
                text, g->det_v);
    return FALSE;
  }
  guint nu = g->det_u, nv = (guint)(b - a);
  for (guint k = 0; k < g->n_views; k++) {
    memmove(d->proj + (gsize)k * nv * nu, d->proj + ((gsize)k * g->det_v + a) * nu,
            (gsize)nv * nu * sizeof(float));
    double *P = g->matrices + 12 * (gsize)k;
    for (int i = 0; i < 4; i++) P[4 + i] -= (double)a * P[8 + i];
  }
  g->det_v = nv;
  if (d->has_grid) {
    d->grid.origin_mm[2] += (float)a * d->grid.voxel_mm[2];
    d->grid.dims[2] = nv;
  }
  return tl_ct_geometry_validate(g, error);
}

#define RUN_OPT(l, s, help, arg) {l, s, 0, G_OPTION_ARG_CALLBACK, (gpointer)tl_cli_run_option, help, arg}
#define RUN_FLAG(l, s, help) \
  {l, s, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, (gpointer)tl_cli_run_option, help, NULL}

static int ct_recon_spec(const TlRunSpec *sp);

/* Option parsing only: every option sets a key of the run (tl-cli-run.h); the run is made from
 * the TlRunSpec by ct_recon_spec. */
int tl_cli_ct_recon(int argc, char **argv) {
  g_autofree char *algo_reg = tl_cli_registry_help("algorithm", FALSE);
  g_autofree char *algo_help = g_strdup_printf("fdk (default, direct; cone or parallel beam), fbp "
                                               "(direct, parallel beam), or an iterative %s",
                                               algo_reg);
  g_autofree char *prior_help = tl_cli_registry_help("prior", FALSE);
  GOptionEntry entries[] = {
      RUN_OPT("run", 0, "Read the run from FILE: key = value lines (docs/formats.md, \"Run "
              "files\") or an image's .json sidecar; the options given here override its values",
              "FILE"),
      RUN_OPT("save-run", 0, "Write the run (every key) to FILE before reconstructing", "FILE"),
      RUN_OPT("algo", 'a', algo_help, "ALGO"),
      RUN_OPT("prior", 0, prior_help, "NAME"),
      RUN_OPT("beta", 0, "Prior strength beta, relative to the data (docs/recon.md; rdp: about 1e-3 to 0.1; default 0)", "B"),
      RUN_OPT("gamma", 0, "rdp: gamma >= 0 (default 2)", "G"),
      RUN_OPT("epsilon", 0, "rdp / tv: epsilon > 0 (default 1e-3)", "E"),
      RUN_OPT("filter", 'f', "FDK/FBP ramp filter window: ram-lak (default), shepp-logan, "
              "hann, cosine", "NAME"),
      RUN_OPT("iterations", 'n', "Full iterations (default 10)", "N"),
      RUN_OPT("subsets", 's', "Ordered subsets for sart/mlem (default: sart 10, mlem 1)", "S"),
      RUN_OPT("relaxation", 0, "SIRT/SART relaxation lambda in (0, 2) (default 1)", "L"),
      RUN_FLAG("nonneg", 0, "SIRT/SART: clamp the image at 0"),
      RUN_OPT("projector", 'p', "joseph (default), siddon or raycast", "NAME"),
      RUN_OPT("grid", 'g', "Image grid (default: the truth's, else the dataset's: the one the "
              "scan suggests, else a cube of 1 mm voxels 2/3 of the detector wide); FDK / FBP: any size "
              "memory allows (z-slabs, NIfTI written plane by plane), iterative: 2^28 voxels",
              "NXxNYxNZ@MM"),
      RUN_OPT("truth", 't', "Ground truth image: RMSE after each sub-iteration", "FILE"),
      RUN_OPT("start", 0, "Start image of an iterative run (on the grid; default 0, MLEM 1)",
              "FILE"),
      RUN_OPT("objective", 0,
              "When to compute the objective: never, iteration (default), subiteration", "WHEN"),
      RUN_OPT("centre", 'c',
              "Parallel beam: column the rotation axis projects onto, or 'auto' to search it "
              "(default: the file's geometry; searched for formats that store none: Data "
              "Exchange, TIFF)", "auto|PIXELS"),
      RUN_OPT("pixel-size", 0,
              "Parallel beam: detector pixel size in mm for files that store none (default: the "
              "file's, 1 mm for Data Exchange); scales the suggested grid too", "MM"),
      RUN_OPT("slices", 0,
              "Parallel beam: reconstruct detector rows FIRST to END-1 only (one slice per row)",
              "FIRST:END"),
      RUN_OPT("batch", 0, "FDK: views per batch (default: auto)", "N"),
      RUN_OPT("output", 'o', "Image to write: .nii, .nii.gz or .raw (required); a .json "
              "provenance sidecar is written beside it", "FILE"),
      RUN_FLAG("profile", 0, "Print GPU time per kernel at the end"),
      RUN_OPT("device", 'd',
              "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)",
              "SEL"),
      RUN_FLAG("quiet", 'q', "No progress on stderr"),
      {NULL}};
  TlCliRunArgs args;
  tl_cli_run_args_init(&args, TRUE);
  g_autoptr(GOptionContext) oc = g_option_context_new("[SCAN] - reconstruct a CT scan (.tlct, Data Exchange .h5)");
  GOptionGroup *group = g_option_group_new(VERB, VERB, VERB, &args, NULL);
  g_option_group_add_entries(group, entries);
  g_option_context_set_main_group(oc, group);
  g_option_context_set_description(oc,
      "Example: tomolab-cli ct-recon scan.tlct --algo cgls --iterations 20 -t truth.nii \\\n"
      "           -o img.nii --profile\n"
      "         tomolab-cli ct-recon tooth.h5 --centre auto -o tooth.nii\n"
      "         tomolab-cli ct-recon --run tooth.json -o again.nii  (the sidecar of a run)\n"
      "FDK/FBP (ramp filter by FFT where built with VkFFT, voxel-driven back projection) or an\n"
      "iterative solver on the Vulkan device; every vector operation is one fused array expression. Ctrl-C\n"
      "writes the last complete image. Formulas: docs/ct.md.");
  GError *error = NULL;
  if (!tl_cli_reject_zero(argc, argv, "subsets", 's', &error)) {
    tl_cli_run_args_clear(&args);
    return tl_cli_usage_error(VERB, error);
  }
  gboolean parsed = g_option_context_parse(oc, &argc, &argv, &error);
  g_autoptr(TlRunSpec) spec = parsed && argc <= 2
                                  ? tl_cli_run_build(&args, argc == 2 ? argv[1] : NULL, &error)
                                  : NULL;
  tl_cli_run_args_clear(&args);
  if (!parsed || (argc <= 2 && !spec)) return tl_cli_usage_error(VERB, error);
  if (argc > 2 || !spec->data || !spec->output) {
    fprintf(stderr, "tomolab-cli " VERB ": %s\n(see --help)\n",
            argc > 2       ? "one scan only"
            : !spec->data ? "a CT scan (.tlct, .h5) is required (or data = FILE in --run)"
                          : "-o FILE is required (or output = FILE in --run)");
    return 2;
  }
  return ct_recon_spec(spec);
}

/* The run, from its description. */
static int ct_recon_spec(const TlRunSpec *sp) {
  GError *error = NULL;
  const char *input = sp->data, *output = sp->output, *truth_path = sp->truth;
  const char *centre = sp->centre, *slices = sp->slices, *grid_text = sp->grid;
  const char *device = sp->device;
  gboolean quiet = sp->quiet, profile = sp->profile;
  double pixel_size = isnan(sp->pixel_size_mm) ? 0 : sp->pixel_size_mm;
  guint batch = sp->batch;
  TlCtFilter window = sp->fdk_filter;
  /* before any work: no output over an input, every output writable */
  g_autofree char *sidecar = tl_run_sidecar_path(output);
  if (!tl_cli_check_outputs((const TlCliFile[]){{"input", input}, {"--truth", truth_path},
                                                {"--start", sp->start}}, 3,
                            (const TlCliFile[]){{"-o", output}, {"the image's sidecar", sidecar}},
                            2, &error))
    return tl_cli_usage_error(VERB, error);
  const char *algo = tl_run_spec_algorithm(sp);
  gboolean fdk = tl_run_algorithm_direct(algo), fbp = g_str_equal(algo, "fbp");
  TlCtReconOptions o;
  if (fdk) tl_ct_recon_options_init(&o);
  else if (!tl_run_spec_to_ct_options(sp, &o, &error)) return tl_cli_usage_error(VERB, error);
  if (fdk && sp->start) {
    fprintf(stderr, "tomolab-cli " VERB ": --start: %s is direct and takes no start image\n", algo);
    return 2;
  }

  double centre_px = NAN;
  gboolean centre_auto = centre && strcmp(centre, "auto") == 0;
  if (centre && !centre_auto) centre_px = g_ascii_strtod(centre, NULL); /* checked by the spec */

  /* "no such file" / "is a directory" before content detection's less direct complaint */
  if (!tl_file_check_input(input, "CT scan", &error)) return tl_cli_ct_fail(VERB, error);
  /* the dataset layer: the format, the grid and the centre every door uses */
  g_autoptr(TlDataset) ds = tl_dataset_open(input, &error);
  if (!ds) return tl_cli_ct_fail(VERB, error);
  if (ds->kind != TL_DATASET_CT) {
    fprintf(stderr, "tomolab-cli " VERB ": %s holds %s, expected CT projections\n", input,
            tl_dataset_kind_name(ds->kind));
    return 1;
  }
  TlCtData *d = ds->ct;
  if ((centre || pixel_size > 0 || slices) && d->geometry->beam != TL_CT_PARALLEL) {
    fprintf(stderr, "tomolab-cli " VERB ": --centre, --pixel-size and --slices apply to parallel-beam "
                    "scans; '%s' is cone beam\n", input);
    return 2;
  }
  if (pixel_size > 0 && !tl_cli_ct_set_pixel_size(d, pixel_size, &error))
    return tl_cli_ct_fail(VERB, error);
  if (slices && !tl_cli_ct_keep_rows(d, slices, &error)) return tl_cli_ct_fail(VERB, error);
  tl_dataset_update_defaults(ds);
  g_autoptr(TlImage) truth = NULL;
  if (truth_path && !(truth = tl_image_load(truth_path, &error))) return tl_cli_ct_fail(VERB, error);
  TlImageGrid grid;
  if (grid_text) {
    /* FDK / FBP take any grid memory allows (z-slabs), the iterative runs one TlImage's */
    if (fdk ? !tl_run_parse_grid_any(grid_text, &grid, &error)
            : !tl_cli_parse_grid(grid_text, &grid, &error))
      return tl_cli_ct_fail(VERB, error);
  } else {
    grid = truth ? truth->grid : ds->grid;
  }
  /* subsets left to the run (auto): the dataset's count, at most one per view */
  if (!fdk && !sp->subsets && o.subsets > 1) o.subsets = ds->subsets;
  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return tl_cli_ct_fail(VERB, error);
  /* the centre: a column given, searched when asked, else the dataset's (searched for
   * formats that store none: Data Exchange, TIFF) */
  if (!isnan(centre_px) ? !tl_dataset_set_centre(ds, centre_px, &error)
      : centre_auto     ? !tl_dataset_search_centre(ds, ctx, &error)
                        : !tl_dataset_find_centre(ds, ctx, &error))
    return tl_cli_ct_fail(VERB, error);
  if (ds->centre_found)
    /* the result goes to stderr even with --quiet: it is what the run found */
    fprintf(stderr, "ct-recon: centre of rotation %.3f px (sharpness %.6g on row %u; opposed "
            "views guessed %.2f; %u slices tried)\n", ds->search.centre, ds->search.metric,
            d->geometry->det_v / 2, ds->search.first_guess, ds->search.evaluations);
  const TlCtGeometry *g = d->geometry;
  if (!quiet)
    fprintf(stderr, "ct-recon: %s, %u views of %u x %u, %u x %u x %u voxels of %g x %g x %g mm, "
            "%s on %s\n", g->beam == TL_CT_CONE ? "cone beam" : "parallel beam", g->n_views,
            g->det_u, g->det_v, grid.dims[0], grid.dims[1], grid.dims[2], grid.voxel_mm[0],
            grid.voxel_mm[1], grid.voxel_mm[2],
            fbp ? "FBP" : fdk ? "FDK" : o.algorithm, tl_context_info(ctx)->name);
  g_autoptr(TlArray) proj = tl_ct_data_upload(ctx, d, &error);
  if (!proj) return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlImage) img = NULL;
  g_autoptr(TlProfile) prof = tl_profile_new();
  gint64 t1 = g_get_monotonic_time();
  gboolean cancelled = FALSE;

  /* FDK / FBP: the run layer's one path (z-slabs, written plane by plane) */
  g_autoptr(TlCtSlabs) vol = NULL;
  if (fdk) {
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    if (!s) return tl_cli_ct_fail(VERB, error);
    tl_stream_set_profile(s, prof);
    vol = tl_run_ct_direct(ctx, s, g, &grid, fbp, window, batch, proj, &error);
    if (!vol) return tl_cli_ct_fail(VERB, error);
    if (!quiet && truth && tl_image_grid_equal(&truth->grid, &grid)) {
      g_autoptr(TlImage) x = tl_run_ct_slabs_image(vol, &error);
      if (!x) return tl_cli_ct_fail(VERB, error);
      fprintf(stderr, "ct-recon: %s RMSE %.6g\n", fbp ? "FBP" : "FDK", rmse(x, truth));
    }
  } else {
    g_autoptr(TlCtRecon) r = tl_ct_recon_new(ctx, g, &grid, proj, &o, &error);
    if (!r) return tl_cli_ct_fail(VERB, error);
    g_clear_pointer(&proj, tl_array_free); /* copied per subset */
    if (truth && !tl_ct_recon_set_truth(r, truth, &error)) return tl_cli_ct_fail(VERB, error);
    if (sp->start) { /* on the grid, else the error names both */
      g_autoptr(TlImage) x0 = tl_image_load(sp->start, &error);
      if (!x0 || !tl_ct_recon_set_image(r, x0, &error)) {
        g_prefix_error(&error, "--start %s: ", sp->start);
        return tl_cli_ct_fail(VERB, error);
      }
    }
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    Progress pr = {o.iterations, quiet};
    tl_ct_recon_set_callback(r, on_progress, &pr);
    tl_ct_recon_set_cancellable(r, cancel);
    /* Ctrl-C: finish nothing more, keep the last complete image and write it. */
    TlCliInterrupt *sigint = tl_cli_interrupt_begin(cancel);
    gboolean ok = tl_ct_recon_run(r, &error);
    tl_cli_interrupt_end(sigint);
    cancelled = !ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    if (!ok && !cancelled) return tl_cli_ct_fail(VERB, error);
    g_clear_error(&error);
    if (cancelled && !quiet)
      fprintf(stderr, "ct-recon: interrupted after %u sub-iterations; writing the last complete "
                      "image\n", tl_ct_recon_sub_iterations(r));
    if (!(img = tl_ct_recon_image(r, &error))) return tl_cli_ct_fail(VERB, error);
    tl_profile_merge(prof, tl_ct_recon_profile(r));
  }
  /* a searched centre is written as the column found (and a note that it was searched), so a
   * rerun from the sidecar does not depend on the search */
  g_autofree char *note = NULL;
  g_autoptr(TlRunSpec) found = ds->centre_found
                                   ? tl_run_spec_with_centre(sp, ds->centre, ds->search.metric, &note)
                                   : NULL;
  const char *notes[] = {note, NULL};
  if (!(vol ? tl_run_ct_slabs_save(vol, "", output, &error) : tl_image_save(img, output, &error)) ||
      !tl_run_sidecar_write_notes(output, found ? found : sp, tl_context_info(ctx)->name,
                                  vol ? "" : img->unit, notes, &error))
    return tl_cli_ct_fail(VERB, error);
  if (!quiet)
    fprintf(stderr, "ct-recon: done in %.2f s; wrote %s\n", (g_get_monotonic_time() - t1) * 1e-6,
            output);
  if (profile) {
    g_autofree char *table = tl_profile_format(prof);
    printf("%s", table);
  }
  return cancelled ? 130 : 0;
}
