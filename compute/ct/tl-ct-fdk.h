/* SPDX-License-Identifier: GPL-3.0-or-later */
/* FDK (Feldkamp, Davis & Kress 1984; seed 003 ref. 6) for the circular cone beam, and
 * filtered back projection for the parallel beam, on the device:
 *
 *   f(x) = pi / N  sum_n  (D_n / w_n(x))^2  q_n(u_n(x), v_n(x)),
 *   q_n = (1 / tau_n) g * (cos_n p_n)   along each detector row,
 *
 * cos_n = cosine between a pixel's ray and the principal ray (Feldkamp's
 * D / sqrt(D^2 + a^2 + b^2)), tau_n = pixel spacing at the isocentre (D_n / f_u), D_n the
 * source-isocentre distance, g the dimensionless ramp kernel with its window, N the number
 * of views. D_n^2 / (tau_n N) folds into the pre-weighting, and the back projection is the
 * voxel-driven one of seed 003 eq. 1 (sum of p^ / w^2). Parallel beam: w = 1, D = 1,
 * tau = pixel spacing, no cosine.
 *
 * pi / N is exact for a full 360 deg cone-beam orbit and for parallel beams over 180 or 360
 * deg; shorter cone-beam arcs would need Parker weights, which are not implemented.
 *
 * The ramp filter is an exact spatial convolution (docs/ct.md): the band-limited kernel's
 * taps g(l), |l| < det_u, in closed form, so a row convolved with them is the linear
 * convolution itself (no FFT, no padding, no wrap-around):
 *   Ram-Lak       g(0) = 1/4, g(odd l) = -1 / (pi l)^2, g(even l) = 0
 *   Shepp-Logan   g(l) = 2 / (pi^2 (1 - 4 l^2))       (ramp x sinc window)
 *   Hann          g(l) = g_RL(l)/2 + (g_RL(l-1) + g_RL(l+1))/4  (ramp x (1 + cos)/2)
 * Views are processed in batches (weight, filter, accumulate the back projection), so the
 * scratch memory is two batches of projections, not two copies of the data. */
#pragma once
#include "tl-api.h"
#include "tl-ct-projector.h"

G_BEGIN_DECLS

typedef enum {
  TL_CT_FILTER_RAM_LAK,
  TL_CT_FILTER_SHEPP_LOGAN,
  TL_CT_FILTER_HANN,
} TlCtFilter;

TL_API const char *tl_ct_filter_name(TlCtFilter f);
/* "ram-lak", "shepp-logan", "hann" */
TL_API gboolean tl_ct_filter_from_name(const char *name, TlCtFilter *out, GError **error);
/* g(l) for l = -(n-1) .. n-1 at index l + n - 1 (2n - 1 values, pixel spacing 1). */
TL_API double *tl_ct_ramp_kernel(TlCtFilter f, guint n);

/* The FDK scale of each view: pi D_n f_u,n / N (cone), pi f_u,n / N (parallel). */
TL_API double tl_ct_fdk_view_scale(const TlCtGeometry *g, guint view);

typedef struct _TlCtFdk TlCtFdk;

/* batch_views 0 = automatic (scratch <= 64 MiB). */
TL_API TlCtFdk *tl_ct_fdk_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error);
TL_API void tl_ct_fdk_free(TlCtFdk *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtFdk, tl_ct_fdk_free)

/* image = FDK(proj); proj holds every view (line integrals). Records on s (labels "fdk
 * weight", "fdk filter", "ct back voxel"); the caller finishes the stream. */
TL_API gboolean tl_ct_fdk_run(TlCtFdk *f, TlStream *s, const TlArray *proj, TlArray *image,
                       GError **error);

G_END_DECLS
