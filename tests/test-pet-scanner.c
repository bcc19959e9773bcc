/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Scanner presets against the reference numbers, the pair rule, the text description. */
#include "tl-test-common.h"
#include "pet/scanner/tl-scanner.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

static TlScanner *preset(const char *name) {
  GError *error = NULL;
  TlScanner *s = tl_scanner_new_preset(name, &error);
  g_assert_no_error(error);
  return s;
}

/* reference-cases.md: 36 rings of 34 sides x 16 crystals 4.03125 mm apart, inner radius
 * 380.56 mm, ring i at z = 5.31556 i + 2.8 floor(i/9) centred on 0; TOF 29 x 25.37 mm, 385 ps. */
static void test_dmi(void) {
  g_autoptr(TlScanner) s = preset("dmi");
  g_assert_cmpuint(s->kind, ==, TL_SCANNER_RING);
  g_assert_cmpuint(s->n_crystals, ==, 19584);
  g_assert_cmpuint(s->n_rings, ==, 36);
  g_assert_cmpuint(s->crystals_per_ring, ==, 544);
  g_assert_cmpuint(s->max_ring_difference, ==, 35);
  double zc = 0.5 * (5.31556 * 35 + 2.8 * 3);
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    guint ring = i / 544, side = i % 544 / 16;
    g_assert_cmpuint(k->ring, ==, ring);
    g_assert_cmpuint(k->group, ==, side);
    g_assert_cmpfloat_with_epsilon(k->centre[2], 5.31556 * ring + 2.8 * (ring / 9) - zc, 1e-4);
    /* crystal centres on the inner face: distance along the inward normal = 380.56 */
    double r = -(k->centre[0] * k->normal[0] + k->centre[1] * k->normal[1]);
    g_assert_cmpfloat_with_epsilon(r, 380.56, 1e-3);
    g_assert_cmpfloat_with_epsilon(hypot(k->normal[0], k->normal[1]), 1.0, 1e-6);
    if (i % 16 != 15) { /* next crystal along the same side */
      const TlCrystal *n = k + 1;
      g_assert_cmpfloat_with_epsilon(hypot(n->centre[0] - k->centre[0], n->centre[1] - k->centre[1]),
                                     4.03125, 1e-4);
    }
  }
  g_assert_cmpfloat_with_epsilon(s->crystals[0].centre[2], -97.2223, 1e-3);
  g_assert_cmpfloat_with_epsilon(s->crystals[35 * 544].centre[2], 97.2223, 1e-3);
  g_assert_cmpuint(s->tof_bins, ==, 29);
  g_assert_cmpfloat_with_epsilon(s->tof_bin_mm, 25.37, 1e-5);
  g_assert_cmpfloat_with_epsilon(s->tof_fwhm_ps, 385, 1e-5);
  g_assert_cmpfloat_with_epsilon(tl_scanner_tof_sigma_mm(s), 24.50, 0.01);
}

/* Chou et al. 2012: two heads of 104 x 72 crystals, 2.4 mm pitch, 60 mm apart. */
static void test_dual_head(void) {
  g_autoptr(TlScanner) s = preset("dual-head");
  g_assert_cmpuint(s->kind, ==, TL_SCANNER_DUAL_HEAD);
  g_assert_cmpuint(s->n_crystals, ==, 2 * 104 * 72);
  g_assert_cmpuint(s->n_rings, ==, 1);
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    guint head = i / (104 * 72);
    g_assert_cmpuint(k->group, ==, head);
    g_assert_cmpuint(k->ring, ==, 0);
    g_assert_cmpfloat(k->centre[0], ==, head ? 30.0f : -30.0f);
    g_assert_cmpfloat(k->normal[0], ==, head ? -1.0f : 1.0f);
  }
  const TlCrystal *c = s->crystals;
  g_assert_cmpfloat_with_epsilon(c[1].centre[1] - c[0].centre[1], 2.4, 1e-5);
  g_assert_cmpfloat_with_epsilon(c[104].centre[2] - c[0].centre[2], 2.4, 1e-5);
  g_assert_cmpfloat_with_epsilon(c[103].centre[1] - c[0].centre[1], 103 * 2.4, 1e-4);
  g_assert_cmpfloat_with_epsilon(c[0].centre[1], -0.5 * 103 * 2.4, 1e-4);
  g_assert_false(tl_scanner_pair_allowed(s, 0, 5));
  g_assert_true(tl_scanner_pair_allowed(s, 0, 104 * 72 + 5));
}

static void test_small_animal(void) {
  g_autoptr(TlScanner) s = preset("small-animal");
  g_assert_cmpuint(s->n_crystals, ==, 80 * 16 * 20);
  g_assert_cmpuint(s->crystals_per_ring, ==, 320);
  g_assert_cmpuint(s->tof_bins, ==, 0);
}

static void test_pairs(void) {
  g_autoptr(TlScanner) s = preset("dmi");
  s->max_ring_difference = 5;
  guint a = 0;                 /* ring 0, side 0 */
  guint b = 5 * 544 + 17 * 16; /* ring 5, side 17 */
  g_assert_true(tl_scanner_pair_allowed(s, a, b));
  g_assert_false(tl_scanner_pair_allowed(s, a, b + 544)); /* ring difference 6 */
  g_assert_false(tl_scanner_pair_allowed(s, a, 3));       /* same side */
  g_assert_false(tl_scanner_pair_allowed(s, a, s->n_crystals));
}

static void assert_same(const TlScanner *a, const TlScanner *b) {
  g_assert_cmpstr(a->name, ==, b->name);
  g_assert_cmpuint(a->kind, ==, b->kind);
  g_assert_cmpuint(a->n_crystals, ==, b->n_crystals);
  g_assert_cmpuint(a->n_rings, ==, b->n_rings);
  g_assert_cmpuint(a->crystals_per_ring, ==, b->crystals_per_ring);
  g_assert_cmpuint(a->max_ring_difference, ==, b->max_ring_difference);
  g_assert_cmpuint(a->tof_bins, ==, b->tof_bins);
  g_assert_cmpfloat(a->tof_bin_mm, ==, b->tof_bin_mm);
  g_assert_cmpfloat(a->tof_fwhm_ps, ==, b->tof_fwhm_ps);
  g_assert_true(memcmp(a->crystal_size, b->crystal_size, sizeof a->crystal_size) == 0);
  double wa[2], wb[2], ra, rb;
  tl_scanner_energy(a, wa, &ra);
  tl_scanner_energy(b, wb, &rb);
  g_assert_cmpfloat(wa[0], ==, wb[0]);
  g_assert_cmpfloat(wa[1], ==, wb[1]);
  g_assert_cmpfloat(ra, ==, rb);
  g_assert_true(memcmp(a->crystals, b->crystals, sizeof(TlCrystal) * a->n_crystals) == 0);
  g_autofree char *ka = tl_scanner_key(a), *kb = tl_scanner_key(b);
  g_assert_cmpstr(ka, ==, kb);
}

static void roundtrip(const TlScanner *s, gboolean expect_table) {
  GError *error = NULL;
  g_autofree char *path = g_build_filename(tmpdir, "scanner.txt", NULL);
  g_assert_true(tl_scanner_save(s, path, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_assert_true((strstr(text, "\ncrystals = ") != NULL) == expect_table);
  g_autoptr(TlScanner) back = tl_scanner_load(path, &error);
  g_assert_no_error(error);
  assert_same(s, back);
}

static void test_roundtrip(void) {
  for (const char *const *p = tl_scanner_preset_names(); *p; p++) {
    g_autoptr(TlScanner) s = preset(*p);
    roundtrip(s, FALSE);
    s->max_ring_difference = 0;
    roundtrip(s, FALSE);
  }
  /* an edited table is saved as a table and read back bit for bit */
  g_autoptr(TlScanner) s = preset("small-animal");
  s->crystals[7].centre[0] += 0.123f;
  roundtrip(s, TRUE);
}

static TlScanner *from_text(const char *text, GError **error) {
  return tl_scanner_from_text(text, "test.txt", 1, error);
}

static void test_text(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) a = from_text("preset = dmi  # start from the DMI\n"
                                     "rings = 4\nmax_ring_difference = 2\ntof_bins = 0\n", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->n_crystals, ==, 4 * 544);
  g_assert_cmpuint(a->max_ring_difference, ==, 2);
  g_autoptr(TlScanner) b = from_text("kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 4\n"
                                     "crystal_pitch_mm = 4\nradius_mm = 50\nring_pitch_mm = 5\n",
                                     &error);
  g_assert_no_error(error);
  g_assert_cmpuint(b->n_crystals, ==, 64);
  g_assert_cmpuint(b->max_ring_difference, ==, 1);
  g_assert_cmpfloat(b->crystal_size[1], ==, 5.0f);
  g_autoptr(TlScanner) c = from_text("kind = dual-head\nhead_crystals = 3 2\nhead_pitch_mm = 2 2.5\n"
                                     "head_distance_mm = 40\n", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(c->n_crystals, ==, 12);
  g_autoptr(TlScanner) d = from_text("kind = ring\ncrystal_size_mm = 4 4 20\ncrystals = 2\n"
                                     "# x y z nx ny nz group ring\n"
                                     "100 0 0 -1 0 0 0 0\n\n-100 0 0 1 0 0 1 0\n", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(d->n_crystals, ==, 2);
  g_assert_true(tl_scanner_pair_allowed(d, 0, 1));
}

static void expect_error(const char *text, const char *const *parts) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = from_text(text, &error);
  g_assert_null(s);
  g_assert_nonnull(error);
  g_assert_cmpuint(error->domain, ==, TL_ERROR);
  for (; *parts; parts++)
    if (!strstr(error->message, *parts)) g_error("'%s' lacks '%s'", error->message, *parts);
  g_error_free(error);
}

static void test_errors(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_preset("pet-ct-9000", &error);
  g_assert_null(s);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "'pet-ct-9000'"));
  g_assert_nonnull(strstr(error->message, "dmi"));
  g_clear_error(&error);
  expect_error("preset = dmi\nringz = 4\n", (const char *[]){"test.txt:2", "'ringz'", NULL});
  expect_error("preset = dmi\nrings = four\n",
               (const char *[]){"test.txt:2", "'rings'", "'four'", "integer", NULL});
  expect_error("preset = dmi\ntof_bin_mm = 1 2\n", (const char *[]){"test.txt:2", "'tof_bin_mm'", NULL});
  expect_error("kind = ring\nrings = 2\n", (const char *[]){"missing key", "ring", NULL});
  expect_error("preset = dmi\nhead_crystals = 3 3\n",
               (const char *[]){"test.txt:2", "'head_crystals'", "ring", NULL});
  expect_error("preset = nope\n", (const char *[]){"test.txt:1", "'nope'", NULL});
  expect_error("preset = dmi\nrings = 3\nrings = 4\n", (const char *[]){"test.txt:3", "line 2", NULL});
  expect_error("kind = ring\ncrystal_size_mm = 4 4 20\ncrystals = 3\n1 0 0 -1 0 0 0 0\n",
               (const char *[]){"1 of 3 rows", NULL});
  expect_error("just words\n", (const char *[]){"test.txt:1", "key = value", NULL});
  /* values the layout cannot hold */
  s = from_text("preset = dmi\ncrystals_per_side = 40\n", &error);
  g_assert_null(s);
  g_assert_nonnull(strstr(error->message, "40 crystals"));
  g_clear_error(&error);
  s = from_text("preset = dmi\nmax_ring_difference = 36\n", &error);
  g_assert_null(s);
  g_assert_nonnull(strstr(error->message, "max_ring_difference 36"));
  g_clear_error(&error);
  s = from_text("preset = dmi\ntof_bins = 28\n", &error);
  g_assert_null(s);
  g_assert_nonnull(strstr(error->message, "28 TOF bins"));
  g_clear_error(&error);
  s = tl_scanner_load("/nonexistent/scanner.txt", &error);
  g_assert_null(s);
  g_assert_nonnull(error);
  g_clear_error(&error);
}

static void test_key(void) {
  g_autoptr(TlScanner) a = preset("dmi"), b = preset("dmi");
  g_autofree char *ka = tl_scanner_key(a), *kb = tl_scanner_key(b);
  g_assert_cmpstr(ka, ==, kb);
  b->max_ring_difference = 10;
  g_autofree char *kc = tl_scanner_key(b);
  g_assert_cmpstr(ka, !=, kc);
  g_autoptr(TlScanner) c = tl_scanner_copy(a);
  g_autofree char *kd = tl_scanner_key(c);
  g_assert_cmpstr(ka, ==, kd);
}

/* The energy window and resolution: the presets' published values, optional keys (older
 * descriptions load with the defaults), the preset's values kept under overrides, bounds,
 * the printed form, a table built in code without them, and no effect on the cache key. */
static void energy_is(const TlScanner *s, double lo, double hi, double res) {
  double w[2], r;
  tl_scanner_energy(s, w, &r);
  g_assert_cmpfloat_with_epsilon(w[0], lo, 1e-4);
  g_assert_cmpfloat_with_epsilon(w[1], hi, 1e-4);
  g_assert_cmpfloat_with_epsilon(r, res, 1e-6);
}

static void test_energy(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) dmi = preset("dmi"), sa = preset("small-animal"), dh = preset("dual-head");
  energy_is(dmi, 425, 650, 0.094);
  energy_is(sa, 350, 625, 0.146);
  energy_is(dh, 400, 650, 0.17);
  /* an older description (no energy keys): the defaults; a preset override: the preset's */
  g_autoptr(TlScanner) old = from_text("kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 4\n"
                                       "crystal_pitch_mm = 4\nradius_mm = 50\nring_pitch_mm = 5\n",
                                       &error);
  g_assert_no_error(error);
  energy_is(old, TL_SCANNER_DEFAULT_ENERGY_LOW_KEV, TL_SCANNER_DEFAULT_ENERGY_HIGH_KEV,
            TL_SCANNER_DEFAULT_ENERGY_RESOLUTION);
  g_autoptr(TlScanner) ov = from_text("preset = dmi\nrings = 4\n", &error);
  g_assert_no_error(error);
  energy_is(ov, 425, 650, 0.094);
  g_autoptr(TlScanner) set = from_text("preset = dmi\nenergy_window_kev = 435 585\n"
                                       "energy_resolution = 0.11\n", &error);
  g_assert_no_error(error);
  energy_is(set, 435, 585, 0.11);
  g_autoptr(TlScanner) table = from_text("kind = ring\ncrystal_size_mm = 4 4 20\n"
                                         "energy_window_kev = 0 1000\nenergy_resolution = 0\n"
                                         "crystals = 2\n100 0 0 -1 0 0 0 0\n-100 0 0 1 0 0 1 0\n",
                                         &error);
  g_assert_no_error(error);
  energy_is(table, 0, 1000, 0); /* wide open, ideal resolution: allowed */
  roundtrip(set, FALSE);
  roundtrip(table, TRUE);
  g_autofree char *printed = tl_scanner_to_text(set);
  g_assert_nonnull(strstr(printed, "\nenergy_window_kev = 435 585\nenergy_resolution = 0.11\n"));
  /* a table built in code without the fields (all 0): the defaults, printed explicitly */
  g_autoptr(TlScanner) code = tl_scanner_copy(old);
  memset(code->energy_window_kev, 0, sizeof code->energy_window_kev);
  code->energy_resolution = 0;
  g_assert_true(tl_scanner_validate(code, &error));
  energy_is(code, 350, 650, 0.15);
  g_autofree char *ctext = tl_scanner_to_text(code);
  g_autoptr(TlScanner) cback = from_text(ctext, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(cback->energy_window_kev[0], ==, 350.0f);
  g_assert_cmpfloat(cback->energy_resolution, ==, 0.15f);
  /* bounds, in the text and in the struct */
  expect_error("preset = dmi\nenergy_window_kev = 650 425\n",
               (const char *[]){"test.txt:2", "'energy_window_kev'", "'650 425'", "low < high", NULL});
  expect_error("preset = dmi\nenergy_window_kev = -5 600\n",
               (const char *[]){"test.txt:2", "'-5 600'", NULL});
  expect_error("preset = dmi\nenergy_window_kev = 400 20000\n", (const char *[]){"10000", NULL});
  expect_error("preset = dmi\nenergy_window_kev = 0 0\nenergy_resolution = 0\n",
               (const char *[]){"'energy_window_kev'", "'0 0'", NULL});
  expect_error("preset = dmi\nenergy_window_kev = 400\n", (const char *[]){"'energy_window_kev'", NULL});
  expect_error("preset = dmi\nenergy_resolution = 9.4\n",
               (const char *[]){"test.txt:2", "'energy_resolution'", "'9.4'", "[0, 1]", NULL});
  expect_error("preset = dmi\nenergy_resolution = nan\n", (const char *[]){"'energy_resolution'", NULL});
  g_autoptr(TlScanner) bad = preset("dmi");
  bad->energy_window_kev[1] = 300;
  g_assert_false(tl_scanner_validate(bad, &error));
  g_assert_nonnull(strstr(error->message, "energy window 425-300 keV"));
  g_clear_error(&error);
  bad->energy_window_kev[1] = 650;
  bad->energy_resolution = -0.1f;
  g_assert_false(tl_scanner_validate(bad, &error));
  g_assert_nonnull(strstr(error->message, "energy resolution -0.1"));
  g_clear_error(&error);
  /* copies keep them; the cache key ignores them (no projection depends on them) */
  g_autoptr(TlScanner) cp = tl_scanner_copy(set);
  energy_is(cp, 435, 585, 0.11);
  g_autofree char *k1 = tl_scanner_key(dmi), *k2 = tl_scanner_key(set);
  g_assert_cmpstr(k1, ==, k2);
}

static void test_upload(void) {
  TlContext *ctx = tl_test_context();
  g_autoptr(TlScanner) s = preset("dual-head");
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_scanner_upload(s, ctx, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_array_length(a), ==, s->n_crystals);
  g_assert_cmpuint(tl_array_elem_size(a), ==, 32);
  g_autofree TlCrystal *back = g_new(TlCrystal, s->n_crystals);
  g_assert_true(tl_array_download(a, back, &error));
  g_assert_true(memcmp(back, s->crystals, sizeof(TlCrystal) * s->n_crystals) == 0);
  g_clear_pointer(&a, tl_array_free);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-pet-scanner-XXXXXX", NULL);
  g_test_add_func("/pet/scanner/dmi", test_dmi);
  g_test_add_func("/pet/scanner/dual-head", test_dual_head);
  g_test_add_func("/pet/scanner/small-animal", test_small_animal);
  g_test_add_func("/pet/scanner/pairs", test_pairs);
  g_test_add_func("/pet/scanner/roundtrip", test_roundtrip);
  g_test_add_func("/pet/scanner/text", test_text);
  g_test_add_func("/pet/scanner/errors", test_errors);
  g_test_add_func("/pet/scanner/key", test_key);
  g_test_add_func("/pet/scanner/energy", test_energy);
  g_test_add_func("/pet/scanner/upload", test_upload);
  int rc = g_test_run();
  g_autofree char *f = g_build_filename(tmpdir, "scanner.txt", NULL);
  g_remove(f);
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
