/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT acquisition simulation: line integrals of an object (an attenuation image through a
 * projector on the device, or an ellipsoid phantom exactly), then optionally
 *   transmission noise, Beer-Lambert (Petit 2020 eq. 2.1): I = Poisson(I0 exp(-p)),
 *     and the log transform back to line integrals p' = -log(max(I, 1/2) / I0)
 *     (a pixel that counted nothing is taken as half a photon, so p' stays finite);
 *   emission noise: counts Poisson(s p) for MLEM, stored as counts / s.
 * Seeded (tl-rng.h, one stream per view): the same seed gives the same data. */
#pragma once
#include "tl-api.h"
#include "tl-ct-data.h"
#include "tl-ct-phantom.h"
#include "tl-ct-projector.h"

G_BEGIN_DECLS

typedef struct {
  TlCtMethod projector;  /* for images (joseph, siddon or raycast) */
  double i0;             /* incident photons per pixel; 0 = no transmission noise */
  gboolean keep_counts;  /* with i0: store the counts I (values = counts), not -log(I / I0) */
  double emission_scale; /* > 0: emission data, Poisson counts of scale x line integral */
  guint64 seed;
} TlCtSimOptions;

TL_API void tl_ct_sim_options_init(TlCtSimOptions *o); /* joseph, noise-free, seed 1 */

/* Projects `image` (mm^-1) with the projector on the device (line integrals), then noise. */
TL_API TlCtData *tl_ct_simulate_image(TlContext *ctx, const TlCtGeometry *geometry, const TlImage *image,
                               const TlCtSimOptions *opt, GError **error);
/* The phantom's exact line integrals on the host (values x scale), then noise. `grid`
 * places the phantom (tl-ct-phantom.h). */
TL_API TlCtData *tl_ct_simulate_phantom(TlContext *ctx, const TlCtGeometry *geometry,
                                 const TlCtPhantom *phantom, const TlImageGrid *grid,
                                 double scale, const TlCtSimOptions *opt, GError **error);

/* The data as line integrals on the device: uploaded, and for values = counts turned into
 * -log(max(I, 1/2) / I0) by one fused expression. */
TL_API TlArray *tl_ct_data_upload(TlContext *ctx, const TlCtData *d, GError **error);

G_END_DECLS
