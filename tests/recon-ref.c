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
  g_autofree double *ybar = g_new(double, p->m), *s = g_new(double, p->n);
  g_autofree double *bp = g_new(double, p->n);
  for (guint it = 0; it < iterations; it++)
    for (guint b = 0; b < p->S; b++) {
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
        if (s[j] > 0) x[j] += alpha * x[j] / s[j] * (bp[j] - beta / p->S * g[j]);
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
