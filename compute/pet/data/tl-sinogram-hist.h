/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List mode histogrammed into sinograms (tl-sinogram.h): the window's data view, `convert` of
 * list mode to STIR projection data, and any comparison of measured and expected counts per bin.
 *
 * The sinogram of a Tomolab ring scanner: its rings, detectors = crystals per ring (an even
 * number, crystal id = ring * crystals_per_ring + detector as tl-scanner.h numbers them), span 1
 * (one segment per ring difference, ascending as STIR orders them), no view mashing,
 * n_detectors / 2 views and n_detectors tangential positions: every crystal pair of two
 * different detector indices within the ring difference falls in one bin. (A pair of the same
 * index on two rings, an axial line along one crystal face and never a line of response, has two
 * bins in STIR's layout for half of the indices, t = -N/2 in segments +d and -d, and none for
 * the other half: the lower id is taken as detector 1.) The circle of the geometry fields is the
 * one through the crystal centres of ring 0 (a polygon's flats are not modelled by STIR's
 * cylindrical geometry); the binning itself is exact. */
#pragma once
#include "tl-api.h"
#include "tl-sinogram.h"

G_BEGIN_DECLS

/* The sinogram STIR would write for `scanner` (issue 26): segments in STIR's order (ascending
 * ring differences), span `span` (odd; 1: one segment per ring difference; Siemens' mMR data
 * use 11), ring differences up to max_rd (G_MAXUINT: the scanner's acceptance). A scanner
 * Tomolab knows as a real one (tl_cylinder_of_scanner: the mMR's list mode) gets its own
 * geometry: STIR's name, detector positions with the block gaps, views and tangential
 * positions, depth of interaction and bin size (the mMR: "Siemens mMR", 504 positions, 252
 * views x 344); any other ring scanner (an even number of crystals per ring) its rings as they
 * are, N/2 views of N tangential positions. Sized by its bins, data zero. */
TL_API TlSinogram *tl_sinogram_new_stir(const TlScanner *scanner, guint span, guint max_rd,
                                        GError **error);
/* The bin holding crystal pair (a, b), either order, for a sinogram without view mashing (any
 * span); FALSE when no bin holds it (same crystal, ring difference outside the segments, a
 * tangential position outside the sinogram). */
TL_API gboolean tl_sinogram_bin_of_pair(const TlSinogram *s, guint a, guint b, guint64 *bin);
/* The same with the sinogram's geometry given (tl_sinogram_cylinder), for loops over pairs. */
TL_API gboolean tl_sinogram_bin_of_pair_in(const TlSinogram *s, const TlCylinder *cyl, guint a,
                                           guint b, guint64 *bin);
/* Every event counted in its bin (TOF bins summed); *outside (optional) counts events with no
 * bin. The events' scanner must be the one the sinogram was made for (crystal ids in range). */
TL_API gboolean tl_sinogram_add_events(TlSinogram *s, const TlListmode *lm, guint64 *outside,
                                GError **error);
/* Segment index of ring difference rd (STIR's order), or -1. */
TL_API gint tl_sinogram_segment_of(const TlSinogram *s, gint rd);

G_END_DECLS
