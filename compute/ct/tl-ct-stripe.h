/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Stripe removal in sinograms, against ring artefacts (docs/ct.md "Preprocessing"): the
 * sorting-based method of Vo, Atwood & Drakopoulos (2018). A detector pixel whose gain the
 * flat field did not correct offsets its whole column of the sinogram (views x columns of one
 * detector row): a stripe, which a reconstruction turns into a ring. Sorting every column
 * along the views turns the object's part of each column into a smooth monotonic profile
 * that neighbouring columns share, while a stripe stays a column apart; a median across
 * columns of the sorted sinogram removes it, and every value goes back to its view:
 *
 *   for each column c: s(., c) = p(., c) sorted, k(., c) = the views in that order
 *   m(i, c) = median of s(i, c - h .. c + h)      (window `size` = 2h + 1, edges clamped)
 *   p'(k(i, c), c) = m(i, c)
 *
 * Each value moves only across columns of equal rank, so the views are not blurred; the
 * window must be wider than the widest stripe. Where the object's sorted profile changes
 * across columns faster than a stripe's height per window (the sharp edge of a large object)
 * the median follows the object and part of the stripe stays (measured: tooth.h5 with 40
 * added stripes, residual stripe power 15-27x lower; a synthetic Shepp-Logan sinogram,
 * 33-105x; a disc centred on the axis, 4.6-5.5x, half the residual in its edge columns:
 * those are equal in every view, so a stripe there is the sinogram of a ring, which no
 * sinogram-only method tells apart). */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

#define TL_CT_STRIPE_SIZE 21 /* the default median window, columns */

/* In place on projections [n_views][n_rows][n_cols] (each detector row's sinogram on its
 * own). size: odd, 3 .. 2 n_cols + 1. FALSE + GError on a bad size or a value that is not
 * finite (nothing is changed then). */
TL_API gboolean tl_ct_remove_stripes(float *proj, guint n_views, guint n_rows, guint n_cols,
                                     guint size, GError **error);

/* Dead (unresponsive) detector pixels, Vo, Atwood & Drakopoulos (2018)'s unresponsive
 * stripes: a pixel that no longer follows the beam gives a column of its sinogram that hardly
 * changes over the views, which the sorting above cannot repair (its sorted profile is flat, so
 * the neighbours' profile goes back in view order: a ramp). Such a column is found by its
 * angular variation v(c) = mean over views of |p(v + 1, c) - p(v, c)| against the median m(c)
 * of v over `size` columns around it (edges clamped): dead when v(c) < ratio m(c) and m(c) > 0
 * (a flat stretch of noiseless background has m = 0 and stays); it is replaced, view by view,
 * by the straight line between the nearest columns that are not dead (the one there is, at an
 * edge). Measured on 28 November 2026 with 3 dead columns of random constant value per
 * row: tooth.h5's error in those columns 78-497x below the sorting's alone, no column of the
 * clean tooth, of a synthetic Shepp-Logan or of disc sinograms taken; a dead column inside the edge of a disc
 * centred on the axis (equal in every view itself) is not found. Run it before
 * tl_ct_remove_stripes. */
#define TL_CT_DEAD_SIZE 51   /* columns */
#define TL_CT_DEAD_RATIO 0.1 /* of the neighbours' median variation */

/* In place on projections [n_views][n_rows][n_cols], each detector row on its own. size: odd,
 * 3 .. 2 n_cols + 1; ratio in (0, 1). *n_found (optional): the columns replaced, over all rows.
 * FALSE + GError on a bad argument or a value that is not finite (nothing changed then). */
TL_API gboolean tl_ct_remove_dead_stripes(float *proj, guint n_views, guint n_rows, guint n_cols,
                                          guint size, double ratio, guint64 *n_found,
                                          GError **error);

G_END_DECLS
