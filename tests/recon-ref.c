/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C double-precision references of the reconstruction algorithms: the formulas of
 * recon-ref.h, written out loop by loop on the dense matrix. */
#include "recon-ref.h"
#include <math.h>
#include <string.h>

static double mij(const ReconRefProblem *p, guint64 i, guint64 j) {
  return (p->d ? p->d[i] : 1.0) * p->A[i * p->n + j];
}

/* ybar_i = (M x)_i + a_i over rows [r0, r1) into out[i - r0]. */
static void model(const ReconRefProblem *p, guint64 r0, guint64 r1, const double *x,
                  double *out) {
  for (guint64 i = r0; i < r1; i++) {
    double v = 0;
    for (guint64 j = 0; j < p->n; j++) v += mij(p, i, j) * x[j];
    out[i - r0] = v + (p->a ? p->a[i] : 0.0);
  }
}

/* s_b = M_b^T 1 over rows [r0, r1), or the problem's own column sums of the subset(s) those
 * rows are (all subsets for rows [0, m)). */
static void colsums(const ReconRefProblem *p, guint64 r0, guint64 r1, double *s) {
  memset(s, 0, p->n * sizeof *s);
  if (p->sens) {
    for (guint b = 0; b < p->S; b++)
      if (p->first[b] >= r0 && p->first[b + 1] <= r1)
        for (guint64 j = 0; j < p->n; j++) s[j] += p->sens[b][j];
    return;
  }
  for (guint64 i = r0; i < r1; i++)
    for (guint64 j = 0; j < p->n; j++) s[j] += mij(p, i, j);
}

/* out = M_b^T (y / ybar) (ratio_minus_one: y / ybar - 1), 0 for ybar <= 0. */
static void em_backproject(const ReconRefProblem *p, guint64 r0, guint64 r1,
                           const double *ybar, gboolean ratio_minus_one, double *out) {
  memset(out, 0, p->n * sizeof *out);
  for (guint64 i = r0; i < r1; i++) {
    if (!(ybar[i - r0] > 0)) continue;
    double q = p->y[i] / ybar[i - r0] - (ratio_minus_one ? 1.0 : 0.0);
    for (guint64 j = 0; j < p->n; j++) out[j] += mij(p, i, j) * q;
  }
}

void recon_ref_osem(const ReconRefProblem *p, guint iterations, double *x) {
  recon_ref_osem_from(p, iterations, 0, x);
}

void recon_ref_osem_from(const ReconRefProblem *p, guint iterations, guint start, double *x) {
  g_autofree double *ybar = g_new(double, p->m), *s = g_new(double, p->n);
  g_autofree double *bp = g_new(double, p->n);
  for (guint it = 0; it < iterations; it++)
    for (guint bb = 0; bb < p->S; bb++) {
      guint b = (bb + start) % p->S;
      guint64 r0 = p->first[b], r1 = p->first[b + 1];
      colsums(p, r0, r1, s);
      model(p, r0, r1, x, ybar);
      em_backproject(p, r0, r1, ybar, FALSE, bp);
      for (guint64 j = 0; j < p->n; j++) x[j] = s[j] > 0 ? x[j] / s[j] * bp[j] : 0.0;
    }
}

void recon_ref_sart(const ReconRefProblem *p, double lambda, gboolean nonnegative,
                    guint iterations, double *x) {
  g_autofree double *q = g_new(double, p->m), *s = g_new(double, p->n);
  g_autofree double *bp = g_new(double, p->n);
  for (guint it = 0; it < iterations; it++)
    for (guint b = 0; b < p->S; b++) {
      guint64 r0 = p->first[b], r1 = p->first[b + 1];
      colsums(p, r0, r1, s);
      model(p, r0, r1, x, q); /* includes a: y - ybar = y - a - M x */
      memset(bp, 0, p->n * sizeof *bp);
      for (guint64 i = r0; i < r1; i++) {
        double row = 0;
        for (guint64 j = 0; j < p->n; j++) row += mij(p, i, j);
        double r = row != 0 ? 1.0 / row : 0.0, e = r * (p->y[i] - q[i - r0]);
        for (guint64 j = 0; j < p->n; j++) bp[j] += mij(p, i, j) * e;
      }
      for (guint64 j = 0; j < p->n; j++) {
        double c = s[j] != 0 ? 1.0 / s[j] : 0.0;
        x[j] += lambda * c * bp[j];
        if (nonnegative) x[j] = MAX(x[j], 0.0);
      }
    }
}

void recon_ref_cgls(const ReconRefProblem *p, gboolean nonnegative, guint iterations,
                    double *x) {
  g_assert_cmpuint(p->S, ==, 1);
  guint64 m = p->m, n = p->n;
  g_autofree double *r = g_new(double, m), *q = g_new(double, m);
  g_autofree double *s = g_new0(double, n), *pd = g_new(double, n);
  model(p, 0, m, x, r);
  for (guint64 i = 0; i < m; i++) r[i] = p->y[i] - r[i];
  double gamma = 0;
  for (guint64 i = 0; i < m; i++)
    for (guint64 j = 0; j < n; j++) s[j] += mij(p, i, j) * r[i];
  for (guint64 j = 0; j < n; j++) pd[j] = s[j], gamma += s[j] * s[j];
  for (guint it = 0; it < iterations; it++) {
    double delta = 0;
    for (guint64 i = 0; i < m; i++) {
      q[i] = 0;
      for (guint64 j = 0; j < n; j++) q[i] += mij(p, i, j) * pd[j];
      delta += q[i] * q[i];
    }
    if (!(delta > 0) || !(gamma > 0)) return;
    double alpha = gamma / delta, gamma_new = 0;
    for (guint64 j = 0; j < n; j++) {
      x[j] += alpha * pd[j];
      if (nonnegative) x[j] = MAX(x[j], 0.0);
    }
    for (guint64 i = 0; i < m; i++) r[i] -= alpha * q[i];
    memset(s, 0, n * sizeof *s);
    for (guint64 i = 0; i < m; i++)
      for (guint64 j = 0; j < n; j++) s[j] += mij(p, i, j) * r[i];
    for (guint64 j = 0; j < n; j++) gamma_new += s[j] * s[j];
    for (guint64 j = 0; j < n; j++) pd[j] = s[j] + gamma_new / gamma * pd[j];
    gamma = gamma_new;
  }
}

void recon_ref_osl(const ReconRefProblem *p, double beta, ReconRefGrad grad, void *user,
                   guint iterations, double *x) {
  g_autofree double *ybar = g_new(double, p->m), *s = g_new(double, p->n);
  g_autofree double *bp = g_new(double, p->n), *g = g_new0(double, p->n);
  for (guint it = 0; it < iterations; it++)
    for (guint b = 0; b < p->S; b++) {
      guint64 r0 = p->first[b], r1 = p->first[b + 1];
      if (grad) grad(x, g, user);
      colsums(p, r0, r1, s);
      model(p, r0, r1, x, ybar);
      em_backproject(p, r0, r1, ybar, FALSE, bp);
      for (guint64 j = 0; j < p->n; j++) {
        double den = s[j] + beta / p->S * g[j];
        if (!(s[j] > 0)) x[j] = 0;
        else if (den > 0) x[j] = x[j] / den * bp[j];
      }
    }
}

void recon_ref_bsrem(const ReconRefProblem *p, double alpha0, double beta, ReconRefGrad grad,
                     void *user, double eps_x, double upper, guint iterations, double *x) {
  g_autofree double *ybar = g_new(double, p->m), *s = g_new(double, p->n);
  g_autofree double *bp = g_new(double, p->n), *g = g_new0(double, p->n);
  colsums(p, 0, p->m, s);
  for (guint it = 0; it < iterations; it++) {
    double alpha = alpha0 / (1.0 + it);
    for (guint b = 0; b < p->S; b++) {
      guint64 r0 = p->first[b], r1 = p->first[b + 1];
      if (grad) grad(x, g, user);
      model(p, r0, r1, x, ybar);
      /* the gradient's "- 1" term is s_b: the stored rows', or the given column sums */
      em_backproject(p, r0, r1, ybar, !p->sens, bp);
      for (guint64 j = 0; p->sens && j < p->n; j++) bp[j] -= p->sens[b][j];
      for (guint64 j = 0; j < p->n; j++) {
        /* preconditioner x / (s / S): the average subset sensitivity (tl-algo-bsrem.c) */
        if (s[j] > 0) x[j] += alpha * p->S * x[j] / s[j] * (bp[j] - beta / p->S * g[j]);
        x[j] = MIN(MAX(x[j], eps_x), upper);
      }
    }
  }
}

double recon_ref_loglik(const ReconRefProblem *p, const double *x) {
  g_autofree double *ybar = g_new(double, p->m);
  model(p, 0, p->m, x, ybar);
  double L = 0;
  for (guint64 i = 0; i < p->m; i++)
    if (ybar[i] > 0) L += p->y[i] * log(ybar[i]) - (p->sens ? 0 : ybar[i]);
  if (p->sens) {
    g_autofree double *s = g_new(double, p->n);
    colsums(p, 0, p->m, s);
    for (guint64 j = 0; j < p->n; j++) L -= s[j] * x[j];
    for (guint64 i = 0; p->a && i < p->m; i++) L -= p->a[i];
  }
  return L;
}

double recon_ref_lsq(const ReconRefProblem *p, const double *x) {
  g_autofree double *ybar = g_new(double, p->m);
  model(p, 0, p->m, x, ybar);
  double f = 0;
  for (guint64 i = 0; i < p->m; i++) f += 0.5 * (ybar[i] - p->y[i]) * (ybar[i] - p->y[i]);
  return f;
}

void recon_ref_emission_start(const ReconRefProblem *p, double *x) {
  g_autofree double *s = g_new(double, p->n);
  colsums(p, 0, p->m, s);
  double ty = 0, ta = 0, ts = 0;
  for (guint64 i = 0; i < p->m; i++) ty += p->y[i], ta += p->a ? p->a[i] : 0.0;
  for (guint64 j = 0; j < p->n; j++) ts += s[j];
  double c = (ty - ta) / ts;
  if (!(isfinite(c) && c > 0)) c = 1;
  for (guint64 j = 0; j < p->n; j++) x[j] = c;
}

void recon_ref_equal_blocks(guint64 m, guint S, guint64 *first) {
  for (guint b = 0; b <= S; b++) first[b] = b * m / S;
}

/* Calls f(k, w) for each of the 26 neighbours k of voxel j inside the grid. */
#define FOR_NEIGHBOURS(G, J, BODY)                                                          \
  do {                                                                                      \
    guint64 nx_ = (G)->dims[0], ny_ = (G)->dims[1], nz_ = (G)->dims[2];                      \
    gint64 ix_ = (J) % nx_, iy_ = (J) / nx_ % ny_, iz_ = (J) / (nx_ * ny_);                  \
    double h_ = MIN((G)->voxel[0], MIN((G)->voxel[1], (G)->voxel[2]));                       \
    for (int dz = -1; dz <= 1; dz++)                                                         \
      for (int dy = -1; dy <= 1; dy++)                                                       \
        for (int dx = -1; dx <= 1; dx++) {                                                   \
          if (!dx && !dy && !dz) continue;                                                   \
          gint64 kx = ix_ + dx, ky = iy_ + dy, kz = iz_ + dz;                                \
          if (kx < 0 || ky < 0 || kz < 0 || kx >= (gint64)nx_ || ky >= (gint64)ny_ ||        \
              kz >= (gint64)nz_)                                                             \
            continue;                                                                        \
          double ddx = dx * (G)->voxel[0], ddy = dy * (G)->voxel[1], ddz = dz * (G)->voxel[2]; \
          double w = h_ / sqrt(ddx * ddx + ddy * ddy + ddz * ddz);                           \
          guint64 k = ((guint64)kz * ny_ + (guint64)ky) * nx_ + (guint64)kx;                 \
          BODY;                                                                              \
        }                                                                                    \
  } while (0)

void recon_ref_quadratic_grad(const double *x, double *g, void *user) {
  const ReconRefGrid *G = user;
  guint64 n = (guint64)G->dims[0] * G->dims[1] * G->dims[2];
  for (guint64 j = 0; j < n; j++) {
    double acc = 0;
    FOR_NEIGHBOURS(G, j, acc += w * (x[j] - x[k]));
    g[j] = acc;
  }
}

double recon_ref_quadratic_value(const ReconRefGrid *G, const double *x) {
  guint64 n = (guint64)G->dims[0] * G->dims[1] * G->dims[2];
  double R = 0;
  for (guint64 j = 0; j < n; j++) FOR_NEIGHBOURS(G, j, R += 0.25 * w * (x[j] - x[k]) * (x[j] - x[k]));
  return R;
}

void recon_ref_quadratic_hess(const double *x, double *h, void *user) {
  const ReconRefGrid *G = user;
  guint64 n = (guint64)G->dims[0] * G->dims[1] * G->dims[2];
  for (guint64 j = 0; j < n; j++) {
    double acc = 0;
    FOR_NEIGHBOURS(G, j, (void)k; acc += w);
    h[j] = acc;
  }
}

double recon_ref_quadratic_value_cb(const double *x, void *user) {
  return recon_ref_quadratic_value(user, x);
}

void recon_ref_objective_gradient(const ReconRefProblem *p, const ReconRefPrior *pr, int b,
                                  const double *x, double *g) {
  guint64 r0 = b < 0 ? 0 : p->first[b], r1 = b < 0 ? p->m : p->first[b + 1], n = p->n;
  g_autofree double *ybar = g_new(double, MAX(r1 - r0, 1));
  g_autofree double *s = g_new(double, n);
  g_autofree double *gr = g_new0(double, n);
  model(p, r0, r1, x, ybar);
  em_backproject(p, r0, r1, ybar, FALSE, g);
  colsums(p, r0, r1, s);
  double beta = pr && pr->grad ? pr->beta / (b < 0 ? 1 : p->S) : 0;
  if (beta > 0) pr->grad(x, gr, pr->user);
  for (guint64 j = 0; j < n; j++) g[j] -= s[j] + beta * gr[j];
}

double recon_ref_objective(const ReconRefProblem *p, const ReconRefPrior *pr, const double *x) {
  double L = recon_ref_loglik(p, x);
  return pr && pr->value && pr->beta > 0 ? L - pr->beta * pr->value(x, pr->user) : L;
}

void recon_ref_precond(const ReconRefProblem *p, const ReconRefPrior *pr, const double *x,
                       double *P) {
  guint64 n = p->n;
  g_autofree double *s = g_new(double, n);
  g_autofree double *h = g_new0(double, n);
  colsums(p, 0, p->m, s);
  double sum = 0;
  for (guint64 j = 0; j < n; j++) sum += x[j];
  double dl = MAX(1e-3 * sum / (double)n, 1e-30);
  gboolean prior = pr && pr->hess && pr->beta > 0;
  if (prior) pr->hess(x, h, pr->user);
  for (guint64 j = 0; j < n; j++) {
    double xd = MAX(x[j], dl);
    P[j] = !(s[j] > 0) ? 0 : prior ? 1.0 / (s[j] / xd + pr->beta * h[j]) : xd / s[j];
  }
}

static void shuffle(GRand *r, guint *order, guint n) {
  for (guint i = 0; i < n; i++) order[i] = i;
  for (guint i = n; i > 1; i--) {
    guint j = (guint)g_rand_int_range(r, 0, (gint32)i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
}

/* The gradient algorithms' step bounds: at least x / 10, at most 10 max(x, delta), delta =
 * 1e-3 mean(x) as in the preconditioner. */
static double delta_of(const double *x, guint64 n) {
  double sum = 0;
  for (guint64 j = 0; j < n; j++) sum += x[j];
  return MAX(1e-3 * sum / (double)n, 1e-30);
}

static double bounded(double x, double v, double dl) {
  return MIN(MAX(v, 0.1 * x), 10.0 * MAX(x, dl));
}

static double sched(double alpha0, double first, guint e) {
  return alpha0 * MAX(first / (1.0 + e / 5.0), 0.5);
}

/* Phi with the solver's data term: ybar floored at 1e-30 where y > 0 */
static double phi_strict(const ReconRefProblem *p, const ReconRefPrior *pr, const double *x) {
  g_autofree double *ybar = g_new(double, p->m);
  model(p, 0, p->m, x, ybar);
  double lost = 0;
  for (guint64 i = 0; i < p->m; i++)
    if (p->y[i] > 0 && !(ybar[i] > 0)) lost += p->y[i] * log(1e-30);
  return recon_ref_objective(p, pr, x) + lost;
}

/* The epoch check of tl-epoch-check.c: Phi of x against the last image that passed; TRUE when
 * it fell (the epoch is undone: back to c->good, the scale halved). */
typedef struct {
  gboolean have;
  double phi, scale, *good;
  guint streak;
} RefCheck;

static gboolean ref_check(RefCheck *c, const ReconRefProblem *p, const ReconRefPrior *pr,
                          const double *x) {
  double phi = phi_strict(p, pr, x);
  if (c->have && (!(phi >= c->phi - 1e-6 * fabs(c->phi)) || !isfinite(phi))) {
    c->scale *= 0.5;
    c->streak = 0;
    return TRUE;
  }
  if (c->have && ++c->streak >= 2) {
    c->scale = MIN(2 * c->scale, 1);
    c->streak = 0;
  }
  c->have = TRUE;
  c->phi = phi;
  memcpy(c->good, x, p->n * sizeof *x);
  return FALSE;
}

/* x = max(from + al P v, from / 10) where P > 0, else from (voxels with s = 0 keep theirs) */
static void ref_step(guint64 n, double *x, const double *from, double al, const double *P,
                     const double *v) {
  double dl = delta_of(from, n);
  for (guint64 j = 0; j < n; j++)
    x[j] = P[j] > 0 ? bounded(from[j], from[j] + al * P[j] * v[j], dl) : from[j];
}

void recon_ref_svrg(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint32 seed, guint iterations, double *x) {
  guint64 n = p->n;
  guint S = p->S;
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  g_autofree guint *order = g_new(guint, S);
  g_autofree double *z = g_new(double, n), *G = g_new(double, n), *gx = g_new(double, n),
                    *gz = g_new(double, n), *P = g_new(double, n), *good = g_new(double, n),
                    *v = g_new(double, n);
  RefCheck c = {.scale = 1, .good = good};
  gboolean have = FALSE, lifted = FALSE, good_is_anchor = FALSE;
  guint anchor_epoch = 0;
  for (guint t = 0; t < iterations * S; t++) {
    guint e = t / S, i = t % S;
    if (i == 0 || !have) shuffle(r, order, S);
    double base = sched(alpha0, 2.0, e);
    if (!lifted) { /* the first step: a plain preconditioned gradient step, no anchor */
      lifted = TRUE;
      recon_ref_objective_gradient(p, pr, -1, x, G);
      recon_ref_precond(p, pr, x, P);
      ref_step(n, x, x, base, P, G);
      continue;
    }
    gboolean full = !have || (i == 0 && e >= anchor_epoch + 2);
    const double *from = x;
    if (i == 0 || !have) { /* every epoch's start: the check */
      if (ref_check(&c, p, pr, x)) {
        from = good;
        if (good_is_anchor) { /* back to the anchor, with its G */
          recon_ref_precond(p, pr, good, P);
          ref_step(n, x, good, c.scale * base, P, G);
          continue;
        }
        full = TRUE; /* a new anchor at the good image */
      }
      good_is_anchor = full;
    }
    double al = c.scale * base;
    if (full) {
      recon_ref_objective_gradient(p, pr, -1, from, G);
      memcpy(z, from, n * sizeof *z);
      recon_ref_precond(p, pr, from, P);
      have = TRUE;
      anchor_epoch = e;
      ref_step(n, x, z, al, P, G);
      continue;
    }
    recon_ref_objective_gradient(p, pr, (int)order[i], x, gx);
    recon_ref_objective_gradient(p, pr, (int)order[i], z, gz);
    recon_ref_precond(p, pr, x, P);
    for (guint64 j = 0; j < n; j++) v[j] = S * (gx[j] - gz[j]) + G[j];
    ref_step(n, x, x, al, P, v);
  }
}

void recon_ref_saga(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint32 seed, guint iterations, double *x) {
  guint64 n = p->n;
  guint S = p->S;
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  g_autofree guint *order = g_new(guint, S);
  g_autofree double *T = g_new(double, n * S), *M = g_new(double, n), *gx = g_new(double, n),
                    *P = g_new(double, n), *good = g_new(double, n), *v = g_new(double, n);
  RefCheck c = {.scale = 1, .good = good};
  gboolean filled = FALSE;
  for (guint t = 0; t < iterations * S; t++) {
    guint e = t / S, i = t % S;
    if (i == 0 || !filled) shuffle(r, order, S);
    const double *from = x;
    /* the check from the second step on, then at every epoch's start */
    if (filled && (t == 1 || i == 0) && ref_check(&c, p, pr, x)) {
      from = good; /* back to the good image, its table made afresh there */
      filled = FALSE;
    }
    double al = c.scale * sched(alpha0, 1.0, e);
    recon_ref_precond(p, pr, from, P);
    if (!filled) {
      memset(M, 0, n * sizeof *M);
      for (guint b = 0; b < S; b++) {
        recon_ref_objective_gradient(p, pr, (int)b, from, T + b * n);
        for (guint64 j = 0; j < n; j++) M[j] += T[b * n + j];
      }
      filled = TRUE;
      ref_step(n, x, from, al, P, M);
      continue;
    }
    guint b = order[i];
    double *Tb = T + b * n;
    recon_ref_objective_gradient(p, pr, (int)b, x, gx);
    for (guint64 j = 0; j < n; j++) v[j] = S * (gx[j] - Tb[j]) + M[j];
    ref_step(n, x, x, al, P, v);
    for (guint64 j = 0; j < n; j++) {
      M[j] += gx[j] - Tb[j];
      Tb[j] = gx[j];
    }
  }
}

void recon_ref_pkma(const ReconRefProblem *p, const ReconRefPrior *pr, double alpha0,
                    guint iterations, double *x) {
  guint64 n = p->n;
  guint S = p->S;
  g_autofree double *g = g_new(double, n), *s = g_new(double, n);
  colsums(p, 0, p->m, s);
  for (guint t = 0; t < iterations * S; t++) {
    double la = 2.0 * alpha0 / (1.0 + (t / S) / 10.0), sum = 0;
    for (guint64 j = 0; j < n; j++) sum += x[j];
    double dl = MAX(1e-3 * sum / (double)n, 1e-30);
    recon_ref_objective_gradient(p, pr, (int)(t % S), x, g);
    for (guint64 j = 0; j < n; j++)
      if (s[j] > 0)
        x[j] = 0.5 * x[j] + 0.5 * MAX(x[j] + la * S * MAX(x[j], dl) / s[j] * g[j], 0);
  }
}

/* f = -Phi; g = grad f. */
void recon_ref_lbfgsb(const ReconRefProblem *p, const ReconRefPrior *pr, guint iterations,
                      double *x) {
  enum { MEM = 5, TRIES = 30 };
  guint64 n = p->n;
  g_autofree double *s = g_new(double, n), *g = g_new(double, n), *gp = g_new(double, n),
                    *xp = g_new(double, n), *q = g_new(double, n), *P = g_new(double, n),
                    *t = g_new(double, n), *vs = g_new(double, MEM * n),
                    *vy = g_new(double, MEM * n);
  double rho[MEM], alpha[MEM];
  guint count = 0, head = 0;
  gboolean have_prev = FALSE;
  colsums(p, 0, p->m, s);
  double fx = -recon_ref_objective(p, pr, x);
  for (guint it = 0; it < iterations; it++) {
    recon_ref_objective_gradient(p, pr, -1, x, g);
    for (guint64 j = 0; j < n; j++) g[j] = -g[j];
    recon_ref_precond(p, pr, x, P);
    double dl = delta_of(x, n);
    if (have_prev) {
      double sy = 0;
      for (guint64 j = 0; j < n; j++) {
        vs[head * n + j] = x[j] - xp[j];
        vy[head * n + j] = g[j] - gp[j];
        sy += vs[head * n + j] * vy[head * n + j];
      }
      if (sy > 0 && isfinite(sy)) {
        rho[head] = 1.0 / sy;
        head = (head + 1) % MEM;
        count = MIN(count + 1, MEM);
      } else {
        count = head = 0;
      }
    }
    double gd = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
      for (guint64 j = 0; j < n; j++)
        q[j] = s[j] > 0 && (x[j] > 0 || g[j] < 0) ? g[j] : 0;
      for (guint c = 0; c < count; c++) {
        guint i = (head + MEM - 1 - c) % MEM;
        double d = 0;
        for (guint64 j = 0; j < n; j++) d += vs[i * n + j] * q[j];
        alpha[i] = rho[i] * d;
        for (guint64 j = 0; j < n; j++) q[j] -= alpha[i] * vy[i * n + j];
      }
      for (guint64 j = 0; j < n; j++) q[j] *= P[j];
      for (guint c = count; c-- > 0;) {
        guint i = (head + MEM - 1 - c) % MEM;
        double d = 0;
        for (guint64 j = 0; j < n; j++) d += vy[i * n + j] * q[j];
        for (guint64 j = 0; j < n; j++) q[j] += (alpha[i] - rho[i] * d) * vs[i * n + j];
      }
      gd = 0;
      for (guint64 j = 0; j < n; j++) {
        q[j] = s[j] > 0 && (x[j] > 0 || g[j] < 0) ? -q[j] : 0;
        gd += g[j] * q[j];
      }
      if (gd < 0) break;
      count = head = 0;
    }
    have_prev = FALSE;
    if (!(gd < 0)) continue;
    double step = 1;
    gboolean ok = FALSE;
    for (guint tries = 0; tries < TRIES && !ok; tries++, step *= 0.5) {
      double dec = 0;
      for (guint64 j = 0; j < n; j++) {
        t[j] = bounded(x[j], x[j] + step * q[j], dl);
        dec += g[j] * (t[j] - x[j]);
      }
      double ft = -recon_ref_objective(p, pr, t);
      if (isfinite(ft) && ft <= fx + 1e-4 * dec) {
        fx = ft;
        ok = have_prev = TRUE;
        memcpy(xp, x, n * sizeof *x);
        memcpy(gp, g, n * sizeof *g);
        memcpy(x, t, n * sizeof *x);
      }
    }
    if (!ok) count = head = 0;
  }
}

void recon_ref_abemml(const ReconRefProblem *p, guint iterations, double *x) {
  g_autofree double *s_all = g_new(double, p->n), *s = g_new(double, p->n);
  g_autofree double *t = g_new(double, p->m), *ybar = g_new(double, p->m);
  g_autofree double *c = g_new(double, p->n);
  recon_ref_emission_start(p, c); /* the solver's start value x0; the bound is -x0 */
  double lb = -c[0];
  colsums(p, 0, p->m, s_all);
  for (guint64 i = 0; i < p->m; i++) {
    t[i] = 0;
    for (guint64 j = 0; j < p->n; j++) t[i] += mij(p, i, j) * (s_all[j] > 0 ? lb : 0.0);
  }
  for (guint it = 0; it < iterations; it++)
    for (guint b = 0; b < p->S; b++) {
      guint64 r0 = p->first[b], r1 = p->first[b + 1];
      colsums(p, r0, r1, s);
      model(p, r0, r1, x, ybar);
      memset(c, 0, p->n * sizeof *c);
      for (guint64 i = r0; i < r1; i++) {
        double den = ybar[i - r0] - t[i];
        if (!(den > 0)) continue;
        for (guint64 j = 0; j < p->n; j++) c[j] += mij(p, i, j) * (p->y[i] - t[i]) / den;
      }
      for (guint64 j = 0; j < p->n; j++)
        x[j] = s[j] > 0 ? lb + (x[j] - lb) * c[j] / s[j] : s_all[j] > 0 ? x[j] : 0.0;
    }
}
