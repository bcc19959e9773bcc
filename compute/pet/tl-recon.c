/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRecon: the PET problem (tl-pet-operator.h) handed to the reconstruction core's solver;
 * equations in tl-recon.h and in the algorithm files of compute/recon/. */
#include "tl-recon.h"
#include "tl-pet-operator.h"
#include "pet/srm/tl-srm-operator.h"
#include "tl-pet-lines.h"
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
  TlArray *additive;   /* the additive term a (randoms + scatter), in the operator's data order */
  TlRandoms *randoms;  /* a copy of opt.randoms (the scatter term is replaced around them) */
  TlNorm *norm;        /* a copy of opt.norm: eps_a eps_b of the scatter term (norm_pair_factor) */
  GArray *pair_counts; /* TlBin: the measured counts per pair (the tail fit's), made on first use */
  TlReconCallback cb;
  gpointer cb_data;
};

void tl_recon_options_init(TlReconOptions *o) {
  *o = (TlReconOptions){.algo = TL_RECON_MLEM, .subsets = 1, .iterations = 10,
                        .projector = "siddon", .loglik = TL_LOGLIK_ITERATION,
                        .use_cache = TRUE, .scatter = TL_SCATTER_AUTO,
                        .tor_fwhm_mm = TL_TOR_FWHM_DEFAULT,
                        .filter = {.kind = TL_FILTER_NONE}, .relaxation = 1.0f,
                        .seed = 1};
  tl_prior_params_init(&o->prior_params);
}

void tl_recon_free(TlRecon *r) {
  if (!r) return;
  tl_solver_free(r->sv); /* before the operator it runs on */
  g_clear_pointer(&r->additive, tl_array_free);
  tl_randoms_free(r->randoms);
  tl_norm_free(r->norm);
  if (r->pair_counts) g_array_unref(r->pair_counts);
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

static double norm_pair_factor(guint a, guint b, gpointer norm) {
  return tl_norm_scatter_pair(norm, a, b);
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
  /* the normalisation's crystal efficiencies multiply the scatter term too (not its geometric
   * factors: tl_norm_scatter_pair), unless the caller gives a factor */
  if (o->norm && !o->scatter_pair_factor) {
    r->norm = tl_norm_copy(o->norm);
    o->scatter_pair_factor = norm_pair_factor;
    o->scatter_pair_factor_data = r->norm;
  }
  po->use_cache = o->use_cache;
  po->parts = o->parts;
  po->part = o->part;
  po->sens_chunks = o->sens_chunks;
  o->attenuation = NULL; /* the operator copies the map; the caller's is not kept */
  o->norm = NULL;        /* and the normalisation */
  return g_steal_pointer(&r);
}

/* The additive term's sum over every allowed pair, what the solver's start image subtracts
 * from the counts: the data vector's own sum is over the events in list mode (each pair's
 * term once per event, weighted by its counts) and over the given bins only in binned data,
 * while the sensitivity is over every pair. scatter_total: the scatter's share when known
 * (the tail fit's n-weighted sum), NAN to sum it here. */
static double additive_total(TlRecon *r, const TlScatterEstimate *scatter, double scatter_total) {
  const TlScanner *sc = tl_pet_operator_scanner(r->op);
  double t = r->randoms ? tl_randoms_expected_total(r->randoms, sc) : 0.0;
  if (scatter && !isfinite(scatter_total)) {
    scatter_total = 0;
    for (guint a = 0; a < sc->n_crystals; a++)
      for (guint b = a + 1; b < sc->n_crystals; b++)
        if (tl_scanner_pair_allowed(sc, a, b))
          scatter_total += (r->opt.scatter_pair_factor
                                ? r->opt.scatter_pair_factor(a, b, r->opt.scatter_pair_factor_data)
                                : 1.0) *
                           tl_scatter_estimate_pair(scatter, a, b);
  }
  return t + (scatter ? scatter_total : 0.0);
}

/* a = randoms + n_ab scatter per record into r->additive (made on first use). */
static gboolean upload_additive(TlRecon *r, const TlScatterEstimate *scatter, GError **error) {
  g_autofree float *a = tl_pet_operator_additive(r->op, r->randoms, scatter,
                                                 r->opt.scatter_pair_factor,
                                                 r->opt.scatter_pair_factor_data, error);
  if (!a) return FALSE;
  guint64 n = tl_operator_n_data(r->op);
  if (!r->additive && !(r->additive = tl_array_new_float(r->ctx, MAX(n, 1), error))) return FALSE;
  return !n || tl_array_upload(r->additive, a, error);
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
  so.beta_absolute = o->beta_absolute;
  so.prior_params = o->prior_params;
  so.relaxation = o->relaxation;
  so.seed = o->seed;
  so.start_subset = o->start_subset;
  so.warm_epochs = o->warm_epochs;
  so.rmse_scaled = TRUE;
  so.reducer = o->reducer;
  so.sensitivity = o->sensitivity;
  r->opt.sensitivity = NULL; /* borrowed for the set-up only */
  TlProblem pb = {.op = r->op};
  if (o->randoms || o->scatter_estimate) {
    if (!tl_is_pet_operator(r->op)) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "%s correction: not with the %s "
                  "projector (list-mode and binned ray projectors only)",
                  o->randoms ? "randoms" : "scatter", o->projector);
      return NULL;
    }
    if (o->randoms) r->randoms = tl_randoms_copy(o->randoms);
    if (!upload_additive(r, o->scatter_estimate, error)) return NULL;
    pb.additive = r->additive;
    /* a distributed run's participants each sum their share of the array; a whole-scanner
     * total would be counted once per participant */
    if (!o->reducer) pb.additive_total = additive_total(r, o->scatter_estimate, NAN);
  }
  r->opt.randoms = NULL; /* used at set-up only: the caller's is not kept */
  r->opt.scatter_estimate = NULL;
  if (!(r->sv = tl_solver_new(r->ctx, o->algorithm, &pb, &so, error))) return NULL;
  tl_solver_set_callback(r->sv, on_step, r);
  return r;
}

/* A pair of one of the end planes of segment 0 (TlReconOptions.zero_end_planes). */
static gboolean end_plane(const TlScanner *s, guint32 a, guint32 b) {
  if (s->n_rings < 2 || a >= s->n_crystals || b >= s->n_crystals) return FALSE;
  guint ra = s->crystals[a].ring, rb = s->crystals[b].ring;
  return ra == rb && (ra == 0 || ra == s->n_rings - 1);
}

/* The events outside the end planes (prompts only; the delayeds estimate randoms, which the
 * caller has made already), or NULL when none is dropped. */
static TlListmode *without_end_planes(const TlListmode *lm) {
  guint64 kept = 0;
  for (guint64 i = 0; i < lm->n_events; i++)
    kept += !end_plane(lm->scanner, lm->events[i].a, lm->events[i].b);
  if (kept == lm->n_events) return NULL;
  TlListmode *out = tl_listmode_new(tl_scanner_copy(lm->scanner), kept);
  out->has_tof = lm->has_tof;
  out->start_s = lm->start_s;
  out->duration_s = lm->duration_s;
  for (guint64 i = 0, k = 0; i < lm->n_events; i++)
    if (!end_plane(lm->scanner, lm->events[i].a, lm->events[i].b))
      out->events[k++] = lm->events[i];
  return out;
}

/* The crystal-pair operators take one line per pair: several rays need a sinogram's geometry
 * (tl_recon_new_lines), which list mode and bins given as pairs do not have; `kind` names the
 * data refused. */
static gboolean one_ray(const TlReconOptions *o, const char *kind, GError **error) {
  if (o->rays_tangential <= 1 && o->rays_axial <= 1) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "%u x %u rays per line: not with %s (one "
              "line per crystal pair; several rays are for sinograms: arc-corrected, or crystal "
              "pairs of span 1 without view mashing) (expected rays-tangential = rays-axial = 1)",
              MAX(o->rays_tangential, 1), MAX(o->rays_axial, 1), kind);
  return FALSE;
}

TlRecon *tl_recon_new_listmode(TlContext *ctx, const TlListmode *lm, const TlImageGrid *grid,
                               const TlReconOptions *opt, GError **error) {
  TlPetOperatorOptions po;
  g_autoptr(TlRecon) r = recon_begin(ctx, opt, &po, error);
  if (!r || !one_ray(&r->opt, "PET list mode", error)) return NULL;
  g_autoptr(TlListmode) kept = r->opt.zero_end_planes ? without_end_planes(lm) : NULL;
  r->op = tl_pet_operator_new_listmode(ctx, kept ? kept : lm, grid, &po, error);
  if (!recon_finish(r, error)) return NULL;
  return g_steal_pointer(&r);
}

TlRecon *tl_recon_new_binned(TlContext *ctx, const TlScanner *scanner, const TlBin *bins,
                             guint64 n_bins, const TlImageGrid *grid, const TlReconOptions *opt,
                             GError **error) {
  TlPetOperatorOptions po;
  g_autoptr(TlRecon) r = recon_begin(ctx, opt, &po, error);
  if (!r || !one_ray(&r->opt, "PET bins given as crystal pairs", error)) return NULL;
  g_autofree TlBin *kept = NULL;
  if (r->opt.zero_end_planes) {
    kept = g_new(TlBin, MAX(n_bins, 1));
    guint64 k = 0;
    for (guint64 i = 0; i < n_bins; i++)
      if (!end_plane(scanner, bins[i].a, bins[i].b)) kept[k++] = bins[i];
    bins = kept;
    n_bins = k;
  }
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

/* Both sinogram-lines constructors: arc-corrected bins, or crystal-pair bins with rays. */
static TlRecon *recon_new_lines(TlContext *ctx, const TlSinogram *sino, const TlImageGrid *grid,
                                const TlReconOptions *opt, GError **error) {
  TlPetOperatorOptions po;
  g_autoptr(TlRecon) r = recon_begin(ctx, opt, &po, error);
  if (!r) return NULL;
  const TlReconOptions *o = &r->opt;
  const char *refused = po.norm ? "normalisation"
                        : o->randoms   ? "randoms correction"
                        : o->scatter_estimate ? "scatter correction"
                        : o->tof              ? "time of flight"
                        : o->zero_end_planes  ? "zero end planes"
                        : g_strcmp0(o->projector, "srm") == 0 ? "projector srm"
                                                               : NULL;
  if (refused) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "%s: not with %s (their bins are "
                "lines, reconstructed by the pet-lines operator with projectors siddon, joseph "
                "or tor and attenuation correction, nothing else yet)", refused,
                sino->arc_corrected ? "arc-corrected projection data"
                : "several rays per crystal pair");
    return NULL;
  }
  r->op = tl_pet_lines_operator_new_sinogram(ctx, grid, o->projector, sino,
                                             MAX(o->rays_tangential, 1), MAX(o->rays_axial, 1),
                                             o->subsets, po.attenuation, error);
  if (!recon_finish(r, error)) return NULL;
  return g_steal_pointer(&r);
}

TlRecon *tl_recon_new_arc(TlContext *ctx, const TlSinogram *sino, const TlImageGrid *grid,
                          const TlReconOptions *opt, GError **error) {
  if (!sino->arc_corrected) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "STIR projection data of %s: not "
                "arc-corrected: its bins are crystal pairs (tl_recon_new_binned, or "
                "tl_recon_new_lines for several rays per pair)",
                sino->name && *sino->name ? sino->name : "(unnamed)");
    return NULL;
  }
  return recon_new_lines(ctx, sino, grid, opt, error);
}

TlRecon *tl_recon_new_lines(TlContext *ctx, const TlSinogram *sino, const TlImageGrid *grid,
                            const TlReconOptions *opt, GError **error) {
  return recon_new_lines(ctx, sino, grid, opt, error);
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
  return tl_is_pet_operator(r->op) && tl_pet_operator_sensitivity_cached(r->op);
}
const TlProfile *tl_recon_profile(const TlRecon *r) { return tl_solver_profile(r->sv); }
TlProjector *tl_recon_projector(TlRecon *r) {
  return r->srm || !tl_is_pet_operator(r->op) ? NULL : tl_pet_operator_projector(r->op);
}
TlOperator *tl_recon_operator(TlRecon *r) { return r->op; }
const TlRandoms *tl_recon_randoms(const TlRecon *r) { return r->randoms; }
const TlArray *tl_recon_additive(const TlRecon *r) {
  return tl_solver_additive(r->sv);
}

/* tl_recon_set_scatter with the scatter's all-pairs sum when known (NAN: summed here). */
static gboolean set_scatter(TlRecon *r, const TlScatterEstimate *scatter, double scatter_total,
                            GError **error) {
  if (!tl_is_pet_operator(r->op)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "scatter correction: not with the %s "
                "projector (list-mode and binned ray projectors only)", r->opt.projector);
    return FALSE;
  }
  if (!scatter && !r->randoms) return tl_solver_set_additive(r->sv, NULL, error);
  /* every step finishes the solver's stream: nothing reads the term while it is written */
  if (!upload_additive(r, scatter, error) || !tl_solver_set_additive(r->sv, r->additive, error))
    return FALSE;
  if (!r->opt.reducer) tl_solver_set_additive_total(r->sv, additive_total(r, scatter, scatter_total));
  return TRUE;
}

gboolean tl_recon_set_scatter(TlRecon *r, const TlScatterEstimate *scatter, GError **error) {
  return set_scatter(r, scatter, NAN, error);
}

void tl_scatter_rounds_init(TlScatterRounds *o) {
  *o = (TlScatterRounds){.rounds = 2, .iterations = 1};
  tl_sss_params_init(&o->sss);
  tl_tail_params_init(&o->tail);
}

/* The checks both entry points share. */
static gboolean scatter_usable(TlRecon *r, const TlImage *mu, GError **error) {
  if (!tl_is_pet_operator(r->op)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "scatter correction: not with the %s "
                "projector (list-mode and binned ray projectors only)", r->opt.projector);
    return FALSE;
  }
  if (!mu) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scatter estimation (SSS) needs a mu-map");
    return FALSE;
  }
  /* the tail fit's data: the measured counts per pair, the same every round */
  return r->pair_counts || (r->pair_counts = tl_pet_operator_pair_counts(r->op, error));
}

TlScatterEstimate *tl_recon_scatter_estimate(TlRecon *r, const TlImage *mu,
                                             const TlScatterRounds *o, TlScatterRoundInfo *info,
                                             GError **error) {
  if (!o || !scatter_usable(r, mu, error)) {
    if (!o) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scatter estimate: no parameters");
    return NULL;
  }
  gint64 t0 = g_get_monotonic_time();
  TlScatterRoundInfo local = {0};
  if (!info) info = &local;
  *info = (TlScatterRoundInfo){0};
  TlSssParams sp = o->sss;
  sp.tof = r->opt.tof;
  TlTailParams tp = o->tail;
  tp.pair_factor = r->opt.scatter_pair_factor;
  tp.pair_factor_data = r->opt.scatter_pair_factor_data;
  g_autoptr(TlImage) x = tl_recon_image(r, error);
  if (!x) return NULL;
  /* an algorithm with a lower bound below 0 (ab-emml) leaves noise below 0 in cold regions;
   * SSS takes an activity (>= 0): its positive part */
  for (guint64 i = 0, n = tl_image_grid_n_voxels(&x->grid); i < n; i++)
    if (x->data[i] < 0) x->data[i] = 0;
  g_autoptr(TlScatterEstimate) e = tl_sss_estimate(tl_pet_operator_scanner(r->op), x, mu, &sp,
                                                   o->cancel, &info->sss, error);
  if (!e || !tl_scatter_tail_fit(e, mu, (const TlBin *)r->pair_counts->data,
                                 r->pair_counts->len, r->randoms, &tp, &info->fit, error))
    return NULL;
  e->scale = info->fit.scale;
  if (!set_scatter(r, e, e->scale * info->fit.total_estimate, error)) return NULL;
  info->estimate = e;
  info->seconds = (g_get_monotonic_time() - t0) * 1e-6;
  return g_steal_pointer(&e);
}

TlScatterEstimate *tl_recon_scatter_rounds(TlRecon *r, const TlImage *mu,
                                           const TlScatterRounds *o, GError **error) {
  if (!o || o->rounds < 1 || o->rounds > 100 || o->iterations < 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scatter rounds: %u rounds of %u "
                "iterations: expected 1 to 100 rounds of at least 1", o ? o->rounds : 0,
                o ? o->iterations : 0);
    return NULL;
  }
  if (!scatter_usable(r, mu, error)) return NULL;
  g_autoptr(TlScatterEstimate) last = NULL;
  guint S = tl_operator_n_subsets(r->op);
  for (guint round = 1; round <= o->rounds; round++) {
    TlScatterRoundInfo info;
    TlScatterRounds named = *o;
    g_autofree char *label = g_strdup_printf("scatter estimation (SSS), round %u of %u", round,
                                             o->rounds);
    named.sss.progress_label = label;
    g_autoptr(TlScatterEstimate) e = tl_recon_scatter_estimate(r, mu, &named, &info, error);
    if (!e) return NULL;
    info.round = round;
    info.rounds = o->rounds;
    info.estimate = e;
    if (o->callback) o->callback(&info, o->user_data);
    g_clear_pointer(&last, tl_scatter_estimate_free);
    last = g_steal_pointer(&e);
    guint its = o->iterations;
    if (round == o->rounds && o->final_iterations > 0) {
      if (!tl_solver_restart(r->sv, error)) return NULL;
      its = o->final_iterations;
    }
    for (guint k = 0; k < its * S; k++)
      if (!tl_recon_step(r, error)) return NULL;
  }
  return g_steal_pointer(&last);
}
TlSolver *tl_recon_solver(TlRecon *r) { return r->sv; }
TlImage *tl_recon_image(TlRecon *r, GError **error) { return tl_solver_image(r->sv, error); }
