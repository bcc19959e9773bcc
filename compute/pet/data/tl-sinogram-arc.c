/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The lines of arc-corrected STIR projection data (tl-sinogram-arc.h). */
#include "tl-sinogram-arc.h"
#include <math.h>

/* Trapezoid rule over [-1/2, 1/2] with m nodes: node i at i / (m - 1) - 1/2, weight 1 inside
 * and 1/2 at the ends, over m - 1; one node: the centre, weight 1. */
static void trapezoid(guint m, guint i, double *pos, double *w) {
  if (m == 1) {
    *pos = 0, *w = 1;
    return;
  }
  *pos = (double)i / (m - 1) - 0.5;
  *w = (i == 0 || i == m - 1 ? 0.5 : 1.0) / (m - 1);
}

float *tl_sinogram_arc_lines(const TlSinogram *s, guint rays_t, guint rays_z, float *weights,
                             guint32 **view_of, GError **error) {
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  if (rays_t < 1 || rays_z < 1 || rays_t * rays_z > TL_SINOGRAM_ARC_MAX_RAYS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u x %u rays per bin (expected at least "
                "1 x 1, at most %u in all)", rays_t, rays_z, TL_SINOGRAM_ARC_MAX_RAYS);
    return NULL;
  }
  if (!s->arc_corrected || !(s->bin_size_mm > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "STIR projection data of %s: %s (expected "
                "arc-corrected data with a 'default bin size (cm)')", name,
                s->arc_corrected ? "no bin size" : "not arc-corrected: its bins are crystal pairs");
    return NULL;
  }
  /* the bins the geometry gives must be the bins held (tl_sinogram_validate, checked again
   * since the loop below writes one line per bin of the geometry) */
  guint64 geo = 0;
  for (guint seg = 0; seg < s->n_segments; seg++)
    geo += (guint64)s->n_axial[seg] * s->n_views * s->n_tangential;
  if (geo != s->n_bins || s->n_views < 1 || s->n_tangential < 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data of %s: %" G_GUINT64_FORMAT
                " bins from the geometry (%u views, %u tangential positions), %" G_GUINT64_FORMAT
                " held (expected equal, at least one of each)", name, geo, s->n_views,
                s->n_tangential, s->n_bins);
    return NULL;
  }
  double R = s->inner_radius_mm + s->doi_mm;
  gint t0 = -(gint)(s->n_tangential / 2), t1 = t0 + (gint)s->n_tangential - 1;
  /* the outermost ray of the outermost bin */
  double smax = (MAX(-t0, t1) + (rays_t > 1 ? 0.5 : 0)) * s->bin_size_mm;
  if (!(smax < R)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data of %s: %u tangential "
                "positions of %g mm reach %g mm from the axis (expected inside the detector "
                "radius %g mm)", name, s->n_tangential, s->bin_size_mm, smax, R);
    return NULL;
  }
  guint64 n = s->n_bins, R_n = (guint64)rays_t * rays_z;
  float *p = n <= G_MAXUINT64 / 6 / R_n ? g_try_new(float, 6 * MAX(n, 1) * R_n) : NULL;
  guint32 *vo = view_of ? g_try_new(guint32, MAX(s->n_bins, 1)) : NULL;
  if (!p || (view_of && !vo)) {
    g_free(p);
    g_free(vo);
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "STIR projection data of %s: %"
                G_GUINT64_FORMAT " lines of %u rays do not fit in memory", name, n,
                (guint)R_n);
    return NULL;
  }
  for (guint a = 0; weights && a < rays_z; a++)
    for (guint i = 0; i < rays_t; i++) {
      double pt, wt, pz, wz;
      trapezoid(rays_t, i, &pt, &wt);
      trapezoid(rays_z, a, &pz, &wz);
      weights[a * rays_t + i] = (float)(wt * wz);
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
          /* ray (i, a): the line shifted in parallel to node i of the bin's width, node a of
           * a ring's */
          for (guint a = 0; a < rays_z; a++)
            for (guint i = 0; i < rays_t; i++) {
              double pt, pz, w;
              trapezoid(rays_t, i, &pt, &w);
              trapezoid(rays_z, a, &pz, &w);
              double off = (t + pt) * s->bin_size_mm, dz = pz * s->ring_spacing_mm,
                     L = sqrt(R * R - off * off), cx = off * cos(phi), cy = off * sin(phi);
              float *e = p + 6 * (n * (a * rays_t + i) + j);
              e[0] = (float)(cx + L * ux), e[1] = (float)(cy + L * uy), e[2] = (float)(z1 + dz);
              e[3] = (float)(cx - L * ux), e[4] = (float)(cy - L * uy), e[5] = (float)(z2 + dz);
            }
          if (vo) vo[j] = v;
        }
      }
    }
  }
  if (view_of) *view_of = vo;
  return p;
}
