/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ab-emml (compute/recon/tl-algo-abemml.c: AB-EMML with B infinite and the lower bound
 * A = -x0) on the CSR operator with a small explicit matrix, and the EM steps' objective:
 *
 *   reference      the device image after 5 iterations (1 and 3 subsets, with D and the
 *                  additive term) against the plain C double update below, within 1e-5
 *                  relative; the reported objective against the double Poisson
 *                  log-likelihood of the image its last pass started from
 *   mlem-limit     noiseless data of a positive image: after 400 iterations ab-emml and
 *                  mlem give the same image (1e-3 relative), the image the data came from
 *   negative       a voxel whose rows recorded nothing under an additive term: ab-emml takes
 *                  it below 0 (mlem stops at 0), every voxel the data hold up stays > 0
 *   no-data        refused with the reason
 *   em-floor       mlem's objective from its own pass equals the solver's objective of the
 *                  same image where a datum with y > 0 lies on a row of A that is 0 (ybar = 0):
 *                  both floor ybar at 1e-30 (the pass left the datum out: 69 y apart)
 *   em-floor-pet   the same through PET list mode's fused EM pass (pet_em): events on lines
 *                  that miss the grid score m log 1e-30 there too */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet/tl-pet-operator.h"
#include "recon/tl-csr-operator.h"
#include "recon/tl-solver.h"
#include "tl-test-common.h"

static TlContext *ctx;

enum { M = 48, NX = 4, NY = 3, NZ = 2, N = NX * NY * NZ };

static guint32 rng_state = 0x2545f491u;
static double rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (rng_state >> 8) * 0x1p-24;
}

typedef struct {
  float A[M * N], d[M], a[M], y[M];
  double xt[N];
} Problem;

/* About 40 % of the entries set plus one strong entry per row (column i % N): well
 * conditioned, every column hit. y: counts around D A xt + a (noise > 0) or exactly that. */
static void make_problem(Problem *p, double noise, int zero_voxel) {
  for (int j = 0; j < N; j++) p->xt[j] = j == zero_voxel ? 0.0 : 0.5 + 3 * rnd();
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double v = rnd() < 0.4 ? 0.1 + rnd() : 0.0;
      if (j == i % N) v += 8.0;
      p->A[i * N + j] = (float)v;
    }
  for (int i = 0; i < M; i++) {
    double ax = 0;
    for (int j = 0; j < N; j++) ax += p->A[i * N + j] * p->xt[j];
    p->d[i] = (float)(0.5 + rnd());
    p->a[i] = (float)(2.0 + rnd());
    double mean = p->d[i] * ax + p->a[i];
    p->y[i] = noise > 0 ? (float)round(mean * (1 - noise + 2 * noise * rnd())) : (float)mean;
    /* the zero voxel's rows recorded nothing: fewer counts than the additive term alone */
    if (zero_voxel >= 0 && i % N == zero_voxel) p->y[i] = 0;
  }
}

/* The update of tl-algo-abemml.c in double on the dense matrix, subsets = equal contiguous
 * row blocks (the CSR operator's, checked against tl_operator_subset_first by the caller):
 *   t_i = d_i sum_j A_ij bound_j,  bound_j = lb where s_j > 0
 *   c_j = sum_{i in b} d_i A_ij (y_i - t_i) / (ybar_i - t_i)   over ybar_i > t_i
 *   x_j <- lb + (x_j - lb) c_j / s_bj   where s_bj > 0 (else kept) */
static void ref_abemml(const Problem *p, const guint64 *first, guint S, double lb, guint iters,
                       double *x) {
  double s[N] = {0}, t[M];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) s[j] += p->d[i] * (double)p->A[i * N + j];
  for (int i = 0; i < M; i++) {
    t[i] = 0;
    for (int j = 0; j < N; j++) t[i] += p->d[i] * (double)p->A[i * N + j] * (s[j] > 0 ? lb : 0);
  }
  for (guint it = 0; it < iters; it++)
    for (guint b = 0; b < S; b++) {
      double c[N] = {0}, sb[N] = {0};
      for (guint64 i = first[b]; i < first[b + 1]; i++) {
        double ybar = p->a[i];
        for (int j = 0; j < N; j++) ybar += p->d[i] * (double)p->A[i * N + j] * x[j];
        double r = ybar - t[i] > 0 ? (p->y[i] - t[i]) / (ybar - t[i]) : 0;
        for (int j = 0; j < N; j++) {
          c[j] += p->d[i] * (double)p->A[i * N + j] * r;
          sb[j] += p->d[i] * (double)p->A[i * N + j];
        }
      }
      for (int j = 0; j < N; j++)
        if (sb[j] > 0) x[j] = lb + (x[j] - lb) * c[j] / sb[j];
    }
}

/* sum_i y_i log(max(ybar_i, 1e-30)) - ybar_i over every row (the solver's objective). */
static double ref_loglik(const Problem *p, const double *x) {
  double l = 0;
  for (int i = 0; i < M; i++) {
    double ybar = p->a[i];
    for (int j = 0; j < N; j++) ybar += p->d[i] * (double)p->A[i * N + j] * x[j];
    l += (p->y[i] > 0 ? p->y[i] * log(MAX(ybar, 1e-30)) : 0) - ybar;
  }
  return l;
}

static TlArray *upload(const float *data, guint64 n) { return tl_test_upload(ctx, data, n); }

typedef struct {
  TlOperator *op;
  TlArray *y, *a, *d;
  TlSolver *sv;
  double last_objective;
} Run;

static void on_progress(const TlSolverProgress *pr, gpointer data) {
  ((Run *)data)->last_objective = pr->objective;
}

/* A solver of `algo` on p with S subsets, D and the additive term, start image x0 (uniform). */
static void run_new(Run *r, const Problem *p, const char *algo, guint S, double x0) {
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  r->op = tl_csr_operator_new_dense(ctx, &grid, M, p->A, S, &error);
  g_assert_no_error(error);
  r->d = upload(p->d, M);
  g_assert_true(tl_operator_set_diag(r->op, r->d, FALSE, &error));
  g_assert_no_error(error);
  r->y = upload(p->y, M);
  r->a = upload(p->a, M);
  TlProblem pb = {.op = r->op, .data = r->y, .additive = r->a};
  TlSolverOptions opt;
  tl_solver_options_init(&opt);
  opt.objective = TL_OBJECTIVE_ITERATION;
  r->sv = tl_solver_new(ctx, algo, &pb, &opt, &error);
  g_assert_no_error(error);
  tl_solver_set_callback(r->sv, on_progress, r);
  g_autoptr(TlImage) im = tl_image_new(&grid);
  for (int j = 0; j < N; j++) im->data[j] = (float)x0;
  g_assert_true(tl_solver_set_image(r->sv, im, &error));
  g_assert_no_error(error);
}

static void run_steps(Run *r, guint n) {
  GError *error = NULL;
  for (guint k = 0; k < n; k++) {
    g_assert_true(tl_solver_step(r->sv, &error));
    g_assert_no_error(error);
  }
}

static void run_image(Run *r, double *x) {
  GError *error = NULL;
  g_autoptr(TlImage) im = tl_solver_image(r->sv, &error);
  g_assert_no_error(error);
  for (int j = 0; j < N; j++) x[j] = im->data[j];
}

static void run_clear(Run *r) {
  tl_solver_free(r->sv);
  tl_array_free(r->y);
  tl_array_free(r->a);
  tl_array_free(r->d);
  tl_operator_free(r->op);
}

/* The solver's start value x0 (its default start image), which sets the bound A = -x0. */
static double default_start(const Problem *p, guint S) {
  Run r;
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  r.op = tl_csr_operator_new_dense(ctx, &grid, M, p->A, S, &error);
  r.d = upload(p->d, M);
  g_assert_true(tl_operator_set_diag(r.op, r.d, FALSE, &error));
  r.y = upload(p->y, M);
  r.a = upload(p->a, M);
  TlProblem pb = {.op = r.op, .data = r.y, .additive = r.a};
  r.sv = tl_solver_new(ctx, "ab-emml", &pb, NULL, &error);
  g_assert_no_error(error);
  double x[N];
  run_image(&r, x);
  run_clear(&r);
  /* the same value by its definition: (sum y - sum a) / sum s */
  double ys = 0, as = 0, ss = 0;
  for (int i = 0; i < M; i++) {
    ys += p->y[i], as += p->a[i];
    for (int j = 0; j < N; j++) ss += p->d[i] * (double)p->A[i * N + j];
  }
  g_assert_cmpfloat(fabs(x[0] - (ys - as) / ss), <=, 1e-5 * x[0]);
  return x[0];
}

static void test_reference(gconstpointer data) {
  guint S = GPOINTER_TO_UINT(data);
  Problem p;
  make_problem(&p, 0.3, -1);
  double lb = -default_start(&p, S);
  Run r;
  run_new(&r, &p, "ab-emml", S, 1.0);
  guint64 first[4];
  for (guint b = 0; b < S; b++) first[b] = tl_operator_subset_first(r.op, b);
  first[S] = M;
  for (guint b = 0; b < S; b++)
    g_assert_cmpuint(first[b + 1] - first[b], ==, tl_operator_subset_length(r.op, b));
  enum { ITERS = 5 };
  run_steps(&r, ITERS * S);
  double got[N], x[N], xprev[N];
  run_image(&r, got);
  for (int j = 0; j < N; j++) x[j] = xprev[j] = 1.0;
  ref_abemml(&p, first, S, lb, ITERS, x);
  if (S == 1) ref_abemml(&p, first, S, lb, ITERS - 1, xprev);
  double err = 0, big = 0;
  for (int j = 0; j < N; j++) err = MAX(err, fabs(got[j] - x[j])), big = MAX(big, fabs(x[j]));
  g_test_message("ab-emml S=%u, A=%.4g: image %.2e of %.3g", S, lb, err, big);
  g_assert_cmpfloat(err, <=, 1e-5 * big);
  if (S == 1) { /* the objective of the image the last pass started from */
    double want = ref_loglik(&p, xprev), scale = fabs(want);
    for (int i = 0; i < M; i++) scale += p.y[i];
    g_test_message("objective %.9g vs %.9g", r.last_objective, want);
    g_assert_cmpfloat(fabs(r.last_objective - want), <=, 1e-5 * scale);
  }
  run_clear(&r);
}

static void test_mlem_limit(void) {
  Problem p;
  make_problem(&p, 0, -1);
  enum { ITERS = 400 };
  double xa[N], xm[N];
  Run r;
  run_new(&r, &p, "ab-emml", 1, 1.0);
  run_steps(&r, ITERS);
  run_image(&r, xa);
  run_clear(&r);
  run_new(&r, &p, "mlem", 1, 1.0);
  run_steps(&r, ITERS);
  run_image(&r, xm);
  run_clear(&r);
  double dm = 0, dt = 0, big = 0, lo = INFINITY;
  for (int j = 0; j < N; j++) {
    dm = MAX(dm, fabs(xa[j] - xm[j]));
    dt = MAX(dt, fabs(xa[j] - p.xt[j]));
    big = MAX(big, p.xt[j]);
    lo = MIN(lo, xa[j]);
  }
  g_test_message("noiseless, %d iterations: |ab-emml - mlem| %.2e, |ab-emml - truth| %.2e of "
                 "%.3g; smallest voxel %.3g", ITERS, dm, dt, big, lo);
  g_assert_cmpfloat(dm, <=, 1e-3 * big);
  g_assert_cmpfloat(dt, <=, 1e-3 * big);
  g_assert_cmpfloat(lo, >, 0);
}

static void test_negative(void) {
  enum { ZERO = 5, ITERS = 60 };
  Problem p;
  make_problem(&p, 0, ZERO);
  double xa[N], xm[N];
  Run r;
  run_new(&r, &p, "ab-emml", 3, 1.0);
  run_steps(&r, ITERS * 3);
  run_image(&r, xa);
  run_clear(&r);
  run_new(&r, &p, "osem", 3, 1.0);
  run_steps(&r, ITERS * 3);
  run_image(&r, xm);
  run_clear(&r);
  double lo = INFINITY;
  for (int j = 0; j < N; j++)
    if (j != ZERO) lo = MIN(lo, xa[j]);
  g_test_message("voxel %d (truth 0, its rows recorded 0): ab-emml %.4g, osem %.4g; the other "
                 "voxels' smallest %.4g", ZERO, xa[ZERO], xm[ZERO], lo);
  g_assert_cmpfloat(xa[ZERO], <, 0);
  g_assert_cmpfloat(xm[ZERO], >=, 0);
  g_assert_cmpfloat(lo, >, 0);
}

/* Without data and without the operator's counts: refused with the reason, not crashed
 * (list mode is refused by the class flag TL_ALGO_NEEDS_DATA: test recon-registry). */
static void test_no_data_refused(void) {
  GError *error = NULL;
  Problem p;
  make_problem(&p, 0.3, -1);
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, M, p.A, 1, &error);
  g_assert_no_error(error);
  TlProblem pb = {.op = op};
  TlSolver *sv = tl_solver_new(ctx, "ab-emml", &pb, NULL, &error);
  g_assert_null(sv);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
}

/* mlem on a matrix whose row 0 is 0 with y_0 = 7 > 0: the objective mlem reports from its
 * pass (at the image the pass started from) against tl_solver_objective of that image. */
static void test_em_floor(void) {
  GError *error = NULL;
  Problem p;
  make_problem(&p, 0.3, -1);
  for (int j = 0; j < N; j++) p.A[j] = 0;
  p.y[0] = 7;
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, M, p.A, 1, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) y = upload(p.y, M);
  TlProblem pb = {.op = op, .data = y};
  TlSolverOptions opt;
  tl_solver_options_init(&opt);
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "mlem", &pb, &opt, &error);
  g_assert_no_error(error);
  Run r = {0};
  tl_solver_set_callback(sv, on_progress, &r);
  double before = NAN;
  g_assert_true(tl_solver_objective(sv, &before, &error));
  g_assert_no_error(error);
  g_assert_true(tl_solver_step(sv, &error));
  g_assert_no_error(error);
  g_test_message("objective of the start image: solver %.9g, mlem's pass %.9g", before,
                 r.last_objective);
  double scale = fabs(before);
  for (int i = 0; i < M; i++) scale += p.y[i];
  g_assert_cmpfloat(fabs(r.last_objective - before), <=, 1e-5 * scale);
}

/* PET list mode, one subset, no additive term: mlem takes the operator's fused EM pass. Some
 * of the random events' lines miss the small grid (ybar = 0); counted, so the test can fail. */
static void test_em_floor_pet(void) {
  GError *error = NULL;
  TlScanner *sc = fx_ring_scanner(2, 6, 3, 4.0f, 20.0f, 4.0f, 1);
  g_autoptr(TlListmode) lm = tl_listmode_new(sc, 300);
  for (guint64 e = 0; e < lm->n_events;) {
    guint a = (guint)(rnd() * sc->n_crystals) % sc->n_crystals;
    guint b = (guint)(rnd() * sc->n_crystals) % sc->n_crystals;
    if (a == b || !fx_pair_allowed(sc, a, b)) continue;
    lm->events[e++] = (TlEvent){a, b, 0};
  }
  TlImageGrid g = tl_image_grid_centred(3, 3, 2, 4.0f, 4.0f, 4.0f);
  TlPetOperatorOptions po;
  tl_pet_operator_options_init(&po);
  po.use_cache = FALSE;
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &g, &po, &error);
  g_assert_no_error(error);
  g_assert_true(tl_operator_has_em(op));
  /* events whose line misses the grid: forward of a uniform image is 0 */
  guint64 n = tl_operator_n_data(op), missing = 0;
  g_autoptr(TlArray) one = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlArray) q = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_autofree float *ones = g_new(float, fx_voxels(&g));
  for (guint64 j = 0; j < fx_voxels(&g); j++) ones[j] = 1;
  g_assert_true(tl_array_upload(one, ones, &error));
  g_assert_true(tl_operator_forward(op, st, 0, one, q, &error) && tl_stream_finish(st, &error));
  g_assert_no_error(error);
  g_autofree float *hq = fx_download(q);
  for (guint64 i = 0; i < n; i++) missing += !(hq[i] > 0);
  TlProblem pb = {.op = op};
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "mlem", &pb, NULL, &error);
  g_assert_no_error(error);
  Run r = {0};
  tl_solver_set_callback(sv, on_progress, &r);
  double before = NAN;
  g_assert_true(tl_solver_objective(sv, &before, &error));
  g_assert_true(tl_solver_step(sv, &error));
  g_assert_no_error(error);
  g_test_message("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " events on lines missing the "
                 "grid; objective of the start image: solver %.9g, the fused pass %.9g",
                 missing, n, before, r.last_objective);
  g_assert_cmpuint(missing, >, 0);
  g_assert_cmpfloat(fabs(r.last_objective - before), <=, 1e-5 * (fabs(before) + n));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/recon/abemml/reference/S1", GUINT_TO_POINTER(1), test_reference);
  g_test_add_data_func("/recon/abemml/reference/S3", GUINT_TO_POINTER(3), test_reference);
  g_test_add_func("/recon/abemml/mlem-limit", test_mlem_limit);
  g_test_add_func("/recon/abemml/negative", test_negative);
  g_test_add_func("/recon/abemml/no-data-refused", test_no_data_refused);
  g_test_add_func("/recon/abemml/em-floor", test_em_floor);
  g_test_add_func("/recon/abemml/em-floor-pet", test_em_floor_pet);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
