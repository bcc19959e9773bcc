/* SPDX-License-Identifier: GPL-3.0-or-later */
/* MLEM and OSEM for the Poisson model ybar = D A x + a (van Gendt et al. 2021 eq. 4-5; Shepp &
 * Vardi 1982,
 * Hudson & Larkin 1994 for ordered subsets), and the EM back projection the penalised EM
 * algorithms (osl, bsrem) share:
 *
 *   c_n   = sum_{j in S_k} d_j a_jn y_j / ybar_j          over data with ybar_j > 0
 *   x_n  <- x_n c_n / s_n^(k),   s^(k) = the column sums of D A over subset k
 *                                (every measurable datum of the subset; 0 where s = 0)
 *
 * With the operator's own counts, no additive term and D inside its kernels, c comes from the
 * operator's fused forward-ratio-back pass (van Gendt et al. 2021 Listing 1), which also sums
 * m_j log ybar_j for the log-likelihood, so the objective costs no extra projection. */
#include "tl-solver-private.h"
#include <math.h>

static gboolean pass_sum(TlSolver *sv, guint subset, double *out, GError **error) {
  guint64 n = tl_operator_em_partials(sv->op, subset);
  g_autofree float *h = g_new(float, MAX(n, 1));
  if (!tl_stream_finish(sv->stream, error)) return FALSE;
  g_autoptr(TlArray) v = tl_array_new_view(sv->partials, 0, n, error);
  if (!v || !tl_array_download(v, h, error)) return FALSE;
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += h[i];
  *out = s;
  return tl_solver_reduce_scalars(sv, out, 1, error); /* distributed: every share's events */
}

gboolean tl_solver_em_correction(TlSolver *sv, guint k, GError **error) {
  gboolean want = sv->want_objective;
  sv->pass_pending = FALSE;
  sv->passes += 1.0 / sv->n_subsets;
  tl_expr_args_array(sv->args, "c", sv->vol);
  if (!tl_stream_zero(sv->stream, sv->vol, error)) return FALSE;
  if (tl_solver_em_fast(sv)) {
    guint64 np = want ? tl_operator_em_partials(sv->op, k) : 0;
    if (np && (!sv->partials || tl_array_length(sv->partials) < np)) {
      g_clear_pointer(&sv->partials, tl_array_free);
      if (!(sv->partials = tl_array_new_float(sv->ctx, np, error))) return FALSE;
    }
    g_autoptr(TlArray) pv = np ? tl_array_new_view(sv->partials, 0, np, error) : NULL;
    if (np && !pv) return FALSE;
    if (!tl_operator_em(sv->op, sv->stream, k, sv->x, sv->vol, pv, error)) return FALSE;
    sv->pass_pending = np > 0; /* read after the step's update is recorded: no extra wait */
    /* distributed: c over every participant's events of the subset (the update needs all) */
    return tl_solver_reduce_image(sv, sv->vol, error);
  }
  TlArray *q = sv->q_sub[k];
  tl_expr_args_array(sv->args, "q", q);
  tl_expr_args_array(sv->args, "y", sv->y_sub[k]);
  if (!tl_operator_forward(sv->op, sv->stream, k, sv->x, q, error)) return FALSE;
  if (sv->a_sub) {
    tl_expr_args_array(sv->args, "a", sv->a_sub[k]);
    tl_expr_args_set_label(sv->args, "em ratio");
    if (!tl_solver_expr(sv, "q = q + a", error)) return FALSE;
  }
  double data;
  tl_expr_args_set_label(sv->args, "em loglik");
  if (want) {
    /* ybar floored at 1e-30 as the solver's objective (tl-solver.c emission_data_term): a
     * count on a line of ybar = 0 scores y log 1e-30, not 0 */
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(select(y > 0, y * log(max(q, 1e-30)), 0))",
                        sv->args, &data, error) ||
        !tl_solver_reduce_scalars(sv, &data, 1, error))
      return FALSE;
    sv->pass_terms[k] = data;
  }
  tl_expr_args_set_label(sv->args, "em ratio");
  gboolean ok = tl_solver_expr(sv, "q = select(q > 0, y / q, 0)", error) &&
                tl_operator_adjoint(sv->op, sv->stream, k, q, sv->vol, error) &&
                tl_solver_reduce_image(sv, sv->vol, error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok;
}

void tl_solver_forget_passes(TlSolver *sv) {
  for (guint k = 0; k < sv->n_subsets; k++) sv->pass_terms[k] = NAN;
}

gboolean tl_solver_em_objective(TlSolver *sv, guint k, double *objective, GError **error) {
  if (!sv->want_objective) return TRUE;
  if (sv->pass_pending) {
    double data;
    if (!pass_sum(sv, k, &data, error)) return FALSE;
    sv->pass_terms[k] = data;
    sv->pass_pending = FALSE;
  }
  gboolean every = sv->opt.objective == TL_OBJECTIVE_SUBITERATION;
  if (!every && k != sv->n_subsets - 1) return TRUE;
  double sum = 0;
  guint known = 0;
  for (guint s = 0; s < sv->n_subsets; s++)
    if (!isnan(sv->pass_terms[s])) sum += sv->pass_terms[s], known++;
  if (known == 0) return TRUE;
  sum *= (double)sv->n_subsets / known;
  return tl_solver_objective_with(sv, &sum, objective, error);
}

static gboolean em_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                        GError **error) {
  tl_expr_args_array(sv->args, "s", tl_solver_sens(sv, k));
  tl_expr_args_set_label(sv->args, "update");
  gboolean ok = tl_solver_em_correction(sv, k, error) &&
                tl_solver_expr(sv, "n = select(s > 0, x * c / s, 0)", error) &&
                tl_solver_em_objective(sv, k, objective, error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok;
}

const TlAlgorithmClass tl_algo_mlem = {
    .name = "mlem",
    .summary = "maximum-likelihood expectation maximisation (all data each update)",
    .flags = TL_ALGO_EMISSION,
    .step = em_step,
};

const TlAlgorithmClass tl_algo_osem = {
    .name = "osem",
    .summary = "ordered-subsets EM (one update per subset)",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS,
    .step = em_step,
};
