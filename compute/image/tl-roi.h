/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Regions of interest on an image: spheres and circles (one voxel thick, in the plane
 * normal to an axis), and the statistics of the voxels inside (mean, standard deviation,
 * count). A voxel belongs to a ROI when its centre does: no partial-voxel weights, so a
 * plain loop over the voxels gives the same numbers (tests/test-roi.c does exactly that). */
#pragma once
#include "tl-api.h"
#include "tl-image.h"

G_BEGIN_DECLS

typedef enum {
  TL_ROI_SPHERE, /* |p - centre| <= radius */
  TL_ROI_CIRCLE, /* in the slice (normal to `axis`) holding the centre, in-plane |p - centre| <= radius */
} TlRoiKind;

typedef struct {
  TlRoiKind kind;
  double centre_mm[3]; /* scanner coordinates */
  double radius_mm;
  guint axis;          /* circles: the normal (2 = z: an axial circle) */
} TlRoi;

typedef struct {
  guint64 n;           /* voxels inside (0: mean and sd are NAN) */
  double mean;
  double sd;           /* sample standard deviation (n - 1); 0 when n == 1 */
  double min, max;
} TlRoiStats;

/* Whether the voxel (i, j, k) of `grid` is inside the ROI. */
TL_API gboolean tl_roi_contains(const TlRoi *roi, const TlImageGrid *grid, guint i, guint j, guint k);
/* Statistics of the voxels inside (only the ROI's bounding box is visited). A ROI outside
 * the image gives n = 0. */
TL_API void tl_roi_stats(const TlRoi *roi, const TlImage *im, TlRoiStats *out);
/* A readable one-line description ("sphere (x, y, z) mm, r mm"). */
TL_API char *tl_roi_describe(const TlRoi *roi);

G_END_DECLS
