/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Phantoms: analytic volumes, rod counts, thin sources, validation. */
#include "tl-test-common.h"
#include "image/tl-phantom.h"
#include "pet/scanner/tl-scanner.h"
#include <math.h>
#include <string.h>

static TlPhantom *preset(const char *name, const TlPhantomOptions *o, const TlImageGrid *g) {
  GError *error = NULL;
  TlPhantom *ph = tl_phantom_new_preset(name, o, g, &error);
  g_assert_no_error(error);
  return ph;
}

static void raster(const TlPhantom *ph, const TlImageGrid *g, guint ss, TlImage **act, TlImage **mu) {
  GError *error = NULL;
  g_assert_true(tl_phantom_rasterise(ph, g, ss, act, mu, &error));
  g_assert_no_error(error);
}

/* Each NEMA sphere, hot at ratio 4 over a background of 1, raises a voxel by 3 x its covered
 * fraction: summing (value - 1) / 3 around a sphere gives its volume, to be 4/3 pi r^3. */
static void test_nema_spheres(void) {
  TlImageGrid g = {{180, 180, 40}, {1, 1, 1}, {-89.5f, -89.5f, 0.5f}}; /* the sphere plane z = 20 */
  g_autoptr(TlPhantom) ph = preset("nema", NULL, &g);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  raster(ph, &g, 4, &act, &mu);
  guint found = 0;
  for (guint s = 0; s < ph->shapes->len; s++) {
    const TlShape *sh = &g_array_index(ph->shapes, TlShape, s);
    if (sh->kind != TL_SHAPE_SPHERE) continue;
    found++;
    double vol = 0, r = sh->radius;
    for (guint k = 0; k < g.dims[2]; k++)
      for (guint j = 0; j < g.dims[1]; j++)
        for (guint i = 0; i < g.dims[0]; i++) {
          double c[3];
          tl_image_grid_voxel_centre(&g, i, j, k, c);
          if (fabs(c[0] - sh->centre[0]) > r + 2 || fabs(c[1] - sh->centre[1]) > r + 2 ||
              fabs(c[2] - sh->centre[2]) > r + 2)
            continue;
          vol += (act->data[i + 180 * (j + 180 * k)] - 1.0) / 3.0;
        }
    double exact = 4.0 / 3.0 * G_PI * r * r * r;
    g_test_message("sphere %.0f mm: %.1f mm3, exact %.1f", 2 * r, vol, exact);
    g_assert_cmpfloat(fabs(vol - exact) / exact, <, r < 6 ? 0.02 : 0.01);
  }
  g_assert_cmpuint(found, ==, 6);
  /* water around, lung insert on the axis, nothing outside the body */
  g_assert_cmpfloat(mu->data[90 + 180 * (130 + 180 * 20)], ==, TL_MU_WATER);
  g_assert_cmpfloat_with_epsilon(mu->data[90 + 180 * (90 + 180 * 20)], TL_MU_LUNG, 1e-7);
  g_assert_cmpfloat(act->data[90 + 180 * (90 + 180 * 20)], ==, 0.0f);
  g_assert_cmpfloat(mu->data[179 + 180 * (179 + 180 * 20)], ==, 0.0f); /* (89.5, 89.5): outside */
}

/* 4-connected components above half coverage in a 2-D slice. */
static guint components(const float *v, guint nx, guint ny) {
  g_autofree guint8 *seen = g_new0(guint8, nx * ny);
  g_autofree guint *stack = g_new(guint, nx * ny);
  guint n = 0;
  for (guint s = 0; s < nx * ny; s++) {
    if (seen[s] || v[s] < 0.5f) continue;
    n++;
    guint top = 0;
    stack[top++] = s;
    seen[s] = 1;
    while (top) {
      guint p = stack[--top], x = p % nx, y = p / nx;
      guint nb[4] = {x > 0 ? p - 1 : p, x + 1 < nx ? p + 1 : p, y > 0 ? p - nx : p, y + 1 < ny ? p + nx : p};
      for (int q = 0; q < 4; q++)
        if (!seen[nb[q]] && v[nb[q]] >= 0.5f) seen[nb[q]] = 1, stack[top++] = nb[q];
    }
  }
  return n;
}

/* Chou et al. 2012's six rod groups: every rod a separate blob in a fine slice; the 2.4 mm group
 * holds 4 rows (1 + 2 + 3 + 4 rods) inside the 20 mm rod radius. */
static void test_derenzo(void) {
  TlImageGrid g = tl_image_grid_centred(460, 460, 1, 0.1f, 0.1f, 0.1f);
  g_autoptr(TlPhantom) ph = preset("derenzo", NULL, &g);
  g_autoptr(TlImage) act = NULL;
  raster(ph, &g, 2, &act, NULL);
  guint rods = ph->shapes->len - 1, big = 0;
  for (guint s = 1; s < ph->shapes->len; s++)
    big += g_array_index(ph->shapes, TlShape, s).radius == 1.2f;
  g_assert_cmpuint(big, ==, 10);
  g_assert_cmpuint(components(act->data, 460, 460), ==, rods);
  g_test_message("micro Derenzo: %u rods", rods);
  /* clinical scale along x (the dual-head orientation) */
  TlPhantomOptions o;
  tl_phantom_options_init(&o);
  o.axis = 0;
  TlImageGrid gx = {{1, 500, 500}, {1, 0.5f, 0.5f}, {0, -124.75f, -124.75f}};
  g_autoptr(TlPhantom) cl = preset("derenzo-clinical", &o, &gx);
  g_autoptr(TlImage) ca = NULL;
  raster(cl, &gx, 2, &ca, NULL);
  g_assert_cmpuint(components(ca->data, 500, 500), ==, cl->shapes->len - 1);
}

static void test_cylinder_lines_point(void) {
  TlImageGrid g = tl_image_grid_centred(101, 101, 61, 2, 2, 3);
  TlPhantomOptions o;
  tl_phantom_options_init(&o);
  o.radius_mm = 40;
  o.length_mm = 120;
  g_autoptr(TlPhantom) cyl = preset("cylinder", &o, &g);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  raster(cyl, &g, 4, &act, &mu);
  double v = 2 * 2 * 3;
  g_assert_cmpfloat_with_epsilon(tl_image_sum(mu) * v / (G_PI * 40 * 40 * 120 * TL_MU_WATER), 1.0, 2e-3);
  g_assert_cmpfloat_with_epsilon(tl_image_sum(act) * v / (G_PI * 40 * 40 * 120), 1.0, 2e-3);
  /* three lines of 1 per mm along z, 120 mm long: activity x voxel volume = 360 */
  g_autoptr(TlPhantom) lines = preset("lines", &o, &g);
  g_autoptr(TlImage) la = NULL;
  raster(lines, &g, 4, &la, NULL);
  g_assert_cmpfloat_with_epsilon(tl_image_sum(la) * v, 360.0, 1e-2);
  g_assert_cmpfloat(la->data[50 + 101 * (50 + 101 * 30)], >, 0.0f);  /* (0, 0) */
  g_assert_cmpfloat(la->data[70 + 101 * (50 + 101 * 30)], >, 0.0f);  /* (40, 0) */
  g_assert_cmpfloat(la->data[50 + 101 * (60 + 101 * 30)], >, 0.0f);  /* (0, 20) */
  g_autoptr(TlPhantom) pt = preset("point", NULL, &g);
  g_autoptr(TlImage) pa = NULL;
  raster(pt, &g, 4, &pa, NULL);
  g_assert_cmpfloat_with_epsilon(pa->data[50 + 101 * (50 + 101 * 30)] * v, 1000.0, 1e-2);
  g_assert_cmpfloat_with_epsilon(tl_image_sum(pa) * v, 1000.0, 1e-2);
}

static void test_errors(void) {
  GError *error = NULL;
  TlImageGrid g = tl_image_grid_centred(8, 8, 8, 1, 1, 1);
  g_autoptr(TlPhantom) ph = tl_phantom_new("bad");
  TlShape s = {TL_SHAPE_SPHERE, {0, 0, 0}, 2, 0, 2, NAN, 0, TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &s);
  g_autoptr(TlImage) act = NULL;
  g_assert_false(tl_phantom_rasterise(ph, &g, 2, &act, NULL, &error));
  g_assert_nonnull(strstr(error->message, "activity nan"));
  g_clear_error(&error);
  g_array_index(ph->shapes, TlShape, 0).activity = -1;
  g_assert_false(tl_phantom_rasterise(ph, &g, 2, &act, NULL, &error));
  g_assert_nonnull(strstr(error->message, "activity -1"));
  g_clear_error(&error);
  g_array_index(ph->shapes, TlShape, 0).activity = 1;
  TlImageGrid z = tl_image_grid_centred(8, 8, 0, 1, 1, 1);
  g_assert_false(tl_phantom_rasterise(ph, &z, 2, &act, NULL, &error));
  g_assert_nonnull(strstr(error->message, "along z is 0"));
  g_clear_error(&error);
  g_autoptr(TlPhantom) none = tl_phantom_new_preset("jaszczak", NULL, NULL, &error);
  g_assert_null(none);
  g_assert_nonnull(strstr(error->message, "'jaszczak'"));
  g_assert_nonnull(strstr(error->message, "nema"));
  g_clear_error(&error);
  /* an activity image with a NaN or a negative voxel is refused, naming the voxel */
  g_autoptr(TlImage) im = tl_image_new(&g);
  im->data[3 + 8 * (2 + 8 * 1)] = NAN;
  g_assert_false(tl_image_check_nonnegative(im, "activity", &error));
  g_assert_nonnull(strstr(error->message, "(3, 2, 1)"));
  g_clear_error(&error);
  im->data[3 + 8 * (2 + 8 * 1)] = -0.5f;
  g_assert_false(tl_image_check_nonnegative(im, "activity", &error));
  g_assert_nonnull(strstr(error->message, "-0.5"));
  g_clear_error(&error);
}

static void test_default_grid(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_preset("dmi", &error);
  TlImageGrid g = tl_scanner_default_grid(s);
  g_assert_cmpuint(g.dims[0], ==, 215);
  g_assert_cmpuint(g.dims[2], ==, 71);
  g_assert_cmpfloat(g.voxel_mm[0], ==, 2.78f);
  g_autoptr(TlScanner) d = tl_scanner_new_preset("dual-head", &error);
  TlImageGrid h = tl_scanner_default_grid(d);
  g_assert_cmpuint(h.dims[0], ==, 119);
  g_assert_cmpfloat(h.voxel_mm[0], ==, 0.5f);
  g_assert_cmpfloat(h.voxel_mm[1], ==, 0.6f);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_test_add_func("/pet/phantom/nema-spheres", test_nema_spheres);
  g_test_add_func("/pet/phantom/derenzo", test_derenzo);
  g_test_add_func("/pet/phantom/cylinder-lines-point", test_cylinder_lines_point);
  g_test_add_func("/pet/phantom/errors", test_errors);
  g_test_add_func("/pet/phantom/default-grid", test_default_grid);
  return g_test_run();
}
