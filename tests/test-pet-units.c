/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Images in Bq/mL (pet/tl-units.h): the decay correction against a numerical integral of the
 * decay law, isotope names, the checks, the unit kept by NIfTI, and simulations that come back
 * in their own units: the calibration factor found on one simulated phantom of known
 * concentration brings another one (other concentration, duration, and F-18 decay during the
 * frame) back to its truth. */
#include "pet-fixture.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"
#include "pet/correct/tl-units.h"
#include <glib/gstdio.h>
#include <math.h>

static TlContext *ctx;

/* DC = T / integral_{ts}^{ts+T} exp(-lambda t) dt, the integral by composite Simpson. */
static double dc_simpson(double half_life, double ts, double T) {
  double lambda = G_LN2 / half_life, h = T / 20000, s = 0;
  for (int i = 0; i <= 20000; i++) {
    double w = (i == 0 || i == 20000) ? 1 : (i % 2 ? 4 : 2);
    s += w * exp(-lambda * (ts + i * h));
  }
  return T / (s * h / 3);
}

static void test_decay(void) {
  GError *error = NULL;
  const TlIsotope *f18 = tl_isotope_find("F-18", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f18->name, ==, "F18");
  const double frames[][2] = {{0, 60}, {0, 600}, {3600, 300}, {7200, 7200}, {100, 1e-3}};
  for (guint i = 0; i < G_N_ELEMENTS(frames); i++) {
    double ts = frames[i][0], T = frames[i][1];
    double got = tl_decay_correction(f18, ts, T), want = dc_simpson(f18->half_life_s, ts, T);
    g_test_message("F18 frame %g s from %g s: DC %.9g (Simpson %.9g)", T, ts, got, want);
    g_assert_cmpfloat(fabs(got / want - 1), <, 1e-9);
  }
  /* one half-life after the reference, a very short frame: DC -> 2 */
  g_assert_cmpfloat(fabs(tl_decay_correction(f18, f18->half_life_s, 1e-6) - 2), <, 1e-9);
  /* no isotope, or "none": no decay */
  g_assert_cmpfloat(tl_decay_correction(NULL, 1e4, 60), ==, 1);
  const TlIsotope *none = tl_isotope_find("none", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(tl_decay_correction(none, 1e4, 60), ==, 1);
  /* the scale DC / (T F beta) */
  TlQuant q = {.calibration = 2.5, .duration_s = 600, .frame_start_s = 3600, .isotope = f18};
  g_assert_true(tl_quant_validate(&q, &error));
  double want = dc_simpson(f18->half_life_s, 3600, 600) / (600 * 2.5 * f18->positron_fraction);
  g_assert_cmpfloat(fabs(tl_quant_scale(&q) / want - 1), <, 1e-9);
  /* calibrate inverts apply: a mean m over a known c gives F with m * scale(F) = c */
  double f = 0;
  g_assert_true(tl_quant_calibrate(&q, 123.4, 5300, &f, &error));
  q.calibration = f;
  g_assert_cmpfloat(fabs(123.4 * tl_quant_scale(&q) / 5300 - 1), <, 1e-12);
}

static void test_names(void) {
  GError *error = NULL;
  const char *same[] = {"F18", "f18", "F-18", "18F", "18-f"};
  for (guint i = 0; i < G_N_ELEMENTS(same); i++) {
    const TlIsotope *iso = tl_isotope_find(same[i], &error);
    g_assert_no_error(error);
    g_assert_cmpstr(iso->name, ==, "F18");
  }
  const TlIsotope *ga = tl_isotope_find("Ga-68", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(ga->positron_fraction, <, 0.9); /* Ga-68: 89 % beta+ */
  const char *bad[] = {"F19", "", "F 18", "Tc99m", "18"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_null(tl_isotope_find(bad[i], &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_assert_nonnull(strstr(error->message, bad[i]));
    g_assert_nonnull(strstr(error->message, "Zr89")); /* the known names are listed */
    g_clear_error(&error);
  }
}

static void test_checks(void) {
  GError *error = NULL;
  const TlIsotope *f18 = tl_isotope_find("F18", NULL);
  const TlQuant bad[] = {
      {.calibration = 0, .duration_s = 1},         {.calibration = -1, .duration_s = 1},
      {.calibration = NAN, .duration_s = 1},       {.calibration = 1, .duration_s = 0},
      {.calibration = 1, .duration_s = INFINITY},  {.calibration = 1, .duration_s = 1, .frame_start_s = -1},
      {.calibration = 1, .duration_s = 1, .frame_start_s = NAN},
      {.calibration = 1, .duration_s = 1, .frame_start_s = 1e9, .isotope = f18},
  };
  const char *field[] = {"calibration", "calibration", "calibration", "duration", "duration",
                         "frame start", "frame start", "frame start"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_false(tl_quant_validate(&bad[i], &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_assert_nonnull(strstr(error->message, field[i]));
    g_clear_error(&error);
  }
  /* apply refuses an image already in a unit, and leaves it alone */
  TlImageGrid g = fx_grid(2, 2, 2, 1, 1, 1);
  g_autoptr(TlImage) im = tl_image_new(&g);
  im->data[0] = 7;
  g_assert_true(tl_image_set_unit(im, "Bq/mL"));
  TlQuant q = {.calibration = 2, .duration_s = 10};
  g_assert_false(tl_quant_apply(&q, im, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_cmpfloat(im->data[0], ==, 7);
  g_assert_false(tl_quant_calibrate(&q, 0, 100, &(double){0}, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_quant_calibrate(&q, 1, NAN, &(double){0}, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

/* The unit in NIfTI's descrip: written, read back; set_unit refuses what a header cannot hold. */
static void test_nifti_unit(void) {
  GError *error = NULL;
  TlImageGrid g = fx_grid(3, 2, 2, 2, 2, 2);
  g_autoptr(TlImage) im = tl_image_new(&g);
  for (guint i = 0; i < 12; i++) im->data[i] = (float)i;
  g_assert_cmpstr(tl_image_unit(im), ==, "a.u.");
  g_assert_false(tl_image_set_unit(im, "Bq per mL"));        /* a space */
  g_assert_false(tl_image_set_unit(im, "0123456789abcdefghijklmn")); /* 24 bytes */
  g_assert_false(tl_image_set_unit(im, "Bq/mL\n"));
  g_assert_cmpstr(im->unit, ==, "");
  g_autofree char *dir = g_dir_make_tmp("tl-units-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *a = g_build_filename(dir, "a.nii", NULL);
  g_autofree char *b = g_build_filename(dir, "b.nii.gz", NULL);
  g_assert_true(tl_image_save(im, a, &error)); /* no unit */
  g_assert_no_error(error);
  g_assert_true(tl_image_set_unit(im, "Bq/mL"));
  g_assert_true(tl_image_save(im, b, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) ra = tl_image_load(a, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) rb = tl_image_load(b, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ra->unit, ==, "");
  g_assert_cmpstr(rb->unit, ==, "Bq/mL");
  g_autoptr(TlImage) c = tl_image_copy(rb);
  g_assert_cmpstr(c->unit, ==, "Bq/mL");
  g_remove(a);
  g_remove(b);
  g_rmdir(dir);
}

/* sum over voxels of act_i V_i in mL (V in mm^3 / 1000) */
static double activity_volume_ml(const TlImage *act) {
  const float *v = act->grid.voxel_mm;
  return tl_image_sum(act) * v[0] * v[1] * v[2] / 1000.0;
}

typedef struct {
  TlScanner *sc;
  TlImageGrid g;
  TlImage *act; /* 1 inside the cylinder (partial voxels at its edge) */
} Setup;

static const double R = 30;

static void setup_init(Setup *s) {
  TlScanner *fx = fx_ring_scanner(4, 20, 6, 3.9f, 74.0f, 4.0f, 3);
  s->sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  s->g = fx_grid(40, 40, 4, 3.5f, 3.5f, 4.0f);
  fx_cylinder(&s->g, R, 8, 0, 4, &s->act, NULL);
}

/* Simulated annihilations: the decays the frame holds times the positron fraction, from a
 * concentration c0 (Bq/mL at the reference time) by the decay law integrated in closed form:
 * beta c0 V (exp(-lambda ts) - exp(-lambda (ts + T))) / lambda. Reconstructed by OSEM. */
static TlImage *scan(const Setup *s, double c0, const TlIsotope *iso, double ts, double T,
                     guint64 seed) {
  GError *error = NULL;
  double lambda = iso ? G_LN2 / iso->half_life_s : 0, beta = iso ? iso->positron_fraction : 1;
  double seconds = lambda > 0 ? (exp(-lambda * ts) - exp(-lambda * (ts + T))) / lambda : T;
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 0;
  sp.decays = beta * c0 * activity_volume_ml(s->act) * seconds;
  sp.seed = seed;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = tl_simulate(s->sc, s->act, NULL, &sp, NULL, NULL, NULL, &st, &error);
  g_assert_no_error(error);
  g_test_message("%.4g annihilations, %" G_GUINT64_FORMAT " detected", sp.decays, lm->n_events);
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 4;
  o.iterations = 5;
  o.loglik = TL_LOGLIK_NEVER;
  o.use_cache = FALSE;
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, lm, &s->g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(r, &error));
  TlImage *im = tl_recon_image(r, &error);
  g_assert_no_error(error);
  return im;
}

static void test_simulation_units(void) {
  GError *error = NULL;
  Setup s;
  setup_init(&s);
  /* calibration: 1000 Bq/mL of a positron emitter without decay, 60 s */
  g_autoptr(TlImage) cal = scan(&s, 1000, NULL, 0, 60, 11);
  TlQuant q = {.duration_s = 60};
  double f = 0;
  g_assert_true(tl_quant_calibrate(&q, fx_ring_mean(cal, 0, 0.7 * R), 1000, &f, &error));
  g_assert_no_error(error);

  /* another acquisition: 2500 Bq/mL of F-18 at the reference time, a 300 s frame starting
   * 30 min later (the activity falls 21 % before and 2 % during the frame) */
  const TlIsotope *f18 = tl_isotope_find("F18", NULL);
  g_autoptr(TlImage) img = scan(&s, 2500, f18, 1800, 300, 12);
  g_autoptr(TlImage) plain = tl_image_copy(img);
  TlQuant q2 = {.calibration = f, .duration_s = 300, .frame_start_s = 1800, .isotope = f18};
  g_assert_true(tl_quant_apply(&q2, img, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(img->unit, ==, "Bq/mL");
  /* the same without decay correction and positron fraction (what a forgotten --isotope gives) */
  TlQuant q3 = {.calibration = f, .duration_s = 300};
  g_assert_true(tl_quant_apply(&q3, plain, &error));
  double in = fx_ring_mean(img, 0, 0.7 * R), in_plain = fx_ring_mean(plain, 0, 0.7 * R);
  double out = fx_ring_mean(img, 1.3 * R, 2.0 * R);
  g_test_message("calibration factor %.6g; F-18 phantom of 2500 Bq/mL: %.1f Bq/mL inside "
                 "(%.2f %%), %.2f outside; without the decay correction %.1f", f, in,
                 100 * (in / 2500 - 1), out, in_plain);
  g_assert_cmpfloat(fabs(in / 2500 - 1), <, 0.03);
  g_assert_cmpfloat(in_plain / 2500, <, 0.85); /* DC 1.22 / beta 0.969: visibly biased */
  g_assert_cmpfloat(out, <, 0.02 * in);
  tl_image_free(s.act);
  tl_scanner_free(s.sc);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  ctx = tl_test_context();
  g_test_add_func("/pet-units/decay", test_decay);
  g_test_add_func("/pet-units/names", test_names);
  g_test_add_func("/pet-units/checks", test_checks);
  g_test_add_func("/pet-units/nifti-unit", test_nifti_unit);
  g_test_add_func("/pet-units/simulation", test_simulation_units);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
