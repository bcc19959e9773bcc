/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PETRIC objective (compute/recon/tl-objective.c: Poisson log-likelihood with the
 * additive term, relative difference prior with gamma, epsilon and per-voxel kappa) and the
 * gradient algorithms of issue 29 (svrg, saga, pkma, lbfgsb), on an explicit 150 x 120 matrix
 * (CSR, anisotropic 6 x 5 x 4 grid of 1 x 1.5 x 2 mm) with an additive term:
 *
 * - Phi(x) and its gradient (all data and one subset) against a plain C double reference
 *   written here (RDP with kappa loop by loop) over recon-ref.c's log-likelihood;
 * - the gradient against central finite differences of that double reference, every voxel
 *   (<= 1e-4 of the largest entry);
 * - the RDP (and quadratic) Hessian diagonal against finite differences of the reference
 *   gradient, and PETRIC's kappa against its formula;
 * - each algorithm raises Phi to within 1e-4 (relative) of a reference run's value: the
 *   maximum found by the double-precision references of L-BFGS-B and PKMA (recon-ref.c),
 *   which must agree with each other;
 * - svrg and saga with a fixed seed give the same image bit for bit twice, another seed
 *   another image;
 * - bad arguments are refused with a GError. */
#include <math.h>
#include <string.h>
#include "tl-test-common.h"
#include "recon/tl-csr-operator.h"
#include "recon/tl-solver.h"
#include "recon-ref.h"

enum { NX = 6, NY = 5, NZ = 4, N = NX * NY * NZ, M = 150 };
#define GAMMA 2.0
#define EPS 0.05
#define BETA 2.0

static TlContext *ctx;
static double A[M * N], y[M], a[M], kappa[N];

static TlImageGrid grid(void) { return tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.5f, 2.0f); }

static void make_problem(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(29);
  double xt[N];
  for (guint j = 0; j < N; j++) {
    xt[j] = g_rand_double_range(r, 0.5, 3.0);
    kappa[j] = g_rand_double_range(r, 0.5, 1.5);
  }
  for (guint i = 0; i < M; i++) {
    double v = 0;
    for (guint j = 0; j < N; j++) {
      A[i * N + j] = g_rand_double(r) < 0.6 ? 0.0 : g_rand_double_range(r, 0.0, 0.2);
      A[i * N + j] = (float)A[i * N + j]; /* what the device holds */
      v += A[i * N + j] * xt[j];
    }
    a[i] = (float)g_rand_double_range(r, 0.1, 0.5);
    y[i] = floor((v + a[i]) * g_rand_double_range(r, 0.7, 1.3) + 0.5);
  }
}

/* ---- plain C reference of the RDP with kappa (STIR's form), double ---- */

typedef struct {
  double kind; /* 1 rdp, 0 quadratic */
} RefPrior;

#define FOR_PAIRS(J, ...)                                                                      \
  do {                                                                                         \
    int jx = (J) % NX, jy = (J) / NX % NY, jz = (J) / (NX * NY);                               \
    const double vox[3] = {1.0, 1.5, 2.0};                                                     \
    for (int dz = -1; dz <= 1; dz++)                                                           \
      for (int dy = -1; dy <= 1; dy++)                                                         \
        for (int dx = -1; dx <= 1; dx++) {                                                     \
          int kx = jx + dx, ky = jy + dy, kz = jz + dz;                                        \
          if ((!dx && !dy && !dz) || kx < 0 || ky < 0 || kz < 0 || kx >= NX || ky >= NY ||     \
              kz >= NZ)                                                                        \
            continue;                                                                          \
          double ex = dx * vox[0], ey = dy * vox[1], ez = dz * vox[2];                         \
          int k = (kz * NY + ky) * NX + kx;                                                    \
          double w = 1.0 / sqrt(ex * ex + ey * ey + ez * ez) * kappa[J] * kappa[k];            \
          __VA_ARGS__;                                                                         \
        }                                                                                      \
  } while (0)

static gboolean ref_quadratic;

static double ref_value(const double *x, void *user) {
  double R = 0;
  for (int j = 0; j < N; j++)
    FOR_PAIRS(j, {
      double d = x[j] - x[k];
      R += ref_quadratic ? 0.25 * w * d * d
                         : 0.5 * w * d * d / (x[j] + x[k] + GAMMA * fabs(d) + EPS);
    });
  return R;
}

static void ref_grad(const double *x, double *g, void *user) {
  for (int j = 0; j < N; j++) {
    double s = 0;
    FOR_PAIRS(j, {
      double d = x[j] - x[k], D = x[j] + x[k] + GAMMA * fabs(d) + EPS;
      s += ref_quadratic ? w * d : w * d * (x[j] + 3 * x[k] + GAMMA * fabs(d) + 2 * EPS) / (D * D);
    });
    g[j] = s;
  }
}

static void ref_hess(const double *x, double *h, void *user) {
  for (int j = 0; j < N; j++) {
    double s = 0;
    FOR_PAIRS(j, {
      double D = x[j] + x[k] + GAMMA * fabs(x[j] - x[k]) + EPS, t = 2 * x[k] + EPS;
      s += ref_quadratic ? w : w * 2 * t * t / (D * D * D);
    });
    h[j] = s;
  }
}

static const ReconRefPrior rdp_prior = {
    .beta = BETA, .grad = ref_grad, .hess = ref_hess, .value = ref_value};

static ReconRefProblem ref_problem(guint S, guint64 *first) {
  recon_ref_equal_blocks(M, S, first);
  return (ReconRefProblem){.m = M, .n = N, .A = A, .S = S, .first = first, .a = a, .y = y};
}

/* ---- device side ---- */

typedef struct {
  TlOperator *op;
  TlArray *data, *add;
  TlSolver *sv;
} Dev;

static Dev dev_new(const char *algo, guint S, guint32 seed, guint iterations, gboolean quadratic) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autofree float *Af = g_new(float, M * N);
  float yf[M], af[M];
  for (guint i = 0; i < M * N; i++) Af[i] = (float)A[i];
  for (guint i = 0; i < M; i++) yf[i] = (float)y[i], af[i] = (float)a[i];
  Dev d = {0};
  d.op = tl_csr_operator_new_dense(ctx, &g, M, Af, S, &error);
  g_assert_no_error(error);
  d.data = tl_array_new_float(ctx, M, &error);
  d.add = tl_array_new_float(ctx, M, &error);
  g_assert_true(tl_array_upload(d.data, yf, &error) && tl_array_upload(d.add, af, &error));
  TlSolverOptions o;
  tl_solver_options_init(&o);
  o.iterations = iterations;
  o.objective = TL_OBJECTIVE_NEVER;
  o.prior = quadratic ? "quadratic" : "rdp";
  o.beta = BETA;
  o.beta_absolute = TRUE; /* STIR's penalisation factor, as the reference uses it */
  o.prior_params.gamma = GAMMA;
  o.prior_params.epsilon = EPS;
  o.seed = seed;
  TlProblem pb = {.op = d.op, .data = d.data, .additive = d.add};
  d.sv = tl_solver_new(ctx, algo, &pb, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) k = tl_image_new(&g);
  for (guint j = 0; j < N; j++) k->data[j] = (float)kappa[j];
  g_assert_true(tl_solver_set_kappa(d.sv, k, &error));
  g_assert_no_error(error);
  return d;
}

static void dev_free(Dev *d) {
  tl_solver_free(d->sv);
  tl_array_free(d->data);
  tl_array_free(d->add);
  tl_operator_free(d->op);
}

static TlArray *upload_d(const double *x) {
  GError *error = NULL;
  float f[N];
  for (guint j = 0; j < N; j++) f[j] = (float)x[j];
  TlArray *arr = tl_array_new_float(ctx, N, &error);
  g_assert_true(tl_array_upload(arr, f, &error));
  return arr;
}

static void download_d(const TlArray *arr, double *x) {
  GError *error = NULL;
  float f[N];
  g_assert_true(tl_array_download(arr, f, &error));
  for (guint j = 0; j < N; j++) x[j] = f[j];
}

/* A random image in [lo, hi], rounded to float (what the device sees). */
static void random_x(guint32 seed, double lo, double hi, double *x) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  for (guint j = 0; j < N; j++) x[j] = (float)g_rand_double_range(r, lo, hi);
}

static double max_abs(const double *v) {
  double m = 0;
  for (guint j = 0; j < N; j++) m = fmax(m, fabs(v[j]));
  return m;
}

static double max_diff(const double *u, const double *v) {
  double m = 0;
  for (guint j = 0; j < N; j++) m = fmax(m, fabs(u[j] - v[j]));
  return m;
}

/* Phi and its gradient on the device against the C reference and against central finite
 * differences of the reference value. */
static void test_objective(void) {
  GError *error = NULL;
  guint64 first[4];
  ReconRefProblem p = ref_problem(3, first);
  ref_quadratic = FALSE;
  Dev d = dev_new("svrg", 3, 1, 1, FALSE);
  double x[N], gref[N], gdev[N], gfd[N];
  random_x(3, 0.2, 3.0, x);
  g_autoptr(TlArray) xa = upload_d(x);
  g_autoptr(TlArray) ga = upload_d(x);
  double phi, lik, R;
  g_assert_true(tl_solver_objective_at(d.sv, xa, &phi, &lik, &R, &error));
  g_assert_no_error(error);
  double phi_ref = recon_ref_objective(&p, &rdp_prior, x), R_ref = ref_value(x, NULL);
  g_test_message("Phi %.9g (reference %.9g), R %.9g (%.9g)", phi, phi_ref, R, R_ref);
  g_assert_cmpfloat(fabs(phi - phi_ref), <=, 1e-5 * fabs(phi_ref));
  g_assert_cmpfloat(fabs(R - R_ref), <=, 1e-5 * fabs(R_ref));
  g_assert_cmpfloat(fabs(lik - BETA * R - phi), <=, 1e-9 * fabs(phi));

  for (int b = -1; b < 3; b++) {
    g_assert_true(tl_solver_objective_gradient(d.sv, b < 0 ? G_MAXUINT : (guint)b, xa, ga, &error));
    g_assert_true(tl_stream_finish(tl_solver_stream(d.sv), &error));
    g_assert_no_error(error);
    download_d(ga, gdev);
    recon_ref_objective_gradient(&p, &rdp_prior, b, x, gref);
    double e = max_diff(gdev, gref) / max_abs(gref);
    g_test_message("gradient (subset %d) against the C reference: %.3g relative", b, e);
    g_assert_cmpfloat(e, <=, 1e-5);
  }
  /* all data again for the finite differences */
  g_assert_true(tl_solver_objective_gradient(d.sv, G_MAXUINT, xa, ga, &error));
  g_assert_true(tl_stream_finish(tl_solver_stream(d.sv), &error));
  download_d(ga, gdev);
  for (guint j = 0; j < N; j++) {
    double xp[N], xm[N], h = 1e-5 * fmax(x[j], 1e-3);
    memcpy(xp, x, sizeof xp);
    memcpy(xm, x, sizeof xm);
    xp[j] += h;
    xm[j] -= h;
    gfd[j] = (recon_ref_objective(&p, &rdp_prior, xp) - recon_ref_objective(&p, &rdp_prior, xm)) /
             (2 * h);
  }
  double e = max_diff(gdev, gfd) / max_abs(gfd);
  g_test_message("device gradient against central differences of Phi: %.3g relative", e);
  g_assert_cmpfloat(e, <=, 1e-4);
  dev_free(&d);
}

/* The Hessian diagonal of the RDP (with kappa) and of the quadratic prior against finite
 * differences of the reference gradient and against the reference's closed form. */
static void test_hessian(gconstpointer quadratic) {
  GError *error = NULL;
  ref_quadratic = GPOINTER_TO_INT(quadratic);
  Dev d = dev_new("svrg", 1, 1, 1, ref_quadratic);
  TlPrior *pr = tl_solver_prior(d.sv);
  g_assert_nonnull(pr);
  g_assert_nonnull(tl_prior_kappa(pr));
  double x[N], hdev[N], href[N], hfd[N];
  random_x(5, 0.1, 2.0, x);
  g_autoptr(TlArray) xa = upload_d(x);
  g_autoptr(TlArray) ha = upload_d(x);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_prior_hessian_diag(pr, s, xa, ha, &error) && tl_stream_finish(s, &error));
  g_assert_no_error(error);
  download_d(ha, hdev);
  ref_hess(x, href, NULL);
  for (guint j = 0; j < N; j++) {
    double xp[N], xm[N], gp[N], gm[N], h = 1e-6 * fmax(x[j], 1e-2);
    memcpy(xp, x, sizeof xp);
    memcpy(xm, x, sizeof xm);
    xp[j] += h;
    xm[j] -= h;
    ref_grad(xp, gp, NULL);
    ref_grad(xm, gm, NULL);
    hfd[j] = (gp[j] - gm[j]) / (2 * h);
  }
  double e_fd = max_diff(hdev, hfd) / max_abs(hfd), e_ref = max_diff(hdev, href) / max_abs(href);
  g_test_message("%s Hessian diagonal: %.3g against finite differences, %.3g against the "
                 "closed form", ref_quadratic ? "quadratic" : "rdp", e_fd, e_ref);
  g_assert_cmpfloat(e_fd, <=, 1e-4);
  g_assert_cmpfloat(e_ref, <=, 1e-5);
  /* tv offers none */
  TlImageGrid g = grid();
  g_autoptr(TlPrior) tv2 = tl_prior_new(ctx, "tv", &g, NULL, &error);
  g_assert_no_error(error);
  g_assert_false(tl_prior_hessian_diag(tv2, s, xa, ha, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_prior_set_kappa(tv2, xa, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  dev_free(&d);
}

/* kappa = sqrt(M^T (y (M 1) / ybar^2)) at an image. */
static void test_kappa(void) {
  GError *error = NULL;
  Dev d = dev_new("svrg", 3, 1, 1, FALSE);
  double x[N], ref[N] = {0};
  random_x(9, 0.5, 2.0, x);
  TlImageGrid g = grid();
  g_autoptr(TlImage) im = tl_image_new(&g);
  for (guint j = 0; j < N; j++) im->data[j] = (float)x[j];
  g_autoptr(TlImage) k = tl_solver_compute_kappa(d.sv, im, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < M; i++) {
    double yb = a[i], m1 = 0;
    for (guint j = 0; j < N; j++) yb += A[i * N + j] * x[j], m1 += A[i * N + j];
    for (guint j = 0; j < N; j++) ref[j] += A[i * N + j] * y[i] * m1 / (yb * yb);
  }
  double e = 0, mx = 0;
  for (guint j = 0; j < N; j++) {
    e = fmax(e, fabs(k->data[j] - sqrt(ref[j])));
    mx = fmax(mx, sqrt(ref[j]));
  }
  g_test_message("kappa against its formula: %.3g relative", e / mx);
  g_assert_cmpfloat(e / mx, <=, 1e-5);
  /* a negative kappa is refused */
  im->data[4] = -1;
  g_assert_false(tl_solver_set_kappa(d.sv, im, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_assert_false(tl_solver_data_gradient(d.sv, 7, tl_solver_image_array(d.sv),
                                         (TlArray *)tl_solver_image_array(d.sv), &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  dev_free(&d);
}

static double phi_star, phi_start;

/* The reference run: the maximum of Phi from the double references of L-BFGS-B (S = 1) and
 * PKMA (S = 1, constant-ish step), which must agree. */
static void reference_run(void) {
  guint64 first[2];
  ReconRefProblem p = ref_problem(1, first);
  ref_quadratic = FALSE;
  double x1[N], x2[N];
  for (guint j = 0; j < N; j++) x1[j] = x2[j] = 1.0;
  phi_start = recon_ref_objective(&p, &rdp_prior, x1);
  recon_ref_lbfgsb(&p, &rdp_prior, 400, x1);
  recon_ref_pkma(&p, &rdp_prior, 1.0, 3000, x2);
  double f1 = recon_ref_objective(&p, &rdp_prior, x1), f2 = recon_ref_objective(&p, &rdp_prior, x2);
  g_test_message("reference run: Phi %.12g (lbfgsb, 400 iterations), %.12g (pkma, 3000), "
                 "start %.6g", f1, f2, phi_start);
  g_assert_cmpfloat(fabs(f1 - f2), <=, 1e-7 * fabs(f1));
  phi_star = fmax(f1, f2);
}

typedef struct {
  const char *algo;
  guint subsets, iterations;
} Conv;

static void test_converge(gconstpointer data) {
  const Conv *c = data;
  GError *error = NULL;
  if (isnan(phi_star) || phi_star == 0) reference_run();
  Dev d = dev_new(c->algo, c->subsets, 1, c->iterations, FALSE);
  TlImageGrid g = grid();
  g_autoptr(TlImage) x0 = tl_image_new(&g);
  for (guint j = 0; j < N; j++) x0->data[j] = 1.0f;
  g_assert_true(tl_solver_set_image(d.sv, x0, &error));
  g_assert_true(tl_solver_run(d.sv, &error));
  g_assert_no_error(error);
  double phi;
  g_assert_true(tl_solver_objective(d.sv, &phi, &error));
  g_assert_no_error(error);
  double rel = (phi_star - phi) / fabs(phi_star), gap = (phi_star - phi) / (phi_star - phi_start);
  g_test_message("%s, %u subsets, %u iterations: Phi %.9g against %.9g: %.3g relative, %.3g of "
                 "the start's gap", c->algo, c->subsets, c->iterations, phi, phi_star, rel, gap);
  g_assert_cmpfloat(rel, <=, 1e-4);
  g_assert_cmpfloat(rel, >=, -1e-5); /* no float image beats the double maximum by much */
  dev_free(&d);
}

/* Same seed, same bits; another seed, another order and image. */
static void test_deterministic(gconstpointer algo) {
  GError *error = NULL;
  float im[3][N];
  const guint32 seeds[3] = {7, 7, 8};
  for (int r = 0; r < 3; r++) {
    Dev d = dev_new(algo, 5, seeds[r], 3, FALSE);
    g_assert_true(tl_solver_run(d.sv, &error));
    g_assert_no_error(error);
    g_assert_true(tl_array_download(tl_solver_image_array(d.sv), im[r], &error));
    dev_free(&d);
  }
  g_assert_cmpmem(im[0], sizeof im[0], im[1], sizeof im[1]);
  g_assert_true(memcmp(im[0], im[2], sizeof im[0]) != 0);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  make_problem();
  phi_star = NAN;
  g_test_add_func("/recon/petric/objective", test_objective);
  g_test_add_data_func("/recon/petric/hessian/rdp", GINT_TO_POINTER(0), test_hessian);
  g_test_add_data_func("/recon/petric/hessian/quadratic", GINT_TO_POINTER(1), test_hessian);
  g_test_add_func("/recon/petric/kappa", test_kappa);
  static const Conv conv[] = {
      {"svrg", 5, 60}, {"saga", 5, 60}, {"pkma", 5, 200}, {"lbfgsb", 1, 80}};
  for (guint i = 0; i < G_N_ELEMENTS(conv); i++) {
    g_autofree char *path = g_strdup_printf("/recon/petric/converge/csr/%s", conv[i].algo);
    g_test_add_data_func(path, &conv[i], test_converge);
  }
  g_test_add_data_func("/recon/petric/deterministic/svrg", "svrg", test_deterministic);
  g_test_add_data_func("/recon/petric/deterministic/saga", "saga", test_deterministic);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
