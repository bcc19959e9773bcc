/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PET attenuation correction (van Gendt et al. 2021 sec. 2.3, eq. 6-7): the projector with per-LOR
 * attenuation factors is still adjoint and scales each LOR by its factor; the attenuated
 * sensitivity image and its cache key; a water cylinder simulated with attenuation reconstructs cupped without
 * correction and flat with it; bad mu-maps are refused with a GError. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/project/tl-sensitivity.h"
#include "pet/simulate/tl-simulate.h"

static TlContext *ctx;

/* 4 rings of a 20-gon, 6 crystals of 3.9 mm per side (apothem 74 mm, 4 mm rings); a grid of
 * 40 x 40 x 4 voxels of 3.5 x 3.5 x 4 mm covering it. */
static TlScanner *scanner(void) {
  TlScanner *fx = fx_ring_scanner(4, 20, 6, 3.9f, 74.0f, 4.0f, 3);
  TlScanner *s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  return s;
}

static TlImageGrid grid(void) { return fx_grid(40, 40, 4, 3.5f, 3.5f, 4.0f); }

#define CYL_R 55.0f

/* A uniform water cylinder (activity 1, mu = TL_MU_WATER) of radius CYL_R along z through the
 * whole axial field. */
static void water_cylinder(const TlImageGrid *g, TlImage **act, TlImage **mu) {
  GError *error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new("water cylinder");
  TlShape cyl = {.kind = TL_SHAPE_CYLINDER, .radius = CYL_R, .half_length = 8.0f, .axis = 2,
                 .activity = 1.0f, .mu = TL_MU_WATER,
                 .flags = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU};
  tl_phantom_add(ph, &cyl);
  g_assert_true(tl_phantom_rasterise(ph, g, 4, act, mu, &error));
  g_assert_no_error(error);
}

/* With attenuation factors a_j the projector is A' = diag(a) A: forward values are a_j times
 * the plain ones, and <A' x, w> = <x, A'^T w> within 1e-5 (a sub-range starting at record
 * 1000 checks that a_j is read at the record's index). */
static void test_adjoint(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlScanner) sc = scanner();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  guint ne = 30000, first = 1000, count = ne - 2000;
  g_autoptr(GRand) r = g_rand_new_with_seed(11);
  g_autofree TlEvent *ev = g_new0(TlEvent, ne);
  for (guint i = 0; i < ne; i++) {
    do {
      ev[i].a = g_rand_int_range(r, 0, sc->n_crystals);
      ev[i].b = g_rand_int_range(r, 0, sc->n_crystals);
    } while (!tl_scanner_pair_allowed(sc, ev[i].a, ev[i].b));
  }
  g_autofree float *x = fx_random_floats(nv, 12, 0, 1);
  g_autofree float *w = fx_random_floats(count, 13, 0, 1);
  g_autofree float *a = fx_random_floats(ne, 14, 0.05, 1);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, ne, sizeof(TlEvent));
  g_autoptr(TlArray) da = fx_upload(ctx, a, ne, 4);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, count, 4);
  g_autoptr(TlArray) y0 = tl_array_new_float(ctx, count, &error);
  g_autoptr(TlArray) y1 = tl_array_new_float(ctx, count, &error);
  g_autoptr(TlArray) z = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  TlLors plain = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .first = first,
                  .count = count};
  TlLors att = plain;
  att.atten = da;
  g_assert_true(tl_array_zero(z, &error));
  g_assert_true(tl_projector_forward(p, s, &plain, dx, y0, &error));
  g_assert_true(tl_projector_forward(p, s, &att, dx, y1, &error));
  g_assert_true(tl_projector_back(p, s, &att, dw, z, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_autofree float *hy0 = fx_download(y0), *hy1 = fx_download(y1), *hz = fx_download(z);
  double ax_w = 0, x_atw = 0;
  guint hits = 0;
  for (guint i = 0; i < count; i++) {
    g_assert_cmpfloat(fabs(hy1[i] - a[first + i] * hy0[i]), <=, 1e-6 * fabs(hy0[i]) + 1e-30);
    ax_w += (double)hy1[i] * w[i];
    hits += hy0[i] > 0;
  }
  for (guint64 n = 0; n < nv; n++) x_atw += (double)x[n] * hz[n];
  g_test_message("%s attenuated: <A'x,w> = %.9g, <x,A'^T w> = %.9g", (char *)name, ax_w, x_atw);
  g_assert_cmpuint(hits, >, count / 2);
  g_assert_cmpfloat(fabs(ax_w - x_atw), <=, 1e-5 * fabs(ax_w));

  /* a too-short factor array is refused */
  g_autoptr(TlArray) shorta = fx_upload(ctx, a, first + count - 1, 4);
  att.atten = shorta;
  g_assert_false(tl_projector_forward(p, s, &att, dx, y1, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
}

/* van Gendt et al. 2021 eq. 7 on the device: with a mu-map of zeros s' = s (up to the order of the
 * atomic adds); with the water cylinder 0 < s' <= s wherever s > 0, s' < s in the water
 * (every LOR through it crosses some), and at the centre s'/s is about exp(-2 mu R) (oblique pairs cross a little more). */
static void test_sensitivity(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlScanner) sc = scanner();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(&g, &act, &mu);
  g_autoptr(TlImage) zero = tl_image_new(&g);
  g_autoptr(TlArray) dmu = fx_upload(ctx, mu->data, nv, 4);
  g_autoptr(TlArray) dzero = fx_upload(ctx, zero->data, nv, 4);
  /* the full method, as the attenuated images use: the same pairs in the same order (the
   * symmetric one traces mirror images, equal to the float tracer's rounding: test-pet-sensitivity) */
  tl_projector_set_sensitivity_method(p, TL_SENS_FULL);
  g_autoptr(TlArray) s0 = tl_sensitivity_image(p, s, sc, cry, 1, 0, FALSE, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) sz = tl_sensitivity_image_atten(p, s, sc, cry, 1, 0, dzero, NULL, FALSE,
                                                     NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) sw = tl_sensitivity_image_atten(p, s, sc, cry, 1, 0, dmu, NULL, FALSE,
                                                     NULL, &error);
  g_assert_no_error(error);
  g_autofree float *h0 = fx_download(s0), *hz = fx_download(sz), *hw = fx_download(sw);
  for (guint64 n = 0; n < nv; n++) g_assert_cmpfloat(fabs(hz[n] - h0[n]), <=, 1e-5 * h0[n]);
  guint inside = 0;
  for (guint64 n = 0; n < nv; n++) {
    if (h0[n] <= 0) continue;
    double c[3];
    tl_image_grid_voxel_centre(&g, n % g.dims[0], n / g.dims[0] % g.dims[1],
                               n / g.dims[0] / g.dims[1], c);
    g_assert_cmpfloat(hw[n], >, 0.0f);
    g_assert_cmpfloat(hw[n], <=, h0[n] * (1 + 1e-5));
    if (hypot(c[0], c[1]) < CYL_R) { /* every LOR through it crosses water */
      inside++;
      g_assert_cmpfloat(hw[n], <, h0[n]);
    }
  }
  g_assert_cmpuint(inside, >, nv / 3); /* pi (55 / 3.5)^2 of 40^2 voxels a slice */
  /* the centre voxels see the full diameter of water along every LOR: s'/s <= exp(-2 mu R)
   * (up to the rasterised rim); the oblique pairs' longer paths lower it a little */
  guint c = g.dims[0] / 2 + g.dims[0] * (g.dims[1] / 2 + g.dims[1] * 1);
  double ratio = hw[c] / h0[c];
  g_test_message("%s: s'/s at the centre %.4f, exp(-2 mu R) = %.4f", (char *)name, ratio,
                 exp(-2 * TL_MU_WATER * CYL_R));
  g_assert_cmpfloat(ratio, <=, exp(-2 * TL_MU_WATER * CYL_R) * 1.02);
  g_assert_cmpfloat(ratio, >=, exp(-2 * TL_MU_WATER * CYL_R) * 0.85);
}


static TlImage *reconstruct(const TlListmode *lm, const TlImage *mu, const char *projector) {
  GError *error = NULL;
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 4;
  o.iterations = 4;
  o.projector = projector;
  o.loglik = TL_LOGLIK_NEVER;
  o.use_cache = FALSE;
  o.attenuation = mu;
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  TlImage *im = tl_recon_image(r, &error);
  g_assert_no_error(error);
  return im;
}

/* The acceptance test. A uniform water cylinder (R = 55 mm, mu = 0.0096 mm^-1) is
 * simulated by the Monte-Carlo simulator WITH attenuation (photon pairs survive with
 * probability exp(-integral of mu), van Gendt et al. 2021 eq. 6) and reconstructed by OSEM (4
 * subsets x 4
 * iterations) twice: without correction and with the same mu-map.
 * Measurement: the image is averaged over rings around the axis in the middle slices, so each
 * value is a mean over tens to hundreds of voxels (Poisson noise of single voxels is ~10% here;
 * a ring mean's is well under 1%). "Centre" is r < 0.3 R, "edge" 0.6 R <= r < 0.8 R (inside the
 * rim, away from the partial-volume voxels of the boundary and the edge overshoot of EM).
 * Without correction the centre, whose LORs all cross the full diameter (exp(-2 mu R) = 0.35),
 * comes out well below the edge: centre/edge < 0.8. With correction the radial profile, four
 * rings of 0.2 R from the axis to 0.8 R, is flat: each ring mean within 5% of their average. */
static void test_water_cylinder(gconstpointer projector) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlScanner) sc = scanner();
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(&g, &act, &mu);
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 400000;
  sp.exact_count = TRUE;
  sp.seed = 5;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = tl_simulate(sc, act, mu, &sp, NULL, NULL, NULL, &st, &error);
  g_assert_no_error(error);
  g_test_message("simulated %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
                 " of %" G_GUINT64_FORMAT " geometric pairs lost to attenuation, %.2f s",
                 lm->n_events, st.attenuated, st.geometric, st.seconds);
  g_assert_cmpuint(st.attenuated, >, st.geometric / 4);

  g_autoptr(TlImage) plain = reconstruct(lm, NULL, projector);
  g_autoptr(TlImage) corr = reconstruct(lm, mu, projector);
  double R = CYL_R;
  double pc = fx_ring_mean(plain, 0, 0.3 * R), pe = fx_ring_mean(plain, 0.6 * R, 0.8 * R);
  g_test_message("%s without correction: centre %.4g edge %.4g, ratio %.3f", (char *)projector,
                 pc, pe, pc / pe);
  g_assert_cmpfloat(pc / pe, <, 0.8);

  double ring[4], avg = 0;
  for (guint k = 0; k < 4; k++) {
    ring[k] = fx_ring_mean(corr, 0.2 * k * R, 0.2 * (k + 1) * R);
    avg += ring[k] / 4;
  }
  double cc = fx_ring_mean(corr, 0, 0.3 * R), ce = fx_ring_mean(corr, 0.6 * R, 0.8 * R);
  g_test_message("%s corrected: rings %.4g %.4g %.4g %.4g, centre/edge %.3f", (char *)projector,
                 ring[0], ring[1], ring[2], ring[3], cc / ce);
  for (guint k = 0; k < 4; k++) g_assert_cmpfloat(fabs(ring[k] / avg - 1), <, 0.05);
  g_assert_cmpfloat(fabs(cc / ce - 1), <, 0.05);
  /* outside the cylinder (beyond 1.15 R) hardly anything */
  g_assert_cmpfloat(fx_ring_mean(corr, 1.15 * R, 1.6 * R), <, 0.05 * avg);
}

/* Bad mu-maps: another grid, negative, NaN, implausibly large (cm^-1 instead of mm^-1). */
static void test_bad_map(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlScanner) sc = scanner();
  TlEvent ev[2] = {{0, 60, 0}, {5, 70, 0}};
  TlListmode lm = {.scanner = sc, .events = ev, .n_events = 2};
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.use_cache = FALSE;

  TlImageGrid other = fx_grid(40, 40, 4, 3.5f, 3.5f, 2.0f);
  g_autoptr(TlImage) wrong = tl_image_new(&other);
  o.attenuation = wrong;
  g_assert_null(tl_recon_new_listmode(ctx, &lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "attenuation map on grid"));
  g_clear_error(&error);

  const float bad[] = {-0.001f, NAN, INFINITY, 0.096f};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(TlImage) mu = tl_image_new(&g);
    mu->data[123] = bad[i];
    o.attenuation = mu;
    g_assert_null(tl_recon_new_listmode(ctx, &lm, &g, &o, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, "mu ="));
    g_clear_error(&error);
    TlBin bins[1] = {{0, 60, 1.0f}};
    g_assert_null(tl_recon_new_binned(ctx, sc, bins, 1, &g, &o, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_clear_error(&error);
  }
  /* a valid map on the right grid is accepted (binned data too) */
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(&g, &act, &mu);
  o.attenuation = mu;
  TlBin bins[2] = {{0, 60, 2.0f}, {5, 70, 1.0f}};
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, sc, bins, 2, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_step(r, &error));
  g_assert_no_error(error);
}

static double sens_sum(TlRecon *r) {
  g_autofree float *v = fx_download(tl_recon_sensitivity(r));
  double s = 0;
  for (guint64 n = 0; n < tl_image_grid_n_voxels(tl_recon_grid(r)); n++) s += v[n];
  return s;
}

/* The sensitivity cache key includes the mu-map's bytes: the same map is read back from the
 * cache, a map differing in one voxel is not, and the map without attenuation is another file
 * (a larger sensitivity). The changed voxel holds a value new on every run, since the cache
 * directory outlives the test. */
static void test_cache(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlScanner) sc = scanner();
  TlEvent ev[2] = {{0, 60, 0}, {5, 70, 0}};
  TlListmode lm = {.scanner = sc, .events = ev, .n_events = 2};
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(&g, &act, &mu);
  mu->data[0] = (float)g_random_double_range(0, 0.04);
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.attenuation = mu;
  g_autoptr(TlRecon) r1 = tl_recon_new_listmode(ctx, &lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_false(tl_recon_sensitivity_cached(r1));
  g_autoptr(TlRecon) r2 = tl_recon_new_listmode(ctx, &lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_sensitivity_cached(r2));
  g_assert_cmpfloat(sens_sum(r1), ==, sens_sum(r2));
  mu->data[1] = (float)g_random_double_range(0, 0.04);
  g_autoptr(TlRecon) r3 = tl_recon_new_listmode(ctx, &lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_false(tl_recon_sensitivity_cached(r3));
  o.attenuation = NULL;
  g_autoptr(TlRecon) r4 = tl_recon_new_listmode(ctx, &lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(sens_sum(r4), >, 1.5 * sens_sum(r1));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/pet/atten/adjoint/siddon", "siddon", test_adjoint);
  g_test_add_data_func("/pet/atten/adjoint/joseph", "joseph", test_adjoint);
  g_test_add_data_func("/pet/atten/sensitivity/siddon", "siddon", test_sensitivity);
  g_test_add_data_func("/pet/atten/sensitivity/joseph", "joseph", test_sensitivity);
  g_test_add_data_func("/pet/atten/water-cylinder/siddon", "siddon", test_water_cylinder);
  g_test_add_data_func("/pet/atten/water-cylinder/joseph", "joseph", test_water_cylinder);
  g_test_add_func("/pet/atten/bad-map", test_bad_map);
  g_test_add_func("/pet/atten/sensitivity-cache", test_cache);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
