/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Arc-corrected STIR projection data as lines (issue 26 item 3). An arc-corrected bin is not a
 * crystal pair: its tangential positions are equally spaced in mm, so each bin is the line
 * that STIR's ProjDataInfoCylindricalArcCorr describes (conventions read from STIR's
 * documentation and source, reimplemented; Thielemans et al. 2012):
 *   view angle   phi = view * pi / n_views + view offset,
 *   tangential   s = t * bin_size, t = -(n_tangential / 2) ... n_tangential - 1 - n_tangential / 2,
 *   direction    (sin phi, -cos phi) (the non-arc-corrected detector 1 of view v, t = 0, sits at
 *                R (sin phi, -cos phi): tl-sinogram.h), offset s (cos phi, sin phi) from the axis,
 *   axial        the bin's axial position gives the mean ring sum m (tl-sinogram.h) and the
 *                segment its mean ring difference d = (lo + hi) / 2 (STIR's "average ring
 *                difference"): the end towards detector 1 at ring (m - d) / 2, the other at
 *                (m + d) / 2, rings at z = (r - (n_rings - 1) / 2) * ring spacing;
 *   end points   where the line meets the detector cylinder of radius R = inner radius + depth
 *                of interaction.
 * The lines are projected by the ray projectors as any end-point line (pet/tl-pet-lines.h). */
#pragma once
#include "tl-api.h"
#include "tl-sinogram.h"

G_BEGIN_DECLS

#define TL_SINOGRAM_ARC_MAX_RAYS 64u

/* 6 floats per bin and ray (x0 y0 z0 x1 y1 z1, mm; x0 the end towards detector 1) in the
 * sinogram's data order, g_free; view_of (optional, g_free) the view of each bin, for view
 * subsets. rays_t x rays_z rays per bin (issue 26 item 4; 1 x 1: the bin's own line) at the
 * nodes of the trapezoid rule over the bin's width (tangentially) and a ring's width (axially,
 * both ends shifted alike): node i of m at (i / (m - 1) - 1/2) of the width, weight 1 / (m - 1),
 * half that at the two edges; `weights` (optional, rays_t rays_z floats) receives their products.
 * With voxels of half a ring axially, 3 axial nodes spread a line over its plane and the two
 * beside it as 1/2, 1/4, 1/4 - the ring's box exactly - where one thin line per bin puts
 * direct and cross planes on different footings. Ray-major: ray r = a rays_t + i of bin j at
 * 6 (n_bins r + j) (tl_pet_lines_operator_new). GError for data not arc-corrected, a
 * tangential range reaching the detector radius or more than TL_SINOGRAM_ARC_MAX_RAYS rays. */
TL_API float *tl_sinogram_arc_lines(const TlSinogram *s, guint rays_t, guint rays_z,
                                    float *weights, guint32 **view_of, GError **error);

/* The same rays for data that are not arc-corrected, one crystal pair per bin (span 1: every
 * segment one ring difference; no view mashing): bin (v, t) is the line between its two
 * detectors (tl-sinogram.h's d1, d2 on the cylinder of inner radius + depth of interaction);
 * ray i is that line moved in parallel by (i / (rays_t - 1) - 1/2) of the bin's tangential
 * sampling there, sqrt(R^2 - s^2) pi / N (STIR's sampling in s of non-arc-corrected data), and
 * axially as above. 1 x 1: the crystal pair's own line, Tomolab's thin-line model (issue 26
 * item 4: the sensitivity artefacts measured against it in tests/test-stir-arc.c). Layout,
 * weights and errors as tl_sinogram_arc_lines; GError for arc-corrected data, span > 1 or
 * view mashing (a bin of several pairs is no one line). */
TL_API float *tl_sinogram_pair_lines(const TlSinogram *s, guint rays_t, guint rays_z,
                                     float *weights, GError **error);

/* Per bin of tl_sinogram_pair_lines (g_free): 1 where both detectors hold a crystal, 0 where
 * either is a block gap (tl-sinogram.h: no pair there, so no line; the mMR's 9th positions).
 * GError as tl_sinogram_pair_lines. */
TL_API guint8 *tl_sinogram_pair_crystals(const TlSinogram *s, GError **error);

/* Whether tl_sinogram_pair_lines takes s (not arc-corrected, span 1, no view mashing, the
 * geometry matching the bins held), without making the lines; GError naming what it is not. */
TL_API gboolean tl_sinogram_pairs_are_lines(const TlSinogram *s, GError **error);

G_END_DECLS
