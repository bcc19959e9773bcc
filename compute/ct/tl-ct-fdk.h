/* SPDX-License-Identifier: GPL-3.0-or-later */
/* FDK (Feldkamp, Davis & Kress 1984; Siegl et al. 2011 ref. 6) for the circular cone beam, and
 * filtered back projection for the parallel beam, on the device:
 *
 *   f(x) = pi / N  sum_n  (D_n / w_n(x))^2  q_n(u_n(x), v_n(x)),
 *   q_n = (1 / tau_n) g * (cos_n p_n)   along each detector row,
 *
 * cos_n = cosine between a pixel's ray and the principal ray (Feldkamp's
 * D / sqrt(D^2 + a^2 + b^2)), tau_n = pixel spacing at the isocentre (D_n / f_u), D_n the
 * source-isocentre distance, g the dimensionless ramp kernel with its window, N the number
 * of views. D_n^2 / (tau_n N) folds into the pre-weighting, and the back projection is the
 * voxel-driven one of Siegl et al. 2011 eq. 1 (sum of p^ / w^2). Parallel beam: w = 1, D = 1,
 * tau = pixel spacing, no cosine.
 *
 * pi / N is exact for a full 360 deg cone-beam orbit and for parallel beams over 180 or 360
 * deg; shorter cone-beam arcs would need Parker weights, which are not implemented.
 *
 * The ramp filter (tl-ct-ramp.h) runs by FFT (VkFFT) where the build has it, zero-padded so
 * that it equals the exact spatial convolution with the band-limited taps; else that
 * spatial convolution itself.
 * Views are processed in batches (weight, filter, accumulate the back projection), so the
 * scratch memory is two batches of projections (plus the FFT's padded rows, about two more),
 * not two copies of the data. */
#pragma once
#include "tl-api.h"
#include "tl-ct-projector.h"
#include "tl-ct-ramp.h"

G_BEGIN_DECLS

/* The FDK scale of each view: pi D_n f_u,n / N (cone), pi f_u,n / N (parallel). */
TL_API double tl_ct_fdk_view_scale(const TlCtGeometry *g, guint view);

typedef struct _TlCtFdk TlCtFdk;

/* batch_views 0 = automatic (scratch <= 64 MiB). The ramp by FFT where built with VkFFT. */
TL_API TlCtFdk *tl_ct_fdk_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error);
/* The same with the ramp filter's method chosen (TL_CT_RAMP_SPATIAL: the exact convolution,
 * the reference the FFT path is tested against). */
TL_API TlCtFdk *tl_ct_fdk_new_full(TlContext *ctx, const TlCtGeometry *geometry,
                            const TlImageGrid *grid, TlCtFilter filter, TlCtRampMethod ramp,
                            guint batch_views, GError **error);
/* The same for a volume of any size the projector takes (tl_ct_projector_new), run in z-slabs
 * (tl_ct_slabs_fdk); the constructors above refuse a volume beyond one array (naming the grid,
 * its bytes and the limits: tl_ct_volume_check_one_array), which tl_ct_fdk_run needs. Cone or
 * parallel beam (FBP). */
TL_API TlCtFdk *tl_ct_fdk_new_for_slabs(TlContext *ctx, const TlCtGeometry *geometry,
                                        const TlImageGrid *grid, TlCtFilter filter,
                                        TlCtRampMethod ramp, guint batch_views, GError **error);
/* FBP for parallel beams, the algorithm tomography users know by that name: the same object
 * (w = 1, D = 1, no cosine, weights pi / N), refused for cone-beam geometries (FDK there). */
TL_API TlCtFdk *tl_ct_fbp_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error);
TL_API void tl_ct_fdk_free(TlCtFdk *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtFdk, tl_ct_fdk_free)
/* Only the disc inscribed in each slice (tl_ct_projector_set_disc); default FALSE. */
TL_API void tl_ct_fdk_set_disc(TlCtFdk *f, gboolean disc);

/* image = FDK(proj); proj holds every view (line integrals). Records on s (labels "fdk
 * weight", "fdk filter", "fdk fft", "ct back voxel"); the caller finishes the stream. */
TL_API gboolean tl_ct_fdk_run(TlCtFdk *f, TlStream *s, const TlArray *proj, TlArray *image,
                       GError **error);

/* The same with the back projection of each filtered batch done by back (views v of filtered,
 * accumulate from the second batch on): FDK into a volume held otherwise (tl-ct-slabs.h). */
typedef gboolean (*TlCtFdkBackFunc)(TlCtProjector *bp, TlStream *s, const TlCtViews *v,
                                    const TlArray *filtered, gboolean accumulate, gpointer data,
                                    GError **error);
TL_API gboolean tl_ct_fdk_run_with(TlCtFdk *f, TlStream *s, const TlArray *proj,
                                   TlCtFdkBackFunc back, gpointer data, GError **error);

G_END_DECLS
