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

/* Each ray's weight, ray (i, a) at a * rays_t + i: the product of the two trapezoid weights. */
static void ray_weights(guint rays_t, guint rays_z, float *weights) {
  for (guint a = 0; a < rays_z; a++)
    for (guint i = 0; i < rays_t; i++) {
      double pt, wt, pz, wz;
      trapezoid(rays_t, i, &pt, &wt);
      trapezoid(rays_z, a, &pz, &wz);
      weights[a * rays_t + i] = (float)(wt * wz);
    }
}

static gboolean check_rays(guint rays_t, guint rays_z, GError **error) {
  if (rays_t >= 1 && rays_z >= 1 && (guint64)rays_t * rays_z <= TL_SINOGRAM_ARC_MAX_RAYS) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u x %u rays per bin (expected at least "
              "1 x 1, at most %u in all)", rays_t, rays_z, TL_SINOGRAM_ARC_MAX_RAYS);
  return FALSE;
}

float *tl_sinogram_arc_lines(const TlSinogram *s, guint rays_t, guint rays_z, float *weights,
                             guint32 **view_of, GError **error) {
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  if (!check_rays(rays_t, rays_z, error)) return NULL;
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
  if (weights) ray_weights(rays_t, rays_z, weights);
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

/* The detectors of bin (v, t) of an uncompressed view (tl-sinogram.h), t >> 1 rounding down. */
static void pair_detectors(guint N, guint v, gint t, guint *d1, guint *d2) {
  gint h1 = t >= 0 ? t / 2 : -((-t + 1) / 2), t1 = t + 1, h2 = t1 >= 0 ? t1 / 2 : -((-t1 + 1) / 2);
  *d1 = (guint)(((gint)v + h1 + 2 * (gint)N) % (gint)N);
  *d2 = (guint)(((gint)v - h2 + (gint)N / 2 + 2 * (gint)N) % (gint)N);
}

/* The checks of both functions below: bins of one crystal pair each. */
static gboolean check_pairs(const TlSinogram *s, const char *name, GError **error) {
  guint N = s->n_detectors;
  gboolean span1 = TRUE;
  guint64 geo = 0;
  for (guint seg = 0; seg < s->n_segments; seg++) {
    span1 &= s->min_ring_difference[seg] == s->max_ring_difference[seg];
    geo += (guint64)s->n_axial[seg] * s->n_views * s->n_tangential;
  }
  if (s->arc_corrected || !span1 || s->n_views != N / 2 || geo != s->n_bins) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "STIR projection data of %s: %s (expected "
                "bins of one crystal pair each: not arc-corrected, span 1, %u views)", name,
                s->arc_corrected ? "arc-corrected" : !span1 ? "a segment of several ring differences"
                : s->n_views != N / 2 ? "mashed views" : "a geometry not matching the bins held",
                N / 2);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_sinogram_pairs_are_lines(const TlSinogram *s, GError **error) {
  return check_pairs(s, s->name && *s->name ? s->name : "(unnamed)", error);
}

guint8 *tl_sinogram_pair_crystals(const TlSinogram *s, GError **error) {
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  if (!check_pairs(s, name, error)) return NULL;
  guint8 *live = g_try_new(guint8, MAX(s->n_bins, 1));
  if (!live) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "STIR projection data of %s: %"
                G_GUINT64_FORMAT " bins do not fit in memory", name, s->n_bins);
    return NULL;
  }
  guint N = s->n_detectors, B = s->block_positions;
  gint t0 = -(gint)(s->n_tangential / 2);
  guint64 j = 0;
  for (guint seg = 0; seg < s->n_segments; seg++)
    for (guint v = 0; v < s->n_views; v++)
      for (guint ax = 0; ax < s->n_axial[seg]; ax++)
        for (gint t = t0; t < t0 + (gint)s->n_tangential; t++, j++) {
          guint d1, d2;
          pair_detectors(N, v, t, &d1, &d2);
          /* a block's first position is its gap (tl-cylinder.h) */
          live[j] = !B || (d1 % B != 0 && d2 % B != 0);
        }
  return live;
}

float *tl_sinogram_pair_lines(const TlSinogram *s, guint rays_t, guint rays_z, float *weights,
                              GError **error) {
  const char *name = s->name && *s->name ? s->name : "(unnamed)";
  if (!check_rays(rays_t, rays_z, error) || !check_pairs(s, name, error)) return NULL;
  guint N = s->n_detectors;
  guint64 n = s->n_bins, R_n = (guint64)rays_t * rays_z;
  float *p = n <= G_MAXUINT64 / 6 / R_n ? g_try_new(float, 6 * MAX(n, 1) * R_n) : NULL;
  if (!p) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "STIR projection data of %s: %"
                G_GUINT64_FORMAT " lines of %u rays do not fit in memory", name, n, (guint)R_n);
    return NULL;
  }
  if (weights) ray_weights(rays_t, rays_z, weights);
  double R = s->inner_radius_mm + s->doi_mm, zc = (s->n_rings - 1) / 2.0,
         off = s->view_offset_deg * G_PI / 180;
  gint t0 = -(gint)(s->n_tangential / 2);
  guint64 j = 0;
  for (guint seg = 0; seg < s->n_segments; seg++) {
    gint rd = s->min_ring_difference[seg], m0 = ABS(rd);
    for (guint v = 0; v < s->n_views; v++)
      for (guint ax = 0; ax < s->n_axial[seg]; ax++) {
        gint r1 = (m0 + 2 * (gint)ax - rd) / 2, r2 = r1 + rd;
        for (gint t = t0; t < t0 + (gint)s->n_tangential; t++, j++) {
          guint d1, d2;
          pair_detectors(N, v, t, &d1, &d2);
          double p1 = 2 * G_PI * d1 / N + off, p2 = 2 * G_PI * d2 / N + off;
          double ax1 = R * sin(p1), ay1 = -R * cos(p1), bx = R * sin(p2), by = -R * cos(p2);
          double ux = bx - ax1, uy = by - ay1, len = sqrt(ux * ux + uy * uy);
          if (!(len > 1e-6 * R)) {
            g_free(p);
            g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data of %s: view %u "
                        "tangential %d joins detector %u to itself (expected fewer tangential "
                        "positions than the %u detectors)", name, v, t, d1, N);
            return NULL;
          }
          ux /= len, uy /= len;
          double nx = -uy, ny = ux, s0 = ax1 * nx + ay1 * ny;
          double width = sqrt(MAX(R * R - s0 * s0, 0)) * G_PI / N;
          for (guint a = 0; a < rays_z; a++)
            for (guint i = 0; i < rays_t; i++) {
              double pt, pz, w;
              trapezoid(rays_t, i, &pt, &w);
              trapezoid(rays_z, a, &pz, &w);
              /* 1 x 1: the detectors themselves (no recomputed end, no rounding) */
              double sr = s0 + pt * width, L = sqrt(MAX(R * R - sr * sr, 0)),
                     cx = sr * nx, cy = sr * ny, dz = pz * s->ring_spacing_mm;
              float *e = p + 6 * (n * (a * rays_t + i) + j);
              gboolean centre = rays_t == 1;
              e[0] = (float)(centre ? ax1 : cx - L * ux), e[1] = (float)(centre ? ay1 : cy - L * uy);
              e[3] = (float)(centre ? bx : cx + L * ux), e[4] = (float)(centre ? by : cy + L * uy);
              e[2] = (float)((r1 - zc) * s->ring_spacing_mm + dz);
              e[5] = (float)((r2 - zc) * s->ring_spacing_mm + dz);
            }
        }
      }
  }
  return p;
}
