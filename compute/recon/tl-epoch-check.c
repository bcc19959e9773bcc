/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The epoch check of the stochastic gradient algorithms (tl-algo-svrg.c, tl-algo-saga.c):
 * at the start of every epoch Phi of the current image is compared with Phi of the last image
 * that passed; if it fell by more than 1e-6 |Phi| (or is not finite) the epoch is undone - the
 * image returns to the last good one - and the step scale halves; after two passes in a row it
 * doubles again, up to 1.
 *
 * Why every epoch: the subset steps of SVRG and SAGA have no step bound here (Johnson & Zhang's
 * 1 / (4 L) needs the Lipschitz constant L of the gradient; the Poisson term's curvature
 * y / ybar^2 has none where ybar -> 0, i.e. on sparse data or without an additive term), and on
 * sparse data they diverged within a few subset steps at the default scale (bench/README.md,
 * "SVRG against BSREM"). Checked only at SVRG's anchors, every second epoch, a diverged image
 * lived for two epochs (a race scores every update: RMSE up to 1e11 on the mMR). It is a
 * backtracking line search on the epoch (Armijo's idea, Nocedal & Wright 2006 ch. 3: accept a
 * step only if the objective did not fall, else shorten it) with one extra Phi, half a data
 * pass, per epoch. Doubling only after two passes in a row keeps a scale that just failed from
 * failing again at once (one undone epoch in two at the edge of stability). Our own safeguard;
 * MaGeZ (Ehrhardt et al., PETRIC 2024) had dense enough data not to need it. */
#include "tl-solver-private.h"
#include <math.h>

gboolean tl_epoch_check_init(TlEpochCheck *c, TlSolver *sv, GError **error) {
  memset(c, 0, sizeof *c);
  c->scale = 1.0f;
  return (c->good = tl_array_new_float(sv->ctx, sv->n_voxels, error)) != NULL;
}

void tl_epoch_check_reset(TlEpochCheck *c) {
  c->have_good = FALSE;
  c->scale = 1.0f;
  c->streak = 0;
  c->undone = 0;
}

void tl_epoch_check_clear(TlEpochCheck *c) { g_clear_pointer(&c->good, tl_array_free); }

gboolean tl_epoch_check(TlEpochCheck *c, TlSolver *sv, gboolean *undo, GError **error) {
  double phi;
  *undo = FALSE;
  if (!tl_solver_objective_parts(sv, sv->x, NULL, &phi, NULL, NULL, error)) return FALSE;
  if (c->have_good && (!(phi >= c->phi_good - 1e-6 * fabs(c->phi_good)) || !isfinite(phi))) {
    c->scale *= 0.5f;
    c->streak = 0;
    c->undone++;
    *undo = TRUE;
    g_debug("%s: Phi %.9g below the last good %.9g: epoch undone, step scale %g",
            sv->klass->name, phi, c->phi_good, c->scale);
    return TRUE;
  }
  if (c->have_good && ++c->streak >= 2) {
    c->scale = MIN(2.0f * c->scale, 1.0f);
    c->streak = 0;
  }
  c->have_good = TRUE;
  c->phi_good = phi;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "w", c->good);
  tl_expr_args_array(args, "x", sv->x);
  tl_expr_args_set_label(args, "epoch check");
  return tl_expr_assign(sv->ctx, sv->stream, "w = x", args, error);
}
