/* SPDX-License-Identifier: GPL-3.0-or-later */
/* SIRT and OS-SART (Andersen & Kak 1984; Siegl et al. 2011 sec. 2.3, ref. 7), for any operator:
 *
 *   x <- x + lambda C_k A_k^T R_k (y_k - A_k x)
 *
 * with A = D A (the operator with its factors), R_k = diag(1 / A_k 1) (inverse row sums) and
 * C_k = diag(1 / A_k^T 1) (inverse column sums), zero where a sum is zero; optionally clamped at
 * 0 after each update. SIRT uses all data at once; OS-SART one subset per update (one view per
 * subset gives SART). Column sums are kept per subset while they fit half the device's memory
 * (at least TL_SART_CINV_BYTES) and can be allocated; beyond it (SART on a large volume) each
 * update recomputes its own with one extra back projection: the same bits, at twice the back
 * projection's cost. */
#include "tl-solver-private.h"

#define TL_SART_CINV_BYTES (512ull << 20)

/* What the per-subset column sums may take: half the largest device-local heap (any heap where
 * none is so marked; lavapipe reports 2 GiB), never less than TL_SART_CINV_BYTES. The fixed
 * 512 MiB alone made OS-SART's default 10 subsets recompute them on every update from 13.4 M
 * voxels up (the CT-cone case's 256^3 takes 640 MiB), on every device: 20 back projections of
 * a subset per iteration instead of 10. The solver's own arrays (three images, the data and
 * its scratch) are a few images' worth beside them. */
static guint64 cinv_budget(const TlContext *ctx) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  guint64 local = 0, any = 0;
  for (guint32 i = 0; i < info->n_heaps && i < TL_MAX_HEAPS; i++) {
    any = MAX(any, info->heaps[i].size);
    if (info->heaps[i].device_local) local = MAX(local, info->heaps[i].size);
  }
  return MAX((local ? local : any) / 2, TL_SART_CINV_BYTES);
}

/* One image per subset for the column sums, or none (all NULL) when the device refuses one:
 * the updates then recompute them. */
static void keep_column_sums(TlSolver *sv, TlArray **cinv) {
  if ((guint64)sv->n_subsets * sv->n_voxels * 4 > cinv_budget(sv->ctx)) return;
  for (guint k = 0; k < sv->n_subsets; k++) {
    g_autoptr(GError) e = NULL;
    if ((cinv[k] = tl_array_new_float(sv->ctx, sv->n_voxels, &e))) continue;
    g_debug("os-sart: %u column-sum images of %" G_GUINT64_FORMAT " voxels refused (%s); "
            "recomputed per update", sv->n_subsets, sv->n_voxels, e->message);
    for (guint j = 0; j < k; j++) g_clear_pointer(&cinv[j], tl_array_free);
    return;
  }
}

typedef struct {
  TlArray *rinv;       /* whole data vector */
  TlArray **rinv_sub;  /* views per subset */
  TlArray **cinv;      /* per subset, or NULL entries when recomputed */
  TlArray *cinv_tmp;
} Sart;

/* 1 / (A_k^T 1) into `out`. */
static gboolean column_sums(TlSolver *sv, guint k, TlArray *out, GError **error) {
  tl_expr_args_array(sv->args, "q", sv->q_sub[k]);
  tl_expr_args_array(sv->args, "C", out);
  return tl_solver_expr(sv, "q = 1", error) && tl_stream_zero(sv->stream, out, error) &&
         tl_operator_adjoint(sv->op, sv->stream, k, sv->q_sub[k], out, error) &&
         tl_solver_expr(sv, "C = select(C > 0, 1 / C, 0)", error);
}

static void sart_finalize(TlSolver *sv) {
  Sart *st = sv->state;
  if (!st) return;
  for (guint k = 0; k < sv->n_subsets; k++) {
    if (st->rinv_sub) tl_array_free(st->rinv_sub[k]);
    if (st->cinv) tl_array_free(st->cinv[k]);
  }
  g_free(st->rinv_sub);
  g_free(st->cinv);
  tl_array_free(st->rinv);
  tl_array_free(st->cinv_tmp);
  g_free(st);
  sv->state = NULL;
}

static gboolean sart_init(TlSolver *sv, GError **error) {
  Sart *st = sv->state = g_new0(Sart, 1);
  guint S = sv->n_subsets;
  guint64 n = tl_operator_n_data(sv->op);
  if (!(st->rinv = tl_array_new_float(sv->ctx, MAX(n, 1), error))) return FALSE;
  st->rinv_sub = g_new0(TlArray *, S);
  st->cinv = g_new0(TlArray *, S);
  tl_expr_args_array(sv->args, "v", sv->vol);
  tl_expr_args_set_label(sv->args, "row and column sums");
  if (!tl_solver_expr(sv, "v = 1", error)) return FALSE;
  for (guint k = 0; k < S; k++) {
    TlArray *r = st->rinv_sub[k] = tl_array_new_view(st->rinv, tl_operator_subset_first(sv->op, k),
                                                     tl_operator_subset_length(sv->op, k), error);
    if (!r || !tl_operator_forward(sv->op, sv->stream, k, sv->vol, r, error)) return FALSE;
    tl_expr_args_array(sv->args, "R", r);
    if (!tl_solver_expr(sv, "R = select(R > 0, 1 / R, 0)", error)) return FALSE;
  }
  keep_column_sums(sv, st->cinv);
  if (st->cinv[0]) {
    for (guint k = 0; k < S; k++)
      if (!column_sums(sv, k, st->cinv[k], error)) return FALSE;
  } else if (!(st->cinv_tmp = tl_array_new_float(sv->ctx, sv->n_voxels, error))) {
    return FALSE;
  }
  tl_expr_args_set_label(sv->args, NULL);
  return tl_stream_finish(sv->stream, error);
}

static gboolean sart_step(TlSolver *sv, guint k, double *objective, gboolean *is_new,
                          GError **error) {
  Sart *st = sv->state;
  TlArray *C = st->cinv[k] ? st->cinv[k] : st->cinv_tmp;
  if (!st->cinv[k] && !column_sums(sv, k, C, error)) return FALSE;
  tl_expr_args_array(sv->args, "q", sv->q_sub[k]);
  tl_expr_args_array(sv->args, "y", sv->y_sub[k]);
  tl_expr_args_array(sv->args, "R", st->rinv_sub[k]);
  tl_expr_args_array(sv->args, "C", C);
  tl_expr_args_array(sv->args, "v", sv->vol);
  tl_expr_args_scalar(sv->args, "lam", sv->opt.relaxation);
  /* one subset: the objective's projection of this very image is still in q */
  if (!(sv->n_subsets == 1 && sv->fp_valid) &&
      !tl_operator_forward(sv->op, sv->stream, k, sv->x, sv->q_sub[k], error))
    return FALSE;
  return tl_solver_expr(sv, "q = (y - q) * R", error) &&
         tl_stream_zero(sv->stream, sv->vol, error) &&
         tl_operator_adjoint(sv->op, sv->stream, k, sv->q_sub[k], sv->vol, error) &&
         tl_solver_expr(sv, sv->opt.nonnegative ? "n = max(x + lam * C * v, 0)"
                                                : "n = x + lam * C * v", error);
}

const TlAlgorithmClass tl_algo_sirt = {
    .name = "sirt",
    .summary = "simultaneous iterative reconstruction (all data each update)",
    .flags = TL_ALGO_NEEDS_DATA,
    .init = sart_init,
    .step = sart_step,
    .finalize = sart_finalize,
};

const TlAlgorithmClass tl_algo_os_sart = {
    .name = "os-sart",
    .summary = "ordered-subsets SART (one subset per update; 'sart' is an alias)",
    .flags = TL_ALGO_NEEDS_DATA | TL_ALGO_SUBSETS,
    .init = sart_init,
    .step = sart_step,
    .finalize = sart_finalize,
};
