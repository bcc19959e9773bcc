/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reference priors (prior-ref.h). */
#include "prior-ref.h"
#include <math.h>
#include <string.h>

gboolean tl_ref_prior_kind(const char *name, TlRefPriorKind *kind) {
  static const char *names[] = {"quadratic", "rdp", "tv"};
  for (int k = 0; k < 3; k++)
    if (name && strcmp(name, names[k]) == 0) {
      *kind = (TlRefPriorKind)k;
      return TRUE;
    }
  return FALSE;
}

guint64 tl_ref_prior_n(const TlRefPrior *p) {
  return (guint64)p->dims[0] * p->dims[1] * p->dims[2];
}

/* Calls fn(j, k, w) once for each unordered pair of 26-neighbours, w = 1 / (centre distance in
 * units of the smallest voxel edge): the 13 offsets whose first non-zero component is > 0. */
typedef void (*PairFn)(const TlRefPrior *p, const double *x, guint64 j, guint64 k, double w,
                       void *acc);

static void each_pair(const TlRefPrior *p, const double *x, PairFn fn, void *acc) {
  int n[3] = {(int)p->dims[0], (int)p->dims[1], (int)p->dims[2]};
  double h = fmin(p->voxel_mm[0], fmin(p->voxel_mm[1], p->voxel_mm[2]));
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        if (!(dz > 0 || (dz == 0 && dy > 0) || (dz == 0 && dy == 0 && dx > 0))) continue;
        double ex = dx * p->voxel_mm[0] / h, ey = dy * p->voxel_mm[1] / h,
               ez = dz * p->voxel_mm[2] / h;
        double w = 1.0 / sqrt(ex * ex + ey * ey + ez * ez);
        for (int z = 0; z < n[2]; z++)
          for (int y = 0; y < n[1]; y++)
            for (int xi = 0; xi < n[0]; xi++) {
              int a = xi + dx, b = y + dy, c = z + dz;
              if (a < 0 || a >= n[0] || b < 0 || b >= n[1] || c < 0 || c >= n[2]) continue;
              guint64 j = (guint64)xi + (guint64)n[0] * ((guint64)y + (guint64)n[1] * z);
              guint64 k = (guint64)a + (guint64)n[0] * ((guint64)b + (guint64)n[1] * c);
              fn(p, x, j, k, w, acc);
            }
      }
}

/* Pair potentials V(a, b), one per unordered pair (the header's 1/4 and 1/2 of the double sum
 * over ordered pairs): quadratic 1/2 (a-b)^2, rdp (a-b)^2 / (a + b + gamma |a-b| + eps). */
static double potential(const TlRefPrior *p, double a, double b) {
  double d = a - b;
  if (p->kind == TL_REF_PRIOR_QUADRATIC) return 0.5 * d * d;
  return d * d / (a + b + p->gamma * fabs(d) + p->epsilon);
}

/* dV/da by the quotient rule written out (dV/db is dV/da with a, b swapped: V is symmetric). */
static double potential_da(const TlRefPrior *p, double a, double b) {
  double d = a - b;
  if (p->kind == TL_REF_PRIOR_QUADRATIC) return d;
  double den = a + b + p->gamma * fabs(d) + p->epsilon;
  double dden = 1.0 + p->gamma * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0);
  return (2.0 * d * den - d * d * dden) / (den * den);
}

static void pair_value(const TlRefPrior *p, const double *x, guint64 j, guint64 k, double w,
                       void *acc) {
  *(double *)acc += w * potential(p, x[j], x[k]);
}

static void pair_grad(const TlRefPrior *p, const double *x, guint64 j, guint64 k, double w,
                      void *acc) {
  double *g = acc;
  g[j] += w * potential_da(p, x[j], x[k]);
  g[k] += w * potential_da(p, x[k], x[j]);
}

/* TV: forward differences in mm at voxel (i, j, k), 0 across the far face; idx[4] gets the
 * voxel and its +x, +y, +z neighbours (the voxel itself where there is none). */
static void forward_diff(const TlRefPrior *p, const double *x, int i, int j, int k, double g[3],
                         guint64 idx[4]) {
  guint64 nx = p->dims[0], ny = p->dims[1];
  idx[0] = i + nx * (j + ny * k);
  idx[1] = i + 1 < (int)p->dims[0] ? idx[0] + 1 : idx[0];
  idx[2] = j + 1 < (int)p->dims[1] ? idx[0] + nx : idx[0];
  idx[3] = k + 1 < (int)p->dims[2] ? idx[0] + nx * ny : idx[0];
  for (int a = 0; a < 3; a++) g[a] = (x[idx[a + 1]] - x[idx[0]]) / p->voxel_mm[a];
}

double tl_ref_prior_value(const TlRefPrior *p, const double *x) {
  double r = 0.0;
  if (p->kind != TL_REF_PRIOR_TV) {
    each_pair(p, x, pair_value, &r);
    return r;
  }
  double e = p->epsilon;
  for (guint k = 0; k < p->dims[2]; k++)
    for (guint j = 0; j < p->dims[1]; j++)
      for (guint i = 0; i < p->dims[0]; i++) {
        double g[3];
        guint64 idx[4];
        forward_diff(p, x, (int)i, (int)j, (int)k, g, idx);
        r += sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + e * e) - e;
      }
  return r;
}

void tl_ref_prior_gradient(const double *x, double *out, void *user) {
  const TlRefPrior *p = user;
  guint64 n = tl_ref_prior_n(p);
  memset(out, 0, n * sizeof(double));
  if (p->kind != TL_REF_PRIOR_TV) {
    each_pair(p, x, pair_grad, out);
    return;
  }
  /* d/dx of S = sqrt(|g|^2 + eps^2) is (g / S) . dg/dx; g_a = (x[idx[a+1]] - x[idx[0]]) / v_a,
   * which is identically 0 where idx[a+1] == idx[0] (the far face). */
  for (guint k = 0; k < p->dims[2]; k++)
    for (guint j = 0; j < p->dims[1]; j++)
      for (guint i = 0; i < p->dims[0]; i++) {
        double g[3];
        guint64 idx[4];
        forward_diff(p, x, (int)i, (int)j, (int)k, g, idx);
        double s = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + p->epsilon * p->epsilon);
        for (int a = 0; a < 3; a++) {
          if (idx[a + 1] == idx[0]) continue;
          double c = g[a] / (s * p->voxel_mm[a]);
          out[idx[a + 1]] += c;
          out[idx[0]] -= c;
        }
      }
}
