/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Class "csr": an explicit sparse matrix (tl-csr-operator.h). Forward and adjoint are the
 * same kernel (shaders/recon/csr_spmv.comp) on the CSR rows and on the per-subset CSC. */
#include "tl-csr-operator.h"
#include <math.h>
#include <string.h>

/* Mirrors the push block of shaders/recon/csr_spmv.comp (scalar layout). */
typedef struct {
  TlPush1D h;
  guint64 ptr, idx, val, vin, vout;
  guint32 accumulate;
  guint32 pad;
} CsrPush;
G_STATIC_ASSERT(sizeof(CsrPush) == 56);

typedef struct {
  guint64 nnz;
  TlArray *row_ptr, *col, *val;    /* CSR, m + 1 / nnz / nnz */
  /* CSC of every subset's block: S x (n + 1) offsets; block s's entries occupy the same
   * range [row_ptr[first(s)], row_ptr[first(s + 1)]) as in the CSR arrays; rows local to s */
  TlArray *col_ptr, *row, *val_t;
  TlPipeline *spmv;
  guint32 *cost_fwd, *cost_adj;    /* per subset: entries per output element, for the budget */
} CsrOp;

static void csr_finalize(TlOperator *op) {
  CsrOp *c = op->priv;
  if (!c) return;
  TlArray *arrays[] = {c->row_ptr, c->col, c->val, c->col_ptr, c->row, c->val_t};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) tl_array_free(arrays[i]);
  tl_pipeline_free(c->spmv);
  g_free(c->cost_fwd);
  g_free(c->cost_adj);
  g_free(c);
}

static gboolean spmv(TlOperator *op, TlStream *s, const char *label, const TlArray *ptr,
                     guint64 ptr_first, const TlArray *idx, const TlArray *val,
                     const TlArray *in, TlArray *out, gboolean accumulate, guint32 cost,
                     GError **error) {
  CsrOp *c = op->priv;
  CsrPush push = {.ptr = tl_array_address(ptr) + 4 * ptr_first, .idx = tl_array_address(idx),
                  .val = tl_array_address(val), .vin = tl_array_address(in),
                  .vout = tl_array_address(out), .accumulate = accumulate};
  tl_pipeline_set_item_cost(c->spmv, cost);
  return tl_stream_dispatch_1d(s, c->spmv, label, tl_array_length(out), &push, error);
}

static gboolean csr_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                            TlArray *y, GError **error) {
  CsrOp *c = op->priv;
  return spmv(op, s, "csr forward", c->row_ptr, op->first[subset], c->col, c->val, x, y, FALSE,
              c->cost_fwd[subset], error);
}

static gboolean csr_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                            TlArray *x, GError **error) {
  CsrOp *c = op->priv;
  return spmv(op, s, "csr adjoint", c->col_ptr, (guint64)subset * (tl_operator_n_voxels(op) + 1),
              c->row, c->val_t, w, x, TRUE, c->cost_adj[subset], error);
}

const TlOperatorClass tl_csr_operator_class = {
    .name = "csr",
    .modality = "any",
    .summary = "explicit sparse matrix (compressed rows), subsets = contiguous row blocks",
    .flags = 0,
    .finalize = csr_finalize,
    .forward = csr_forward,
    .adjoint = csr_adjoint,
};

static gboolean validate(guint64 m, guint64 n, const guint64 *row_ptr, const guint32 *col,
                         const float *val, GError **error) {
  if (m == 0 || m >= G_MAXUINT32 || n >= G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: a %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT " matrix (expected "
                "1 to 2^32 - 2 rows and columns)", m, n);
    return FALSE;
  }
  if (row_ptr[0] != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: row_ptr[0] = %" G_GUINT64_FORMAT " (expected 0)", row_ptr[0]);
    return FALSE;
  }
  for (guint64 i = 0; i < m; i++)
    if (row_ptr[i + 1] < row_ptr[i]) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "CSR operator: row %" G_GUINT64_FORMAT " ends (row_ptr[%" G_GUINT64_FORMAT
                  "] = %" G_GUINT64_FORMAT ") before it starts (%" G_GUINT64_FORMAT "); row_ptr "
                  "must not decrease", i, i + 1, row_ptr[i + 1], row_ptr[i]);
      return FALSE;
    }
  if (row_ptr[m] > G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: %" G_GUINT64_FORMAT " entries (at most 2^32: 32-bit offsets on the "
                "device)", row_ptr[m]);
    return FALSE;
  }
  for (guint64 i = 0; i < m; i++)
    for (guint64 k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
      const char *what = col[k] >= n ? "column out of range" : !isfinite(val[k]) ? "value not finite"
                                                                             : NULL;
      if (!what) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "CSR operator: entry %" G_GUINT64_FORMAT " (row %" G_GUINT64_FORMAT ", column "
                  "%u, value %g): %s (the matrix has %" G_GUINT64_FORMAT " columns, one per "
                  "voxel)", k, i, col[k], val[k], what, n);
      return FALSE;
    }
  return TRUE;
}

static gboolean block_lengths(guint64 m, guint subsets, const guint64 *lengths, guint64 *out,
                              GError **error) {
  if (subsets == 0 || subsets > m) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: %u subsets of %" G_GUINT64_FORMAT " rows (expected 1 to %"
                G_GUINT64_FORMAT ")", subsets, m, m);
    return FALSE;
  }
  guint64 sum = 0;
  for (guint s = 0; s < subsets; s++) {
    /* equal blocks: floor((s + 1) m / S) - floor(s m / S), never 0 since S <= m */
    out[s] = lengths ? lengths[s] : (s + 1) * m / subsets - s * m / subsets;
    if (out[s] == 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "CSR operator: subset %u has no rows (every block needs at least one)", s);
      return FALSE;
    }
    sum += out[s];
  }
  if (sum != m) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: the %u subset lengths add up to %" G_GUINT64_FORMAT " rows, the "
                "matrix has %" G_GUINT64_FORMAT, subsets, sum, m);
    return FALSE;
  }
  return TRUE;
}

static TlArray *upload(TlContext *ctx, const void *data, guint64 n, GError **error) {
  /* an empty matrix still gets a buffer: kernels never read it then */
  g_autoptr(TlArray) a = tl_array_new(ctx, MAX(n, 1), 4, error);
  if (!a || (n && !tl_array_upload_range(a, 0, n, data, error))) return NULL;
  return g_steal_pointer(&a);
}

TlOperator *tl_csr_operator_new(TlContext *ctx, const TlImageGrid *grid, guint64 m,
                                const guint64 *row_ptr, const guint32 *col, const float *val,
                                guint subsets, const guint64 *lengths, GError **error) {
  if (!tl_image_grid_validate(grid, error)) return NULL;
  guint64 n = tl_image_grid_n_voxels(grid);
  g_autofree guint64 *len = g_new(guint64, MAX(subsets, 1));
  if (!validate(m, n, row_ptr, col, val, error) ||
      !block_lengths(m, subsets, lengths, len, error))
    return NULL;
  guint64 nnz = row_ptr[m];
  /* the per-subset column offsets grow with S x n: refuse before the host allocation */
  if ((guint64)subsets * (n + 1) > G_MAXUINT32 / 4) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CSR operator: %u subsets x %" G_GUINT64_FORMAT " column offsets each exceed a "
                "4 GiB device array; use fewer subsets", subsets, n + 1);
    return NULL;
  }

  g_autoptr(TlOperator) op = g_new0(TlOperator, 1);
  tl_operator_init(op, &tl_csr_operator_class, ctx, grid, subsets, len);
  CsrOp *c = g_new0(CsrOp, 1);
  op->priv = c;
  c->nnz = nnz;
  c->cost_fwd = g_new(guint32, subsets);
  c->cost_adj = g_new(guint32, subsets);

  /* 32-bit offsets and the per-subset transposes */
  g_autofree guint32 *rp = g_new(guint32, m + 1);
  for (guint64 i = 0; i <= m; i++) rp[i] = (guint32)row_ptr[i];
  g_autofree guint32 *cp = g_new(guint32, subsets * (n + 1));
  g_autofree guint32 *rows = g_new(guint32, MAX(nnz, 1));
  g_autofree float *vt = g_new(float, MAX(nnz, 1));
  g_autofree guint64 *next = g_new(guint64, n);
  for (guint s = 0; s < subsets; s++) {
    guint64 r0 = op->first[s], r1 = op->first[s + 1], k0 = row_ptr[r0], k1 = row_ptr[r1];
    guint32 *ptr = cp + s * (n + 1);
    memset(next, 0, n * sizeof *next);
    for (guint64 k = k0; k < k1; k++) next[col[k]]++;
    guint64 at = k0;
    for (guint64 j = 0; j < n; j++) {
      ptr[j] = (guint32)at;
      guint64 cnt = next[j];
      next[j] = at;
      at += cnt;
    }
    ptr[n] = (guint32)at;
    /* rows in increasing order within each column: a fixed summation order */
    for (guint64 i = r0; i < r1; i++)
      for (guint64 k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
        guint64 dst = next[col[k]]++;
        rows[dst] = (guint32)(i - r0);
        vt[dst] = val[k];
      }
    c->cost_fwd[s] = (guint32)CLAMP((k1 - k0 + (r1 - r0) - 1) / (r1 - r0), 1, G_MAXUINT32);
    c->cost_adj[s] = (guint32)CLAMP(n ? (k1 - k0 + n - 1) / n : 1, 1, G_MAXUINT32);
  }
  if (!(c->row_ptr = upload(ctx, rp, m + 1, error)) || !(c->col = upload(ctx, col, nnz, error)) ||
      !(c->val = upload(ctx, val, nnz, error)) ||
      !(c->col_ptr = upload(ctx, cp, subsets * (n + 1), error)) ||
      !(c->row = upload(ctx, rows, nnz, error)) || !(c->val_t = upload(ctx, vt, nnz, error)) ||
      !(c->spmv = tl_pipeline_new_builtin(ctx, "csr_spmv", sizeof(CsrPush), NULL, 0, error)))
    return NULL;
  g_autofree char *label = g_strdup_printf("csr %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                                           ", %" G_GUINT64_FORMAT " entries, %u subset%s",
                                           m, n, nnz, subsets, subsets == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  return g_steal_pointer(&op);
}

TlOperator *tl_csr_operator_new_dense(TlContext *ctx, const TlImageGrid *grid, guint64 m,
                                      const float *dense, guint subsets, GError **error) {
  if (!tl_image_grid_validate(grid, error)) return NULL;
  guint64 n = tl_image_grid_n_voxels(grid);
  g_autofree guint64 *row_ptr = g_new(guint64, m + 1);
  g_autoptr(GArray) col = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_autoptr(GArray) val = g_array_new(FALSE, FALSE, sizeof(float));
  row_ptr[0] = 0;
  for (guint64 i = 0; i < m; i++) {
    for (guint64 j = 0; j < n; j++) {
      float v = dense[i * n + j];
      if (v == 0.0f) continue;
      guint32 jj = (guint32)j;
      g_array_append_val(col, jj);
      g_array_append_val(val, v);
    }
    row_ptr[i + 1] = col->len;
  }
  return tl_csr_operator_new(ctx, grid, m, row_ptr, (const guint32 *)col->data,
                             (const float *)val->data, subsets, NULL, error);
}

guint64 tl_csr_operator_nnz(const TlOperator *op) {
  if (!op || op->klass != &tl_csr_operator_class) return 0;
  return ((CsrOp *)op->priv)->nnz;
}
