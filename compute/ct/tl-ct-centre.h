/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Centre of rotation of a parallel-beam scan whose geometry does not know it (Data Exchange
 * and TIFF projections store none): where the rotation axis projects on the detector, as a
 * column index (pixel centres at integers). docs/ct.md "Centre of rotation".
 *
 * First guess: the opposed views. In parallel beam the view at theta + 180 deg is the mirror
 * of the view at theta about the centre c, p(theta + pi, u) = p(theta, 2c - u), so 2c is the
 * shift that best matches one row of the two (least mean squared difference over the
 * overlap, parabolic sub-pixel refinement).
 *
 * Then the search, coarse to fine: FBP of one slice (the device's FDK/FBP of tl-ct-fdk.h) of
 * the row binned by 4, for candidate centres every 0.5 binned px over +-2 binned px around the
 * guess (moved on while the best is at an edge); the row binned by 2 over +-1 full px around
 * that level's best (each binned level's best refined by a parabola through its neighbours);
 * then, at full resolution, the two columns of the 0.5-px grid around that estimate (2 slices),
 * of which the one with the larger S is reported. The centre maximises the slice's
 * sharpness
 *
 *   S = var |grad f|   (the variance of the gradient magnitude, central differences, over the
 *                       pixels of the disc inscribed in the slice),
 *
 * which a wrong centre lowers: each edge is drawn twice, half as steep, along arcs. (On the
 * tooth of ../shared/data it peaks at the centre the opposed views and the negativity of the
 * slice also give; S = sum |grad f|^2 / sum f^2 did not: streak noise dominates it.) */
#pragma once
#include "tl-api.h"
#include "tl-ct-data.h"
#include "tl-context.h"

G_BEGIN_DECLS


typedef struct {
  double centre;      /* the column the rotation axis projects onto */
  double metric;      /* S of the slice reconstructed with it */
  double first_guess; /* from the opposed views; NAN when no pair is within 2 deg of 180 */
  guint evaluations;  /* slices reconstructed */
} TlCtCentre;

/* S of an nx x ny slice (row-major, x fastest). */
TL_API double tl_ct_slice_sharpness(const float *slice, guint nx, guint ny);

/* The column the world origin projects onto in view 0 (the current centre). */
TL_API double tl_ct_geometry_axis_u(const TlCtGeometry *g);
/* Moves the projection of the axis: every view's u -> u + delta_px (row 0 of each matrix
 * += delta_px x row 2), the detector offset of tl_ct_orbit's offset_u_mm / pixel. */
TL_API gboolean tl_ct_geometry_shift_u(TlCtGeometry *g, double delta_px, GError **error);

/* The opposed-views guess from detector row `row`; FALSE + GError when no two views are
 * 180 +- 2 deg apart or the beam is not parallel. */
TL_API gboolean tl_ct_centre_opposed(const TlCtData *d, guint row, double *centre, GError **error);

/* FBP (ramp filter Ram-Lak) of detector row `row` with the axis at column `centre`: a slice
 * of det_u x det_u pixels of the detector's pixel size (g_free). Parallel beam about z only. */
TL_API float *tl_ct_centre_slice(TlContext *ctx, const TlCtData *d, guint row, double centre,
                          GError **error);

/* The search above on row `row`. */
TL_API gboolean tl_ct_centre_search(TlContext *ctx, const TlCtData *d, guint row, TlCtCentre *out,
                             GError **error);

G_END_DECLS
