/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Transmission projections into line integrals (Beer-Lambert), the first step of every
 * synchrotron or bench CT scan (docs/ct.md "Preprocessing"):
 *
 *   t = (I - D) / (W - D),   p = -log max(t, floor),
 *
 * I a projection, W and D the per-pixel means of the open-beam (flat, white) and dark images.
 * t is clamped below at `floor` also where W - D <= 0 or t is not a number (a dead or
 * saturated pixel), and the clamped values are counted. The Data Exchange reader
 * (tl-format-dxchange.c) is this code with floor TL_DXCHANGE_MIN_TRANSMISSION, so the CLI, the
 * window and Python normalise alike. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

/* The floor of every reader: a line integral of at most -log(1e-6) = 13.8. */
#define TL_CT_MIN_TRANSMISSION 1e-6

/* Per-pixel mean (in double) of n images of `pixels` values each: g_free. n = 0 gives zeros. */
TL_API double *tl_ct_image_mean(const float *images, guint n, gsize pixels);

/* data: n_views images of `pixels` values; flats: n_flats >= 1 images, darks: n_darks images
 * (NULL or 0: zero). Writes t (minus_log FALSE) or p = -log t (TRUE) to out (may be data),
 * each computed in double and rounded once. floor in (0, 1]. *clamped (may be NULL): how
 * many values were clamped. FALSE + GError on a bad argument. */
TL_API gboolean tl_ct_normalise(const float *data, guint n_views, gsize pixels,
                                const float *flats, guint n_flats, const float *darks,
                                guint n_darks, double floor, gboolean minus_log, float *out,
                                guint64 *clamped, GError **error);

/* p = -log max(t, floor) of n transmission values (NaN counts as below the floor); out may be
 * t. floor in (0, 1]. */
TL_API gboolean tl_ct_minus_log(const float *t, gsize n, double floor, float *out,
                                guint64 *clamped, GError **error);

G_END_DECLS
