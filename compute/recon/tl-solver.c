/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The solver: common set-up (data views, sensitivity images, start image, prior, filter), the
 * step / callback / cancel contract, objective and RMSE. The algorithms' own maths lives in
 * one file each (tl-algo-*.c). */
#include "tl-solver-private.h"
#include "tl-recon-registry.h"
#include <math.h>
#include <string.h>

void tl_solver_options_init(TlSolverOptions *o) {
  memset(o, 0, sizeof *o);
  o->iterations = 10;
  o->relaxation = 1.0f;
  o->objective = TL_OBJECTIVE_ITERATION;
  tl_prior_params_init(&o->prior_params);
  o->filter.kind = TL_FILTER_NONE;
  o->rmse_scaled = TRUE;
  o->seed = 1;
}

/* The prior's strength in the data's units (docs/recon.md, "The prior's strength"). The
 * log-likelihood's gradient c - s is of the order of the sensitivity s; a prior homogeneous of
 * degree d (R(t x) = t^d R(x)) has a gradient of the order of x^(d - 1), TV's per mm. So
 * beta * s_mean * x0^(1 - d) (* h for tv) weighs the two alike whatever the scanner, the
 * projector's weights, the grid, the count level or the image unit: the same relative beta
 * smooths the same. x0 is the start image's value, the data's own scale of x. */
double tl_solver_prior_scale(const TlSolver *sv) {
  if (sv->opt.beta_absolute || !sv->prior || !(sv->sens_mean > 0) || !(sv->start_value > 0))
    return 1.0;
  const TlImageGrid *g = tl_operator_grid(sv->op);
  switch (sv->prior->klass->kind) {
    case 0: return sv->sens_mean / sv->start_value; /* quadratic, d = 2 */
    case 2: /* tv, d = 1, gradient per mm */
      return sv->sens_mean * MIN(g->voxel_mm[0], MIN(g->voxel_mm[1], g->voxel_mm[2]));
    default: return sv->sens_mean; /* rdp, d = 1 */
  }
}

double tl_solver_beta(const TlSolver *sv) { return sv->opt.beta * tl_solver_prior_scale(sv); }

gboolean tl_solver_expr(TlSolver *sv, const char *expr, GError **error) {
  return tl_expr_assign(sv->ctx, sv->stream, expr, sv->args, error);
}

TlArray *tl_solver_sens(TlSolver *sv, guint subset) { return sv->sens[subset]; }

gboolean tl_solver_reduce_image(TlSolver *sv, TlArray *a, GError **error) {
  const TlSolverReducer *r = sv->opt.reducer;
  if (!r) return TRUE;
  return tl_stream_finish(sv->stream, error) && r->image(sv->ctx, a, r->data, error);
}

gboolean tl_solver_reduce_scalars(TlSolver *sv, double *v, guint n, GError **error) {
  const TlSolverReducer *r = sv->opt.reducer;
  return !r || r->scalars(v, n, r->data, error);
}

gboolean tl_algorithm_applies(const TlAlgorithmClass *k, const TlOperator *op, GError **error) {
  const char *why = NULL;
  if ((k->flags & TL_ALGO_NEEDS_DATA) && tl_operator_is_listmode(op))
    why = "it needs a data vector of every possible datum; list-mode data has events only "
          "(histogram the events, or use an EM algorithm)";
  else if (!(k->flags & TL_ALGO_SUBSETS) && tl_operator_n_subsets(op) != 1)
    why = "it uses all data at once: make the operator with 1 subset";
  if (!why) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "algorithm %s does not apply to %s (%u subsets): %s",
              k->name, tl_operator_label(op), tl_operator_n_subsets(op), why);
  return FALSE;
}

static void free_views(TlArray **v, guint n) {
  if (!v) return;
  for (guint i = 0; i < n; i++) tl_array_free(v[i]);
  g_free(v);
}

void tl_solver_free(TlSolver *sv) {
  if (!sv) return;
  if (sv->stream) tl_stream_free(sv->stream); /* waits for in-flight work first */
  if (sv->klass && sv->klass->finalize) sv->klass->finalize(sv);
  free_views(sv->y_sub, sv->n_subsets);
  free_views(sv->a_sub, sv->n_subsets);
  free_views(sv->q_sub, sv->n_subsets);
  if (sv->sens) {
    for (guint s = 0; s < sv->n_subsets; s++)
      if (sv->sens[s] != sv->sens_all) tl_array_free(sv->sens[s]);
    g_free(sv->sens);
  }
  TlArray *arrays[] = {sv->y_owned, sv->q, sv->x, sv->next, sv->vol, sv->sens_all, sv->truth,
                       sv->filter_tmp, sv->grad, sv->partials, sv->kappa};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) tl_array_free(arrays[i]);
  tl_prior_free(sv->prior);
  tl_profile_free(sv->profile);
  tl_expr_args_free(sv->args);
  g_clear_object(&sv->cancellable);
  g_free(sv->prior_name);
  g_free(sv->pass_terms);
  g_free(sv);
}

static TlArray **views(TlSolver *sv, TlArray *whole, GError **error) {
  TlArray **v = g_new0(TlArray *, sv->n_subsets);
  for (guint s = 0; s < sv->n_subsets; s++) {
    guint64 first = whole == sv->q ? 0 : tl_operator_subset_first(sv->op, s);
    if (!(v[s] = tl_array_new_view(whole, first, tl_operator_subset_length(sv->op, s), error))) {
      free_views(v, sv->n_subsets);
      return NULL;
    }
  }
  return v;
}

/* Whether the emission step can use the operator's fused EM pass: the data are its own
 * counts, no additive term, and D (if any) applied inside its kernels. */
gboolean tl_solver_em_fast(const TlSolver *sv) {
  return tl_operator_has_em(sv->op) && !sv->pb.data && !sv->pb.additive &&
         (!tl_operator_diag(sv->op) || (sv->op->klass->flags & TL_OPERATOR_NATIVE_DIAG));
}

/* The measured data as an array (the problem's, or the operator's counts made once). */
gboolean tl_solver_need_data(TlSolver *sv, GError **error) {
  if (sv->y_sub) return TRUE;
  if (sv->pb.data) {
    sv->y = sv->pb.data;
  } else {
    if (!(sv->y_owned = tl_array_new_float(sv->ctx, MAX(tl_operator_n_data(sv->op), 1), error)))
      return FALSE;
    g_autoptr(TlArray) v = tl_array_new_view(sv->y_owned, 0, tl_operator_n_data(sv->op), error);
    if (!v || !tl_operator_counts(sv->op, sv->stream, v, error) || !tl_stream_finish(sv->stream, error))
      return FALSE;
    sv->y = sv->y_owned;
  }
  return (sv->y_sub = views(sv, sv->y, error)) != NULL;
}

static gboolean check_image(TlSolver *sv, const TlImage *im, const char *what, GError **error);

/* Each subset's sensitivity from the total S (bound as "S") by `expr` (over "s", "S", "k");
 * one subset: the total itself. */
static gboolean subset_sensitivities(TlSolver *sv, const char *expr, GError **error) {
  guint S = sv->n_subsets;
  for (guint s = 0; s < S; s++) {
    if (S == 1) {
      sv->sens[s] = sv->sens_all;
      continue;
    }
    if (!(sv->sens[s] = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
    tl_expr_args_array(sv->args, "s", sv->sens[s]);
    if (!tl_solver_expr(sv, expr, error)) return FALSE;
  }
  return tl_stream_finish(sv->stream, error);
}

/* TlSolverOptions.sensitivity: the total as given (no reducer: it is every participant's), each
 * subset's the total / S ("s = S / k", the expression the list-mode operator divides by). */
static gboolean given_sensitivity(TlSolver *sv, GError **error) {
  const TlImage *im = sv->opt.sensitivity;
  if (!check_image(sv, im, "sensitivity image", error)) return FALSE;
  for (guint64 i = 0; i < sv->n_voxels; i++)
    if (!isfinite(im->data[i]) || im->data[i] < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "sensitivity image: voxel %"
                  G_GUINT64_FORMAT " holds %g (expected finite, >= 0)", i, im->data[i]);
      return FALSE;
    }
  guint S = sv->n_subsets;
  if (!tl_array_upload(sv->sens_all, im->data, error)) return FALSE;
  tl_expr_args_scalar(sv->args, "k", (float)S);
  return subset_sensitivities(sv, "s = S / k", error);
}

/* Emission set-up: per-subset column sums (the operator's sensitivity) and their total. */
static gboolean setup_sensitivity(TlSolver *sv, GError **error) {
  guint S = sv->n_subsets;
  sv->sens = g_new0(TlArray *, S);
  if (!(sv->sens_all = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  if (sv->opt.uniform_sensitivity) {
    /* van Gendt et al. 2021 Table 3's baseline: s = 1 in total, 1/S per subset */
    tl_expr_args_scalar(sv->args, "k", 1.0f / S);
    if (!tl_solver_expr(sv, "S = 1", error)) return FALSE;
    return subset_sensitivities(sv, "s = k", error);
  }
  if (sv->opt.sensitivity) return given_sensitivity(sv, error);
  /* distributed: each participant's operator covers its share of the pairs; summed here */
  if (S == 1) {
    sv->sens[0] = sv->sens_all;
    return tl_operator_sensitivity(sv->op, sv->stream, 0, sv->sens_all, error) &&
           tl_solver_reduce_image(sv, sv->sens_all, error) &&
           tl_stream_finish(sv->stream, error);
  }
  if (!tl_stream_zero(sv->stream, sv->sens_all, error)) return FALSE;
  for (guint s = 0; s < S; s++) {
    if (!(sv->sens[s] = tl_array_new_float(sv->ctx, sv->n_voxels, error)) ||
        !tl_operator_sensitivity(sv->op, sv->stream, s, sv->sens[s], error) ||
        !tl_solver_reduce_image(sv, sv->sens[s], error))
      return FALSE;
    tl_expr_args_array(sv->args, "s", sv->sens[s]);
    tl_expr_args_set_label(sv->args, "sensitivity total");
    if (!tl_solver_expr(sv, "S = S + s", error)) return FALSE;
  }
  tl_expr_args_set_label(sv->args, NULL);
  return tl_stream_finish(sv->stream, error);
}

/* The sum of the operator's own counts (binned data under the fused pass, which keeps no data
 * vector): summed from a scratch copy, freed at once, since a bin's count is not 1. */
static gboolean operator_counts_total(TlSolver *sv, double *total, GError **error) {
  guint64 n = tl_operator_n_data(sv->op);
  *total = 0;
  if (n == 0) return TRUE;
  g_autoptr(TlArray) m = tl_array_new_float(sv->ctx, n, error);
  if (!m || !tl_operator_counts(sv->op, sv->stream, m, error)) return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "m", m);
  return tl_expr_reduce(sv->ctx, sv->stream, "sum(m)", args, total, error) &&
         tl_stream_finish(sv->stream, error);
}

/* Emission start: a constant where s > 0 such that the expected total sum_n s_n x_n equals the
 * measured total minus the additive term's (the measured total if that is not positive). */
static gboolean start_emission(TlSolver *sv, GError **error) {
  double ssum = 0, total = 0, atotal = 0;
  if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(S)", sv->args, &ssum, error)) return FALSE;
  if (sv->y) {
    tl_expr_args_array(sv->args, "y", sv->y);
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(y)", sv->args, &total, error)) return FALSE;
  } else if (sv->op->klass->flags & TL_OPERATOR_LISTMODE) {
    total = (double)tl_operator_n_data(sv->op); /* list mode: one count per event */
  } else if (!operator_counts_total(sv, &total, error)) {
    return FALSE;
  }
  if (sv->pb.additive && sv->pb.additive_total > 0) {
    atotal = sv->pb.additive_total;
  } else if (sv->pb.additive) {
    tl_expr_args_array(sv->args, "a", sv->pb.additive);
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(a)", sv->args, &atotal, error)) return FALSE;
  }
  double shares[2] = {total, atotal}; /* the data totals of every participant */
  if (!tl_solver_reduce_scalars(sv, shares, 2, error)) return FALSE;
  total = shares[0];
  atotal = shares[1];
  double t = total - atotal > 0 ? total - atotal : total;
  sv->start_value = ssum > 0 && t > 0 ? t / ssum : 1.0;
  double support = 0;
  if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(select(S > 0, 1, 0))", sv->args, &support, error))
    return FALSE;
  sv->sens_mean = support > 0 ? ssum / support : 0;
  tl_expr_args_scalar(sv->args, "c0", (float)sv->start_value);
  tl_expr_args_set_label(sv->args, "init");
  gboolean ok = tl_solver_expr(sv, "x = select(S > 0, c0, 0)", error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok && tl_stream_finish(sv->stream, error);
}

static gboolean check_problem(const TlAlgorithmClass *k, const TlProblem *pb,
                              const TlSolverOptions *o, GError **error) {
  const TlOperator *op = pb->op;
  if (!tl_algorithm_applies(k, op, error)) return FALSE;
  const char *why = tl_operator_n_data(op) == 0 ? "the operator has no data" : NULL;
  for (int i = 0; i < 2 && !why; i++) {
    const TlArray *a = i ? pb->additive : pb->data;
    if (a && (tl_array_length(a) != tl_operator_n_data(op) || tl_array_elem_size(a) != 4))
      why = i ? "the additive term's length is not the operator's data length"
              : "the data's length is not the operator's data length";
  }
  if (!why && !pb->data && !tl_operator_has_counts(op))
    why = "no data given and the operator holds no counts";
  if (!why && pb->additive && !(k->flags & TL_ALGO_EMISSION))
    why = "an additive term belongs to the Poisson model: use an EM algorithm";
  if (!why && o->reducer && !(k->flags & TL_ALGO_EMISSION))
    why = "a distributed run (reducer) needs an emission algorithm";
  if (!why && o->prior && !(k->flags & TL_ALGO_PRIOR))
    why = "it takes no prior (use osl or bsrem)";
  if (!why && !o->prior && (k->flags & TL_ALGO_NEEDS_PRIOR))
    why = "it needs a prior (--prior rdp|quadratic|tv)";
  if (!why && (!isfinite(o->beta) || o->beta < 0)) why = "beta must be finite and >= 0";
  if (!why && o->warm_epochs && !(k->flags & TL_ALGO_EMISSION))
    why = "an OSEM warm start (warm_epochs) needs an emission algorithm";
  if (!why && (k->flags & (TL_ALGO_EMISSION | TL_ALGO_PRIOR)) == 0 &&
      !(o->relaxation > 0 && o->relaxation < 2))
    why = "the relaxation must lie in (0, 2)";
  if (!why && !strcmp(k->name, "bsrem") && !(o->relaxation > 0 && o->relaxation <= 1))
    why = "bsrem's relaxation alpha_0 must lie in (0, 1]";
  if (!why && (o->filter.kind == TL_FILTER_GAUSS || o->filter.kind == TL_FILTER_METZ) &&
      o->filter_every && (!isfinite(o->filter.fwhm_mm) || !(o->filter.fwhm_mm > 0)))
    why = "the Gaussian or Metz filter's FWHM must be finite and > 0";
  if (!why && o->start_subset >= tl_operator_n_subsets(op)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s on %s: start subset %u; expected 0 to %u (the operator's subsets - 1)",
                k->name, tl_operator_label(op), o->start_subset, tl_operator_n_subsets(op) - 1);
    return FALSE;
  }
  if (!why) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: %s", k->name,
              tl_operator_label(op), why);
  return FALSE;
}

TlSolver *tl_solver_new(TlContext *ctx, const char *algorithm, const TlProblem *problem,
                        const TlSolverOptions *opt, GError **error) {
  const TlAlgorithmClass *k = tl_recon_find_algorithm(algorithm, error);
  return k ? tl_solver_new_class(ctx, k, problem, opt, error) : NULL;
}

TlSolver *tl_solver_new_class(TlContext *ctx, const TlAlgorithmClass *k, const TlProblem *problem,
                              const TlSolverOptions *opt, GError **error) {
  TlSolverOptions o;
  if (opt) o = *opt;
  else tl_solver_options_init(&o);
  if (!problem || !problem->op) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: no operator", k->name);
    return NULL;
  }
  if (!check_problem(k, problem, &o, error)) return NULL;
  g_autoptr(TlSolver) sv = g_new0(TlSolver, 1);
  sv->ctx = ctx;
  sv->klass = k;
  sv->op = problem->op;
  sv->pb = *problem;
  sv->n_subsets = tl_operator_n_subsets(sv->op);
  sv->n_voxels = tl_operator_n_voxels(sv->op);
  sv->pass_terms = g_new(double, sv->n_subsets);
  tl_solver_forget_passes(sv);
  sv->args = tl_expr_args_new();
  sv->profile = tl_profile_new();
  if (!(sv->stream = tl_stream_new(ctx, error))) return NULL;
  tl_stream_set_profile(sv->stream, sv->profile);
  sv->opt = o;
  sv->opt.prior = NULL;
  if (o.prior && !tl_solver_set_prior(sv, o.prior, o.beta, &o.prior_params, error)) return NULL;
  guint64 qn = tl_operator_max_subset_length(sv->op);
  if (!(sv->x = tl_array_new_float(ctx, sv->n_voxels, error)) ||
      !(sv->next = tl_array_new_float(ctx, sv->n_voxels, error)) ||
      !(sv->vol = tl_array_new_float(ctx, sv->n_voxels, error)))
    return NULL;
  tl_expr_args_array(sv->args, "x", sv->x);
  if (o.filter.kind != TL_FILTER_NONE && o.filter_every > 0 &&
      !(sv->filter_tmp = tl_array_new_float(ctx, sv->n_voxels, error)))
    return NULL;
  gboolean emission = (k->flags & TL_ALGO_EMISSION) != 0;
  /* the scratch data vector: not needed by the fused EM pass (list mode keeps 12 B/event) */
  if (!emission || !tl_solver_em_fast(sv)) {
    if (!(sv->q = tl_array_new_float(ctx, MAX(qn, 1), error)) || !(sv->q_sub = views(sv, sv->q, error)) ||
        !tl_solver_need_data(sv, error))
      return NULL;
  }
  if (problem->additive && !(sv->a_sub = views(sv, problem->additive, error))) return NULL;
  if (emission) {
    if (!setup_sensitivity(sv, error) || !start_emission(sv, error)) return NULL;
    sv->opt.sensitivity = NULL; /* borrowed for the set-up only */
  } else if (!tl_stream_zero(sv->stream, sv->x, error) || !tl_stream_finish(sv->stream, error)) {
    return NULL;
  }
  if (k->init && !k->init(sv, error)) return NULL;
  if (!tl_stream_finish(sv->stream, error)) return NULL;
  return g_steal_pointer(&sv);
}

gboolean tl_solver_set_prior(TlSolver *sv, const char *name, double beta,
                             const TlPriorParams *params, GError **error) {
  if (name && !(sv->klass->flags & TL_ALGO_PRIOR)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s takes no prior (use osl or bsrem)",
                sv->klass->name);
    return FALSE;
  }
  if (!isfinite(beta) || beta < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "prior strength beta = %g: expected a "
                "finite value >= 0", beta);
    return FALSE;
  }
  if (!name) {
    g_clear_pointer(&sv->prior, tl_prior_free);
    g_clear_pointer(&sv->prior_name, g_free);
    sv->opt.prior = NULL;
    sv->opt.beta = beta;
    return TRUE;
  }
  /* epsilon NAN: automatic (rdp only; resolved by resolve_epsilon at the algorithm's first
   * step), a placeholder until then */
  TlPriorParams given;
  if (params) given = *params;
  else tl_prior_params_init(&given);
  gboolean automatic = isnan(given.epsilon);
  if (automatic) given.epsilon = 1e-3;
  TlPrior *p = tl_prior_new(sv->ctx, name, tl_operator_grid(sv->op), &given, error);
  if (!p) return FALSE;
  if (!sv->grad && !(sv->grad = tl_array_new_float(sv->ctx, sv->n_voxels, error))) {
    tl_prior_free(p);
    return FALSE;
  }
  if (sv->kappa && !tl_prior_set_kappa(p, sv->kappa, error)) {
    tl_prior_free(p);
    return FALSE;
  }
  tl_prior_free(sv->prior);
  sv->prior = p;
  g_free(sv->prior_name);
  sv->prior_name = g_strdup(name);
  sv->opt.prior = sv->prior_name;
  sv->opt.beta = beta;
  sv->opt.prior_params = given;
  sv->auto_epsilon = automatic && g_str_equal(name, "rdp") && (sv->klass->flags & TL_ALGO_EMISSION);
  return TRUE;
}

gboolean tl_solver_prior_gradient(TlSolver *sv, GError **error) {
  tl_expr_args_array(sv->args, "g", sv->grad ? sv->grad : sv->vol);
  if (!sv->prior) return !sv->grad || tl_stream_zero(sv->stream, sv->grad, error);
  return tl_prior_gradient(sv->prior, sv->stream, sv->x, sv->grad, error);
}

static gboolean check_image(TlSolver *sv, const TlImage *im, const char *what, GError **error) {
  if (tl_image_grid_equal(&im->grid, tl_operator_grid(sv->op))) return TRUE;
  g_autofree char *a = tl_image_grid_key(&im->grid), *b = tl_image_grid_key(tl_operator_grid(sv->op));
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "the %s's grid (%s) is not the reconstruction grid (%s)", what, a, b);
  return FALSE;
}

gboolean tl_solver_set_truth(TlSolver *sv, const TlImage *truth, GError **error) {
  if (!check_image(sv, truth, "ground truth", error)) return FALSE;
  if (!sv->truth && !(sv->truth = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
  sv->truth_sum = tl_image_sum(truth);
  return tl_array_upload(sv->truth, truth->data, error);
}

gboolean tl_solver_set_image(TlSolver *sv, const TlImage *image, GError **error) {
  if (!check_image(sv, image, "starting image", error) ||
      !tl_array_upload(sv->x, image->data, error))
    return FALSE;
  sv->fp_valid = FALSE;
  sv->sub_iterations = 0;
  tl_solver_forget_passes(sv);
  if (sv->klass->reset) sv->klass->reset(sv);
  return TRUE;
}

gboolean tl_solver_resume(TlSolver *sv, const TlImage *image, guint sub_iterations,
                          GError **error) {
  if (!tl_solver_set_image(sv, image, error)) return FALSE;
  sv->sub_iterations = sub_iterations;
  return TRUE;
}

gboolean tl_solver_restart(TlSolver *sv, GError **error) {
  gboolean emission = (sv->klass->flags & TL_ALGO_EMISSION) != 0;
  tl_expr_args_array(sv->args, "x", sv->x);
  if (!(emission ? start_emission(sv, error)
                 : tl_stream_zero(sv->stream, sv->x, error) && tl_stream_finish(sv->stream, error)))
    return FALSE;
  sv->fp_valid = FALSE;
  sv->pass_pending = FALSE;
  tl_solver_forget_passes(sv);
  if (sv->klass->reset) sv->klass->reset(sv);
  return TRUE;
}

gboolean tl_solver_set_additive(TlSolver *sv, TlArray *additive, GError **error) {
  if (additive && !(sv->klass->flags & TL_ALGO_EMISSION)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: an additive term belongs to "
                "the Poisson model: use an EM algorithm", sv->klass->name, tl_operator_label(sv->op));
    return FALSE;
  }
  if (additive && (tl_array_length(additive) != tl_operator_n_data(sv->op) ||
                   tl_array_elem_size(additive) != 4)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: an additive term of %"
                G_GUINT64_FORMAT " elements of %u bytes, expected %" G_GUINT64_FORMAT " floats",
                sv->klass->name, tl_operator_label(sv->op), tl_array_length(additive),
                (guint)tl_array_elem_size(additive), tl_operator_n_data(sv->op));
    return FALSE;
  }
  TlArray **v = NULL;
  if (additive && !(v = views(sv, additive, error))) return FALSE;
  /* the separate forward / ratio / back passes need the data and a scratch vector */
  if (additive && !sv->q &&
      (!(sv->q = tl_array_new_float(sv->ctx, MAX(tl_operator_max_subset_length(sv->op), 1), error)) ||
       !(sv->q_sub = views(sv, sv->q, error)) || !tl_solver_need_data(sv, error))) {
    free_views(v, sv->n_subsets);
    return FALSE;
  }
  if (!tl_stream_finish(sv->stream, error)) {
    free_views(v, sv->n_subsets);
    return FALSE;
  }
  free_views(sv->a_sub, sv->n_subsets);
  sv->a_sub = v;
  sv->pb.additive = additive;
  sv->pb.additive_total = 0; /* the caller's tl_solver_set_additive_total follows */
  sv->fp_valid = FALSE;
  sv->pass_pending = FALSE;
  tl_solver_forget_passes(sv);
  return TRUE;
}

const TlArray *tl_solver_additive(const TlSolver *sv) { return sv->pb.additive; }
void tl_solver_set_additive_total(TlSolver *sv, double total) {
  sv->pb.additive_total = isfinite(total) && total > 0 ? total : 0;
}

void tl_solver_set_callback(TlSolver *sv, TlSolverCallback cb, gpointer user_data) {
  sv->cb = cb;
  sv->cb_data = user_data;
}

void tl_solver_set_cancellable(TlSolver *sv, GCancellable *cancellable) {
  g_set_object(&sv->cancellable, cancellable);
  tl_stream_set_cancellable(sv->stream, cancellable);
}

void tl_solver_set_submit_budget(TlSolver *sv, guint64 budget) {
  tl_stream_set_submit_budget(sv->stream, budget);
}

/* -beta R(x) of image x (0 without a prior). */
static gboolean penalty(TlSolver *sv, const TlArray *x, double *out, GError **error) {
  *out = 0;
  if (!sv->prior || sv->opt.beta == 0) return TRUE;
  double r;
  if (!tl_prior_value(sv->prior, sv->stream, x, &r, error)) return FALSE;
  *out = -tl_solver_beta(sv) * r;
  return TRUE;
}

gboolean tl_solver_need_scratch(TlSolver *sv, GError **error) {
  if (!tl_solver_need_data(sv, error)) return FALSE;
  return sv->q || ((sv->q = tl_array_new_float(sv->ctx, MAX(tl_operator_max_subset_length(sv->op), 1), error)) &&
                   (sv->q_sub = views(sv, sv->q, error)));
}

/* Emission: sum_j m_j log ybar_j (ybar = D A x + a), over every subset, from explicit
 * projections, with ybar floored at 1e-30: a datum with m_j > 0 on a line of ybar = 0 (log 0 =
 * -inf) scores m_j log 1e-30 = -69 m_j, a constant where the line misses the grid (its row of
 * A is 0). Scoring such data 0, as this did, made one OSEM epoch on sparse data look better
 * than it is: OSEM zeroes the voxels no event of a subset crosses, and on
 * tests/test-recon-petric-pet's sparse case (3000 events, 20 subsets) 190 counts then lay on
 * lines of ybar = 0; BSREM's floor made them finite (about -4.7 each), which read as BSREM
 * lowering Phi by 897 in its first epoch (-11222 -> -12120) while it had raised it. (-inf
 * instead stopped lbfgsb wherever an event's line misses the grid: test recon-registry.) The
 * EM steps' own estimate from their pass (tl-algo-em.c, PET's fused kernels) floors alike
 * (test recon-abemml /em-floor, /em-floor-pet). */
static gboolean emission_data_term(TlSolver *sv, const TlArray *x, double *out, GError **error) {
  if (!tl_solver_need_scratch(sv, error)) return FALSE;
  double total = 0;
  sv->passes += 0.5; /* a forward projection of every datum */
  for (guint s = 0; s < sv->n_subsets; s++) {
    double part;
    tl_expr_args_array(sv->args, "q", sv->q_sub[s]);
    tl_expr_args_array(sv->args, "y", sv->y_sub[s]);
    tl_expr_args_set_label(sv->args, "objective");
    if (!tl_operator_forward(sv->op, sv->stream, s, x, sv->q_sub[s], error)) return FALSE;
    if (sv->a_sub) {
      tl_expr_args_array(sv->args, "a", sv->a_sub[s]);
      if (!tl_solver_expr(sv, "q = q + a", error)) return FALSE;
    }
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(select(y > 0, y * log(max(q, 1e-30)), 0))",
                        sv->args, &part, error))
      return FALSE;
    total += part;
  }
  tl_expr_args_set_label(sv->args, NULL);
  *out = total;
  return tl_solver_reduce_scalars(sv, out, 1, error);
}

/* The expected total of the model over every measurable datum: sum_n s_n x_n + sum_j a_j. */
static gboolean emission_expected(TlSolver *sv, const TlArray *x, double *out, GError **error) {
  double sx = 0, at = 0;
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  tl_expr_args_array(sv->args, "ox", (TlArray *)x);
  tl_expr_args_set_label(sv->args, "objective sum(s x)");
  if (!tl_expr_reduce(sv->ctx, sv->stream, "dot(S, ox)", sv->args, &sx, error)) return FALSE;
  if (sv->pb.additive) {
    tl_expr_args_array(sv->args, "a", sv->pb.additive);
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(a)", sv->args, &at, error)) return FALSE;
  }
  tl_expr_args_set_label(sv->args, NULL);
  if (!tl_solver_reduce_scalars(sv, &at, 1, error)) return FALSE; /* sx: S is already summed */
  *out = sx + at;
  return TRUE;
}

/* The penalised objective of the current image, with the data term given (emission, from an
 * EM pass) or computed. */
gboolean tl_solver_objective_with(TlSolver *sv, const double *data_term, double *objective,
                                  GError **error) {
  return tl_solver_objective_parts(sv, sv->x, data_term, objective, NULL, NULL, error);
}

gboolean tl_solver_objective_parts(TlSolver *sv, const TlArray *x, const double *data_term,
                                   double *objective, double *likelihood, double *prior,
                                   GError **error) {
  double pen;
  sv->fp_valid = FALSE; /* q is overwritten below */
  if (sv->klass->flags & TL_ALGO_EMISSION) {
    double d = data_term ? *data_term : 0, e;
    if ((!data_term && !emission_data_term(sv, x, &d, error)) ||
        !emission_expected(sv, x, &e, error) || !penalty(sv, x, &pen, error))
      return FALSE;
    *objective = d - e + pen;
    if (likelihood) *likelihood = d - e;
    if (prior) *prior = sv->opt.beta > 0 ? -pen / sv->opt.beta : 0; /* R; 0 when not computed */
    return TRUE;
  }
  if (x != sv->x) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s on %s: the objective at another "
                "image is offered for emission algorithms only", sv->klass->name,
                tl_operator_label(sv->op));
    return FALSE;
  }
  if (!tl_solver_need_data(sv, error)) return FALSE;
  double total = 0;
  for (guint s = 0; s < sv->n_subsets; s++) {
    double part;
    tl_expr_args_array(sv->args, "q", sv->q_sub[s]);
    tl_expr_args_array(sv->args, "y", sv->y_sub[s]);
    tl_expr_args_set_label(sv->args, "objective");
    if (!tl_operator_forward(sv->op, sv->stream, s, sv->x, sv->q_sub[s], error) ||
        !tl_expr_reduce(sv->ctx, sv->stream, "dot(q - y, q - y)", sv->args, &part, error))
      return FALSE;
    total += part;
  }
  tl_expr_args_set_label(sv->args, NULL);
  *objective = 0.5 * total;
  /* one subset: q keeps A x of this very image, which SIRT's next step would project again
   * (an iteration's objective cost a whole forward projection); any step clears it */
  sv->fp_valid = sv->n_subsets == 1;
  return TRUE;
}

/* After a failure (a cancel, mostly): wait for what was submitted so a later step starts
 * clean; the image is untouched (steps write sv->next). */
static gboolean drain(TlSolver *sv) {
  tl_stream_finish(sv->stream, NULL);
  sv->fp_valid = FALSE;
  sv->pass_pending = FALSE;
  if (sv->klass->reset) sv->klass->reset(sv);
  return FALSE;
}

gboolean tl_solver_objective(TlSolver *sv, double *objective, GError **error) {
  if (!tl_solver_objective_with(sv, NULL, objective, error)) return drain(sv);
  return TRUE;
}

static gboolean rmse(TlSolver *sv, double *out, GError **error) {
  tl_expr_args_array(sv->args, "t", sv->truth);
  tl_expr_args_set_label(sv->args, "rmse");
  double xs = 0, norm = 0;
  float scale = 1.0f;
  if (sv->opt.rmse_scaled) {
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(x)", sv->args, &xs, error)) return FALSE;
    scale = xs > 0 ? (float)(sv->truth_sum / xs) : 0.0f;
  }
  tl_expr_args_scalar(sv->args, "rs", scale);
  gboolean ok = tl_expr_reduce(sv->ctx, sv->stream, "l2norm(rs*x - t)", sv->args, &norm, error);
  tl_expr_args_set_label(sv->args, NULL);
  *out = norm / sqrt((double)sv->n_voxels);
  return ok;
}

/* The new image sv->next becomes the current one. */
static void swap_images(TlSolver *sv) {
  TlArray *t = sv->x;
  sv->x = sv->next;
  sv->next = t;
  tl_expr_args_array(sv->args, "x", sv->x);
  tl_expr_args_array(sv->args, "n", sv->next);
}

/* PETRIC's automatic epsilon of the relative difference prior (Thielemans et al. 2024): 1e-3
 * times the largest voxel of an OSEM image. That image is the warm-up's when there was one,
 * else one OSEM epoch from the current image, made here on the solver's own arrays and then
 * undone (the image, the pass estimates and the algorithm's state are as before). */
static gboolean resolve_epsilon(TlSolver *sv, GError **error) {
  double mx = 0;
  tl_expr_args_set_label(sv->args, "auto epsilon");
  if (sv->opt.warm_epochs == 0) {
    g_autoptr(TlArray) keep = tl_array_new_float(sv->ctx, sv->n_voxels, error);
    if (!keep) return FALSE;
    tl_expr_args_array(sv->args, "kp", keep);
    if (!tl_solver_expr(sv, "kp = x", error)) return FALSE;
    gboolean want = sv->want_objective;
    sv->want_objective = FALSE;
    for (guint k = 0; k < sv->n_subsets; k++) {
      double o = NAN;
      gboolean n = FALSE;
      if (!tl_algo_osem.step(sv, k, &o, &n, error) || !tl_stream_finish(sv->stream, error))
        return FALSE;
      swap_images(sv);
    }
    sv->want_objective = want;
    if (!tl_expr_reduce(sv->ctx, sv->stream, "max(x)", sv->args, &mx, error) ||
        !tl_solver_expr(sv, "x = kp", error) || !tl_stream_finish(sv->stream, error))
      return FALSE;
    tl_solver_forget_passes(sv);
  } else if (!tl_expr_reduce(sv->ctx, sv->stream, "max(x)", sv->args, &mx, error)) {
    return FALSE;
  }
  tl_expr_args_set_label(sv->args, NULL);
  if (!(mx > 0) || !isfinite(mx)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s, rdp with automatic epsilon: the "
                "OSEM image's largest voxel is %g; expected a finite value > 0 (give epsilon)",
                sv->klass->name, mx);
    return FALSE;
  }
  TlPriorParams p = sv->opt.prior_params;
  p.epsilon = 1e-3 * mx;
  g_autofree char *name = g_strdup(sv->prior_name);
  if (!tl_solver_set_prior(sv, name, sv->opt.beta, &p, error)) return FALSE;
  sv->auto_epsilon = FALSE;
  return TRUE;
}

double tl_solver_epsilon(const TlSolver *sv) {
  return sv->auto_epsilon ? NAN : sv->opt.prior_params.epsilon;
}

gboolean tl_solver_step(TlSolver *sv, GError **error) {
  if (g_cancellable_set_error_if_cancelled(sv->cancellable, error)) return FALSE;
  gint64 t0 = g_get_monotonic_time();
  guint S = sv->n_subsets, k = (sv->sub_iterations + sv->opt.start_subset) % S;
  double objective = NAN;
  gboolean is_new = FALSE;
  tl_expr_args_array(sv->args, "x", sv->x);
  tl_expr_args_array(sv->args, "n", sv->next);
  sv->want_objective = sv->opt.objective != TL_OBJECTIVE_NEVER;
  gboolean filter = sv->filter_tmp && (sv->sub_iterations + 1) % sv->opt.filter_every == 0;
  /* the OSEM warm-up, then the algorithm, which sees its own sub-iterations (its schedule
   * starts at the warm-up's image) */
  guint warm = sv->opt.warm_epochs * S;
  gboolean warming = sv->sub_iterations < warm;
  const TlAlgorithmClass *klass = warming ? &tl_algo_osem : sv->klass;
  guint base = warming ? 0 : warm;
  if (!warming && sv->auto_epsilon && !resolve_epsilon(sv, error)) return drain(sv);
  sv->sub_iterations -= base;
  gboolean ok = klass->step(sv, k, &objective, &is_new, error);
  sv->sub_iterations += base;
  sv->fp_valid = FALSE; /* the step may have written q, and the image changes */
  if (!ok ||
      (filter && !tl_filter_apply(sv->ctx, sv->stream, &sv->opt.filter, tl_operator_grid(sv->op),
                                  sv->next, sv->filter_tmp, error)) ||
      !tl_stream_finish(sv->stream, error))
    return drain(sv);
  swap_images(sv);
  sv->sub_iterations++;
  if (warm && sv->sub_iterations == warm) { /* the algorithm starts afresh from here */
    tl_solver_forget_passes(sv);
    if (sv->klass->reset) sv->klass->reset(sv);
  }

  /* an iteration ends after S sub-iterations, whichever subset it started at */
  gboolean want = sv->opt.objective == TL_OBJECTIVE_SUBITERATION ||
                  (sv->opt.objective == TL_OBJECTIVE_ITERATION && sv->sub_iterations % S == 0);
  TlSolverProgress p = {.iteration = (sv->sub_iterations - 1) / S + 1, .subset = k,
                        .n_subsets = S, .sub_iterations = sv->sub_iterations, .image = sv->x,
                        .objective = NAN, .rmse = NAN, .filtered = filter,
                        .profile = sv->profile};
  if (want) {
    if (!isnan(objective)) {
      p.objective = objective; /* the algorithm's own (CGLS: new image; EM pass: the old) */
      p.objective_from_pass = !is_new;
    } else if (!tl_solver_objective_with(sv, NULL, &p.objective, error)) {
      return drain(sv);
    }
  }
  if (sv->truth && !rmse(sv, &p.rmse, error)) return drain(sv);
  p.seconds = (g_get_monotonic_time() - t0) * 1e-6;
  if (sv->cb) sv->cb(&p, sv->cb_data);
  return TRUE;
}

gboolean tl_solver_run(TlSolver *sv, GError **error) {
  while (sv->sub_iterations < sv->opt.iterations * sv->n_subsets)
    if (!tl_solver_step(sv, error)) return FALSE;
  return TRUE;
}

guint tl_solver_sub_iterations(const TlSolver *sv) { return sv->sub_iterations; }
double tl_solver_data_passes(const TlSolver *sv) { return sv->passes; }
const TlImageGrid *tl_solver_grid(const TlSolver *sv) { return tl_operator_grid(sv->op); }
const TlArray *tl_solver_image_array(const TlSolver *sv) { return sv->x; }
const TlProfile *tl_solver_profile(const TlSolver *sv) { return sv->profile; }

gboolean tl_solver_check_kernel(const TlSolver *sv, const char *name, GError **error) {
  gboolean em = (sv->klass->flags & TL_ALGO_EMISSION) && tl_solver_em_fast(sv);
  g_autoptr(GPtrArray) runs = g_ptr_array_new();
  gboolean used = tl_operator_kernel_used(sv->op, 0, em, name, runs);
  if (sv->prior) g_ptr_array_add(runs, "prior");
  const TlFilter *f = &sv->opt.filter;
  if (f->kind != TL_FILTER_NONE && sv->opt.filter_every > 0)
    g_ptr_array_add(runs, f->kind == TL_FILTER_GAUSS || f->kind == TL_FILTER_METZ ? "filter_gauss"
                                                                                  : "filter_median");
  for (guint i = 0; !used && i < runs->len; i++) used = g_str_equal(runs->pdata[i], name);
  if (used || runs->len == 0) return TRUE;
  g_ptr_array_add(runs, NULL);
  g_autofree char *list = g_strjoinv(", ", (char **)runs->pdata);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s is not called by this run: its sub-iterations run %s (%s, %s)", name, list,
              sv->klass->name, tl_operator_label(sv->op));
  return FALSE;
}
TlOperator *tl_solver_operator(TlSolver *sv) { return sv->op; }
const TlSolverOptions *tl_solver_options(const TlSolver *sv) { return &sv->opt; }
const TlAlgorithmClass *tl_solver_algorithm(const TlSolver *sv) { return sv->klass; }

const TlArray *tl_solver_sensitivity(const TlSolver *sv, guint subset) {
  if (!sv->sens) return NULL;
  return subset == G_MAXUINT ? sv->sens_all : sv->sens[subset];
}

TlImage *tl_solver_image(TlSolver *sv, GError **error) {
  g_autoptr(TlImage) im = tl_image_new(tl_operator_grid(sv->op));
  if (!tl_array_download(sv->x, im->data, error)) return NULL;
  return g_steal_pointer(&im);
}
