/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Monte-Carlo simulator and list-mode files: determinism, attenuation against the analytic
 * mean, the TOF convention, file validation, histogram, device upload. */
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "pet/simulate/tl-simulate.h"
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


/* A water cylinder on the small-animal scanner: quick, attenuating. */
static void small_case(TlScanner **s, TlImage **act, TlImage **mu) {
  *s = preset("small-animal");
  TlImageGrid g = tl_image_grid_centred(32, 32, 40, 2, 2, 2);
  TlPhantomOptions o;
  tl_phantom_options_init(&o);
  o.radius_mm = 25;
  o.length_mm = 60;
  GError *error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("cylinder", &o, &g, &error);
  g_assert_true(tl_phantom_rasterise(ph, &g, 2, act, mu, &error));
  g_assert_no_error(error);
}

static char *save(const TlListmode *lm, const char *name) {
  GError *error = NULL;
  char *path = g_build_filename(tmpdir, name, NULL);
  g_assert_true(tl_listmode_save(lm, path, &error));
  g_assert_no_error(error);
  return path;
}

static gboolean same_file(const char *a, const char *b) {
  g_autofree char *x = NULL, *y = NULL;
  gsize nx, ny;
  g_assert_true(g_file_get_contents(a, &x, &nx, NULL));
  g_assert_true(g_file_get_contents(b, &y, &ny, NULL));
  return nx == ny && memcmp(x, y, nx) == 0;
}

static void test_determinism(void) {
  g_autoptr(TlScanner) s = NULL;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  small_case(&s, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 20000;
  p.seed = 7;
  p.randoms_fraction = 0.1;
  p.n_threads = 2;
  TlSimulateStats st;
  g_autoptr(TlListmode) a = fx_simulate(s, act, mu, &p, &st);
  p.n_threads = 1;
  g_autoptr(TlListmode) b = fx_simulate(s, act, mu, &p, NULL);
  p.seed = 8;
  g_autoptr(TlListmode) c = fx_simulate(s, act, mu, &p, NULL);
  g_autofree char *pa = save(a, "a.tlm"), *pb = save(b, "b.tlm"), *pc = save(c, "c.tlm");
  g_assert_true(same_file(pa, pb)); /* same seed, any thread count */
  g_assert_false(same_file(pa, pc));
  /* Poisson total around the mean; the simulated share lost to attenuation is plausible */
  g_assert_cmpfloat(fabs((double)a->n_events - 20000), <, 5 * sqrt(20000.0));
  g_assert_cmpuint(a->n_events, ==, st.trues + st.randoms);
  g_assert_cmpuint(st.geometric - st.attenuated, ==, st.trues);
  g_test_message("%" G_GUINT64_FORMAT " events, %.3g decays, survival %.3f", a->n_events,
                 st.decays, 1.0 - (double)st.attenuated / st.geometric);
  g_remove(pa);
  g_remove(pb);
  g_remove(pc);
}

static void test_exact_randoms(void) {
  g_autoptr(TlScanner) s = NULL;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  small_case(&s, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 10000;
  p.exact_count = TRUE;
  p.randoms_fraction = 0.25;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, NULL, &p, &st);
  g_assert_cmpuint(lm->n_events, ==, 10000);
  g_assert_cmpuint(st.randoms, ==, 2500);
  g_assert_cmpuint(st.attenuated, ==, 0);
  for (guint64 i = 0; i < lm->n_events; i++)
    g_assert_true(tl_scanner_pair_allowed(s, lm->events[i].a, lm->events[i].b));
}

/* A point source at the centre of a water cylinder (radius R = 50 mm, half-length H = 10 mm)
 * in a 34-sided ring of 36 contiguous rings (the DMI without module gaps). A pair along
 * polar angle theta (from the axis) and azimuth phi crosses L(theta) = 2 min(R / sin theta,
 * H / |cos theta|) of water and survives with exp(-mu L) (van Gendt et al. 2021 eq. 6). It is
 * detected
 * when its photon meets a crystal face: on the side facing phi, at transaxial offset
 * u = R_s tan(phi - phi_s) within half a side's crystals, and at axial height
 * z = R_s / cos(phi - phi_s) * cot theta within the rings (the opposite photon mirrors it).
 * Directions are uniform in (cos theta, phi), so the expected ratio of detected events with
 * and without attenuation is the mean of exp(-mu L) over the accepted directions, integrated
 * here on a fine grid. H < R tan(theta) for part of the accepted cone, so both branches of
 * L count. */
static void test_attenuation_ratio(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_from_text(
      "kind = ring\nrings = 36\nsides = 34\ncrystals_per_side = 16\ncrystal_pitch_mm = 4.03125\n"
      "radius_mm = 380.56\nring_pitch_mm = 5.31556\n", "test", 1, &error);
  g_assert_no_error(error);
  const double R = 50, H = 10, mu = TL_MU_WATER, Rs = 380.56, half_u = 8 * 4.03125,
               half_z = 18 * 5.31556;
  double num = 0, den = 0;
  const int nc = 4000, np = 400;
  for (int i = 0; i < nc; i++) {
    double c = -1 + (i + 0.5) * 2.0 / nc, sn = sqrt(1 - c * c);
    double L = 2 * MIN(R / sn, H / fabs(c));
    for (int j = 0; j < np; j++) {
      double dphi = (-0.5 + (j + 0.5) / np) * 2 * G_PI / 34; /* relative to the facing side */
      double u = Rs * tan(dphi), z = Rs / cos(dphi) * c / sn;
      if (fabs(u) > half_u || fabs(z) > half_z) continue;
      num += exp(-mu * L);
      den += 1;
    }
  }
  double expected = num / den;

  TlImageGrid g = tl_image_grid_centred(101, 101, 21, 1, 1, 1);
  g_autoptr(TlPhantom) cyl = tl_phantom_new("water");
  TlShape sh = {TL_SHAPE_CYLINDER, {0, 0, 0}, (float)R, (float)H, 2, 0, TL_MU_WATER, TL_SHAPE_SETS_MU};
  tl_phantom_add(cyl, &sh);
  g_autoptr(TlImage) mu_map = NULL;
  g_assert_true(tl_phantom_rasterise(cyl, &g, 8, NULL, &mu_map, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) act = fx_point_source(0, 0, 0);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.decays = 4.5e5;
  p.seed = 3;
  TlSimulateStats sa, sb;
  g_autoptr(TlListmode) with = fx_simulate(s, act, mu_map, &p, &sa);
  g_autoptr(TlListmode) without = fx_simulate(s, act, NULL, &p, &sb);
  double ratio = (double)with->n_events / without->n_events;
  g_test_message("detected %" G_GUINT64_FORMAT " / %" G_GUINT64_FORMAT " = %.4f, analytic %.4f "
                 "(%.1f s)", with->n_events, without->n_events, ratio, expected, sa.seconds + sb.seconds);
  g_assert_cmpuint(without->n_events, >, 50000);
  g_assert_cmpfloat(fabs(ratio / expected - 1), <, 0.02);
  /* and the geometric acceptance itself: accepted share of all directions */
  double accepted = den / ((double)nc * np);
  g_assert_cmpfloat(fabs(without->n_events / sb.decays / accepted - 1), <, 0.02);
}

/* docs/formats.md: bin 0 holds the LOR midpoint, positive bins lie towards crystal b, bin
 * width tof_bin_mm, Gaussian sigma = c/2 FWHM / 2.355. The measured offset minus the true one
 * must be centred with that spread (plus the bin's uniform rounding). */
static void test_tof(void) {
  g_autoptr(TlScanner) s = preset("dmi");
  g_autoptr(TlImage) act = fx_point_source(100, -40, 20);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 20000;
  p.tof = TRUE;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, NULL, &p, NULL);
  g_assert_true(lm->has_tof);
  double sum = 0, sum2 = 0, pos[3] = {100, -40, 20};
  for (guint64 i = 0; i < lm->n_events; i++) {
    const float *A = s->crystals[lm->events[i].a].centre, *B = s->crystals[lm->events[i].b].centre;
    double u[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]}, len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    double st = 0;
    for (int k = 0; k < 3; k++) st += (pos[k] - 0.5 * (A[k] + B[k])) * u[k] / len;
    double d = lm->events[i].tof_bin * s->tof_bin_mm - st;
    sum += d;
    sum2 += d * d;
  }
  double n = lm->n_events, mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
  double sigma = tl_scanner_tof_sigma_mm(s), expect_sd = sqrt(sigma * sigma + s->tof_bin_mm * s->tof_bin_mm / 12);
  g_test_message("TOF offset error: mean %.2f mm, sd %.2f mm (expected 0, %.2f)", mean, sd, expect_sd);
  g_assert_cmpfloat(fabs(mean), <, 1.0);
  g_assert_cmpfloat(fabs(sd / expect_sd - 1), <, 0.03);
}

static void expect_load_error(const char *path, const char *part) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = tl_listmode_load(path, &error);
  g_assert_null(lm);
  g_assert_nonnull(error);
  if (!strstr(error->message, part)) g_error("'%s' lacks '%s'", error->message, part);
  g_assert_nonnull(strstr(error->message, path));
  g_error_free(error);
}

static void test_listmode_files(void) {
  g_autoptr(TlScanner) s = NULL;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  small_case(&s, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 3000;
  p.description = "cylinder #1: a=b";
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, NULL);
  g_assert_true(g_str_has_prefix(lm->description, "cylinder #1: a=b "));
  g_autofree char *path = save(lm, "io.tlm");
  GError *error = NULL;
  g_autoptr(TlListmode) back = tl_listmode_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->n_events, ==, lm->n_events);
  g_assert_true(memcmp(back->events, lm->events, 12 * lm->n_events) == 0);
  g_assert_cmpstr(back->description, ==, lm->description);
  g_autofree char *k1 = tl_scanner_key(lm->scanner), *k2 = tl_scanner_key(back->scanner);
  g_assert_cmpstr(k1, ==, k2);

  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  gsize start = strstr(bytes, "end_header\n") + strlen("end_header\n") - bytes; /* the events */
  g_autofree char *bad = g_build_filename(tmpdir, "bad.tlm", NULL);
  g_assert_true(g_file_set_contents(bad, bytes, len - 5, NULL));
  expect_load_error(bad, "truncated");
  g_autofree char *more = g_malloc0(len + 12);
  memcpy(more, bytes, len);
  g_assert_true(g_file_set_contents(bad, more, len + 12, NULL));
  expect_load_error(bad, "oversized");
  g_autofree char *patched = g_memdup2(bytes, len);
  guint32 id = GUINT32_TO_LE(999999);
  memcpy(patched + start + 5 * 12, &id, 4);
  g_assert_true(g_file_set_contents(bad, patched, len, NULL));
  expect_load_error(bad, "event 5: crystal id 999999 out of range");
  memcpy(patched, bytes, len);
  gint32 bin = GINT32_TO_LE(3); /* a TOF bin in a file without TOF */
  memcpy(patched + start + 7 * 12 + 8, &bin, 4);
  g_assert_true(g_file_set_contents(bad, patched, len, NULL));
  expect_load_error(bad, "event 7: TOF bin 3");
  memcpy(patched, bytes, len);
  guint32 ab[2];
  memcpy(ab, patched + start, 8);
  ab[1] = ab[0] ^ 1; /* a neighbour on the same block side */
  memcpy(patched + start, ab, 8);
  g_assert_true(g_file_set_contents(bad, patched, len, NULL));
  expect_load_error(bad, "event 0: crystals");
  memcpy(patched, bytes, len);
  patched[0] = 'X';
  g_assert_true(g_file_set_contents(bad, patched, len, NULL));
  expect_load_error(bad, "not a Tomolab list-mode file");
  g_autofree char *hdr = g_strdup("TOMOLAB-LISTMODE 1\nevents = 1\nevent_bytes = 12\n"
                                  "byte_order = little-endian\ntof = 0\nbegin_scanner\n"
                                  "preset = pet-ct-9000\nend_scanner\nend_header\n");
  g_assert_true(g_file_set_contents(bad, hdr, -1, NULL));
  expect_load_error(bad, "pet-ct-9000");
  expect_load_error("/nonexistent/x.tlm", "cannot open");
  g_remove(bad);
  g_remove(path);
}

static void test_bad_input(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = preset("small-animal");
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 100;
  g_autoptr(TlImage) act = fx_point_source(0, 0, 0);
  act->data[0] = NAN;
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "activity image"));
  g_assert_nonnull(strstr(error->message, "nan"));
  g_clear_error(&error);
  act->data[0] = -2;
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "-2"));
  g_clear_error(&error);
  act->data[0] = 1;
  act->grid.dims[1] = 0;
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "along y is 0"));
  g_clear_error(&error);
  act->grid.dims[1] = 1;
  p.tof = TRUE; /* the small-animal preset has no TOF */
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "TOF"));
  g_clear_error(&error);
  p.tof = FALSE;
  g_autoptr(TlImage) outside = fx_point_source(500, 0, 0);
  g_assert_null(tl_simulate(s, outside, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "no activity inside"));
  g_clear_error(&error);
  p.randoms_fraction = 1.5;
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(strstr(error->message, "randoms fraction 1.5"));
  g_clear_error(&error);
  p.randoms_fraction = 0;
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  g_cancellable_cancel(cancel);
  g_assert_null(tl_simulate(s, act, NULL, &p, NULL, NULL, cancel, NULL, &error));
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
}

static void on_progress(double f, guint64 events, gpointer data) { *(double *)data = f; }

static void test_histogram_progress(void) {
  g_autoptr(TlScanner) s = preset("dual-head");
  TlImageGrid g = tl_scanner_default_grid(s);
  TlPhantomOptions o;
  tl_phantom_options_init(&o);
  o.axis = 0;
  GError *error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("derenzo", &o, &g, &error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 2, &act, &mu, &error));
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 20000;
  double last = -1;
  g_autoptr(TlListmode) lm = tl_simulate(s, act, mu, &p, on_progress, &last, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(last, ==, 1.0);
  for (guint64 i = 0; i < lm->n_events; i++)
    g_assert_cmpuint(s->crystals[lm->events[i].a].group, !=, s->crystals[lm->events[i].b].group);
  g_autoptr(GArray) bins = tl_listmode_histogram(lm);
  double total = 0;
  for (guint i = 0; i < bins->len; i++) {
    const TlBin *b = &g_array_index(bins, TlBin, i);
    g_assert_cmpuint(b->a, <, b->b);
    if (i) {
      const TlBin *q = b - 1;
      g_assert_true(q->a < b->a || (q->a == b->a && q->b < b->b));
    }
    total += b->count;
  }
  g_assert_cmpfloat(total, ==, (double)lm->n_events);
}

static void test_upload(void) {
  TlContext *ctx = tl_test_context();
  g_autoptr(TlScanner) s = NULL;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  small_case(&s, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 5000;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, NULL);
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_listmode_upload(lm, ctx, 100, 1000, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_array_elem_size(a), ==, 12);
  g_assert_cmpuint(tl_array_length(a), ==, 1000);
  g_autofree TlEvent *back = g_new(TlEvent, 1000);
  g_assert_true(tl_array_download(a, back, &error));
  g_assert_true(memcmp(back, lm->events + 100, 12000) == 0);
  g_assert_null(tl_listmode_upload(lm, ctx, lm->n_events, 1, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_clear_pointer(&a, tl_array_free);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-pet-sim-XXXXXX", NULL);
  g_test_add_func("/pet/simulate/determinism", test_determinism);
  g_test_add_func("/pet/simulate/exact-randoms", test_exact_randoms);
  g_test_add_func("/pet/simulate/attenuation-ratio", test_attenuation_ratio);
  g_test_add_func("/pet/simulate/tof", test_tof);
  g_test_add_func("/pet/simulate/listmode-files", test_listmode_files);
  g_test_add_func("/pet/simulate/bad-input", test_bad_input);
  g_test_add_func("/pet/simulate/histogram-progress", test_histogram_progress);
  g_test_add_func("/pet/simulate/upload", test_upload);
  int rc = g_test_run();
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
