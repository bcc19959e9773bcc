/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The rule "list-mode and sinogram paths of one scanner agree" (issue 26 item 5): a small ring
 * scanner, a few thousand events simulated with Compton scatter and randoms, and the same
 * events histogrammed as crystal-pair bins (every allowed pair, zero counts kept, as
 * bench/pet-nema-quant --binned does). They are the same data, so MLEM (one subset: the two
 * paths cut subsets differently) with the same options must give the same image, to float
 * summation order:
 *  - no correction, randoms from delayeds, a normalisation, attenuation, a fixed scatter
 *    estimate (TlReconOptions.scatter_estimate and tl_recon_set_scatter), every correction with
 *    SSS rounds (tl_recon_scatter_rounds: the tail fit's pair counts come from each path's own
 *    records);
 *  - the start image: for binned data without an additive term (the fused pass keeps no data
 *    vector) the solver's start value is the counts' sum over the sensitivity's, as for list
 *    mode, not the number of bins. */
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/correct/tl-norm.h"
#include "pet/correct/tl-randoms.h"
#include "pet/correct/tl-sss.h"
#include "pet/simulate/tl-simulate.h"
#include "tl-test-common.h"
#include <math.h>

static TlContext *ctx;

/* 3 rings of 8 sides x 3 crystals (r 60 mm), a water cylinder (r 16 mm: lines that miss it
 * hold the tail) with a hot denser rod, 17 x 17 x 3 voxels of 8 mm:
 *  - every line of the ring crosses the grid (a line outside it with counts and only a tiny
 *    SSS term under them makes y / ybar ~1e18, and the first EM step returns an all-zero
 *    image, both paths alike);
 *  - an odd count: on an even grid this ring's diametric lines lie on the voxel planes x = 0
 *    and y = 0, where the sensitivity's double-precision walk and the projectors' float walk
 *    pick different sides, so a subset's sensitivity and its back projection differ by up to
 *    17 % in those voxels (16 x 16: subset 1 of 3), whichever path. */
typedef struct {
  TlScanner *sc;
  TlImage *act, *mu;
  TlListmode *lm;
  TlBin *bins; /* every allowed pair, zero counts kept */
  guint64 n_bins;
  TlRandoms *rnd;
  TlNorm *norm;
  TlScatterEstimate *scatter;
  TlSssParams sss;
} Data;

static Data D;

static void make_data(void) {
  TlScanner *fx = fx_ring_scanner(3, 8, 3, 6.0f, 60.0f, 6.0f, 2);
  D.sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  TlImageGrid g = fx_grid(17, 17, 3, 8.0f, 8.0f, 8.0f);
  g_autoptr(TlPhantom) ph = tl_phantom_new("binned vs list mode");
  tl_phantom_add(ph, &(TlShape){.kind = TL_SHAPE_CYLINDER, .radius = 16, .half_length = 12,
                                .axis = 2, .activity = 1.0f, .mu = TL_MU_WATER,
                                .flags = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU});
  tl_phantom_add(ph, &(TlShape){.kind = TL_SHAPE_CYLINDER, .centre = {6, -3, 0}, .radius = 5,
                                .half_length = 12, .axis = 2, .activity = 4.0f, .mu = 0.015f,
                                .flags = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU});
  GError *error = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, &D.act, &D.mu, &error));
  g_assert_no_error(error);

  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 8000;
  sp.exact_count = TRUE;
  sp.seed = 11;
  sp.n_threads = 2;
  sp.scatter = TRUE;
  sp.randoms_fraction = 0.15;
  D.lm = tl_simulate(D.sc, D.act, D.mu, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(D.lm->n_events, >, 7000);

  /* the same events as bins: every allowed pair, its count (0 where none) */
  g_autoptr(GArray) h = tl_listmode_histogram(D.lm);
  GArray *all = g_array_new(FALSE, FALSE, sizeof(TlBin));
  double total = 0;
  for (guint a = 0, i = 0; a < D.sc->n_crystals; a++)
    for (guint b = a + 1; b < D.sc->n_crystals; b++) {
      if (!fx_pair_allowed(D.sc, a, b)) continue;
      TlBin bin = {a, b, 0};
      while (i < h->len && (g_array_index(h, TlBin, i).a < a ||
                            (g_array_index(h, TlBin, i).a == a && g_array_index(h, TlBin, i).b < b)))
        i++;
      if (i < h->len && g_array_index(h, TlBin, i).a == a && g_array_index(h, TlBin, i).b == b)
        bin.count = g_array_index(h, TlBin, i).count;
      total += bin.count;
      g_array_append_val(all, bin);
    }
  g_assert_cmpfloat(total, ==, (double)D.lm->n_events); /* every event in a bin */
  D.n_bins = all->len;
  D.bins = (TlBin *)g_array_free(all, FALSE);

  /* delayeds drawn here: uniform over the allowed pairs, 1000 of them */
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  g_autofree TlEvent *dl = g_new(TlEvent, 1000);
  for (guint k = 0; k < 1000;) {
    guint a = g_rand_int_range(rng, 0, D.sc->n_crystals), b = g_rand_int_range(rng, 0, D.sc->n_crystals);
    if (a != b && fx_pair_allowed(D.sc, a, b)) dl[k++] = (TlEvent){a, b, 0};
  }
  D.rnd = tl_randoms_from_delayeds(D.sc, dl, 1000, &error);
  g_assert_no_error(error);

  /* a normalisation with every factor away from 1 */
  D.norm = tl_norm_new(D.sc, TRUE, TRUE, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < D.norm->n_crystals; i++)
    D.norm->efficiency[i] = (float)(1 + 0.3 * sin(1.7 * i));
  for (guint i = 0; i < D.norm->rings * D.norm->rings; i++)
    D.norm->axial[i] = 1.0f + 0.05f * (float)(D.norm->rings > 1 ? (i / D.norm->rings + i % D.norm->rings) % 3 : 0);
  for (guint i = 0; i < D.norm->radial * D.norm->block; i++)
    D.norm->transaxial[i] = (float)(1 + 0.2 * cos(0.9 * i));
  g_assert_true(tl_norm_update(D.norm, "test", &error));
  g_assert_no_error(error);

  /* SSS of the truth scaled to 30 % of the events: a fixed scatter term */
  tl_sss_params_init(&D.sss);
  tl_energy_window_init(&D.sss.window);
  D.sss.voxel_mm = 8;
  D.sss.scatter_mm = 8;
  D.sss.detector_mm = 0;
  D.sss.n_threads = 2;
  D.scatter = tl_sss_estimate(D.sc, D.act, D.mu, &D.sss, NULL, NULL, &error);
  g_assert_no_error(error);
  double tot = 0;
  for (guint a = 0; a < D.sc->n_crystals; a++)
    for (guint b = a + 1; b < D.sc->n_crystals; b++)
      if (fx_pair_allowed(D.sc, a, b)) tot += tl_scatter_estimate_pair(D.scatter, a, b);
  D.scatter->scale = 0.3 * D.lm->n_events / tot;
}

static void free_data(void) {
  tl_scanner_free(D.sc);
  tl_image_free(D.act);
  tl_image_free(D.mu);
  tl_listmode_free(D.lm);
  g_free(D.bins);
  tl_randoms_free(D.rnd);
  tl_norm_free(D.norm);
  tl_scatter_estimate_free(D.scatter);
}

enum {
  C_RANDOMS = 1 << 0,
  C_NORM = 1 << 1,
  C_ATTEN = 1 << 2,
  C_SCATTER = 1 << 3,     /* the fixed estimate from the start */
  C_SET_SCATTER = 1 << 4, /* the fixed estimate put in after the first iteration */
  C_ROUNDS = 1 << 5,      /* SSS rounds after the first iterations */
};

/* Both paths' run: 3 MLEM iterations (the paths define subsets differently), no cache. */
static void mlem_options(TlReconOptions *o) {
  tl_recon_options_init(o);
  o->algorithm = "mlem";
  o->iterations = 3;
  o->loglik = TL_LOGLIK_NEVER;
  o->use_cache = FALSE;
}

static TlRecon *make(gboolean binned, guint flags) {
  TlReconOptions o;
  mlem_options(&o);
  o.randoms = flags & C_RANDOMS ? D.rnd : NULL;
  o.norm = flags & C_NORM ? D.norm : NULL;
  o.attenuation = flags & (C_ATTEN | C_ROUNDS) ? D.mu : NULL;
  o.scatter_estimate = flags & C_SCATTER ? D.scatter : NULL;
  GError *error = NULL;
  TlRecon *r = binned ? tl_recon_new_binned(ctx, D.sc, D.bins, D.n_bins, &D.mu->grid, &o, &error)
                      : tl_recon_new_listmode(ctx, D.lm, &D.mu->grid, &o, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

static TlImage *run(gboolean binned, guint flags) {
  g_autoptr(TlRecon) r = make(binned, flags);
  GError *error = NULL;
  if (flags & C_SET_SCATTER) {
    g_assert_true(tl_recon_step(r, &error));
    g_assert_true(tl_recon_set_scatter(r, D.scatter, &error));
    g_assert_no_error(error);
  }
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  if (flags & C_ROUNDS) {
    TlScatterRounds so;
    tl_scatter_rounds_init(&so);
    so.rounds = 2;
    so.iterations = 1;
    so.sss = D.sss;
    so.tail.margin_mm = 4;
    so.tail.min_counts = 10;
    g_autoptr(TlScatterEstimate) e = tl_recon_scatter_rounds(r, D.mu, &so, &error);
    g_assert_no_error(error);
    g_assert_nonnull(e);
    g_assert_cmpfloat(e->scale, >, 0);
  }
  TlImage *x = tl_recon_image(r, &error);
  g_assert_no_error(error);
  return x;
}

/* max |a - b| / max |b| */
static double rel_diff(const TlImage *a, const TlImage *b) {
  double d = 0, m = 0;
  for (guint64 i = 0; i < fx_voxels(&a->grid); i++)
    d = MAX(d, fabs(a->data[i] - b->data[i])), m = MAX(m, fabs(b->data[i]));
  return d / m;
}

static void check_case(gconstpointer data) {
  guint flags = GPOINTER_TO_UINT(data);
  g_autoptr(TlImage) lm = run(FALSE, flags);
  g_autoptr(TlImage) bn = run(TRUE, flags);
  double d = rel_diff(bn, lm);
  g_test_message("flags 0x%x: binned vs list mode %.3g (relative to the maximum)", flags, d);
  g_assert_cmpfloat(tl_image_sum(lm), >, 0);
  g_assert_cmpfloat(d, <=, 1e-5);
}

/* The start image before any step: counts / sum of the sensitivity where it is > 0, the same
 * for both paths; checked against the plain sums here. */
static void test_start(void) {
  g_autoptr(TlRecon) l = make(FALSE, 0);
  g_autoptr(TlRecon) b = make(TRUE, 0);
  GError *error = NULL;
  g_autoptr(TlImage) xl = tl_recon_image(l, &error);
  g_autoptr(TlImage) xb = tl_recon_image(b, &error);
  g_assert_no_error(error);
  const TlArray *sens = tl_recon_sensitivity(b);
  g_autofree float *s = fx_download(sens);
  double ssum = 0;
  for (guint64 i = 0; i < fx_voxels(&xb->grid); i++) ssum += s[i];
  double want = D.lm->n_events / ssum;
  for (guint64 i = 0; i < fx_voxels(&xb->grid); i++) {
    if (s[i] <= 0) continue;
    g_assert_cmpfloat_with_epsilon(xb->data[i], want, 1e-5 * want);
    g_assert_cmpfloat_with_epsilon(xl->data[i], want, 1e-5 * want);
  }
}

/* On an even grid this ring's diametric lines lie on voxel planes, where a ray's walk from a
 * to b and from b to a may pick different sides: list mode (events as detected, either order)
 * and bins (as given, a < b here) must still project each pair the one way the sensitivity
 * does (0.093 relative apart on 10 x 10 x 3 before the operators stored one orientation). */
static void test_orientation(void) {
  TlImageGrid g = fx_grid(16, 16, 3, 8.0f, 8.0f, 8.0f);
  TlReconOptions o;
  mlem_options(&o);
  GError *error = NULL;
  g_autoptr(TlRecon) l = tl_recon_new_listmode(ctx, D.lm, &g, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlRecon) b = tl_recon_new_binned(ctx, D.sc, D.bins, D.n_bins, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(l, &error) && tl_recon_run(b, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) xl = tl_recon_image(l, &error);
  g_autoptr(TlImage) xb = tl_recon_image(b, &error);
  g_assert_no_error(error);
  double d = rel_diff(xb, xl);
  g_test_message("even grid: binned vs list mode %.3g", d);
  g_assert_cmpfloat(d, <=, 1e-5);
}

/* Binned OSEM's subsets (pair index mod S): each subset's sensitivity is the back projection
 * of ones over that subset's bins (all allowed pairs are bins here), with the normalisation
 * and attenuation, so a subset's update is not weighed by another subset's pairs. */
static void test_subset_sensitivity(void) {
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algorithm = "osem";
  o.subsets = 5;
  o.loglik = TL_LOGLIK_NEVER;
  o.use_cache = FALSE;
  o.norm = D.norm;
  o.attenuation = D.mu;
  GError *error = NULL;
  g_autoptr(TlRecon) r = tl_recon_new_binned(ctx, D.sc, D.bins, D.n_bins, &D.mu->grid, &o, &error);
  g_assert_no_error(error);
  TlOperator *op = tl_recon_operator(r);
  guint64 nv = fx_voxels(&D.mu->grid);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  for (guint k = 0; k < tl_operator_n_subsets(op); k++) {
    guint64 len = tl_operator_subset_length(op, k);
    g_autofree float *ones = g_new(float, len);
    for (guint64 i = 0; i < len; i++) ones[i] = 1;
    g_autoptr(TlArray) w = fx_upload(ctx, ones, len, 4);
    g_autofree float *zero = g_new0(float, nv);
    g_autoptr(TlArray) back = fx_upload(ctx, zero, nv, 4);
    g_assert_true(tl_operator_adjoint(op, st, k, w, back, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    g_autofree float *want = fx_download(back);
    g_autofree float *got = fx_download(tl_solver_sensitivity(tl_recon_solver(r), k));
    double d = 0, m = 0;
    for (guint64 i = 0; i < nv; i++) d = MAX(d, fabs(got[i] - want[i])), m = MAX(m, want[i]);
    g_test_message("subset %u: sensitivity vs A_k^T D_k 1: %.3g relative", k, d / m);
    g_assert_cmpfloat(m, >, 0);
    g_assert_cmpfloat(d / m, <=, 1e-5);
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  make_data();
  g_test_add_func("/pet-binned-listmode/start", test_start);
  g_test_add_func("/pet-binned-listmode/subset-sensitivity", test_subset_sensitivity);
  g_test_add_func("/pet-binned-listmode/orientation", test_orientation);
  static const struct {
    const char *name;
    guint flags;
  } cases[] = {
      {"none", 0},
      {"randoms", C_RANDOMS},
      {"norm", C_NORM},
      {"attenuation", C_ATTEN},
      {"scatter", C_SCATTER},
      {"set-scatter", C_SET_SCATTER | C_ATTEN},
      {"scatter-randoms-norm", C_SCATTER | C_RANDOMS | C_NORM | C_ATTEN},
      {"rounds", C_ROUNDS},
      {"rounds-every", C_ROUNDS | C_RANDOMS | C_NORM},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/pet-binned-listmode/%s", cases[i].name);
    g_test_add_data_func(path, GUINT_TO_POINTER(cases[i].flags), check_case);
  }
  int rc = g_test_run();
  free_data();
  tl_test_context_done(ctx);
  return rc;
}
