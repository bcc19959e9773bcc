/* SPDX-License-Identifier: GPL-3.0-or-later */
/* MAP one-step-late EM (Green 1990, "Bayesian reconstructions from emission tomography data
 * using a modified EM algorithm", IEEE TMI 9(1) eq. 5): the EM update with the prior's
 * gradient at the current image added to the sensitivity,
 *
 *   x_n <- x_n c_n / (s_n^(k) + (beta / S) dR/dx_n (x))      (S subsets: beta / S per subset)
 *
 * c as in tl-algo-em.c. Where the denominator is not positive (beta too large for the image)
 * the voxel keeps its value: OSL has no guarantee there, BSREM is the convergent method. */
#include "tl-solver-private.h"

static gboolean osl_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                         GError **error) {
  tl_expr_args_array(sv->args, "s", tl_solver_sens(sv, k));
  tl_expr_args_scalar(sv->args, "b", (float)(tl_solver_beta(sv) / sv->n_subsets));
  tl_expr_args_set_label(sv->args, "osl update");
  gboolean ok = tl_solver_em_correction(sv, k, error) &&
                tl_solver_prior_gradient(sv, error) &&
                tl_solver_expr(sv, "n = select(s > 0, select(s + b * g > 0, x * c / (s + b * g), "
                                   "x), 0)", error) &&
                tl_solver_em_objective(sv, k, objective, error);
  tl_expr_args_set_label(sv->args, NULL);
  return ok;
}

const TlAlgorithmClass tl_algo_osl = {
    .name = "osl",
    .summary = "MAP one-step-late EM (Green 1990) with a prior, subsets allowed",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_PRIOR,
    .step = osl_step,
};
