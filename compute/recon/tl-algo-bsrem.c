/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Block sequential regularised EM (De Pierro & Yamagishi 2001, IEEE TMI 20(4); the relaxed
 * form of Ahn & Fessler 2003), convergent for the penalised log-likelihood
 * Phi(x) = L(x) - beta R(x) with relaxation alpha_n -> 0:
 *
 *   x_n <- x_n + alpha_i (x_n / (s_n / S)) [c_n - s_n^(k) - (beta / S) dR/dx_n (x)]
 *
 * (the bracket is the gradient of subset k's share of Phi, s^(k) its column sums; the
 * preconditioner x / (s / S) uses the average subset sensitivity, as the BSREM example of the
 * PETRIC challenge (Thielemans et al. 2024): with alpha 1 and beta 0 the first sub-iteration is OSEM's step where
 * s^(k) = s / S. With x / s, Ahn & Fessler's D(x) for the whole objective, each sub-iteration
 * moved 1/S of that: after 3 iterations of 10 subsets the image had barely left its uniform
 * start, and the smoothing seen came from those small steps, not from the prior),
 * alpha_i = alpha_0 / (1 + i) for iteration i (0-based), constant over its sub-iterations;
 * voxels with s = 0 keep their value. Then x is clamped into [TL_BSREM_FLOOR, TL_BSREM_UPPER]:
 * the floor keeps x > 0 (0 is a fixed point of the preconditioner), the bound is the
 * "bounded interval" of the convergence proof. c as in tl-algo-em.c. */
#include "tl-solver-private.h"

#define TL_BSREM_FLOOR 1e-6f
#define TL_BSREM_UPPER 1e30f

static gboolean bsrem_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                           GError **error) {
  guint iteration = sv->sub_iterations / sv->n_subsets;
  tl_expr_args_array(sv->args, "s", tl_solver_sens(sv, k));
  tl_expr_args_array(sv->args, "S", sv->sens_all);
  tl_expr_args_scalar(sv->args, "up", TL_BSREM_UPPER);
  tl_expr_args_scalar(sv->args, "b", (float)(tl_solver_beta(sv) / sv->n_subsets));
  tl_expr_args_scalar(sv->args, "al", sv->opt.relaxation * (float)sv->n_subsets / (1.0f + iteration));
  tl_expr_args_scalar(sv->args, "fl", TL_BSREM_FLOOR);
  tl_expr_args_set_label(sv->args, "bsrem update");
  gboolean ok = tl_solver_em_correction(sv, k, error) &&
                tl_solver_prior_gradient(sv, error) &&
                tl_solver_expr(sv, "n = min(max(select(S > 0, x + al * x * (c - s - b * g) / S, x), fl), up)",
                               error) &&
                tl_solver_em_objective(sv, k, objective, error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok;
}

const TlAlgorithmClass tl_algo_bsrem = {
    .name = "bsrem",
    .summary = "block sequential regularised EM (De Pierro & Yamagishi 2001), convergent MAP",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_PRIOR,
    .step = bsrem_step,
};
