/* CT solvers: setup, SIRT / (OS-)SART / MLEM steps, objective, RMSE, the step / callback /
 * cancel machinery. CGLS lives in tl-ct-cgls.c. Formulas: tl-ct-recon.h. */
#include "tl-ct-recon-private.h"
#include <math.h>
#include <string.h>

/* Column sums of every subset are cached when they fit in this much memory; beyond it (e.g.
 * SART with one view per subset on a large volume) each sub-iteration recomputes its own
 * with one extra back projection. */
#define TL_CT_CINV_CACHE_BYTES (512ull << 20)

static const char *const tl_ct_algo_names[] = {"sirt", "sart", "cgls", "mlem"};

void tl_ct_recon_options_init(TlCtReconOptions *o) {
  *o = (TlCtReconOptions){.algo = TL_CT_SIRT, .subsets = 1, .iterations = 10,
                          .projector = TL_CT_JOSEPH, .relaxation = 1.0f,
                          .objective = TL_CT_OBJECTIVE_ITERATION};
}

const char *tl_ct_algo_name(TlCtAlgo a) {
  return (guint)a < G_N_ELEMENTS(tl_ct_algo_names) ? tl_ct_algo_names[a] : "?";
}

gboolean tl_ct_algo_from_name(const char *name, TlCtAlgo *out, GError **error) {
  if (g_strcmp0(name, "os-sart") == 0) name = "sart";
  for (guint i = 0; i < G_N_ELEMENTS(tl_ct_algo_names); i++)
    if (g_strcmp0(name, tl_ct_algo_names[i]) == 0) {
      *out = (TlCtAlgo)i;
      return TRUE;
    }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown CT algorithm '%s' (known: sirt, sart, os-sart, cgls, mlem)", name);
  return FALSE;
}

gboolean tl_ct_recon_expr(TlCtRecon *r, const char *expr, GError **error) {
  return tl_expr_assign(r->ctx, r->stream, expr, r->args, error);
}

TlArray *tl_ct_recon_scratch(TlCtRecon *r, guint s) {
  return r->views[s].count == r->views[0].count ? r->q_big : r->q_small;
}

static gboolean check_options(const TlCtReconOptions *o, const TlCtGeometry *g, GError **error) {
  const char *what = NULL;
  if ((guint)o->algo >= G_N_ELEMENTS(tl_ct_algo_names)) what = "unknown algorithm";
  else if (o->projector == TL_CT_VOXEL || (guint)o->projector > TL_CT_VOXEL)
    what = "the projector must be a matched pair: joseph, siddon or raycast";
  else if (o->subsets == 0 || o->subsets > g->n_views)
    what = "subsets must be between 1 and the number of views";
  else if ((o->algo == TL_CT_SIRT || o->algo == TL_CT_CGLS) && o->subsets != 1)
    what = "SIRT and CGLS use all views at once (subsets = 1); use sart for ordered subsets";
  else if (!(o->relaxation > 0 && o->relaxation < 2))
    what = "the relaxation must lie in (0, 2)";
  if (!what) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "CT %s with %u subsets (%u views), "
              "relaxation %g: %s", tl_ct_algo_name(o->algo), o->subsets, g->n_views,
              o->relaxation, what);
  return FALSE;
}

/* 1 / (A_s^T 1) of subset s into `out` (zero where the sum is zero). */
static gboolean column_sums(TlCtRecon *r, guint s, TlArray *out, GError **error) {
  TlArray *q = tl_ct_recon_scratch(r, s);
  tl_expr_args_array(r->args, "q", q);
  tl_expr_args_array(r->args, "C", out);
  return tl_ct_recon_expr(r, "q = 1", error) &&
         tl_ct_projector_back(r->proj, r->stream, &r->views[s], q, out, FALSE, error) &&
         tl_ct_recon_expr(r, "C = select(C > 0, 1 / C, 0)", error);
}

static gboolean setup(TlCtRecon *r, const TlArray *proj, GError **error) {
  const TlCtGeometry *g = tl_ct_projector_geometry(r->proj);
  guint S = r->n_subsets;
  guint64 npix = (guint64)g->det_u * g->det_v;
  r->views = g_new0(TlCtViews, S);
  r->y = g_new0(TlArray *, S);
  for (guint s = 0; s < S; s++) {
    r->views[s] = tl_ct_views_subset(g, s, S);
    guint64 n = tl_ct_views_n_pixels(g, &r->views[s]);
    if (!(r->y[s] = tl_array_new_float(r->ctx, n, error))) return FALSE;
    /* regroup: the subset's views, contiguous */
    for (guint k = 0; k < r->views[s].count; k++) {
      guint64 view = r->views[s].first + (guint64)k * r->views[s].stride;
      if (!tl_stream_copy(r->stream, proj, 4 * npix * view, r->y[s], 4 * npix * k, 4 * npix,
                          error))
        return FALSE;
    }
  }
  if (!(r->q_big = tl_array_new_float(r->ctx, tl_ct_views_n_pixels(g, &r->views[0]), error)))
    return FALSE;
  r->q_small = r->q_big;
  if (r->views[S - 1].count != r->views[0].count &&
      !(r->q_small = tl_array_new_float(r->ctx, tl_ct_views_n_pixels(g, &r->views[S - 1]), error)))
    return FALSE;
  if (!(r->x = tl_array_new_float(r->ctx, r->n_voxels, error)) ||
      !(r->next = tl_array_new_float(r->ctx, r->n_voxels, error)) ||
      !(r->vol = tl_array_new_float(r->ctx, r->n_voxels, error)))
    return FALSE;
  tl_expr_args_array(r->args, "x", r->x);
  /* MLEM starts from 1 (a zero image stays zero), the others from 0 */
  if (!tl_ct_recon_expr(r, r->opt.algo == TL_CT_MLEM ? "x = 1" : "x = 0", error)) return FALSE;
  if (r->opt.algo == TL_CT_CGLS) return tl_ct_cgls_init(r, error) && tl_stream_finish(r->stream, error);

  if (r->opt.algo != TL_CT_MLEM) {
    /* row sums: A 1 per subset, then 1 / sum */
    r->rinv = g_new0(TlArray *, S);
    tl_expr_args_array(r->args, "n", r->next);
    if (!tl_ct_recon_expr(r, "n = 1", error)) return FALSE;
    for (guint s = 0; s < S; s++) {
      if (!(r->rinv[s] = tl_array_new_float(r->ctx, tl_array_length(r->y[s]), error)) ||
          !tl_ct_projector_forward(r->proj, r->stream, &r->views[s], r->next, r->rinv[s], FALSE,
                                   error))
        return FALSE;
      tl_expr_args_array(r->args, "R", r->rinv[s]);
      if (!tl_ct_recon_expr(r, "R = select(R > 0, 1 / R, 0)", error)) return FALSE;
    }
  }
  r->cinv = g_new0(TlArray *, S);
  if ((guint64)S * r->n_voxels * 4 <= TL_CT_CINV_CACHE_BYTES) {
    for (guint s = 0; s < S; s++)
      if (!(r->cinv[s] = tl_array_new_float(r->ctx, r->n_voxels, error)) ||
          !column_sums(r, s, r->cinv[s], error))
        return FALSE;
  } else if (!(r->cinv_tmp = tl_array_new_float(r->ctx, r->n_voxels, error))) {
    return FALSE;
  }
  return tl_stream_finish(r->stream, error);
}

TlCtRecon *tl_ct_recon_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                           const TlArray *proj, const TlCtReconOptions *opt, GError **error) {
  if (!check_options(opt, geometry, error)) return NULL;
  TlCtViews all = tl_ct_views_all(geometry);
  if (tl_array_elem_size(proj) != 4 || tl_array_length(proj) != tl_ct_views_n_pixels(geometry, &all)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT recon: the projection array has %" G_GUINT64_FORMAT " elements; the geometry "
                "has %u views of %u x %u pixels", tl_array_length(proj), geometry->n_views,
                geometry->det_u, geometry->det_v);
    return NULL;
  }
  g_autoptr(TlCtRecon) r = g_new0(TlCtRecon, 1);
  r->ctx = ctx;
  r->opt = *opt;
  r->grid = *grid;
  r->n_voxels = tl_image_grid_n_voxels(grid);
  r->n_subsets = opt->subsets;
  r->args = tl_expr_args_new();
  r->profile = tl_profile_new();
  if (!(r->proj = tl_ct_projector_new(ctx, geometry, grid, opt->projector, error)) ||
      !(r->stream = tl_stream_new(ctx, error)))
    return NULL;
  tl_stream_set_profile(r->stream, r->profile);
  if (!setup(r, proj, error)) return NULL;
  return g_steal_pointer(&r);
}

static void free_arrays(TlArray **a, guint n) {
  if (!a) return;
  for (guint i = 0; i < n; i++) tl_array_free(a[i]);
  g_free(a);
}

void tl_ct_recon_free(TlCtRecon *r) {
  if (!r) return;
  tl_stream_free(r->stream); /* waits for in-flight work before the arrays go */
  free_arrays(r->y, r->n_subsets);
  free_arrays(r->rinv, r->n_subsets);
  free_arrays(r->cinv, r->n_subsets);
  g_free(r->views);
  if (r->q_small != r->q_big) tl_array_free(r->q_small);
  TlArray *arrays[] = {r->q_big, r->cinv_tmp, r->x, r->next, r->vol, r->truth, r->r, r->p};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) tl_array_free(arrays[i]);
  tl_ct_projector_free(r->proj);
  tl_profile_free(r->profile);
  tl_expr_args_free(r->args);
  g_clear_object(&r->cancellable);
  g_free(r);
}

static gboolean check_image(TlCtRecon *r, const TlImage *im, const char *what, GError **error) {
  if (tl_image_grid_equal(&im->grid, &r->grid)) return TRUE;
  g_autofree char *a = tl_image_grid_key(&im->grid), *b = tl_image_grid_key(&r->grid);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "CT recon: the %s's grid (%s) is not the "
              "reconstruction grid (%s)", what, a, b);
  return FALSE;
}

gboolean tl_ct_recon_set_truth(TlCtRecon *r, const TlImage *truth, GError **error) {
  if (!check_image(r, truth, "ground truth", error)) return FALSE;
  if (!r->truth && !(r->truth = tl_array_new_float(r->ctx, r->n_voxels, error))) return FALSE;
  return tl_array_upload(r->truth, truth->data, error);
}

gboolean tl_ct_recon_set_image(TlCtRecon *r, const TlImage *image, GError **error) {
  if (!check_image(r, image, "starting image", error) || !tl_array_upload(r->x, image->data, error))
    return FALSE;
  r->sub_iterations = 0;
  r->fp_valid = FALSE;
  r->cgls_ready = FALSE;
  return TRUE;
}

void tl_ct_recon_set_callback(TlCtRecon *r, TlCtReconCallback cb, gpointer user_data) {
  r->cb = cb;
  r->cb_data = user_data;
}

void tl_ct_recon_set_cancellable(TlCtRecon *r, GCancellable *cancellable) {
  g_set_object(&r->cancellable, cancellable);
  tl_stream_set_cancellable(r->stream, cancellable);
}

void tl_ct_recon_set_submit_budget(TlCtRecon *r, guint64 budget) {
  tl_stream_set_submit_budget(r->stream, budget);
}

/* After a failure (a cancel, mostly) part of the recording may be unsubmitted or in flight:
 * wait for it and reset the stream, so a later step (after g_cancellable_reset) starts clean.
 * The image is untouched (steps write the other buffer); whatever else a step changed is
 * rebuilt: the cached forward projection and CGLS's directions. */
static gboolean drain(TlCtRecon *r) {
  tl_stream_finish(r->stream, NULL);
  r->fp_valid = FALSE;
  r->cgls_ready = FALSE;
  return FALSE;
}

/* Objective of image `img` over every view; for one subset the forward projection stays in
 * q_big (fp_valid). */
static gboolean objective_of(TlCtRecon *r, TlArray *img, double *out, GError **error) {
  const char *red = r->opt.algo == TL_CT_MLEM ? "sum(select(q > 0, y * log(q) - q, 0))"
                                              : "dot(q - y, q - y)";
  double total = 0;
  for (guint s = 0; s < r->n_subsets; s++) {
    TlArray *q = tl_ct_recon_scratch(r, s);
    double part;
    tl_expr_args_array(r->args, "q", q);
    tl_expr_args_array(r->args, "y", r->y[s]);
    if (!tl_ct_projector_forward(r->proj, r->stream, &r->views[s], img, q, FALSE, error) ||
        !tl_expr_reduce(r->ctx, r->stream, red, r->args, &part, error))
      return FALSE;
    total += part;
  }
  *out = r->opt.algo == TL_CT_MLEM ? total : 0.5 * total;
  return TRUE;
}

gboolean tl_ct_recon_objective(TlCtRecon *r, double *objective, GError **error) {
  if (r->opt.algo == TL_CT_CGLS && r->cgls_ready) {
    *objective = r->cgls_objective;
    return TRUE;
  }
  if (!objective_of(r, r->x, objective, error)) return drain(r);
  r->fp_valid = r->n_subsets == 1;
  return TRUE;
}

/* SIRT / SART / MLEM on subset s: the new image into r->next. */
static gboolean sart_step(TlCtRecon *r, guint s, GError **error) {
  TlArray *q = tl_ct_recon_scratch(r, s);
  TlArray *C = r->cinv[s] ? r->cinv[s] : r->cinv_tmp;
  if (!r->cinv[s] && !column_sums(r, s, C, error)) return FALSE;
  tl_expr_args_array(r->args, "q", q);
  tl_expr_args_array(r->args, "y", r->y[s]);
  tl_expr_args_array(r->args, "s", r->vol);
  tl_expr_args_array(r->args, "n", r->next);
  tl_expr_args_array(r->args, "C", C);
  if (!(r->n_subsets == 1 && r->fp_valid) &&
      !tl_ct_projector_forward(r->proj, r->stream, &r->views[s], r->x, q, FALSE, error))
    return FALSE;
  if (r->opt.algo == TL_CT_MLEM) {
    /* seed 000/002's EM update with the CT projector: ratio, back projection, scale */
    return tl_ct_recon_expr(r, "q = select(q > 0, y / q, 0)", error) &&
           tl_ct_projector_back(r->proj, r->stream, &r->views[s], q, r->vol, FALSE, error) &&
           tl_ct_recon_expr(r, "n = x * s * C", error);
  }
  tl_expr_args_array(r->args, "R", r->rinv[s]);
  tl_expr_args_scalar(r->args, "lam", r->opt.relaxation);
  return tl_ct_recon_expr(r, "q = (y - q) * R", error) &&
         tl_ct_projector_back(r->proj, r->stream, &r->views[s], q, r->vol, FALSE, error) &&
         tl_ct_recon_expr(r, r->opt.nonnegative ? "n = max(x + lam * C * s, 0)"
                                                : "n = x + lam * C * s", error);
}

gboolean tl_ct_recon_step(TlCtRecon *r, GError **error) {
  if (g_cancellable_set_error_if_cancelled(r->cancellable, error)) return FALSE;
  gint64 t0 = g_get_monotonic_time();
  guint S = r->n_subsets, s = r->sub_iterations % S;
  double objective = NAN;
  gboolean ok;
  if (r->opt.algo == TL_CT_CGLS)
    ok = tl_ct_cgls_step(r, &objective, error);
  else
    ok = sart_step(r, s, error);
  if (!ok || !tl_stream_finish(r->stream, error)) return drain(r);
  TlArray *t = r->x;
  r->x = r->next, r->next = t;
  tl_expr_args_array(r->args, "x", r->x);
  r->fp_valid = FALSE;
  r->sub_iterations++;

  gboolean want = r->opt.objective == TL_CT_OBJECTIVE_SUBITERATION ||
                  (r->opt.objective == TL_CT_OBJECTIVE_ITERATION && s == S - 1);
  if (r->opt.algo != TL_CT_CGLS && want && !tl_ct_recon_objective(r, &objective, error))
    return drain(r);
  double rmse = NAN;
  if (r->truth) {
    tl_expr_args_array(r->args, "t", r->truth);
    if (!tl_expr_reduce(r->ctx, r->stream, "l2norm(x - t)", r->args, &rmse, error))
      return drain(r);
    rmse /= sqrt((double)r->n_voxels);
  }
  if (r->cb) {
    TlCtReconProgress pr = {.iteration = (r->sub_iterations - 1) / S + 1, .subset = s,
                            .n_subsets = S, .sub_iterations = r->sub_iterations, .image = r->x,
                            .objective = objective, .rmse = rmse,
                            .seconds = (g_get_monotonic_time() - t0) * 1e-6,
                            .profile = r->profile};
    r->cb(&pr, r->cb_data);
  }
  return TRUE;
}

gboolean tl_ct_recon_run(TlCtRecon *r, GError **error) {
  guint total = r->opt.iterations * r->n_subsets;
  while (r->sub_iterations < total)
    if (!tl_ct_recon_step(r, error)) return FALSE;
  return TRUE;
}

guint tl_ct_recon_sub_iterations(const TlCtRecon *r) { return r->sub_iterations; }
const TlImageGrid *tl_ct_recon_grid(const TlCtRecon *r) { return &r->grid; }
const TlArray *tl_ct_recon_image_array(const TlCtRecon *r) { return r->x; }
const TlProfile *tl_ct_recon_profile(const TlCtRecon *r) { return r->profile; }
TlCtProjector *tl_ct_recon_projector(TlCtRecon *r) { return r->proj; }
const TlCtReconOptions *tl_ct_recon_options(const TlCtRecon *r) { return &r->opt; }

TlImage *tl_ct_recon_image(TlCtRecon *r, GError **error) {
  g_autoptr(TlImage) im = tl_image_new(&r->grid);
  if (!tl_array_download(r->x, im->data, error)) return NULL;
  return g_steal_pointer(&im);
}
