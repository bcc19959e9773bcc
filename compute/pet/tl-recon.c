/* TlRecon: the PET problem (tl-pet-operator.h) handed to the reconstruction core's solver;
 * equations in tl-recon.h and in the algorithm files of compute/recon/. */
#include "tl-recon.h"
#include "tl-pet-operator.h"
#include "tl-srm-operator.h"
#include <math.h>
#include <string.h>

struct _TlRecon {
  TlContext *ctx;
  TlReconOptions opt;
  char *projector_name, *algorithm, *prior;
  TlOperator *op;
  TlSrm *srm;          /* projector "srm": the matrix the operator runs on */
  gboolean srm_cached;
  TlSolver *sv;
  TlArray *randoms;    /* the additive term a (opt.randoms), in the operator's data order */
  TlReconCallback cb;
  gpointer cb_data;
};

void tl_recon_options_init(TlReconOptions *o) {
  *o = (TlReconOptions){.algo = TL_RECON_MLEM, .subsets = 1, .iterations = 10,
                        .projector = "siddon", .loglik = TL_LOGLIK_ITERATION,
                        .use_cache = TRUE, .scatter = TL_SCATTER_AUTO,
                        .tor_fwhm_mm = TL_TOR_FWHM_DEFAULT,
                        .filter = {.kind = TL_FILTER_NONE}, .relaxation = 1.0f};
  tl_prior_params_init(&o->prior_params);
}

void tl_recon_free(TlRecon *r) {
  if (!r) return;
  tl_solver_free(r->sv); /* before the operator it runs on */
  g_clear_pointer(&r->randoms, tl_array_free);
  tl_operator_free(r->op);
  tl_srm_free(r->srm); /* after its operator */
  g_free(r->projector_name);
  g_free(r->algorithm);
  g_free(r->prior);
  g_free(r);
}

gboolean tl_recon_check_attenuation(const TlImage *mu, const TlImageGrid *grid,
                                    GError **error) {
  return tl_pet_check_attenuation(mu, grid, error);
}

static void on_step(const TlSolverProgress *p, gpointer data) {
  TlRecon *r = data;
  if (!r->cb) return;
  TlReconProgress q = {.iteration = p->iteration, .subset = p->subset, .n_subsets = p->n_subsets,
                       .sub_iterations = p->sub_iterations, .image = p->image,
                       .loglik = p->objective, .rmse = p->rmse, .seconds = p->seconds,
                       .filtered = p->filtered, .profile = p->profile};
  r->cb(&q, r->cb_data);
}

/* Options as given (NULL: defaults), MLEM forced to one subset, names copied. */
static TlRecon *recon_begin(TlContext *ctx, const TlReconOptions *opt, TlPetOperatorOptions *po,
                            GError **error) {
  g_autoptr(TlRecon) r = g_new0(TlRecon, 1);
  r->ctx = ctx;
  if (opt) r->opt = *opt;
  else tl_recon_options_init(&r->opt);
  TlReconOptions *o = &r->opt;
  r->algorithm = g_strdup(o->algorithm ? o->algorithm
                          : o->algo == TL_RECON_OSEM ? "osem" : "mlem");
  o->algorithm = r->algorithm;
  if (strcmp(r->algorithm, "mlem") == 0 || strcmp(r->algorithm, "sirt") == 0 ||
      strcmp(r->algorithm, "cgls") == 0)
    o->subsets = 1;
  if (o->subsets == 0 || o->subsets > 1000) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets: expected 1 to 1000",
                o->subsets);
    return NULL;
  }
  r->projector_name = g_strdup(o->projector ? o->projector : "siddon");
  o->projector = r->projector_name;
  r->prior = g_strdup(o->prior);
  o->prior = r->prior;
  tl_pet_operator_options_init(po);
  po->projector = o->projector;
  po->params.tor_fwhm_mm = o->tor_fwhm_mm;
  po->subsets = o->subsets;
  po->scatter = o->scatter;
  po->tof = o->tof;
  po->tof_n_sigma = o->tof_n_sigma;
  po->attenuation = o->attenuation;
  po->norm = o->norm;
  po->use_cache = o->use_cache;
  po->parts = o->parts;
  po->part = o->part;
  po->sens_chunks = o->sens_chunks;
  o->attenuation = NULL; /* the operator copies the map; the caller's is not kept */
  o->norm = NULL;        /* and the normalisation */
  return g_steal_pointer(&r);
}

static TlRecon *recon_finish(TlRecon *r, GError **error) {
  if (!r->op) return NULL;
  const TlReconOptions *o = &r->opt;
  TlSolverOptions so;
  tl_solver_options_init(&so);
  so.iterations = o->iterations;
  so.objective = o->loglik == TL_LOGLIK_NEVER       ? TL_OBJECTIVE_NEVER
                 : o->loglik == TL_LOGLIK_ITERATION ? TL_OBJECTIVE_ITERATION
                                                    : TL_OBJECTIVE_SUBITERATION;
  so.filter = o->filter;
  so.filter_every = o->filter.kind == TL_FILTER_NONE ? 0 : o->filter_every;
  so.uniform_sensitivity = o->uniform_sensitivity;
  so.prior = o->prior;
  so.beta = o->beta;
  so.prior_params = o->prior_params;
  so.relaxation = o->relaxation;
  so.rmse_scaled = TRUE;
  so.reducer = o->reducer;
  TlProblem pb = {.op = r->op};
  if (o->randoms) {
    if (!tl_is_pet_operator(r->op)) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "randoms correction: not with the "
                  "%s projector (list-mode and binned ray projectors only)", o->projector);
      return NULL;
    }
    if (!(r->randoms = tl_pet_operator_randoms(r->op, o->randoms, error))) return NULL;
    pb.additive = r->randoms;
  }
  r->opt.randoms = NULL; /* used at set-up only: the caller's is not kept */
  if (!(r->sv = tl_solver_new(r->ctx, o->algorithm, &pb, &so, error))) return NULL;
  tl_solver_set_callback(r->sv, on_step, r);
  return r;
}

TlRecon *tl_recon_new_listmode(TlContext *ctx, const TlListmode *lm, const TlImageGrid *grid,
                               const TlReconOptions *opt, GError **error) {
  TlPetOperatorOptions po;
  g_autoptr(TlRecon) r = recon_begin(ctx, opt, &po, error);
  if (!r) return NULL;
  r->op = tl_pet_operator_new_listmode(ctx, lm, grid, &po, error);
  if (!recon_finish(r, error)) return NULL;
  return g_steal_pointer(&r);
}

TlRecon *tl_recon_new_binned(TlContext *ctx, const TlScanner *scanner, const TlBin *bins,
                             guint64 n_bins, const TlImageGrid *grid, const TlReconOptions *opt,
                             GError **error) {
  TlPetOperatorOptions po;
  g_autoptr(TlRecon) r = recon_begin(ctx, opt, &po, error);
  if (!r) return NULL;
  if (g_strcmp0(po.projector, "srm") == 0) {
    /* the precomputed dual-head system response matrix (tl-srm.h), cached on disk */
    if (po.attenuation) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                  "projector srm: no attenuation correction (the matrix has no object model)");
      return NULL;
    }
    if (po.norm) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                  "projector srm: no normalisation (the matrix operator has no per-pair factors)");
      return NULL;
    }
    r->srm = po.use_cache ? tl_srm_cached(scanner, grid, NULL, &r->srm_cached, error)
                          : tl_srm_new(scanner, grid, NULL, error);
    if (!r->srm) return NULL;
    r->op = tl_srm_operator_new(ctx, r->srm, scanner, bins, n_bins, po.subsets, error);
  } else {
    r->op = tl_pet_operator_new_binned(ctx, scanner, bins, n_bins, grid, &po, error);
  }
  if (!recon_finish(r, error)) return NULL;
  return g_steal_pointer(&r);
}

gboolean tl_recon_set_truth(TlRecon *r, const TlImage *truth, GError **error) {
  return tl_image_check_nonnegative(truth, "ground truth", error) &&
         tl_solver_set_truth(r->sv, truth, error);
}

void tl_recon_set_callback(TlRecon *r, TlReconCallback cb, gpointer user_data) {
  r->cb = cb;
  r->cb_data = user_data;
}

void tl_recon_set_cancellable(TlRecon *r, GCancellable *c) { tl_solver_set_cancellable(r->sv, c); }
void tl_recon_set_submit_budget(TlRecon *r, guint64 b) { tl_solver_set_submit_budget(r->sv, b); }
gboolean tl_recon_step(TlRecon *r, GError **error) { return tl_solver_step(r->sv, error); }
gboolean tl_recon_run(TlRecon *r, GError **error) { return tl_solver_run(r->sv, error); }
gboolean tl_recon_loglik(TlRecon *r, double *ll, GError **error) {
  return tl_solver_objective(r->sv, ll, error);
}
guint tl_recon_sub_iterations(const TlRecon *r) { return tl_solver_sub_iterations(r->sv); }
const TlImageGrid *tl_recon_grid(const TlRecon *r) { return tl_solver_grid(r->sv); }
const TlArray *tl_recon_image_array(const TlRecon *r) { return tl_solver_image_array(r->sv); }
const TlArray *tl_recon_sensitivity(const TlRecon *r) {
  return tl_solver_sensitivity(r->sv, G_MAXUINT);
}
gboolean tl_recon_sensitivity_cached(const TlRecon *r) {
  if (r->srm) return r->srm_cached; /* the matrix; its column sums are not cached */
  return tl_pet_operator_sensitivity_cached(r->op);
}
const TlProfile *tl_recon_profile(const TlRecon *r) { return tl_solver_profile(r->sv); }
TlProjector *tl_recon_projector(TlRecon *r) {
  return r->srm ? NULL : tl_pet_operator_projector(r->op);
}
TlOperator *tl_recon_operator(TlRecon *r) { return r->op; }
TlSolver *tl_recon_solver(TlRecon *r) { return r->sv; }
TlImage *tl_recon_image(TlRecon *r, GError **error) { return tl_solver_image(r->sv, error); }
