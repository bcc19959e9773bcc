/* SPDX-License-Identifier: GPL-3.0-or-later */
/* An explicit sparse matrix as a TlOperator (class "csr", tl-operator.h): any m x n system
 * matrix given entry by entry, n = the grid's voxel count (x, then y, then z fastest to
 * slowest, as TlImage stores voxels). For small problems, tests of the algorithms against
 * plain C references, and matrices exported from other tools.
 *
 * Storage on the device: the matrix in compressed rows (CSR) for the forward, and each
 * subset's row block transposed on the host at creation (compressed columns, CSC) for the
 * adjoint; both run shaders/recon/csr_spmv.comp, one invocation per output element, no
 * atomics, so both are deterministic. Memory: about 2 x nnz x 8 bytes + (m + S (n + 1)) x 4.
 *
 * Subsets are contiguous row blocks, data order = row order: subset s = rows
 * [first(s), first(s + 1)). Either the caller gives the S block lengths (each >= 1, sum m),
 * or lengths = NULL gives S equal blocks: subset s = rows [floor(s m / S), floor((s+1) m / S)).
 * D (tl_operator_set_diag) is applied by the operator base. */
#pragma once
#include "tl-api.h"
#include "tl-operator.h"

G_BEGIN_DECLS

TL_API extern const TlOperatorClass tl_csr_operator_class;

/* CSR of an m x n matrix: row i's entries are k in [row_ptr[i], row_ptr[i + 1]), at columns
 * col[k] with values val[k] (any column order; repeated columns add up). Checked, with a
 * GError naming the row or entry: row_ptr[0] = 0, row_ptr non-decreasing, col[k] < n,
 * val[k] finite; 1 <= subsets <= m; m, n < 2^32 - 1 and nnz = row_ptr[m] < 2^32 (32-bit
 * indices on the device). The arrays are copied. */
TL_API TlOperator *tl_csr_operator_new(TlContext *ctx, const TlImageGrid *grid, guint64 m,
                                const guint64 *row_ptr, const guint32 *col, const float *val,
                                guint subsets, const guint64 *lengths, GError **error);
/* From a dense row-major m x n matrix (entries == 0 are not stored); S equal row blocks. */
TL_API TlOperator *tl_csr_operator_new_dense(TlContext *ctx, const TlImageGrid *grid, guint64 m,
                                      const float *dense, guint subsets, GError **error);
/* Stored entries (0 when op is not a "csr" operator). */
TL_API guint64 tl_csr_operator_nnz(const TlOperator *op);

G_END_DECLS
