/* SPDX-License-Identifier: GPL-3.0-or-later */
/* AB-EMML (Byrne 1998, Inverse Problems 14) with the upper bound B at infinity and a lower
 * bound A below 0 (the form Van Slambrouck et al. 2015 compare with NEG-ML):
 * EM on the shifted unknown x - A >= 0, the data shifted by the bound's projection,
 *
 *   t_j   = (D A b)_j,  b = A where s > 0 (0 elsewhere)        (once, per subset)
 *   c_n   = sum_{j in S_k} d_j a_jn (y_j - t_j) / (ybar_j - t_j)    over data with ybar > t
 *   x_n  <- A + (x_n - A) c_n / s_n^(k)          (where s^(k) = 0: x kept; 0 outside s > 0)
 *
 * with ybar = D A x + a. A = 0 is MLEM / OSEM. Why: EM's x >= 0 biases a cold region upwards
 * once an additive term (randoms, scatter) sits under few counts — the mean of a non-negative
 * estimate of ~0 is > 0 (docs/pet.md "The cold lung"); with A < 0 a voxel can go below 0
 * where the data ask for it, and the noise averages out instead of being clipped.
 *
 * A = -x0, x0 = (sum y - sum a) / sum s (sum y if not positive; 1 without counts): the
 * uniform image of the data's total, the data's own scale (the mean activity over the
 * sensitivity's support) — far enough below the lung's 0 that the bound does not bind, close
 * enough that hot voxels (x - A ~ x) update as in EM.
 *
 * Every datum the scanner could measure must be a row (a zero count says y - t = -t > 0): the
 * algorithm needs a data vector (TL_ALGO_NEEDS_DATA), so list mode is refused, and binned
 * data must keep their zero bins. The objective reported is the Poisson log-likelihood of
 * ybar (as mlem / osem report), from the same forward projection as the update. */
#include "tl-solver-private.h"

typedef struct {
  TlArray *t;   /* D A b, the whole data vector */
  TlArray **tk; /* its views per subset */
  float bound;  /* A */
} Abemml;

static void abemml_finalize(TlSolver *sv) {
  Abemml *st = sv->state;
  if (!st) return;
  for (guint k = 0; st->tk && k < sv->n_subsets; k++) tl_array_free(st->tk[k]);
  g_free(st->tk);
  tl_array_free(st->t);
  g_free(st);
  sv->state = NULL;
}

static gboolean abemml_init(TlSolver *sv, GError **error) {
  if (!tl_solver_need_scratch(sv, error)) return FALSE;
  Abemml *st = sv->state = g_new0(Abemml, 1);
  /* x0 from the data vector itself: the solver's start value counts one per datum when it
   * made no data vector (the fused EM pass's set-up), a bin's count for list mode's event */
  double tot[2] = {0, 0}, ssum = 0;
  tl_expr_args_array(sv->args, "y", sv->y);
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(y)", sv->args, &tot[0], error) ||
      !tl_expr_reduce(sv->ctx, sv->stream, "sum(S)", sv->args, &ssum, error))
    return FALSE;
  if (sv->pb.additive) {
    tl_expr_args_array(sv->args, "a", sv->pb.additive);
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(a)", sv->args, &tot[1], error)) return FALSE;
  }
  if (!tl_solver_reduce_scalars(sv, tot, 2, error)) return FALSE; /* every share's data */
  double t = tot[0] - tot[1] > 0 ? tot[0] - tot[1] : tot[0];
  st->bound = (float)-(ssum > 0 && t > 0 ? t / ssum : 1.0);
  st->tk = g_new0(TlArray *, sv->n_subsets);
  if (!(st->t = tl_array_new_float(sv->ctx, MAX(tl_operator_n_data(sv->op), 1), error)))
    return FALSE;
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  tl_expr_args_array(sv->args, "v", sv->vol);
  tl_expr_args_scalar(sv->args, "lb", st->bound);
  tl_expr_args_set_label(sv->args, "ab-emml bound");
  if (!tl_solver_expr(sv, "v = select(S > 0, lb, 0)", error)) return FALSE;
  tl_expr_args_set_label(sv->args, NULL);
  for (guint k = 0; k < sv->n_subsets; k++)
    if (!(st->tk[k] = tl_array_new_view(st->t, tl_operator_subset_first(sv->op, k),
                                        tl_operator_subset_length(sv->op, k), error)) ||
        !tl_operator_forward(sv->op, sv->stream, k, sv->vol, st->tk[k], error))
      return FALSE;
  return tl_stream_finish(sv->stream, error);
}

static gboolean abemml_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                            GError **error) {
  Abemml *st = sv->state;
  sv->passes += 1.0 / sv->n_subsets;
  tl_expr_args_array(sv->args, "q", sv->q_sub[k]);
  tl_expr_args_array(sv->args, "y", sv->y_sub[k]);
  tl_expr_args_array(sv->args, "t", st->tk[k]);
  tl_expr_args_array(sv->args, "c", sv->vol);
  tl_expr_args_array(sv->args, "s", tl_solver_sens(sv, k));
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  tl_expr_args_scalar(sv->args, "lb", st->bound);
  tl_expr_args_set_label(sv->args, "ab-emml ratio");
  if (!tl_operator_forward(sv->op, sv->stream, k, sv->x, sv->q_sub[k], error)) return FALSE;
  if (sv->a_sub) {
    tl_expr_args_array(sv->args, "a", sv->a_sub[k]);
    if (!tl_solver_expr(sv, "q = q + a", error)) return FALSE;
  }
  if (sv->want_objective) { /* the Poisson data term at ybar, floored as tl-solver.c's */
    double data;
    tl_expr_args_set_label(sv->args, "ab-emml loglik");
    if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(select(y > 0, y * log(max(q, 1e-30)), 0))",
                        sv->args, &data, error) ||
        !tl_solver_reduce_scalars(sv, &data, 1, error))
      return FALSE;
    sv->pass_terms[k] = data;
    tl_expr_args_set_label(sv->args, "ab-emml ratio");
  }
  gboolean ok = tl_solver_expr(sv, "q = select(q - t > 0, (y - t) / (q - t), 0)", error) &&
                tl_stream_zero(sv->stream, sv->vol, error) &&
                tl_operator_adjoint(sv->op, sv->stream, k, sv->q_sub[k], sv->vol, error) &&
                tl_solver_reduce_image(sv, sv->vol, error);
  tl_expr_args_set_label(sv->args, "ab-emml update");
  ok = ok &&
       tl_solver_expr(sv, "n = select(s > 0, lb + (x - lb) * c / s, select(S > 0, x, 0))", error) &&
       tl_solver_em_objective(sv, k, objective, error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok;
}

const TlAlgorithmClass tl_algo_abemml = {
    .name = "ab-emml",
    .summary = "EM with a negative lower bound (Byrne 1998 AB-EMML, B infinite): a cold "
               "region under an additive term is not clipped at 0; binned data",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_NEEDS_DATA,
    .init = abemml_init,
    .step = abemml_step,
    .finalize = abemml_finalize,
};
