/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The tube-of-response projector ("tor", shaders/pet/pet_tor.glsl): adjointness, agreement with
 * the closed-form C reference of pet-ref.c (with and without TOF), width 0 = Joseph, the
 * distance to Joseph shrinking with the width, a uniform image projecting as with Joseph (each
 * plane's weights keep the hat's sum), and bad widths. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "pet/project/tl-projector.h"
#include "pet/tl-recon.h"

static TlContext *ctx;

typedef struct {
  float p0[3], p1[3];
} Lor;

/* 24 x 20 x 16 voxels of 2 mm (48 x 40 x 32 mm). */
static TlImageGrid grid_iso(void) { return fx_grid(24, 20, 16, 2.0f, 2.0f, 2.0f); }

/* n LORs: chords between random points of a sphere of radius 45 mm (many miss the image or
 * graze it, where the tube reaches voxels the line misses), lines through the central region,
 * axis-parallel ones, short ones ending inside and zero-length ones. */
static GArray *make_lors(guint n, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  GArray *a = g_array_sized_new(FALSE, TRUE, sizeof(Lor), n);
  g_array_set_size(a, n);
  for (guint i = 0; i < n; i++) {
    Lor *l = &g_array_index(a, Lor, i);
    double c[3], u[3], v[3], h0 = 50, h1 = 50;
    for (int k = 0; k < 3; k++) c[k] = g_rand_double_range(r, -12, 12);
    fx_random_unit(r, u);
    switch (i % 8) {
    case 0: case 1: case 2: case 3: /* sphere chords */
      fx_random_unit(r, v);
      for (int k = 0; k < 3; k++) c[k] = 0, u[k] = v[k];
      fx_random_unit(r, v);
      for (int k = 0; k < 3; k++) l->p0[k] = (float)(45 * u[k]), l->p1[k] = (float)(45 * v[k]);
      continue;
    case 4: /* axis-parallel */
      u[0] = u[1] = u[2] = 0;
      u[g_rand_int_range(r, 0, 3)] = g_rand_boolean(r) ? 1 : -1;
      break;
    case 5: /* ending inside */
      h0 = g_rand_double_range(r, 0, 10);
      h1 = g_rand_double_range(r, 0, 10);
      break;
    case 6:
      if (i % 16 == 6) h0 = h1 = 0; /* zero length */
      break;
    default: break;
    }
    for (int k = 0; k < 3; k++) {
      l->p0[k] = (float)(c[k] - h0 * u[k]);
      l->p1[k] = (float)(c[k] + h1 * u[k]);
    }
  }
  return a;
}

static TlProjector *tor(const TlImageGrid *g, double fwhm) {
  GError *error = NULL;
  TlProjectorParams pp = {.tor_fwhm_mm = fwhm};
  TlProjector *p = tl_projector_new_with(ctx, "tor", g, &pp, &error);
  g_assert_no_error(error);
  return p;
}

/* y = A x and (when w) z = A^T w over end-point LORs, downloaded. */
static void project(TlProjector *p, GArray *lors, const float *x, const float *w, float **y,
                    float **z) {
  GError *error = NULL;
  guint64 nv = fx_voxels(tl_projector_grid(p));
  g_autoptr(TlArray) rec = fx_upload(ctx, lors->data, lors->len, sizeof(Lor));
  TlLors l = {.kind = TL_LORS_END_POINTS, .records = rec, .count = lors->len};
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, lors->len, &error);
  g_autoptr(TlArray) dz = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) dw = w ? fx_upload(ctx, w, lors->len, 4) : NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  tl_stream_set_submit_budget(s, 1 << 22);
  g_assert_true(tl_array_zero(dz, &error));
  g_assert_true(tl_projector_forward(p, s, &l, dx, dy, &error));
  if (w) g_assert_true(tl_projector_back(p, s, &l, dw, dz, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  *y = fx_download(dy);
  if (z) *z = fx_download(dz);
}

/* <A x, w> = <x, A^T w> within 1e-5 for 5 * 10^4 LORs, widths 2 and 5 mm. */
static void test_adjoint(void) {
  TlImageGrid g = grid_iso();
  guint64 nv = fx_voxels(&g);
  g_autoptr(GArray) lors = make_lors(50000, 1);
  g_autofree float *x = fx_random_floats(nv, 2, 0, 1), *w = fx_random_floats(lors->len, 3, 0, 1);
  const double widths[] = {2.0, 5.0};
  for (guint i = 0; i < G_N_ELEMENTS(widths); i++) {
    g_autoptr(TlProjector) p = tor(&g, widths[i]);
    g_autofree float *y = NULL, *z = NULL;
    project(p, lors, x, w, &y, &z);
    double ax_w = fx_dot(y, w, lors->len), x_atw = fx_dot(x, z, nv);
    g_test_message("tor %g mm: <Ax,w> = %.9g, <x,A^T w> = %.9g", widths[i], ax_w, x_atw);
    g_assert_cmpfloat(fabs(ax_w - x_atw), <=, 1e-5 * fabs(ax_w));
  }
}

/* Device forward and back projection of 2 * 10^4 end-point LORs against the reference at
 * FWHM `width`: the largest errors relative to the largest reference values. */
static void reference_errors(const TlImageGrid *g, double width, double *ey, double *ez) {
  guint64 nv = fx_voxels(g);
  g_autoptr(GArray) lors = make_lors(20000, 4);
  g_autofree float *x = fx_random_floats(nv, 5, 0, 1), *w = fx_random_floats(lors->len, 6, 0, 1);
  g_autoptr(TlProjector) p = tor(g, width);
  g_autofree float *y = NULL, *z = NULL;
  project(p, lors, x, w, &y, &z);
  TlRefModel m = {.kind = TL_REF_TOR, .tor_fwhm_mm = width};
  g_autofree double *ry = g_new0(double, lors->len), *rz = g_new0(double, nv);
  for (guint j = 0; j < lors->len; j++) {
    const Lor *o = &g_array_index(lors, Lor, j);
    double p0[3] = {o->p0[0], o->p0[1], o->p0[2]}, p1[3] = {o->p1[0], o->p1[1], o->p1[2]};
    ry[j] = tl_ref_forward_model(&m, g, p0, p1, x);
    tl_ref_back_model(&m, g, p0, p1, w[j], rz);
  }
  *ey = *ez = 0;
  for (guint j = 0; j < lors->len; j++) *ey = MAX(*ey, fabs(y[j] - ry[j]));
  for (guint64 n = 0; n < nv; n++) *ez = MAX(*ez, fabs(z[n] - rz[n]));
  g_test_message("tor %g mm on %gx%gx%g mm voxels: forward error %.3g of %.3g, back %.3g of %.3g",
                 width, g->voxel_mm[0], g->voxel_mm[1], g->voxel_mm[2], *ey,
                 fx_max_abs(ry, lors->len), *ez, fx_max_abs(rz, nv));
  *ey /= fx_max_abs(ry, lors->len);
  *ez /= fx_max_abs(rz, nv);
}

/* Device forward and back projection equal the reference within 1e-5 of the largest value:
 * end-point LORs at widths 1, 2.5 and 6 mm, then list-mode events with TOF (the TOF weight at
 * each plane's sample). */
static void test_reference(void) {
  GError *error = NULL;
  TlImageGrid g = grid_iso();
  guint64 nv = fx_voxels(&g);
  const double widths[] = {1.0, 2.5, 6.0};
  for (guint i = 0; i < G_N_ELEMENTS(widths); i++) {
    double ey, ez;
    reference_errors(&g, widths[i], &ey, &ez);
    g_assert_cmpfloat(ey, <=, 1e-5);
    g_assert_cmpfloat(ez, <=, 1e-5);
  }
  g_autofree float *x = fx_random_floats(nv, 5, 0, 1);

  /* TOF events: an octagon ring of radius 40 mm, 25 bins of 8 mm, sigma 8 mm */
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  sc->tof_bins = 25;
  sc->tof_bin_mm = 8;
  sc->tof_fwhm_ps = (float)(8.0 * 2 * sqrt(2 * G_LN2) * 2 / 0.299792458);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  guint ne = 10000;
  g_autoptr(GRand) r = g_rand_new_with_seed(7);
  g_autofree TlEvent *ev = g_new(TlEvent, ne);
  for (guint i = 0; i < ne; i++)
    ev[i] = (TlEvent){g_rand_int_range(r, 0, sc->n_crystals),
                      g_rand_int_range(r, 0, sc->n_crystals), g_rand_int_range(r, -5, 6)};
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, ne, sizeof(TlEvent));
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, ne, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlProjector) p = tor(&g, 3.0);
  TlLors l = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = ne, .tof = &tof};
  g_assert_true(tl_projector_forward(p, s, &l, dx, dy, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_autofree float *y = fx_download(dy);
  g_autofree double *ry = g_new(double, ne);
  for (guint i = 0; i < ne; i++) {
    const float *a = sc->crystals[ev[i].a].centre, *b = sc->crystals[ev[i].b].centre;
    double p0[3] = {a[0], a[1], a[2]}, p1[3] = {b[0], b[1], b[2]};
    TlRefTof rt = {tof.sigma_mm, tof.bin_mm, tof.n_sigma, ev[i].tof_bin};
    TlRefModel m = {.kind = TL_REF_TOR, .tor_fwhm_mm = 3.0, .tof = &rt};
    ry[i] = tl_ref_forward_model(&m, &g, p0, p1, x);
  }
  double ey = 0;
  for (guint i = 0; i < ne; i++) ey = MAX(ey, fabs(y[i] - ry[i]));
  g_test_message("tor 3 mm with TOF: forward error %.3g of %.3g", ey, fx_max_abs(ry, ne));
  g_assert_cmpfloat(fx_max_abs(ry, ne), >, 0);
  g_assert_cmpfloat(ey, <=, 1e-5 * fx_max_abs(ry, ne));
}

/* Anisotropic voxels (2 x 2 x 3 mm): the tube's Gaussian is one in the perpendicular distance
 * in mm, so its marginal on a plane has s_u = sigma sqrt(1 + (D_u / D_m)^2) / vox_u with the
 * direction D in mm (the reference). Taking D in voxel units instead was off by 1% of the
 * largest value here, which is what this catches. */
static void test_reference_anisotropic(void) {
  TlImageGrid g = fx_grid(24, 20, 16, 2.0f, 2.0f, 3.0f);
  double ey, ez;
  reference_errors(&g, 2.5, &ey, &ez);
  g_assert_cmpfloat(ey, <=, 1e-5);
  g_assert_cmpfloat(ez, <=, 1e-5);
}

/* Relative distance ||a - b|| / ||b|| (2-norm) and the largest |a - b| over max |b|. */
static double dist2(const float *a, const float *b, guint n, double *dmax) {
  double num = 0, den = 0, m = 0, mb = 0;
  for (guint i = 0; i < n; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)b[i] * b[i];
    m = MAX(m, fabs((double)a[i] - b[i]));
    mb = MAX(mb, fabs(b[i]));
  }
  *dmax = m / mb;
  return sqrt(num / den);
}

/* Width 0 is Joseph (the kernel degenerates to the hat: within 1e-6), and for a random image
 * the distance to Joseph's projection falls strictly as the width goes 4, 2, 1, 0.5 mm. */
static void test_width_to_joseph(void) {
  GError *error = NULL;
  TlImageGrid g = grid_iso();
  guint64 nv = fx_voxels(&g);
  g_autoptr(GArray) lors = make_lors(20000, 8);
  g_autofree float *x = fx_random_floats(nv, 9, 0, 1);
  g_autoptr(TlProjector) jp = tl_projector_new(ctx, "joseph", &g, &error);
  g_assert_no_error(error);
  g_autofree float *yj = NULL;
  project(jp, lors, x, NULL, &yj, NULL);
  const double widths[] = {4.0, 2.0, 1.0, 0.5, 0.0};
  double prev = INFINITY, dmax = 0;
  for (guint i = 0; i < G_N_ELEMENTS(widths); i++) {
    g_autoptr(TlProjector) p = tor(&g, widths[i]);
    g_autofree float *y = NULL;
    project(p, lors, x, NULL, &y, NULL);
    double d = dist2(y, yj, lors->len, &dmax);
    g_test_message("tor %g mm vs joseph: %.3g (2-norm), %.3g (max)", widths[i], d, dmax);
    g_assert_cmpfloat(d, <, prev);
    prev = d;
  }
  g_assert_cmpfloat(dmax, <=, 1e-6); /* width 0 */
  g_assert_cmpfloat(prev, <=, 1e-6);
}

/* A uniform image of 1: lines through the central region within 20 degrees of an axis, ends
 * 100 mm away, so every plane across the image is visited and the tube (FWHM up to 4 mm:
 * 3 sigma + 1 < 4 voxels) stays more than 4 voxels inside the transverse faces. Each plane
 * then sums its weights to len / |d_m| for Joseph and TOR alike: both equal n_m len / |d_m|
 * (d_m in voxels) within 1e-5. */
static void test_uniform(void) {
  GError *error = NULL;
  TlImageGrid g = fx_grid(24, 24, 24, 2.0f, 2.0f, 2.0f);
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) x[i] = 1.0f;
  guint n = 3000;
  g_autoptr(GArray) lors = g_array_sized_new(FALSE, TRUE, sizeof(Lor), n);
  g_array_set_size(lors, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(10);
  g_autofree double *want = g_new(double, n);
  for (guint i = 0; i < n; i++) {
    double c[3], u[3];
    int m = i % 3;
    for (int k = 0; k < 3; k++) c[k] = g_rand_double_range(r, -3, 3);
    do fx_random_unit(r, u); while (fabs(u[m]) < cos(20 * G_PI / 180));
    Lor *l = &g_array_index(lors, Lor, i);
    for (int k = 0; k < 3; k++) {
      l->p0[k] = (float)(c[k] - 100 * u[k]);
      l->p1[k] = (float)(c[k] + 100 * u[k]);
    }
    double len = 0;
    for (int k = 0; k < 3; k++) len += ((double)l->p1[k] - l->p0[k]) * ((double)l->p1[k] - l->p0[k]);
    want[i] = 24 * sqrt(len) / (fabs((double)l->p1[m] - l->p0[m]) / 2.0);
  }
  g_autoptr(TlProjector) jp = tl_projector_new(ctx, "joseph", &g, &error);
  g_assert_no_error(error);
  g_autofree float *yj = NULL;
  project(jp, lors, x, NULL, &yj, NULL);
  const double widths[] = {1.0, 4.0};
  for (guint w = 0; w < G_N_ELEMENTS(widths); w++) {
    g_autoptr(TlProjector) p = tor(&g, widths[w]);
    g_autofree float *y = NULL;
    project(p, lors, x, NULL, &y, NULL);
    double ej = 0, et = 0;
    for (guint i = 0; i < n; i++) {
      ej = MAX(ej, fabs(yj[i] - want[i]) / want[i]);
      et = MAX(et, fabs(y[i] - want[i]) / want[i]);
    }
    g_test_message("uniform image, tor %g mm: relative error %.3g (joseph %.3g)", widths[w], et, ej);
    g_assert_cmpfloat(ej, <=, 1e-5);
    g_assert_cmpfloat(et, <=, 1e-5);
  }
}

/* The reference's kernel itself: (H * G)(x) in closed form equals a direct numerical
 * convolution (midpoint rule, 2 * 10^5 steps over the hat's support) within 1e-9. */
static void test_kernel_closed_form(void) {
  const double sds[] = {0.05, 0.4, 1.3};
  for (guint i = 0; i < G_N_ELEMENTS(sds); i++) {
    double s = sds[i], worst = 0;
    for (double x = -4; x <= 4; x += 0.0625 + 1e-3) {
      guint steps = 200000;
      double h = 2.0 / steps, sum = 0;
      for (guint k = 0; k < steps; k++) {
        double y = -1 + (k + 0.5) * h;
        sum += (1 - fabs(y)) * exp(-0.5 * (x - y) * (x - y) / (s * s));
      }
      sum *= h / (s * sqrt(2 * G_PI));
      worst = MAX(worst, fabs(sum - tl_ref_tor_kernel(x, s)));
    }
    g_test_message("s = %g: closed form vs numerical %.3g", s, worst);
    g_assert_cmpfloat(worst, <=, 1e-9);
  }
  g_assert_cmpfloat(tl_ref_tor_kernel(0.25, 0), ==, 0.75);
}

/* Negative, NaN and infinite widths, and one too wide for the kernel's 32 taps, are refused
 * by the projector and by TlRecon. */
static void test_bad_width(void) {
  GError *error = NULL;
  TlImageGrid g = grid_iso();
  const double bad[] = {-1.0, -1e-9, NAN, INFINITY, 1000.0};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    TlProjectorParams pp = {.tor_fwhm_mm = bad[i]};
    g_assert_null(tl_projector_new_with(ctx, "tor", &g, &pp, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, "FWHM"));
    g_clear_error(&error);
  }
  TlScanner *sc = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  TlEvent ev[2] = {{0, 60, 0}, {5, 80, 0}};
  TlListmode lm = {.scanner = sc, .events = ev, .n_events = 2};
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.use_cache = FALSE;
  o.projector = "tor";
  o.tor_fwhm_mm = -2;
  g_assert_null(tl_recon_new_listmode(ctx, &lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  o.tor_fwhm_mm = 2;
  g_autoptr(TlRecon) ok = tl_recon_new_listmode(ctx, &lm, &g, &o, &error);
  g_assert_no_error(error);
  fx_scanner_free(sc);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/pet/tor/kernel-closed-form", test_kernel_closed_form);
  g_test_add_func("/pet/tor/adjoint", test_adjoint);
  g_test_add_func("/pet/tor/reference", test_reference);
  g_test_add_func("/pet/tor/reference-anisotropic", test_reference_anisotropic);
  g_test_add_func("/pet/tor/width-to-joseph", test_width_to_joseph);
  g_test_add_func("/pet/tor/uniform", test_uniform);
  g_test_add_func("/pet/tor/bad-width", test_bad_width);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
