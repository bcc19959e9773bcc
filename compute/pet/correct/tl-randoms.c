/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Randoms from delayeds by fan sums (see tl-randoms.h). */
#include "tl-randoms.h"
#include "tl-fansum.h"
#include <math.h>
#include <string.h>

#define RANDOMS_MAX_TABLE (1u << 26) /* groups x (rings + 1) prefix sums */
#define RANDOMS_MAX_ITERATIONS 2000
#define RANDOMS_TOLERANCE 1e-10

/* Per-ring and per-(group, ring) prefix sums of s, so that the fan sum of crystal i,
 *   sum over j with group_j != group_i and |ring_j - ring_i| <= d of s_j,
 * is (all rings in the window) - (i's own group in the window). */
typedef struct {
  const TlScanner *scanner;
  guint groups, rings;
  double *ring_prefix;  /* rings + 1 */
  double *group_prefix; /* groups x (rings + 1) */
} Fans;

static void fan_sums(Fans *f, const double *s, double *out) {
  const TlScanner *sc = f->scanner;
  guint R = f->rings, W = R + 1;
  memset(f->ring_prefix, 0, sizeof(double) * W);
  memset(f->group_prefix, 0, sizeof(double) * W * f->groups);
  for (guint i = 0; i < sc->n_crystals; i++) {
    const TlCrystal *c = &sc->crystals[i];
    f->ring_prefix[c->ring + 1] += s[i];
    f->group_prefix[(gsize)c->group * W + c->ring + 1] += s[i];
  }
  for (guint r = 1; r < W; r++) f->ring_prefix[r] += f->ring_prefix[r - 1];
  for (guint g = 0; g < f->groups; g++)
    for (guint r = 1; r < W; r++)
      f->group_prefix[(gsize)g * W + r] += f->group_prefix[(gsize)g * W + r - 1];
  guint d = sc->max_ring_difference;
  for (guint i = 0; i < sc->n_crystals; i++) {
    const TlCrystal *c = &sc->crystals[i];
    guint lo = c->ring > d ? c->ring - d : 0, hi = MIN(R - 1, c->ring + d);
    const double *g = f->group_prefix + (gsize)c->group * W;
    out[i] = (f->ring_prefix[hi + 1] - f->ring_prefix[lo]) - (g[hi + 1] - g[lo]);
  }
}

static void fan_sums_cb(const double *s, double *out, gpointer f) { fan_sums(f, s, out); }

TlRandoms *tl_randoms_from_delayeds(const TlScanner *scanner, const TlEvent *delayed, guint64 n,
                                    GError **error) {
  guint N = scanner->n_crystals, groups = 0, rings = 0;
  for (guint i = 0; i < N; i++) {
    groups = MAX(groups, scanner->crystals[i].group + 1);
    rings = MAX(rings, scanner->crystals[i].ring + 1);
  }
  if ((guint64)groups * (rings + 1) > RANDOMS_MAX_TABLE) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "randoms from delayeds: scanner '%s' has "
                "%u groups x %u rings, more than the %u entries of the fan-sum table",
                scanner->name ? scanner->name : "?", groups, rings, RANDOMS_MAX_TABLE);
    return NULL;
  }
  g_autoptr(TlRandoms) r = g_new0(TlRandoms, 1);
  r->n_crystals = N;
  r->factor = g_new0(double, N);
  g_autofree double *F = g_new0(double, N);
  for (guint64 e = 0; e < n; e++) {
    guint a = delayed[e].a, b = delayed[e].b;
    if (a >= N || b >= N) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms from delayeds: delayed event %"
                  G_GUINT64_FORMAT " has crystal %u, expected below %u (the scanner's crystals)",
                  e, MAX(a, b), N);
      return NULL;
    }
    if (!tl_scanner_pair_allowed(scanner, a, b)) {
      r->n_outside++;
      continue;
    }
    F[a] += 1, F[b] += 1;
    r->n_delayed++;
  }
  if (r->n_delayed == 0) return g_steal_pointer(&r);

  Fans f = {.scanner = scanner, .groups = groups, .rings = rings};
  f.ring_prefix = g_new(double, rings + 1);
  f.group_prefix = g_new(double, (gsize)groups * (rings + 1));
  g_autofree double *fan = g_new(double, N);
  double *s = r->factor, init = 1.0 / sqrt(2.0 * (double)r->n_delayed);
  for (guint i = 0; i < N; i++) s[i] = F[i] * init; /* exact if every pair were allowed */
  TlFanSolve fit;
  tl_fan_solve(N, F, fan_sums_cb, &f, s, fan, RANDOMS_MAX_ITERATIONS, RANDOMS_TOLERANCE, &fit);
  r->iterations = fit.iterations;
  r->max_residual = fit.max_residual;
  double total = 0;
  for (guint i = 0; i < N; i++) total += s[i] * fan[i];
  r->total = 0.5 * total; /* each pair seen from both ends */
  g_free(f.ring_prefix);
  g_free(f.group_prefix);
  return g_steal_pointer(&r);
}

TlRandoms *tl_randoms_copy(const TlRandoms *r) {
  TlRandoms *c = g_memdup2(r, sizeof *r);
  c->factor = g_memdup2(r->factor, sizeof(double) * MAX(r->n_crystals, 1));
  c->source = g_strdup(r->source); /* each copy owns its own: tl_randoms_free frees it */
  return c;
}

void tl_randoms_free(TlRandoms *r) {
  if (!r) return;
  g_free(r->factor);
  g_free(r->source);
  g_free(r);
}

double tl_randoms_expected_total(const TlRandoms *r, const TlScanner *scanner) {
  guint N = scanner->n_crystals, groups = 0, rings = 0;
  for (guint i = 0; i < N; i++) {
    groups = MAX(groups, scanner->crystals[i].group + 1);
    rings = MAX(rings, scanner->crystals[i].ring + 1);
  }
  if (r->n_crystals != N || (guint64)groups * (rings + 1) > RANDOMS_MAX_TABLE) return NAN;
  Fans f = {.scanner = scanner, .groups = groups, .rings = rings};
  f.ring_prefix = g_new(double, rings + 1);
  f.group_prefix = g_new(double, (gsize)groups * (rings + 1));
  g_autofree double *fan = g_new(double, MAX(N, 1));
  fan_sums(&f, r->factor, fan);
  double total = 0;
  for (guint i = 0; i < N; i++) total += r->factor[i] * fan[i];
  g_free(f.ring_prefix);
  g_free(f.group_prefix);
  return 0.5 * total; /* each pair seen from both ends */
}

TlRandoms *tl_randoms_from_singles(const TlScanner *scanner, const double *singles,
                                   double window_ns, double duration_s, const char *source,
                                   GError **error) {
  if (!(window_ns > 0 && window_ns <= 1000) || !(duration_s > 0 && isfinite(duration_s))) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms from singles: coincidence "
                "window %g ns and duration %g s (expected a window in (0, 1000] ns and a "
                "finite duration > 0)", window_ns, duration_s);
    return NULL;
  }
  guint N = scanner->n_crystals;
  double k = sqrt(window_ns * 1e-9 * duration_s);
  g_autoptr(TlRandoms) r = g_new0(TlRandoms, 1);
  r->n_crystals = N;
  r->factor = g_new(double, MAX(N, 1));
  for (guint i = 0; i < N; i++) {
    if (!(singles[i] >= 0 && isfinite(singles[i]))) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms from singles: crystal %u's "
                  "rate %g per second (expected a finite rate >= 0)", i, singles[i]);
      return NULL;
    }
    r->factor[i] = singles[i] * k;
  }
  r->total = tl_randoms_expected_total(r, scanner);
  if (!isfinite(r->total)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "randoms from singles: scanner '%s' has "
                "too many groups x rings for the fan-sum table", scanner->name);
    return NULL;
  }
  r->source = g_strdup_printf("the singles of %s (window %g ns, %g s)",
                              source ? source : "the data", window_ns, duration_s);
  return g_steal_pointer(&r);
}

char *tl_randoms_describe(const TlRandoms *r) {
  if (r->source)
    return g_strdup_printf("randoms from %s: %.6g expected over the accepted pairs", r->source,
                           r->total);
  return g_strdup_printf("randoms from %" G_GUINT64_FORMAT " delayed coincidences (%"
                         G_GUINT64_FORMAT " outside the acceptance, ignored): %.6g expected "
                         "over the accepted pairs; fan-sum fit in %u iterations (residual %.1e)",
                         r->n_delayed, r->n_outside, r->total, r->iterations, r->max_residual);
}
