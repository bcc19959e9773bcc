/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET extensions together in TlRecon: every combination of time of flight, attenuation
 * correction and a filter between iterations, for Siddon and Joseph (and the tube of response
 * once), runs an OSEM sub-iteration on a tiny simulated acquisition without a validation
 * message and gives a finite, non-negative image that each option really changes; the filter
 * between iterations is exactly tl_filter_apply of the unfiltered step; bad parameters are
 * GErrors naming the problem. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "image/tl-filter.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"

static TlContext *ctx;

/* 4 rings of a 12-gon (4 crystals of 4 mm a side, apothem 40 mm, 5 mm rings), TOF 15 bins of
 * 8 mm at 200 ps; 16 x 16 x 4 voxels of 4 x 4 x 5 mm. */
static TlScanner *scanner(void) {
  TlScanner *fx = fx_ring_scanner(4, 12, 4, 4.0f, 40.0f, 5.0f, 3);
  TlScanner *s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  s->tof_bins = 15;
  s->tof_bin_mm = 8;
  s->tof_fwhm_ps = 200;
  return s;
}

static TlImageGrid grid(void) { return fx_grid(16, 16, 4, 4.0f, 4.0f, 5.0f); }

typedef struct {
  TlImage *act, *mu;
  TlListmode *lm; /* 3 * 10^4 events, with TOF and attenuation */
} Data;

static Data data;

static void data_init(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlPhantom) ph = tl_phantom_new("water cylinder + hot sphere");
  TlShape cyl = {.kind = TL_SHAPE_CYLINDER, .radius = 25, .half_length = 10, .axis = 2,
                 .activity = 1, .mu = TL_MU_WATER, .flags = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU};
  TlShape hot = {.kind = TL_SHAPE_SPHERE, .centre = {10, 5, 0}, .radius = 6, .activity = 4,
                 .flags = TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &cyl);
  tl_phantom_add(ph, &hot);
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, &data.act, &data.mu, &error));
  g_autoptr(TlScanner) sc = scanner();
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 30000;
  sp.exact_count = TRUE;
  sp.seed = 3;
  sp.tof = TRUE;
  data.lm = tl_simulate(sc, data.act, data.mu, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
}

static void data_clear(void) {
  tl_image_free(data.act);
  tl_image_free(data.mu);
  tl_listmode_free(data.lm);
}

typedef struct {
  GArray *filtered; /* gboolean per sub-iteration */
} Flags;

static void on_progress(const TlReconProgress *p, gpointer user) {
  Flags *f = user;
  g_array_append_val(f->filtered, p->filtered);
}

static void options(TlReconOptions *o, const char *projector, gboolean tof, gboolean atten,
                    const char *filter, guint filter_every) {
  GError *error = NULL;
  tl_recon_options_init(o);
  o->algo = TL_RECON_OSEM;
  o->subsets = 2;
  o->iterations = 1;
  o->projector = projector;
  o->loglik = TL_LOGLIK_NEVER;
  o->use_cache = FALSE;
  o->tof = tof;
  o->attenuation = atten ? data.mu : NULL;
  g_assert_true(tl_filter_parse(filter, &o->filter, &error));
  g_assert_no_error(error);
  o->filter_every = filter_every;
}

/* `steps` sub-iterations; the image and, in *flags (may be NULL), the filtered flag of each. */
static TlImage *run(const TlReconOptions *o, guint steps, GArray **flags) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, data.lm, &g, o, &error);
  g_assert_no_error(error);
  Flags f = {g_array_new(FALSE, FALSE, sizeof(gboolean))};
  tl_recon_set_callback(r, on_progress, &f);
  for (guint i = 0; i < steps; i++) g_assert_true(tl_recon_step(r, &error));
  g_assert_no_error(error);
  TlImage *im = tl_recon_image(r, &error);
  g_assert_no_error(error);
  if (flags)
    *flags = f.filtered;
  else
    g_array_free(f.filtered, TRUE);
  return im;
}

static double max_rel_diff(const TlImage *a, const TlImage *b) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&a->grid); i++) {
    m = MAX(m, fabs(a->data[i]));
    d = MAX(d, fabs(a->data[i] - b->data[i]));
  }
  return d / m;
}

/* No validation message so far, every voxel finite and >= 0, and not all zero; the sum. */
static double assert_valid_image(const TlImage *x) {
  g_assert_cmpuint(tl_context_validation_messages(ctx), ==, 0);
  double sum = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&x->grid); i++) {
    g_assert_true(isfinite(x->data[i]));
    g_assert_cmpfloat(x->data[i], >=, 0.0f);
    sum += x->data[i];
  }
  g_assert_cmpfloat(sum, >, 0);
  return sum;
}

/* 2 x 2 x 3 combinations per projector, one OSEM sub-iteration each: no validation message,
 * finite, >= 0, not all zero, the filtered flag set exactly when a filter is asked for, and
 * switching any one option (TOF, attenuation, filter) changes the image (> 1e-3 of its
 * maximum), so none is silently ignored. */
static void test_combinations(gconstpointer projector) {
  static const char *const filters[] = {"none", "median3", "gauss:6"};
  TlImage *im[2][2][3];
  for (guint tof = 0; tof < 2; tof++)
    for (guint att = 0; att < 2; att++)
      for (guint f = 0; f < 3; f++) {
        TlReconOptions o;
        options(&o, projector, tof, att, filters[f], 1);
        g_autoptr(GArray) flags = NULL;
        gint64 t0 = g_get_monotonic_time();
        TlImage *x = im[tof][att][f] = run(&o, 1, &flags);
        double sum = assert_valid_image(x);
        g_assert_cmpuint(flags->len, ==, 1);
        g_assert_cmpint(g_array_index(flags, gboolean, 0), ==, f != 0);
        g_test_message("%s tof=%u atten=%u filter=%s: sum %.6g, %.2f s", (char *)projector, tof,
                       att, filters[f], sum, (g_get_monotonic_time() - t0) * 1e-6);
      }
  for (guint tof = 0; tof < 2; tof++)
    for (guint att = 0; att < 2; att++)
      for (guint f = 0; f < 3; f++) {
        TlImage *x = im[tof][att][f];
        g_assert_cmpfloat(max_rel_diff(x, im[!tof][att][f]), >, 1e-3);
        g_assert_cmpfloat(max_rel_diff(x, im[tof][!att][f]), >, 1e-3);
        g_assert_cmpfloat(max_rel_diff(x, im[tof][att][(f + 1) % 3]), >, 1e-3);
      }
  for (guint i = 0; i < 12; i++) tl_image_free((&im[0][0][0])[i]);
}

/* The tube of response with everything on: TOF, attenuation, Gaussian between iterations. */
static void test_tor(void) {
  TlReconOptions o;
  options(&o, "tor", TRUE, TRUE, "gauss:6", 1);
  o.tor_fwhm_mm = 3;
  g_autoptr(GArray) flags = NULL;
  g_autoptr(TlImage) x = run(&o, 1, &flags);
  assert_valid_image(x);
  g_assert_true(g_array_index(flags, gboolean, 0));
}

/* Filtering between iterations = the unfiltered sub-iteration followed by tl_filter_apply, for
 * the median and the Gaussian, TOF and attenuation on: to the bit, since two runs of the same
 * EM step are bit-identical (the back projections' sums are deterministic, core/tl-fixed.h;
 * with float atomics they differed by ~1.5e-6 of the maximum on lavapipe). A wrong filter (old
 * image, twice, another width) is off by > 1e-2. */
static void test_filter_equals_manual(gconstpointer filter) {
  GError *error = NULL;
  TlReconOptions o;
  options(&o, "joseph", TRUE, TRUE, filter, 1);
  g_autoptr(TlImage) in_recon = run(&o, 1, NULL);
  options(&o, "joseph", TRUE, TRUE, "none", 0);
  g_autoptr(TlImage) plain = run(&o, 1, NULL);
  g_autoptr(TlImage) again = run(&o, 1, NULL);
  TlFilter f;
  g_assert_true(tl_filter_parse(filter, &f, &error));
  guint64 nv = tl_image_grid_n_voxels(&plain->grid);
  g_autoptr(TlArray) a = fx_upload(ctx, plain->data, nv, 4);
  g_assert_true(tl_filter_apply(ctx, NULL, &f, &plain->grid, a, NULL, &error));
  g_assert_no_error(error);
  g_autofree float *manual = fx_download(a);
  double m = 0, d = 0, changed = 0;
  for (guint64 i = 0; i < nv; i++) {
    m = MAX(m, fabs(manual[i]));
    d = MAX(d, fabs(in_recon->data[i] - manual[i]));
    changed = MAX(changed, fabs(plain->data[i] - manual[i]));
  }
  g_test_message("%s: in recon vs manual %.3g of %.4g (unfiltered run to run %.3g of the "
                 "maximum; the filter itself moved voxels by %.3g)",
                 (char *)filter, d, m, max_rel_diff(plain, again), changed);
  g_assert_cmpfloat(max_rel_diff(plain, again), ==, 0);
  g_assert_cmpfloat(d, ==, 0);
  g_assert_cmpfloat(changed, >, 1e-2 * m); /* the comparison is not trivially passed */
}

/* filter_every = 2 with 2 subsets filters sub-iterations 2 and 4 (once per iteration);
 * filter_every = 0 or a filter "none" never. */
static void test_filter_every(void) {
  TlReconOptions o;
  const struct {
    const char *filter;
    guint every;
    gboolean want[4];
  } cases[] = {{"median3", 2, {FALSE, TRUE, FALSE, TRUE}},
               {"gauss:6", 1, {TRUE, TRUE, TRUE, TRUE}},
               {"gauss:6", 0, {FALSE, FALSE, FALSE, FALSE}},
               {"none", 1, {FALSE, FALSE, FALSE, FALSE}}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    options(&o, "siddon", FALSE, FALSE, cases[c].filter, cases[c].every);
    g_autoptr(GArray) flags = NULL;
    g_autoptr(TlImage) x = run(&o, 4, &flags);
    g_assert_cmpuint(flags->len, ==, 4);
    for (guint i = 0; i < 4; i++)
      g_assert_cmpint(g_array_index(flags, gboolean, i), ==, cases[c].want[i]);
  }
}

/* uniform_sensitivity: s = 1 everywhere (van Gendt et al. 2021 Table 3's baseline), and a step
 * runs. */
static void test_uniform_sensitivity(void) {
  GError *error = NULL;
  TlReconOptions o;
  options(&o, "joseph", FALSE, FALSE, "none", 0);
  o.uniform_sensitivity = TRUE;
  TlImageGrid g = grid();
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, data.lm, &g, &o, &error);
  g_assert_no_error(error);
  g_autofree float *s = fx_download(tl_recon_sensitivity(r));
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&g); i++) g_assert_cmpfloat(s[i], ==, 1.0f);
  g_assert_true(tl_recon_step(r, &error));
  g_assert_no_error(error);
}

/* Each bad parameter is a GError whose message names it. */
static void test_bad_input(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  TlFilter f;
  g_assert_false(tl_filter_parse("gauss:-1", &f, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "gauss:-1"));
  g_clear_error(&error);

  TlReconOptions o;
  options(&o, "joseph", FALSE, FALSE, "none", 1);
  o.filter = (TlFilter){.kind = TL_FILTER_GAUSS, .fwhm_mm = -1}; /* bypassing the parser */
  g_assert_null(tl_recon_new_listmode(ctx, data.lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "FWHM"));
  g_clear_error(&error);

  options(&o, "joseph", FALSE, FALSE, "none", 0);
  TlImageGrid other = fx_grid(16, 16, 5, 4.0f, 4.0f, 5.0f);
  g_autoptr(TlImage) mu = tl_image_new(&other);
  o.attenuation = mu;
  g_assert_null(tl_recon_new_listmode(ctx, data.lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "grid"));
  g_clear_error(&error);

  options(&o, "joseph", TRUE, FALSE, "none", 0);
  TlListmode no_tof = *data.lm; /* the events without their bins */
  no_tof.has_tof = FALSE;
  no_tof.events = g_memdup2(data.lm->events, data.lm->n_events * sizeof(TlEvent));
  for (guint64 i = 0; i < no_tof.n_events; i++) no_tof.events[i].tof_bin = 0;
  g_assert_null(tl_recon_new_listmode(ctx, &no_tof, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "TOF"));
  g_clear_error(&error);
  g_free(no_tof.events);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  data_init();
  g_test_add_data_func("/pet/combos/all/siddon", "siddon", test_combinations);
  g_test_add_data_func("/pet/combos/all/joseph", "joseph", test_combinations);
  g_test_add_func("/pet/combos/tor", test_tor);
  g_test_add_data_func("/pet/combos/filter-manual/median3", "median3", test_filter_equals_manual);
  g_test_add_data_func("/pet/combos/filter-manual/gauss", "gauss:6", test_filter_equals_manual);
  g_test_add_func("/pet/combos/filter-every", test_filter_every);
  g_test_add_func("/pet/combos/uniform-sensitivity", test_uniform_sensitivity);
  g_test_add_func("/pet/combos/bad-input", test_bad_input);
  int rc = g_test_run();
  data_clear();
  tl_test_context_done(ctx);
  return rc;
}
