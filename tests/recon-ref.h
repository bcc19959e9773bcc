/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C references for the reconstruction core's algorithms (compute/recon/), in double,
 * on a dense matrix, sharing no code with the device. The device algorithms implement
 * exactly these formulas; tests compare their images after a few iterations.
 *
 * Notation. A: m x n, row-major (A[i * n + j]); subsets are contiguous row blocks, subset b
 * = rows i in [first[b], first[b + 1]), b = 0 .. S - 1 (with the CSR operator: its
 * tl_operator_subset_first). d: the diagonal D (NULL = 1); a: the additive term (NULL = 0);
 * y: the measured data. Every algorithm sees the matrix M = D A, M_ij = d_i A_ij, as the
 * operator presents it (tl_operator_forward = D_b A_b x, tl_operator_adjoint = A_b^T D_b w),
 * and the model
 *
 *   ybar = M x + a.
 *
 * One iteration = the S sub-iterations b = 0, 1, ..., S - 1 in that order; each uses the
 * image the previous one made. The start image x0 is the caller's (x in, x out); the tests
 * pass it to the solver explicitly (tl_solver_set_image), so the solver's default start
 * image is not part of these formulas (recon_ref_emission_start gives one candidate).
 * Sums "over b" run over the rows of subset b only; s_b = M_b^T 1 (s_bj = sum_{i in b} M_ij)
 * and s = sum_b s_b = M^T 1.
 *
 * EM ratio convention: a datum with ybar_i <= 0 contributes 0 to every back projected ratio
 * (y_i / ybar_i, and y_i / ybar_i - 1 in bsrem). With A, d, a >= 0 and x > 0 this only
 * happens for rows that are entirely 0 (and a_i = 0). */
#pragma once
#include <glib.h>

typedef struct {
  guint64 m, n;
  const double *A;       /* m x n, row-major */
  guint S;               /* subsets >= 1 */
  const guint64 *first;  /* S + 1 row boundaries, first[0] = 0, first[S] = m */
  const double *d;       /* D (m) or NULL = 1 */
  const double *a;       /* additive term (m) or NULL = 0 */
  const double *y;       /* data (m) */
  /* Optional: per subset b, the column sums s_b (n each) of every datum the system could
   * measure, when the rows are only the recorded ones (PET list mode: all detectable pairs,
   * not the events). NULL: s_b = M_b^T 1. The log-likelihood's expected total is then
   * sum_b s_b . x + sum a instead of sum_i ybar_i. */
  const double *const *sens;
} ReconRefProblem;

/* Prior gradient: g = dR/dx at x (n values, overwritten). */
typedef void (*ReconRefGrad)(const double *x, double *g, void *user);

/* MLEM (S = 1) / OSEM, per sub-iteration b:
 *   ybar_i = (M x)_i + a_i                       (i in b)
 *   x_j <- x_j / s_bj * sum_{i in b} M_ij y_i / ybar_i     if s_bj > 0
 *   x_j <- 0                                               if s_bj = 0 */
void recon_ref_osem(const ReconRefProblem *p, guint iterations, double *x);
/* The same with the sub-iterations' subsets in the order start, start + 1, ... mod S. */
void recon_ref_osem_from(const ReconRefProblem *p, guint iterations, guint start, double *x);

/* SIRT (S = 1) / OS-SART, per sub-iteration b, relaxation lambda:
 *   r_i = 1 / sum_j M_ij   (0 where the row sum is 0)          (i in b)
 *   c_j = 1 / s_bj         (0 where s_bj = 0)
 *   x_j <- x_j + lambda c_j sum_{i in b} M_ij r_i (y_i - a_i - (M x)_i)
 *   nonnegative: then x_j <- max(x_j, 0)
 * (With D = 1 and a = 0: x <- x + lambda C_b A_b^T R_b (y_b - A_b x).) */
void recon_ref_sart(const ReconRefProblem *p, double lambda, gboolean nonnegative,
                    guint iterations, double *x);

/* CGLS on min 1/2 |M x - (y - a)|^2 over all m rows (S must be 1), Paige-Saunders form as in
 * compute/ct/tl-ct-cgls.c. Start (at x0):
 *   r = y - a - M x,  s = M^T r,  p = s,  gamma = |s|^2
 * each iteration:
 *   q = M p,  delta = |q|^2;  if delta <= 0 or gamma <= 0: x is kept (converged), stop
 *   alpha = gamma / delta,  x <- x + alpha p,  r <- r - alpha q
 *   s = M^T r,  gamma' = |s|^2,  p <- s + (gamma' / gamma) p,  gamma <- gamma'
 *   nonnegative: x_j <- max(x_j, 0) after the update (the residual r is then NOT recomputed,
 *   as in the device code; off in the reference tests). */
void recon_ref_cgls(const ReconRefProblem *p, gboolean nonnegative, guint iterations,
                    double *x);

/* OSL (Green 1990), one-step-late MAP-EM with ordered subsets, per sub-iteration b:
 *   g = dR/dx at x (the image this sub-iteration starts from)
 *   ybar_i = (M x)_i + a_i
 *   den_j = s_bj + (beta / S) g_j
 *   x_j <- x_j / den_j * sum_{i in b} M_ij y_i / ybar_i     if s_bj > 0 and den_j > 0
 *   x_j <- 0                                                if s_bj = 0
 *   x_j unchanged                                           if s_bj > 0 and den_j <= 0
 * (beta / S: the S subset penalties add up to beta R, as bsrem's; S = 1 is Green's.) */
void recon_ref_osl(const ReconRefProblem *p, double beta, ReconRefGrad grad, void *user,
                   guint iterations, double *x);

/* BSREM (De Pierro & Yamagishi 2001; the relaxed form of Ahn & Fessler 2003), maximising
 * Phi(x) = sum_i (y_i log ybar_i - ybar_i) - beta R(x). For iteration n = 0, 1, ...
 * (0-based, constant over its sub-iterations), alpha_n = alpha0 / (1 + n); sub-iteration b:
 *   g = dR/dx at x,  ybar_i = (M x)_i + a_i
 *   G_j = sum_{i in b} M_ij (y_i / ybar_i - 1) - (beta / S) g_j
 *   x_j <- x_j + alpha_n S (x_j / s_j) G_j    (s = M^T 1 of all subsets, s / S the average
 *                                             subset sensitivity; s_j = 0: unchanged)
 *   x_j <- min(max(x_j, eps_x), upper)
 * The device uses eps_x = RECON_REF_BSREM_FLOOR and upper = RECON_REF_BSREM_UPPER. */
#define RECON_REF_BSREM_FLOOR 1e-6
#define RECON_REF_BSREM_UPPER 1e30
void recon_ref_bsrem(const ReconRefProblem *p, double alpha0, double beta, ReconRefGrad grad,
                     void *user, double eps_x, double upper, guint iterations, double *x);

/* Poisson log-likelihood sum_i (y_i log ybar_i - ybar_i) over the data with ybar_i > 0, and
 * the least-squares objective 1/2 sum_i (ybar_i - y_i)^2, of x (all rows). */
double recon_ref_loglik(const ReconRefProblem *p, const double *x);
double recon_ref_lsq(const ReconRefProblem *p, const double *x);

/* A uniform emission start: x_j = c, c = (sum_i y_i - sum_i a_i) / sum_j s_j (so the expected
 * total sum ybar equals sum y), or c = 1 when that is not finite and > 0. */
void recon_ref_emission_start(const ReconRefProblem *p, double *x);

/* S + 1 boundaries of S equal row blocks, as tl_csr_operator_new with lengths NULL makes
 * them: first[b] = floor(b m / S). */
void recon_ref_equal_blocks(guint64 m, guint S, guint64 *first);

/* Quadratic prior of compute/recon/tl-prior.h on a grid of dims[0] x dims[1] x dims[2] voxels
 * (x fastest) of size voxel[3] mm: R = 1/4 sum_j sum_{k in N_j} w_jk (x_j - x_k)^2 over the
 * 26 neighbours inside the grid, w_jk = 1 / (centre distance / smallest voxel edge), so
 *   dR/dx_j = sum_{k in N_j} w_jk (x_j - x_k).
 * `user` is a ReconRefGrid. */
typedef struct {
  guint dims[3];
  double voxel[3];
} ReconRefGrid;
void recon_ref_quadratic_grad(const double *x, double *g, void *user);
double recon_ref_quadratic_value(const ReconRefGrid *grid, const double *x);

/* The gradient algorithms of issue 29 (tl-objective.c, tl-algo-svrg.c, -saga, -pkma,
 * -lbfgsb), maximising Phi(x) = L(x) - beta R(x) (L as recon_ref_loglik). The prior: its
 * gradient, the diagonal of its Hessian (NULL: none offered, the preconditioner is then x / s)
 * and its value (lbfgsb's line search), all of one `user`. */
typedef double (*ReconRefValue)(const double *x, void *user);
typedef struct {
  double beta;
  ReconRefGrad grad, hess;
  ReconRefValue value;
  void *user;
} ReconRefPrior;

/* Subset b's share of the gradient (b = -1: all data):
 *   M_b^T (y / ybar) - s_b - (beta / S) dR/dx      (all: M^T (y / ybar) - s - beta dR/dx) */
void recon_ref_objective_gradient(const ReconRefProblem *p, const ReconRefPrior *pr, int b,
                                  const double *x, double *g);
/* Phi(x) = recon_ref_loglik - beta R(x). */
double recon_ref_objective(const ReconRefProblem *p, const ReconRefPrior *pr, const double *x);
/* Preconditioner: delta = max(1e-3 sum(x) / n, 1e-30);
 *   P_j = 1 / (s_j / max(x_j, delta) + beta H_j)   (with a Hessian diagonal and beta > 0)
 *   P_j = max(x_j, delta) / s_j                    (otherwise);  0 where s_j = 0 */
void recon_ref_precond(const ReconRefProblem *p, const ReconRefPrior *pr, const double *x,
                       double *P);
/* SVRG / SAGA / PKMA / L-BFGS-B exactly as their files describe them (seeded subset order:
 * GRand with `seed`, Fisher-Yates from the top, g_rand_int_range(r, 0, i)). */
void recon_ref_svrg(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint32 seed, guint iterations, double *x);
void recon_ref_saga(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint32 seed, guint iterations, double *x);
void recon_ref_pkma(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint iterations, double *x);
void recon_ref_lbfgsb(const ReconRefProblem *p, const ReconRefPrior *pr, guint iterations,
                      double *x);
/* The quadratic prior's Hessian diagonal sum_k w_jk, and its value as a ReconRefValue. */
void recon_ref_quadratic_hess(const double *x, double *h, void *user);
double recon_ref_quadratic_value_cb(const double *x, void *user);

/* AB-EMML with B infinite (compute/recon/tl-algo-abemml.c): the lower bound A = -x0, x0 the
 * value of recon_ref_emission_start, per sub-iteration b:
 *   t_i = sum_j M_ij A [s_j > 0]                       (s = M^T 1, or the problem's sens)
 *   x_j <- A + (x_j - A) / s_bj * sum_{i in b, ybar_i > t_i} M_ij (y_i - t_i) / (ybar_i - t_i)
 *   where s_bj > 0; else x_j kept where s_j > 0, 0 elsewhere. */
void recon_ref_abemml(const ReconRefProblem *p, guint iterations, double *x);
