/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlJob over TlCtRecon (SIRT, OS-SART, CGLS, MLEM) and FDK as a job of one step. As for
 * PET, TlCtRecon's profile accumulates since the start and each step reports the
 * difference, so the overlay shows the cost of the last sub-iteration. */
#include <math.h>
#include <string.h>
#include "tl-job.h"
#include "tl-registry.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-simulate.h"
#include "image/tl-file.h"
#include "run/tl-run-ct-direct.h"

typedef struct {
  TlJob parent;
  TlCtRecon *recon;
  TlProfile *before;
  TlCtReconProgress last;
  gboolean have_last;
  /* FDK / FBP: the run layer's path (z-slabs), its result copied into one array to show */
  TlContext *ctx;
  TlCtGeometry *geometry;
  gboolean fbp;
  TlCtFilter filter;
  guint batch;
  TlArray *proj, *image;
  guint fdk_done;
} TlCtJob;

const char *tl_ct_job_objective_label(const char *algo) {
  const TlAlgorithmClass *k = tl_registry_algorithm(algo, NULL);
  if (k && (tl_algorithm_flags(k) & TL_ALGO_EMISSION))
    return (tl_algorithm_flags(k) & TL_ALGO_PRIOR) ? "penalised log-likelihood (rises)"
                                                   : "log-likelihood (rises)";
  if (g_strcmp0(algo, "fdk") == 0)
    return "objective ½‖Ax−y‖² (none for FDK)";
  return "objective ½‖Ax−y‖² (falls)";
}

static void on_progress(const TlCtReconProgress *p, gpointer data) {
  TlCtJob *self = data;
  self->last = *p;
  self->have_last = TRUE;
}

static gboolean ct_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlCtJob *self = (TlCtJob *)job;
  tl_ct_recon_set_cancellable(self->recon, cancel);
  self->have_last = FALSE;
  if (!tl_ct_recon_step(self->recon, error))
    return FALSE;
  g_assert(self->have_last);
  const TlProfile *now = tl_ct_recon_profile(self->recon);
  *out = (TlJobStep){
    .sub_iterations = self->last.sub_iterations,
    .iteration = self->last.iteration,
    .subset = self->last.subset,
    .n_subsets = self->last.n_subsets,
    .loglik = self->last.objective,
    .rmse = self->last.rmse,
    .seconds = self->last.seconds,
    .profile = tl_profile_new_since(now, self->before),
  };
  tl_profile_clear(self->before);
  tl_profile_merge(self->before, now);
  return TRUE;
}

static const TlArray *ct_image(TlJob *job) {
  TlCtJob *self = (TlCtJob *)job;
  return self->recon ? tl_ct_recon_image_array(self->recon) : self->image;
}

static void ct_free(TlJob *job) {
  TlCtJob *self = (TlCtJob *)job;
  if (self->recon)
    tl_ct_recon_free(self->recon);
  if (self->proj)
    tl_array_free(self->proj);
  if (self->geometry)
    tl_ct_geometry_free(self->geometry);
  if (self->image)
    tl_array_free(self->image);
  tl_profile_free(self->before);
  g_free(self);
}

static gboolean ct_set_prior(TlJob *job, const char *prior, double beta, double gamma,
                             GError **error) {
  TlCtJob *self = (TlCtJob *)job;
  return tl_job_solver_set_prior(tl_ct_recon_solver(self->recon), prior, beta, gamma, error);
}

static TlImage *ct_get_iterate(TlJob *job, GError **error) {
  return tl_ct_recon_image(((TlCtJob *)job)->recon, error);
}

static gboolean ct_set_image(TlJob *job, const TlImage *image, GError **error) {
  return tl_solver_set_image(tl_ct_recon_solver(((TlCtJob *)job)->recon), image, error);
}

static const TlJobVTable kCtJob = {ct_step, ct_image, ct_free, ct_set_prior, ct_get_iterate,
                                   ct_set_image};

/* FDK: the one step is the whole reconstruction; a second has nothing to add. */
static gboolean fdk_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlCtJob *self = (TlCtJob *)job;
  if (self->fdk_done) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "FDK is done in one step");
    return FALSE;
  }
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(TlStream) s = tl_stream_new(self->ctx, error);
  if (!s)
    return FALSE;
  TlProfile *profile = tl_profile_new();
  tl_stream_set_profile(s, profile);
  tl_stream_set_cancellable(s, cancel);
  g_autoptr(TlCtSlabs) v = tl_run_ct_direct(self->ctx, s, self->geometry, &self->parent.grid,
                                            self->fbp, self->filter, self->batch, self->proj,
                                            error);
  /* into the one array the window shows (at most 2^28 voxels: tl-dataset.c) */
  g_autofree float *host = v ? g_try_new(float, tl_image_grid_n_voxels(&self->parent.grid)) : NULL;
  if (v && !host)
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "FDK: no host memory for %" G_GUINT64_FORMAT
                " bytes", 4 * tl_image_grid_n_voxels(&self->parent.grid));
  if (!host || !tl_ct_slabs_download(v, host, error) ||
      !tl_array_upload(self->image, host, error)) {
    tl_profile_free(profile);
    return FALSE;
  }
  self->fdk_done = 1;
  *out = (TlJobStep){.sub_iterations = 1, .iteration = 1, .subset = 0, .n_subsets = 1,
                     .loglik = NAN, .rmse = NAN,
                     .seconds = (g_get_monotonic_time() - t0) / 1e6, .profile = profile};
  return TRUE;
}

static const TlJobVTable kFdkJob = {fdk_step, ct_image, ct_free};

gboolean tl_ct_job_options_to_run(const TlCtJobOptions *o, const char *data, guint iterations,
                                  TlRunSpec *s, GError **error) {
  gboolean fdk = tl_run_algorithm_direct(o->algo);
  const TlAlgorithmClass *k = fdk ? NULL : tl_registry_algorithm(o->algo[0] ? o->algo : "sirt", error);
  if (!fdk && !k) return FALSE;
  gboolean subsets = k && ((tl_algorithm_flags(k) & TL_ALGO_SUBSETS) || g_str_equal(o->algo, "mlem"));
  gboolean prior = k && o->prior[0] && (tl_algorithm_flags(k) & TL_ALGO_PRIOR);
  char num[3][32], centre[32] = "";
  tl_format_double(num[0], prior ? o->beta : 0);
  tl_format_double(num[1], prior ? o->gamma : 2);
  g_snprintf(num[2], sizeof num[2], "%u", fdk ? 0 : iterations);
  if (isfinite(o->centre)) tl_format_double(centre, o->centre);
  g_autofree char *n = g_strdup_printf("%u", subsets ? MAX(o->subsets, 1) : 0);
  const char *kv[][2] = {{"modality", "ct"},
                         {"data", data ? data : ""},
                         {"algorithm", o->algo[0] ? o->algo : "sirt"},
                         {"subsets", n},
                         {"iterations", num[2]},
                         {"projector", o->projector[0] ? o->projector : "joseph"},
                         {"prior", prior ? o->prior : ""},
                         {"beta", num[0]},
                         {"gamma", num[1]},
                         {"centre", centre}};
  for (gsize i = 0; i < G_N_ELEMENTS(kv); i++)
    if (!tl_run_spec_set(s, kv[i][0], kv[i][1], error)) return FALSE;
  /* the ramp window is a key of the direct methods only (the run refuses it elsewhere) */
  return !fdk || tl_run_spec_set(s, "fdk-filter", tl_ct_filter_name(o->fdk_filter), error);
}

TlJob *tl_ct_job_new(TlContext *ctx, const TlCtData *data, const TlImage *truth,
                     const TlImageGrid *grid, const TlRunSpec *run, GError **error) {
  if (run->modality != TL_RUN_CT) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "modality = pet: not a CT run");
    return NULL;
  }
  if (!tl_run_spec_validate(run, error))
    return NULL;
  const char *algo = tl_run_spec_algorithm(run);
  g_autoptr(TlArray) proj = tl_ct_data_upload(ctx, data, error);
  if (!proj)
    return NULL;
  TlCtJob *self = g_new0(TlCtJob, 1);
  self->before = tl_profile_new();
  self->ctx = ctx;
  double events = (double)tl_ct_data_n_values(data);
  if (tl_run_algorithm_direct(algo)) {
    /* the run's ramp window and batch, as ct-recon reads them */
    self->parent = (TlJob){&kFdkJob, *grid, 1, events};
    self->geometry = tl_ct_geometry_copy(data->geometry);
    self->fbp = g_str_equal(algo, "fbp");
    self->filter = run->fdk_filter;
    self->batch = run->batch;
    self->image = tl_run_ct_direct_check(ctx, grid, 4 * tl_image_grid_n_voxels(grid), error)
                      ? tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error)
                      : NULL;
    if (!self->image || !tl_array_zero(self->image, error)) {
      ct_free(&self->parent);
      return NULL;
    }
    self->proj = g_steal_pointer(&proj);
    return &self->parent;
  }
  TlCtReconOptions o;
  if (!tl_run_spec_to_ct_options(run, &o, error)) {
    ct_free(&self->parent);
    return NULL;
  }
  o.objective = TL_CT_OBJECTIVE_SUBITERATION; /* a point per sub-iteration on the plot */
  self->parent = (TlJob){&kCtJob, *grid, o.subsets, events};
  self->recon = tl_ct_recon_new(ctx, data->geometry, grid, proj, &o, error);
  if (!self->recon || (truth && !tl_ct_recon_set_truth(self->recon, truth, error))) {
    ct_free(&self->parent);
    return NULL;
  }
  tl_profile_merge(self->before, tl_ct_recon_profile(self->recon));
  tl_ct_recon_set_callback(self->recon, on_progress, self);
  tl_ct_recon_set_submit_budget(self->recon, 1u << 22);
  return &self->parent;
}
