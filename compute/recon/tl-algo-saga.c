/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Preconditioned SAGA (Defazio, Bach & Lacoste-Julien 2014) on the penalised Poisson objective
 * Phi of tl-objective.c, the variance reduction the PETRIC entries compared with SVRG
 * (MaGeZ: Ehrhardt, Kereta & Schramm, PETRIC 2024) and that OMEGA offers: a table T_k of the latest
 * gradient of every subset's share and their sum M,
 *
 *   first step (and after a reset):  T_k = g_k(x) for every k, M = sum_k T_k, v = M
 *   subset k:                        v = S (g_k(x) - T_k) + M,
 *                                    then M <- M + g_k(x) - T_k, T_k <- g_k(x)
 *   x <- max(x + c alpha_e P v, x / 10)    (tl_solver_floored_step; c the check's scale)
 *
 * with P = 1 / (s / x + beta H_R(x)) (tl_solver_precond) at every step's own image (as
 * tl-algo-svrg.c, which says why), alpha_e = relaxation * max(1 / (1 + e / 5), 1 / 2) (half
 * svrg's first steps: with svrg's 2 the table's stale gradients made it diverge on test
 * recon-petric-pet's list mode) and each epoch's subsets in a random order drawn from TlSolverOptions.seed, as
 * tl-algo-svrg.c. One subset gradient
 * per step; memory S + 4 images. Voxels with s = 0 keep their value. Phi is checked at the
 * second step and at every epoch's start as in svrg (tl-epoch-check.c): a fall undoes the epoch
 * (back to the last good image, its table made afresh there: one data pass) and halves the
 * step scale. Without the check saga diverged to Phi = -inf on the sparse case of test
 * recon-petric-pet (3000 events, 20 subsets); with it, 3.6e-6 below the reference after 40
 * epochs. */
#include "tl-solver-private.h"

typedef struct {
  TlArray **table, *sum, *gx, *P;
  GRand *rand;
  guint *order;
  gboolean filled;
  TlEpochCheck check;
} Saga;

static void saga_finalize(TlSolver *sv) {
  Saga *st = sv->state;
  if (!st) return;
  for (guint k = 0; st->table && k < sv->n_subsets; k++) tl_array_free(st->table[k]);
  g_free(st->table);
  tl_array_free(st->sum);
  tl_array_free(st->gx);
  tl_array_free(st->P);
  tl_epoch_check_clear(&st->check);
  if (st->rand) g_rand_free(st->rand);
  g_free(st->order);
  g_free(st);
  sv->state = NULL;
}

static void saga_reset(TlSolver *sv) {
  Saga *st = sv->state;
  st->filled = FALSE;
  tl_epoch_check_reset(&st->check);
  g_rand_set_seed(st->rand, sv->opt.seed);
}

static gboolean saga_init(TlSolver *sv, GError **error) {
  Saga *st = sv->state = g_new0(Saga, 1);
  st->table = g_new0(TlArray *, sv->n_subsets);
  st->rand = g_rand_new_with_seed(sv->opt.seed);
  st->order = g_new(guint, sv->n_subsets);
  for (guint k = 0; k < sv->n_subsets; k++)
    if (!(st->table[k] = tl_array_new_float(sv->ctx, sv->n_voxels, error))) return FALSE;
  return (st->sum = tl_array_new_float(sv->ctx, sv->n_voxels, error)) &&
         (st->gx = tl_array_new_float(sv->ctx, sv->n_voxels, error)) &&
         (st->P = tl_array_new_float(sv->ctx, sv->n_voxels, error)) &&
         tl_epoch_check_init(&st->check, sv, error);
}

static gboolean saga_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                          GError **error) {
  Saga *st = sv->state;
  guint S = sv->n_subsets, t = sv->sub_iterations, e = t / S, i = t % S;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "x", sv->x);
  tl_expr_args_array(args, "n", sv->next);
  tl_expr_args_array(args, "M", st->sum);
  tl_expr_args_array(args, "gx", st->gx);
  tl_expr_args_array(args, "P", st->P);
  float al = sv->opt.relaxation * MAX(1.0f / (1.0f + e / 5.0f), 0.5f);
  tl_expr_args_scalar(args, "K", (float)S);
  tl_expr_args_set_label(args, "saga update");
  if (i == 0 || !st->filled) tl_solver_shuffle(st->rand, st->order, S);
  /* the epoch check (tl-epoch-check.c) from the second step on: the first, from the start
   * image, is a plain gradient step that the check cannot judge (an OSEM image with ybar = 0
   * under events scores about -69 per such count) */
  TlArray *from = sv->x;
  if (st->filled && (t == 1 || i == 0)) {
    gboolean undo;
    if (!tl_epoch_check(&st->check, sv, &undo, error)) return FALSE;
    if (undo) { /* back to the good image, with a table made afresh there */
      from = st->check.good;
      tl_expr_args_array(args, "x", from);
      st->filled = FALSE;
    }
  }
  al *= st->check.scale;
  if (!tl_solver_precond(sv, from, st->P, error)) return FALSE;
  if (!st->filled) {
    if (!tl_stream_zero(sv->stream, st->sum, error)) return FALSE;
    for (guint b = 0; b < S; b++) {
      tl_expr_args_array(args, "T", st->table[b]);
      if (!tl_solver_objective_gradient(sv, b, from, st->table[b], error) ||
          !tl_expr_assign(sv->ctx, sv->stream, "M = M + T", args, error))
        return FALSE;
    }
    st->filled = TRUE;
    return tl_solver_floored_step(sv, args, "n", TRUE, al, "M", error);
  }
  guint b = st->order[i];
  tl_expr_args_array(args, "T", st->table[b]);
  return tl_solver_objective_gradient(sv, b, sv->x, st->gx, error) &&
         tl_solver_floored_step(sv, args, "n", TRUE, al, "K * (gx - T) + M", error) &&
         tl_expr_assign(sv->ctx, sv->stream, "M = M + gx - T", args, error) &&
         tl_expr_assign(sv->ctx, sv->stream, "T = gx", args, error);
}

const TlAlgorithmClass tl_algo_saga = {
    .name = "saga",
    .summary = "preconditioned SAGA (Defazio et al. 2014): stochastic MAP, a gradient table",
    .flags = TL_ALGO_EMISSION | TL_ALGO_SUBSETS | TL_ALGO_PRIOR,
    .init = saga_init,
    .step = saga_step,
    .reset = saga_reset,
    .finalize = saga_finalize,
};
