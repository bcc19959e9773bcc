/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The simulator's physics (issue 13 item 1) against independent references: the Klein-Nishina
 * sampler against the analytic distribution (and wrong samplers failing the same check), the
 * Compton energy, the energy window's acceptance against the Gaussian CDF, the interaction
 * probability 1 - exp(-mu R), unscattered pairs unchanged by scatter, crystal efficiencies,
 * randoms from singles against 2 tau S_i S_j T computed here by brute force, delayeds against
 * prompt randoms, tl_randoms_from_delayeds against the truth, truth tags and their file
 * block, determinism over thread counts. */
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "image/tl-rng.h"
#include "pet/simulate/tl-compton.h"
#include "pet/correct/tl-randoms.h"
#include "pet/simulate/tl-simulate.h"
#include "dataset/tl-formats.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

#define ME_KEV 510.99895 /* m_e c^2, CODATA 2018 */

/* A small ring: 8 rings of 12 sides x 4 crystals (384), 60 mm radius, 4 mm pitch; quick. */
static const char *small_ring =
    "name = test-ring\nkind = ring\nrings = 8\nsides = 12\ncrystals_per_side = 4\n"
    "crystal_pitch_mm = 4\nradius_mm = 60\nring_pitch_mm = 4\n";

static TlScanner *scanner_text(const char *text) {
  GError *error = NULL;
  TlScanner *s = tl_scanner_from_text(text, "test", 1, &error);
  g_assert_no_error(error);
  return s;
}

static TlScanner *small_scanner(const char *extra) {
  g_autofree char *t = g_strconcat(small_ring, extra ? extra : "", NULL);
  return scanner_text(t);
}

/* A water cylinder (activity and mu) of radius r and length l on a grid of 1 mm voxels. */
static void water_cylinder(float r, float l, guint n, guint nz, TlImage **act, TlImage **mu) {
  TlImageGrid g = tl_image_grid_centred(n, n, nz, 1, 1, 1);
  g_autoptr(TlPhantom) ph = tl_phantom_new("water");
  TlShape sh = {TL_SHAPE_CYLINDER, {0, 0, 0}, r, 0.5f * l, 2, 1, TL_MU_WATER,
                TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU};
  tl_phantom_add(ph, &sh);
  GError *error = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 2, act, mu, &error));
  g_assert_no_error(error);
}


/* ---- Klein-Nishina: the test's own formulas (Klein & Nishina 1929) ---- */

/* d sigma / d Omega / (r_e^2 / 2) = P^2 (P + 1/P - sin^2 theta), P = 1 / (1 + a (1 - c)) */
static double kn_shape(double e_kev, double c) {
  double P = 1.0 / (1.0 + e_kev / ME_KEV * (1.0 - c));
  return P * P * (P + 1.0 / P - (1.0 - c * c));
}

/* Simpson's rule of kn_shape (or Thomson's 1 + c^2, or a constant) over [lo, hi]. */
static double integrate(double (*f)(double, double), double e, double lo, double hi) {
  const int n = 200;
  double h = (hi - lo) / n, s = f(e, lo) + f(e, hi);
  for (int i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * f(e, lo + i * h);
  return s * h / 3;
}

#define KN_BINS 40
typedef double (*Sampler)(TlRng *, double);

static double sample_isotropic(TlRng *r, double e) { return 2 * tl_rng_uniform(r) - 1; }
/* Thomson (the low-energy limit): pdf proportional to 1 + c^2, by rejection */
static double sample_thomson(TlRng *r, double e) {
  for (;;) {
    double c = 2 * tl_rng_uniform(r) - 1;
    if (2 * tl_rng_uniform(r) <= 1 + c * c) return c;
  }
}

/* chi^2 / dof of n draws of cos theta against Klein-Nishina at energy e, 40 bins */
static double kn_chi2(Sampler draw, double e, guint n, guint64 seed) {
  TlRng r;
  tl_rng_init(&r, seed, 0);
  guint64 h[KN_BINS] = {0};
  for (guint i = 0; i < n; i++) {
    double c = draw(&r, e);
    g_assert_cmpfloat(fabs(c), <=, 1.0);
    h[MIN((int)((c + 1) / 2 * KN_BINS), KN_BINS - 1)]++;
  }
  double total = integrate(kn_shape, e, -1, 1), chi2 = 0;
  for (int b = 0; b < KN_BINS; b++) {
    double lo = -1 + 2.0 * b / KN_BINS, hi = lo + 2.0 / KN_BINS;
    double expect = n * integrate(kn_shape, e, lo, hi) / total;
    chi2 += (h[b] - expect) * (h[b] - expect) / expect;
  }
  return chi2 / (KN_BINS - 1);
}

static void test_kn_sampler(void) {
  const guint n = 200000;
  for (int k = 0; k < 2; k++) {
    double e = k ? 250.0 : ME_KEV;
    double kahn = kn_chi2(tl_klein_nishina_sample, e, n, 11 + k);
    double iso = kn_chi2(sample_isotropic, e, n, 11 + k), thom = kn_chi2(sample_thomson, e, n, 11 + k);
    g_test_message("KN sampler at %.0f keV, %u draws, 40 bins: chi2/dof Kahn %.2f, isotropic %.0f, "
                   "Thomson %.0f", e, n, kahn, iso, thom);
    g_assert_cmpfloat(kahn, <, 1.5);
    /* the check fails wrong samplers by far */
    g_assert_cmpfloat(iso, >, 20);
    g_assert_cmpfloat(thom, >, 20);
  }
  /* the library's differential and total cross-sections against this file's formula */
  const double re2 = 2.8179403262e-13 * 2.8179403262e-13;
  for (double c = -1; c <= 1.0001; c += 0.25)
    g_assert_cmpfloat(fabs(tl_klein_nishina_diff(ME_KEV, c) / (0.5 * re2 * kn_shape(ME_KEV, c)) - 1),
                      <, 1e-12);
  for (int k = 0; k < 4; k++) {
    double e = (double[]){ME_KEV, 350, 150, 30}[k];
    double total = 2 * G_PI * 0.5 * re2 * integrate(kn_shape, e, -1, 1);
    g_assert_cmpfloat(fabs(tl_klein_nishina_total(e) / total - 1), <, 1e-7);
  }
  /* water: electron density (10 electrons per 18.015 g/mol, 0.997 g/cm^3) times sigma_KN is
   * the 0.0096 mm^-1 the phantoms use (Compton only) */
  double ne = 0.997 / 18.015 * 6.02214076e23 * 10;
  double mu = ne * tl_klein_nishina_total(ME_KEV) / 10; /* mm^-1 */
  g_test_message("water: n_e sigma_KN(511 keV) = %.5f mm^-1 (TL_MU_WATER %.4f)", mu, TL_MU_WATER);
  g_assert_cmpfloat(fabs(mu / TL_MU_WATER - 1), <, 0.01);
}

/* E' = E / (1 + (E / m c^2)(1 - cos theta)), written here; and the energy resolution's
 * acceptance at 511 keV through the whole simulator against the Gaussian CDF. */
static void test_energy(void) {
  TlRng r;
  tl_rng_init(&r, 5, 0);
  for (int i = 0; i < 1000; i++) {
    double c = tl_klein_nishina_sample(&r, ME_KEV);
    double expect = ME_KEV / (1 + (1 - c));
    g_assert_cmpfloat(fabs(tl_compton_energy(ME_KEV, c) - expect), <, 1e-9);
  }
  g_assert_cmpfloat(fabs(tl_compton_energy(ME_KEV, -1) - ME_KEV / 3), <, 1e-9); /* 170.3 keV */
  g_assert_cmpfloat(tl_compton_energy(400, 1), ==, 400);
  /* sigma(E) with FWHM proportional to sqrt(E): r 511 sqrt(E / 511) / 2.3548 */
  for (double e = 100; e <= 600; e += 100)
    g_assert_cmpfloat(fabs(tl_energy_sigma_kev(0.12, e) -
                           0.12 * ME_KEV * sqrt(e / ME_KEV) / (2 * sqrt(2 * log(2.0)))), <, 1e-9);

  /* A point source in a near-vacuum (mu 1e-9 mm^-1: scatter on, practically no interaction),
   * a narrow window 480-540 keV at 15 %: each photon reaching a crystal is kept with
   * Phi((540 - 511) / sigma) - Phi((480 - 511) / sigma). */
  g_autoptr(TlScanner) s =
      small_scanner("energy_window_kev = 480 540\nenergy_resolution = 0.15\n");
  g_autoptr(TlImage) act = fx_point_source(0.3, -0.2, 0.1);
  TlImageGrid g = tl_image_grid_centred(8, 8, 8, 4, 4, 4);
  g_autoptr(TlImage) mu = tl_image_new(&g);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&g); i++) mu->data[i] = 1e-9f;
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.decays = 4e5;
  p.scatter = TRUE;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, &st);
  double sigma = 0.15 * ME_KEV / (2 * sqrt(2 * log(2.0)));
  double keep = 0.5 * (erfc(-(540 - ME_KEV) / (sigma * G_SQRT2)) - erfc(-(480 - ME_KEV) / (sigma * G_SQRT2)));
  guint64 reached = st.photons - st.missed - st.absorbed;
  double rejected = (double)st.energy_rejected / reached;
  double sd = sqrt(keep * (1 - keep) / reached);
  g_test_message("window 480-540 keV at 15 %%: %" G_GUINT64_FORMAT " photons on crystals, rejected "
                 "%.4f, Gaussian CDF %.4f (sd %.4f); %" G_GUINT64_FORMAT " interacted",
                 reached, rejected, 1 - keep, sd, st.interacted);
  g_assert_cmpuint(reached, >, 50000);
  g_assert_cmpfloat(fabs(rejected - (1 - keep)), <, 4 * sd);
  /* a window 20 keV narrower on each side would be far outside that */
  double narrower = 0.5 * (erfc(-(520 - ME_KEV) / (sigma * G_SQRT2)) - erfc(-(500 - ME_KEV) / (sigma * G_SQRT2)));
  g_assert_cmpfloat(fabs(rejected - (1 - narrower)), >, 20 * sd);
  g_assert_cmpuint(st.scattered, ==, 0);
}

/* A point source at the centre of a water sphere of radius R: every photon crosses R of water
 * and interacts with probability 1 - exp(-mu R) (a 1 mm map, supersampled 4^3 at the edge). */
static double interacted_fraction(const TlScanner *s, float mu_value, TlSimulateStats *st) {
  const float R = 50;
  TlImageGrid g = tl_image_grid_centred(103, 103, 103, 1, 1, 1);
  g_autoptr(TlPhantom) ph = tl_phantom_new("sphere");
  TlShape sh = {TL_SHAPE_SPHERE, {0, 0, 0}, R, 0, 2, 0, mu_value, TL_SHAPE_SETS_MU};
  tl_phantom_add(ph, &sh);
  g_autoptr(TlImage) mu = NULL;
  GError *error = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, NULL, &mu, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) act = fx_point_source(0.01, 0.02, -0.03);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.decays = 1e5;
  p.scatter = TRUE;
  p.seed = 21;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, st);
  return (double)st->interacted / st->photons;
}

static void test_interaction_probability(void) {
  /* wide open: every photon's fate counts, whatever its energy */
  g_autoptr(TlScanner) s = scanner_text(
      "kind = ring\nrings = 16\nsides = 16\ncrystals_per_side = 8\ncrystal_pitch_mm = 4\n"
      "radius_mm = 90\nring_pitch_mm = 4\nenergy_window_kev = 0 10000\nenergy_resolution = 0\n");
  TlSimulateStats st;
  double f = interacted_fraction(s, TL_MU_WATER, &st);
  double expect = 1 - exp(-TL_MU_WATER * 50.0), sd = sqrt(expect * (1 - expect) / st.photons);
  g_test_message("water sphere R = 50 mm, point at the centre: %" G_GUINT64_FORMAT " photons, "
                 "interacted %.4f, 1 - exp(-mu R) = %.4f (sd %.4f); scattered pairs %" G_GUINT64_FORMAT
                 " of %" G_GUINT64_FORMAT, st.photons, f, expect, sd, st.scattered,
                 st.trues + st.scattered);
  g_assert_cmpfloat(fabs(f - expect), <, 4 * sd + 0.002); /* + the map's voxel edges */
  /* mu 10 % off: outside that */
  TlSimulateStats st2;
  double f2 = interacted_fraction(s, 1.1f * TL_MU_WATER, &st2);
  g_assert_cmpfloat(fabs(f2 - expect), >, 4 * sd + 0.002);
  /* every photon that interacted scattered, and some of the pairs were still detected: with the
   * window wide open and no energy loss counted, nothing is rejected for energy */
  g_assert_cmpuint(st.energy_rejected, ==, 0);
  g_assert_cmpuint(st.scattered, >, 0);
}

/* The 20 cm water cylinder (18 cm long) on the DMI with its 425-650 keV window: the scatter
 * fraction is printed; what is asserted is that scatter adds events and leaves the
 * unscattered pairs as the attenuation model without scatter has them (same decays). */
static void test_scatter_fraction_dmi(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_preset("dmi", &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  TlImageGrid g = tl_image_grid_centred(72, 72, 64, 3, 3, 3);
  fx_cylinder(&g, 100, 90, TL_MU_WATER, 2, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.decays = 1.2e6;
  p.seed = 4;
  p.scatter = TRUE;
  TlSimulateStats on, off;
  g_autoptr(TlListmode) a = fx_simulate(s, act, mu, &p, &on);
  p.scatter = FALSE;
  p.seed = 5;
  g_autoptr(TlListmode) b = fx_simulate(s, act, mu, &p, &off);
  double sf = (double)on.scattered / (on.trues + on.scattered);
  double ra = on.trues / on.decays, rb = off.trues / off.decays;
  double sd = sqrt(1.0 / on.trues + 1.0 / off.trues);
  g_test_message("DMI, 20 cm water cylinder, 425-650 keV at 9.4 %%: scatter fraction %.3f (%"
                 G_GUINT64_FORMAT " scattered, %" G_GUINT64_FORMAT " trues; single scatter only); "
                 "trues per decay with scatter %.5f, without %.5f (ratio %.4f, sd %.4f); %.1f s + %.1f s",
                 sf, on.scattered, on.trues, ra, rb, ra / rb, sd, on.seconds, off.seconds);
  g_assert_cmpuint(on.trues, >, 10000);
  g_assert_cmpfloat(fabs(ra / rb - 1), <, 4 * sd);
  g_assert_cmpuint(on.scattered, >, 0);
  g_assert_cmpuint(off.scattered, ==, 0);
  g_assert_cmpuint(a->n_events, ==, on.trues + on.scattered);
}

/* Crystal efficiencies: the counts per crystal with the map over the counts without it follow
 * the map (the partner's efficiency averages out). */
static double correlation(const double *x, const double *y, guint n) {
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (guint i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= n, my /= n;
  for (guint i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / sqrt(sxx * syy);
}

static void crystal_counts(const TlListmode *lm, double *c, guint n) {
  memset(c, 0, sizeof(double) * n);
  for (guint64 i = 0; i < lm->n_events; i++) c[lm->events[i].a]++, c[lm->events[i].b]++;
}

static void test_efficiencies(void) {
  g_autoptr(TlScanner) s = small_scanner(NULL);
  guint n = s->n_crystals;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(25, 34, 56, 36, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 2e5;
  p.seed = 3;
  g_autofree float *eff = g_new(float, n), *other = g_new(float, n);
  g_autoptr(TlListmode) plain = fx_simulate(s, act, NULL, &p, NULL);
  p.efficiency_spread = 0.2;
  p.efficiency_seed = 77;
  p.efficiencies_out = eff;
  TlSimulateStats st;
  g_autoptr(TlListmode) with = fx_simulate(s, act, NULL, &p, &st);
  g_autofree double *c0 = g_new(double, n), *c1 = g_new(double, n), *ratio = g_new(double, n);
  g_autofree double *e = g_new(double, n), *o = g_new(double, n);
  crystal_counts(plain, c0, n);
  crystal_counts(with, c1, n);
  double mean = 0, var = 0;
  for (guint i = 0; i < n; i++) {
    ratio[i] = c1[i] / c0[i];
    e[i] = eff[i];
    mean += e[i] / n;
  }
  for (guint i = 0; i < n; i++) var += (e[i] - mean) * (e[i] - mean) / n;
  /* another efficiency seed: another map; the same efficiency seed with another simulation
   * seed: the same map */
  p.efficiency_seed = 78;
  p.efficiencies_out = other;
  p.events = 1000;
  g_autoptr(TlListmode) x = fx_simulate(s, act, NULL, &p, NULL);
  for (guint i = 0; i < n; i++) o[i] = other[i];
  double r = correlation(ratio, e, n), r_other = correlation(ratio, o, n);
  g_test_message("efficiencies (spread 0.2: drawn mean %.3f, sd %.3f) against counts with / "
                 "without over %u crystals: correlation %.3f; another map: %.3f; %" G_GUINT64_FORMAT
                 " photons lost to them", mean, sqrt(var), n, r, r_other, st.efficiency_rejected);
  g_assert_cmpfloat(fabs(sqrt(var) - 0.2), <, 0.03);
  g_assert_cmpfloat(r, >, 0.9);
  g_assert_cmpfloat(fabs(r_other), <, 0.3);
  p.seed = 99;
  p.efficiency_seed = 77;
  g_autoptr(TlListmode) y = fx_simulate(s, act, NULL, &p, NULL);
  g_assert_true(memcmp(other, eff, sizeof(float) * n) == 0);
  /* a given map: crystal 5 at 1/4 of the others collects 1/4 of their counts (each of its
   * events also needs its partner, at efficiency 1 = max) */
  g_autofree float *given = g_new(float, n);
  for (guint i = 0; i < n; i++) given[i] = 2.0f;
  given[5] = 0.5f;
  tl_simulate_params_init(&p);
  p.events = 2e5;
  p.seed = 3;
  p.efficiencies = given;
  g_autoptr(TlListmode) z = fx_simulate(s, act, NULL, &p, NULL);
  crystal_counts(z, c1, n);
  double others = 0, others0 = 0;
  for (guint i = 0; i < n; i++)
    if (i != 5 && s->crystals[i].ring == s->crystals[5].ring) others += c1[i], others0 += c0[i];
  double got = (c1[5] / others) / (c0[5] / others0);
  g_test_message("given map: crystal 5 at 1/4: relative counts %.3f (sd ~%.3f)", got, 0.25 / sqrt(c1[5]));
  g_assert_cmpfloat(fabs(got - 0.25), <, 5 * 0.25 * sqrt(1 / c1[5] + 1 / c0[5]));
  /* the file: '#' lines, then one value per crystal, read back exactly */
  GError *error = NULL;
  g_autofree char *path = g_build_filename(tmpdir, "eff.txt", NULL);
  tl_simulate_params_init(&p);
  p.efficiency_spread = 0.2;
  p.efficiency_seed = 77;
  g_assert_true(tl_simulate_save_efficiencies(s, eff, &p, path, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint k = 0;
  gboolean seen_count = FALSE;
  for (guint i = 0; lines[i]; i++) {
    if (!lines[i][0]) continue;
    if (lines[i][0] == '#') {
      seen_count |= strcmp(lines[i], "# crystals = 384") == 0;
      continue;
    }
    g_assert_cmpuint(k, <, n);
    g_assert_cmpfloat((float)g_ascii_strtod(lines[i], NULL), ==, eff[k]);
    k++;
  }
  g_assert_true(seen_count);
  g_assert_cmpuint(k, ==, n);
  g_assert_false(tl_simulate_save_efficiencies(s, eff, &p, "/nonexistent/dir/eff.txt", &error));
  g_assert_nonnull(error);
  g_clear_error(&error);
  g_remove(path);
}

/* ---- randoms from singles ---- */

/* A coarse sinogram of a pair: 6 angles x 6 radial offsets x 4 axial sums = 144 bins. */
#define COARSE 144
static guint coarse_bin(const TlScanner *s, guint a, guint b) {
  const float *A = s->crystals[a].centre, *B = s->crystals[b].centre;
  double dx = B[0] - A[0], dy = B[1] - A[1], l = hypot(dx, dy);
  double phi = atan2(dy, dx);
  if (phi < 0) phi += G_PI;
  if (phi >= G_PI) phi -= G_PI;
  double off = (A[0] * dy - A[1] * dx) / l; /* signed distance of the line from the axis */
  if (atan2(dy, dx) < 0) off = -off;
  guint ia = MIN((guint)(phi / G_PI * 6), 5), ir = (guint)CLAMP((off + 60) / 20, 0, 5);
  guint iz = (s->crystals[a].ring + s->crystals[b].ring) * 4 / (2 * s->n_rings - 1);
  return (ia * 6 + ir) * 4 + MIN(iz, 3);
}

static void coarse(const TlScanner *s, const TlEvent *ev, const guint8 *tags, guint64 n, int tag,
                   double *h) {
  memset(h, 0, sizeof(double) * COARSE);
  for (guint64 i = 0; i < n; i++)
    if (tag < 0 || tags[i] == tag) h[coarse_bin(s, ev[i].a, ev[i].b)]++;
}

/* chi^2 / dof of two histograms of the same mean (Poisson each): sum (a - k b)^2 / (a + k^2 b)
 * with k scaling b to a's total. */
static double chi2_two(const double *a, const double *b, gboolean scale) {
  double ta = 0, tb = 0, chi2 = 0;
  for (int i = 0; i < COARSE; i++) ta += a[i], tb += b[i];
  double k = scale ? ta / tb : 1;
  int dof = 0;
  for (int i = 0; i < COARSE; i++)
    if (a[i] + b[i] > 0) chi2 += (a[i] - k * b[i]) * (a[i] - k * b[i]) / (a[i] + k * k * b[i]), dof++;
  return chi2 / MAX(dof - (scale ? 1 : 0), 1);
}

/* chi^2 / dof of counts a against expectations m */
static double chi2_expect(const double *a, const double *m) {
  double chi2 = 0;
  int dof = 0;
  for (int i = 0; i < COARSE; i++)
    if (m[i] > 0) chi2 += (a[i] - m[i]) * (a[i] - m[i]) / m[i], dof++;
  return chi2 / dof;
}

static void test_randoms_singles(void) {
  g_autoptr(TlScanner) s = small_scanner("max_ring_difference = 5\n");
  guint n = s->n_crystals;
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(25, 34, 56, 36, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.activity_bq = 1.5e8; /* 150 MBq for 10 ms: 1.5 10^6 decays */
  p.duration_s = 0.01;
  p.coincidence_window_ns = 8.0;
  p.seed = 12;
  g_autofree double *singles = g_new(double, n);
  p.singles_out = singles;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, &st);
  /* Casey & Hoffman, by brute force over every allowed pair: mu_ij = 2 tau S_i S_j T with
   * S_i = n_i / T_sim, T_sim = decays / activity */
  double tsim = st.decays / p.activity_bq, two_tau = p.coincidence_window_ns * 1e-9, total = 0;
  g_autofree double *fan = g_new0(double, n), *m = g_new0(double, COARSE);
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      if (!tl_scanner_pair_allowed(s, i, j)) continue;
      double mij = two_tau * (singles[i] / tsim) * (singles[j] / tsim) * p.duration_s;
      total += mij;
      fan[i] += mij, fan[j] += mij;
      m[coarse_bin(s, i, j)] += mij;
    }
  guint64 counts[TL_TAG_N];
  g_assert_true(tl_listmode_tag_counts(lm, counts));
  g_test_message("randoms from singles: %.4g decays, %" G_GUINT64_FORMAT " singles; expected "
                 "randoms %.1f (brute force %.1f); prompts %" G_GUINT64_FORMAT " trues, %"
                 G_GUINT64_FORMAT " randoms; %" G_GUINT64_FORMAT " delayed; %.2f s", st.decays,
                 st.singles, st.randoms_expected, total, counts[TL_TAG_TRUE],
                 counts[TL_TAG_RANDOM], lm->n_delayed, st.seconds);
  g_assert_cmpfloat(fabs(st.randoms_expected / total - 1), <, 1e-9);
  g_assert_cmpuint(counts[TL_TAG_RANDOM], ==, st.randoms);
  g_assert_cmpuint(lm->n_delayed, ==, st.delayed);
  g_assert_cmpfloat(fabs(st.randoms - total), <, 4 * sqrt(total));
  g_assert_cmpfloat(fabs(lm->n_delayed - total), <, 4 * sqrt(total));
  g_assert_cmpfloat(total, >, 20000);
  g_assert_cmpfloat(lm->duration_s, ==, 0.01);
  /* per fan: the randoms of each crystal against sum_j mu_ij */
  g_autofree double *got = g_new0(double, n);
  for (guint64 i = 0; i < lm->n_events; i++)
    if (lm->tags[i] == TL_TAG_RANDOM) got[lm->events[i].a]++, got[lm->events[i].b]++;
  double chi2 = 0;
  for (guint i = 0; i < n; i++) chi2 += (got[i] - fan[i]) * (got[i] - fan[i]) / fan[i];
  chi2 /= n;
  /* coarse sinograms: delayeds against prompt randoms, both against the expectation */
  double hr[COARSE], hd[COARSE], ht[COARSE];
  coarse(s, lm->events, lm->tags, lm->n_events, TL_TAG_RANDOM, hr);
  coarse(s, lm->delayed, NULL, lm->n_delayed, -1, hd);
  coarse(s, lm->events, lm->tags, lm->n_events, TL_TAG_TRUE, ht);
  double c_dr = chi2_two(hd, hr, FALSE), c_re = chi2_expect(hr, m), c_de = chi2_expect(hd, m);
  double c_tr = chi2_two(hr, ht, TRUE); /* the trues' shape: the check must fail it */
  /* tl_randoms_from_delayeds on the delayeds: its estimate against the truth */
  GError *error = NULL;
  g_autoptr(TlRandoms) est = tl_randoms_from_delayeds(s, lm->delayed, lm->n_delayed, &error);
  g_assert_no_error(error);
  double he[COARSE] = {0}, rel2 = 0, stat2 = 0;
  guint pairs = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      if (!tl_scanner_pair_allowed(s, i, j)) continue;
      double mij = two_tau * (singles[i] / tsim) * (singles[j] / tsim) * p.duration_s;
      double eij = tl_randoms_pair(est, i, j);
      he[coarse_bin(s, i, j)] += eij;
      rel2 += (eij / mij - 1) * (eij / mij - 1);
      stat2 += 1.0 / fan[i] + 1.0 / fan[j]; /* fan[i]: the delayeds expected at crystal i */
      pairs++;
    }
  double rel = sqrt(rel2 / pairs), stat = sqrt(stat2 / pairs);
  double c_re_est = chi2_expect(hr, he);
  g_test_message("fans: chi2/dof %.2f over %u crystals; coarse sinogram (%d bins): delayeds vs "
                 "prompt randoms chi2/dof %.2f, prompt randoms vs expected %.2f, delayeds vs "
                 "expected %.2f, prompt randoms vs trues %.1f; from the delayeds: total %.1f "
                 "(true %.1f), per-pair rms error %.3f (counting statistics ~%.3f), prompt randoms "
                 "vs the estimate chi2/dof %.2f", chi2, n, COARSE, c_dr, c_re, c_de, c_tr,
                 est->total, total, rel, stat, c_re_est);
  g_assert_cmpfloat(chi2, <, 1.5);
  g_assert_cmpfloat(c_dr, <, 1.5);
  g_assert_cmpfloat(c_re, <, 1.5);
  g_assert_cmpfloat(c_de, <, 1.5);
  g_assert_cmpfloat(c_tr, >, 3);
  g_assert_cmpfloat(fabs(est->total - total), <, 4 * sqrt(total));
  g_assert_cmpfloat(rel, <, 1.5 * stat);
  g_assert_cmpfloat(c_re_est, <, 1.5);
  for (guint64 i = 0; i < lm->n_delayed; i++)
    g_assert_true(tl_scanner_pair_allowed(s, lm->delayed[i].a, lm->delayed[i].b));
}

/* ---- tags ---- */

static double line_distance(const TlScanner *s, const TlEvent *e, const double p[3]) {
  const float *A = s->crystals[e->a].centre, *B = s->crystals[e->b].centre;
  double u[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]}, w[3] = {p[0] - A[0], p[1] - A[1], p[2] - A[2]};
  double uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2], t = (w[0] * u[0] + w[1] * u[1] + w[2] * u[2]) / uu;
  double d2 = 0;
  for (int k = 0; k < 3; k++) d2 += (w[k] - t * u[k]) * (w[k] - t * u[k]);
  return sqrt(d2);
}

static void expect_load_error(const char *path, const char *const *parts) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = tl_listmode_load(path, &error);
  g_assert_null(lm);
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, path));
  for (; *parts; parts++)
    if (!strstr(error->message, *parts)) g_error("'%s' lacks '%s'", error->message, *parts);
  g_error_free(error);
}

static void test_tags(void) {
  /* a point source in a water sphere, scatter on, a quarter uniform randoms: the tags are the
   * truth: every true LOR passes the source within a crystal's width, randoms and scattered
   * ones mostly do not */
  g_autoptr(TlScanner) s = small_scanner(NULL);
  TlImageGrid g = tl_image_grid_centred(48, 48, 48, 1, 1, 1);
  g_autoptr(TlPhantom) ph = tl_phantom_new("sphere");
  TlShape sh = {TL_SHAPE_SPHERE, {0, 0, 0}, 22, 0, 2, 0, TL_MU_WATER, TL_SHAPE_SETS_MU};
  tl_phantom_add(ph, &sh);
  g_autoptr(TlImage) mu = NULL;
  GError *error = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 2, NULL, &mu, &error));
  const double src[3] = {1.5, -2.5, 0.5};
  g_autoptr(TlImage) act = fx_point_source(src[0], src[1], src[2]);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 30000;
  p.scatter = TRUE;
  p.randoms_fraction = 0.25;
  TlSimulateStats st;
  g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, &st);
  guint64 counts[TL_TAG_N], far[TL_TAG_N] = {0};
  g_assert_true(tl_listmode_tag_counts(lm, counts));
  g_assert_cmpuint(counts[TL_TAG_TRUE] + counts[TL_TAG_SCATTERED] + counts[TL_TAG_RANDOM], ==, lm->n_events);
  g_assert_cmpuint(counts[TL_TAG_TRUE], ==, st.trues);
  g_assert_cmpuint(counts[TL_TAG_SCATTERED], ==, st.scattered);
  g_assert_cmpuint(counts[TL_TAG_RANDOM], ==, st.randoms);
  for (guint64 i = 0; i < lm->n_events; i++)
    far[lm->tags[i]] += line_distance(s, &lm->events[i], src) > 4.0;
  g_test_message("tags: %" G_GUINT64_FORMAT " trues (%" G_GUINT64_FORMAT " with a LOR > 4 mm from the "
                 "source), %" G_GUINT64_FORMAT " scattered (%" G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT
                 " randoms (%" G_GUINT64_FORMAT ")", counts[0], far[0], counts[1], far[1], counts[2], far[2]);
  g_assert_cmpuint(far[TL_TAG_TRUE], ==, 0);
  g_assert_cmpuint(far[TL_TAG_SCATTERED], >, counts[TL_TAG_SCATTERED] / 2);
  g_assert_cmpuint(far[TL_TAG_RANDOM], >, counts[TL_TAG_RANDOM] * 3 / 4);
  g_assert_cmpuint(counts[TL_TAG_SCATTERED], >, 500);

  /* .tlm: tags = 1 and a block after the events; load, a range, describe */
  g_autofree char *path = g_build_filename(tmpdir, "tags.tlm", NULL);
  g_assert_true(tl_listmode_save(lm, path, &error));
  g_assert_no_error(error);
  g_autoptr(TlListmode) back = tl_listmode_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->n_events, ==, lm->n_events);
  g_assert_nonnull(back->tags);
  g_assert_true(memcmp(back->tags, lm->tags, lm->n_events) == 0);
  g_assert_true(memcmp(back->events, lm->events, 12 * lm->n_events) == 0);
  g_autoptr(TlListmode) part = tl_listmode_load_range(path, 1000, 500, &error);
  g_assert_no_error(error);
  g_assert_true(memcmp(part->tags, lm->tags + 1000, 500) == 0);
  g_assert_true(memcmp(part->events, lm->events + 1000, 12 * 500) == 0);
  g_autoptr(GString) info = g_string_new(NULL);
  g_assert_true(tl_format_describe_file(path, info, &error));
  g_autofree char *line = g_strdup_printf("tags (simulation truth): %" G_GUINT64_FORMAT " trues, %"
                                          G_GUINT64_FORMAT " scattered, %" G_GUINT64_FORMAT " randoms",
                                          counts[0], counts[1], counts[2]);
  if (!strstr(info->str, line)) g_error("info lacks '%s':\n%s", line, info->str);

  /* bad tags: a value out of range, a truncated block */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  g_assert_nonnull(strstr(bytes, "\ntags = 1\n"));
  g_autofree char *bad = g_build_filename(tmpdir, "bad.tlm", NULL);
  g_autofree char *patched = g_memdup2(bytes, len);
  patched[len - lm->n_events + 17] = 7;
  g_assert_true(g_file_set_contents(bad, patched, len, NULL));
  expect_load_error(bad, (const char *[]){"'tags'", "event 17", "tag 7", NULL});
  g_assert_true(g_file_set_contents(bad, bytes, len - 100, NULL));
  expect_load_error(bad, (const char *[]){"truncated tags block", "'tags'", NULL});
  GError *e2 = NULL;
  g_assert_null(tl_listmode_load_range(bad, 0, 10, &e2));
  g_assert_nonnull(strstr(e2->message, "'tags'"));
  g_clear_error(&e2);

  /* an older file written here from the documented layout (no tags, no energy keys): loads,
   * tags absent, energy the defaults */
  GString *old = g_string_new("TOMOLAB-LISTMODE 1\nevents = 3\nevent_bytes = 12\n"
                              "byte_order = little-endian\ntof = 0\ndescription = old\nbegin_scanner\n");
  g_string_append(old, small_ring);
  g_string_append(old, "end_scanner\nend_header\n");
  guint32 ev[9] = {0, 200, 0, 1, 201, 0, 2, 202, 0};
  for (int i = 0; i < 9; i++) {
    guint32 le = GUINT32_TO_LE(ev[i]);
    g_string_append_len(old, (const char *)&le, 4);
  }
  g_autofree char *oldpath = g_build_filename(tmpdir, "old.tlm", NULL);
  g_assert_true(g_file_set_contents(oldpath, old->str, old->len, NULL));
  g_string_free(old, TRUE);
  g_autoptr(TlListmode) o = tl_listmode_load(oldpath, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(o->n_events, ==, 3);
  g_assert_null(o->tags);
  g_assert_cmpuint(o->events[2].b, ==, 202);
  guint64 none[TL_TAG_N];
  g_assert_false(tl_listmode_tag_counts(o, none));
  double w[2], r;
  tl_scanner_energy(o->scanner, w, &r);
  g_assert_cmpfloat(w[0], ==, TL_SCANNER_DEFAULT_ENERGY_LOW_KEV);
  g_assert_cmpfloat(r, ==, (float)TL_SCANNER_DEFAULT_ENERGY_RESOLUTION);
  /* ... and saved again it stays without tags */
  g_autofree char *again = g_build_filename(tmpdir, "again.tlm", NULL);
  g_assert_true(tl_listmode_save(o, again, &error));
  g_autofree char *atext = NULL;
  g_assert_true(g_file_get_contents(again, &atext, NULL, NULL));
  g_assert_null(strstr(atext, "tags ="));
  /* validate: a tag out of range in memory */
  lm->tags[3] = TL_TAG_N;
  g_assert_false(tl_listmode_validate(lm, "mem", &error));
  g_assert_nonnull(strstr(error->message, "event 3"));
  g_clear_error(&error);
  g_remove(path);
  g_remove(bad);
  g_remove(oldpath);
  g_remove(again);
}

/* Same seed, same file (events, tags, delayeds) for 1, 2 and 3 threads, with scatter, TOF,
 * efficiencies and randoms from singles all on. */
static void test_determinism(void) {
  g_autoptr(TlScanner) s =
      small_scanner("tof_bins = 9\ntof_bin_mm = 20\ntof_fwhm_ps = 300\n");
  g_autoptr(TlImage) act = NULL, mu = NULL;
  water_cylinder(25, 34, 56, 36, &act, &mu);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 0;
  p.activity_bq = 2e7;
  p.duration_s = 0.01;
  p.scatter = TRUE;
  p.tof = TRUE;
  p.efficiency_spread = 0.1;
  p.seed = 31;
  char *paths[3];
  for (int k = 0; k < 3; k++) {
    p.n_threads = k + 1;
    TlSimulateStats st;
    g_autoptr(TlListmode) lm = fx_simulate(s, act, mu, &p, &st);
    g_assert_cmpuint(lm->n_delayed, >, 0);
    g_assert_cmpuint(st.scattered, >, 0);
    g_assert_cmpuint(st.randoms, >, 0);
    GError *error = NULL;
    paths[k] = g_strdup_printf("%s/det%d.tlm", tmpdir, k);
    g_assert_true(tl_listmode_save(lm, paths[k], &error));
    g_assert_no_error(error);
    if (k == 0)
      g_test_message("determinism case: %" G_GUINT64_FORMAT " prompts (%" G_GUINT64_FORMAT
                     " scattered, %" G_GUINT64_FORMAT " randoms), %" G_GUINT64_FORMAT " delayed, "
                     "TOF outside %" G_GUINT64_FORMAT, lm->n_events, st.scattered, st.randoms,
                     lm->n_delayed, st.tof_outside);
  }
  for (int k = 1; k < 3; k++) {
    g_autofree char *a = NULL, *b = NULL;
    gsize na, nb;
    g_assert_true(g_file_get_contents(paths[0], &a, &na, NULL));
    g_assert_true(g_file_get_contents(paths[k], &b, &nb, NULL));
    g_assert_cmpuint(na, ==, nb);
    g_assert_true(memcmp(a, b, na) == 0);
  }
  for (int k = 0; k < 3; k++) {
    g_remove(paths[k]);
    g_free(paths[k]);
  }
}

static void expect_param_error(const TlScanner *s, const TlImage *act, const TlImage *mu,
                               const TlSimulateParams *p, const char *part) {
  GError *error = NULL;
  g_assert_null(tl_simulate(s, act, mu, p, NULL, NULL, NULL, NULL, &error));
  g_assert_nonnull(error);
  if (!strstr(error->message, part)) g_error("'%s' lacks '%s'", error->message, part);
  g_error_free(error);
}

static void test_bad_input(void) {
  g_autoptr(TlScanner) s = small_scanner(NULL);
  g_autoptr(TlImage) act = fx_point_source(0, 0, 0);
  TlSimulateParams p;
  tl_simulate_params_init(&p);
  p.events = 100;
  p.scatter = TRUE;
  expect_param_error(s, act, NULL, &p, "without an attenuation map");
  p.scatter = FALSE;
  p.efficiency_spread = 0.6;
  expect_param_error(s, act, NULL, &p, "efficiency spread 0.6");
  p.efficiency_spread = NAN;
  expect_param_error(s, act, NULL, &p, "efficiency spread nan");
  p.efficiency_spread = 0;
  g_autofree float *eff = g_new(float, s->n_crystals);
  for (guint i = 0; i < s->n_crystals; i++) eff[i] = 1;
  eff[9] = 0;
  p.efficiencies = eff;
  expect_param_error(s, act, NULL, &p, "crystal 9 is 0");
  eff[9] = INFINITY;
  expect_param_error(s, act, NULL, &p, "crystal 9 is inf");
  p.efficiencies = NULL;
  p.activity_bq = 1e6;
  expect_param_error(s, act, NULL, &p, "activity in (0, 1e12] Bq, duration");
  p.duration_s = 1;
  expect_param_error(s, act, NULL, &p, "events = decays = 0");
  p.events = 0;
  p.randoms_fraction = 0.1;
  expect_param_error(s, act, NULL, &p, "randoms fraction 0");
  p.randoms_fraction = 0;
  p.coincidence_window_ns = -1;
  expect_param_error(s, act, NULL, &p, "coincidence window");
  p.coincidence_window_ns = 4;
  p.activity_bq = 1e12;
  p.duration_s = 100;
  expect_param_error(s, act, NULL, &p, "at most 1e13 decays");
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-pet-physics-XXXXXX", NULL);
  g_test_add_func("/pet/simulate-physics/kn-sampler", test_kn_sampler);
  g_test_add_func("/pet/simulate-physics/energy", test_energy);
  g_test_add_func("/pet/simulate-physics/interaction-probability", test_interaction_probability);
  g_test_add_func("/pet/simulate-physics/scatter-fraction-dmi", test_scatter_fraction_dmi);
  g_test_add_func("/pet/simulate-physics/efficiencies", test_efficiencies);
  g_test_add_func("/pet/simulate-physics/randoms-singles", test_randoms_singles);
  g_test_add_func("/pet/simulate-physics/tags", test_tags);
  g_test_add_func("/pet/simulate-physics/determinism", test_determinism);
  g_test_add_func("/pet/simulate-physics/bad-input", test_bad_input);
  int rc = g_test_run();
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
