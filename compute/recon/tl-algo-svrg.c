/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Preconditioned stochastic variance-reduced gradient ascent (SVRG: Johnson & Zhang 2013) on
 * the penalised Poisson objective Phi of tl-objective.c, as in the PETRIC winner MaGeZ
 * (MaGeZ: Ehrhardt, Kereta & Schramm, PETRIC 2024): with g_k the gradient of subset k's share
 * (tl_solver_objective_gradient) and S subsets,
 *
 *   every second epoch, at its start:  anchor z = x, G = sum_k g_k(z) = dPhi(z), and the
 *                                      step uses v = G
 *   otherwise, subset k:               v = S (g_k(x) - g_k(z)) + G
 *   x <- max(x + alpha_e P(x) v, 0),   P(x) = 1 / (s / x + beta H_R(x)) (tl_solver_precond)
 *
 * (the floor x / 10: tl_solver_floored_step, which says why).
 * P is computed at every step's own image: with P frozen at the anchor (MaGeZ recomputes it
 * only now and then, from an OSEM start) a flat start image far above the solution's scale
 * made steps of the anchor's size on images 7 times smaller and diverged (the registry's list-
 * mode case). It costs the prior's Hessian and one reduction per step.
 *
 * alpha_e = relaxation * max(2 / (1 + e / 5), 1 / 2) for epoch e (0-based): a decreasing step
 * down to a quarter of the first, as MaGeZ's schedule decreases (our own constants: with
 * 1 -> 1/6 instead, svrg from an OSEM start stayed 3e-4 below the reference run's Phi after
 * 40 epochs on test recon-petric-pet's list mode, 7e-5 with 2 -> 1/3). Each epoch
 * visits the subsets in a random order drawn from TlSolverOptions.seed (the same seed gives
 * the same images bit for bit); the callback's subset field is the solver's counter modulo S,
 * not the subset drawn. Warm start: tl_solver_set_image (an OSEM image, as MaGeZ). Voxels with
 * s = 0 keep their value. A step costs two subset gradients (one at the anchor), a full
 * gradient every second epoch.
 *
 * The first step from the start image is a plain preconditioned gradient step (below says
 * why). From the second on, Phi is checked at every epoch's start (tl-epoch-check.c, which says
 * why): if it fell, the epoch is undone - the step restarts from the last good image, with the
 * stored G when that image is the anchor, else as a new anchor there - and the steps' scale
 * halves. Johnson & Zhang's step bound 1 / (4 L) has no L here: without an additive term the
 * Poisson term's curvature y / ybar^2 is unbounded where ybar -> 0 (lines through voxels OSEM
 * left near 0). Checked only at the anchors (every second epoch) as before, a diverged image
 * lived two epochs and, on the sparse case of test recon-petric-pet, svrg ended 5.7e-5 below
 * the reference after 40 epochs; checked every epoch, 5.2e-7. It costs Phi's forward
 * projection (half a data pass) per epoch. */
#include "tl-solver-private.h"
#include <math.h>

typedef struct {
  TlArray *anchor, *full, *gx, *gz, *P;
  GRand *rand;
  guint *order;
  gboolean have_anchor, lifted; /* lifted: the first step taken */
  gboolean good_is_anchor;      /* check.good is the anchor z (G is its gradient) */
  guint anchor_epoch;
  TlEpochCheck check;
} Svrg;

static void svrg_finalize(TlSolver *sv) {
  Svrg *st = sv->state;
  if (!st) return;
  TlArray *a[] = {st->anchor, st->full, st->gx, st->gz, st->P};
  for (gsize i = 0; i < G_N_ELEMENTS(a); i++) tl_array_free(a[i]);
  tl_epoch_check_clear(&st->check);
  if (st->rand) g_rand_free(st->rand);
  g_free(st->order);
  g_free(st);
  sv->state = NULL;
}

static void svrg_reset(TlSolver *sv) {
  Svrg *st = sv->state;
  st->have_anchor = st->lifted = st->good_is_anchor = FALSE;
  tl_epoch_check_reset(&st->check);
  g_rand_set_seed(st->rand, sv->opt.seed);
}

static gboolean svrg_init(TlSolver *sv, GError **error) {
  Svrg *st = sv->state = g_new0(Svrg, 1);
  TlArray **a[] = {&st->anchor, &st->full, &st->gx, &st->gz, &st->P};
  for (gsize i = 0; i < G_N_ELEMENTS(a); i++)
    if (!(*a[i] = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
  st->rand = g_rand_new_with_seed(sv->opt.seed);
  st->order = g_new(guint, sv->n_subsets);
  return tl_epoch_check_init(&st->check, sv, error);
}

static gboolean svrg_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                          GError **error) {
  Svrg *st = sv->state;
  guint S = sv->n_subsets, t = sv->sub_iterations, e = t / S, i = t % S;
  if (i == 0 || !st->have_anchor) tl_solver_shuffle(st->rand, st->order, S);
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "x", sv->x);
  tl_expr_args_array(args, "n", sv->next);
  tl_expr_args_array(args, "z", st->anchor);
  tl_expr_args_array(args, "G", st->full);
  tl_expr_args_array(args, "gx", st->gx);
  tl_expr_args_array(args, "gz", st->gz);
  tl_expr_args_array(args, "P", st->P);
  tl_expr_args_scalar(args, "K", (float)S);
  tl_expr_args_set_label(args, "svrg update");
  float base = sv->opt.relaxation * MAX(2.0f / (1.0f + e / 5.0f), 0.5f);
  if (!st->lifted) {
    /* the first step (from an OSEM image, say) is a plain preconditioned gradient step and no
     * anchor: an image with voxels at 0 under events' lines (ybar = 0, y / ybar unbounded)
     * made S (g_b(x) - g_b(z)) + G diverge at any step scale (to 2^-12, on
     * /recon/petric/svrg-sparse); the step lifts those voxels (to at most 10 delta) */
    st->lifted = TRUE;
    return tl_solver_objective_gradient(sv, G_MAXUINT, sv->x, st->full, error) &&
           tl_solver_precond(sv, sv->x, st->P, error) &&
           tl_solver_floored_step(sv, args, "n", TRUE, base, "G", error);
  }
  gboolean full = !st->have_anchor || (i == 0 && e >= st->anchor_epoch + 2);
  TlArray *from = sv->x;
  if (i == 0 || !st->have_anchor) {
    gboolean undo;
    if (!tl_epoch_check(&st->check, sv, &undo, error)) return FALSE;
    if (undo) {
      from = st->check.good;
      tl_expr_args_array(args, "x", from);
      if (st->good_is_anchor) /* restart from the anchor with its stored G */
        return tl_solver_precond(sv, from, st->P, error) &&
               tl_solver_floored_step(sv, args, "n", TRUE, st->check.scale * base, "G", error);
      full = TRUE; /* a new anchor at the good image */
    }
    st->good_is_anchor = full;
  }
  float al = st->check.scale * base;
  if (full) {
    tl_expr_args_array(args, "x", from);
    if (!tl_solver_objective_gradient(sv, G_MAXUINT, from, st->full, error) ||
        !tl_expr_assign(sv->ctx, sv->stream, "z = x", args, error) ||
        !tl_solver_precond(sv, from, st->P, error))
      return FALSE;
    st->have_anchor = TRUE;
    st->anchor_epoch = e;
    return tl_solver_floored_step(sv, args, "n", TRUE, al, "G", error);
  }
  guint b = st->order[i];
  return tl_solver_objective_gradient(sv, b, sv->x, st->gx, error) &&
         tl_solver_objective_gradient(sv, b, st->anchor, st->gz, error) &&
         tl_solver_precond(sv, sv->x, st->P, error) &&
         tl_solver_floored_step(sv, args, "n", TRUE, al, "K * (gx - gz) + G", error);
}

const TlAlgorithmClass tl_algo_svrg = {
    .name = "svrg",
    .summary = "preconditioned SVRG (Johnson & Zhang 2013; PETRIC's MaGeZ): stochastic MAP",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_PRIOR,
    .init = svrg_init,
    .step = svrg_step,
    .reset = svrg_reset,
    .finalize = svrg_finalize,
};
