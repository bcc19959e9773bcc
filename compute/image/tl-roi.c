/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ROI statistics: two passes over the voxels of the ROI's bounding box (mean, then the
 * sum of squared deviations, which stays accurate where sum(x^2) - n mean^2 would cancel). */
#include <math.h>
#include "image/tl-roi.h"

/* The index of the slice whose voxel holds coordinate x along axis a (may be out of range). */
static double voxel_index(const TlImageGrid *g, int a, double x) {
  return (x - g->origin_mm[a]) / g->voxel_mm[a];
}

gboolean tl_roi_contains(const TlRoi *roi, const TlImageGrid *g, guint i, guint j, guint k) {
  double p[3];
  tl_image_grid_voxel_centre(g, i, j, k, p);
  double d2 = 0;
  guint idx[3] = {i, j, k};
  for (int a = 0; a < 3; a++) {
    double d = p[a] - roi->centre_mm[a];
    if (roi->kind == TL_ROI_CIRCLE && (guint)a == roi->axis) {
      /* the slice holding the centre: the voxel whose extent contains it */
      if (floor(voxel_index(g, a, roi->centre_mm[a]) + 0.5) != (double)idx[a])
        return FALSE;
      continue;
    }
    d2 += d * d;
  }
  return d2 <= roi->radius_mm * roi->radius_mm;
}

/* [lo, hi] voxel index range of the ROI's bounding box along axis a; FALSE if empty. */
static gboolean box(const TlRoi *roi, const TlImageGrid *g, int a, guint *lo, guint *hi) {
  double r = roi->kind == TL_ROI_CIRCLE && (guint)a == roi->axis ? 0 : roi->radius_mm;
  double l = ceil(voxel_index(g, a, roi->centre_mm[a] - r) - 0.5);
  double h = floor(voxel_index(g, a, roi->centre_mm[a] + r) + 0.5);
  if (!(l <= h) || h < 0 || l > g->dims[a] - 1.0)
    return FALSE;
  *lo = (guint)MAX(l, 0);
  *hi = (guint)MIN(h, g->dims[a] - 1.0);
  return TRUE;
}

void tl_roi_stats(const TlRoi *roi, const TlImage *im, TlRoiStats *out) {
  *out = (TlRoiStats){0, NAN, NAN, NAN, NAN};
  const TlImageGrid *g = &im->grid;
  guint lo[3], hi[3];
  for (int a = 0; a < 3; a++)
    if (!box(roi, g, a, &lo[a], &hi[a]))
      return;
  double sum = 0, mn = INFINITY, mx = -INFINITY;
  guint64 n = 0;
  for (int pass = 0; pass < 2; pass++) {
    double mean = pass ? sum / n : 0, ss = 0;
    for (guint k = lo[2]; k <= hi[2]; k++)
      for (guint j = lo[1]; j <= hi[1]; j++)
        for (guint i = lo[0]; i <= hi[0]; i++) {
          if (!tl_roi_contains(roi, g, i, j, k))
            continue;
          double v = im->data[i + (gsize)g->dims[0] * (j + (gsize)g->dims[1] * k)];
          if (pass == 0) {
            sum += v;
            n++;
            mn = MIN(mn, v);
            mx = MAX(mx, v);
          } else {
            ss += (v - mean) * (v - mean);
          }
        }
    if (n == 0)
      return;
    if (pass == 1)
      *out = (TlRoiStats){n, mean, n > 1 ? sqrt(ss / (n - 1)) : 0, mn, mx};
  }
}

char *tl_roi_describe(const TlRoi *roi) {
  static const char axes[] = "xyz";
  if (roi->kind == TL_ROI_SPHERE)
    return g_strdup_printf("sphere (%.1f, %.1f, %.1f) mm, r %.1f mm", roi->centre_mm[0],
                           roi->centre_mm[1], roi->centre_mm[2], roi->radius_mm);
  return g_strdup_printf("circle ⊥%c (%.1f, %.1f, %.1f) mm, r %.1f mm", axes[MIN(roi->axis, 2)],
                         roi->centre_mm[0], roi->centre_mm[1], roi->centre_mm[2], roi->radius_mm);
}
