/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PET projectors on the device: adjointness, analytic and numerical line integrals, agreement
 * with the C reference in pet-ref.c, atomic vs compare-and-swap scatter, the fused EM step,
 * the log-likelihood sum, the sensitivity image's pair iteration, and bad input. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/project/tl-projector.h"

static TlContext *ctx;
static const char *const kinds[] = {"siddon", "joseph"};

typedef struct {
  float p0[3], p1[3];
} Lor;

static TlRefKind ref_kind(const char *name) {
  return g_str_equal(name, "siddon") ? TL_REF_SIDDON : TL_REF_JOSEPH;
}

/* 20 x 16 x 12 voxels of 2 x 2 x 2.5 mm: corners at exact binary values (x in [-20, 20],
 * y in [-16, 16], z in [-15, 15]) so rays through corners and faces are exact. */
static TlImageGrid grid_small(void) { return fx_grid(20, 16, 12, 2.0f, 2.0f, 2.5f); }

static void set_lor(Lor *l, const double c[3], const double u[3], double h0, double h1) {
  for (int k = 0; k < 3; k++) {
    l->p0[k] = (float)(c[k] - h0 * u[k]);
    l->p1[k] = (float)(c[k] + h1 * u[k]);
  }
}

/* n LORs: most between random points of a sphere of radius 45 mm around the image (many miss
 * it), then axis-parallel ones (inside, on voxel planes, on the lower and upper faces,
 * outside), ones through voxel corners, short ones ending inside the image and zero-length. */
static GArray *make_lors(const TlImageGrid *g, guint n, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  GArray *a = g_array_sized_new(FALSE, TRUE, sizeof(Lor), n);
  g_array_set_size(a, n);
  double lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = g->origin_mm[k] - 0.5 * g->voxel_mm[k];
    hi[k] = lo[k] + g->dims[k] * g->voxel_mm[k];
  }
  for (guint i = 0; i < n; i++) {
    Lor *l = &g_array_index(a, Lor, i);
    double c[3] = {0}, u[3], v[3];
    guint kind = i % 10;
    if (kind < 6) { /* chords of the sphere */
      fx_random_unit(r, u);
      fx_random_unit(r, v);
      for (int k = 0; k < 3; k++) {
        l->p0[k] = (float)(45 * u[k]);
        l->p1[k] = (float)(45 * v[k]);
      }
    } else if (kind == 6) { /* axis-parallel */
      int ax = g_rand_int_range(r, 0, 3);
      for (int k = 0; k < 3; k++) {
        guint pick = g_rand_int_range(r, 0, 5);
        double plane = lo[k] + g_rand_int_range(r, 0, g->dims[k] + 1) * g->voxel_mm[k];
        c[k] = pick == 0 ? plane : pick == 1 ? lo[k] : pick == 2 ? hi[k]
             : pick == 3 ? hi[k] + 1 : g_rand_double_range(r, lo[k], hi[k]);
      }
      u[0] = u[1] = u[2] = 0;
      u[ax] = g_rand_boolean(r) ? 1 : -1;
      c[ax] = 0;
      set_lor(l, c, u, 40, 40);
    } else if (kind == 7) { /* through a voxel corner */
      for (int k = 0; k < 3; k++) c[k] = lo[k] + g_rand_int_range(r, 0, g->dims[k] + 1) * g->voxel_mm[k];
      fx_random_unit(r, u);
      set_lor(l, c, u, 60, 60);
    } else if (kind == 8) { /* ending inside the image */
      for (int k = 0; k < 3; k++) c[k] = g_rand_double_range(r, lo[k], hi[k]);
      fx_random_unit(r, u);
      set_lor(l, c, u, g_rand_double_range(r, 0, 10), g_rand_double_range(r, 0, 10));
    } else if (i % 20 == 9) { /* zero length */
      for (int k = 0; k < 3; k++) l->p0[k] = l->p1[k] = (float)g_rand_double_range(r, lo[k], hi[k]);
    } else { /* diagonal through the centre region */
      for (int k = 0; k < 3; k++) c[k] = g_rand_double_range(r, -2, 2);
      fx_random_unit(r, u);
      set_lor(l, c, u, 50, 50);
    }
  }
  return a;
}

static TlLors lors_endpoints(TlArray *records) {
  return (TlLors){.kind = TL_LORS_END_POINTS, .records = records, .count = tl_array_length(records)};
}

/* y = A x and z = A^T w on the device, downloaded. */
static void project(TlProjector *p, const TlLors *lors, const float *x, const float *w,
                    float **y, float **z) {
  GError *error = NULL;
  guint64 nv = fx_voxels(tl_projector_grid(p));
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, lors->count, &error);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, lors->count, 4);
  g_autoptr(TlArray) dz = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  tl_stream_set_submit_budget(s, 1 << 22); /* several submissions per call */
  g_assert_true(tl_array_zero(dz, &error));
  g_assert_true(tl_projector_forward(p, s, lors, dx, dy, &error));
  g_assert_true(tl_projector_back(p, s, lors, dw, dz, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  *y = fx_download(dy);
  *z = fx_download(dz);
}

/* <A x, y> = <x, A^T y> for random x, y: 10^5 end-point LORs and 2 * 10^4 crystal pairs. */
static void test_adjoint(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = fx_random_floats(nv, 1, 0, 1);

  g_autoptr(GArray) lors = make_lors(&g, 100000, 2);
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, lors->len, sizeof(Lor));
  TlLors l = lors_endpoints(rec);
  g_autofree float *w = fx_random_floats(lors->len, 3, 0, 1);
  g_autofree float *y = NULL, *z = NULL;
  project(p, &l, x, w, &y, &z);
  double ax_w = fx_dot(y, w, lors->len), x_atw = fx_dot(x, z, nv);
  g_test_message("%s end points: <Ax,w> = %.9g, <x,A^T w> = %.9g", (char *)name, ax_w, x_atw);
  g_assert_cmpfloat(fabs(ax_w - x_atw), <=, 1e-5 * fabs(ax_w));
  guint hits = 0;
  for (guint i = 0; i < lors->len; i++) hits += y[i] != 0;
  g_assert_cmpuint(hits, >, lors->len / 4);
  g_assert_cmpuint(hits, <, lors->len); /* some miss */

  /* crystal pairs of a ring around the image, any pair (a == b gives a zero-length LOR) */
  TlScanner *sc = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(GRand) r = g_rand_new_with_seed(4);
  guint ne = 20000;
  g_autofree TlEvent *ev = g_new0(TlEvent, ne);
  for (guint i = 0; i < ne; i++) {
    ev[i].a = g_rand_int_range(r, 0, sc->n_crystals);
    ev[i].b = g_rand_int_range(r, 0, sc->n_crystals);
  }
  g_autoptr(TlArray) erec = fx_upload(ctx, ev, ne, sizeof(TlEvent));
  TlLors le = {.kind = TL_LORS_EVENTS, .records = erec, .crystals = cry, .count = ne};
  g_autofree float *y2 = NULL, *z2 = NULL;
  project(p, &le, x, w, &y2, &z2);
  ax_w = fx_dot(y2, w, ne);
  x_atw = fx_dot(x, z2, nv);
  g_test_message("%s crystal pairs: <Ax,w> = %.9g, <x,A^T w> = %.9g", (char *)name, ax_w, x_atw);
  g_assert_cmpfloat(fabs(ax_w - x_atw), <=, 1e-5 * fabs(ax_w));
  fx_scanner_free(sc);
}

/* Device forward and back projection equal the C reference within 1e-5 of the largest value. */
static void test_reference(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = fx_random_floats(nv, 5, 0, 1);
  g_autoptr(GArray) lors = make_lors(&g, 100000, 6);
  g_autofree float *w = fx_random_floats(lors->len, 7, 0, 1);
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, lors->len, sizeof(Lor));
  TlLors l = lors_endpoints(rec);
  g_autofree float *y = NULL, *z = NULL;
  project(p, &l, x, w, &y, &z);

  g_autofree double *ry = g_new0(double, lors->len);
  g_autofree double *rz = g_new0(double, nv);
  for (guint i = 0; i < lors->len; i++) {
    const Lor *o = &g_array_index(lors, Lor, i);
    double p0[3] = {o->p0[0], o->p0[1], o->p0[2]}, p1[3] = {o->p1[0], o->p1[1], o->p1[2]};
    ry[i] = tl_ref_forward(ref_kind(name), &g, p0, p1, x);
    tl_ref_back(ref_kind(name), &g, p0, p1, w[i], rz);
  }
  double ey = 0, ez = 0;
  guint worst = 0;
  for (guint i = 0; i < lors->len; i++)
    if (fabs(y[i] - ry[i]) > ey) ey = fabs(y[i] - ry[i]), worst = i;
  for (guint64 i = 0; i < nv; i++) ez = MAX(ez, fabs(z[i] - rz[i]));
  g_test_message("%s: forward max error %.3g of %.3g (LOR %u: %.7g vs %.7g), back %.3g of %.3g",
                 (char *)name, ey, fx_max_abs(ry, lors->len), worst, y[worst], ry[worst], ez,
                 fx_max_abs(rz, nv));
  const Lor *wl = &g_array_index(lors, Lor, worst);
  g_test_message("worst LOR %.9g %.9g %.9g %.9g %.9g %.9g", wl->p0[0], wl->p0[1], wl->p0[2],
                 wl->p1[0], wl->p1[1], wl->p1[2]);
  g_assert_cmpfloat(ey, <=, 1e-5 * fx_max_abs(ry, lors->len));
  g_assert_cmpfloat(ez, <=, 1e-5 * fx_max_abs(rz, nv));
}

/* The analytic chord of a line through an axis-aligned box (slab method), mm. */
static double chord(const double p0[3], const double p1[3], const double lo[3], const double hi[3]) {
  double t0 = 0, t1 = 1, len = 0;
  for (int k = 0; k < 3; k++) {
    double d = p1[k] - p0[k];
    len += d * d;
    if (d == 0) {
      if (p0[k] < lo[k] || p0[k] > hi[k]) return 0;
      continue;
    }
    double a = (lo[k] - p0[k]) / d, b = (hi[k] - p0[k]) / d;
    t0 = MAX(t0, MIN(a, b));
    t1 = MIN(t1, MAX(a, b));
  }
  return t1 > t0 ? (t1 - t0) * sqrt(len) : 0;
}

/* Siddon of a uniform box of value 3 equals 3 x the analytic chord through the box. */
static void test_siddon_box(void) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = g_new0(float, nv);
  const guint b0[3] = {3, 2, 1}, b1[3] = {17, 13, 10}; /* voxel ranges [b0, b1) */
  double lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    double corner = g.origin_mm[k] - 0.5 * g.voxel_mm[k];
    lo[k] = corner + b0[k] * g.voxel_mm[k];
    hi[k] = corner + b1[k] * g.voxel_mm[k];
  }
  for (guint k = b0[2]; k < b1[2]; k++)
    for (guint j = b0[1]; j < b1[1]; j++)
      for (guint i = b0[0]; i < b1[0]; i++) x[i + g.dims[0] * (j + g.dims[1] * k)] = 3.0f;
  g_autoptr(GArray) lors = make_lors(&g, 20000, 8);
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, lors->len, sizeof(Lor));
  TlLors l = lors_endpoints(rec);
  g_autofree float *w = fx_random_floats(lors->len, 9, 0, 1);
  g_autofree float *y = NULL, *z = NULL;
  project(p, &l, x, w, &y, &z);
  /* float32 resolves the ray parameter of a 120 mm LOR to ~1e-5 mm, so a chord of a few
   * micrometres (a line grazing an edge) cannot be right to 1e-5 of itself: the error is
   * measured against the longest chord, and per LOR for chords over a tenth of that. */
  g_autofree double *want = g_new(double, lors->len);
  double longest = 0, worst = 0, worst_long = 0;
  guint n_axis = 0;
  for (guint i = 0; i < lors->len; i++) {
    const Lor *o = &g_array_index(lors, Lor, i);
    double p0[3] = {o->p0[0], o->p0[1], o->p0[2]}, p1[3] = {o->p1[0], o->p1[1], o->p1[2]};
    /* a line exactly in the box's upper face lies outside the half-open voxels */
    gboolean on_upper = FALSE;
    for (int k = 0; k < 3; k++) on_upper |= p0[k] == p1[k] && p0[k] == hi[k];
    want[i] = on_upper ? 0 : 3.0 * chord(p0, p1, lo, hi);
    longest = MAX(longest, want[i]);
    n_axis += (o->p0[0] == o->p1[0]) + (o->p0[1] == o->p1[1]) + (o->p0[2] == o->p1[2]) >= 2 && want[i] > 0;
  }
  for (guint i = 0; i < lors->len; i++) {
    double e = fabs(y[i] - want[i]);
    worst = MAX(worst, e / longest);
    if (want[i] > 0.1 * longest) worst_long = MAX(worst_long, e / want[i]);
  }
  g_test_message("error %.3g of the longest chord x value (%.2f), %.3g per LOR over a tenth of "
                 "it; %u axis-parallel hits", worst, longest, worst_long, n_axis);
  g_assert_cmpuint(n_axis, >, 100);
  g_assert_cmpfloat(worst, <=, 1e-5);
  g_assert_cmpfloat(worst_long, <=, 1e-5);
}

/* Joseph of a smooth image (a Gaussian sampled at voxel centres) equals a fine numerical line
 * integral of the Gaussian: composite Simpson with 0.02 mm steps. Bilinear interpolation errs
 * by about h^2/12 |g_uu + g_vv| on average, i.e. h^2/(6 sigma^2) relative on lines within
 * 1.5 sigma of the centre: 6.5e-4 for h = 1 mm, sigma = 16 mm. */
static void test_joseph_smooth(void) {
  GError *error = NULL;
  TlImageGrid g = fx_grid(128, 128, 128, 1.0f, 1.0f, 1.0f);
  const double sigma = 16.0;
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", &g, &error);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = g_new(float, nv);
  for (guint k = 0; k < 128; k++)
    for (guint j = 0; j < 128; j++)
      for (guint i = 0; i < 128; i++) {
        double px = g.origin_mm[0] + i, py = g.origin_mm[1] + j, pz = g.origin_mm[2] + k;
        x[i + 128 * (j + 128 * k)] = (float)exp(-(px * px + py * py + pz * pz) / (2 * sigma * sigma));
      }
  guint n = 200;
  g_autoptr(GArray) lors = g_array_sized_new(FALSE, TRUE, sizeof(Lor), n);
  g_array_set_size(lors, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(10);
  for (guint i = 0; i < n; i++) {
    double c[3], u[3];
    for (int k = 0; k < 3; k++) c[k] = g_rand_double_range(r, -1.5 * sigma / sqrt(3), 1.5 * sigma / sqrt(3));
    fx_random_unit(r, u);
    set_lor(&g_array_index(lors, Lor, i), c, u, 200, 200);
  }
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, n, sizeof(Lor));
  TlLors l = lors_endpoints(rec);
  g_autofree float *w = fx_random_floats(n, 11, 0, 1);
  g_autofree float *y = NULL, *z = NULL;
  project(p, &l, x, w, &y, &z);
  double lo[3] = {-64, -64, -64}, hi[3] = {64, 64, 64}, worst = 0;
  for (guint i = 0; i < n; i++) {
    const Lor *o = &g_array_index(lors, Lor, i);
    double p0[3] = {o->p0[0], o->p0[1], o->p0[2]}, d[3], len = 0;
    for (int k = 0; k < 3; k++) {
      d[k] = o->p1[k] - o->p0[k];
      len += d[k] * d[k];
    }
    len = sqrt(len);
    /* Simpson over the part of the line inside the image */
    double t0 = 0, t1 = 1;
    for (int k = 0; k < 3; k++) {
      double a = (lo[k] - p0[k]) / d[k], b = (hi[k] - p0[k]) / d[k];
      t0 = MAX(t0, MIN(a, b));
      t1 = MIN(t1, MAX(a, b));
    }
    guint steps = 2 * (guint)ceil((t1 - t0) * len / 0.04);
    double h = (t1 - t0) / steps, sum = 0;
    for (guint s = 0; s <= steps; s++) {
      double t = t0 + s * h, q = 0;
      for (int k = 0; k < 3; k++) q += (p0[k] + t * d[k]) * (p0[k] + t * d[k]);
      sum += (s == 0 || s == steps ? 1 : s % 2 ? 4 : 2) * exp(-q / (2 * sigma * sigma));
    }
    double want = sum * h / 3 * len;
    worst = MAX(worst, fabs(y[i] - want) / want);
  }
  g_test_message("joseph vs numerical line integral: worst relative error %.3g", worst);
  g_assert_cmpfloat(worst, <=, 1e-3);
}

static float *back_with(TlProjector *p, TlScatter mode, const TlLors *l, const TlArray *w,
                        const TlArray *img, gboolean em) {
  GError *error = NULL;
  tl_projector_set_scatter(p, mode);
  g_autoptr(TlArray) out = tl_array_new_float(ctx, fx_voxels(tl_projector_grid(p)), &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(out, &error));
  if (em)
    g_assert_true(tl_projector_em(p, s, l, img, out, &error));
  else
    g_assert_true(tl_projector_back(p, s, l, w, out, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(out);
}

static double rel_diff(const float *a, const float *b, guint64 n) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < n; i++) {
    m = MAX(m, fabs(a[i]));
    d = MAX(d, fabs(a[i] - b[i]));
  }
  return m > 0 ? d / m : d;
}

/* Float atomic add, CAS chosen by specialization constant, and CAS in the kernel built without
 * the float-atomic capability give the same back projection and EM correction (<= 1e-5). */
static void test_scatter_modes(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_true(tl_context_info(ctx)->float32_atomic_add); /* lavapipe has it: all three run */
  guint64 nv = fx_voxels(&g);
  g_autoptr(GArray) lors = make_lors(&g, 30000, 12);
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, lors->len, sizeof(Lor));
  TlLors l = lors_endpoints(rec);
  g_autofree float *w = fx_random_floats(lors->len, 13, 0, 1), *x = fx_random_floats(nv, 14, 0, 1);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, lors->len, 4);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  for (int em = 0; em < 2; em++) {
    g_autofree float *fa = back_with(p, TL_SCATTER_FLOAT_ATOMIC, &l, dw, dx, em);
    g_autofree float *cas = back_with(p, TL_SCATTER_CAS, &l, dw, dx, em);
    g_autofree float *port = back_with(p, TL_SCATTER_CAS_PORTABLE, &l, dw, dx, em);
    double d1 = rel_diff(fa, cas, nv), d2 = rel_diff(fa, port, nv);
    g_test_message("%s %s: atomic vs CAS %.3g, vs portable CAS %.3g", (char *)name,
                   em ? "em" : "back", d1, d2);
    g_assert_cmpfloat(d1, <=, 1e-5);
    g_assert_cmpfloat(d2, <=, 1e-5);
  }
}

/* The fused EM kernel and the log-likelihood sum against the reference: for bins with counts
 * m_j, corr_n = sum_j a_jn m_j / (A x)_j over (A x)_j > 0, and sum_j m_j log (A x)_j. */
static void test_em_reference(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = fx_random_floats(nv, 15, 0, 1);
  for (guint64 i = 0; i < nv; i += 3) x[i] = 0; /* some zero voxels */
  TlScanner *sc = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(GRand) r = g_rand_new_with_seed(16);
  guint nb = 20000;
  g_autofree TlBin *bins = g_new0(TlBin, nb);
  for (guint i = 0; i < nb; i++) {
    bins[i].a = g_rand_int_range(r, 0, sc->n_crystals);
    bins[i].b = g_rand_int_range(r, 0, sc->n_crystals);
    bins[i].count = (float)g_rand_int_range(r, 0, 5);
  }
  g_autoptr(TlArray) rec = fx_upload(ctx, bins, nb, sizeof(TlBin));
  TlLors l = {.kind = TL_LORS_BINS, .records = rec, .crystals = cry, .first = 100, .count = nb - 200};
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autofree float *corr = back_with(p, TL_SCATTER_AUTO, &l, NULL, dx, TRUE);
  double ll = 0;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_projector_loglik(p, s, &l, dx, &ll, &error));
  g_assert_no_error(error);

  g_autofree double *rc = g_new0(double, nv);
  double rll = 0;
  for (guint i = l.first; i < l.first + l.count; i++) {
    const float *a = sc->crystals[bins[i].a].centre, *b = sc->crystals[bins[i].b].centre;
    double p0[3] = {a[0], a[1], a[2]}, p1[3] = {b[0], b[1], b[2]};
    double f = tl_ref_forward(ref_kind(name), &g, p0, p1, x);
    if (bins[i].count == 0) continue;
    if (!(f > 0)) { /* floored at 1e-30, as the solver's objective */
      rll += bins[i].count * log(1e-30);
      continue;
    }
    rll += bins[i].count * log(f);
    tl_ref_back(ref_kind(name), &g, p0, p1, bins[i].count / f, rc);
  }
  g_autofree float *rcf = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) rcf[i] = (float)rc[i];
  double d = rel_diff(rcf, corr, nv);
  g_test_message("%s: em max error %.3g relative; loglik %.9g vs %.9g", (char *)name, d, ll, rll);
  g_assert_cmpfloat(d, <=, 1e-5);
  g_assert_cmpfloat(fabs(ll - rll), <=, 1e-5 * fabs(rll));
  fx_scanner_free(sc);
}

typedef struct {
  double *image;
} SensData;

/* The sensitivity image iterates every crystal pair on the device, decoding pair indices and
 * applying the pair rule there: it equals the back projection of the host's list of allowed
 * pairs, and the subset images (p mod 3) add up to it. */
static void test_sensitivity(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  guint64 nv = fx_voxels(&g);
  TlScanner *sc = fx_ring_scanner(3, 7, 3, 5.0f, 40.0f, 12.0f, 1); /* 63 crystals: odd n */
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlArray) sens = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) sub = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(sens, &error) && tl_array_zero(sub, &error));
  g_assert_true(tl_projector_sensitivity(p, s, sc, cry, 1, 0, sens, &error));
  for (guint k = 0; k < 3; k++) g_assert_true(tl_projector_sensitivity(p, s, sc, cry, 3, k, sub, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_autofree float *ds = fx_download(sens), *dsub = fx_download(sub);

  g_autofree double *ref = g_new0(double, nv);
  guint allowed = 0;
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!fx_pair_allowed(sc, a, b)) continue;
      allowed++;
      const float *ca = sc->crystals[a].centre, *cb = sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      tl_ref_back(ref_kind(name), &g, p0, p1, 1.0, ref);
    }
  g_autofree float *rf = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) rf[i] = (float)ref[i];
  double d = rel_diff(rf, ds, nv), d3 = rel_diff(ds, dsub, nv);
  g_test_message("%s: %u allowed pairs; sensitivity vs reference %.3g, subsets sum %.3g",
                 (char *)name, allowed, d, d3);
  g_assert_cmpuint(allowed, >, 1000);
  g_assert_cmpfloat(d, <=, 1e-5);
  g_assert_cmpfloat(d3, <=, 1e-5);
  fx_scanner_free(sc);
}

/* Pair numbering: a bijection between p < n(n-1)/2 and unordered pairs, odd and even n. */
static void test_pair_index(void) {
  for (guint n = 2; n <= 9; n++) {
    guint64 np = tl_pair_count(n);
    g_assert_cmpuint(np, ==, n * (n - 1) / 2);
    g_autofree gboolean *seen = g_new0(gboolean, n * n);
    for (guint64 q = 0; q < np; q++) {
      guint a, b;
      tl_pair_decode(n, q, &a, &b);
      g_assert_cmpuint(a, !=, b);
      g_assert_false(seen[MIN(a, b) * n + MAX(a, b)]);
      seen[MIN(a, b) * n + MAX(a, b)] = TRUE;
      g_assert_cmpuint(tl_pair_index(n, a, b), ==, q);
      g_assert_cmpuint(tl_pair_index(n, b, a), ==, q);
    }
  }
}

static void test_bad_input(void) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  TlProjector *bad = tl_projector_new(ctx, "tomosynthesis", &g, &error);
  g_assert_null(bad);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "tomosynthesis"));
  g_clear_error(&error);
  TlImageGrid zero = g;
  zero.dims[1] = 0;
  g_assert_null(tl_projector_new(ctx, "siddon", &zero, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);

  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", &g, &error);
  g_autoptr(TlArray) small = tl_array_new_float(ctx, 10, &error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlArray) rec = tl_array_new(ctx, 5, 24, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  TlLors l = {.kind = TL_LORS_END_POINTS, .records = rec, .count = 5};
  g_assert_false(tl_projector_forward(p, s, &l, small, img, &error)); /* image too small */
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  l.first = 3; /* range beyond the records */
  g_assert_false(tl_projector_back(p, s, &l, NULL, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  l = (TlLors){.kind = TL_LORS_EVENTS, .records = rec, .count = 5}; /* 24-byte records, no crystals */
  g_assert_false(tl_projector_em(p, s, &l, img, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(s, &error));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
    char path[128];
    g_snprintf(path, sizeof path, "/pet/projector/adjoint/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_adjoint);
    g_snprintf(path, sizeof path, "/pet/projector/reference/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_reference);
    g_snprintf(path, sizeof path, "/pet/projector/scatter-modes/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_scatter_modes);
    g_snprintf(path, sizeof path, "/pet/projector/em-loglik/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_em_reference);
    g_snprintf(path, sizeof path, "/pet/projector/sensitivity/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_sensitivity);
  }
  g_test_add_func("/pet/projector/siddon-box", test_siddon_box);
  g_test_add_func("/pet/projector/joseph-smooth", test_joseph_smooth);
  g_test_add_func("/pet/projector/pair-index", test_pair_index);
  g_test_add_func("/pet/projector/bad-input", test_bad_input);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
