/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtSlabs: a CT volume held as z-slabs of whole planes, one device array each, so a volume
 * larger than the device's largest allocation (maxMemoryAllocationSize / maxBufferSize:
 * 1024^3 floats are 4 GiB) runs where the device's memory holds it all (docs/large-arrays.md).
 * Each slab holds as many planes as fit the slab limit: the device's largest allocation, or
 * $TOMOLAB_CT_SLAB_BYTES where smaller (to test or time the split on small volumes). A volume
 * that fits one array is one slab.
 *
 * The projections loop over the slabs: forward projection sums each slab's (the projector
 * restricted to its planes), back projection and FDK write each slab by a gather, bit for bit
 * the unsplit gather's voxels (tl_ct_projector_back_slab). */
#pragma once
#include "tl-api.h"
#include "tl-ct-fdk.h"
#include "tl-ct-projector.h"

G_BEGIN_DECLS

typedef struct _TlCtSlabs TlCtSlabs;

/* The most bytes one slab may take on this device: its largest allocation, or
 * $TOMOLAB_CT_SLAB_BYTES if set and smaller (an unreadable value fails, naming it). */
TL_API gboolean tl_ct_slab_limit(TlContext *ctx, guint64 *bytes, GError **error);
/* Zeroed slabs of the grid. Fails (naming the grid, its bytes, the plane's and the limit)
 * where a plane exceeds the limit, the grid exceeds TL_CT_MAX_VOXELS, or an allocation fails. */
TL_API TlCtSlabs *tl_ct_slabs_new(TlContext *ctx, const TlImageGrid *grid, GError **error);
TL_API void tl_ct_slabs_free(TlCtSlabs *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtSlabs, tl_ct_slabs_free)

TL_API const TlImageGrid *tl_ct_slabs_grid(const TlCtSlabs *v);
TL_API guint tl_ct_slabs_count(const TlCtSlabs *v);
/* Slab i: its array (nx ny planes floats), its first plane and its number of planes. */
TL_API TlArray *tl_ct_slabs_array(const TlCtSlabs *v, guint i, guint *first_plane, guint *planes);
/* The whole volume to or from host memory (nx ny nz floats, x fastest). */
TL_API gboolean tl_ct_slabs_upload(TlCtSlabs *v, const float *data, GError **error);
TL_API gboolean tl_ct_slabs_download(const TlCtSlabs *v, float *data, GError **error);

/* proj (+)= A x over the selected views, slab by slab (p's grid must be x's). */
TL_API gboolean tl_ct_slabs_forward(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                    const TlCtSlabs *x, TlArray *proj, gboolean accumulate,
                                    GError **error);
/* x (+)= A^T proj (voxel: FDK's sum), each slab by the gather. */
TL_API gboolean tl_ct_slabs_back(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                 const TlArray *proj, TlCtSlabs *x, gboolean accumulate,
                                 GError **error);
/* FDK / FBP (tl_ct_fdk_run) into slabs: the same filtered batches, each back-projected into
 * every slab. */
TL_API gboolean tl_ct_slabs_fdk(TlCtFdk *f, TlStream *s, const TlArray *proj, TlCtSlabs *x,
                                GError **error);

G_END_DECLS
