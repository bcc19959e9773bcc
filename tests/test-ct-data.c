/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT scans: the .tlct file round trip and its errors, and the simulator (exact phantom
 * projections, Beer-Lambert Poisson noise and the log transform, emission noise, seeds). */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "ct/tl-ct-simulate.h"
#include "image/tl-phantom.h"
#include "tl-test-common.h"

static TlContext *ctx;

static TlCtGeometry *small_geometry(void) {
  GError *error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 12, 200, 300, 40, 30, 2.0, 2.0);
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

static char *tmp_path(const char *name) {
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("tl-ct-data-XXXXXX", &error);
  g_assert_no_error(error);
  return g_build_filename(dir, name, NULL);
}

static void remove_path(const char *path) {
  g_autofree char *dir = g_path_get_dirname(path);
  g_remove(path);
  g_rmdir(dir);
}

static void test_roundtrip(void) {
  GError *error = NULL;
  g_autoptr(TlCtData) d = tl_ct_data_new(small_geometry());
  guint64 n = tl_ct_data_n_values(d);
  for (guint64 i = 0; i < n; i++) d->proj[i] = (float)(i % 977) * 0.25f;
  d->values = TL_CT_COUNTS;
  d->i0 = 1e4;
  d->has_grid = TRUE;
  d->grid = tl_image_grid_centred(16, 16, 8, 2, 2, 3);
  d->description = g_strdup("a test\nwith a newline");
  g_autofree char *path = tmp_path("scan.tlct");
  g_assert_true(tl_ct_data_save(d, path, &error));
  g_assert_no_error(error);
  g_assert_true(tl_ct_data_sniff(path));
  g_autoptr(TlCtData) e = tl_ct_data_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(e->values, ==, TL_CT_COUNTS);
  g_assert_cmpfloat(e->i0, ==, 1e4);
  g_assert_true(e->has_grid && tl_image_grid_equal(&e->grid, &d->grid));
  g_assert_cmpstr(e->description, ==, "a test with a newline");
  g_assert_cmpuint(e->geometry->n_views, ==, 12);
  g_assert_cmpmem(e->geometry->matrices, 12 * 8 * 12, d->geometry->matrices, 12 * 8 * 12);
  g_assert_cmpmem(e->proj, 4 * n, d->proj, 4 * n);

  /* truncated and oversized data, a bad header line, not a CT file */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  static const struct {
    int cut;
    const char *fragment;
  } bad[] = {{-4, "truncated"}, {+4, "oversized"}};
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *b = g_malloc0(len + 4);
    memcpy(b, bytes, len);
    g_assert_true(g_file_set_contents(path, b, len + bad[i].cut, NULL));
    g_assert_null(tl_ct_data_load(path, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
    g_assert_nonnull(strstr(error->message, bad[i].fragment));
    g_clear_error(&error);
  }
  g_autofree char *edited = g_memdup2(bytes, len + 1); /* binary data, and the final NUL */
  char *v = strstr(edited, "values = counts");
  memcpy(v, "valuez", 6);
  g_assert_true(g_file_set_contents(path, edited, len, NULL));
  g_assert_null(tl_ct_data_load(path, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, ":2: unknown key 'valuez'"));
  g_clear_error(&error);
  g_assert_true(g_file_set_contents(path, "TOMOLAB-LISTMODE 1\n", -1, NULL));
  g_assert_false(tl_ct_data_sniff(path));
  g_assert_null(tl_ct_data_load(path, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  remove_path(path);
}

/* Noise-free exact projections through the centre of the ball; then I0 photons: the mean of
 * -log(I / I0) is the line integral (plus the log's small bias), its variance ~ 1 / (I0 e^-p). */
static void test_simulate(void) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = small_geometry();
  TlImageGrid grid = tl_image_grid_centred(32, 32, 32, 2, 2, 2);
  g_autoptr(TlCtPhantom) ball = tl_ct_phantom_new_preset("ball", &error);
  TlCtSimOptions o;
  tl_ct_sim_options_init(&o);
  g_autoptr(TlCtData) clean = tl_ct_simulate_phantom(ctx, g, ball, &grid, 0.02, &o, &error);
  g_assert_no_error(error);
  /* the detector's centre (between pixels) sees the ball's diameter, 2 x 0.8 x 32 mm; pixel
   * (20, 15) next to it almost as much */
  guint64 centre = (guint64)15 * 40 + 20;
  double o3[3], d3[3];
  tl_ct_geometry_ray(g, 0, 19.5, 14.5, o3, d3);
  g_assert_cmpfloat(fabs(tl_ct_phantom_line_integral(ball, &grid, 0.02, o3, d3, TRUE) -
                         0.02 * 2 * 0.8 * 32), <, 1e-9);
  g_assert_cmpfloat(clean->proj[centre], >, 0.9);

  o.i0 = 1e4;
  o.seed = 7;
  g_autoptr(TlCtData) noisy = tl_ct_simulate_phantom(ctx, g, ball, &grid, 0.02, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpint(noisy->values, ==, TL_CT_LINE_INTEGRALS);
  guint64 n = tl_ct_data_n_values(noisy);
  double sum_d = 0, sum_z = 0;
  guint m = 0;
  for (guint64 i = 0; i < n; i++) {
    double p = clean->proj[i], q = noisy->proj[i];
    if (p < 0.5) continue;
    double var = 1.0 / (o.i0 * exp(-p));  /* delta method */
    sum_d += q - p;
    sum_z += (q - p) * (q - p) / var;
    m++;
  }
  g_test_message("%u pixels with p >= 0.5: mean error %.2e, mean squared z-score %.3f", m,
                 sum_d / m, sum_z / m);
  g_assert_cmpuint(m, >, 500);
  g_assert_cmpfloat(fabs(sum_d / m), <, 3e-3);
  g_assert_cmpfloat(fabs(sum_z / m - 1), <, 0.15);

  /* same seed, same data; another seed, other data; counts kept when asked */
  g_autoptr(TlCtData) again = tl_ct_simulate_phantom(ctx, g, ball, &grid, 0.02, &o, &error);
  g_assert_cmpmem(again->proj, 4 * n, noisy->proj, 4 * n);
  o.seed = 8;
  o.keep_counts = TRUE;
  g_autoptr(TlCtData) counts = tl_ct_simulate_phantom(ctx, g, ball, &grid, 0.02, &o, &error);
  g_assert_cmpint(counts->values, ==, TL_CT_COUNTS);
  g_assert_cmpfloat(counts->proj[0], ==, floorf(counts->proj[0]));
  g_autoptr(TlArray) up = tl_ct_data_upload(ctx, counts, &error);
  g_assert_no_error(error);
  g_autofree float *li = g_new(float, n);
  g_assert_true(tl_array_download(up, li, &error));
  for (guint64 i = 0; i < n; i += 97)
    g_assert_cmpfloat(fabs(li[i] + logf(MAX(counts->proj[i], 0.5f) / 1e4f)), <, 1e-5);

  /* emission: Poisson(s p) / s has mean p */
  tl_ct_sim_options_init(&o);
  o.emission_scale = 50;
  g_autoptr(TlCtData) em = tl_ct_simulate_phantom(ctx, g, ball, &grid, 0.02, &o, &error);
  double se = 0, sp = 0;
  for (guint64 i = 0; i < n; i++) se += em->proj[i], sp += clean->proj[i];
  g_assert_cmpfloat(fabs(se / sp - 1), <, 0.01);

  /* the image path (a projector on the device) agrees with the exact one to voxelisation */
  g_autoptr(TlImage) im = tl_ct_phantom_rasterise(ball, &grid, 3, 0.02, &error);
  tl_ct_sim_options_init(&o);
  o.projector = TL_CT_SIDDON;
  g_autoptr(TlCtData) viaimg = tl_ct_simulate_image(ctx, g, im, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(fabs(viaimg->proj[centre] - clean->proj[centre]), <, 0.02 * 1.0);

  /* a PET phantom's mu-map as the attenuation object: water cylinder, mu(511 keV) x 2 */
  g_autoptr(TlImage) mu = tl_ct_phantom_mu_map("cylinder", &grid, 2.0, &error);
  g_assert_no_error(error);
  float mu_max = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&grid); i++) mu_max = MAX(mu_max, mu->data[i]);
  g_assert_cmpfloat(fabs(mu_max - 2 * TL_MU_WATER), <, 1e-6);
  g_autoptr(TlCtData) viamu = tl_ct_simulate_image(ctx, g, mu, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(viamu->proj[centre], >, 0.1);
  g_assert_null(tl_ct_phantom_mu_map("no-such-phantom", &grid, 1.0, &error));
  g_assert_nonnull(error);
  g_clear_error(&error);

  o.i0 = -1;
  g_assert_null(tl_ct_simulate_image(ctx, g, im, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/ct/data/roundtrip-and-errors", test_roundtrip);
  g_test_add_func("/ct/data/simulate", test_simulate);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
