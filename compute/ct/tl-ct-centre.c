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
 * 0.5-pixel grid of the level, so FDKs with two axes (fractional parts 0 and 0.5) serve all of
 * them. The candidates of one scan are reconstructed together: those sharing a fractional part
 * are the rows of one FDK (parallel beam: row r is slice r), and the scan is one submission
 * and one wait. One slice per submission, each with its own upload, finish and download, kept
 * the device idle between slices; on 2 shared cores the waits cost more wall time than the
 * slices (bench/README.md, bench/ct-tooth). The projections and slices live in host-visible
 * arrays: written and read in place, with no staging copies (a search's data are small). */
#define N_LEVELS 3
#define MAX_BATCHES 6
#define MAX_CANDIDATES 64

/* The FDK of `rows` candidates sharing the fractional part `frac`, with its arrays. */
typedef struct {
  double frac, axis;
  guint rows;
  guint slice_of_row[MAX_CANDIDATES];
  TlCtFdk *fdk;
  TlArray *p, *x;
} Batch;

typedef struct {
  guint bin, nu;
  Batch b[MAX_BATCHES];
  guint n_b;
  float *rows;
} Level;

typedef struct {
  TlContext *ctx;
  const TlCtData *d;
  guint row;
  Level lv[N_LEVELS];
  TlStream *stream;
  TlCtCentre *out;
} Search;

static void search_clear(Search *se) {
  for (guint l = 0; l < N_LEVELS; l++) {
    Level *L = &se->lv[l];
    for (guint i = 0; i < L->n_b; i++) {
      tl_ct_fdk_free(L->b[i].fdk);
      tl_array_free(L->b[i].p);
      tl_array_free(L->b[i].x);
    }
    g_free(L->rows);
  }
  tl_stream_free(se->stream);
}

/* The row of every view binned by L->bin (means of bin adjacent columns; a remainder at the
 * right edge is dropped). */
static void level_init(Search *se, Level *L, guint bin) {
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views;
  L->bin = bin;
  L->nu = g->det_u / bin;
  L->rows = g_new(float, (gsize)n * L->nu);
  for (guint k = 0; k < n; k++) {
    const float *src = se->d->proj + ((gsize)k * g->det_v + se->row) * g->det_u;
    for (guint j = 0; j < L->nu; j++) {
      double sum = 0;
      for (guint b = 0; b < bin; b++) sum += src[(gsize)j * bin + b];
      L->rows[(gsize)k * L->nu + j] = (float)(sum / bin);
    }
  }
}

/* The level's FDK for `rows` candidates of fractional part `frac` (made on first use). */
static Batch *level_batch(Search *se, Level *L, double frac, guint rows, GError **error) {
  for (guint i = 0; i < L->n_b; i++)
    if (fabs(L->b[i].frac - frac) < 1e-9 && L->b[i].rows == rows) return &L->b[i];
  if (L->n_b == MAX_BATCHES) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre search: more than %d candidate batches in one level", MAX_BATCHES);
    return NULL;
  }
  const TlCtGeometry *g = se->d->geometry;
  guint n = g->n_views, nu = L->nu;
  double a = floor(0.5 * (nu - 1.0)) + frac;
  g_autofree double *m = g_memdup2(g->matrices, 12 * sizeof(double) * n);
  /* binned pixels are bin times wider: u_b = (u + 0.5) / bin - 0.5 */
  double du = L->bin / hypot(m[0], m[1]), dv = 1.0 / fabs(m[6]);
  for (guint k = 0; k < n; k++) {
    double *P = m + 12 * (gsize)k;
    for (int j = 0; j < 4; j++) P[j] = (P[j] + 0.5 * P[8 + j]) / L->bin - 0.5 * P[8 + j];
  }
  double shift = a - m[3] / m[11]; /* the binned axis of view 0 moved to a */
  /* row 1 of P is (0, 0, +-1 / dv, c_v) (rotation about z): c_v = (rows - 1) / 2 puts the
   * centred grid's slice j on a row's centre */
  for (guint k = 0; k < n; k++) {
    double *P = m + 12 * (gsize)k;
    P[3] += shift * P[11];
    P[7] = 0.5 * (rows - 1.0) * P[11];
  }
  Batch *B = &L->b[L->n_b];
  *B = (Batch){.frac = frac, .axis = a, .rows = rows};
  for (guint j = 0; j < rows; j++) {
    double z = (j - 0.5 * (rows - 1.0)) * dv;
    long r = lround((m[6] * z + m[7]) / m[11]);
    if (r < 0 || r >= (long)rows) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "centre search: slice %u projects onto row %ld of %u (the geometry does not "
                  "rotate about z)", j, r, rows);
      return NULL;
    }
    B->slice_of_row[r] = j;
  }
  g_autoptr(TlCtGeometry) bg =
      tl_ct_geometry_new_matrices(TL_CT_PARALLEL, n, nu, rows, m, error);
  if (!bg) return NULL;
  TlImageGrid grid = tl_image_grid_centred(nu, nu, rows, (float)du, (float)du, (float)dv);
  /* the ramp by exact convolution: on one row per candidate it costs as little as the FFT
   * (the back projection is ~99 % of a slice), and its plan is one pipeline where VkFFT's
   * takes 3x the CPU and a few waits (bench/README.md, bench/ct-tooth) */
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new_full(se->ctx, bg, &grid, TL_CT_FILTER_RAM_LAK,
                                            TL_CT_RAMP_SPATIAL, 0, error);
  if (!f) return NULL;
  /* S reads the inscribed disc and its neighbours only: the corners (~21 %) are not needed */
  tl_ct_fdk_set_disc(f, TRUE);
  g_autoptr(TlArray) p = tl_array_new_host(se->ctx, (guint64)n * rows * nu, 4, FALSE, error);
  g_autoptr(TlArray) x = p ? tl_array_new_host(se->ctx, (guint64)nu * nu * rows, 4, TRUE, error)
                           : NULL;
  if (!x) return NULL;
  B->fdk = g_steal_pointer(&f), B->p = g_steal_pointer(&p), B->x = g_steal_pointer(&x);
  L->n_b++;
  return B;
}

/* S of the level's slices with the axis at binned columns cb[0 .. nc) (multiples of 0.5). */
static gboolean evaluate(Search *se, Level *L, const double *cb, guint nc, double *metric,
                         GError **error) {
  if (!tl_progress_check("centre of rotation search", error)) return FALSE;
  guint n = se->d->geometry->n_views, nu = L->nu;
  guint which[MAX_CANDIDATES], count[2] = {0, 0}, at[MAX_CANDIDATES];
  g_assert(nc <= MAX_CANDIDATES);
  for (guint i = 0; i < nc; i++) {
    double frac = cb[i] - floor(cb[i]);
    if (fabs(frac) > 1e-9 && fabs(frac - 0.5) > 1e-9) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "centre search: candidate %g is not on the 0.5-pixel grid", cb[i]);
      return FALSE;
    }
    which[i] = frac > 0.25;
    at[i] = count[which[i]]++;
  }
  Batch *B[2] = {NULL, NULL};
  for (guint w = 0; w < 2; w++) {
    if (!count[w]) continue;
    if (!(B[w] = level_batch(se, L, 0.5 * w, count[w], error))) return FALSE;
  }
  for (guint i = 0; i < nc; i++) {
    Batch *b = B[which[i]];
    float *p = tl_array_map(b->p);
    long s = lround(cb[i] - b->axis);
    for (guint k = 0; k < n; k++) {
      float *dst = p + ((gsize)k * b->rows + at[i]) * nu;
      const float *src = L->rows + (gsize)k * nu;
      for (guint u = 0; u < nu; u++) dst[u] = src[CLAMP((long)u + s, 0L, (long)nu - 1)];
    }
  }
  for (guint w = 0; w < 2; w++)
    if (B[w] && !tl_ct_fdk_run(B[w]->fdk, se->stream, B[w]->p, B[w]->x, error)) return FALSE;
  if (!tl_stream_finish(se->stream, error)) return FALSE;
  /* one slice of progress each, weighted by its size (a binned one costs less), once done */
  tl_progress_add_to(tl_progress_current(), (double)nc * L->nu / se->d->geometry->det_u);
  for (guint i = 0; i < nc; i++) {
    Batch *b = B[which[i]];
    const float *x = tl_array_map(b->x);
    metric[i] = tl_ct_slice_sharpness(x + (gsize)b->slice_of_row[at[i]] * nu * nu, nu, nu);
  }
  se->out->evaluations += nc;
  return TRUE;
}

/* Scans one level every 0.5 binned px over +-half steps around the full-resolution column
 * `centre` (moved on, at most 4 times, while the best is at an edge) and returns the best,
 * refined by the parabola through its neighbours, in full-resolution columns. */
static gboolean scan_level(Search *se, Level *L, int half, double *centre, GError **error) {
  double guess = round(((*centre + 0.5) / L->bin - 0.5) * 2) / 2;
  double lo = guess - half * 0.5, best_c = guess, best_m = -G_MAXDOUBLE;
  double m[MAX_CANDIDATES], c[MAX_CANDIDATES];
  int best_i = 0;
  g_assert(2 * half + 1 <= (int)G_N_ELEMENTS(m));
  for (int moves = 0; moves < 5; moves++) {
    for (int i = 0; i <= 2 * half; i++) c[i] = lo + i * 0.5;
    if (!evaluate(se, L, c, 2 * half + 1, m, error)) return FALSE;
    for (int i = 0; i <= 2 * half; i++)
      if (m[i] > best_m) best_m = m[i], best_c = c[i], best_i = i;
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
    level_init(se, &se->lv[l], bins[l]);
    if (!scan_level(se, &se->lv[l], halves[l], &centre, error)) return FALSE;
  }
  /* full resolution: the two columns of the 0.5-px grid around the binned levels' estimate
   * (good to about half a pixel: on the tooth the binned levels' peak rounds to 296.0, where
   * the full resolution peaks at 295.5, next to the opposed views' 295.57), or, when it falls on the grid, it and its
   * neighbour towards the opposed views' guess: 2 slices, the better one reported. (A climb
   * from the nearest column took 3-4; a full slice costs as much as 16 binned by 4.) */
  Level *L = &se->lv[N_LEVELS - 1];
  level_init(se, L, 1);
  double toward = isnan(out->first_guess) ? centre : out->first_guess;
  double c[2], m[2];
  c[0] = floor(centre * 2) / 2, c[1] = c[0] + 0.5;
  if (centre - c[0] < 1e-6) c[1] = toward < c[0] ? c[0] - 0.5 : c[0] + 0.5;
  if (!evaluate(se, L, c, 2, m, error)) return FALSE;
  out->centre = m[1] > m[0] ? c[1] : c[0];
  out->metric = MAX(m[0], m[1]);
  return TRUE;
}

gboolean tl_ct_centre_search(TlContext *ctx, const TlCtData *d, guint row, TlCtCentre *out,
                             GError **error) {
  *out = (TlCtCentre){.first_guess = NAN};
  if (!need_parallel(d, row, error)) return FALSE;
  Search se = {.ctx = ctx, .d = d, .row = row, .out = out};
  if (!(se.stream = tl_stream_new(ctx, error))) return FALSE;
  /* a batch is up to two full slices: a cancel also stops it between its submissions */
  tl_stream_set_cancellable(se.stream, tl_progress_cancellable());
  /* about 5 slices binned by 4, 3 by 2, 2 at full size (search_run): ~4.75 full slices */
  tl_progress_begin("centre of rotation search", 4.75);
  gboolean ok = search_run(&se, error);
  tl_progress_end();
  search_clear(&se);
  return ok;
}
