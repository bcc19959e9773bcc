/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Penalised (MAP) reconstruction on simulated list-mode data in a small ring scanner:
 * - BSREM raises the penalised log-likelihood Phi = L - beta R at every iteration (each
 *   prior), Phi computed exactly from a projection of all data after each iteration;
 * - a beta sweep lowers the background coefficient of variation monotonically (a scaled-down
 *   NEMA-like phantom: a warm cylinder with two 4:1 hot spheres and a cold insert; the full
 *   NEMA IEC / DMI table is bench/map-sweep's, in docs/recon.md), for BSREM and OSL;
 * - a prior changed between steps (tl_solver_set_prior, what the window does while paused)
 *   is used by the next step, and algorithms without a prior refuse one;
 * - beta is relative: the solver's scale is the mean sensitivity over the support (rdp), over
 *   the start image's value (quadratic), times the smallest voxel edge (tv), against the same
 *   computed here from the sensitivity image in double; beta_absolute leaves it 1. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet/tl-recon.h"

static TlContext *ctx;
static TlListmode *lm;
static TlImage *truth;

/* 8 rings of 16 sides x 4 crystals (radius 50 mm); 24 x 24 x 8 voxels of 2.5 x 2.5 x 5 mm */
static TlImageGrid grid(void) { return fx_grid(24, 24, 8, 2.5f, 2.5f, 5.0f); }

/* a warm cylinder, a cold insert and two 4:1 hot spheres (tests/pet-fixture.h) */
static void simulate(void) {
  static const FxSphere hot[] = {{13.0f, 0, 5.0f}, {0, -13.0f, 3.5f}};
  TlImageGrid g = grid();
  lm = fx_nema_like(&g, 20.0f, 5.0f, hot, G_N_ELEMENTS(hot), 120000, 11, &truth);
}

static TlRecon *make(const char *algo, const char *prior, double beta, guint subsets,
                     guint iterations) {
  GError *error = NULL;
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algorithm = algo;
  o.algo = subsets > 1 ? TL_RECON_OSEM : TL_RECON_MLEM;
  o.subsets = subsets;
  o.iterations = iterations;
  o.loglik = TL_LOGLIK_NEVER;
  o.prior = prior;
  o.beta = beta;
  TlRecon *r = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  return r;
}

/* BSREM (4 subsets): Phi after each iteration never falls, and it rises overall. */
static void test_bsrem_monotone(gconstpointer prior) {
  GError *error = NULL;
  /* relative betas (the solver scales them: prior-scale below), of moderate strength */
  const double beta = g_str_equal(prior, "quadratic") ? 1e-6 : g_str_equal(prior, "tv") ? 3e-4 : 3e-3;
  g_autoptr(TlRecon) r = make("bsrem", prior, beta, 4, 8);
  TlSolver *sv = tl_recon_solver(r);
  double prev;
  g_assert_true(tl_solver_objective(sv, &prev, &error));
  double first = prev;
  GString *s = g_string_new(NULL);
  for (guint it = 0; it < 8; it++) {
    for (guint k = 0; k < 4; k++) g_assert_true(tl_recon_step(r, &error));
    double phi;
    g_assert_true(tl_solver_objective(sv, &phi, &error));
    g_assert_no_error(error);
    g_string_append_printf(s, " %.6f", phi);
    g_assert_cmpfloat(phi, >=, prev - 1e-7 * fabs(prev));
    prev = phi;
  }
  g_test_message("bsrem + %s (beta %g): Phi %.6f ->%s", (const char *)prior, beta, first, s->str);
  g_string_free(s, TRUE);
  g_assert_cmpfloat(prev, >, first);
}

/* Background CoV: voxels whose true activity is 1 with a true-background neighbourhood. */
static double background_cov(const TlImage *im) {
  const TlImageGrid *g = &im->grid;
  double s = 0, s2 = 0;
  guint64 n = 0;
  for (guint k = 1; k + 1 < g->dims[2]; k++)
    for (guint j = 1; j + 1 < g->dims[1]; j++)
      for (guint i = 1; i + 1 < g->dims[0]; i++) {
        gboolean all = TRUE;
        for (int c = -1; c <= 1 && all; c++)
          for (int b = -1; b <= 1 && all; b++)
            for (int a = -1; a <= 1 && all; a++)
              all = truth->data[(i + a) + g->dims[0] * ((j + b) + (guint64)g->dims[1] * (k + c))] == 1.0f;
        if (!all) continue;
        double v = im->data[i + g->dims[0] * (j + (guint64)g->dims[1] * k)];
        s += v, s2 += v * v, n++;
      }
  g_assert_cmpuint(n, >, 100);
  double m = s / n;
  return sqrt(MAX(s2 / n - m * m, 0)) / m;
}

static void test_beta_sweep(gconstpointer algo) {
  GError *error = NULL;
  static const double betas[] = {0, 1e-3, 3e-3, 1e-2, 3e-2}; /* relative */
  double prev = G_MAXDOUBLE;
  GString *s = g_string_new(NULL);
  for (gsize b = 0; b < G_N_ELEMENTS(betas); b++) {
    g_autoptr(TlRecon) r = make(algo, "rdp", betas[b], 4, 4);
    g_assert_true(tl_recon_run(r, &error));
    g_autoptr(TlImage) im = tl_recon_image(r, &error);
    g_assert_no_error(error);
    double cov = background_cov(im);
    g_string_append_printf(s, " beta %g: %.4f;", betas[b], cov);
    g_assert_cmpfloat(cov, <, prev);
    prev = cov;
  }
  g_test_message("%s + rdp background CoV:%s", (const char *)algo, s->str);
  g_string_free(s, TRUE);
}

/* The prior's scale (tl-solver.h) against a host computation from the solver's own sensitivity
 * image: mean over s > 0, the start value N / sum s (list mode: one count per event). */
static void test_prior_scale(void) {
  GError *error = NULL;
  static const char *priors[] = {"rdp", "quadratic", "tv"};
  for (gsize p = 0; p < G_N_ELEMENTS(priors); p++) {
    g_autoptr(TlRecon) r = make("bsrem", priors[p], 1.0, 4, 1);
    TlSolver *sv = tl_recon_solver(r);
    const TlArray *s = tl_solver_sensitivity(sv, G_MAXUINT);
    guint64 n = tl_image_grid_n_voxels(&truth->grid);
    g_autofree float *h = g_new(float, n);
    g_assert_true(tl_array_download(s, h, &error));
    g_assert_no_error(error);
    double sum = 0, support = 0;
    for (guint64 v = 0; v < n; v++)
      if (h[v] > 0) sum += h[v], support++;
    g_assert_cmpfloat(support, >, n / 2);
    double mean = sum / support, x0 = (double)lm->n_events / sum;
    TlImageGrid g = grid();
    double want = p == 0 ? mean : p == 1 ? mean / x0 : mean * MIN(g.voxel_mm[0], MIN(g.voxel_mm[1], g.voxel_mm[2]));
    double got = tl_solver_prior_scale(sv);
    g_test_message("%s: prior scale %.6g (mean sensitivity %.6g, start value %.6g)", priors[p],
                   got, mean, x0);
    g_assert_cmpfloat(fabs(got - want), <=, 1e-5 * want);
  }
  /* beta as given: scale 1 */
  GError *e2 = NULL;
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algorithm = "bsrem";
  o.algo = TL_RECON_OSEM;
  o.subsets = 4;
  o.iterations = 1;
  o.prior = "rdp";
  o.beta = 1;
  o.beta_absolute = TRUE;
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, lm, &g, &o, &e2);
  g_assert_no_error(e2);
  g_assert_cmpfloat(tl_solver_prior_scale(tl_recon_solver(r)), ==, 1.0);
}

/* The window's "change while paused": the step after tl_solver_set_prior uses the new prior;
 * the same step with the old one gives another image. */
static void test_change_prior(void) {
  GError *error = NULL;
  g_autoptr(TlRecon) a = make("osl", NULL, 0, 2, 2);
  g_autoptr(TlRecon) b = make("osl", NULL, 0, 2, 2);
  g_assert_true(tl_recon_step(a, &error) && tl_recon_step(b, &error));
  TlPriorParams pp;
  tl_prior_params_init(&pp);
  g_assert_true(tl_solver_set_prior(tl_recon_solver(b), "rdp", 0.01, &pp, &error));
  g_assert_no_error(error);
  g_assert_true(tl_recon_step(a, &error) && tl_recon_step(b, &error));
  g_autoptr(TlImage) ia = tl_recon_image(a, &error), ib = tl_recon_image(b, &error);
  double d = 0;
  for (guint64 v = 0; v < tl_image_grid_n_voxels(&ia->grid); v++)
    d = MAX(d, fabs(ia->data[v] - ib->data[v]));
  g_assert_cmpfloat(d, >, 0);
  g_assert_cmpfloat(background_cov(ib), <, background_cov(ia));
  /* back to none: the next step is plain OSEM again, and bad values are refused */
  g_assert_true(tl_solver_set_prior(tl_recon_solver(b), NULL, 0, NULL, &error));
  g_assert_false(tl_solver_set_prior(tl_recon_solver(b), "rdp", -1, &pp, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_solver_set_prior(tl_recon_solver(b), "huber", 1, &pp, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_autoptr(TlRecon) m = make("mlem", NULL, 0, 1, 1);
  g_assert_false(tl_solver_set_prior(tl_recon_solver(m), "rdp", 1, &pp, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* a prior on an algorithm that takes none is refused at creation too */
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.prior = "rdp";
  o.beta = 1;
  g_assert_null(tl_recon_new_listmode(ctx, lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  simulate();
  g_test_add_data_func("/recon/map/bsrem-monotone/rdp", "rdp", test_bsrem_monotone);
  g_test_add_data_func("/recon/map/bsrem-monotone/quadratic", "quadratic", test_bsrem_monotone);
  g_test_add_data_func("/recon/map/bsrem-monotone/tv", "tv", test_bsrem_monotone);
  g_test_add_data_func("/recon/map/beta-sweep/bsrem", "bsrem", test_beta_sweep);
  g_test_add_data_func("/recon/map/beta-sweep/osl", "osl", test_beta_sweep);
  g_test_add_func("/recon/map/change-prior", test_change_prior);
  g_test_add_func("/recon/map/prior-scale", test_prior_scale);
  int rc = g_test_run();
  tl_listmode_free(lm);
  tl_image_free(truth);
  tl_test_context_done(ctx);
  return rc;
}
