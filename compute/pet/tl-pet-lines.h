/* SPDX-License-Identifier: GPL-3.0-or-later */
/* "pet-lines": the PET system matrix over explicit lines (end points in mm), with a measured
 * count per line: the operator of data whose bins are lines rather than crystal pairs, such as
 * arc-corrected STIR projection data (pet/data/tl-sinogram-arc.h; issue 26 item 3). The lines
 * go through the same ray projectors as list mode and crystal-pair bins (tl-projector.h,
 * TL_LORS_END_POINTS records); the sensitivity of a subset is the column sums of its own
 * lines, A_s^T 1 (every line of the data is stored, counted or not). D (tl_operator_set_diag)
 * is applied around the projector calls.
 *
 * Data order: line i belongs to subset group[i] mod S (group NULL: S contiguous equal blocks
 * of the given order); subsets one after the other, the given order kept inside each. */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"

G_BEGIN_DECLS

/* n lines (ends: 6 floats each, finite), counts one per line (finite, >= 0, total > 0), all
 * copied; projector "siddon", "joseph" or "tor" (NULL: siddon), S subsets in 1..n. */
TL_API TlOperator *tl_pet_lines_operator_new(TlContext *ctx, const TlImageGrid *grid,
                                             const char *projector, guint64 n,
                                             const float *ends, const float *counts,
                                             const guint32 *group, guint subsets,
                                             GError **error);

/* The position in the operator's data order of each given line i (n entries, g_free), so
 * that a forward projection can be written back in the caller's order. */
TL_API guint64 *tl_pet_lines_operator_order(const TlOperator *op);

TL_API extern const TlOperatorClass tl_pet_lines_operator_class;

G_END_DECLS
