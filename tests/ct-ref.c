/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C references for the CT tests (see ct-ref.h). */
#include "ct-ref.h"
#include <math.h>
#include <string.h>

static double bilinear(const float *img, guint nu, guint nv, double u, double v) {
  double fu = floor(u), fv = floor(v);
  double eu = u - fu, ev = v - fv;
  long iu = (long)fu, iv = (long)fv;
  double s = 0;
  for (int c = 0; c < 4; c++) {
    long qu = iu + (c & 1), qv = iv + (c >> 1);
    if (qu < 0 || qu >= (long)nu || qv < 0 || qv >= (long)nv) continue; /* zero boundary */
    double w = ((c & 1) ? eu : 1 - eu) * ((c >> 1) ? ev : 1 - ev);
    s += w * img[qv * nu + qu];
  }
  return s;
}

static void voxel_centre(const TlImageGrid *grid, guint i, guint j, guint k, double x[3]) {
  guint idx[3] = {i, j, k};
  for (int a = 0; a < 3; a++) x[a] = grid->origin_mm[a] + idx[a] * (double)grid->voxel_mm[a];
}

void ct_ref_bp_voxel(const TlCtGeometry *g, guint first, guint count, const TlImageGrid *grid,
                     const float *proj, double *out) {
  const guint *d = grid->dims;
  gsize npix = (gsize)g->det_u * g->det_v;
  for (guint k = 0; k < d[2]; k++)
    for (guint j = 0; j < d[1]; j++)
      for (guint i = 0; i < d[0]; i++) {
        double x[3], f = 0;
        voxel_centre(grid, i, j, k, x);
        for (guint n = 0; n < count; n++) {
          /* eq. 1: u = (a0 x + a3 y + a6 z + a9) / w, v = (a1 x + ...) / w,
           * w = a2 x + a5 y + a8 z + a11 (a: column-major numbering of the matrix) */
          const double *P = tl_ct_geometry_matrix(g, first + n);
          double a[12];
          for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++) a[3 * c + r] = P[4 * r + c];
          double w = a[2] * x[0] + a[5] * x[1] + a[8] * x[2] + a[11];
          if (!(w > 0)) continue;
          double u = (a[0] * x[0] + a[3] * x[1] + a[6] * x[2] + a[9]) / w;
          double v = (a[1] * x[0] + a[4] * x[1] + a[7] * x[2] + a[10]) / w;
          f += bilinear(proj + n * npix, g->det_u, g->det_v, u, v) / (w * w);
        }
        out[i + (gsize)d[0] * (j + (gsize)d[1] * k)] = f;
      }
}

double ct_ref_chord_box(const double o[3], const double dir[3], double t_min, const double lo[3],
                        const double hi[3]) {
  double t0 = t_min, t1 = INFINITY;
  for (int a = 0; a < 3; a++) {
    if (dir[a] == 0) {
      if (o[a] < lo[a] || o[a] >= hi[a]) return 0;
      continue;
    }
    double ta = (lo[a] - o[a]) / dir[a], tb = (hi[a] - o[a]) / dir[a];
    t0 = MAX(t0, MIN(ta, tb));
    t1 = MIN(t1, MAX(ta, tb));
  }
  return t1 > t0 ? t1 - t0 : 0;
}

double ct_ref_line_integral(const TlImage *im, const double o[3], const double dir[3],
                            double t_min) {
  const TlImageGrid *g = &im->grid;
  double s = 0;
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        float v = im->data[i + (gsize)g->dims[0] * (j + (gsize)g->dims[1] * k)];
        if (v == 0) continue;
        double c[3], lo[3], hi[3];
        voxel_centre(g, i, j, k, c);
        for (int a = 0; a < 3; a++) {
          lo[a] = c[a] - 0.5 * g->voxel_mm[a];
          hi[a] = c[a] + 0.5 * g->voxel_mm[a];
        }
        s += v * ct_ref_chord_box(o, dir, t_min, lo, hi);
      }
  return s;
}

void ct_ref_fdk(const TlCtGeometry *g, const TlImageGrid *grid, const float *proj, double *out) {
  const guint nu = g->det_u, nv = g->det_v, N = g->n_views;
  const gboolean cone = g->beam == TL_CT_CONE;
  gsize npix = (gsize)nu * nv;
  /* Ram-Lak taps for pixel spacing 1 */
  double *h = g_new(double, 2 * nu - 1);
  for (long l = -(long)nu + 1; l < (long)nu; l++)
    h[l + nu - 1] = l == 0 ? 0.25 : (l % 2 ? -1.0 / (G_PI * G_PI * l * l) : 0.0);
  float *q = g_new(float, npix);
  double *row = g_new(double, nu);
  memset(out, 0, sizeof(double) * tl_image_grid_n_voxels(grid));
  for (guint n = 0; n < N; n++) {
    const double *P = tl_ct_geometry_matrix(g, n);
    /* D: depth of the isocentre; tau: spacing of the central row's rays at that depth */
    double D = cone ? P[11] : 1.0, o0[3], d0[3], o1[3], d1[3], p0[3], p1[3];
    tl_ct_geometry_ray(g, n, nu / 2, nv / 2, o0, d0);
    tl_ct_geometry_ray(g, n, nu / 2 + 1, nv / 2, o1, d1);
    double c0 = d0[0] * P[8] + d0[1] * P[9] + d0[2] * P[10];
    double c1 = d1[0] * P[8] + d1[1] * P[9] + d1[2] * P[10];
    for (int a = 0; a < 3; a++) {
      p0[a] = cone ? o0[a] + D / c0 * d0[a] : o0[a];
      p1[a] = cone ? o1[a] + D / c1 * d1[a] : o1[a];
    }
    double tau = sqrt((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) +
                      (p1[2] - p0[2]) * (p1[2] - p0[2]));
    double scale = G_PI * D * D / (N * tau);
    for (guint v = 0; v < nv; v++) {
      for (guint u = 0; u < nu; u++) {
        double o[3], d[3];
        tl_ct_geometry_ray(g, n, u, v, o, d);
        double cosw = cone ? d[0] * P[8] + d[1] * P[9] + d[2] * P[10] : 1.0;
        row[u] = proj[n * npix + v * nu + u] * cosw;
      }
      for (guint u = 0; u < nu; u++) {
        double s = 0;
        for (guint j = 0; j < nu; j++) s += h[(long)u - (long)j + nu - 1] * row[j];
        q[v * nu + u] = (float)(scale * s);
      }
    }
    const guint *dm = grid->dims;
    for (guint k = 0; k < dm[2]; k++)
      for (guint j = 0; j < dm[1]; j++)
        for (guint i = 0; i < dm[0]; i++) {
          double x[3], u, v;
          voxel_centre(grid, i, j, k, x);
          double w = tl_ct_geometry_project(g, n, x, &u, &v);
          if (!(w > 0)) continue;
          out[i + (gsize)dm[0] * (j + (gsize)dm[1] * k)] += bilinear(q, nu, nv, u, v) / (w * w);
        }
  }
  g_free(h);
  g_free(q);
  g_free(row);
}

float *ct_ref_project_phantom(const TlCtGeometry *g, const TlImageGrid *grid,
                              const TlCtPhantom *phantom, double scale) {
  gsize npix = (gsize)g->det_u * g->det_v;
  float *p = g_new(float, npix * g->n_views);
  for (guint n = 0; n < g->n_views; n++)
    for (guint v = 0; v < g->det_v; v++)
      for (guint u = 0; u < g->det_u; u++) {
        double o[3], d[3];
        tl_ct_geometry_ray(g, n, u, v, o, d);
        p[n * npix + v * g->det_u + u] = (float)tl_ct_phantom_line_integral(
            phantom, grid, scale, o, d, g->beam == TL_CT_CONE);
      }
  return p;
}

double ct_ref_rmse(const float *a, const double *b, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += (a[i] - b[i]) * (a[i] - b[i]);
  return sqrt(s / n);
}

double ct_ref_rmse_f(const float *a, const float *b, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
  return sqrt(s / n);
}
