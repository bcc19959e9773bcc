/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Class "pet-srm": binned dual-head data with the precomputed, symmetry-stored system
 * response matrix (tl-srm.h) as the TlOperator (recon/tl-operator.h), so binned OSEM and
 * MLEM run on it like on "pet-binned".
 *
 * Data: EVERY crystal pair of the two heads (counts from the bins given, 0 elsewhere), so the
 * default sensitivity (A_s^T 1 over the stored data) is the column sum over every measurable
 * LOR of the subset. Subset of pair (a, b): tl_pair_index(a, b) mod S as "pet-binned";
 * within a subset the pairs are ordered by (class, interchange flag, pair index) and cut into
 * groups of up to 8 pairs of one class, one workgroup each (Chou et al. 2012 Algorithm 3). Forward:
 * a gather within the group's workgroup (shared-memory reduction); back projection: float
 * atomics (CAS loop on devices without them). The matrix is shared (kept by reference). */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"
#include "pet/scanner/tl-listmode.h"
#include "tl-srm.h"

G_BEGIN_DECLS

TL_API extern const TlOperatorClass tl_pet_srm_operator_class;

/* m must outlive the operator. bins: allowed pairs of s with finite counts >= 0. */
TL_API TlOperator *tl_srm_operator_new(TlContext *ctx, const TlSrm *m, const TlScanner *s,
                                const TlBin *bins, guint64 n_bins, guint subsets,
                                GError **error);
/* Pair (a < b) of datum i (data order), for comparisons with other operators. */
TL_API void tl_srm_operator_pair(const TlOperator *op, guint64 i, guint *a, guint *b);

G_END_DECLS
