/* SPDX-License-Identifier: GPL-3.0-or-later */
/* L-BFGS with positivity bounds and a diagonal preconditioner, the kind of reference solver
 * of PETRIC2 (preconditioned L-BFGS-B), on f = -Phi (Phi the penalised Poisson objective of
 * tl-objective.c), all data per step (one subset). Bounds are handled by projection and an
 * active set, as in the projected quasi-Newton methods (Bertsekas 1982; Kim, Sra & Dhillon
 * 2010) rather than by Byrd, Lu, Nocedal & Zhu's (1995) Cauchy point: per step, with
 * g = grad f(x) = -dPhi(x),
 *
 *   free  F = {j : s_j > 0 and (x_j > 0 or g_j < 0)}      (x_j = 0 with g_j >= 0 stays 0)
 *   d     = -H g on F, 0 elsewhere, H the L-BFGS inverse Hessian (two-loop recursion, Nocedal
 *           & Wright 2006 alg. 7.4) over the last TL_LBFGS_MEMORY pairs with H0 = diag P,
 *           P = 1 / (s / x + beta H_R(x)) (tl_solver_precond); d = -P g when that is no
 *           descent direction (the memory is then dropped)
 *   x    <- max(x + t d, x / 10), t = 1, 1/2, 1/4, ... the first with the Armijo condition
 *           f(x_t) <= f(x) + 1e-4 g.(x_t - x) (at most TL_LBFGS_TRIES halvings; none: x stays
 *           and the memory is dropped); the floor x / 10 is tl_solver_floored_step's, which
 *           says why
 *
 * Then the pair (x_new - x, g_new - g) joins the memory when its curvature s.y is positive.
 * A step costs one gradient and one objective per trial; the objective reported is that of
 * the new image (from the line search, no extra projection). */
#include "tl-solver-private.h"
#include <math.h>

#define TL_LBFGS_MEMORY 5
#define TL_LBFGS_TRIES 30

typedef struct {
  TlArray *s[TL_LBFGS_MEMORY], *y[TL_LBFGS_MEMORY];
  double rho[TL_LBFGS_MEMORY];
  guint count, head; /* pairs kept; the next slot */
  TlArray *g, *gprev, *xprev, *q, *P, *trial;
  double fx;         /* f at x, NAN when unknown */
  gboolean have_prev;
} Lbfgs;

static void lbfgs_finalize(TlSolver *sv) {
  Lbfgs *st = sv->state;
  if (!st) return;
  for (guint i = 0; i < TL_LBFGS_MEMORY; i++) {
    tl_array_free(st->s[i]);
    tl_array_free(st->y[i]);
  }
  TlArray *a[] = {st->g, st->gprev, st->xprev, st->q, st->P, st->trial};
  for (gsize i = 0; i < G_N_ELEMENTS(a); i++) tl_array_free(a[i]);
  g_free(st);
  sv->state = NULL;
}

static void lbfgs_reset(TlSolver *sv) {
  Lbfgs *st = sv->state;
  st->count = st->head = 0;
  st->have_prev = FALSE;
  st->fx = NAN;
}

static gboolean lbfgs_init(TlSolver *sv, GError **error) {
  Lbfgs *st = sv->state = g_new0(Lbfgs, 1);
  lbfgs_reset(sv);
  for (guint i = 0; i < TL_LBFGS_MEMORY; i++)
    if (!(st->s[i] = tl_array_new_float(sv->ctx, sv->n_voxels, error)) ||
        !(st->y[i] = tl_array_new_float(sv->ctx, sv->n_voxels, error)))
      return FALSE;
  TlArray **a[] = {&st->g, &st->gprev, &st->xprev, &st->q, &st->P, &st->trial};
  for (gsize i = 0; i < G_N_ELEMENTS(a); i++)
    if (!(*a[i] = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
  return TRUE;
}

static gboolean expr(TlSolver *sv, TlExprArgs *args, const char *e, GError **error) {
  return tl_expr_assign(sv->ctx, sv->stream, e, args, error);
}

static gboolean dot(TlSolver *sv, TlExprArgs *args, const char *e, double *out, GError **error) {
  return tl_expr_reduce(sv->ctx, sv->stream, e, args, out, error);
}

/* q <- -H q on the free set (two-loop recursion), q in/out; args binds g, x, S, P, q. */
static gboolean two_loop(TlSolver *sv, Lbfgs *st, TlExprArgs *args, GError **error) {
  double alpha[TL_LBFGS_MEMORY];
  const char *mask = "q = select(S > 0, select(x > 0, q, select(g < 0, q, 0)), 0)";
  if (!expr(sv, args, mask, error)) return FALSE;
  for (guint n = 0; n < st->count; n++) { /* newest to oldest */
    guint i = (st->head + TL_LBFGS_MEMORY - 1 - n) % TL_LBFGS_MEMORY;
    double sq;
    tl_expr_args_array(args, "vs", st->s[i]);
    tl_expr_args_array(args, "vy", st->y[i]);
    if (!dot(sv, args, "dot(vs, q)", &sq, error)) return FALSE;
    alpha[i] = st->rho[i] * sq;
    tl_expr_args_scalar(args, "c", (float)alpha[i]);
    if (!expr(sv, args, "q = q - c * vy", error)) return FALSE;
  }
  if (!expr(sv, args, "q = P * q", error)) return FALSE;
  for (guint n = st->count; n-- > 0;) { /* oldest to newest */
    guint i = (st->head + TL_LBFGS_MEMORY - 1 - n) % TL_LBFGS_MEMORY;
    double yr;
    tl_expr_args_array(args, "vs", st->s[i]);
    tl_expr_args_array(args, "vy", st->y[i]);
    if (!dot(sv, args, "dot(vy, q)", &yr, error)) return FALSE;
    tl_expr_args_scalar(args, "c", (float)(alpha[i] - st->rho[i] * yr));
    if (!expr(sv, args, "q = q + c * vs", error)) return FALSE;
  }
  return expr(sv, args, mask, error) && expr(sv, args, "q = 0 - q", error);
}

static gboolean lbfgs_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                           GError **error) {
  Lbfgs *st = sv->state;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "x", sv->x);
  tl_expr_args_array(args, "n", sv->next);
  tl_expr_args_array(args, "g", st->g);
  tl_expr_args_array(args, "gp", st->gprev);
  tl_expr_args_array(args, "xp", st->xprev);
  tl_expr_args_array(args, "q", st->q);
  tl_expr_args_array(args, "P", st->P);
  tl_expr_args_array(args, "t", st->trial);
  tl_expr_args_array(args, "S", sv->sens_all);
  tl_expr_args_set_label(args, "lbfgsb");
  if (isnan(st->fx)) {
    double phi;
    if (!tl_solver_objective_at(sv, sv->x, &phi, NULL, NULL, error)) return FALSE;
    st->fx = -phi;
  }
  if (!tl_solver_objective_gradient(sv, G_MAXUINT, sv->x, st->g, error) ||
      !expr(sv, args, "g = 0 - g", error) || !tl_solver_precond(sv, sv->x, st->P, error))
    return FALSE;
  if (st->have_prev) { /* the pair of the previous step */
    guint i = st->head;
    double sy;
    tl_expr_args_array(args, "vs", st->s[i]);
    tl_expr_args_array(args, "vy", st->y[i]);
    if (!expr(sv, args, "vs = x - xp", error) || !expr(sv, args, "vy = g - gp", error) ||
        !dot(sv, args, "dot(vs, vy)", &sy, error))
      return FALSE;
    if (sy > 0 && isfinite(sy)) {
      st->rho[i] = 1.0 / sy;
      st->head = (st->head + 1) % TL_LBFGS_MEMORY;
      st->count = MIN(st->count + 1, TL_LBFGS_MEMORY);
    } else { /* the slot held the oldest pair, now overwritten: start the memory afresh */
      st->count = st->head = 0;
    }
  }
  double gd;
  if (!expr(sv, args, "q = g", error) || !two_loop(sv, st, args, error) ||
      !dot(sv, args, "dot(g, q)", &gd, error))
    return FALSE;
  if (!(gd < 0)) { /* no descent: a preconditioned gradient step, memory dropped */
    st->count = st->head = 0;
    if (!expr(sv, args, "q = g", error) || !two_loop(sv, st, args, error) ||
        !dot(sv, args, "dot(g, q)", &gd, error))
      return FALSE;
  }
  st->have_prev = FALSE;
  if (!(gd < 0)) { /* stationary on the free set */
    *objective = -st->fx;
    *is_new = TRUE;
    return expr(sv, args, "n = x", error);
  }
  double step = 1;
  for (guint tries = 0; tries < TL_LBFGS_TRIES; tries++, step *= 0.5) {
    double phi, dec;
    if (!tl_solver_floored_step(sv, args, "t", FALSE, (float)step, "q", error) ||
        !dot(sv, args, "dot(g, t - x)", &dec, error) ||
        !tl_solver_objective_at(sv, st->trial, &phi, NULL, NULL, error))
      return FALSE;
    if (isfinite(phi) && -phi <= st->fx + 1e-4 * dec) {
      st->fx = -phi;
      st->have_prev = TRUE;
      *objective = phi;
      *is_new = TRUE;
      return expr(sv, args, "xp = x", error) && expr(sv, args, "gp = g", error) &&
             expr(sv, args, "n = t", error);
    }
  }
  st->count = st->head = 0;
  *objective = -st->fx;
  *is_new = TRUE;
  return expr(sv, args, "n = x", error);
}

const TlAlgorithmClass tl_algo_lbfgsb = {
    .name = "lbfgsb",
    .summary = "L-BFGS with positivity bounds and a diagonal preconditioner: MAP reference",
    .flags = TL_ALGO_EMISSION | TL_ALGO_PRIOR,
    .init = lbfgs_init,
    .step = lbfgs_step,
    .reset = lbfgs_reset,
    .finalize = lbfgs_finalize,
};
