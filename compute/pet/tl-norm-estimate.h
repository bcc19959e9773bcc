/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The normalisation's components (tl-norm.h) estimated by maximum likelihood from a scan of a
 * known source, whose expected counts come from a projector: above pet/project. */
#pragma once
#include "tl-api.h"
#include "pet/correct/tl-norm.h"

G_BEGIN_DECLS

/* tl_norm_estimate holds two floats per crystal pair: at most 2^30 pairs (8 GiB). */
#define TL_NORM_MAX_PAIRS ((guint64)1 << 30)

/* Estimation from a scan of a known source. */
typedef void (*TlNormProgress)(guint round, double max_change, double loglik,
                               gpointer user_data);

typedef struct {
  gboolean axial, transaxial; /* the geometric components fitted (TRUE, TRUE) */
  guint rounds;               /* at most this many alternations (50) */
  double tolerance;           /* stop when no factor changed by more than this in a round (1e-6) */
  TlNormProgress progress;    /* after each round (may be NULL) */
  gpointer user_data;
} TlNormEstimateOptions;

TL_API void tl_norm_estimate_options_init(TlNormEstimateOptions *o);

typedef struct {
  guint rounds;            /* alternations done */
  guint fan_iterations;    /* fan-sum fixed-point iterations over all rounds */
  double max_change;       /* largest relative change of a factor in the last round */
  double fan_residual;     /* max_i |eps_i fan_i - F_i| / max(F_i, 1) at the end */
  double counts;           /* counts in accepted pairs with expected counts > 0 */
  double counts_outside;   /* counts in accepted pairs where the source projects to 0 (ignored) */
  guint64 pairs;           /* accepted pairs with expected counts > 0 */
  double chi2_dof;         /* sum (y - ybar)^2 / ybar over those pairs / (pairs - parameters) */
  double loglik;           /* Poisson log-likelihood sum y log ybar - ybar at the end */
  guint empty_classes;     /* geometric classes with under 100 expected counts (their factor:
                            * the nearest radial class with enough, tl-norm.c) */
  guint dead_crystals;     /* crystals without counts (eps = 0) */
} TlNormReport;

/* Maximum likelihood for counts y_ab ~ Poisson(n_ab p_ab) over the accepted pairs, with p_ab
 * the expected counts of the source without efficiencies (tl_norm_expected): alternates the
 * crystal efficiencies by the fan-sum fixed point of tl-fansum.h (w_ab = g_ax g_tr p_ab),
 * g_tr(c) = sum_{ab in c} y_ab / sum_{ab in c} eps_a eps_b g_ax p_ab, and g_ax likewise (each
 * the exact maximiser given the others, so the likelihood never decreases), then fixes the
 * degeneracies (header comment). counts and expected: tl_pair_count(n_crystals) floats indexed
 * by tl_pair_index (pairs the scanner does not accept are ignored). report may be NULL. */
TL_API TlNorm *tl_norm_estimate(const TlScanner *scanner, const float *counts, const float *expected,
                         const TlNormEstimateOptions *opt, TlNormReport *report,
                         GError **error);
/* One paragraph for logs. */
TL_API char *tl_norm_report_describe(const TlNormReport *r);

/* Counts per pair (tl_pair_count floats, tl_pair_index order) of `n` events; events outside
 * the acceptance are counted in *outside (may be NULL) and left out. GError for an id out of
 * range or more than TL_NORM_MAX_PAIRS pairs. */
TL_API float *tl_norm_pair_counts(const TlScanner *scanner, const TlEvent *events, guint64 n,
                           guint64 *outside, GError **error);
/* Expected counts per pair of `source` (activity per voxel) with Tomolab's projector
 * `projector` ("siddon", "joseph", "tor"): p_ab = exp(-(A mu)_ab) (A source)_ab over every
 * accepted pair on the device (mu may be NULL; on the source's grid), in tl_pair_index order
 * into out (tl_pair_count floats; pairs not accepted get 0). */
TL_API gboolean tl_norm_expected(TlContext *ctx, const char *projector, const TlScanner *scanner,
                          const TlImage *source, const TlImage *mu, float *out,
                          GError **error);

G_END_DECLS
