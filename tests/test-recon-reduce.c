/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The reconstruction core's reducer (TlSolverReducer, docs/scale.md) without MPI:
 *   two-participants  two threads, each with its own device context, its half of the events
 *                     (whole blocks of S) and its share of the sensitivity chunks, summing
 *                     through an in-process exchange: the image equals one process's run
 *                     within 1e-5 of its maximum, with attenuation;
 *   doubled           one participant whose reducer doubles every sum, as two participants
 *                     holding the same data would: the EM image is unchanged, every reported
 *                     log-likelihood exactly twice the plain one, and the reducer is called
 *                     once per sensitivity image and once per sub-iteration.
 * The references are analytic (sums over identical participants) or a one-process run. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"

static TlContext *ctx;

#define S 3
#define ITERATIONS 2
#define N_EVENTS 60000

static TlImageGrid grid(void) { return fx_grid(24, 24, 8, 2.5f, 2.5f, 5.0f); }

static TlListmode *listmode(void) {
  GError *error = NULL;
  TlScanner *fx = fx_ring_scanner(8, 16, 4, 4.97f, 50.0f, 5.0f, 7);
  g_autoptr(TlScanner) s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  g_autoptr(TlPhantom) ph = tl_phantom_new("two cylinders");
  TlShape a = {.kind = TL_SHAPE_CYLINDER, .centre = {-5, 3, 0}, .radius = 12, .half_length = 17,
               .axis = 2, .activity = 1, .flags = TL_SHAPE_SETS_ACTIVITY};
  TlShape b = {.kind = TL_SHAPE_CYLINDER, .centre = {8, -6, 0}, .radius = 4, .half_length = 17,
               .axis = 2, .activity = 4, .flags = TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &a);
  tl_phantom_add(ph, &b);
  TlImageGrid g = grid();
  g_autoptr(TlImage) act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 0, &act, NULL, &error));
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = N_EVENTS;
  sp.exact_count = TRUE;
  sp.seed = 7;
  TlListmode *lm = tl_simulate(s, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  return lm;
}

static TlImage *mu_map(void) {
  TlImageGrid g = grid();
  TlImage *mu = tl_image_new(&g);
  for (guint64 i = 0; i < fx_voxels(&g); i++) mu->data[i] = 0.0096f; /* water */
  return mu;
}

static void options(TlReconOptions *o, const TlImage *mu) {
  tl_recon_options_init(o);
  o->algo = TL_RECON_OSEM;
  o->subsets = S;
  o->iterations = ITERATIONS;
  o->loglik = TL_LOGLIK_SUBITERATION;
  o->attenuation = mu;
  o->use_cache = FALSE;
}

static double max_rel_diff(const TlImage *a, const TlImage *b) {
  guint64 n = fx_voxels(&a->grid);
  double m = 0, d = 0;
  for (guint64 i = 0; i < n; i++) {
    m = MAX(m, fabs(a->data[i]));
    d = MAX(d, fabs((double)a->data[i] - b->data[i]));
  }
  g_assert_cmpfloat(m, >, 0);
  return d / m;
}

static TlImage *run(TlContext *c, const TlListmode *lm, const TlReconOptions *o, GArray *ll);

static void on_progress(const TlReconProgress *p, gpointer data) {
  g_array_append_val((GArray *)data, p->loglik);
}

static TlImage *run(TlContext *c, const TlListmode *lm, const TlReconOptions *o, GArray *ll) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlRecon) r = tl_recon_new_listmode(c, lm, &g, o, &error);
  g_assert_no_error(error);
  if (ll) tl_recon_set_callback(r, on_progress, ll);
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  TlImage *img = tl_recon_image(r, &error);
  g_assert_no_error(error);
  return img;
}

/* Two participants in one process: each deposits its host copy, waits for the other, and
 * both add slot 0 + slot 1 in double in the same order. */
typedef struct {
  GMutex lock;
  GCond cond;
  guint arrived, generation;
  double *slot[2];
  guint64 n;
} Exchange;

typedef struct {
  Exchange *x;
  guint me;
  TlSolverReducer reducer;
  const TlListmode *lm;
  const TlImage *mu;
  TlImage *out;
} Party;

static void exchange(Exchange *x, guint me, double *v, guint64 n) {
  g_mutex_lock(&x->lock);
  guint gen = x->generation;
  x->slot[me] = v;
  x->n = n;
  if (++x->arrived == 2) {
    g_assert_cmpuint(x->n, ==, n);
    x->generation++;
    g_cond_broadcast(&x->cond);
  } else {
    while (x->generation == gen) g_cond_wait(&x->cond, &x->lock);
  }
  g_mutex_unlock(&x->lock);
  /* both slots are complete now; each party writes only its own result after the second
   * meeting, so the other still reads unchanged inputs meanwhile */
  double *sum = g_new(double, n);
  for (guint64 i = 0; i < n; i++) sum[i] = x->slot[0][i] + x->slot[1][i];
  g_mutex_lock(&x->lock);
  gen = x->generation;
  if (++x->arrived == 4) {
    x->arrived = 0;
    x->generation++;
    g_cond_broadcast(&x->cond);
  } else {
    while (x->generation == gen) g_cond_wait(&x->cond, &x->lock);
  }
  g_mutex_unlock(&x->lock);
  memcpy(v, sum, n * sizeof(double));
  g_free(sum);
}

static gboolean party_image(TlContext *c, TlArray *a, gpointer data, GError **error) {
  Party *p = data;
  guint64 n = tl_array_length(a);
  g_autofree float *h = g_new(float, n);
  g_autofree double *d = g_new(double, n);
  if (!tl_array_download(a, h, error)) return FALSE;
  for (guint64 i = 0; i < n; i++) d[i] = h[i];
  exchange(p->x, p->me, d, n);
  for (guint64 i = 0; i < n; i++) h[i] = (float)d[i];
  return tl_array_upload(a, h, error);
}

static gboolean party_scalars(double *v, guint n, gpointer data, GError **error) {
  Party *p = data;
  exchange(p->x, p->me, v, n);
  return TRUE;
}

static gpointer party_run(gpointer data) {
  Party *p = data;
  GError *error = NULL;
  g_autoptr(TlContext) c = tl_context_new(NULL, &error);
  g_assert_no_error(error);
  TlReconOptions o;
  options(&o, p->mu);
  o.parts = 2;
  o.part = p->me;
  o.sens_chunks = 8;
  p->reducer = (TlSolverReducer){party_image, party_scalars, p};
  o.reducer = &p->reducer;
  p->out = run(c, p->lm, &o, NULL);
  return NULL;
}

static TlListmode *share(const TlListmode *lm, guint64 first, guint64 count) {
  TlListmode *s = tl_listmode_new(tl_scanner_copy(lm->scanner), count);
  memcpy(s->events, lm->events + first, count * sizeof(TlEvent));
  s->has_tof = lm->has_tof;
  return s;
}

static void test_two_participants(void) {
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(TlImage) mu = mu_map();
  TlReconOptions o;
  options(&o, mu);
  g_autoptr(TlImage) one = run(ctx, lm, &o, NULL);
  /* halves in whole blocks of S, so local and file events share their subset */
  guint64 cut = (lm->n_events / S / 2) * S;
  g_autoptr(TlListmode) a = share(lm, 0, cut);
  g_autoptr(TlListmode) b = share(lm, cut, lm->n_events - cut);
  Exchange x = {0};
  g_mutex_init(&x.lock);
  g_cond_init(&x.cond);
  Party p[2] = {{&x, 0, {0}, a, mu, NULL}, {&x, 1, {0}, b, mu, NULL}};
  GThread *t = g_thread_new("party-1", party_run, &p[1]);
  party_run(&p[0]);
  g_thread_join(t);
  double d0 = max_rel_diff(one, p[0].out), d01 = max_rel_diff(p[0].out, p[1].out);
  g_test_message("one process vs two: %.3g of the maximum; the two parties: %.3g", d0, d01);
  g_assert_cmpfloat(d0, <, 1e-5);
  g_assert_cmpfloat(d01, <, 1e-6);
  /* not trivially equal: one half of the events alone gives another image */
  TlReconOptions half;
  options(&half, mu);
  g_autoptr(TlImage) alone = run(ctx, a, &half, NULL);
  g_assert_cmpfloat(max_rel_diff(one, alone), >, 1e-3);
  tl_image_free(p[0].out);
  tl_image_free(p[1].out);
  g_mutex_clear(&x.lock);
  g_cond_clear(&x.cond);
}

typedef struct {
  guint images, scalars;
} Count;

static gboolean double_image(TlContext *c, TlArray *a, gpointer data, GError **error) {
  ((Count *)data)->images++;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "a", a);
  g_autoptr(TlStream) s = tl_stream_new(c, error);
  return s && tl_expr_assign(c, s, "a = a + a", args, error) && tl_stream_finish(s, error);
}

static gboolean double_scalars(double *v, guint n, gpointer data, GError **error) {
  ((Count *)data)->scalars++;
  for (guint i = 0; i < n; i++) v[i] *= 2;
  return TRUE;
}

static void test_doubled(void) {
  g_autoptr(TlListmode) lm = listmode();
  TlReconOptions o;
  options(&o, NULL);
  g_autoptr(GArray) ll1 = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) ll2 = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(TlImage) plain = run(ctx, lm, &o, ll1);
  Count count = {0};
  TlSolverReducer twice = {double_image, double_scalars, &count};
  o.reducer = &twice;
  g_autoptr(TlImage) doubled = run(ctx, lm, &o, ll2);
  double d = max_rel_diff(plain, doubled);
  g_test_message("image: %.3g of the maximum; reducer calls: %u images, %u scalars", d,
                 count.images, count.scalars);
  g_assert_cmpfloat(d, <, 1e-5);
  g_assert_cmpuint(count.images, ==, S + S * ITERATIONS);
  g_assert_cmpuint(count.scalars, >=, 1 + 2 * S * ITERATIONS);
  g_assert_cmpuint(ll1->len, ==, S * ITERATIONS);
  g_assert_cmpuint(ll2->len, ==, S * ITERATIONS);
  for (guint i = 0; i < ll1->len; i++) {
    double a = g_array_index(ll1, double, i), b = g_array_index(ll2, double, i);
    g_assert_true(isfinite(a));
    g_assert_cmpfloat(fabs(b - 2 * a), <=, 1e-5 * fabs(a));
  }
  /* a reducer needs an emission algorithm */
  g_autoptr(GArray) bins = tl_listmode_histogram(lm);
  o.algorithm = "sirt";
  o.subsets = 1;
  GError *error = NULL;
  TlImageGrid g = grid();
  TlRecon *r = tl_recon_new_binned(ctx, lm->scanner, (const TlBin *)bins->data, bins->len, &g,
                                   &o, &error);
  g_assert_null(r);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "reducer"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/recon/reduce/two-participants", test_two_participants);
  g_test_add_func("/recon/reduce/doubled", test_doubled);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
