/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The preconditioned Krasnoselskii-Mann algorithm (PKMA: Lin, Schmidtlein, Li, Li & Xu 2019,
 * IEEE TMI 38(9); the ordered-subset form OMEGA offers) on the penalised Poisson objective
 * Phi of tl-objective.c: for sub-iteration on subset k of iteration i (0-based),
 *
 *   T(x) = max(x + lambda_i S P g_k(x), 0),   P = max(x, delta) / s   (the EM preconditioner)
 *   x   <- (1 - rho) x + rho T(x)           (the Krasnoselskii-Mann average)
 *
 * with g_k subset k's gradient share (tl_solver_objective_gradient; S g_k estimates the full
 * gradient), rho = 1/2 and lambda_i = 2 relaxation / (1 + i / 10) (with relaxation 1 the
 * averaged first step is an EM-sized one): the decreasing step makes the ordered-subset
 * iteration converge (with one subset a constant step would). delta as in tl_solver_precond.
 * Voxels with s = 0 keep their value. One subset gradient per step. */
#include "tl-solver-private.h"

#define TL_PKMA_RHO 0.5f

typedef struct {
  TlArray *g;
} Pkma;

static void pkma_finalize(TlSolver *sv) {
  Pkma *st = sv->state;
  if (!st) return;
  tl_array_free(st->g);
  g_free(st);
  sv->state = NULL;
}

static gboolean pkma_init(TlSolver *sv, GError **error) {
  Pkma *st = sv->state = g_new0(Pkma, 1);
  return (st->g = tl_array_new_float(sv->ctx, sv->n_voxels, error)) != NULL;
}

static gboolean pkma_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                          GError **error) {
  Pkma *st = sv->state;
  guint iteration = sv->sub_iterations / sv->n_subsets;
  double sum = 0;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "x", sv->x);
  tl_expr_args_array(args, "n", sv->next);
  tl_expr_args_array(args, "g", st->g);
  tl_expr_args_array(args, "S", sv->sens_all);
  tl_expr_args_scalar(args, "la", 2.0f * sv->opt.relaxation / (1.0f + iteration / 10.0f));
  tl_expr_args_scalar(args, "rh", TL_PKMA_RHO);
  tl_expr_args_scalar(args, "K", (float)sv->n_subsets);
  tl_expr_args_set_label(args, "pkma update");
  if (!tl_expr_reduce(sv->ctx, sv->stream, "sum(x)", args, &sum, error)) return FALSE;
  tl_expr_args_scalar(args, "dl", (float)MAX(1e-3 * sum / (double)sv->n_voxels, 1e-30));
  return tl_solver_objective_gradient(sv, k, sv->x, st->g, error) &&
         tl_expr_assign(sv->ctx, sv->stream,
                        "n = select(S > 0, (1 - rh) * x + rh * max(x + la * K * max(x, dl) / S * g, 0), x)",
                        args, error);
}

const TlAlgorithmClass tl_algo_pkma = {
    .name = "pkma",
    .summary = "preconditioned Krasnoselskii-Mann (Lin et al. 2019): relaxed MAP, subsets",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_PRIOR,
    .init = pkma_init,
    .step = pkma_step,
    .finalize = pkma_finalize,
};
