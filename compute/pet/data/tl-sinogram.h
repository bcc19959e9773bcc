/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSinogram: PET projection data binned as STIR stores it (docs/formats.md "STIR projection
 * data"): segments (ranges of ring differences), each with its axial positions; views (angles
 * over [0, pi)); tangential positions, for a cylindrical scanner of n_rings rings of
 * n_detectors detectors. Bins are held segment by segment in the file's segment order, within
 * a segment [view][axial position][tangential position] (tangential fastest), whatever order
 * the file had.
 *
 * Geometry (STIR's ProjDataInfoCylindricalNoArcCorr, reimplemented from its description):
 *   detectors: detector d of ring r sits at angle psi = 2 pi d / n_detectors + view offset on a
 *     circle of radius R = inner ring diameter / 2 + average depth of interaction, at
 *     (x, y) = (R sin psi, -R cos psi) (STIR's "x = R sin, y = -R cos") and
 *     z = (r - (n_rings - 1) / 2) * ring spacing (Tomolab centres the rings on z = 0);
 *   view v, tangential position t (uncompressed, mashing 1):
 *     d1 = (v + floor(t / 2)) mod N,  d2 = (v - floor((t + 1) / 2) + N / 2) mod N;
 *   view mashing m = (N / 2) / views: view v holds uncompressed views v m ... v m + m - 1;
 *   segment with ring differences [lo, hi] (r2 - r1, r1 the ring of d1): a ring pair belongs to
 *     axial position (r1 + r2 - min over the segment of r1 + r2) / k, k = 2 when lo == hi (one
 *     position per ring) and 1 when lo < hi (span > 1: positions half a ring apart);
 *   tangential positions t = -(n_tangential / 2) ... n_tangential - 1 - n_tangential / 2.
 * A bin of span > 1 or view mashing covers several crystal pairs: tl_sinogram_to_bins splits its
 * value evenly among them (an approximation: the pairs' own sensitivities are not known).
 * Block gaps (block_positions): a detector position that is a gap holds no crystal, and a bin
 * with a gap at either end no pair (counts there, none in measured data, are not reconstructed);
 * crystals are numbered as tl-cylinder.h does. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"
#include "image/tl-format.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/scanner/tl-scanner.h"
#include "pet/scanner/tl-cylinder.h"
#include "recon/tl-operator.h"

G_BEGIN_DECLS

/* Bounds on what a header may claim before anything is allocated. */
#define TL_SINOGRAM_MAX_BINS (G_GUINT64_CONSTANT(1) << 30)
#define TL_SINOGRAM_MAX_SEGMENTS 4096u
#define TL_SINOGRAM_MAX_RINGS 1024u
#define TL_SINOGRAM_MAX_DETECTORS 16384u

typedef struct {
  char *name;                    /* originating system / scanner type */
  guint n_segments;
  guint *n_axial;                /* per segment, file order */
  gint *min_ring_difference;     /* per segment */
  gint *max_ring_difference;
  guint n_views, n_tangential;
  gboolean arc_corrected;        /* "applied corrections" names arc correction */
  guint n_rings, n_detectors;    /* per ring (even) */
  double inner_radius_mm, doi_mm, ring_spacing_mm;
  double bin_size_mm;            /* default bin size (arc-corrected spacing of t) */
  double view_offset_deg;
  guint64 n_bins;
  float *data;                   /* n_bins, layout above */
  /* Detector positions per transaxial block whose first is a gap without crystal (STIR's
   * virtual crystals: the mMR's 9), 0 = every position a crystal. Set by the loader for the
   * scanners Tomolab knows (pet/scanner/tl-cylinder.h). */
  guint block_positions;
  /* STIR's "%TOF mashing factor" when the header gives one (TOF bins themselves are refused
   * at load: a non-TOF file may still name the factor, 1), 0 when absent; informational. */
  guint tof_mash;
} TlSinogram;

TL_API void tl_sinogram_free(TlSinogram *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlSinogram, tl_sinogram_free)
/* The same geometry, data zero (values copied when copy_data). */
TL_API TlSinogram *tl_sinogram_copy(const TlSinogram *s, gboolean copy_data);

/* Geometry checks (counts bounded, ring differences inside the scanner, axial positions per
 * segment equal to what the ring pairs give, tangential positions within the detectors);
 * the GError names `source`, the field and the value. Every loader calls it. */
TL_API gboolean tl_sinogram_validate(const TlSinogram *s, const char *source, GError **error);
/* First bin of segment `seg` in data. */
TL_API guint64 tl_sinogram_segment_offset(const TlSinogram *s, guint seg);

/* The cylindrical scanner as an explicit crystal table (tl_cylinder_scanner_new: crystals at the
 * inner radius + depth of interaction, gaps left out), max ring difference from the segments.
 * A geometry equal to a scanner Tomolab knows (the mMR) gives that scanner's own table, the one
 * its list mode gives. */
TL_API TlScanner *tl_sinogram_scanner(const TlSinogram *s, GError **error);
/* The sinogram's scanner geometry as a TlCylinder (the known scanner's when it is one). */
TL_API void tl_sinogram_cylinder(const TlSinogram *s, TlCylinder *c);
/* Crystal pairs (a < b) with their counts (a bin's value split evenly over its pairs), for
 * tl_pet_operator_new_binned with tl_sinogram_scanner; pairs with value 0 kept when
 * keep_zero. Arc-corrected data are refused (their bins are not crystal pairs). */
TL_API GArray *tl_sinogram_to_bins(const TlSinogram *s, gboolean keep_zero, GError **error);
/* data[bin] = sum over the bin's pairs of value(pair), with `pairs` from tl_sinogram_to_bins
 * (keep_zero) and `values` one per pair in the same order: a forward projection written back. */
TL_API gboolean tl_sinogram_set_from_pairs(TlSinogram *s, const GArray *pairs, const float *values,
                                    GError **error);

/* STIR Interfile projection data (.hs + .s): float32 (or any Interfile number format) read;
 * float32 little endian written with STIR's keys, SegmentViewAxialTangPos order. */
TL_API TlSinogram *tl_sinogram_load(const char *path, GError **error);
TL_API gboolean tl_sinogram_save(const TlSinogram *s, const char *path, GError **error);

TL_API extern const TlFormatClass tl_format_stir_sino;

G_END_DECLS

G_BEGIN_DECLS
/* "key: value" lines for `tomolab-cli info` (tl_data_describe). */
TL_API void tl_sinogram_describe(const TlSinogram *s, GString *out);
G_END_DECLS
