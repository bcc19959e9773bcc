/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The damped fan-sum fixed point (tl-fansum.h). */
#include "tl-fansum.h"
#include <math.h>

void tl_fan_solve(guint n, const double *F, TlFanSumFunc fan_sum, gpointer user_data,
                  double *x, double *fan, guint max_iterations, double tolerance,
                  TlFanSolve *result) {
  double *own = fan ? NULL : g_new(double, MAX(n, 1));
  if (!fan) fan = own;
  TlFanSolve r = {0};
  for (;; r.iterations++) {
    fan_sum(x, fan, user_data);
    double worst = 0;
    for (guint i = 0; i < n; i++) worst = MAX(worst, fabs(x[i] * fan[i] - F[i]) / MAX(F[i], 1.0));
    r.max_residual = worst;
    if (worst < tolerance || r.iterations >= max_iterations) break;
    /* damped: the geometric mean of x_i and the undamped update F_i / fan_i converges */
    for (guint i = 0; i < n; i++) x[i] = fan[i] > 0 ? sqrt(x[i] * F[i] / fan[i]) : 0;
  }
  g_free(own);
  if (result) *result = r;
}
