/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT geometry (no device): generated matrices reproduce the generator's sources and detector
 * pixels, the derived rays and scales, the text file round trip, bad geometry -> GError, and
 * the phantoms' analytic line integrals. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "ct-ref.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-geometry.h"
#include "ct/tl-ct-phantom.h"

static double dist3(const double *a, const double *b) {
  return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
              (a[2] - b[2]) * (a[2] - b[2]));
}

/* Pixels checked per view: corners, centre and an odd one. */
static const double tl_pix[][2] = {{0, 0}, {1, 0}, {0, 1}, {63, 47}, {31.5, 23.5}, {17.25, 40.75}};

static void check_orbit(const TlCtOrbit *o) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(g->n_views, ==, o->n_views);
  for (guint k = 0; k < g->n_views; k++) {
    TlCtViewFrame f;
    tl_ct_orbit_frame(o, k, &f);
    double s[3];
    if (o->beam == TL_CT_CONE) {
      /* the source is the camera centre: P s = 0, and the matrix gives it back */
      g_assert_true(tl_ct_geometry_source(g, k, s));
      g_assert_cmpfloat(dist3(s, f.source), <, 1e-9 * o->sid_mm);
      double u, v;
      double w = tl_ct_geometry_project(g, k, f.source, &u, &v);
      g_assert_cmpfloat(fabs(w), <, 1e-9 * o->sid_mm);
      double fu, depth;
      tl_ct_geometry_scales(g, k, &fu, &depth);
      g_assert_cmpfloat(fabs(fu - o->sdd_mm / o->pixel_u_mm), <, 1e-9 * fu);
      g_assert_cmpfloat(fabs(depth - o->sid_mm), <, 1e-9 * o->sid_mm);
    } else {
      g_assert_false(tl_ct_geometry_source(g, k, s));
    }
    for (gsize i = 0; i < G_N_ELEMENTS(tl_pix); i++) {
      double pu = tl_pix[i][0] * (o->det_u - 1) / 63.0, pv = tl_pix[i][1] * (o->det_v - 1) / 47.0;
      double x[3], u, v, orig[3], dir[3];
      tl_ct_orbit_pixel(o, &f, pu, pv, x);
      /* detector coordinates: the pixel's world position projects onto its indices */
      tl_ct_geometry_project(g, k, x, &u, &v);
      g_assert_cmpfloat(fabs(u - pu), <, 1e-9);
      g_assert_cmpfloat(fabs(v - pv), <, 1e-9);
      /* the matrix' ray through that pixel runs from the source through the pixel */
      tl_ct_geometry_ray(g, k, pu, pv, orig, dir);
      double want[3];
      if (o->beam == TL_CT_CONE) {
        double len = dist3(x, f.source);
        for (int a = 0; a < 3; a++) want[a] = (x[a] - f.source[a]) / len;
        g_assert_cmpfloat(dist3(orig, f.source), <, 1e-9 * o->sid_mm);
      } else {
        memcpy(want, f.dir, sizeof want);
        /* the ray's point lies on the line through the pixel along dir */
        double t = (x[0] - orig[0]) * dir[0] + (x[1] - orig[1]) * dir[1] + (x[2] - orig[2]) * dir[2];
        double on[3] = {orig[0] + t * dir[0], orig[1] + t * dir[1], orig[2] + t * dir[2]};
        g_assert_cmpfloat(dist3(on, x), <, 1e-9);
      }
      g_assert_cmpfloat(dist3(dir, want), <, 1e-12);
    }
  }
}

static void test_orbit_cone(void) {
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 24, 750, 1200, 64, 48, 1.6, 1.2);
  check_orbit(&o);
  /* offsets, a short arc and a start angle */
  o.offset_u_mm = 12.5, o.offset_v_mm = -7.25, o.start_deg = 33, o.arc_deg = 200;
  check_orbit(&o);
}

static void test_orbit_parallel(void) {
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, 30, 64, 48, 0.75, 1.0);
  check_orbit(&o);
  /* 2-D: one detector row (a slice thickness of 2 mm) */
  tl_ct_orbit_init_parallel(&o, 30, 64, 1, 0.75, 2.0);
  o.offset_u_mm = 3;
  check_orbit(&o);
}

static void test_text_roundtrip(void) {
  g_autoptr(GError) error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 7, 750, 1200, 62, 40, 1.6, 1.2);
  o.offset_u_mm = 1.0 / 3;
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_dir_make_tmp("tl-ct-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "geometry.txt", NULL);
  g_assert_true(tl_ct_geometry_save(g, path, &error));
  g_assert_no_error(error);
  g_autoptr(TlCtGeometry) h = tl_ct_geometry_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(h->beam, ==, g->beam);
  g_assert_cmpuint(h->det_u, ==, g->det_u);
  g_assert_cmpuint(h->det_v, ==, g->det_v);
  g_assert_cmpuint(h->n_views, ==, g->n_views);
  g_assert_cmpstr(h->description, ==, g->description);
  /* numbers are written so that they read back exactly */
  g_assert_cmpmem(h->matrices, 12 * sizeof(double) * h->n_views, g->matrices,
                  12 * sizeof(double) * g->n_views);
  g_remove(path);
  g_rmdir(dir);

  /* foreign scale and sign: normalised on reading */
  g_autofree char *t = g_strdup(
      "tomolab-ct-geometry = 1\nbeam = cone\ndetector = 10 10\nviews = 1\n"
      "view 0 = -2 0 -9 0  0 -2 -9 0  0 0 -2 -1000\n");
  g_autoptr(TlCtGeometry) s = tl_ct_geometry_from_text(t, "inline", &error);
  g_assert_no_error(error);
  const double *P = tl_ct_geometry_matrix(s, 0);
  g_assert_cmpfloat(P[10], ==, 1.0);
  g_assert_cmpfloat(P[11], ==, 500.0);
}

/* Every bad input is a GError naming the problem, never an abort. */
static void expect_error_(gpointer g, GError *error, const char *fragment) {
  g_assert_null(g);
  g_assert_nonnull(error);
  if (!strstr(error->message, fragment))
    g_error("message '%s' lacks '%s'", error->message, fragment);
  g_error_free(error);
}
/* The call is made before `error` is read (argument order is unspecified). */
#define expect_error(call, fragment)                   \
  do {                                                 \
    GError *error = NULL;                              \
    gpointer r_ = (call);                              \
    expect_error_(r_, error, fragment);                \
  } while (0)

static void test_bad_geometry(void) {
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 0, 750, 1200, 64, 48, 1.6, 1.2);
  expect_error(tl_ct_geometry_new_orbit(&o, &error), "zero views");
  tl_ct_orbit_init_cone(&o, 8, 750, 1200, 0, 48, 1.6, 1.2);
  expect_error(tl_ct_geometry_new_orbit(&o, &error), "no pixels");
  tl_ct_orbit_init_parallel(&o, 8, 64, 48, 0.0, 1.2);
  expect_error(tl_ct_geometry_new_orbit(&o, &error), "pixel sizes");
  tl_ct_orbit_init_cone(&o, 8, -750, 1200, 64, 48, 1.6, 1.2);
  expect_error(tl_ct_geometry_new_orbit(&o, &error), "source-isocentre");

  double m[24] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 500, /* fine */
                  1, 2, 3, 0, 2, 4, 6, 0, 0, 0, 1, 500}; /* rows 1, 2 dependent */
  expect_error(tl_ct_geometry_new_matrices(TL_CT_CONE, 2, 10, 10, m, &error), "singular");
  expect_error(tl_ct_geometry_new_matrices(TL_CT_CONE, 0, 10, 10, m, &error), "zero views");
  expect_error(tl_ct_geometry_new_matrices(TL_CT_CONE, 1, 10, 0, m, &error), "smaller than one pixel");
  double par[12] = {1, 0, 0, 5, 2, 0, 0, 5, 0, 0, 0, 1}; /* u and v rows parallel */
  expect_error(tl_ct_geometry_new_matrices(TL_CT_PARALLEL, 1, 10, 10, par, &error), "singular");
  double mixed[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 500}; /* a cone matrix as parallel */
  expect_error(tl_ct_geometry_new_matrices(TL_CT_PARALLEL, 1, 10, 10, mixed, &error), "third row");
  double nan_m[12] = {1, 0, 0, 0, 0, NAN, 0, 0, 0, 0, 1, 500};
  expect_error(tl_ct_geometry_new_matrices(TL_CT_CONE, 1, 10, 10, nan_m, &error), "not finite");
  double origin_plane[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  expect_error(tl_ct_geometry_new_matrices(TL_CT_CONE, 1, 10, 10, origin_plane, &error), "source plane");

  static const struct {
    const char *text, *fragment;
  } bad_text[] = {
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 0\n", "zero views"},
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 0 4\nviews = 1\n"
       "view 0 = 1 0 0 0 0 1 0 0 0 0 1 5\n", "smaller than one pixel"},
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 2\n"
       "view 0 = 1 0 0 0 0 1 0 0 0 0 1 5\n", "view 1 of 2 has no matrix"},
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 1\n"
       "view 0 = 1 0 0 0 0 1 0 0 0 0 1\n", "12 finite numbers"},
      {"tomolab-ct-geometry = 1\nbeam = fan\n", "'cone' or 'parallel'"},
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 1\ncolour = red\n",
       "unknown key 'colour'"},
      {"beam = cone\ndetector = 4 4\nviews = 1\nview 0 = 1 0 0 0 0 1 0 0 0 0 1 5\n",
       "'tomolab-ct-geometry' is missing"},
      {"tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 1\n"
       "view 0 = 1 1 0 0 1 1 0 0 0 0 1 5\n", "singular"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad_text); i++) {
    expect_error(tl_ct_geometry_from_text(bad_text[i].text, "bad.txt", &error), bad_text[i].fragment);
  }
}

/* Shepp-Logan values and exact line integrals of the ball. */
static void test_phantom(void) {
  g_autoptr(GError) error = NULL;
  TlImageGrid grid = tl_image_grid_centred(9, 9, 9, 2, 2, 2); /* box [-9, 9] mm */
  g_autoptr(TlCtPhantom) sl = tl_ct_phantom_new_preset("shepp-logan", &error);
  g_autoptr(TlCtPhantom) msl = tl_ct_phantom_new_preset("modified-shepp-logan", &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) a = tl_ct_phantom_rasterise(sl, &grid, 1, 1.0, &error);
  g_autoptr(TlImage) b = tl_ct_phantom_rasterise(msl, &grid, 1, 1.0, &error);
  g_assert_no_error(error);
  gsize centre = 4 + 9 * (4 + 9 * 4);
  g_assert_cmpfloat(fabs(a->data[centre] - 1.02f), <, 1e-6); /* 2 - 0.98 */
  g_assert_cmpfloat(fabs(b->data[centre] - 0.2f), <, 1e-6);  /* 1 - 0.8 */
  g_assert_cmpfloat(a->data[0], ==, 0.0f);                     /* corner: outside */
  g_assert_null(tl_ct_phantom_new_preset("shepp", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);

  /* ball of radius 0.8 * 9 mm: chord 2 sqrt(R^2 - d^2) at distance d from the centre */
  g_autoptr(TlCtPhantom) ball = tl_ct_phantom_new_preset("ball", NULL);
  double R = 0.8 * 9;
  for (double dd = 0; dd < R; dd += 1.3) {
    double o[3] = {-50, dd, 0}, dir[3] = {1, 0, 0};
    double l = tl_ct_phantom_line_integral(ball, &grid, 2.0, o, dir, TRUE);
    g_assert_cmpfloat(fabs(l - 2.0 * 2 * sqrt(R * R - dd * dd)), <, 1e-9);
  }
  double o[3] = {0, 0, 0}, dir[3] = {0, 0, 1};
  g_assert_cmpfloat(fabs(tl_ct_phantom_line_integral(ball, &grid, 1, o, dir, TRUE) - R), <, 1e-9);
}

/* The ramp kernels' closed forms against numerical integration of |f| W(f) cos(2 pi f l). */
static void test_ramp_kernels(void) {
  for (int f = TL_CT_FILTER_RAM_LAK; f < TL_CT_FILTER_N; f++) {
    g_autofree double *g = tl_ct_ramp_kernel(f, 9);
    for (int l = -8; l <= 8; l++) {
      const int n = 20000;
      double s = 0;
      for (int i = 0; i < n; i++) { /* midpoint rule on [-1/2, 1/2] */
        double fr = -0.5 + (i + 0.5) / n;
        double w = f == TL_CT_FILTER_RAM_LAK ? 1
                 : f == TL_CT_FILTER_SHEPP_LOGAN ? (fr == 0 ? 1 : sin(G_PI * fr) / (G_PI * fr))
                 : f == TL_CT_FILTER_COSINE      ? cos(G_PI * fr)
                                                 : 0.5 * (1 + cos(2 * G_PI * fr));
        s += fabs(fr) * w * cos(2 * G_PI * fr * l) / n;
      }
      if (fabs(s - g[l + 8]) > 1e-7)
        g_error("filter %s tap %d: %.9g, integral %.9g", tl_ct_filter_name(f), l, g[l + 8], s);
    }
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ct/geometry/orbit-cone", test_orbit_cone);
  g_test_add_func("/ct/geometry/orbit-parallel", test_orbit_parallel);
  g_test_add_func("/ct/geometry/text-roundtrip", test_text_roundtrip);
  g_test_add_func("/ct/geometry/bad", test_bad_geometry);
  g_test_add_func("/ct/phantom/values-and-integrals", test_phantom);
  g_test_add_func("/ct/fdk/ramp-kernels", test_ramp_kernels);
  return g_test_run();
}
