/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The normalisation estimate from a scan of a known source (tl-norm-estimate.h). */
#include "tl-norm-estimate.h"
#include "pet/correct/tl-norm-private.h"
#include "pet/correct/tl-fansum.h"
#include "pet/correct/tl-attenuation.h"
#include "pet/project/tl-projector.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Estimation */

void tl_norm_estimate_options_init(TlNormEstimateOptions *o) {
  *o = (TlNormEstimateOptions){.axial = TRUE, .transaxial = TRUE, .rounds = 50,
                               .tolerance = 1e-6};
}

typedef struct {
  const TlScanner *sc;
  guint32 N, mrd;
  guint64 pairs;
  const float *y, *p;
  guint R, C, B, D;
  guint32 *ring, *t;  /* per crystal: ring class, transaxial index (0 without C) */
  double *eps, *gax, *gtr;
} Est;

static inline guint est_ax(const Est *e, guint32 a, guint32 b) {
  return e->ring[a] * e->R + e->ring[b];
}

static inline guint est_tr(const Est *e, guint32 a, guint32 b) {
  if (e->C == 0) return 0;
  guint C = e->C, B = e->B, ta = e->t[a], tb = e->t[b];
  guint d = tb >= ta ? tb - ta : tb + C - ta, u = ta % B;
  if (2 * d > C) {
    d = C - d;
    u = tb % B;
  } else if (2 * d == C) {
    u = MIN(ta % B, tb % B);
  }
  return d * B + u;
}

/* The accepted pairs with expected counts > 0, in pair-index order: the body runs with a, b, i
 * (the pair index) and pe = p[i]. */
#define FOR_ACTIVE_PAIRS(e, ...)                                                             \
  for (guint64 p0_ = 0; p0_ < (e)->pairs; p0_ += (e)->N) {                                   \
    guint32 d_ = (guint32)(p0_ / (e)->N) + 1;                                                \
    guint32 m_ = (guint32)MIN((guint64)(e)->N, (e)->pairs - p0_);                            \
    for (guint32 a = 0; a < m_; a++) {                                                       \
      guint64 i = p0_ + a;                                                                   \
      double pe = (e)->p[i];                                                                 \
      if (!(pe > 0)) continue;                                                               \
      guint32 b = a + d_ >= (e)->N ? a + d_ - (e)->N : a + d_;                               \
      if (!tl_norm_pair_ok((e)->sc->crystals, (e)->mrd, a, b)) continue;                             \
      __VA_ARGS__                                                                            \
    }                                                                                        \
  }

/* fan_a = sum_b w_ab eps_b, w_ab = g_ax g_tr p_ab (tl-fansum.h). */
static void est_fans(const double *eps, double *fan, gpointer data) {
  Est *e = data;
  memset(fan, 0, sizeof(double) * e->N);
  FOR_ACTIVE_PAIRS(e, {
    double w = e->gax[est_ax(e, a, b)] * e->gtr[est_tr(e, a, b)] * pe;
    fan[a] += w * eps[b];
    fan[b] += w * eps[a];
  })
}

/* The maximiser of each class factor given the others: sum y / sum (other factors) p over the
 * class; classes without expected counts marked (den = 0). axial: TRUE = g_ax, else g_tr. */
static void est_classes(Est *e, gboolean axial, double *num, double *den) {
  guint nc = axial ? e->R * e->R : e->D * e->B;
  memset(num, 0, sizeof(double) * nc);
  memset(den, 0, sizeof(double) * nc);
  FOR_ACTIVE_PAIRS(e, {
    guint ax = est_ax(e, a, b), tr = est_tr(e, a, b);
    guint c = axial ? ax : tr;
    num[c] += e->y[i];
    den[c] += e->eps[a] * e->eps[b] * (axial ? e->gtr[tr] : e->gax[ax]) * pe;
  })
  if (axial) /* (r, s) and (s, r) are one class */
    for (guint r = 0; r < e->R; r++)
      for (guint s = r + 1; s < e->R; s++) {
        num[r * e->R + s] = num[s * e->R + r] = num[r * e->R + s] + num[s * e->R + r];
        den[r * e->R + s] = den[s * e->R + r] = den[r * e->R + s] + den[s * e->R + r];
      }
}

/* A class factor from fewer expected counts than this is noise (over 10 % standard error):
 * a cylinder's edge classes, where its chords are short, came out at up to 51 with 10^6 counts,
 * and the lines missing the cylinder took that value as their nearest class's, which then
 * weighed the scatter tail fit (found by the window's corrections test). Such classes are
 * filled like empty ones. */
#define NORM_MIN_CLASS_COUNTS 100.0

/* g = num / den; classes without enough data (den < NORM_MIN_CLASS_COUNTS) take the nearest
 * class with enough: the same block position at the nearest radial distance (g_tr), the same
 * ring difference's mean (g_ax), else 1. Returns the number of such classes. */
static guint est_assign(Est *e, gboolean axial, const double *num, const double *den) {
  guint empty = 0;
  const double m = NORM_MIN_CLASS_COUNTS;
  if (!axial) {
    guint B = e->B, D = e->D;
    for (guint c = 0; c < D * B; c++)
      if (den[c] >= m) e->gtr[c] = num[c] / den[c];
    for (guint c = 0; c < D * B; c++) {
      if (den[c] >= m) continue;
      empty++;
      guint d = c / B, u = c % B;
      double v = 1;
      for (guint k = 1; k < D; k++) {
        if (d >= k && den[(d - k) * B + u] >= m) { v = e->gtr[(d - k) * B + u]; break; }
        if (d + k < D && den[(d + k) * B + u] >= m) { v = e->gtr[(d + k) * B + u]; break; }
      }
      e->gtr[c] = v;
    }
    return empty;
  }
  guint R = e->R;
  for (guint c = 0; c < R * R; c++)
    if (den[c] >= m) e->gax[c] = num[c] / den[c];
  for (guint r = 0; r < R; r++)
    for (guint s = r; s < R; s++) {
      if (den[r * R + s] >= m) continue;
      empty++;
      double sum = 0;
      guint cnt = 0;
      for (guint q = 0; q + (s - r) < R; q++)
        if (den[q * R + q + (s - r)] >= m) sum += e->gax[q * R + q + (s - r)], cnt++;
      e->gax[r * R + s] = e->gax[s * R + r] = cnt ? sum / cnt : 1;
    }
  return empty;
}

/* The degeneracies (tl-norm.h): mean eps per ring (with g_ax) and per block position (with
 * g_tr) to 1, by alternate scaling until both hold; without either, the mean eps to 1 (into the
 * single g_ax). */
static void est_gauge(Est *e) {
  guint N = e->N, R = e->R, B = e->B;
  gboolean rings = R > 1, blocks = e->C > 0 && B > 1;
  g_autofree double *m = g_new(double, MAX(R, B) + 1);
  g_autofree guint *cnt = g_new(guint, MAX(R, B) + 1);
  for (int it = 0; it < 100; it++) {
    double worst = 0;
    for (int pass = 0; pass < 2; pass++) {
      gboolean by_ring = pass == 0;
      if (by_ring ? !rings : !blocks) continue;
      guint K = by_ring ? R : B;
      memset(m, 0, sizeof(double) * K);
      memset(cnt, 0, sizeof(guint) * K);
      for (guint i = 0; i < N; i++) {
        guint k = by_ring ? e->ring[i] : e->t[i] % B;
        m[k] += e->eps[i], cnt[k]++;
      }
      for (guint k = 0; k < K; k++) m[k] = cnt[k] && m[k] > 0 ? m[k] / cnt[k] : 1;
      for (guint k = 0; k < K; k++) worst = MAX(worst, fabs(m[k] - 1));
      for (guint i = 0; i < N; i++) e->eps[i] /= m[by_ring ? e->ring[i] : e->t[i] % B];
      if (by_ring) {
        for (guint r = 0; r < R; r++)
          for (guint s = 0; s < R; s++) e->gax[r * R + s] *= m[r] * m[s];
      } else {
        for (guint d = 0; d < e->D; d++)
          for (guint u = 0; u < B; u++) e->gtr[d * B + u] *= m[u] * m[(u + d) % B];
      }
    }
    if (worst < 1e-13) break;
  }
  if (!rings && !blocks) {
    double s = 0;
    for (guint i = 0; i < N; i++) s += e->eps[i];
    double mean = s > 0 ? s / N : 1;
    for (guint i = 0; i < N; i++) e->eps[i] /= mean;
    for (guint c = 0; c < R * R; c++) e->gax[c] *= mean * mean;
  }
}

static double rel_change(const double *now, const double *before, gsize n) {
  double w = 0;
  for (gsize i = 0; i < n; i++)
    if (before[i] > 0 || now[i] > 0) w = MAX(w, fabs(now[i] - before[i]) / MAX(before[i], now[i]));
  return w;
}

/* sum y log ybar - ybar over the active pairs; chi2 = sum (y - ybar)^2 / ybar. */
static double est_loglik(Est *e, double *chi2) {
  double ll = 0, x2 = 0;
  FOR_ACTIVE_PAIRS(e, {
    double yb = e->eps[a] * e->eps[b] * e->gax[est_ax(e, a, b)] * e->gtr[est_tr(e, a, b)] * pe;
    double y = e->y[i];
    if (yb > 0) {
      ll += (y > 0 ? y * log(yb) : 0) - yb;
      x2 += (y - yb) * (y - yb) / yb;
    }
  })
  if (chi2) *chi2 = x2;
  return ll;
}

TlNorm *tl_norm_estimate(const TlScanner *sc, const float *counts, const float *expected,
                         const TlNormEstimateOptions *opt, TlNormReport *report,
                         GError **error) {
  TlNormEstimateOptions o;
  if (opt) o = *opt;
  else tl_norm_estimate_options_init(&o);
  if (!sc || !counts || !expected) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: no %s",
                !sc ? "scanner" : !counts ? "counts" : "expected counts");
    return NULL;
  }
  if (!tl_scanner_validate(sc, error)) return NULL;
  guint64 pairs = tl_pair_count(sc->n_crystals);
  if (pairs > TL_NORM_MAX_PAIRS) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "normalisation estimate: scanner '%s' has %"
                G_GUINT64_FORMAT " crystal pairs, more than the %" G_GUINT64_FORMAT " this holds",
                sc->name, pairs, TL_NORM_MAX_PAIRS);
    return NULL;
  }
  Est e = {.sc = sc, .N = sc->n_crystals, .mrd = sc->max_ring_difference, .pairs = pairs,
           .y = counts, .p = expected};
  tl_norm_layout(sc, o.axial, o.transaxial, &e.R, &e.C, &e.B, &e.D);
  g_autoptr(TlNorm) n = tl_norm_alloc(sc, e.R, e.C, e.B, e.D);
  e.ring = n->ring;
  g_autofree guint32 *t = g_new0(guint32, e.N);
  for (guint i = 0; e.C && i < e.N; i++) t[i] = i % e.C;
  e.t = t;
  guint nax = e.R * e.R, ntr = e.D * e.B;
  g_autofree double *eps = g_new(double, e.N), *gax = g_new(double, nax),
                    *gtr = g_new(double, ntr), *F = g_new0(double, e.N),
                    *fan = g_new(double, e.N);
  e.eps = eps, e.gax = gax, e.gtr = gtr;
  TlNormReport r = {0};
  /* the data: F_i = sum of the counts of crystal i's pairs where the source projects */
  double tot_p = 0;
  for (guint64 p0 = 0; p0 < pairs; p0 += e.N) {
    guint32 d = (guint32)(p0 / e.N) + 1, m = (guint32)MIN((guint64)e.N, pairs - p0);
    for (guint32 a = 0; a < m; a++) {
      guint64 i = p0 + a;
      guint32 b = a + d >= e.N ? a + d - e.N : a + d;
      if (!tl_norm_pair_ok(sc->crystals, e.mrd, a, b)) continue;
      double y = counts[i], pe = expected[i];
      if (!isfinite(y) || y < 0 || !isfinite(pe) || pe < 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: pair (%u, %u): "
                    "%s %g, expected a finite value >= 0", a, b,
                    !isfinite(y) || y < 0 ? "count" : "expected count",
                    !isfinite(y) || y < 0 ? y : pe);
        return NULL;
      }
      if (pe > 0) {
        F[a] += y, F[b] += y;
        r.counts += y;
        r.pairs++;
        tot_p += pe;
      } else {
        r.counts_outside += y;
      }
    }
  }
  if (!(r.counts > 0) || !(tot_p > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "normalisation estimate: %s (%.0f counts "
                "where the source projects; expected some)", tot_p > 0 ? "no counts" :
                "the source projects onto no accepted pair", r.counts);
    return NULL;
  }
  /* start: g = 1 and eps from the fan sums with the mean level of counts over expected */
  for (guint c = 0; c < nax; c++) gax[c] = 1;
  for (guint c = 0; c < ntr; c++) gtr[c] = 1;
  for (guint i = 0; i < e.N; i++) eps[i] = sqrt(r.counts / tot_p);
  g_autofree double *num = g_new(double, MAX(nax, ntr)), *den = g_new(double, MAX(nax, ntr));
  g_autofree double *prev = g_new(double, e.N + nax + ntr);
  gboolean first = TRUE;
  for (r.rounds = 0; r.rounds < MAX(o.rounds, 1);) {
    /* the fan sums only as exactly as the class factors they are solved with: 1e-4 while the
     * classes are still 1 (the first round), then 1 % of the stopping tolerance (each
     * iteration is a pass over every pair: the large scanners' cost) */
    double tol = first ? 1e-4 : CLAMP(0.01 * o.tolerance, 1e-12, 1e-4);
    TlFanSolve fit;
    tl_fan_solve(e.N, F, est_fans, &e, eps, fan, 1000, tol, &fit);
    r.fan_iterations += fit.iterations;
    r.fan_residual = fit.max_residual;
    if (ntr > 1) {
      est_classes(&e, FALSE, num, den);
      r.empty_classes = est_assign(&e, FALSE, num, den);
    }
    est_classes(&e, TRUE, num, den);
    guint empty_ax = est_assign(&e, TRUE, num, den);
    if (ntr > 1) r.empty_classes += empty_ax;
    else r.empty_classes = empty_ax;
    est_gauge(&e);
    r.rounds++;
    double *now = g_new(double, e.N + nax + ntr);
    memcpy(now, eps, sizeof(double) * e.N);
    memcpy(now + e.N, gax, sizeof(double) * nax);
    memcpy(now + e.N + nax, gtr, sizeof(double) * ntr);
    r.max_change = first ? 1.0 : rel_change(now, prev, e.N + nax + ntr);
    memcpy(prev, now, sizeof(double) * (e.N + nax + ntr));
    g_free(now);
    first = FALSE;
    if (o.progress) o.progress(r.rounds, r.max_change, est_loglik(&e, NULL), o.user_data);
    /* done when nothing moves (never after the first round's loose fan sums) */
    if (r.max_change < o.tolerance) break;
  }
  /* the final state's fan residual (the class updates moved the fans since the last solve) */
  est_fans(eps, fan, &e);
  r.fan_residual = 0;
  for (guint i = 0; i < e.N; i++) {
    r.fan_residual = MAX(r.fan_residual, fabs(eps[i] * fan[i] - F[i]) / MAX(F[i], 1.0));
    r.dead_crystals += F[i] == 0;
  }
  double chi2;
  r.loglik = est_loglik(&e, &chi2);
  double params = e.N + (double)e.R * (e.R + 1) / 2 + ntr;
  r.chi2_dof = r.pairs > params ? chi2 / (r.pairs - params) : NAN;
  /* relative: the mean of n over every accepted pair is 1 (into g_ax) */
  double sum = 0;
  guint64 count = 0;
  for (guint64 p0 = 0; p0 < pairs; p0 += e.N) {
    guint32 d = (guint32)(p0 / e.N) + 1, m = (guint32)MIN((guint64)e.N, pairs - p0);
    for (guint32 a = 0; a < m; a++) {
      guint32 b = a + d >= e.N ? a + d - e.N : a + d;
      if (!tl_norm_pair_ok(sc->crystals, e.mrd, a, b)) continue;
      sum += eps[a] * eps[b] * gax[est_ax(&e, a, b)] * gtr[est_tr(&e, a, b)];
      count++;
    }
  }
  double scale = sum > 0 ? count / sum : 1;
  for (guint i = 0; i < e.N; i++) n->efficiency[i] = (float)eps[i];
  for (guint c = 0; c < nax; c++) n->axial[c] = (float)(gax[c] * scale);
  for (guint c = 0; c < ntr; c++) n->transaxial[c] = (float)gtr[c];
  if (report) *report = r;
  if (!tl_norm_update(n, "normalisation estimate", error)) return NULL;
  return g_steal_pointer(&n);
}

char *tl_norm_report_describe(const TlNormReport *r) {
  return g_strdup_printf(
      "normalisation from %.0f counts in %" G_GUINT64_FORMAT " pairs (%.0f counts where the "
      "source projects to 0, ignored): %u rounds (last change %.2e), %u fan-sum iterations "
      "(residual %.1e), chi2/dof %.4f, %u classes without data, %u crystals without counts",
      r->counts, r->pairs, r->counts_outside, r->rounds, r->max_change, r->fan_iterations,
      r->fan_residual, r->chi2_dof, r->empty_classes, r->dead_crystals);
}

float *tl_norm_pair_counts(const TlScanner *sc, const TlEvent *ev, guint64 n, guint64 *outside,
                           GError **error) {
  guint N = sc->n_crystals;
  guint64 pairs = tl_pair_count(N);
  if (pairs > TL_NORM_MAX_PAIRS) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "normalisation: scanner '%s' has %"
                G_GUINT64_FORMAT " crystal pairs, more than the %" G_GUINT64_FORMAT " this holds",
                sc->name, pairs, TL_NORM_MAX_PAIRS);
    return NULL;
  }
  float *c = g_try_new0(float, MAX(pairs, 1));
  if (!c) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "normalisation: no memory for the "
                "counts of %" G_GUINT64_FORMAT " crystal pairs", pairs);
    return NULL;
  }
  guint64 out = 0;
  for (guint64 e = 0; e < n; e++) {
    guint a = ev[e].a, b = ev[e].b;
    if (a >= N || b >= N) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "normalisation: event %" G_GUINT64_FORMAT
                  " has crystal %u, expected below %u (the scanner's crystals)", e, MAX(a, b), N);
      g_free(c);
      return NULL;
    }
    if (!tl_scanner_pair_allowed(sc, a, b)) {
      out++;
      continue;
    }
    c[tl_pair_index(N, a, b)] += 1.0f;
  }
  if (outside) *outside = out;
  return c;
}

gboolean tl_norm_expected(TlContext *ctx, const char *projector, const TlScanner *sc,
                          const TlImage *source, const TlImage *mu, float *out,
                          GError **error) {
  if (!tl_image_check_nonnegative(source, "normalisation source", error) ||
      (mu && !tl_pet_check_attenuation(mu, &source->grid, error)))
    return FALSE;
  guint N = sc->n_crystals;
  guint64 pairs = tl_pair_count(N);
  g_autoptr(TlProjector) proj = tl_projector_new(ctx, projector ? projector : "siddon",
                                                 &source->grid, error);
  g_autoptr(TlStream) s = proj ? tl_stream_new(ctx, error) : NULL;
  g_autoptr(TlArray) cry = s ? tl_scanner_upload(sc, ctx, error) : NULL;
  if (!cry) return FALSE;
  guint64 nv = tl_image_grid_n_voxels(&source->grid);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, error);
  g_autoptr(TlArray) mua = img && mu ? tl_array_new_float(ctx, nv, error) : NULL;
  if (!img || !tl_array_upload(img, source->data, error) ||
      (mu && (!mua || !tl_array_upload(mua, mu->data, error))))
    return FALSE;
  const guint64 chunk = 1 << 22;
  g_autoptr(TlArray) bins = tl_array_new(ctx, chunk, sizeof(TlBin), error);
  g_autoptr(TlArray) f1 = bins ? tl_array_new_float(ctx, chunk, error) : NULL;
  g_autoptr(TlArray) f2 = f1 && mu ? tl_array_new_float(ctx, chunk, error) : NULL;
  if (!f1 || (mu && !f2)) return FALSE;
  g_autofree TlBin *hb = g_new(TlBin, chunk);
  g_autofree guint64 *idx = g_new(guint64, chunk);
  g_autofree float *h1 = g_new(float, chunk), *h2 = g_new(float, chunk);
  memset(out, 0, sizeof(float) * pairs);
  guint64 p = 0;
  while (p < pairs) {
    guint64 m = 0;
    for (; p < pairs && m < chunk; p++) {
      guint a, b;
      tl_pair_decode(N, p, &a, &b);
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      hb[m] = (TlBin){.a = a, .b = b, .count = 1.0f};
      idx[m++] = p;
    }
    if (m == 0) break;
    TlLors l = {.kind = TL_LORS_BINS, .records = bins, .crystals = cry, .first = 0, .count = m};
    if (!tl_array_upload_range(bins, 0, m, hb, error) ||
        !tl_projector_forward(proj, s, &l, img, f1, error) ||
        (mu && !tl_projector_forward(proj, s, &l, mua, f2, error)) ||
        !tl_stream_finish(s, error) || !tl_array_download_range(f1, 0, m, h1, error) ||
        (mu && !tl_array_download_range(f2, 0, m, h2, error)))
      return FALSE;
    for (guint64 j = 0; j < m; j++)
      out[idx[j]] = (float)((double)h1[j] * (mu ? exp(-(double)h2[j]) : 1.0));
  }
  return TRUE;
}
