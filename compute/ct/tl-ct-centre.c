/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Centre-of-rotation search (tl-ct-centre.h): opposed-view registration, then the sharpness
 * of FBP slices over candidate centres. */
#include "tl-ct-centre.h"
#include "tl-progress.h"
#include "tl-ct-fdk.h"
#include <math.h>
#include <string.h>

double tl_ct_slice_sharpness(const float *f, guint nx, guint ny) {
  double cx = 0.5 * (nx - 1.0), cy = 0.5 * (ny - 1.0), r = 0.5 * MIN(nx, ny) - 2.0;
  double sum = 0, sum2 = 0;
  guint64 count = 0;
  for (guint y = 1; y + 1 < ny; y++)
    for (guint x = 1; x + 1 < nx; x++) {
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) > r * r) continue;
      gsize i = (gsize)y * nx + x;
      double gx = 0.5 * ((double)f[i + 1] - f[i - 1]), gy = 0.5 * ((double)f[i + nx] - f[i - nx]);
      double m = sqrt(gx * gx + gy * gy);
      sum += m, sum2 += m * m, count++;
    }
  if (count == 0) return 0;
  double mean = sum / count;
  return sum2 / count - mean * mean;
}

double tl_ct_geometry_axis_u(const TlCtGeometry *g) {
  const double *P = tl_ct_geometry_matrix(g, 0);
  return P[3] / P[11];
}

gboolean tl_ct_geometry_shift_u(TlCtGeometry *g, double delta, GError **error) {
  if (!isfinite(delta) || fabs(delta) > 1e6) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre shift of %g pixels: expected a finite value below 1e6", delta);
    return FALSE;
  }
  for (guint k = 0; k < g->n_views; k++) {
    double *P = g->matrices + 12 * (gsize)k;
    for (int i = 0; i < 4; i++) P[i] += delta * P[8 + i];
  }
  return tl_ct_geometry_validate(g, error);
}

static gboolean need_parallel(const TlCtData *d, guint row, GError **error) {
  if (d->geometry->beam != TL_CT_PARALLEL) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation search: parallel beam only (this scan is cone beam: its "
                "geometry places the detector)");
    return FALSE;
  }
  if (row >= d->geometry->det_v) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation search: row %u, the detector has %u rows", row,
                d->geometry->det_v);
    return FALSE;
  }
  return TRUE;
}

/* Parallel beam about z: e_u = (-sin t, cos t, 0) is the first row of P times the pixel size. */
static double view_angle(const TlCtGeometry *g, guint k) {
  const double *P = tl_ct_geometry_matrix(g, k);
  return atan2(-P[0], P[1]);
}

gboolean tl_ct_centre_opposed(const TlCtData *d, guint row, double *centre, GError **error) {
  if (!need_parallel(d, row, error)) return FALSE;
  const TlCtGeometry *g = d->geometry;
  guint a = 0, b = 0;
  double best = G_MAXDOUBLE;
  for (guint i = 0; i < g->n_views; i++)
    for (guint j = 0; j < g->n_views; j++) {
      double diff = remainder(view_angle(g, j) - view_angle(g, i) - G_PI, 2 * G_PI);
      if (fabs(diff) < best) best = fabs(diff), a = i, b = j;
    }
  if (best > 2 * G_PI / 180) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation: no two views are 180 +- 2 deg apart (closest: %g deg off)",
                best * 180 / G_PI);
    return FALSE;
  }
  guint n = g->det_u;
  const float *p = d->proj + ((gsize)a * g->det_v + row) * n;
  const float *q = d->proj + ((gsize)b * g->det_v + row) * n;
  /* q(u) = p(s - u), s = 2c; the axis is looked for in the middle half of the detector */
  guint s_lo = n / 2, s_hi = n + n / 2 - 1;
  g_autofree double *cost = g_new(double, s_hi + 2);
  guint s_best = s_lo;
  for (guint s = s_lo; s <= s_hi; s++) {
    double sum = 0;
    guint count = 0;
    for (guint u = s >= n ? s - n + 1 : 0; u < n && u <= s; u++) {
      double e = (double)q[u] - p[s - u];
      sum += e * e, count++;
    }
    cost[s] = count ? sum / count : G_MAXDOUBLE;
    if (cost[s] < cost[s_best]) s_best = s;
  }
  double s = s_best;
  if (s_best > s_lo && s_best < s_hi) {
    double cm = cost[s_best - 1], c0 = cost[s_best], cp = cost[s_best + 1];
    double den = cm - 2 * c0 + cp;
    if (den > 0) s += 0.5 * (cm - cp) / den;
  }
  *centre = 0.5 * s;
  return TRUE;
}

float *tl_ct_centre_slice(TlContext *ctx, const TlCtData *d, guint row, double centre,
                          GError **error) {
  if (!need_parallel(d, row, error)) return NULL;
  const TlCtGeometry *g = d->geometry;
  if (!isfinite(centre) || centre < -1.0 * g->det_u || centre > 2.0 * g->det_u) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation %g: expected a column near the detector's 0 .. %u", centre,
                g->det_u - 1);
    return NULL;
  }
  /* one detector row: v' = v - (its row), a slice of voxels at the height projecting on it;
   * with rotation about z, row 1 of P is (0, 0, 1 / dv, c_v), so v' = z / dv and the slice
   * sits at z = 0 */
  guint n = g->n_views, nu = g->det_u;
  g_autofree double *m = g_memdup2(g->matrices, 12 * sizeof(double) * n);
  double du = 1.0 / hypot(m[0], m[1]), dv = 1.0 / fabs(m[6]);
  double shift = centre - tl_ct_geometry_axis_u(g);
  for (guint k = 0; k < n; k++) {
    double *P = m + 12 * (gsize)k;
    P[3] += shift * P[11];
    P[7] = 0;
  }
  g_autoptr(TlCtGeometry) one = tl_ct_geometry_new_matrices(TL_CT_PARALLEL, n, nu, 1, m, error);
  if (!one) return NULL;
  g_autofree float *rows = g_new(float, (gsize)n * nu);
  for (guint k = 0; k < n; k++)
    memcpy(rows + (gsize)k * nu, d->proj + ((gsize)k * g->det_v + row) * nu, nu * sizeof(float));
  TlImageGrid grid = tl_image_grid_centred(nu, nu, 1, (float)du, (float)du, (float)dv);
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new(ctx, one, &grid, TL_CT_FILTER_RAM_LAK, 0, error);
  g_autoptr(TlArray) p = f ? tl_array_new_float(ctx, (guint64)n * nu, error) : NULL;
  g_autoptr(TlArray) x = p ? tl_array_new_float(ctx, (guint64)nu * nu, error) : NULL;
  g_autoptr(TlStream) s = x ? tl_stream_new(ctx, error) : NULL;
  if (!s || !tl_array_upload(p, rows, error)) return NULL;
  g_autofree float *slice = g_new(float, (gsize)nu * nu);
  if (!tl_ct_fdk_run(f, s, p, x, error) || !tl_stream_finish(s, error) ||
      !tl_array_download(x, slice, error))
    return NULL;
  return g_steal_pointer(&slice);
}

/* The search reconstructs many slices of one row: building an FDK (its pipelines) per
 * candidate would dominate. A candidate c = a + s with s an integer is FBP with the axis at a
 * of the row shifted by s, p'(u) = p(u + s) (edge values repeated), which is exact; so one FDK
 * per fractional part of c (a = that part + an integer near the middle) serves every
 * candidate with that part. */
typedef struct {
  TlContext *ctx;
  const TlCtData *d;
  guint row;
  double frac[8];
  double axis[8];
  TlCtFdk *fdk[8];
  guint n_fdk;
  TlArray *p, *x;
  float *rows, *shifted, *slice;
  TlCtCentre *out;
} Search;

static void search_clear(Search *se) {
  for (guint i = 0; i < se->n_fdk; i++) tl_ct_fdk_free(se->fdk[i]);
  tl_array_free(se->p);
  tl_array_free(se->x);
  g_free(se->rows);
  g_free(se->shifted);
  g_free(se->slice);
}

static gboolean evaluate(Search *se, double c, double *metric, GError **error) {
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views, nu = g->det_u;
  double frac = c - floor(c);
  guint i = 0;
  while (i < se->n_fdk && fabs(se->frac[i] - frac) > 1e-9) i++;
  if (i == se->n_fdk) {
    if (i == G_N_ELEMENTS(se->fdk)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "centre search: too many fractions");
      return FALSE;
    }
    double a = floor(0.5 * (nu - 1.0)) + frac;
    g_autofree double *m = g_memdup2(g->matrices, 12 * sizeof(double) * n);
    double du = 1.0 / hypot(m[0], m[1]), dv = 1.0 / fabs(m[6]);
    double shift = a - tl_ct_geometry_axis_u(g);
    for (guint k = 0; k < n; k++) {
      double *P = m + 12 * (gsize)k;
      P[3] += shift * P[11];
      P[7] = 0;
    }
    g_autoptr(TlCtGeometry) one = tl_ct_geometry_new_matrices(TL_CT_PARALLEL, n, nu, 1, m, error);
    TlImageGrid grid = tl_image_grid_centred(nu, nu, 1, (float)du, (float)du, (float)dv);
    TlCtFdk *f = one ? tl_ct_fdk_new(se->ctx, one, &grid, TL_CT_FILTER_RAM_LAK, 0, error) : NULL;
    if (!f) return FALSE;
    se->frac[i] = frac, se->axis[i] = a, se->fdk[i] = f;
    se->n_fdk++;
  }
  long s = lround(c - se->axis[i]);
  for (guint k = 0; k < n; k++)
    for (guint u = 0; u < nu; u++) {
      long from = CLAMP((long)u + s, 0L, (long)nu - 1);
      se->shifted[(gsize)k * nu + u] = se->rows[(gsize)k * nu + from];
    }
  g_autoptr(TlStream) st = tl_stream_new(se->ctx, error);
  if (!st || !tl_array_upload(se->p, se->shifted, error) ||
      !tl_ct_fdk_run(se->fdk[i], st, se->p, se->x, error) || !tl_stream_finish(st, error) ||
      !tl_array_download(se->x, se->slice, error))
    return FALSE;
  *metric = tl_ct_slice_sharpness(se->slice, nu, nu);
  se->out->evaluations++;
  return TRUE;
}

static gboolean search_run(Search *se, GError **error) {
  TlCtCentre *out = se->out;
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views, nu = g->det_u;
  se->rows = g_new(float, (gsize)n * nu);
  se->shifted = g_new(float, (gsize)n * nu);
  se->slice = g_new(float, (gsize)nu * nu);
  for (guint k = 0; k < n; k++)
    memcpy(se->rows + (gsize)k * nu, se->d->proj + ((gsize)k * g->det_v + se->row) * nu,
           nu * sizeof(float));
  if (!(se->p = tl_array_new_float(se->ctx, (guint64)n * nu, error)) ||
      !(se->x = tl_array_new_float(se->ctx, (guint64)nu * nu, error)))
    return FALSE;
  double guess = 0.5 * (nu - 1.0);
  if (tl_ct_centre_opposed(se->d, se->row, &out->first_guess, NULL)) guess = out->first_guess;
  guess = round(guess * 2) / 2;
  /* coarse: +-TL_CT_CENTRE_HALF_WINDOW px every 0.5 px, moved on (at most 4 times) while the
   * best is at an edge */
  const int half = (int)(2 * TL_CT_CENTRE_HALF_WINDOW);
  double best_c = guess, best_m = -G_MAXDOUBLE;
  double lo = guess - half * 0.5;
  /* a slice per candidate (the tooth: about 30 s on lavapipe); the total grows by a window
   * when the search moves on */
  double total = 2 * half + 3;
  tl_progress_set_total(total);
  for (int moves = 0; moves < 4; moves++) {
    int best_i = -1;
    if (moves > 0) tl_progress_set_total(total += 2 * half + 1);
    for (int i = 0; i <= 2 * half; i++) {
      double c = lo + i * 0.5, m;
      if (!tl_progress_check("centre of rotation search", error) || !evaluate(se, c, &m, error))
        return FALSE;
      tl_progress_add_to(tl_progress_current(), 1);
      if (m > best_m) best_m = m, best_c = c, best_i = i;
    }
    if (best_i != 0 && best_i != 2 * half) break;
    lo = best_c - half * 0.5;
  }
  /* fine: +-0.25 around the best */
  double centre = best_c;
  for (int sgn = -1; sgn <= 1; sgn += 2) {
    double c = centre + sgn * 0.25, m;
    if (!evaluate(se, c, &m, error)) return FALSE;
    tl_progress_add_to(tl_progress_current(), 1);
    if (m > best_m) best_m = m, best_c = c;
  }
  out->centre = best_c;
  out->metric = best_m;
  return TRUE;
}

gboolean tl_ct_centre_search(TlContext *ctx, const TlCtData *d, guint row, TlCtCentre *out,
                             GError **error) {
  *out = (TlCtCentre){.first_guess = NAN};
  if (!need_parallel(d, row, error)) return FALSE;
  Search se = {.ctx = ctx, .d = d, .row = row, .out = out};
  tl_progress_begin("centre of rotation search", 0);
  gboolean ok = search_run(&se, error);
  tl_progress_end();
  search_clear(&se);
  return ok;
}
