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

/* The search reconstructs many slices of one row, coarse to fine: the row binned by 4 (a
 * 160-pixel slice for the tooth's 640 costs ~1/16 of the full one), then by 2, then 2 slices
 * at full resolution (the 0.5-px grid's columns around the estimate), whose best S is reported.
 * Each binned level's best is refined by a parabola through the three metrics around it. (Multi-resolution
 * search of an image-metric extremum, after Donath et al. 2006, who score FBP slices of
 * candidate centres by image metrics.) Binning by B maps column c to (c + 0.5) / B - 0.5.
 *
 * Within a level a candidate c = a + k (k an integer) is FBP with the axis at a of the row
 * shifted by k, p'(u) = p(u + k) (edge values repeated), which is exact; candidates lie on a
 * 0.5-pixel grid of the level, so two FDKs (fractional parts 0 and 0.5) serve all of them. */
#define N_LEVELS 3

typedef struct {
  guint bin, nu;
  double frac[2], axis[2];
  TlCtFdk *fdk[2];
  guint n_fdk;
  TlArray *p, *x;
  float *rows, *shifted, *slice;
} Level;

typedef struct {
  TlContext *ctx;
  const TlCtData *d;
  guint row;
  Level lv[N_LEVELS];
  TlCtCentre *out;
} Search;

static void search_clear(Search *se) {
  for (guint l = 0; l < N_LEVELS; l++) {
    Level *L = &se->lv[l];
    for (guint i = 0; i < L->n_fdk; i++) tl_ct_fdk_free(L->fdk[i]);
    tl_array_free(L->p);
    tl_array_free(L->x);
    g_free(L->rows);
    g_free(L->shifted);
    g_free(L->slice);
  }
}

/* The row of every view binned by L->bin (means of bin adjacent columns; a remainder at the
 * right edge is dropped) and the level's device arrays. */
static gboolean level_init(Search *se, Level *L, guint bin, GError **error) {
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views;
  L->bin = bin;
  L->nu = g->det_u / bin;
  L->rows = g_new(float, (gsize)n * L->nu);
  L->shifted = g_new(float, (gsize)n * L->nu);
  L->slice = g_new(float, (gsize)L->nu * L->nu);
  for (guint k = 0; k < n; k++) {
    const float *src = se->d->proj + ((gsize)k * g->det_v + se->row) * g->det_u;
    for (guint j = 0; j < L->nu; j++) {
      double sum = 0;
      for (guint b = 0; b < bin; b++) sum += src[(gsize)j * bin + b];
      L->rows[(gsize)k * L->nu + j] = (float)(sum / bin);
    }
  }
  return (L->p = tl_array_new_float(se->ctx, (guint64)n * L->nu, error)) &&
         (L->x = tl_array_new_float(se->ctx, (guint64)L->nu * L->nu, error));
}

/* S of the level's slice with the axis at binned column cb (a multiple of 0.5). */
static gboolean evaluate(Search *se, Level *L, double cb, double *metric, GError **error) {
  /* one slice of progress each, weighted by its size (a binned one costs less) */
  if (!tl_progress_check("centre of rotation search", error)) return FALSE;
  tl_progress_add_to(tl_progress_current(), (double)L->nu / se->d->geometry->det_u);
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views, nu = L->nu;
  double frac = cb - floor(cb);
  guint i = 0;
  while (i < L->n_fdk && fabs(L->frac[i] - frac) > 1e-9) i++;
  if (i == L->n_fdk) {
    if (i == G_N_ELEMENTS(L->fdk)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "centre search: candidate %g is not on the 0.5-pixel grid", cb);
      return FALSE;
    }
    double a = floor(0.5 * (nu - 1.0)) + frac;
    g_autofree double *m = g_memdup2(g->matrices, 12 * sizeof(double) * n);
    /* binned pixels are bin times wider: u_b = (u + 0.5) / bin - 0.5 */
    double du = L->bin / hypot(m[0], m[1]), dv = 1.0 / fabs(m[6]);
    for (guint k = 0; k < n; k++) {
      double *P = m + 12 * (gsize)k;
      for (int j = 0; j < 4; j++) P[j] = (P[j] + 0.5 * P[8 + j]) / L->bin - 0.5 * P[8 + j];
    }
    double shift = a - m[3] / m[11]; /* the binned axis of view 0 moved to a */
    for (guint k = 0; k < n; k++) {
      double *P = m + 12 * (gsize)k;
      P[3] += shift * P[11];
      P[7] = 0;
    }
    g_autoptr(TlCtGeometry) bg = tl_ct_geometry_new_matrices(TL_CT_PARALLEL, n, nu, 1, m, error);
    if (!bg) return FALSE;
    TlImageGrid grid = tl_image_grid_centred(nu, nu, 1, (float)du, (float)du, (float)dv);
    TlCtFdk *f = tl_ct_fdk_new(se->ctx, bg, &grid, TL_CT_FILTER_RAM_LAK, 0, error);
    if (!f) return FALSE;
    /* S reads the inscribed disc and its neighbours only: the corners (~21 %) are not needed */
    tl_ct_fdk_set_disc(f, TRUE);
    L->frac[i] = frac, L->axis[i] = a, L->fdk[i] = f;
    L->n_fdk++;
  }
  long s = lround(cb - L->axis[i]);
  for (guint k = 0; k < n; k++)
    for (guint u = 0; u < nu; u++) {
      long from = CLAMP((long)u + s, 0L, (long)nu - 1);
      L->shifted[(gsize)k * nu + u] = L->rows[(gsize)k * nu + from];
    }
  g_autoptr(TlStream) st = tl_stream_new(se->ctx, error);
  if (!st || !tl_array_upload(L->p, L->shifted, error) ||
      !tl_ct_fdk_run(L->fdk[i], st, L->p, L->x, error) || !tl_stream_finish(st, error) ||
      !tl_array_download(L->x, L->slice, error))
    return FALSE;
  *metric = tl_ct_slice_sharpness(L->slice, nu, nu);
  se->out->evaluations++;
  return TRUE;
}

/* Scans one level every 0.5 binned px over +-half steps around the full-resolution column
 * `centre` (moved on, at most 4 times, while the best is at an edge) and returns the best,
 * refined by the parabola through its neighbours, in full-resolution columns. */
static gboolean scan_level(Search *se, Level *L, int half, double *centre, GError **error) {
  double guess = round(((*centre + 0.5) / L->bin - 0.5) * 2) / 2;
  double lo = guess - half * 0.5, best_c = guess, best_m = -G_MAXDOUBLE;
  double m[64];
  int best_i = 0;
  g_assert(2 * half + 1 <= (int)G_N_ELEMENTS(m));
  for (int moves = 0; moves < 5; moves++) {
    for (int i = 0; i <= 2 * half; i++) {
      if (!evaluate(se, L, lo + i * 0.5, &m[i], error)) return FALSE;
      if (m[i] > best_m) best_m = m[i], best_c = lo + i * 0.5, best_i = i;
    }
    if ((best_i != 0 && best_i != 2 * half) || moves == 4) break;
    lo = best_c - half * 0.5; /* moves on: the best is now the middle; re-scored, cheap */
    best_m = -G_MAXDOUBLE;
  }
  double cb = best_c;
  if (best_i > 0 && best_i < 2 * half) {
    double den = m[best_i - 1] - 2 * m[best_i] + m[best_i + 1];
    if (den < 0) cb += 0.25 * (m[best_i - 1] - m[best_i + 1]) / den;
  }
  *centre = (cb + 0.5) * L->bin - 0.5;
  return TRUE;
}

static gboolean search_run(Search *se, GError **error) {
  TlCtCentre *out = se->out;
  guint nu = se->d->geometry->det_u;
  double centre = 0.5 * (nu - 1.0);
  if (tl_ct_centre_opposed(se->d, se->row, &out->first_guess, NULL)) centre = out->first_guess;
  /* binned levels while the binned row keeps 64 pixels; the guess is good to a pixel or two,
   * so the coarsest level looks +-4 full px around it (moving on), the next +-1 */
  static const guint bins[N_LEVELS - 1] = {4, 2};
  static const int halves[N_LEVELS - 1] = {2, 1};
  for (guint l = 0; l < N_LEVELS - 1; l++) {
    if (nu / bins[l] < 64) continue;
    if (!level_init(se, &se->lv[l], bins[l], error) ||
        !scan_level(se, &se->lv[l], halves[l], &centre, error))
      return FALSE;
  }
  /* full resolution: the two columns of the 0.5-px grid around the binned levels' estimate
   * (good to about half a pixel: on the tooth the binned levels' peak rounds to 296.0, where
   * the full resolution peaks at 295.5, next to the opposed views' 295.57), or, when it falls on the grid, it and its
   * neighbour towards the opposed views' guess: 2 slices, the better one reported. (A climb
   * from the nearest column took 3-4; a full slice costs as much as 16 binned by 4.) */
  Level *L = &se->lv[N_LEVELS - 1];
  if (!level_init(se, L, 1, error)) return FALSE;
  double toward = isnan(out->first_guess) ? centre : out->first_guess;
  double a = floor(centre * 2) / 2, b = a + 0.5, ma, mb;
  if (centre - a < 1e-6) b = toward < a ? a - 0.5 : a + 0.5;
  if (!evaluate(se, L, a, &ma, error) || !evaluate(se, L, b, &mb, error)) return FALSE;
  out->centre = mb > ma ? b : a;
  out->metric = MAX(ma, mb);
  return TRUE;
}

gboolean tl_ct_centre_search(TlContext *ctx, const TlCtData *d, guint row, TlCtCentre *out,
                             GError **error) {
  *out = (TlCtCentre){.first_guess = NAN};
  if (!need_parallel(d, row, error)) return FALSE;
  Search se = {.ctx = ctx, .d = d, .row = row, .out = out};
  /* about 5 slices binned by 4, 3 by 2, 2 at full size (search_run): ~4.75 full slices */
  tl_progress_begin("centre of rotation search", 4.75);
  gboolean ok = search_run(&se, error);
  tl_progress_end();
  search_clear(&se);
  return ok;
}
