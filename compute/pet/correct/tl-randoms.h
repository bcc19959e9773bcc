/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Randoms from delayed coincidences, variance-reduced through fan sums.
 *
 * The delayed window records accidental coincidences only, at the rate the prompt window
 * records them. For crystals i and j with singles rates S_i, S_j and coincidence window 2 tau
 * the expected randoms of the pair in an acquisition of T seconds are 2 tau S_i S_j T
 * (Casey & Hoffman 1986), i.e. a product r_ij = s_i s_j of one factor per crystal. The
 * delayed counts D_ij of a pair are few (most are 0 or 1) and as noisy as the randoms
 * themselves; the factors come from the fan sums F_i = sum_j D_ij (every delayed event counts
 * at both its crystals), thousands of counts each. Maximum likelihood for D_ij ~ Poisson(s_i
 * s_j) over the pairs the scanner accepts gives
 *
 *   s_i = F_i / sum_{j in fan(i)} s_j,      fan(i) = the crystals that form an allowed pair with i,
 *
 * solved by the damped fixed point s_i <- sqrt(s_i F_i / sum_{j in fan(i)} s_j) of tl-fansum.h,
 * shared with the normalisation's crystal efficiencies (the same estimate as STIR's
 * randoms-from-delayeds ML singles), so sum_j r_ij over the fan equals F_i.
 * fan(i) follows tl_scanner_pair_allowed (another group, ring difference within the
 * acceptance), so each fan sum costs O(1) through per-ring and per-(group, ring) prefix sums. */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-listmode.h"

G_BEGIN_DECLS

typedef struct {
  guint n_crystals;
  double *factor;        /* s_i (n_crystals); expected randoms of pair (i, j) = s_i s_j */
  guint64 n_delayed;     /* delayed events used (in allowed pairs) */
  guint64 n_outside;     /* delayed events in pairs the scanner does not accept (ignored) */
  double total;          /* sum of s_i s_j over every allowed pair: the expected randoms */
  guint iterations;      /* fixed-point iterations done */
  double max_residual;   /* max_i |s_i fan_i - F_i| / max(F_i, 1) at the end */
  char *source;          /* read from a file (tl_randoms_load): its path; else NULL */
} TlRandoms;

/* The fit from `n` delayed events (crystal pairs; TOF bins ignored) of `scanner`. GError for
 * an id out of range (naming the event and the id) or a scanner whose groups x rings table
 * would exceed 2^26 entries. Zero delayed events give factors 0 (no randoms). */
TL_API TlRandoms *tl_randoms_from_delayeds(const TlScanner *scanner, const TlEvent *delayed, guint64 n,
                                    GError **error);
TL_API void tl_randoms_free(TlRandoms *r);
/* A deep copy (factors and source). */
TL_API TlRandoms *tl_randoms_copy(const TlRandoms *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRandoms, tl_randoms_free)

/* Expected randoms of pair (a, b) over the acquisition: s_a s_b (the caller checks that the
 * pair is allowed; ids must be < n_crystals). */
static inline double tl_randoms_pair(const TlRandoms *r, guint a, guint b) {
  return r->factor[a] * r->factor[b];
}

/* The singles-rate model (Casey & Hoffman 1986): crystals i, j with singles rates S_i, S_j
 * (per second) in a coincidence window 2 tau record 2 tau S_i S_j T randoms in T seconds, the
 * product form with s_i = S_i sqrt(2 tau T). singles: n_crystals rates (TlListmode.singles);
 * GError (naming the value) for a rate that is NaN or negative, a window outside (0, 1000] ns
 * or a duration that is not > 0. source names the data in describe's line. */
TL_API TlRandoms *tl_randoms_from_singles(const TlScanner *scanner, const double *singles,
                                   double window_ns, double duration_s, const char *source,
                                   GError **error);

/* sum of s_i s_j over the pairs the scanner accepts (fan sums: O(crystals)); NAN for an
 * estimate of another crystal count. */
TL_API double tl_randoms_expected_total(const TlRandoms *r, const TlScanner *scanner);

/* The randoms file (tl-randoms-file.c, docs/formats.md): the factors s_i as text, with the
 * scanner's name and the SHA-256 of its key. load refuses (GError naming the file, the line
 * and the value) a file for another scanner, a count beyond TL_SCANNER_MAX_CRYSTALS or not the
 * scanner's, a factor that is NaN, infinite, negative or above 1e150, a truncated or
 * over-long list; source = path, total computed. save writes atomically. */
TL_API TlRandoms *tl_randoms_load(const char *path, const TlScanner *scanner, GError **error);
TL_API gboolean tl_randoms_save(const TlRandoms *r, const TlScanner *scanner, const char *path,
                         GError **error);

/* One line for logs: "randoms from 12345 delayeds: expected 12001.3 in allowed pairs, ...". */
TL_API char *tl_randoms_describe(const TlRandoms *r);

G_END_DECLS
