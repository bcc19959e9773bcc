/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pet/tl-norm: the component-based normalisation n_ab = eps_a eps_b g_ax(ring_a, ring_b)
 * g_tr(d_ab, u_ab), against references written here.
 *
 *  - estimate: a ring scanner's true efficiencies eps, axial and transaxial factors are drawn
 *    here; counts per crystal pair are Poisson(T n_ab p_ab) with p_ab a uniform cylinder's line
 *    integrals from the plain C projector of tests/pet-ref.c (double precision), 10^8 in all.
 *    The estimate (expected counts from Tomolab's own device projector) recovers eps within
 *    2 % rms (issue 13) after the same degeneracy fix applied to the truth here (mean eps 1
 *    per ring and per block position), and n_ab within its statistics; the model without
 *    geometric factors is measurably worse (n and chi^2/dof).
 *  - list mode: the Monte-Carlo simulator's cylinder, thinned here by eps_a eps_b: the
 *    geometric factors are then the simulator's own, fitted by the classes.
 *  - sensitivity with n_j a_j against the double reference (every pair back-projected with
 *    weight n a in C), the full path and the symmetric path restricted to the symmetries n is
 *    invariant under (16, 8 or none), and the cache key following the normalisation.
 *  - the operator: D = n a per record (list mode and bins) against the reference, adjointness
 *    <D A x, w> = <x, A^T D w>, and one MLEM step with D and an additive term against a C
 *    MLEM step in double.
 *  - reconstruction: data with efficiencies, MLEM without the normalisation biased (axial
 *    ripple, level), with the true and with the estimated one unbiased.
 *  - the file: round trip; hostile files (wrong sizes, negative, NaN, infinite factors, another
 *    scanner, truncated, zero crystals) give GErrors naming the file and the value. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "image/tl-phantom.h"
#include "pet/tl-norm-estimate.h"
#include "pet/tl-pet-operator.h"
#include "pet/tl-recon.h"
#include "pet/project/tl-sensitivity.h"
#include "pet/simulate/tl-simulate.h"
#include "dataset/tl-formats.h"
#include "tl-test-common.h"

static TlContext *ctx;

/* ---- the test's own model: classes from their definition in tl-norm.h ---- */

typedef struct {
  guint R, C, B, D; /* rings, crystals per ring, block, radial classes */
  double *eps, *gax, *gtr;
} Model;

/* d = the shorter way round from t_a to t_b, u = the block position of the crystal d is
 * counted from (the smaller u at d = C/2). */
static void classes(const Model *m, guint a, guint b, guint *ax, guint *tr) {
  guint ra = a / m->C, rb = b / m->C, ta = a % m->C, tb = b % m->C;
  *ax = ra * m->R + rb;
  guint fwd = (tb + m->C - ta) % m->C, back = m->C - fwd;
  guint d, u;
  if (fwd < back) d = fwd, u = ta % m->B;
  else if (back < fwd) d = back, u = tb % m->B;
  else d = fwd, u = MIN(ta % m->B, tb % m->B);
  *tr = d * m->B + u;
}

static double model_pair(const Model *m, guint a, guint b) {
  guint ax, tr;
  classes(m, a, b, &ax, &tr);
  return m->eps[a] * m->eps[b] * m->gax[ax] * m->gtr[tr];
}

static void model_clear(Model *m) {
  g_free(m->eps), g_free(m->gax), g_free(m->gtr);
}

/* The degeneracy fix of tl-norm.h on the truth: mean eps 1 per ring and per block position
 * (alternate scaling), the scale moved into the class factors so n is unchanged. */
static void gauge(Model *m, guint N) {
  for (int it = 0; it < 200; it++) {
    double worst = 0;
    for (int pass = 0; pass < 2; pass++) {
      guint K = pass ? m->B : m->R;
      double *mean = g_new0(double, K);
      guint *cnt = g_new0(guint, K);
      for (guint i = 0; i < N; i++) {
        guint k = pass ? (i % m->C) % m->B : i / m->C;
        mean[k] += m->eps[i], cnt[k]++;
      }
      for (guint k = 0; k < K; k++) mean[k] /= cnt[k], worst = MAX(worst, fabs(mean[k] - 1));
      for (guint i = 0; i < N; i++) m->eps[i] /= mean[pass ? (i % m->C) % m->B : i / m->C];
      if (!pass) {
        for (guint r = 0; r < m->R; r++)
          for (guint s = 0; s < m->R; s++) m->gax[r * m->R + s] *= mean[r] * mean[s];
      } else {
        for (guint d = 0; d < m->D; d++)
          for (guint u = 0; u < m->B; u++) m->gtr[d * m->B + u] *= mean[u] * mean[(u + d) % m->B];
      }
      g_free(mean), g_free(cnt);
    }
    if (worst < 1e-14) break;
  }
}

/* Poisson(mu): inversion below 10, Hormann's PTRS (1993, transformed rejection) above. */
static guint64 poisson(GRand *g, double mu) {
  if (mu <= 0) return 0;
  if (mu < 10) {
    double u = g_rand_double(g), p = exp(-mu), cdf = p;
    guint64 k = 0;
    while (u > cdf && k < 1000) p *= mu / ++k, cdf += p;
    return k;
  }
  double slam = sqrt(mu), loglam = log(mu), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double U = g_rand_double(g) - 0.5, V = g_rand_double(g), us = 0.5 - fabs(U);
    double k = floor((2 * a / us + b) * U + mu + 0.43);
    if (us >= 0.07 && V <= vr) return (guint64)k;
    if (k < 0 || (us < 0.013 && V > us)) continue;
    if (log(V) + log(inv_alpha) - log(a / (us * us) + b) <= -mu + k * loglam - lgamma(k + 1))
      return (guint64)k;
  }
}

/* ---- the scanner of the estimate: 8 rings of a 12-gon, 8 crystals a side ---- */

#define E_RINGS 8
#define E_SIDES 12
#define E_PER 8

typedef struct {
  TlScanner *sc;
  TlImageGrid grid;
  TlImage *cyl;      /* the source: uniform cylinder, activity 1 */
  guint N;
  guint64 pairs;
  double *p;         /* reference line integrals per pair index (0: not accepted) */
  Model truth;       /* n_true = T-free, mean 1 over accepted pairs */
} Setup;

static Setup S;

static void setup_once(void) {
  if (S.sc) return;
  S.sc = fx_ring_scanner(E_RINGS, E_SIDES, E_PER, 4.0f, 60.0f, 4.0f, E_RINGS - 1);
  S.N = S.sc->n_crystals;
  S.pairs = tl_pair_count(S.N);
  S.grid = fx_grid(32, 32, 12, 3.5f, 3.5f, 4.0f);
  fx_cylinder(&S.grid, 52, 24, 0, 4, &S.cyl, NULL);
  S.p = g_new0(double, S.pairs);
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      if (!fx_pair_allowed(S.sc, a, b)) continue;
      const float *ca = S.sc->crystals[a].centre, *cb = S.sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      S.p[tl_pair_index(S.N, a, b)] = tl_ref_forward(TL_REF_SIDDON, &S.grid, p0, p1, S.cyl->data);
    }
  /* the truth: eps +-25 % with a ring ripple (+-12 %) and a block profile (edges -10 %), the
   * geometric factors +-10 % */
  Model *m = &S.truth;
  m->R = E_RINGS, m->C = E_SIDES * E_PER, m->B = E_PER, m->D = m->C / 2 + 1;
  m->eps = g_new(double, S.N);
  m->gax = g_new(double, m->R * m->R);
  m->gtr = g_new(double, m->D * m->B);
  g_autoptr(GRand) g = g_rand_new_with_seed(1301);
  for (guint i = 0; i < S.N; i++) {
    guint r = i / m->C, u = (i % m->C) % m->B;
    m->eps[i] = (1 + 0.25 * (2 * g_rand_double(g) - 1)) * (1 + 0.12 * sin(1.7 * r)) *
                (u == 0 || u == m->B - 1 ? 0.9 : 1.0);
  }
  for (guint r = 0; r < m->R; r++)
    for (guint s = r; s < m->R; s++)
      m->gax[r * m->R + s] = m->gax[s * m->R + r] = 1 + 0.1 * (2 * g_rand_double(g) - 1);
  for (guint k = 0; k < m->D * m->B; k++) m->gtr[k] = 1 + 0.1 * (2 * g_rand_double(g) - 1);
  /* mean 1 over the accepted pairs (the estimate's convention) */
  double sum = 0, cnt = 0;
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++)
      if (fx_pair_allowed(S.sc, a, b)) sum += model_pair(m, a, b), cnt++;
  for (guint k = 0; k < m->R * m->R; k++) m->gax[k] *= cnt / sum;
}

/* Counts per pair: Poisson(T n_true p) with sum T n p = total. */
static float *draw_counts(const Model *m, double total, guint32 seed) {
  double expect = 0;
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      double p = S.p[tl_pair_index(S.N, a, b)];
      if (p > 0) expect += model_pair(m, a, b) * p;
    }
  double T = total / expect;
  float *y = g_new0(float, S.pairs);
  g_autoptr(GRand) g = g_rand_new_with_seed(seed);
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      guint64 i = tl_pair_index(S.N, a, b);
      if (S.p[i] > 0) y[i] = (float)poisson(g, T * model_pair(m, a, b) * S.p[i]);
    }
  return y;
}

/* The estimate's tables as a Model (for the test's own evaluation). */
static Model model_of(const TlNorm *n) {
  Model m = {.R = n->rings, .C = n->crystals_per_ring, .B = n->block, .D = n->radial};
  m.eps = g_new(double, n->n_crystals);
  m.gax = g_new(double, m.R * m.R);
  m.gtr = g_new(double, m.D * m.B);
  for (guint i = 0; i < n->n_crystals; i++) m.eps[i] = n->efficiency[i];
  for (guint i = 0; i < m.R * m.R; i++) m.gax[i] = n->axial[i];
  for (guint i = 0; i < m.D * m.B; i++) m.gtr[i] = n->transaxial[i];
  return m;
}

/* rms relative error of n against the truth over the pairs with data; with the classes on,
 * also checks tl_norm_pair against this file's own class evaluation, bit for bit. */
static double n_error(const TlNorm *n) {
  Model t = S.truth;
  double e = 0, cnt = 0;
  gboolean own = n->rings == E_RINGS && n->crystals_per_ring;
  Model m = own ? model_of(n) : (Model){0};
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      if (!(S.p[tl_pair_index(S.N, a, b)] > 0)) continue;
      double v = tl_norm_pair(n, a, b);
      if (own) {
        guint ax, tr;
        classes(&m, a, b, &ax, &tr);
        float f = (float)m.eps[a] * (float)m.eps[b];
        f = f * (float)m.gax[ax];
        f = f * (float)m.gtr[tr];
        g_assert_cmpfloat(f, ==, (float)v);
      }
      e += pow(v / model_pair(&t, a, b) - 1, 2), cnt++;
    }
  if (own) model_clear(&m);
  return sqrt(e / cnt);
}

static TlNorm *estimate(const float *y, const float *expected, gboolean geometric,
                        TlNormReport *r) {
  GError *error = NULL;
  TlNormEstimateOptions o;
  tl_norm_estimate_options_init(&o);
  o.axial = o.transaxial = geometric;
  TlNorm *n = tl_norm_estimate(S.sc, y, expected, &o, r, &error);
  g_assert_no_error(error);
  g_autofree char *said = tl_norm_report_describe(r);
  g_test_message("%s model: %s", geometric ? "full" : "efficiencies-only", said);
  return n;
}

static float *device_expected(const TlImage *src, const TlImage *mu) {
  GError *error = NULL;
  float *e = g_new(float, S.pairs);
  g_assert_true(tl_norm_expected(ctx, "siddon", S.sc, src, mu, e, &error));
  g_assert_no_error(error);
  return e;
}

static TlNorm *estimated_norm; /* from test_estimate, for the reconstruction test */

static void test_estimate(void) {
  setup_once();
  g_autofree float *y = draw_counts(&S.truth, 1e8, 77);
  g_autofree float *e = device_expected(S.cyl, NULL);
  /* Tomolab's projector against the reference's: the same line integrals */
  double worst = 0, pmax = 0;
  for (guint64 i = 0; i < S.pairs; i++) pmax = MAX(pmax, S.p[i]);
  for (guint64 i = 0; i < S.pairs; i++) worst = MAX(worst, fabs(e[i] - S.p[i]) / pmax);
  g_test_message("device expected counts against the C reference: %.2e of the largest", worst);
  g_assert_cmpfloat(worst, <, 1e-5);
  TlNormReport r, rw;
  g_autoptr(TlNorm) n = estimate(y, e, TRUE, &r);
  g_autoptr(TlNorm) w = estimate(y, e, FALSE, &rw);
  g_assert_cmpfloat(r.counts, >, 0.99e8);
  g_assert_cmpuint(n->rings, ==, E_RINGS);
  g_assert_cmpuint(n->crystals_per_ring, ==, E_SIDES * E_PER);
  g_assert_cmpuint(n->block, ==, E_PER);
  g_assert_cmpuint(n->radial, ==, E_SIDES * E_PER / 2 + 1);
  /* efficiencies against the truth, both with the degeneracies fixed the same way */
  Model t = S.truth;
  Model tg = {.R = t.R, .C = t.C, .B = t.B, .D = t.D};
  tg.eps = g_memdup2(t.eps, sizeof(double) * S.N);
  tg.gax = g_memdup2(t.gax, sizeof(double) * t.R * t.R);
  tg.gtr = g_memdup2(t.gtr, sizeof(double) * t.D * t.B);
  gauge(&tg, S.N);
  g_autofree double *F = g_new0(double, S.N);
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      guint64 i = tl_pair_index(S.N, a, b);
      if (S.p[i] > 0) F[a] += y[i], F[b] += y[i];
    }
  double err = 0, errw = 0, stat = 0;
  for (guint i = 0; i < S.N; i++) {
    err += pow(n->efficiency[i] / tg.eps[i] - 1, 2);
    errw += pow(w->efficiency[i] / tg.eps[i] - 1, 2);
    stat += 1 / F[i];
  }
  err = sqrt(err / S.N), errw = sqrt(errw / S.N), stat = sqrt(stat / S.N);
  double ne = n_error(n), new = n_error(w);
  g_test_message("efficiencies: rms error %.4f (counting statistics of the fan sums %.4f; "
                 "efficiencies-only model %.4f); n_ab: rms error %.4f (efficiencies-only %.4f); "
                 "chi2/dof %.4f (efficiencies-only %.3f)", err, stat, errw, ne, new, r.chi2_dof,
                 rw.chi2_dof);
  g_assert_cmpfloat(err, <, 0.02);          /* issue 13 */
  g_assert_cmpfloat(err, <, 3 * stat);      /* at the level of the statistics */
  g_assert_cmpfloat(ne, <, 0.02);
  g_assert_cmpfloat(new, >, 5 * ne);        /* the wrong model is measurably worse */
  g_assert_cmpfloat(errw, >, 3 * err);
  g_assert_cmpfloat(fabs(r.chi2_dof - 1), <, 0.05);
  g_assert_cmpfloat(rw.chi2_dof, >, 1.5);
  g_assert_cmpfloat(r.fan_residual, <, 1e-6);
  g_assert_cmpuint(r.dead_crystals, ==, 0);
  g_assert_cmpfloat(r.max_change, <, 1e-6);
  /* the convention: mean n over the accepted pairs 1, mean eps per ring 1 */
  double sum = 0, cnt = 0;
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++)
      if (fx_pair_allowed(S.sc, a, b)) sum += tl_norm_pair(n, a, b), cnt++;
  g_assert_cmpfloat(fabs(sum / cnt - 1), <, 1e-5);
  estimated_norm = g_steal_pointer(&n);
  model_clear(&tg);
}

/* List mode through the Monte-Carlo simulator, thinned here by eps_a eps_b. */
static void test_listmode(void) {
  GError *error = NULL;
  TlScanner *fx = fx_ring_scanner(4, 12, 4, 4.0f, 30.0f, 4.0f, 3);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  guint N = sc->n_crystals;
  TlImageGrid g = fx_grid(20, 20, 6, 3.0f, 3.0f, 4.0f);
  g_autoptr(TlImage) act = NULL;
  fx_cylinder(&g, 27, 12, 0, 4, &act, NULL);
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 1.2e6;
  sp.exact_count = TRUE;
  sp.seed = 5;
  g_autoptr(TlListmode) lm = tl_simulate(sc, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GRand) rng = g_rand_new_with_seed(91);
  g_autofree double *eps = g_new(double, N);
  for (guint i = 0; i < N; i++) eps[i] = 1 + 0.2 * (2 * g_rand_double(rng) - 1);
  guint64 kept = 0;
  for (guint64 j = 0; j < lm->n_events; j++) {
    const TlEvent *ev = &lm->events[j];
    if (g_rand_double(rng) * 1.44 < eps[ev->a] * eps[ev->b]) lm->events[kept++] = *ev;
  }
  guint64 outside = 0;
  g_autofree float *y = tl_norm_pair_counts(sc, lm->events, kept, &outside, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(outside, ==, 0);
  guint64 pairs = tl_pair_count(N);
  g_autofree float *e = g_new(float, pairs);
  g_assert_true(tl_norm_expected(ctx, "siddon", sc, act, NULL, e, &error));
  g_assert_no_error(error);
  TlNormReport r;
  g_autoptr(TlNorm) n = tl_norm_estimate(sc, y, e, NULL, &r, &error);
  g_assert_no_error(error);
  g_autofree char *said = tl_norm_report_describe(&r);
  /* the truth with the same degeneracy fix (ring and block-position means 1) */
  Model t = {.R = 4, .C = 48, .B = 4, .D = 25, .eps = g_memdup2(eps, sizeof(double) * N),
             .gax = g_new(double, 16), .gtr = g_new(double, 25 * 4)};
  for (guint k = 0; k < 16; k++) t.gax[k] = 1;
  for (guint k = 0; k < 100; k++) t.gtr[k] = 1;
  gauge(&t, N);
  g_autofree double *F = g_new0(double, N);
  for (guint64 j = 0; j < kept; j++) F[lm->events[j].a]++, F[lm->events[j].b]++;
  double err = 0, stat = 0;
  for (guint i = 0; i < N; i++) err += pow(n->efficiency[i] / t.eps[i] - 1, 2), stat += 1 / F[i];
  err = sqrt(err / N), stat = sqrt(stat / N);
  g_test_message("list mode, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " simulated events "
                 "kept: %s; efficiencies rms error %.4f (statistics %.4f)", kept, lm->n_events,
                 said, err, stat);
  g_assert_cmpfloat(err, <, 0.02);
  g_assert_cmpfloat(err, <, 2 * stat);
  model_clear(&t);
}

/* ---- sensitivity and operator on the octagon of test-pet-sensitivity ---- */

static TlScanner *octagon(void) { return fx_ring_scanner(4, 8, 4, 6.0f, 40.0f, 6.0f, 3); }
static TlImageGrid octagon_grid(void) { return fx_grid(16, 16, 6, 4.0f, 4.0f, 4.0f); }

/* A normalisation of `sc` with the given efficiencies (others 1, or random classes). */
static TlNorm *make_norm(const TlScanner *sc, const double *eps, gboolean random_classes,
                         guint32 seed) {
  GError *error = NULL;
  TlNorm *n = tl_norm_new(sc, TRUE, TRUE, &error);
  g_assert_no_error(error);
  g_autoptr(GRand) g = g_rand_new_with_seed(seed);
  for (guint i = 0; i < n->n_crystals; i++) n->efficiency[i] = (float)eps[i];
  if (random_classes) {
    guint R = n->rings;
    for (guint r = 0; r < R; r++)
      for (guint s = r; s < R; s++)
        n->axial[r * R + s] = n->axial[s * R + r] = (float)(0.8 + 0.4 * g_rand_double(g));
    for (guint k = 0; k < n->radial * n->block; k++)
      n->transaxial[k] = (float)(0.8 + 0.4 * g_rand_double(g));
  }
  g_assert_true(tl_norm_update(n, NULL, &error));
  g_assert_no_error(error);
  return n;
}

/* sum over the accepted pairs of n a a_pn in double, n from the test's own class evaluation
 * (float products as tl-norm.h specifies), a = exp(-integral of mu) from the reference. */
static double *reference_sens(const TlScanner *sc, const TlImageGrid *g, const TlNorm *n,
                              const TlImage *mu) {
  Model m = model_of(n);
  double *ref = g_new0(double, fx_voxels(g));
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!fx_pair_allowed(sc, a, b)) continue;
      const float *ca = sc->crystals[a].centre, *cb = sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      double w = model_pair(&m, a, b);
      if (mu) w *= exp(-tl_ref_forward(TL_REF_SIDDON, g, p0, p1, mu->data));
      tl_ref_back(TL_REF_SIDDON, g, p0, p1, w, ref);
    }
  model_clear(&m);
  return ref;
}

static float *device_sens(TlProjector *p, const TlScanner *sc, const TlNorm *n,
                          const TlImage *mu, TlSensMethod method) {
  GError *error = NULL;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(p));
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) table = tl_norm_upload(n, ctx, &error);
  g_autoptr(TlArray) mua = mu ? fx_upload(ctx, mu->data, nv, 4) : NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_zero(img, &error));
  tl_projector_set_sensitivity_method(p, method);
  TlSensNorm sn = {.norm = n, .table = table};
  g_assert_true(tl_projector_sensitivity_norm(p, s, sc, cry, 1, 0, mua, &sn, img, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(img);
}

/* largest per-voxel relative difference over voxels >= 1 % of the maximum */
static double voxel_rel(const float *a, const double *b, guint64 n) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, b[i]);
  for (guint64 i = 0; i < n; i++)
    if (b[i] >= 0.01 * m) d = MAX(d, fabs(a[i] - b[i]) / b[i]);
  return d;
}

static void test_sensitivity(void) {
  GError *error = NULL;
  TlScanner *sc = octagon();
  TlImageGrid g = octagon_grid();
  guint64 nv = fx_voxels(&g);
  guint N = sc->n_crystals;
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  g_assert_no_error(error);
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  g_autofree double *eps = g_new(double, N), *ring_sym = g_new(double, N),
                    *ring_asym = g_new(double, N);
  for (guint i = 0; i < N; i++) {
    guint r = i / 32;
    eps[i] = 0.7 + 0.6 * g_rand_double(rng);
    ring_sym[i] = r == 0 || r == 3 ? 0.9 : 1.1; /* z -> -z maps ring r to 3 - r */
    ring_asym[i] = 1.0 + 0.1 * r;
  }
  /* a water cylinder for the attenuation */
  g_autoptr(TlPhantom) ph = tl_phantom_new("water");
  TlShape c = {.kind = TL_SHAPE_CYLINDER, .radius = 25.0f, .half_length = 10.0f, .axis = 2,
               .mu = TL_MU_WATER, .flags = TL_SHAPE_SETS_MU};
  tl_phantom_add(ph, &c);
  g_autoptr(TlImage) mu = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, NULL, &mu, &error));
  struct {
    const char *what;
    const double *eps;
    gboolean classes, with_mu;
    guint order; /* symmetries the symmetric path keeps (1: full path) */
  } cases[] = {
      {"random eps and classes, mu", eps, TRUE, TRUE, 1},
      {"random eps and classes", eps, TRUE, FALSE, 1},
      {"eps by ring, z-mirror symmetric", ring_sym, FALSE, FALSE, 16},
      {"eps by ring, not z-symmetric", ring_asym, FALSE, FALSE, 8},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autoptr(TlNorm) n = make_norm(sc, cases[k].eps, cases[k].classes, 10 + k);
    const TlImage *m = cases[k].with_mu ? mu : NULL;
    guint order = 0;
    tl_projector_set_sensitivity_method(p, TL_SENS_AUTO);
    TlSensMethod plan = tl_projector_sensitivity_plan_norm(p, sc, 1, m != NULL, n, &order);
    g_assert_cmpuint(order, ==, cases[k].order);
    g_assert_cmpint(plan, ==, cases[k].order > 1 ? TL_SENS_SYMMETRIC : TL_SENS_FULL);
    g_autofree double *ref = reference_sens(sc, &g, n, m);
    g_autofree float *full = device_sens(p, sc, n, m, TL_SENS_FULL);
    g_autofree float *aut = device_sens(p, sc, n, m, TL_SENS_AUTO);
    double df = voxel_rel(full, ref, nv), da = voxel_rel(aut, ref, nv);
    g_test_message("sensitivity with n a, %s: %u symmetries; full vs double reference %.3g, "
                   "automatic %.3g", cases[k].what, order, df, da);
    g_assert_cmpfloat(df, <=, 2e-6);
    g_assert_cmpfloat(da, <=, 2e-6);
    /* without the normalisation the image differs: the test can fail */
    if (k == 1) {
      g_autoptr(TlNorm) one = tl_norm_new(sc, TRUE, TRUE, &error);
      g_autofree float *plain = device_sens(p, sc, one, NULL, TL_SENS_FULL);
      g_assert_cmpfloat(voxel_rel(plain, ref, nv), >, 0.05);
    }
  }
  /* the symmetric method forced with a normalisation it cannot keep: refused */
  g_autoptr(TlNorm) n = make_norm(sc, eps, FALSE, 1);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlArray) table = tl_norm_upload(n, ctx, &error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_projector_set_sensitivity_method(p, TL_SENS_SYMMETRIC);
  TlSensNorm sn = {.norm = n, .table = table};
  g_assert_false(tl_projector_sensitivity_norm(p, s, sc, cry, 1, 0, NULL, &sn, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "normalisation keeps"));
  g_clear_error(&error);
  /* a normalisation of another scanner: refused, naming both */
  TlScanner *other = fx_ring_scanner(4, 8, 4, 6.0f, 41.0f, 6.0f, 3);
  tl_projector_set_sensitivity_method(p, TL_SENS_AUTO);
  g_assert_false(tl_projector_sensitivity_norm(p, s, other, cry, 1, 0, NULL, &sn, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "test-ring"));
  g_clear_error(&error);
  fx_scanner_free(other);
  fx_scanner_free(sc);
}

/* The cache key follows the normalisation: another n is another file, the same n the same. */
static void test_cache(void) {
  GError *error = NULL;
  TlScanner *fx = octagon();
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  TlImageGrid g = octagon_grid();
  g_autoptr(GRand) rng = g_rand_new_with_seed(8);
  g_autofree double *eps = g_new(double, sc->n_crystals);
  for (guint i = 0; i < sc->n_crystals; i++) eps[i] = 0.8 + 0.4 * g_rand_double(rng);
  g_autoptr(TlNorm) n1 = make_norm(sc, eps, TRUE, 1);
  eps[5] *= 1.5;
  g_autoptr(TlNorm) n2 = make_norm(sc, eps, TRUE, 1);
  g_assert_cmpstr(n1->sha256, !=, n2->sha256);
  TlBin bin = {.a = 0, .b = 16, .count = 1};
  gboolean cached[3];
  const TlNorm *which[3] = {n1, n2, n1};
  for (int k = 0; k < 3; k++) {
    TlPetOperatorOptions o;
    tl_pet_operator_options_init(&o);
    o.norm = which[k];
    g_autoptr(TlOperator) op = tl_pet_operator_new_binned(ctx, sc, &bin, 1, &g, &o, &error);
    g_assert_no_error(error);
    g_autoptr(TlArray) s = tl_array_new_float(ctx, fx_voxels(&g), &error);
    g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
    g_assert_true(tl_operator_sensitivity(op, st, 0, s, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    cached[k] = tl_pet_operator_sensitivity_cached(op);
    g_assert_nonnull(strstr(tl_operator_label(op), "normalisation"));
  }
  /* the first two are new (the build's test cache may hold them from an earlier run: only
   * the third is certain to be a hit, after the first made it) */
  g_assert_true(cached[2]);
}

/* D = n a per record (events and bins) against the reference, adjointness with D, and one
 * MLEM step with D and an additive term against a C MLEM step in double. */
static void test_operator(void) {
  GError *error = NULL;
  TlScanner *fx = octagon();
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  guint N = sc->n_crystals;
  TlImageGrid g = octagon_grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(GRand) rng = g_rand_new_with_seed(21);
  g_autofree double *eps = g_new(double, N);
  for (guint i = 0; i < N; i++) eps[i] = 0.6 + 0.8 * g_rand_double(rng);
  g_autoptr(TlNorm) n = make_norm(sc, eps, TRUE, 4);
  Model m = model_of(n);
  g_autoptr(TlPhantom) ph = tl_phantom_new("water");
  TlShape c = {.kind = TL_SHAPE_CYLINDER, .radius = 22.0f, .half_length = 9.0f, .axis = 2,
               .activity = 1.0f, .mu = TL_MU_WATER,
               .flags = TL_SHAPE_SETS_MU | TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &c);
  g_autoptr(TlImage) mu = NULL, act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, &act, &mu, &error));
  g_autofree float *x = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) x[i] = act->data[i] + 0.1f + 0.2f * (float)g_rand_double(rng);
  /* every accepted pair as a bin with a Poisson count, and 3000 events */
  g_autoptr(GArray) bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
  for (guint a = 0; a < N; a++)
    for (guint b = a + 1; b < N; b++)
      if (fx_pair_allowed(sc, a, b)) {
        TlBin bn = {.a = a, .b = b, .count = (float)poisson(rng, 3.0)};
        g_array_append_val(bins, bn);
      }
  g_autoptr(TlListmode) lm = tl_listmode_new(tl_scanner_copy(sc), 3000);
  for (guint j = 0; j < 3000; j++) {
    const TlBin *bn = &g_array_index(bins, TlBin, g_rand_int_range(rng, 0, bins->len));
    lm->events[j] = (TlEvent){.a = j & 1 ? bn->b : bn->a, .b = j & 1 ? bn->a : bn->b};
  }
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.norm = n;
  o.attenuation = mu;
  o.use_cache = FALSE;
  for (int kind = 0; kind < 2; kind++) {
    g_autoptr(TlOperator) op =
        kind ? tl_pet_operator_new_binned(ctx, sc, (const TlBin *)bins->data, bins->len, &g, &o,
                                          &error)
             : tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
    g_assert_no_error(error);
    guint64 nd = tl_operator_n_data(op);
    g_autoptr(TlArray) xa = fx_upload(ctx, x, nv, 4);
    g_autoptr(TlArray) ya = tl_array_new_float(ctx, nd, &error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_true(tl_operator_forward(op, s, 0, xa, ya, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_no_error(error);
    g_autofree float *y = fx_download(ya);
    /* the records in data order: the operator's own */
    TlLors l = tl_pet_operator_lors(op, G_MAXUINT);
    g_autofree guint32 *rec = g_new(guint32, 3 * nd);
    g_assert_true(tl_array_download(l.records, rec, &error));
    double worst = 0, ymax = 0;
    g_autofree float *w = g_new(float, nd);
    for (guint64 j = 0; j < nd; j++) {
      guint a = rec[3 * j], b = rec[3 * j + 1];
      const float *ca = sc->crystals[a].centre, *cb = sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      double d = model_pair(&m, a, b) * exp(-tl_ref_forward(TL_REF_SIDDON, &g, p0, p1, mu->data));
      double ref = d * tl_ref_forward(TL_REF_SIDDON, &g, p0, p1, x);
      worst = MAX(worst, fabs(y[j] - ref));
      ymax = MAX(ymax, fabs(ref));
      w[j] = (float)g_rand_double_range(rng, -1, 1);
    }
    /* adjointness: <D A x, w> = <x, A^T D w> */
    g_autoptr(TlArray) wa = fx_upload(ctx, w, nd, 4);
    g_autoptr(TlArray) back = tl_array_new_float(ctx, nv, &error);
    g_assert_true(tl_array_zero(back, &error));
    g_assert_true(tl_operator_adjoint(op, s, 0, wa, back, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_autofree float *bx = fx_download(back);
    double lhs = fx_dot(y, w, nd), rhs = fx_dot(x, bx, nv);
    double scale = 0;
    for (guint64 j = 0; j < nd; j++) scale += fabs((double)y[j] * w[j]);
    g_test_message("%s with D = n a: forward vs reference %.2e of the largest; <DAx, w> = %.9g, "
                   "<x, A^T D w> = %.9g", kind ? "bins" : "events", worst / ymax, lhs, rhs);
    g_assert_cmpfloat(worst / ymax, <, 2e-6);
    g_assert_cmpfloat(fabs(lhs - rhs) / scale, <, 1e-6);
  }

  /* one MLEM step, binned, D = n a and an additive term r_ab = s_a s_b from a hand-made
   * randoms fit, against the update computed here in double:
   *   x1 = x0 / s * sum_j a_jn d_j m_j / (d_j (A x0)_j + r_j),  s = sum_pairs n a a_pn */
  TlRandoms *rnd = g_new0(TlRandoms, 1);
  rnd->n_crystals = N;
  rnd->factor = g_new(double, N);
  for (guint i = 0; i < N; i++) rnd->factor[i] = 0.3 + 0.2 * g_rand_double(rng);
  g_autofree double *q = g_memdup2(rnd->factor, sizeof(double) * N);
  TlReconOptions ro;
  tl_recon_options_init(&ro);
  ro.iterations = 1;
  ro.use_cache = FALSE;
  ro.loglik = TL_LOGLIK_NEVER;
  ro.norm = n;
  ro.attenuation = mu;
  ro.randoms = rnd;
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, sc, (const TlBin *)bins->data, bins->len, &g,
                                             &ro, &error);
  g_assert_no_error(error);
  tl_randoms_free(rnd);
  TlImage *x0 = tl_image_new(&g);
  memcpy(x0->data, x, nv * sizeof(float));
  g_assert_true(tl_solver_set_image(tl_recon_solver(r), x0, &error));
  tl_image_free(x0);
  g_assert_true(tl_recon_step(r, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) x1 = tl_recon_image(r, &error);
  g_assert_no_error(error);
  g_autofree double *sens = reference_sens(sc, &g, n, mu);
  g_autofree double *corr = g_new0(double, nv), *ref = g_new0(double, nv);
  g_autofree double *corr_plain = g_new0(double, nv);
  for (guint k = 0; k < bins->len; k++) {
    const TlBin *bn = &g_array_index(bins, TlBin, k);
    const float *ca = sc->crystals[bn->a].centre, *cb = sc->crystals[bn->b].centre;
    double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
    double d = model_pair(&m, bn->a, bn->b) *
               exp(-tl_ref_forward(TL_REF_SIDDON, &g, p0, p1, mu->data));
    double fwd = tl_ref_forward(TL_REF_SIDDON, &g, p0, p1, x);
    double yb = d * fwd + (double)(float)(q[bn->a] * q[bn->b]);
    if (yb > 0) tl_ref_back(TL_REF_SIDDON, &g, p0, p1, d * bn->count / yb, corr);
    if (fwd > 0) tl_ref_back(TL_REF_SIDDON, &g, p0, p1, bn->count / fwd, corr_plain);
  }
  double mx = 0;
  for (guint64 i = 0; i < nv; i++) {
    ref[i] = sens[i] > 0 ? x[i] * corr[i] / sens[i] : 0;
    mx = MAX(mx, ref[i]);
  }
  double worst = 0, plain = 0;
  for (guint64 i = 0; i < nv; i++) {
    if (ref[i] < 0.01 * mx) continue;
    worst = MAX(worst, fabs(x1->data[i] - ref[i]) / ref[i]);
    /* the same step without D and a (the wrong model) is far from it */
    plain = MAX(plain, fabs(x[i] * corr_plain[i] / sens[i] - ref[i]) / ref[i]);
  }
  g_test_message("one MLEM step with D = n a and randoms: device vs double reference %.2e per "
                 "voxel (the step without D and the randoms in the ratio: %.3f)", worst, plain);
  g_assert_cmpfloat(worst, <, 2e-5);
  g_assert_cmpfloat(plain, >, 0.05);
  model_clear(&m);
}

/* The truth as a TlNorm (float factors). */
static TlNorm *truth_norm(void) {
  GError *error = NULL;
  TlNorm *n = tl_norm_new(S.sc, TRUE, TRUE, &error);
  g_assert_no_error(error);
  const Model *t = &S.truth;
  g_assert_cmpuint(n->radial * n->block, ==, t->D * t->B);
  for (guint i = 0; i < S.N; i++) n->efficiency[i] = (float)t->eps[i];
  for (guint k = 0; k < t->R * t->R; k++) n->axial[k] = (float)t->gax[k];
  for (guint k = 0; k < t->D * t->B; k++) n->transaxial[k] = (float)t->gtr[k];
  g_assert_true(tl_norm_update(n, NULL, &error));
  return n;
}

static TlImage *recon(const GArray *bins, const TlNorm *norm) {
  GError *error = NULL;
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 4;
  o.iterations = 6;
  o.loglik = TL_LOGLIK_NEVER;
  o.use_cache = FALSE;
  o.norm = norm;
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, S.sc, (const TlBin *)bins->data, bins->len,
                                             &S.grid, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(r, &error));
  TlImage *im = tl_recon_image(r, &error);
  g_assert_no_error(error);
  return im;
}

/* Largest deviation of the central slices' means (|z| <= 10 mm, r < 35 mm) from `level`. */
static double slice_bias(const TlImage *im, double level, double *mean_out) {
  const TlImageGrid *g = &im->grid;
  double worst = 0, all = 0;
  guint ns = 0;
  for (guint k = 0; k < g->dims[2]; k++) {
    double c[3], sum = 0;
    guint cnt = 0;
    tl_image_grid_voxel_centre(g, 0, 0, k, c);
    if (fabs(c[2]) > 10.5) continue;
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        tl_image_grid_voxel_centre(g, i, j, k, c);
        if (hypot(c[0], c[1]) >= 35) continue;
        sum += im->data[i + g->dims[0] * (j + g->dims[1] * k)], cnt++;
      }
    worst = MAX(worst, fabs(sum / cnt / level - 1));
    all += sum / cnt, ns++;
  }
  *mean_out = all / ns / level;
  return worst;
}

/* Data with efficiencies: OSEM without the normalisation is biased (level and axial ripple),
 * with the true or the estimated normalisation it is not. */
static void test_recon_bias(void) {
  setup_once();
  if (!estimated_norm) { /* run alone: estimate as test_estimate does */
    g_autofree float *y = draw_counts(&S.truth, 1e8, 77);
    g_autofree float *e = device_expected(S.cyl, NULL);
    TlNormReport r;
    estimated_norm = estimate(y, e, TRUE, &r);
  }
  double total = 2e7, expect = 0;
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      double p = S.p[tl_pair_index(S.N, a, b)];
      if (p > 0) expect += model_pair(&S.truth, a, b) * p;
    }
  double T = total / expect; /* the truth image is T inside the cylinder */
  g_autofree float *y = draw_counts(&S.truth, total, 123);
  g_autoptr(GArray) bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
  for (guint a = 0; a < S.N; a++)
    for (guint b = a + 1; b < S.N; b++) {
      float c = y[tl_pair_index(S.N, a, b)];
      if (c > 0) g_array_append_val(bins, ((TlBin){.a = a, .b = b, .count = c}));
    }
  g_autoptr(TlNorm) tn = truth_norm();
  g_autoptr(TlImage) none = recon(bins, NULL);
  g_autoptr(TlImage) tru = recon(bins, tn);
  g_autoptr(TlImage) est = recon(bins, estimated_norm);
  double ln, lt, le;
  double bn = slice_bias(none, T, &ln), bt = slice_bias(tru, T, &lt), be = slice_bias(est, T, &le);
  g_test_message("OSEM 4 x 6 of 2e7 counts with efficiencies, central slices against the truth: "
                 "without normalisation mean %.4f, worst slice %.4f off; with the true one %.4f, "
                 "%.4f; with the estimated one %.4f, %.4f", ln, bn, lt, bt, le, be);
  g_assert_cmpfloat(bn, >, 0.05);           /* biased without */
  g_assert_cmpfloat(bt, <, 0.02);           /* unbiased with */
  g_assert_cmpfloat(be, <, 0.02);
  g_assert_cmpfloat(fabs(lt - 1), <, 0.01);
  g_assert_cmpfloat(fabs(le - 1), <, 0.01);
}

/* ---- the file ---- */

static char *tmp_dir(void) {
  GError *error = NULL;
  char *d = g_dir_make_tmp("tl-norm-XXXXXX", &error);
  g_assert_no_error(error);
  return d;
}

static void test_file(void) {
  GError *error = NULL;
  TlScanner *fx = octagon();
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  g_autoptr(GRand) rng = g_rand_new_with_seed(2);
  g_autofree double *eps = g_new(double, sc->n_crystals);
  for (guint i = 0; i < sc->n_crystals; i++) eps[i] = 0.7 + 0.6 * g_rand_double(rng);
  g_autoptr(TlNorm) n = make_norm(sc, eps, TRUE, 6);
  g_free(n->description);
  n->description = g_strdup("cylinder scan # not a comment");
  g_autofree char *dir = tmp_dir();
  g_autofree char *path = g_build_filename(dir, "a.tln", NULL);
  g_assert_true(tl_norm_save(n, path, &error));
  g_assert_no_error(error);
  g_autoptr(TlNorm) m = tl_norm_load(path, sc, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(m->sha256, ==, n->sha256);
  g_assert_cmpstr(m->description, ==, n->description);
  g_assert_cmpmem(m->efficiency, 4 * n->n_crystals, n->efficiency, 4 * n->n_crystals);
  g_assert_cmpmem(m->axial, 4 * n->rings * n->rings, n->axial, 4 * n->rings * n->rings);
  g_assert_cmpmem(m->transaxial, 4 * n->radial * n->block, n->transaxial,
                  4 * n->radial * n->block);
  g_assert_cmpuint(m->block, ==, 4);
  g_assert_cmpuint(m->crystals_per_ring, ==, 32);
  /* by content through the format table */
  const TlFormatClass *f = tl_format_detect(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "norm");
  TlDataKind kind;
  gpointer any = tl_format_load_any(path, &kind, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(kind, ==, TL_DATA_PET_NORM);
  tl_data_free(kind, any);
  g_autoptr(GString) said = g_string_new(NULL);
  g_assert_true(tl_format_describe_file(path, said, &error));
  g_assert_nonnull(strstr(said->str, "crystal efficiencies: 128"));

  /* a lone CR in the description reads as the space saving writes (fuzz-norm finding) */
  {
    g_autofree char *raw = NULL;
    gsize rl = 0;
    g_assert_true(g_file_get_contents(path, &raw, &rl, NULL));
    char *cr = strstr(raw, "cylinder scan");
    g_assert_nonnull(cr);
    cr[strlen("cylinder")] = '\r';
    g_autofree char *crp = g_build_filename(dir, "cr.tln", NULL);
    g_assert_true(g_file_set_contents(crp, raw, (gssize)rl, NULL));
    g_autoptr(TlNorm) c = tl_norm_load(crp, sc, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(c->description, ==, n->description);
  }
  /* hostile versions of the same file */
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &data, &len, NULL));
  const char *end = strstr(data, "end_header\n");
  gsize hlen = (gsize)(end - data) + strlen("end_header\n");
  g_autofree char *header = g_strndup(data, hlen);
  guint N = n->n_crystals, R = n->rings;
  gsize tr_at = hlen + 4 * (N + R * (R + 1) / 2);
  struct {
    const char *what, *from, *to; /* header text replaced */
    gssize at;                    /* a float at this byte offset replaced (-1: none) */
    float value;
    gssize cut;                   /* bytes removed (< 0: added) at the end */
    const char *expect;           /* in the message, besides the file name */
  } cases[] = {
      {"wrong crystal count", "crystals = 128", "crystals = 127", -1, 0, 0, "crystals = 127"},
      {"wrong ring classes", "rings = 4\n", "rings = 3\n", -1, 0, 0, "rings = 3"},
      {"wrong block", "block = 4", "block = 5", -1, 0, 0, "block = 5"},
      {"zero crystals", "crystals = 128", "crystals = 0", -1, 0, 0, "crystals = 0"},
      {"too many crystals", "crystals = 128", "crystals = 99999999", -1, 0, 0, "99999999"},
      {"negative efficiency", NULL, NULL, (gssize)hlen + 4 * 7, -0.5f, 0, "crystal 7 = -0.5"},
      {"NaN transaxial factor", NULL, NULL, (gssize)tr_at + 4 * 5, NAN, 0, "= nan"},
      {"infinite axial factor", NULL, NULL, (gssize)hlen + 4 * (N + 1), INFINITY, 0, "= inf"},
      {"factor too large", NULL, NULL, (gssize)hlen, 3e7f, 0, "3e+07"},
      {"truncated", NULL, NULL, -1, 0, 4, "truncated"},
      {"truncated to the header", NULL, NULL, -1, 0, (gssize)(len - hlen), "0 bytes follow"},
      {"oversized", NULL, NULL, -1, 0, -4, "oversized"},
      {"scanner key", "scanner_sha256 = ", "scanner_sha256 = 0", -1, 0, 0, "scanner_sha256"},
      {"magic", "TOMOLAB-NORM 1", "TOMOLAB-NORM 2", -1, 0, 0, "TOMOLAB-NORM 2"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    GString *h = g_string_new(header);
    if (cases[k].from) {
      char *at = strstr(h->str, cases[k].from);
      g_assert_nonnull(at);
      gsize pos = (gsize)(at - h->str);
      g_string_erase(h, pos, strlen(cases[k].from));
      g_string_insert(h, pos, cases[k].to);
      if (g_str_equal(cases[k].what, "scanner key")) /* keep 64 digits: drop the last */
        g_string_erase(h, pos + strlen(cases[k].to) + 63, 1);
    }
    g_autoptr(GByteArray) b = g_byte_array_new();
    g_byte_array_append(b, (const guint8 *)h->str, h->len);
    g_byte_array_append(b, (const guint8 *)data + hlen, len - hlen);
    if (cases[k].at >= 0) {
      guint32 u;
      memcpy(&u, &cases[k].value, 4);
      u = GUINT32_TO_LE(u);
      memcpy(b->data + cases[k].at - hlen + h->len, &u, 4);
    }
    if (cases[k].cut > 0) g_byte_array_set_size(b, b->len - (guint)cases[k].cut);
    if (cases[k].cut < 0) g_byte_array_append(b, (const guint8 *)"\0\0\0\0", 4);
    g_string_free(h, TRUE);
    g_autofree char *bad = g_strdup_printf("%s/bad-%u.tln", dir, k);
    g_assert_true(g_file_set_contents(bad, (const char *)b->data, b->len, NULL));
    g_autoptr(TlNorm) x = tl_norm_load(bad, sc, &error);
    g_assert_null(x);
    g_assert_nonnull(error);
    g_test_message("%s: %s", cases[k].what, error->message);
    g_assert_nonnull(strstr(error->message, bad));
    g_assert_nonnull(strstr(error->message, cases[k].expect));
    g_clear_error(&error);
  }
  /* a file for another scanner: refused on load and by the reconstruction, naming both */
  TlScanner *ofx = fx_ring_scanner(4, 8, 4, 6.0f, 42.0f, 6.0f, 3);
  g_autoptr(TlScanner) other = tl_scanner_copy(ofx);
  fx_scanner_free(ofx);
  g_free(other->name);
  other->name = g_strdup("other-ring");
  g_assert_null(tl_norm_load(path, other, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, "'test-ring'"));
  g_assert_nonnull(strstr(error->message, "'other-ring'"));
  g_clear_error(&error);
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.norm = n;
  TlBin bin = {.a = 0, .b = 16, .count = 1};
  TlImageGrid g = octagon_grid();
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, other, &bin, 1, &g, &o, &error);
  g_assert_null(r);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "'other-ring'"));
  g_clear_error(&error);
  /* factors set by hand are checked too */
  n->efficiency[3] = -1.0f;
  g_assert_false(tl_norm_update(n, "by hand", &error));
  g_assert_nonnull(strstr(error->message, "efficiency of crystal 3 = -1"));
  g_clear_error(&error);
  tl_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/pet-norm/estimate", test_estimate);
  g_test_add_func("/pet-norm/listmode", test_listmode);
  g_test_add_func("/pet-norm/sensitivity", test_sensitivity);
  g_test_add_func("/pet-norm/cache", test_cache);
  g_test_add_func("/pet-norm/operator", test_operator);
  g_test_add_func("/pet-norm/recon-bias", test_recon_bias);
  g_test_add_func("/pet-norm/file", test_file);
  int rc = g_test_run();
  tl_norm_free(estimated_norm);
  if (S.sc) {
    fx_scanner_free(S.sc);
    tl_image_free(S.cyl);
    g_free(S.p);
    model_clear(&S.truth);
  }
  tl_test_context_done(ctx);
  return rc;
}
