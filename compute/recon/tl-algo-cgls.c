/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CGLS: conjugate gradients on the normal equations A^T A x = A^T y of Petit 2020 eq. 2.6,
 * min 1/2 |A x - y|^2 (A = D A), in the residual form that never forms A^T A (Hestenes &
 * Stiefel 1952; Paige & Saunders' CGLS):
 *
 *   r = y - A x,  s = A^T r,  p = s,  gamma = |s|^2
 *   each iteration:  q = A p,  alpha = gamma / |q|^2,  x += alpha p,  r -= alpha q,
 *                    s = A^T r,  gamma' = |s|^2,  p = s + (gamma' / gamma) p
 *
 * |r_k| never increases; the objective 1/2 |r|^2 comes free with each step. Every vector
 * operation is one fused expression; the reductions finish the stream (the cancel points).
 * After a cancel or a new start image the directions restart from the current image.
 *
 * Each reduction is a wait of the host for the device, so a step has as few as the
 * recurrence allows: |q|^2 after the forward projection and |s|^2 after the back projection.
 * |r|^2 is reduced only when the objective is wanted, and p = s + beta p is recorded at the
 * start of the next step, in front of its forward projection, rather than left alone at the
 * end of this one (where the solver would wait for it). */
#include "tl-solver-private.h"
#include <math.h>

typedef struct {
  TlArray *r, *p;
  double gamma, objective;
  double beta;        /* p = s + beta p still to be recorded (p_pending) */
  gboolean ready, p_pending;
} Cgls;

static void cgls_finalize(TlSolver *sv) {
  Cgls *c = sv->state;
  if (!c) return;
  tl_array_free(c->r);
  tl_array_free(c->p);
  g_free(c);
  sv->state = NULL;
}

static void cgls_reset(TlSolver *sv) {
  Cgls *c = sv->state;
  if (c) c->ready = FALSE, c->p_pending = FALSE;
}

static void bind(TlSolver *sv, Cgls *c) {
  tl_expr_args_array(sv->args, "r", c->r);
  tl_expr_args_array(sv->args, "p", c->p);
  tl_expr_args_array(sv->args, "q", sv->q_sub[0]);
  tl_expr_args_array(sv->args, "s", sv->vol);
  tl_expr_args_array(sv->args, "y", sv->y_sub[0]);
}

/* 1/2 |r|^2 into c->objective when this step's objective is wanted (a wait), else NAN. */
static gboolean residual_objective(TlSolver *sv, Cgls *c, GError **error) {
  double rr = NAN;
  if (sv->want_objective &&
      !tl_expr_reduce(sv->ctx, sv->stream, "dot(r, r)", sv->args, &rr, error))
    return FALSE;
  c->objective = 0.5 * rr;
  return TRUE;
}

static gboolean restart(TlSolver *sv, Cgls *c, GError **error) {
  bind(sv, c);
  c->p_pending = FALSE;
  if (!tl_operator_forward(sv->op, sv->stream, 0, sv->x, sv->q_sub[0], error) ||
      !tl_solver_expr(sv, "r = y - q", error) || !tl_stream_zero(sv->stream, sv->vol, error) ||
      !tl_operator_adjoint(sv->op, sv->stream, 0, c->r, sv->vol, error) ||
      !tl_solver_expr(sv, "p = s", error) ||
      !tl_expr_reduce(sv->ctx, sv->stream, "dot(s, s)", sv->args, &c->gamma, error) ||
      !residual_objective(sv, c, error))
    return FALSE;
  c->ready = TRUE;
  return TRUE;
}

static gboolean cgls_init(TlSolver *sv, GError **error) {
  Cgls *c = sv->state = g_new0(Cgls, 1);
  return (c->r = tl_array_new_float(sv->ctx, MAX(tl_operator_n_data(sv->op), 1), error)) &&
         (c->p = tl_array_new_float(sv->ctx, sv->n_voxels, error)) && restart(sv, c, error);
}

static gboolean cgls_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                          GError **error) {
  Cgls *c = sv->state;
  if (!c->ready && !restart(sv, c, error)) return FALSE;
  bind(sv, c);
  *is_new = TRUE;
  double delta;
  if (c->p_pending) {
    /* the previous step's direction update (s is still its A^T r: nothing else writes
     * sv->vol between the steps of CGLS) */
    tl_expr_args_scalar(sv->args, "b", (float)c->beta);
    if (!tl_solver_expr(sv, "p = s + b * p", error)) return FALSE;
    c->p_pending = FALSE;
  }
  if (!tl_operator_forward(sv->op, sv->stream, 0, c->p, sv->q_sub[0], error) ||
      !tl_expr_reduce(sv->ctx, sv->stream, "dot(q, q)", sv->args, &delta, error))
    return FALSE;
  if (!(delta > 0) || !(c->gamma > 0)) {
    /* A^T r = 0: x already solves the normal equations; keep it */
    *objective = c->objective;
    return tl_solver_expr(sv, "n = x", error);
  }
  double gamma_new;
  tl_expr_args_scalar(sv->args, "a", (float)(c->gamma / delta));
  if (!tl_solver_expr(sv, sv->opt.nonnegative ? "n = max(x + a * p, 0)" : "n = x + a * p",
                      error) ||
      !tl_solver_expr(sv, "r = r - a * q", error) || !tl_stream_zero(sv->stream, sv->vol, error) ||
      !tl_operator_adjoint(sv->op, sv->stream, 0, c->r, sv->vol, error) ||
      !tl_expr_reduce(sv->ctx, sv->stream, "dot(s, s)", sv->args, &gamma_new, error) ||
      !residual_objective(sv, c, error))
    return FALSE;
  c->beta = gamma_new / c->gamma;
  c->p_pending = TRUE;
  c->gamma = gamma_new;
  *objective = c->objective;
  if (sv->opt.nonnegative) c->ready = FALSE; /* the clamp leaves the Krylov space: restart */
  return TRUE;
}

const TlAlgorithmClass tl_algo_cgls = {
    .name = "cgls",
    .summary = "conjugate gradients on the normal equations (least squares)",
    .flags = TL_ALGO_NEEDS_DATA,
    .init = cgls_init,
    .step = cgls_step,
    .reset = cgls_reset,
    .finalize = cgls_finalize,
};
