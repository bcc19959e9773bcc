/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Maximum-likelihood crystal factors from fan sums, shared by the randoms estimate from
 * delayeds (tl-randoms.h) and the crystal efficiencies of the normalisation (tl-norm.h).
 *
 * Both fit counts y_ij ~ Poisson(x_i x_j w_ij) over the pairs (i, j) a scanner accepts, with
 * one unknown factor x_i per crystal and known pair weights w_ij (randoms: w = 1, Casey &
 * Hoffman 1986; normalisation: the expected counts without efficiencies times the geometric
 * factors). Setting the derivative of the log-likelihood to zero gives, per crystal,
 *
 *   x_i fan_i(x) = F_i,     fan_i(x) = sum_{j in fan(i)} w_ij x_j,     F_i = sum_j y_ij,
 *
 * (the fan sum F_i counts every event of crystal i), which tl_fan_solve solves by the damped
 * fixed point x_i <- sqrt(x_i F_i / fan_i(x)) (the geometric mean of the old value and the
 * undamped update F_i / fan_i: the undamped map oscillates, halving or doubling every x at
 * once when all are off by a common factor). The caller gives fan_i(x) as a callback: O(1)
 * per crystal from prefix sums for the randoms, one pass over the pairs for the
 * normalisation. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* fan[i] = sum_{j in fan(i)} w_ij x[j] for every crystal i. */
typedef void (*TlFanSumFunc)(const double *x, double *fan, gpointer user_data);

typedef struct {
  guint iterations;    /* fixed-point iterations done */
  double max_residual; /* max_i |x_i fan_i - F_i| / max(F_i, 1) at the end */
} TlFanSolve;

/* Solves x_i fan_i(x) = F_i for i < n from the start values in x (> 0 where F_i > 0), until
 * the relative residual is below `tolerance` or after max_iterations updates. x_i becomes 0
 * where fan_i is 0. fan (n doubles, may be NULL: allocated here) holds fan_i(x) of the final x
 * on return. */
void tl_fan_solve(guint n, const double *F, TlFanSumFunc fan_sum, gpointer user_data,
                  double *x, double *fan, guint max_iterations, double tolerance,
                  TlFanSolve *result);

G_END_DECLS
