/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The lines of arc-corrected STIR projection data (tl-sinogram-arc.h). */
#include "tl-sinogram-arc.h"
#include <math.h>

float *tl_sinogram_arc_lines(const TlSinogram *s, guint32 **view_of, GError **error) {
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  if (!s->arc_corrected || !(s->bin_size_mm > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "STIR projection data of %s: %s (expected "
                "arc-corrected data with a 'default bin size (cm)')", name,
                s->arc_corrected ? "no bin size" : "not arc-corrected: its bins are crystal pairs");
    return NULL;
  }
  double R = s->inner_radius_mm + s->doi_mm;
  gint t0 = -(gint)(s->n_tangential / 2), t1 = t0 + (gint)s->n_tangential - 1;
  double smax = MAX(-t0, t1) * s->bin_size_mm;
  if (!(smax < R)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data of %s: %u tangential "
                "positions of %g mm reach %g mm from the axis (expected inside the detector "
                "radius %g mm)", name, s->n_tangential, s->bin_size_mm, smax, R);
    return NULL;
  }
  float *p = g_try_new(float, 6 * MAX(s->n_bins, 1));
  guint32 *vo = view_of ? g_try_new(guint32, MAX(s->n_bins, 1)) : NULL;
  if (!p || (view_of && !vo)) {
    g_free(p);
    g_free(vo);
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "STIR projection data of %s: %"
                G_GUINT64_FORMAT " lines do not fit in memory", name, s->n_bins);
    return NULL;
  }
  double zc = (s->n_rings - 1) / 2.0;
  guint64 j = 0;
  for (guint seg = 0; seg < s->n_segments; seg++) {
    gint lo = s->min_ring_difference[seg], hi = s->max_ring_difference[seg];
    guint k = lo == hi ? 2 : 1;
    /* smallest ring sum of the segment: min |ring difference| (tl-sinogram.c's expected_axial) */
    gint m0 = lo <= 0 && hi >= 0 ? 0 : MIN(ABS(lo), ABS(hi));
    double d = (lo + hi) / 2.0;
    for (guint v = 0; v < s->n_views; v++) {
      double phi = G_PI * v / s->n_views + s->view_offset_deg * G_PI / 180;
      double ux = sin(phi), uy = -cos(phi);
      for (guint ax = 0; ax < s->n_axial[seg]; ax++) {
        double m = m0 + (double)ax * k;
        double z1 = ((m - d) / 2 - zc) * s->ring_spacing_mm,
               z2 = ((m + d) / 2 - zc) * s->ring_spacing_mm;
        for (gint t = t0; t <= t1; t++, j++) {
          double off = t * s->bin_size_mm, L = sqrt(R * R - off * off);
          double cx = off * cos(phi), cy = off * sin(phi);
          float *e = p + 6 * j;
          e[0] = (float)(cx + L * ux), e[1] = (float)(cy + L * uy), e[2] = (float)z1;
          e[3] = (float)(cx - L * ux), e[4] = (float)(cy - L * uy), e[5] = (float)z2;
          if (vo) vo[j] = v;
        }
      }
    }
  }
  if (view_of) *view_of = vo;
  return p;
}
