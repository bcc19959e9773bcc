/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Sinograms of an image through the PET operator (tl-pet-operator.h): forward projections and
 * the expected counts of a reconstruction's model per sinogram plane, for the window's data
 * view and `convert`. The sinogram itself is data/tl-sinogram.h, the histogram
 * data/tl-sinogram-hist.h. */
#pragma once
#include "tl-api.h"
#include "pet/data/tl-sinogram-hist.h"
#include "pet/correct/tl-norm.h"
#include "pet/correct/tl-sss.h"

G_BEGIN_DECLS

/* The forward projection of `x` (on `grid`) by the binned operator of this geometry (Siddon,
 * one subset) summed per bin into a copy of s. */
TL_API TlSinogram *tl_sinogram_forward(TlContext *ctx, const TlSinogram *s, const TlImage *x,
                                GError **error);

/* The expected counts of one sinogram plane (segment `seg`, axial position `ax`):
 * out[view * n_tangential + t] = sum over the bin's detectable crystal pairs of (D A x)_pair
 * with the binned operator of `scanner` (the sinogram's own; `projector` as in
 * tl-pet-operator.h, D = exp(-A mu) when `mu` is non-NULL), x = `image`. Bins without a
 * detectable pair get 0. Non-TOF: TOF bins summed, as the histogram does. */
TL_API gboolean tl_sinogram_expected_plane(TlContext *ctx, const TlSinogram *s, guint seg, guint ax,
                                    const TlScanner *scanner, const TlImage *image,
                                    const char *projector, const TlImage *mu, float *out,
                                    GError **error);
/* The model of the expected counts ybar = D A x + a of a reconstruction (tl-recon.h), for
 * tl_sinogram_model_plane: the projector ("siddon", "joseph", "tor"), D = n_ab exp(-(A mu)_ab)
 * (mu, norm: each NULL = 1), and the additive term a = r_ab + e_ab S_ab (randoms, scatter: each
 * NULL = 0; the scatter estimate's scale applied, TOF bins summed; e_ab = eps_a eps_b, the
 * normalisation's crystal efficiencies, multiplies the scatter as in the reconstruction). */
typedef struct {
  const char *projector;
  const TlImage *mu;
  const TlNorm *norm;
  const TlRandoms *randoms;
  const TlScatterEstimate *scatter;
} TlSinogramModel;

/* The plane of tl_sinogram_expected_plane under the whole model: expected[view * n_tangential
 * + t] = sum over the bin's detectable pairs of (D A x)_ab + r_ab + e_ab S_ab; randoms and
 * scatter (each may be NULL) get the bin's r_ab and e_ab S_ab alone. GError as
 * tl_sinogram_expected_plane, and for a normalisation, randoms or scatter estimate of another
 * scanner (naming both). */
TL_API gboolean tl_sinogram_model_plane(TlContext *ctx, const TlSinogram *s, guint seg, guint ax,
                                 const TlScanner *scanner, const TlImage *image,
                                 const TlSinogramModel *model, float *expected, float *randoms,
                                 float *scatter, GError **error);

G_END_DECLS
