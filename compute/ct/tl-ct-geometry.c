/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT geometry: circular-orbit generators, validation and normalisation of per-view 3x4
 * projection matrices, and what the projectors derive from them. All in double. */
#include "tl-ct-geometry.h"
#include <float.h>
#include <math.h>
#include <string.h>

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static void cross3(const double *a, const double *b, double *o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}
static double norm3(const double *a) { return sqrt(dot3(a, a)); }

/* Inverse of the 3x3 matrix with rows r0, r1, r2 (row-major into inv); returns det. */
static double inv3(const double *r0, const double *r1, const double *r2, double inv[9]) {
  double c0[3], c1[3], c2[3];
  cross3(r1, r2, c0);
  cross3(r2, r0, c1);
  cross3(r0, r1, c2);
  double det = dot3(r0, c0);
  /* inverse = [c0 c1 c2] (as columns) / det */
  for (int i = 0; i < 3; i++) {
    inv[3 * i + 0] = c0[i] / det;
    inv[3 * i + 1] = c1[i] / det;
    inv[3 * i + 2] = c2[i] / det;
  }
  return det;
}

void tl_ct_orbit_init_cone(TlCtOrbit *o, guint n_views, double sid_mm, double sdd_mm,
                           guint det_u, guint det_v, double pixel_u_mm, double pixel_v_mm) {
  *o = (TlCtOrbit){.beam = TL_CT_CONE, .n_views = n_views, .start_deg = 0, .arc_deg = 360,
                   .sid_mm = sid_mm, .sdd_mm = sdd_mm, .det_u = det_u, .det_v = det_v,
                   .pixel_u_mm = pixel_u_mm, .pixel_v_mm = pixel_v_mm};
}

void tl_ct_orbit_init_parallel(TlCtOrbit *o, guint n_views, guint det_u, guint det_v,
                               double pixel_u_mm, double pixel_v_mm) {
  *o = (TlCtOrbit){.beam = TL_CT_PARALLEL, .n_views = n_views, .start_deg = 0, .arc_deg = 180,
                   .det_u = det_u, .det_v = det_v, .pixel_u_mm = pixel_u_mm,
                   .pixel_v_mm = pixel_v_mm};
}

gboolean tl_ct_orbit_validate(const TlCtOrbit *o, GError **error) {
  const char *what = NULL;
  if (o->n_views == 0)
    what = "zero views: an orbit needs at least one";
  else if (o->det_u == 0 || o->det_v == 0)
    what = "the detector has no pixels: it needs at least one column and one row";
  else if (!(o->pixel_u_mm > 0) || !(o->pixel_v_mm > 0) || !isfinite(o->pixel_u_mm) ||
           !isfinite(o->pixel_v_mm))
    what = "detector pixel sizes must be finite and > 0 mm";
  else if (!isfinite(o->start_deg) || !isfinite(o->arc_deg) || !isfinite(o->offset_u_mm) ||
           !isfinite(o->offset_v_mm))
    what = "start, arc and offsets must be finite";
  else if (o->beam == TL_CT_CONE && (!(o->sid_mm > 0) || !isfinite(o->sid_mm)))
    what = "the source-isocentre distance must be finite and > 0 mm";
  else if (o->beam == TL_CT_CONE && (!(o->sdd_mm > 0) || !isfinite(o->sdd_mm)))
    what = "the source-detector distance must be finite and > 0 mm";
  if (!what) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "CT orbit (%u views, detector %u x %u of %g x %g mm, sid %g, sdd %g mm): %s",
              o->n_views, o->det_u, o->det_v, o->pixel_u_mm, o->pixel_v_mm, o->sid_mm,
              o->sdd_mm, what);
  return FALSE;
}

void tl_ct_orbit_frame(const TlCtOrbit *o, guint view, TlCtViewFrame *f) {
  double b = (o->start_deg + view * o->arc_deg / o->n_views) * G_PI / 180.0;
  double c = cos(b), s = sin(b);
  double e_u[3] = {-s, c, 0}, e_v[3] = {0, 0, 1}, dir[3] = {-c, -s, 0};
  memcpy(f->e_u, e_u, sizeof e_u);
  memcpy(f->e_v, e_v, sizeof e_v);
  memcpy(f->dir, dir, sizeof dir);
  /* parallel beam: the "source" is the point of the central ray opposite the detector */
  double sid = o->beam == TL_CT_CONE ? o->sid_mm : 0.0;
  double sdd = o->beam == TL_CT_CONE ? o->sdd_mm : 0.0;
  for (int i = 0; i < 3; i++) {
    f->source[i] = -sid * dir[i];
    f->det_centre[i] = f->source[i] + sdd * dir[i] + o->offset_u_mm * e_u[i] +
                       o->offset_v_mm * e_v[i];
  }
}

void tl_ct_orbit_pixel(const TlCtOrbit *o, const TlCtViewFrame *f, double u, double v,
                       double out[3]) {
  double du = (u - 0.5 * (o->det_u - 1.0)) * o->pixel_u_mm;
  double dv = (v - 0.5 * (o->det_v - 1.0)) * o->pixel_v_mm;
  for (int i = 0; i < 3; i++) out[i] = f->det_centre[i] + du * f->e_u[i] + dv * f->e_v[i];
}

/* Rows of P for one generated view. A point X meets the detector where the ray from the
 * source through X crosses it; with depth w = dir . (X - s), that point is
 * s + (sdd / w) (X - s), so u w = (sdd / du) e_u.(X - s) + (cu - off_u / du) w and likewise
 * for v: a pinhole camera with principal point shifted by the offsets. Parallel beam:
 * u = e_u.X / du + cu - off_u / du, w = 1. */
static void orbit_matrix(const TlCtOrbit *o, guint view, double P[12]) {
  TlCtViewFrame f;
  tl_ct_orbit_frame(o, view, &f);
  double cu = 0.5 * (o->det_u - 1.0) - o->offset_u_mm / o->pixel_u_mm;
  double cv = 0.5 * (o->det_v - 1.0) - o->offset_v_mm / o->pixel_v_mm;
  if (o->beam == TL_CT_PARALLEL) {
    for (int i = 0; i < 3; i++) {
      P[i] = f.e_u[i] / o->pixel_u_mm;
      P[4 + i] = f.e_v[i] / o->pixel_v_mm;
      P[8 + i] = 0;
    }
    P[3] = cu, P[7] = cv, P[11] = 1;
    return;
  }
  double fu = o->sdd_mm / o->pixel_u_mm, fv = o->sdd_mm / o->pixel_v_mm;
  for (int i = 0; i < 3; i++) {
    P[i] = fu * f.e_u[i] + cu * f.dir[i];
    P[4 + i] = fv * f.e_v[i] + cv * f.dir[i];
    P[8 + i] = f.dir[i];
  }
  for (int r = 0; r < 3; r++) P[4 * r + 3] = -dot3(&P[4 * r], f.source);
}

TlCtGeometry *tl_ct_geometry_new_orbit(const TlCtOrbit *o, GError **error) {
  if (!tl_ct_orbit_validate(o, error)) return NULL;
  g_autofree double *m = g_new(double, 12 * (gsize)o->n_views);
  for (guint k = 0; k < o->n_views; k++) orbit_matrix(o, k, m + 12 * (gsize)k);
  TlCtGeometry *g = tl_ct_geometry_new_matrices(o->beam, o->n_views, o->det_u, o->det_v, m, error);
  if (!g) return NULL;
  if (o->beam == TL_CT_CONE)
    g->description = g_strdup_printf(
        "circular cone beam: %u views, start %g deg, arc %g deg, sid %g mm, sdd %g mm, "
        "pixels %g x %g mm, offsets %g %g mm",
        o->n_views, o->start_deg, o->arc_deg, o->sid_mm, o->sdd_mm, o->pixel_u_mm,
        o->pixel_v_mm, o->offset_u_mm, o->offset_v_mm);
  else
    g->description = g_strdup_printf(
        "parallel beam: %u views, start %g deg, arc %g deg, pixels %g x %g mm, offsets %g %g mm",
        o->n_views, o->start_deg, o->arc_deg, o->pixel_u_mm, o->pixel_v_mm, o->offset_u_mm,
        o->offset_v_mm);
  return g;
}

TlCtGeometry *tl_ct_geometry_new_matrices(TlCtBeam beam, guint n_views, guint det_u,
                                          guint det_v, const double *matrices, GError **error) {
  TlCtGeometry *g = g_new0(TlCtGeometry, 1);
  g->beam = beam;
  g->n_views = n_views;
  g->det_u = det_u;
  g->det_v = det_v;
  g->matrices = n_views ? g_memdup2(matrices, 12 * sizeof(double) * n_views) : NULL;
  if (!tl_ct_geometry_validate(g, error)) {
    tl_ct_geometry_free(g);
    return NULL;
  }
  return g;
}

TlCtGeometry *tl_ct_geometry_copy(const TlCtGeometry *g) {
  TlCtGeometry *c = g_memdup2(g, sizeof *g);
  c->matrices = g_memdup2(g->matrices, 12 * sizeof(double) * g->n_views);
  c->description = g_strdup(g->description);
  return c;
}

void tl_ct_geometry_free(TlCtGeometry *g) {
  if (!g) return;
  g_free(g->matrices);
  g_free(g->description);
  g_free(g);
}

G_GNUC_PRINTF(3, 4)
static gboolean fail(GError **error, guint view, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "CT geometry, view %u: %s", view, what);
  return FALSE;
}

/* Relative size below which a determinant or cross product counts as zero: far below any
 * real geometry (whose rows are within a few orders of magnitude of each other) and far
 * above double rounding. */
#define TL_CT_SINGULAR 1e-9

static gboolean normalise_view(TlCtBeam beam, double *P, guint k, GError **error) {
  for (int i = 0; i < 12; i++)
    if (!isfinite(P[i])) return fail(error, k, "matrix entry %d is not finite", i);
  double *m1 = P, *m2 = P + 4, *m3 = P + 8;
  double n1 = norm3(m1), n2 = norm3(m2), n3 = norm3(m3);
  if (beam == TL_CT_PARALLEL) {
    if (n3 > 1e-12 * (n1 + n2) || P[11] == 0)
      return fail(error, k,
                  "a parallel-beam matrix needs a third row (0 0 0 c) with c != 0, found "
                  "(%g %g %g %g)", P[8], P[9], P[10], P[11]);
    double c[3];
    cross3(m1, m2, c);
    if (!(norm3(c) > TL_CT_SINGULAR * n1 * n2))
      return fail(error, k, "singular matrix: its first two rows are parallel or zero");
    double s = 1.0 / P[11];
    for (int i = 0; i < 12; i++) P[i] *= s;
    P[8] = P[9] = P[10] = 0; /* rounding dust */
    return TRUE;
  }
  double inv[9];
  double det = inv3(m1, m2, m3, inv);
  if (!(fabs(det) > TL_CT_SINGULAR * n1 * n2 * n3))
    return fail(error, k, "singular matrix: the left 3x3 block has determinant %g (rows of "
                          "length %g, %g, %g)", det, n1, n2, n3);
  /* w(origin) = P[11] / |m3| after scaling: the depth of the isocentre, must be in front */
  double s = 1.0 / n3;
  if (P[11] < 0) s = -s;
  /* already normalised (to rounding): leave the bits alone, so save + load is exact */
  if (fabs(n3 - 1.0) <= 4 * DBL_EPSILON && P[11] > 0) s = 1.0;
  for (int i = 0; i < 12; i++) P[i] *= s;
  if (!(P[11] > 0))
    return fail(error, k, "the world origin lies in the source plane (depth 0); the isocentre "
                          "must be in front of the source");
  return TRUE;
}

gboolean tl_ct_geometry_validate(TlCtGeometry *g, GError **error) {
  if (g->beam != TL_CT_CONE && g->beam != TL_CT_PARALLEL) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "CT geometry: unknown beam %d", g->beam);
    return FALSE;
  }
  if (g->n_views == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT geometry has zero views: it needs at least one projection matrix");
    return FALSE;
  }
  if (g->det_u == 0 || g->det_v == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT geometry: a detector of %u x %u pixels is smaller than one pixel; it needs "
                "at least one column and one row", g->det_u, g->det_v);
    return FALSE;
  }
  if ((guint64)g->det_u * g->det_v > G_MAXUINT32 / 2) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT geometry: a detector of %u x %u pixels exceeds the 2^31 pixels supported",
                g->det_u, g->det_v);
    return FALSE;
  }
  for (guint k = 0; k < g->n_views; k++) {
    double *P = g->matrices + 12 * (gsize)k, again[12], largest = 0;
    for (int i = 0; i < 12; i++) largest = MAX(largest, fabs(P[i]));
    if (!normalise_view(g->beam, P, k, error)) return FALSE;
    /* whatever loads must save and load back identically: a matrix whose normalised form
     * overflows, underflows or normalises differently a second time is refused here */
    memcpy(again, P, sizeof again);
    if (!normalise_view(g->beam, again, k, NULL) || memcmp(again, P, sizeof again) != 0)
      return fail(error, k, "largest matrix entry %g: the matrix cannot be normalised exactly "
                            "(entries too small or too large for double precision)", largest);
  }
  return TRUE;
}

TlCtGeometry *tl_ct_geometry_subset(const TlCtGeometry *g, guint first, guint stride, guint count,
                                    GError **error) {
  if (count == 0 || stride == 0 || first >= g->n_views ||
      first + (guint64)stride * (count - 1) >= g->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "views %u + %u k (k < %u) are not all among the geometry's %u views", first,
                stride, count, g->n_views);
    return NULL;
  }
  g_autofree double *m = g_new(double, 12 * (gsize)count);
  for (guint k = 0; k < count; k++)
    memcpy(m + 12 * (gsize)k, tl_ct_geometry_matrix(g, first + k * stride), 12 * sizeof(double));
  TlCtGeometry *s = tl_ct_geometry_new_matrices(g->beam, count, g->det_u, g->det_v, m, error);
  if (s && g->description) s->description = g_strdup(g->description);
  return s;
}

const double *tl_ct_geometry_matrix(const TlCtGeometry *g, guint view) {
  g_return_val_if_fail(view < g->n_views, NULL);
  return g->matrices + 12 * (gsize)view;
}

gboolean tl_ct_geometry_source(const TlCtGeometry *g, guint view, double out[3]) {
  const double *P = tl_ct_geometry_matrix(g, view);
  if (g->beam == TL_CT_PARALLEL) return FALSE;
  double inv[9];
  inv3(P, P + 4, P + 8, inv);
  /* P (s, 1) = 0  <=>  s = -M^-1 p */
  for (int i = 0; i < 3; i++)
    out[i] = -(inv[3 * i] * P[3] + inv[3 * i + 1] * P[7] + inv[3 * i + 2] * P[11]);
  return TRUE;
}

void tl_ct_geometry_ray_basis(const TlCtGeometry *g, guint view, const double ref[3],
                              double Qa[9], double Qd[9], double *depth_ref) {
  const double *P = tl_ct_geometry_matrix(g, view);
  if (g->beam == TL_CT_CONE) {
    double s[3];
    inv3(P, P + 4, P + 8, Qd);
    tl_ct_geometry_source(g, view, s);
    /* m3 . Qd (u, v, 1) = 1, so s + w Qd (u, v, 1) has depth w: with w = depth(ref) it lies
     * in the plane through ref perpendicular to the central ray */
    double w = dot3(P + 8, ref) + P[11];
    for (int i = 0; i < 3; i++) {
      Qa[3 * i + 0] = w * Qd[3 * i + 0];
      Qa[3 * i + 1] = w * Qd[3 * i + 1];
      Qa[3 * i + 2] = s[i] + w * Qd[3 * i + 2];
    }
    *depth_ref = w;
    return;
  }
  /* D spans the null space of the first two rows (oriented as the generator's dir); A
   * solves m1.X = u - p1, m2.X = v - p2, D.X = D.ref */
  double d[3], inv[9];
  cross3(P + 4, P, d);
  double n = norm3(d);
  for (int i = 0; i < 3; i++) d[i] /= n;
  inv3(P, P + 4, d, inv);
  double dr = dot3(d, ref);
  for (int i = 0; i < 3; i++) {
    Qa[3 * i + 0] = inv[3 * i + 0];
    Qa[3 * i + 1] = inv[3 * i + 1];
    Qa[3 * i + 2] = -(inv[3 * i + 0] * P[3] + inv[3 * i + 1] * P[7]) + inv[3 * i + 2] * dr;
    Qd[3 * i + 0] = Qd[3 * i + 1] = 0;
    Qd[3 * i + 2] = d[i];
  }
  *depth_ref = 0;
}

void tl_ct_ray_from_basis(TlCtBeam beam, const double Qa[9], const double Qd[9], double w,
                          double u, double v, double origin[3], double dir[3]) {
  for (int i = 0; i < 3; i++) {
    origin[i] = Qa[3 * i] * u + Qa[3 * i + 1] * v + Qa[3 * i + 2];
    dir[i] = Qd[3 * i] * u + Qd[3 * i + 1] * v + Qd[3 * i + 2];
  }
  double n = norm3(dir);
  for (int i = 0; i < 3; i++) {
    dir[i] /= n;
    /* cone: report the source as the ray's origin (t >= 0 is the physical ray) */
    if (beam == TL_CT_CONE) origin[i] -= w * n * dir[i];
  }
}

void tl_ct_geometry_ray(const TlCtGeometry *g, guint view, double u, double v, double origin[3],
                        double dir[3]) {
  static const double zero[3] = {0, 0, 0};
  double Qa[9], Qd[9], w;
  tl_ct_geometry_ray_basis(g, view, zero, Qa, Qd, &w);
  tl_ct_ray_from_basis(g->beam, Qa, Qd, w, u, v, origin, dir);
}

double tl_ct_geometry_project(const TlCtGeometry *g, guint view, const double x[3], double *u,
                              double *v) {
  const double *P = tl_ct_geometry_matrix(g, view);
  double w = dot3(P + 8, x) + P[11];
  *u = (dot3(P, x) + P[3]) / w;
  *v = (dot3(P + 4, x) + P[7]) / w;
  return w;
}

void tl_ct_geometry_scales(const TlCtGeometry *g, guint view, double *f_u, double *depth_origin) {
  const double *P = tl_ct_geometry_matrix(g, view);
  double r3[3], r2[3], r1[3];
  if (g->beam == TL_CT_CONE) {
    memcpy(r3, P + 8, sizeof r3);
  } else {
    cross3(P + 4, P, r3);
    double n = norm3(r3);
    for (int i = 0; i < 3; i++) r3[i] /= n;
  }
  /* P's rows are K R with K upper triangular: strip the principal-ray and v components
   * from the first row and what is left is f_u times the detector's u axis. */
  double a = dot3(P + 4, r3);
  for (int i = 0; i < 3; i++) r2[i] = P[4 + i] - a * r3[i];
  double n2 = norm3(r2);
  for (int i = 0; i < 3; i++) r2[i] /= n2;
  double b3 = dot3(P, r3), b2 = dot3(P, r2);
  for (int i = 0; i < 3; i++) r1[i] = P[i] - b3 * r3[i] - b2 * r2[i];
  *f_u = norm3(r1);
  *depth_origin = g->beam == TL_CT_CONE ? P[11] : 1.0;
}
