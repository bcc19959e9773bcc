/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The references of recon-ref.c against properties that define them, so a device algorithm
 * compared with them is compared with the right thing: hand-computed first steps, MLEM's
 * monotone likelihood, CGLS reaching the least-squares solution in n steps, SIRT converging on
 * consistent data, OSL (beta 0) = OSEM, BSREM (beta 0, alpha 1, one subset) = MLEM, the
 * quadratic prior's gradient against finite differences of its value. No device. */
#include <math.h>
#include <string.h>
#include "recon-ref.h"

static guint32 rng_state = 0x1234567u;
static double rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (rng_state >> 8) * 0x1p-24;
}

static double max_diff(const double *a, const double *b, guint64 n) {
  double e = 0;
  for (guint64 i = 0; i < n; i++) e = MAX(e, fabs(a[i] - b[i]));
  return e;
}

/* A = [[1, 2], [3, 1]], y = (4, 5), x0 = 1: ybar = (3, 4), s = (4, 3),
 * MLEM: x = (1/4 (4/3 + 15/4), 1/3 (8/3 + 5/4)) = (61/48, 47/36). */
static void test_mlem_by_hand(void) {
  double A[] = {1, 2, 3, 1}, y[] = {4, 5}, x[] = {1, 1};
  guint64 first[] = {0, 2};
  ReconRefProblem p = {.m = 2, .n = 2, .A = A, .S = 1, .first = first, .y = y};
  recon_ref_osem(&p, 1, x);
  g_assert_cmpfloat_with_epsilon(x[0], 61.0 / 48, 1e-14);
  g_assert_cmpfloat_with_epsilon(x[1], 47.0 / 36, 1e-14);
  /* with D = (2, 1) and a = (1, 0): M = [[2, 4], [3, 1]], ybar = (7, 4), s = (5, 5),
   * x = (1/5 (2 4/7 + 3 5/4), 1/5 (4 4/7 + 5/4)) */
  double d[] = {2, 1}, a[] = {1, 0}, x2[] = {1, 1};
  p.d = d, p.a = a;
  recon_ref_osem(&p, 1, x2);
  g_assert_cmpfloat_with_epsilon(x2[0], (8.0 / 7 + 15.0 / 4) / 5, 1e-14);
  g_assert_cmpfloat_with_epsilon(x2[1], (16.0 / 7 + 5.0 / 4) / 5, 1e-14);
  /* OS-SART, subsets {row 0}, {row 1}, lambda 1/2, x0 = 0:
   * b = 0: r = 1/3, c = (1, 1/2): x = 1/2 (1 4/3, 1/2 2 4/3) = (2/3, 2/3)
   * b = 1: A x = 8/3, r = 1/4, c = (1/3, 1): x += 1/2 ((1/3) 3 (5 - 8/3)/4, 1 (5 - 8/3)/4) */
  double x3[] = {0, 0};
  guint64 f2[] = {0, 1, 2};
  ReconRefProblem q = {.m = 2, .n = 2, .A = A, .S = 2, .first = f2, .y = y};
  recon_ref_sart(&q, 0.5, FALSE, 1, x3);
  double e = (5 - 8.0 / 3) / 4;
  g_assert_cmpfloat_with_epsilon(x3[0], 2.0 / 3 + 0.5 * e, 1e-14);
  g_assert_cmpfloat_with_epsilon(x3[1], 2.0 / 3 + 0.5 * e, 1e-14);
}

typedef struct {
  guint64 m, n;
  double *A, *y, *d, *a, *xt;
  guint64 first[4];
} Case;

static Case make_case(guint64 m, guint64 n, guint S, gboolean with_d_a) {
  Case c = {.m = m, .n = n, .A = g_new(double, m * n), .y = g_new0(double, m),
            .xt = g_new(double, n)};
  for (guint64 k = 0; k < m * n; k++) c.A[k] = rnd() < 0.4 ? 0.1 + rnd() : 0;
  for (guint64 j = 0; j < n; j++) c.xt[j] = 0.5 + 2 * rnd();
  if (with_d_a) {
    c.d = g_new(double, m), c.a = g_new(double, m);
    for (guint64 i = 0; i < m; i++) c.d[i] = 0.5 + rnd(), c.a[i] = 0.2 * rnd();
  }
  for (guint64 i = 0; i < m; i++) {
    for (guint64 j = 0; j < n; j++) c.y[i] += (c.d ? c.d[i] : 1) * c.A[i * n + j] * c.xt[j];
    if (c.a) c.y[i] += c.a[i];
  }
  recon_ref_equal_blocks(m, S, c.first);
  return c;
}

static void case_free(Case *c) {
  g_free(c->A), g_free(c->y), g_free(c->d), g_free(c->a), g_free(c->xt);
}

static ReconRefProblem problem(const Case *c, guint S) {
  return (ReconRefProblem){.m = c->m, .n = c->n, .A = c->A, .S = S, .first = c->first,
                           .d = c->d, .a = c->a, .y = c->y};
}

/* MLEM: the log-likelihood never decreases (noisy data: y perturbed). */
static void test_mlem_monotone(void) {
  Case c = make_case(40, 30, 1, TRUE);
  for (guint64 i = 0; i < c.m; i++) c.y[i] = round(3 * c.y[i] * (0.7 + 0.6 * rnd()));
  ReconRefProblem p = problem(&c, 1);
  double x[30];
  recon_ref_emission_start(&p, x);
  /* the start image's expected total is the data total */
  double ty = 0, tb = 0;
  for (guint64 i = 0; i < c.m; i++) {
    ty += c.y[i], tb += c.a[i];
    for (guint64 j = 0; j < c.n; j++) tb += c.d[i] * c.A[i * c.n + j] * x[j];
  }
  g_assert_cmpfloat(fabs(tb - ty), <=, 1e-9 * ty);
  double L = recon_ref_loglik(&p, x);
  for (int it = 0; it < 50; it++) {
    recon_ref_osem(&p, 1, x);
    double L2 = recon_ref_loglik(&p, x);
    g_assert_cmpfloat(L2, >=, L - 1e-9 * fabs(L));
    L = L2;
  }
  case_free(&c);
}

/* Gaussian elimination with partial pivoting on the normal equations (n small). */
static void least_squares(const double *A, const double *y, guint64 m, guint64 n, double *x) {
  g_autofree double *N = g_new0(double, n * (n + 1));
  for (guint64 r = 0; r < n; r++) {
    for (guint64 c = 0; c < n; c++)
      for (guint64 i = 0; i < m; i++) N[r * (n + 1) + c] += A[i * n + r] * A[i * n + c];
    for (guint64 i = 0; i < m; i++) N[r * (n + 1) + n] += A[i * n + r] * y[i];
  }
  for (guint64 k = 0; k < n; k++) {
    guint64 piv = k;
    for (guint64 r = k + 1; r < n; r++)
      if (fabs(N[r * (n + 1) + k]) > fabs(N[piv * (n + 1) + k])) piv = r;
    for (guint64 c = 0; c <= n; c++) {
      double t = N[k * (n + 1) + c];
      N[k * (n + 1) + c] = N[piv * (n + 1) + c], N[piv * (n + 1) + c] = t;
    }
    for (guint64 r = k + 1; r < n; r++) {
      double f = N[r * (n + 1) + k] / N[k * (n + 1) + k];
      for (guint64 c = k; c <= n; c++) N[r * (n + 1) + c] -= f * N[k * (n + 1) + c];
    }
  }
  for (guint64 k = n; k-- > 0;) {
    double v = N[k * (n + 1) + n];
    for (guint64 c = k + 1; c < n; c++) v -= N[k * (n + 1) + c] * x[c];
    x[k] = v / N[k * (n + 1) + k];
  }
}

/* CGLS: n iterations on a full-rank m x n problem give the least-squares solution; the
 * residual never grows on the way. D and a enter as M = D A, y - a. */
static void test_cgls(void) {
  Case c = make_case(14, 6, 1, TRUE);
  for (guint64 i = 0; i < c.m; i++) c.y[i] += rnd() - 0.5; /* inconsistent */
  ReconRefProblem p = problem(&c, 1);
  g_autofree double *M = g_new(double, c.m * c.n), *b = g_new(double, c.m);
  for (guint64 i = 0; i < c.m; i++) {
    for (guint64 j = 0; j < c.n; j++) M[i * c.n + j] = c.d[i] * c.A[i * c.n + j];
    b[i] = c.y[i] - c.a[i];
  }
  double want[6], x[6] = {0};
  least_squares(M, b, c.m, c.n, want);
  double f = recon_ref_lsq(&p, x);
  for (int it = 0; it < 6; it++) {
    recon_ref_cgls(&p, FALSE, 1, x); /* restarts each call: steepest descent, still monotone */
    double f2 = recon_ref_lsq(&p, x);
    g_assert_cmpfloat(f2, <=, f * (1 + 1e-12));
    f = f2;
  }
  memset(x, 0, sizeof x);
  recon_ref_cgls(&p, FALSE, 6, x);
  g_test_message("CGLS 6 steps vs normal equations: %.2e", max_diff(x, want, 6));
  g_assert_cmpfloat(max_diff(x, want, 6), <=, 1e-8);
  case_free(&c);
}

/* SIRT and OS-SART on consistent data converge to the true image (full column rank). */
static void test_sirt_converges(void) {
  Case c = make_case(40, 12, 3, FALSE);
  for (guint S = 1; S <= 3; S += 2) {
    ReconRefProblem p = problem(&c, S);
    recon_ref_equal_blocks(c.m, S, c.first);
    double x[12] = {0};
    recon_ref_sart(&p, 1.0, TRUE, 3000, x);
    g_test_message("S = %u: max error %.2e", S, max_diff(x, c.xt, 12));
    g_assert_cmpfloat(max_diff(x, c.xt, 12), <=, 1e-6);
  }
  case_free(&c);
}

static void zero_grad(const double *x, double *g, void *user) {
  (void)x, (void)user;
  memset(g, 0, 30 * sizeof *g);
}

static void const_grad(const double *x, double *g, void *user) {
  (void)x;
  for (int j = 0; j < 30; j++) g[j] = *(double *)user;
}

/* OSL with beta 0 = OSEM; with a constant gradient g the subset-b step is the EM step with
 * s_b + beta g / S in the denominator. BSREM (beta 0, alpha 1, S = 1) = MLEM; alpha 1/2 =
 * halfway between x and the MLEM step. */
static void test_osl_bsrem(void) {
  Case c = make_case(40, 30, 3, TRUE);
  for (guint S = 1; S <= 3; S += 2) {
    recon_ref_equal_blocks(c.m, S, c.first);
    ReconRefProblem p = problem(&c, S);
    double x1[30], x2[30], x3[30];
    for (int j = 0; j < 30; j++) x1[j] = x2[j] = x3[j] = 1;
    recon_ref_osem(&p, 3, x1);
    recon_ref_osl(&p, 0.7, zero_grad, NULL, 3, x2);
    g_assert_cmpmem(x1, sizeof x1, x2, sizeof x2);
    recon_ref_osl(&p, 0.0, const_grad, &(double){5.0}, 3, x3);
    g_assert_cmpmem(x1, sizeof x1, x3, sizeof x3);

    /* one OSL sub-iteration (S = 1 view of subset 0) by hand */
    double g0 = 0.3, beta = 2.0, xs[30], xo[30];
    for (int j = 0; j < 30; j++) xs[j] = xo[j] = 1;
    ReconRefProblem p0 = p;
    guint64 f0[2] = {c.first[0], c.first[1]};
    p0.S = 1, p0.first = f0, p0.m = c.m; /* rows of subset 0 only via first[] */
    recon_ref_osem(&p0, 1, xs);          /* xs_j = bp_j / s_j */
    recon_ref_osl(&p0, beta, const_grad, &g0, 1, xo);
    for (int j = 0; j < 30; j++) {
      double s = 0;
      for (guint64 i = f0[0]; i < f0[1]; i++) s += c.d[i] * c.A[i * c.n + j];
      if (s > 0) g_assert_cmpfloat_with_epsilon(xo[j], xs[j] * s / (s + beta * g0), 1e-12);
    }
  }
  recon_ref_equal_blocks(c.m, 1, c.first);
  ReconRefProblem p = problem(&c, 1);
  double xm[30], xb[30], xh[30];
  for (int j = 0; j < 30; j++) xm[j] = xb[j] = xh[j] = 1;
  recon_ref_osem(&p, 1, xm);
  recon_ref_bsrem(&p, 1.0, 0.0, NULL, NULL, 1e-9, 1e30, 1, xb);
  recon_ref_bsrem(&p, 0.5, 0.0, NULL, NULL, 1e-9, 1e30, 1, xh);
  for (int j = 0; j < 30; j++) {
    g_assert_cmpfloat_with_epsilon(xb[j], MAX(xm[j], 1e-9), 1e-12);
    g_assert_cmpfloat_with_epsilon(xh[j], MAX(0.5 * (1 + xm[j]), 1e-9), 1e-12);
  }
  /* the floor and the bound: a huge step clamps into [eps, U] */
  for (int j = 0; j < 30; j++) xb[j] = 1;
  recon_ref_bsrem(&p, 1.0, 1e6, const_grad, &(double){1.0}, 0.01, 1e30, 1, xb);
  for (int j = 0; j < 30; j++) g_assert_cmpfloat(xb[j], ==, 0.01);
  for (int j = 0; j < 30; j++) xb[j] = 1;
  recon_ref_bsrem(&p, 1.0, -1e6, const_grad, &(double){1.0}, 0.01, 4.0, 1, xb);
  for (int j = 0; j < 30; j++) g_assert_cmpfloat(xb[j], ==, 4.0);
  case_free(&c);
}

/* Quadratic prior: by hand on two voxels, and gradient = central differences of the value. */
static void test_quadratic(void) {
  ReconRefGrid two = {.dims = {2, 1, 1}, .voxel = {1, 1, 1}};
  double x2[] = {0, 1}, g2[2];
  g_assert_cmpfloat_with_epsilon(recon_ref_quadratic_value(&two, x2), 0.5, 1e-15);
  recon_ref_quadratic_grad(x2, g2, &two);
  g_assert_cmpfloat_with_epsilon(g2[0], -1, 1e-15);
  g_assert_cmpfloat_with_epsilon(g2[1], 1, 1e-15);
  /* a diagonal pair in anisotropic voxels: w = 1 / |(1, 2)| with edges 1 and 2 */
  ReconRefGrid diag = {.dims = {2, 2, 1}, .voxel = {1, 2, 1}};
  double xd[] = {1, 0, 0, 0};
  g_assert_cmpfloat_with_epsilon(recon_ref_quadratic_value(&diag, xd),
                                 0.5 * (1 + 0.5 + 1 / sqrt(5.0)), 1e-15);

  ReconRefGrid G = {.dims = {4, 3, 3}, .voxel = {1, 1.5, 2}};
  double x[36], g[36];
  for (int j = 0; j < 36; j++) x[j] = rnd();
  recon_ref_quadratic_grad(x, g, &G);
  for (int j = 0; j < 36; j++) {
    double h = 1e-5, keep = x[j];
    x[j] = keep + h;
    double up = recon_ref_quadratic_value(&G, x);
    x[j] = keep - h;
    double dn = recon_ref_quadratic_value(&G, x);
    x[j] = keep;
    g_assert_cmpfloat_with_epsilon(g[j], (up - dn) / (2 * h), 1e-7);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/recon/ref/by-hand", test_mlem_by_hand);
  g_test_add_func("/recon/ref/mlem-monotone", test_mlem_monotone);
  g_test_add_func("/recon/ref/cgls-least-squares", test_cgls);
  g_test_add_func("/recon/ref/sirt-converges", test_sirt_converges);
  g_test_add_func("/recon/ref/osl-bsrem", test_osl_bsrem);
  g_test_add_func("/recon/ref/quadratic-prior", test_quadratic);
  return g_test_run();
}
