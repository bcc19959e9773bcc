/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtRecon: the CT problem (tl-ct-operator.h, projections regrouped by subset) handed to the
 * reconstruction core's solver; the algorithms' maths lives in compute/recon/tl-algo-*.c. */
#include "tl-ct-recon.h"
#include "tl-ct-operator.h"
#include <math.h>
#include <string.h>

static const char *const tl_ct_algo_names[] = {"sirt", "sart", "cgls", "mlem"};

struct _TlCtRecon {
  TlContext *ctx;
  TlCtReconOptions opt;
  char *algorithm, *prior;
  TlOperator *op;
  TlArray *data; /* the projections in the operator's data order */
  TlSolver *sv;
  TlCtReconCallback cb;
  gpointer cb_data;
};

void tl_ct_recon_options_init(TlCtReconOptions *o) {
  *o = (TlCtReconOptions){.algo = TL_CT_SIRT, .subsets = 1, .iterations = 10,
                          .projector = TL_CT_JOSEPH, .relaxation = 1.0f, .seed = 1,
                          .objective = TL_CT_OBJECTIVE_ITERATION};
  tl_prior_params_init(&o->prior_params);
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

static gboolean check_options(const TlCtReconOptions *o, const TlCtGeometry *g, GError **error) {
  const char *what = NULL;
  if (!o->algorithm && (guint)o->algo >= G_N_ELEMENTS(tl_ct_algo_names)) what = "unknown algorithm";
  else if (o->projector == TL_CT_VOXEL || (guint)o->projector > TL_CT_VOXEL)
    what = "the projector must be a matched pair: joseph, siddon or raycast";
  else if (o->subsets == 0 || o->subsets > g->n_views)
    what = "subsets must be between 1 and the number of views";
  else if (!(o->relaxation > 0 && o->relaxation < 2))
    what = "the relaxation must lie in (0, 2)";
  if (!what) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "CT %s with %u subsets (%u views), "
              "relaxation %g: %s", o->algorithm ? o->algorithm : tl_ct_algo_name(o->algo),
              o->subsets, g->n_views, o->relaxation, what);
  return FALSE;
}

static void on_step(const TlSolverProgress *p, gpointer data) {
  TlCtRecon *r = data;
  if (!r->cb) return;
  TlCtReconProgress q = {.iteration = p->iteration, .subset = p->subset,
                         .n_subsets = p->n_subsets, .sub_iterations = p->sub_iterations,
                         .image = p->image, .objective = p->objective, .rmse = p->rmse,
                         .seconds = p->seconds, .profile = p->profile};
  r->cb(&q, r->cb_data);
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
  r->algorithm = g_strdup(opt->algorithm ? opt->algorithm : tl_ct_algo_name(opt->algo));
  r->opt.algorithm = r->algorithm;
  r->prior = g_strdup(opt->prior);
  r->opt.prior = r->prior;
  if (!(r->op = tl_ct_operator_new(ctx, geometry, grid, opt->projector, opt->subsets, error)) ||
      !(r->data = tl_array_new_float(ctx, tl_operator_n_data(r->op), error)))
    return NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, error);
  if (!s || !tl_ct_operator_gather(r->op, s, proj, r->data, error) || !tl_stream_finish(s, error))
    return NULL;
  TlSolverOptions so;
  tl_solver_options_init(&so);
  so.iterations = opt->iterations;
  so.relaxation = opt->relaxation;
  so.seed = opt->seed;
  so.nonnegative = opt->nonnegative;
  so.objective = opt->objective == TL_CT_OBJECTIVE_NEVER       ? TL_OBJECTIVE_NEVER
                 : opt->objective == TL_CT_OBJECTIVE_ITERATION ? TL_OBJECTIVE_ITERATION
                                                               : TL_OBJECTIVE_SUBITERATION;
  so.prior = r->prior;
  so.beta = opt->beta;
  so.prior_params = opt->prior_params;
  so.rmse_scaled = FALSE; /* CT images are attenuation coefficients, in the truth's units */
  /* "sart" with several subsets is OS-SART; MLEM with subsets is OSEM */
  const char *name = r->algorithm;
  if (g_str_equal(name, "mlem") && opt->subsets > 1) name = "osem";
  TlProblem pb = {.op = r->op, .data = r->data};
  if (!(r->sv = tl_solver_new(ctx, name, &pb, &so, error))) return NULL;
  tl_solver_set_callback(r->sv, on_step, r);
  return g_steal_pointer(&r);
}

void tl_ct_recon_free(TlCtRecon *r) {
  if (!r) return;
  tl_solver_free(r->sv);
  tl_array_free(r->data);
  tl_operator_free(r->op);
  g_free(r->algorithm);
  g_free(r->prior);
  g_free(r);
}

gboolean tl_ct_recon_set_truth(TlCtRecon *r, const TlImage *truth, GError **error) {
  return tl_solver_set_truth(r->sv, truth, error);
}
gboolean tl_ct_recon_set_image(TlCtRecon *r, const TlImage *image, GError **error) {
  return tl_solver_set_image(r->sv, image, error);
}
void tl_ct_recon_set_callback(TlCtRecon *r, TlCtReconCallback cb, gpointer user_data) {
  r->cb = cb;
  r->cb_data = user_data;
}
void tl_ct_recon_set_cancellable(TlCtRecon *r, GCancellable *c) {
  tl_solver_set_cancellable(r->sv, c);
}
void tl_ct_recon_set_submit_budget(TlCtRecon *r, guint64 b) { tl_solver_set_submit_budget(r->sv, b); }
gboolean tl_ct_recon_step(TlCtRecon *r, GError **error) { return tl_solver_step(r->sv, error); }
gboolean tl_ct_recon_run(TlCtRecon *r, GError **error) { return tl_solver_run(r->sv, error); }
gboolean tl_ct_recon_objective(TlCtRecon *r, double *objective, GError **error) {
  return tl_solver_objective(r->sv, objective, error);
}
guint tl_ct_recon_sub_iterations(const TlCtRecon *r) { return tl_solver_sub_iterations(r->sv); }
const TlImageGrid *tl_ct_recon_grid(const TlCtRecon *r) { return tl_solver_grid(r->sv); }
const TlArray *tl_ct_recon_image_array(const TlCtRecon *r) { return tl_solver_image_array(r->sv); }
const TlProfile *tl_ct_recon_profile(const TlCtRecon *r) { return tl_solver_profile(r->sv); }
TlCtProjector *tl_ct_recon_projector(TlCtRecon *r) { return tl_ct_operator_projector(r->op); }
const TlCtReconOptions *tl_ct_recon_options(const TlCtRecon *r) { return &r->opt; }
TlOperator *tl_ct_recon_operator(TlCtRecon *r) { return r->op; }
TlSolver *tl_ct_recon_solver(TlCtRecon *r) { return r->sv; }
TlImage *tl_ct_recon_image(TlCtRecon *r, GError **error) { return tl_solver_image(r->sv, error); }
