/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CT system matrix as a TlOperator (class "ct", recon/tl-operator.h), so the algorithms
 * of the reconstruction core run on CT data unchanged.
 *
 * A = the TlCtProjector's matched pair (joseph, siddon or raycast: forward and its exact
 * adjoint). Subsets are interleaved views: subset s of S holds views s, s + S, s + 2S ...
 * (tl_ct_views_subset), so every subset sees the whole angular range. Data order: subset
 * after subset, each subset's views contiguous in that order, each view det_v x det_u pixels
 * with u fastest. Subset s has ceil((N - s) / S) views of det_u * det_v data.
 *
 * Projection arrays in geometry order (every view, view k at k * det_u * det_v, as
 * tl_ct_projector_forward over tl_ct_views_all writes them and as CT data files hold them)
 * go to and from the data order with tl_ct_operator_gather / tl_ct_operator_scatter. */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"
#include "tl-ct-projector.h"

G_BEGIN_DECLS

TL_API extern const TlOperatorClass tl_ct_operator_class;

/* method: joseph, siddon or raycast (voxel has no forward: GError). 1 <= subsets <= the
 * number of views. Fails as tl_ct_projector_new does (grid, cone volume behind a source). */
TL_API TlOperator *tl_ct_operator_new(TlContext *ctx, const TlCtGeometry *geometry,
                               const TlImageGrid *grid, TlCtMethod method, guint subsets,
                               GError **error);
/* The projector inside (owned by the operator); NULL when op is not a "ct" operator. */
TL_API TlCtProjector *tl_ct_operator_projector(TlOperator *op);
/* The views of subset s (first s, stride S). */
TL_API TlCtViews tl_ct_operator_views(const TlOperator *op, guint subset);

/* data (tl_operator_n_data floats, data order) <- proj_view_major (every view, geometry
 * order). Device copies recorded on s, one per view. */
TL_API gboolean tl_ct_operator_gather(TlOperator *op, TlStream *s, const TlArray *proj_view_major,
                               TlArray *data, GError **error);
/* proj_view_major <- data: the inverse permutation of gather. */
TL_API gboolean tl_ct_operator_scatter(TlOperator *op, TlStream *s, const TlArray *data,
                                TlArray *proj_view_major, GError **error);

G_END_DECLS
