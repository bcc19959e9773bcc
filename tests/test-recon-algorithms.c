/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Every algorithm of the reconstruction core (tl-solver.h) on the CSR operator with a small
 * explicit matrix, against the double-precision references of tests/recon-ref.c: the device
 * image after 5 iterations (5 S sub-iterations) must match within 1e-5 relative (max abs
 * difference / max abs value), and the objective the solver reports within 1e-5 of the
 * data's scale (emission: |L| + sum y; least squares: 1/2 |y|^2).
 *
 * Cases: mlem, sirt, cgls with 1 subset; osem, os-sart, osl, bsrem with 1 and 3 subsets;
 * emission algorithms with and without D and the additive term, least squares with and
 * without D. Start images are set explicitly (emission 1, least squares 0), so the solver's
 * default start image is not part of the comparison. The prior of osl / bsrem is the
 * quadratic one of tl-prior.h, its reference recon_ref_quadratic_grad. */
#include <math.h>
#include <string.h>
#include "recon-ref.h"
#include "recon/tl-csr-operator.h"
#include "recon/tl-solver.h"
#include "tl-test-common.h"

static TlContext *ctx;

enum { M = 40, NX = 5, NY = 3, NZ = 2, N = NX * NY * NZ, ITERATIONS = 5 };
#define BETA 0.05

static guint32 rng_state = 0x51ed270bu;
static double rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (rng_state >> 8) * 0x1p-24;
}

typedef struct {
  float A[M * N];           /* what the device gets */
  double Ad[M * N];         /* the same values in double, for the reference */
  float d[M], a[M], y_em[M], y_ls[M];
  double dd[M], ad[M], yd_em[M], yd_ls[M];
} Fixture;

static Fixture fx;

/* About 40% of the entries set, every column and row hit at least once (s_j > 0 everywhere:
 * the formulas' s = 0 branches are not what the comparison is about). Float emulations of
 * every algorithm on this fixture stay within 1.4e-6 of the references. */
static void fixture_init(void) {
  double xt[N];
  for (int j = 0; j < N; j++) xt[j] = 0.5 + 3 * rnd();
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      gboolean on = rnd() < 0.4 || j == i % N || i == j % M;
      fx.A[i * N + j] = on ? (float)(0.1 + rnd()) : 0.0f;
      /* one strong entry per row: well conditioned, so float CGLS after 5 steps stays near
       * the double reference (a float emulation of the device's CGLS: 1.4e-6; without the
       * boost 4e-5) */
      if (j == i % N) fx.A[i * N + j] += 8.0f;
      fx.Ad[i * N + j] = fx.A[i * N + j];
    }
  for (int i = 0; i < M; i++) {
    double ax = 0;
    for (int j = 0; j < N; j++) ax += fx.Ad[i * N + j] * xt[j];
    fx.d[i] = (float)(0.5 + rnd());
    fx.a[i] = (float)(0.3 * rnd());
    /* counts around the noiseless mean, and noisy line integrals */
    fx.y_em[i] = (float)round(fx.d[i] * ax * (0.8 + 0.4 * rnd()) + fx.a[i]);
    fx.y_ls[i] = (float)(ax + 0.2 * (rnd() - 0.5));
    fx.dd[i] = fx.d[i], fx.ad[i] = fx.a[i], fx.yd_em[i] = fx.y_em[i], fx.yd_ls[i] = fx.y_ls[i];
  }
}

typedef struct {
  const char *algo;
  guint S;
  gboolean with_d, with_a;
  guint start; /* start subset (STIR's): osem only */
} Case;

static gboolean is_emission(const char *algo) {
  return !strcmp(algo, "mlem") || !strcmp(algo, "osem") || !strcmp(algo, "osl") ||
         !strcmp(algo, "bsrem");
}

static TlArray *upload(const float *data, guint64 n) { return tl_test_upload(ctx, data, n); }

static void run_case(gconstpointer data) {
  const Case *c = data;
  GError *error = NULL;
  gboolean em = is_emission(c->algo);
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, M, fx.A, c->S, &error);
  g_assert_no_error(error);
  if (c->with_d) {
    g_autoptr(TlArray) dd = upload(fx.d, M);
    g_assert_true(tl_operator_set_diag(op, dd, FALSE, &error));
    g_assert_no_error(error);
  }
  g_autoptr(TlArray) y = upload(em ? fx.y_em : fx.y_ls, M);
  g_autoptr(TlArray) add = c->with_a ? upload(fx.a, M) : NULL;
  TlProblem problem = {.op = op, .data = y, .additive = add};

  TlSolverOptions opt;
  tl_solver_options_init(&opt);
  opt.iterations = ITERATIONS;
  opt.objective = TL_OBJECTIVE_NEVER;
  opt.start_subset = c->start;
  double lambda = 1.0, beta = 0;
  gboolean nonneg = FALSE;
  if (!strcmp(c->algo, "sirt") || !strcmp(c->algo, "os-sart")) {
    opt.relaxation = 0.9f, lambda = 0.9f;
    /* os-sart also exercises the clamp */
    opt.nonnegative = nonneg = !strcmp(c->algo, "os-sart");
  } else if (!strcmp(c->algo, "bsrem")) {
    opt.relaxation = 0.8f, lambda = 0.8f;
  }
  if (!strcmp(c->algo, "osl") || !strcmp(c->algo, "bsrem")) {
    opt.prior = "quadratic";
    opt.beta = beta = BETA;
    opt.beta_absolute = TRUE; /* the references take beta as it is */
  }
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, c->algo, &problem, &opt, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) x0 = tl_image_new(&grid);
  for (int j = 0; j < N; j++) x0->data[j] = em ? 1.0f : 0.0f;
  g_assert_true(tl_solver_set_image(sv, x0, &error));
  g_assert_no_error(error);
  for (guint k = 0; k < ITERATIONS * c->S; k++) {
    g_assert_true(tl_solver_step(sv, &error));
    g_assert_no_error(error);
  }
  g_autoptr(TlImage) got = tl_solver_image(sv, &error);
  g_assert_no_error(error);
  double objective = NAN;
  g_assert_true(tl_solver_objective(sv, &objective, &error));
  g_assert_no_error(error);

  guint64 first[4];
  for (guint b = 0; b <= c->S; b++)
    first[b] = b < c->S ? tl_operator_subset_first(op, b) : tl_operator_n_data(op);
  /* the operator's blocks are the reference's equal blocks (tl-csr-operator.h) */
  guint64 want_first[4];
  recon_ref_equal_blocks(M, c->S, want_first);
  g_assert_cmpmem(first, sizeof(guint64) * (c->S + 1), want_first, sizeof(guint64) * (c->S + 1));
  ReconRefProblem p = {.m = M, .n = N, .A = fx.Ad, .S = c->S, .first = first,
                       .d = c->with_d ? fx.dd : NULL, .a = c->with_a ? fx.ad : NULL,
                       .y = em ? fx.yd_em : fx.yd_ls};
  ReconRefGrid rg = {.dims = {NX, NY, NZ}, .voxel = {1, 1, 2}};
  double x[N];
  for (int j = 0; j < N; j++) x[j] = em ? 1.0 : 0.0;
  if (!strcmp(c->algo, "mlem") || !strcmp(c->algo, "osem"))
    recon_ref_osem_from(&p, ITERATIONS, c->start, x);
  else if (!strcmp(c->algo, "sirt") || !strcmp(c->algo, "os-sart"))
    recon_ref_sart(&p, lambda, nonneg, ITERATIONS, x);
  else if (!strcmp(c->algo, "cgls"))
    recon_ref_cgls(&p, FALSE, ITERATIONS, x);
  else if (!strcmp(c->algo, "osl"))
    recon_ref_osl(&p, beta, recon_ref_quadratic_grad, &rg, ITERATIONS, x);
  else
    recon_ref_bsrem(&p, lambda, beta, recon_ref_quadratic_grad, &rg, RECON_REF_BSREM_FLOOR,
                    RECON_REF_BSREM_UPPER, ITERATIONS, x);

  double err = 0, big = 0;
  for (int j = 0; j < N; j++) {
    err = MAX(err, fabs(got->data[j] - x[j]));
    big = MAX(big, fabs(x[j]));
  }
  double want_obj = em ? recon_ref_loglik(&p, x) - beta * recon_ref_quadratic_value(&rg, x)
                       : recon_ref_lsq(&p, x);
  /* the objective's float error scales with the data, not with the objective (least
   * squares near its minimum is a small difference of large numbers) */
  double scale = em ? fabs(want_obj) : 0;
  for (int i = 0; i < M; i++) scale += em ? p.y[i] : 0.5 * p.y[i] * p.y[i];
  double obj_rel = fabs(objective - want_obj) / scale;
  g_test_message("%s S=%u D=%d a=%d: image %.2e of %.3g (relative %.2e); objective %.9g vs "
                 "%.9g (error / data scale %.2e)", c->algo, c->S, c->with_d, c->with_a, err, big,
                 err / big, objective, want_obj, obj_rel);
  g_assert_cmpfloat(big, >, 0);
  g_assert_cmpfloat(err, <=, 1e-5 * big);
  g_assert_cmpfloat(obj_rel, <=, 1e-5);
}

static void test_start_refused(void) {
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 2.0f);
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, M, fx.A, 3, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) y = upload(fx.y_em, M);
  TlProblem problem = {.op = op, .data = y};
  TlSolverOptions opt;
  tl_solver_options_init(&opt);
  opt.start_subset = 3;
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "osem", &problem, &opt, &error);
  g_assert_null(sv);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "start subset 3; expected 0 to 2"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  fixture_init();
  static const char *const algos[] = {"mlem", "osem", "sirt", "os-sart", "cgls", "osl", "bsrem"};
  GPtrArray *cases = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < G_N_ELEMENTS(algos); k++) {
    const char *al = algos[k];
    gboolean subsets = !strcmp(al, "osem") || !strcmp(al, "os-sart") || !strcmp(al, "osl") ||
                       !strcmp(al, "bsrem");
    for (guint S = 1; S <= (subsets ? 3u : 1u); S += 2)
      for (int v = 0; v < (is_emission(al) ? 3 : 2); v++) {
        /* v: 0 plain, 1 with D, 2 with D and the additive term (emission only) */
        Case *c = g_new(Case, 1);
        *c = (Case){.algo = al, .S = S, .with_d = v >= 1, .with_a = v == 2};
        g_autofree char *path = g_strdup_printf("/recon/algorithms/%s/S%u%s", al, S,
                                                v == 0 ? "" : v == 1 ? "/D" : "/D+a");
        g_test_add_data_func(path, c, run_case);
        g_ptr_array_add(cases, c);
      }
  }
  /* STIR's start subset: the order 2, 0, 1 against the reference's; then 3 is refused */
  for (guint start = 1; start <= 2; start++) {
    Case *c = g_new(Case, 1);
    *c = (Case){.algo = "osem", .S = 3, .with_d = TRUE, .with_a = TRUE, .start = start};
    g_autofree char *path = g_strdup_printf("/recon/algorithms/osem/S3/D+a/start%u", start);
    g_test_add_data_func(path, c, run_case);
    g_ptr_array_add(cases, c);
  }
  g_test_add_func("/recon/algorithms/start-subset-refused", test_start_refused);
  int rc = g_test_run();
  g_ptr_array_unref(cases);
  tl_test_context_done(ctx);
  return rc;
}
