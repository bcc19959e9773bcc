/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET system matrices as TlOperator classes (recon/tl-operator.h): "pet-listmode" (one
 * datum per recorded event, count 1) and "pet-binned" (one datum per stored crystal-pair bin,
 * its count). Both model
 *
 *   ybar = D A x (+ a, held by the problem)
 *
 * with A the projector's weights a_jn (tl-projector.h: Siddon, Joseph, TOR; TOF list mode)
 * and D per-record factors applied inside the kernels (TL_OPERATOR_NATIVE_DIAG: D reaches
 * them as TlLors.atten): D_j = n_j a_j, with a mu-map a_j = exp(-A mu)_j (van Gendt et al. 2021
 * eq. 6),
 * computed once per dataset at creation, and with a normalisation n_j its factor of record
 * j's crystal pair (tl-norm.h), both set with tl_operator_set_diag.
 *
 * Subsets and data order (the data vector IS the stored record order, so whole-vector arrays
 * such as D index records directly):
 *   list mode  event j belongs to subset j mod S (interleaved: each subset a 1/S sample of the
 *              acquisition); subsets stored one after the other, within a subset events grouped
 *              by dominant axis in pieces of 2^20 (the sums do not depend on the order);
 *   binned     bin (a, b) belongs to subset tl_pair_index(a, b) mod S, subsets one after the
 *              other, each sorted by pair index.
 * Both store each record's crystals in the orientation tl_pair_decode gives its pair (the one
 * the sensitivity traces), the TOF bin mirrored where they were swapped: a ray's walk may put a
 * line lying on a voxel plane on either side by direction, so one pair is projected one way.
 * Sensitivity (column sums of D_s A_s over every pair the scanner could record, van Gendt et al.
 * 2021 eq. 7
 * with n_j a_j): list mode s / S with s the all-pairs image (each subset a 1/S sample);
 * binned the subset's own pairs (p mod S = s, Chou et al. 2012 eq. 4). Images are computed on first
 * use, cached on disk as tl-sensitivity.c does (the mu-map's and the normalisation's hashes in
 * the key), and kept. They use the attenuation and normalisation of the options only: factors
 * later set or combined with tl_operator_set_diag are not known for unrecorded pairs and do
 * not enter. */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/project/tl-projector.h"
#include "pet/correct/tl-randoms.h"
#include "pet/correct/tl-sss.h"
#include "pet/correct/tl-attenuation.h"

G_BEGIN_DECLS

typedef struct {
  const char *projector;     /* "siddon" (NULL = this), "joseph" or "tor" */
  TlProjectorParams params;  /* tor_fwhm_mm */
  guint subsets;             /* S in 1..1000 */
  TlScatter scatter;         /* back projection: float atomics or CAS */
  /* Time of flight (list mode only; GError for binned data or data without TOF bins):
   * tof_n_sigma is the truncation in sigmas (<= 0: TL_TOF_N_SIGMA). The sensitivity stays the
   * non-TOF one (the bins of a pair sum to its non-TOF weights). */
  gboolean tof;
  double tof_n_sigma;
  /* mu-map in mm^-1 on the operator's grid, or NULL: checked (tl_pet_check_attenuation),
   * used at creation for D and by the sensitivity images; not kept by reference. */
  const TlImage *attenuation;
  /* Normalisation (tl-norm.h) or NULL: made for the data's scanner (else a GError naming
   * both), copied at creation; each record's D gains its pair's n, and the sensitivity images
   * weigh every pair by n (van Gendt et al. 2021 eq. 7 with n_j a_j). */
  const TlNorm *norm;
  gboolean use_cache;        /* sensitivity images cached on disk */
  /* Distributed list mode (docs/scale.md): this process's share of the sensitivity is the
   * pairs p with p mod parts = part (the shares of 0..parts-1 sum to the all-pairs image);
   * parts 0 or 1 = every pair. Binned operators refuse parts > 1. */
  guint parts, part;
  /* List mode, sens_chunks > 1: the all-pairs sensitivity is the sum, in double on the host,
   * of sens_chunks float images of the pairs p mod sens_chunks = c (each cached like a binned
   * subset's), and this process computes the chunks c mod parts = part. One float image of
   * every pair accumulates ~1e-5 relative rounding over millions of pairs; fixed chunks make
   * the distributed sum the same whatever the number of parts (docs/scale.md). 0, 1: one
   * pass. */
  guint sens_chunks;
} TlPetOperatorOptions;

/* Siddon, default projector params, 1 subset, TL_SCATTER_AUTO, no TOF, no attenuation,
 * cache on. */
TL_API void tl_pet_operator_options_init(TlPetOperatorOptions *o);

/* The events are copied to the device (regrouped by subset); lm may be freed after. opt NULL:
 * the defaults. */
TL_API TlOperator *tl_pet_operator_new_listmode(TlContext *ctx, const TlListmode *lm,
                                         const TlImageGrid *grid,
                                         const TlPetOperatorOptions *opt, GError **error);
/* Counts per crystal pair (tl_listmode_histogram or read); bins with count 0 may be left out.
 * Every bin must be a detectable pair with a finite count >= 0, and the total > 0. */
TL_API TlOperator *tl_pet_operator_new_binned(TlContext *ctx, const TlScanner *scanner,
                                       const TlBin *bins, guint64 n_bins,
                                       const TlImageGrid *grid,
                                       const TlPetOperatorOptions *opt, GError **error);

/* Whether op is one of these classes (the accessors below take only those). */
TL_API gboolean tl_is_pet_operator(const TlOperator *op);
TL_API TlProjector *tl_pet_operator_projector(TlOperator *op);
TL_API const TlScanner *tl_pet_operator_scanner(const TlOperator *op);
/* Sum of the measured counts (list mode: the number of events). */
TL_API double tl_pet_operator_total_counts(const TlOperator *op);
/* Whether every sensitivity image made so far came from the disk cache (FALSE before any). */
TL_API gboolean tl_pet_operator_sensitivity_cached(const TlOperator *op);
/* The records of subset s as the projector takes them (with D as atten and the TOF kernel);
 * s = G_MAXUINT: every record. Valid while op lives and D is not replaced. */
TL_API TlLors tl_pet_operator_lors(const TlOperator *op, guint subset);

/* The randoms term of ybar = D A x + a for every record in data order (the solver's
 * TlProblem.additive): a_j = s_a s_b of the record's crystal pair (tl-randoms.h), divided by
 * the scanner's TOF bins when the operator uses TOF (randoms are spread uniformly in time;
 * the bins are taken to cover the coincidence window). Not attenuated, not normalised: D
 * multiplies A x only. */
TL_API TlArray *tl_pet_operator_randoms(TlOperator *op, const TlRandoms *randoms, GError **error);

/* The whole additive term a = randoms + scatter for every record in data order, on the host
 * (tl_operator_n_data floats, g_free): the randoms as tl_pet_operator_randoms, plus the scatter
 * estimate of each record's crystal pair times its factor n_ab (pair_factor, NULL = 1:
 * normalisation, since scattered photons are detected by the same crystals; not attenuated,
 * SSS already is). With TOF the estimate's value in the record's TOF bin (the estimate must
 * have the scanner's TOF bins: a non-TOF estimate is a GError), without TOF its sum over
 * the bins. randoms and scatter may each be NULL. GError for an estimate of another scanner
 * (tl_scatter_estimate_check_scanner) or randoms of another crystal count. */
TL_API float *tl_pet_operator_additive(TlOperator *op, const TlRandoms *randoms,
                                const TlScatterEstimate *scatter, TlPairFactorFunc pair_factor,
                                gpointer pair_factor_data, GError **error);

/* The measured counts per crystal pair (list mode: events counted per pair; binned: the bins),
 * a < b, sorted by (a, b): the data of the tail fit (tl_scatter_tail_fit). */
TL_API GArray *tl_pet_operator_pair_counts(TlOperator *op, GError **error);

TL_API extern const TlOperatorClass tl_pet_listmode_operator_class;
TL_API extern const TlOperatorClass tl_pet_binned_operator_class;

G_END_DECLS
