/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List-mode and binned MLEM/OSEM on three simulated line sources in a small ring scanner: where the
 * maxima land, non-negativity, monotone log-likelihood, OSEM vs MLEM convergence, binned vs
 * list mode, the sensitivity cache, cancellation and bad input. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"

static TlContext *ctx;

/* 8 rings of 16 sides x 4 crystals (radius 50 mm, 5 mm rings); 24 x 24 x 8 voxels of
 * 2.5 x 2.5 x 5 mm; lines parallel to z. */
static const double line_x[] = {-9.0, 8.5, 2.0}, line_y[] = {6.0, -7.0, 13.0};
#define N_LINES 3
#define N_EVENTS 150000

static TlScanner *scanner(void) {
  TlScanner *fx = fx_ring_scanner(8, 16, 4, 4.97f, 50.0f, 5.0f, 7);
  TlScanner *s = tl_scanner_copy(fx); /* allocated (and freed) by the data model's code */
  fx_scanner_free(fx);
  return s;
}

static TlImageGrid grid(void) { return fx_grid(24, 24, 8, 2.5f, 2.5f, 5.0f); }

/* Three line sources of equal strength through the whole axial field, simulated by the
 * Monte-Carlo simulator (no attenuation) with exactly N_EVENTS events. */
static TlListmode *line_listmode(guint32 seed) {
  GError *error = NULL;
  g_autoptr(TlScanner) s = scanner();
  g_autoptr(TlPhantom) ph = tl_phantom_new("three lines");
  for (guint l = 0; l < N_LINES; l++) {
    TlShape line = {.kind = TL_SHAPE_LINE, .centre = {(float)line_x[l], (float)line_y[l], 0},
                    .half_length = 17.0f, .axis = 2, .activity = 1.0f,
                    .flags = TL_SHAPE_SETS_ACTIVITY};
    tl_phantom_add(ph, &line);
  }
  TlImageGrid g = grid();
  g_autoptr(TlImage) act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 0, &act, NULL, &error));
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = N_EVENTS;
  sp.exact_count = TRUE;
  sp.seed = seed;
  TlListmode *lm = tl_simulate(s, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(lm->n_events, ==, N_EVENTS);
  return lm;
}

typedef struct {
  GArray *loglik; /* double per report */
  double first_rmse, last_rmse;
  guint calls;
  GCancellable *cancel_at_call; /* cancelled from the callback of call 2 */
} Trace;

static void on_progress(const TlReconProgress *p, gpointer data) {
  Trace *t = data;
  t->calls++;
  g_assert_cmpuint(p->sub_iterations, ==, t->calls);
  if (!isnan(p->loglik)) g_array_append_val(t->loglik, p->loglik);
  if (t->calls == 1) t->first_rmse = p->rmse;
  t->last_rmse = p->rmse;
  g_test_message("iteration %u subset %u/%u: loglik %.6f rmse %g, %.3f s", p->iteration,
                 p->subset + 1, p->n_subsets, p->loglik, p->rmse, p->seconds);
  if (t->cancel_at_call && t->calls == 2) g_cancellable_cancel(t->cancel_at_call);
}

static TlRecon *make(const TlListmode *lm, TlReconAlgo algo, guint subsets, guint iterations,
                     const char *projector, TlLoglikWhen when, Trace *trace) {
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = algo;
  o.subsets = subsets;
  o.iterations = iterations;
  o.projector = projector;
  o.loglik = when;
  TlImageGrid g = grid();
  GError *error = NULL;
  TlRecon *r = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  if (trace) {
    trace->loglik = g_array_new(FALSE, FALSE, sizeof(double));
    tl_recon_set_callback(r, on_progress, trace);
  }
  return r;
}

/* MLEM: log-likelihood never decreases (up to float rounding of the sums), the image stays
 * non-negative, and in every slice the maximum near each line lies within one voxel of it. */
static void test_mlem_lines(gconstpointer projector) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(1);
  Trace tr = {0};
  g_autoptr(TlRecon) r = make(lm, TL_RECON_MLEM, 1, 12, projector, TL_LOGLIK_ITERATION, &tr);
  double ll0;
  g_assert_true(tl_recon_loglik(r, &ll0, &error));
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tr.loglik->len, ==, 12);
  double prev = ll0;
  for (guint i = 0; i < tr.loglik->len; i++) {
    double ll = g_array_index(tr.loglik, double, i);
    g_assert_cmpfloat(ll, >=, prev - 1e-7 * fabs(prev));
    prev = ll;
  }
  g_assert_cmpfloat(prev, >, ll0);

  g_autoptr(TlImage) im = tl_recon_image(r, &error);
  g_assert_no_error(error);
  const TlImageGrid *g = &im->grid;
  guint64 nv = tl_image_grid_n_voxels(g);
  for (guint64 i = 0; i < nv; i++) g_assert_cmpfloat(im->data[i], >=, 0.0f);
  for (guint l = 0; l < N_LINES; l++) {
    double ci = (line_x[l] - g->origin_mm[0]) / g->voxel_mm[0];
    double cj = (line_y[l] - g->origin_mm[1]) / g->voxel_mm[1];
    for (guint k = 1; k + 1 < g->dims[2]; k++) { /* the end slices see few oblique LORs */
      int bi = -1, bj = -1;
      float best = -1;
      for (int j = (int)cj - 3; j <= (int)cj + 3; j++)
        for (int i = (int)ci - 3; i <= (int)ci + 3; i++) {
          float v = im->data[i + g->dims[0] * (j + g->dims[1] * k)];
          if (v > best) best = v, bi = i, bj = j;
        }
      g_assert_cmpfloat(fabs(bi - ci), <=, 1.0);
      g_assert_cmpfloat(fabs(bj - cj), <=, 1.0);
    }
  }
  g_array_free(tr.loglik, TRUE);
}

/* OSEM with S subsets reaches, within 2 iterations, the log-likelihood MLEM has after S
 * iterations (van Gendt et al. 2021: OSEM converges about S times faster). */
static void test_osem_vs_mlem(void) {
  GError *error = NULL;
  const guint S = 4;
  g_autoptr(TlListmode) lm = line_listmode(2);
  Trace tm = {0}, to = {0};
  g_autoptr(TlRecon) mlem = make(lm, TL_RECON_MLEM, 1, S, "siddon", TL_LOGLIK_ITERATION, &tm);
  g_autoptr(TlRecon) osem = make(lm, TL_RECON_OSEM, S, 2, "siddon", TL_LOGLIK_ITERATION, &to);
  g_assert_true(tl_recon_run(mlem, &error));
  g_assert_true(tl_recon_run(osem, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(to.calls, ==, 2 * S);
  double want = g_array_index(tm.loglik, double, S - 1);
  double got = g_array_index(to.loglik, double, to.loglik->len - 1);
  g_test_message("MLEM after %u iterations %.6f; OSEM %u subsets after 1 iteration %.6f, "
                 "after 2 %.6f", S, want, S, g_array_index(to.loglik, double, 0), got);
  g_assert_cmpfloat(got, >=, want);
  g_array_free(tm.loglik, TRUE);
  g_array_free(to.loglik, TRUE);
}

static double max_rel_diff(const TlImage *a, const TlImage *b) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&a->grid); i++) {
    m = MAX(m, fabs(a->data[i]));
    d = MAX(d, fabs(a->data[i] - b->data[i]));
  }
  return d / m;
}

/* MLEM on the histogram equals list-mode MLEM (sum over events of one LOR = count x the same
 * ratio); binned OSEM with per-subset sensitivities raises the log-likelihood. */
static void test_binned(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(3);
  g_autoptr(GArray) bins = tl_listmode_histogram(lm);
  g_test_message("%" G_GUINT64_FORMAT " events in %u bins", lm->n_events, bins->len);
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.iterations = 3;
  o.loglik = TL_LOGLIK_NEVER;
  g_autoptr(TlRecon) lr = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_autoptr(TlRecon) br = tl_recon_new_binned(ctx, lm->scanner, (TlBin *)bins->data, bins->len,
                                              &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(lr, &error) && tl_recon_run(br, &error));
  g_autoptr(TlImage) li = tl_recon_image(lr, &error), bi = tl_recon_image(br, &error);
  double d = max_rel_diff(li, bi);
  g_test_message("binned vs list-mode MLEM after 3 iterations: %.3g", d);
  g_assert_cmpfloat(d, <=, 1e-4);

  o.algo = TL_RECON_OSEM;
  o.subsets = 5;
  o.iterations = 2;
  o.loglik = TL_LOGLIK_SUBITERATION;
  g_autoptr(TlRecon) bo = tl_recon_new_binned(ctx, lm->scanner, (TlBin *)bins->data, bins->len,
                                              &g, &o, &error);
  g_assert_no_error(error);
  double ll0;
  g_assert_true(tl_recon_loglik(bo, &ll0, &error));
  Trace tr = {.loglik = g_array_new(FALSE, FALSE, sizeof(double))};
  tl_recon_set_callback(bo, on_progress, &tr);
  g_assert_true(tl_recon_run(bo, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tr.calls, ==, 10);
  double last = g_array_index(tr.loglik, double, tr.loglik->len - 1);
  g_assert_cmpfloat(last, >, ll0);
  g_array_free(tr.loglik, TRUE);
}

/* STIR's "zero end planes of segment 0": the run with the option equals the run without it on
 * the data with those events removed here by the documented crystal numbering (id = ring *
 * crystals_per_ring + i; pairs within ring 0 or within the last ring), bit for bit, list mode
 * and binned. */
static void test_zero_end_planes(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(5);
  const guint per = lm->scanner->crystals_per_ring, last = lm->scanner->n_rings - 1;
  g_autoptr(TlListmode) kept = tl_listmode_new(tl_scanner_copy(lm->scanner), lm->n_events);
  guint64 k = 0;
  for (guint64 i = 0; i < lm->n_events; i++) {
    guint ra = lm->events[i].a / per, rb = lm->events[i].b / per;
    if (!(ra == rb && (ra == 0 || ra == last))) kept->events[k++] = lm->events[i];
  }
  kept->n_events = k;
  g_test_message("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " events in the end planes",
                 lm->n_events - k, lm->n_events);
  g_assert_cmpuint(k, <, lm->n_events);
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 2;
  o.iterations = 2;
  o.loglik = TL_LOGLIK_NEVER;
  g_autoptr(TlRecon) plain = tl_recon_new_listmode(ctx, kept, &g, &o, &error);
  g_assert_no_error(error);
  o.zero_end_planes = TRUE;
  g_autoptr(TlRecon) zeroed = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(plain, &error) && tl_recon_run(zeroed, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) a = tl_recon_image(plain, &error), b = tl_recon_image(zeroed, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(a->data, tl_image_grid_n_voxels(&g) * sizeof(float), b->data,
                  tl_image_grid_n_voxels(&g) * sizeof(float));
  /* binned: the same rule on the bins */
  g_autoptr(GArray) all = tl_listmode_histogram(lm), some = tl_listmode_histogram(kept);
  g_assert_cmpuint(some->len, <, all->len);
  o.zero_end_planes = FALSE;
  g_autoptr(TlRecon) bp = tl_recon_new_binned(ctx, lm->scanner, (TlBin *)some->data, some->len,
                                              &g, &o, &error);
  g_assert_no_error(error);
  o.zero_end_planes = TRUE;
  g_autoptr(TlRecon) bz = tl_recon_new_binned(ctx, lm->scanner, (TlBin *)all->data, all->len,
                                              &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(bp, &error) && tl_recon_run(bz, &error));
  g_autoptr(TlImage) c = tl_recon_image(bp, &error), d = tl_recon_image(bz, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(c->data, tl_image_grid_n_voxels(&g) * sizeof(float), d->data,
                  tl_image_grid_n_voxels(&g) * sizeof(float));
}

/* A second reconstruction on the same scanner, grid and projector reads the sensitivity image
 * from the disk cache and reconstructs the same image. */
static void test_cache(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(4);
  g_autoptr(TlRecon) a = make(lm, TL_RECON_MLEM, 1, 1, "joseph", TL_LOGLIK_NEVER, NULL);
  g_autoptr(TlRecon) b = make(lm, TL_RECON_MLEM, 1, 1, "joseph", TL_LOGLIK_NEVER, NULL);
  g_assert_true(tl_recon_sensitivity_cached(b));
  g_autofree float *sa = fx_download(tl_recon_sensitivity(a));
  g_autofree float *sb = fx_download(tl_recon_sensitivity(b));
  g_assert_cmpmem(sa, 4 * tl_array_length(tl_recon_sensitivity(a)), sb,
                  4 * tl_array_length(tl_recon_sensitivity(b)));
  g_assert_true(tl_recon_run(a, &error) && tl_recon_run(b, &error));
  g_autoptr(TlImage) ia = tl_recon_image(a, &error), ib = tl_recon_image(b, &error);
  g_assert_no_error(error);
  /* atomic adds land in any order: equal up to float rounding */
  g_assert_cmpfloat(max_rel_diff(ia, ib), <=, 1e-5);
}

/* Cancelled during a sub-iteration (from the callback of the 2nd, so the 3rd finds it
 * cancelled between submissions or before starting): the image stays the 2nd one. */
static void test_cancel(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(5);
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  Trace tr = {.cancel_at_call = cancel};
  g_autoptr(TlRecon) r = make(lm, TL_RECON_OSEM, 4, 2, "siddon", TL_LOGLIK_NEVER, &tr);
  tl_recon_set_cancellable(r, cancel);
  g_assert_true(tl_recon_step(r, &error));
  g_assert_true(tl_recon_step(r, &error));
  g_autoptr(TlImage) second = tl_recon_image(r, &error);
  g_assert_false(tl_recon_run(r, &error));
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_cmpuint(tl_recon_sub_iterations(r), ==, 2);
  g_autoptr(TlImage) now = tl_recon_image(r, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(second->data, 4 * tl_image_grid_n_voxels(&now->grid), now->data,
                  4 * tl_image_grid_n_voxels(&now->grid));
  g_array_free(tr.loglik, TRUE);
}

static gpointer cancel_later(gpointer data) {
  g_usleep(30000);
  g_cancellable_cancel(data);
  return NULL;
}

/* Cancelled from another thread while a sub-iteration runs in many small submissions: the
 * stream stops between two of them and the image stays the last complete one. */
static void test_cancel_mid_step(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(8);
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  g_autoptr(TlRecon) r = make(lm, TL_RECON_MLEM, 1, 2, "siddon", TL_LOGLIK_NEVER, NULL);
  tl_recon_set_cancellable(r, cancel);
  g_assert_true(tl_recon_step(r, &error));
  g_autoptr(TlImage) first = tl_recon_image(r, &error);
  tl_recon_set_submit_budget(r, 64 * 64); /* a few rays per submission: seconds in all */
  GThread *t = g_thread_new("cancel", cancel_later, cancel);
  gint64 t0 = g_get_monotonic_time();
  g_assert_false(tl_recon_step(r, &error));
  g_test_message("cancelled after %.3f s", (g_get_monotonic_time() - t0) * 1e-6);
  g_thread_join(t);
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_cmpuint(tl_recon_sub_iterations(r), ==, 1);
  g_autoptr(TlImage) now = tl_recon_image(r, &error);
  g_assert_cmpmem(first->data, 4 * tl_image_grid_n_voxels(&now->grid), now->data,
                  4 * tl_image_grid_n_voxels(&now->grid));
  /* and it resumes once the cancellable is reset */
  g_cancellable_reset(cancel);
  tl_recon_set_submit_budget(r, 1 << 26);
  g_assert_true(tl_recon_step(r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_recon_sub_iterations(r), ==, 2);
}

/* The RMSE against the voxelised line sources falls over the first iterations. */
static void test_truth(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(6);
  Trace tr = {0};
  g_autoptr(TlRecon) r = make(lm, TL_RECON_MLEM, 1, 3, "joseph", TL_LOGLIK_NEVER, &tr);
  TlImageGrid g = grid();
  g_autoptr(TlImage) truth = tl_image_new(&g);
  for (guint l = 0; l < N_LINES; l++) {
    guint i = (guint)floor((line_x[l] - g.origin_mm[0]) / g.voxel_mm[0] + 0.5);
    guint j = (guint)floor((line_y[l] - g.origin_mm[1]) / g.voxel_mm[1] + 0.5);
    for (guint k = 0; k < g.dims[2]; k++) truth->data[i + g.dims[0] * (j + g.dims[1] * k)] = 1;
  }
  TlImageGrid other = fx_grid(24, 24, 9, 2.5f, 2.5f, 5.0f);
  g_autoptr(TlImage) wrong = tl_image_new(&other);
  g_assert_false(tl_recon_set_truth(r, wrong, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_assert_true(tl_recon_set_truth(r, truth, &error));
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tr.calls, ==, 3);
  g_assert_cmpfloat(tr.last_rmse, <, tr.first_rmse);
  g_array_free(tr.loglik, TRUE);
}

static void test_bad_input(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) lm = line_listmode(7);
  TlImageGrid g = grid();
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 0;
  g_assert_null(tl_recon_new_listmode(ctx, lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  tl_recon_options_init(&o);
  o.projector = "fourier";
  g_assert_null(tl_recon_new_listmode(ctx, lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  TlImageGrid zero = g;
  zero.dims[2] = 0;
  g_assert_null(tl_recon_new_listmode(ctx, lm, &zero, NULL, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  lm->events[10].b = lm->scanner->n_crystals + 5; /* crystal id out of range */
  g_assert_null(tl_recon_new_listmode(ctx, lm, &g, NULL, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  TlBin bins[2] = {{1, 40, 3.0f}, {2, 41, NAN}};
  g_assert_null(tl_recon_new_binned(ctx, lm->scanner, bins, 2, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  bins[1] = (TlBin){0, 1, 2.0f}; /* same side of the polygon: not a detectable pair */
  g_assert_null(tl_recon_new_binned(ctx, lm->scanner, bins, 2, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/pet/recon/mlem-lines/siddon", "siddon", test_mlem_lines);
  g_test_add_data_func("/pet/recon/mlem-lines/joseph", "joseph", test_mlem_lines);
  g_test_add_func("/pet/recon/osem-vs-mlem", test_osem_vs_mlem);
  g_test_add_func("/pet/recon/binned", test_binned);
  g_test_add_func("/pet/recon/zero-end-planes", test_zero_end_planes);
  g_test_add_func("/pet/recon/sensitivity-cache", test_cache);
  g_test_add_func("/pet/recon/cancel", test_cancel);
  g_test_add_func("/pet/recon/cancel-mid-step", test_cancel_mid_step);
  g_test_add_func("/pet/recon/truth", test_truth);
  g_test_add_func("/pet/recon/bad-input", test_bad_input);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
