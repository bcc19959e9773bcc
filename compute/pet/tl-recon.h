/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRecon: PET reconstruction on the device: the PET problem (the list-mode or binned
 * operator of tl-pet-operator.h, with its sensitivity images, attenuation factors and TOF) run
 * by the one reconstruction core (recon/tl-solver.h) with any emission algorithm of the
 * registry (mlem, osem, osl, bsrem; binned data also sirt, os-sart, cgls) and a prior. The
 * maths below is what those algorithms do on this operator.
 *
 * MLEM (van Gendt et al. 2021 eq. 5, Kovács (n.d.) eq. 2), with a_jn the projector's weights, s_n
 * the
 * sensitivity image and m_j the measured count of LOR j (1 per list-mode event):
 *   f_n <- f_n / s_n * sum_j a_jn m_j / sum_n' a_jn' f_n'
 * OSEM (van Gendt et al. 2021 sec. 2.3; Chou et al. 2012 eq. 3-5) applies the update per subset
 * S_k in turn:
 *   f_n <- f_n / s_n^(k) * sum_{j in S_k} a_jn m_j / sum_n' a_jn' f_n'
 * List mode: event j belongs to subset j mod S (interleaved, so each subset is a 1/S sample
 * of the acquisition) and s^(k) = s / S. Binned: bin (a, b) belongs to subset
 * tl_pair_index(a, b) mod S and s^(k) is that subset's own sensitivity image, exactly as in
 * Chou et al. 2012 eq. 4 (every detectable pair of the subset, counted or not).
 *
 * (van Gendt et al. 2021 eq. 4 is this update for the image f_n / s_n, the sensitivity moved
 * inside the
 * forward sum, with a global 1/T factor; eq. 5 puts the intersection length l(A_j; r_n) = a_jn
 * for p(A_j | r_n).)
 * One sub-iteration = the fused EM kernel over the subset (Algorithm 1 lines 4-9: forward,
 * ratio, back; van Gendt et al. 2021 Listing 1) + the update (line 10) as ONE fused array
 * expression
 *   c = select(s > 0, f * c * k / s, 0)
 * (zero sensitivity -> voxel 0; LORs with zero forward value are skipped in the kernel).
 * The new image is written into the correction buffer and the two are swapped only when the
 * sub-iteration completed, so a cancel between submissions leaves the last complete image.
 *
 * Poisson log-likelihood (up to the constant -sum log m_j!):
 *   L(f) = sum_j m_j log ybar_j - sum_n s_n f_n,   ybar = A f,
 * over all LORs (every subset) with ybar_j > 0; in list mode m_j = 1, i.e.
 * sum_j log ybar_j - sum_n s_n f_n. It costs a forward projection of all data, hence
 * TlLoglikWhen. RMSE against a ground truth compares the image scaled to the truth's total
 * (reconstructions are in counts per unit sensitivity, phantoms in their own units).
 *
 * Attenuation (TlReconOptions.attenuation, a mu-map in mm^-1 on the recon grid): van Gendt et al.
 * 2021
 * eq. 6, the chance that both photons of LOR j escape, a_j = exp(-integral along j of mu),
 * is computed once per dataset (one forward projection of the mu-map over every record, then
 * the fused expression a = exp(-a)) and the system matrix becomes A' = diag(a) A:
 *   ybar_j = a_j sum_n a_jn f_n,  f_n <- f_n / s'_n * sum_j a_j a_jn m_j / ybar_j,
 * where the a_j cancel in the ratio, so attenuation acts through eq. 7's sensitivity
 *   s'_n = sum over every detectable pair p of a_p a_pn
 * (the device integrates mu along each pair before back projecting it). A normalisation
 * (TlReconOptions.norm, tl-norm.h) enters the same way: D_j = n_j a_j per record and
 *   s''_n = sum over every detectable pair p of n_p a_p a_pn. */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "pet/scanner/tl-listmode.h"
#include "pet/project/tl-projector.h"
#include "image/tl-filter.h"
#include "recon/tl-solver.h"
#include "tl-pet-operator.h"
#include "pet/data/tl-sinogram.h"

G_BEGIN_DECLS

typedef enum { TL_RECON_MLEM, TL_RECON_OSEM } TlReconAlgo;

typedef enum {
  TL_LOGLIK_NEVER,
  TL_LOGLIK_ITERATION,    /* after the last subset of each iteration (default) */
  TL_LOGLIK_SUBITERATION, /* after every sub-iteration */
} TlLoglikWhen;

typedef struct {
  TlReconAlgo algo;
  guint subsets;         /* OSEM: S >= 1; MLEM uses 1 */
  guint iterations;      /* full passes over the data that tl_recon_run makes */
  const char *projector; /* "siddon" or "joseph"; binned dual-head data also "srm" (the
                          * precomputed system response matrix, tl-srm.h) */
  TlLoglikWhen loglik;
  gboolean use_cache;    /* sensitivity images cached on disk */
  TlScatter scatter;
  /* mu-map in mm^-1 on the recon grid (NULL = no attenuation correction): checked (same
   * grid, finite, 0 <= mu <= TL_RECON_MU_MAX) and copied to the device at creation. */
  const TlImage *attenuation;
  /* Time of flight (list mode only): weight each event by its TOF bin (TlTof in
   * tl-projector.h). GError when the data carry no TOF bins. tof_n_sigma: truncation in
   * sigmas (<= 0: TL_TOF_N_SIGMA). The sensitivity image stays the non-TOF one. */
  gboolean tof;
  double tof_n_sigma;
  /* Projector "tor": FWHM (mm) of its Gaussian across the tube (TlProjectorParams). */
  double tor_fwhm_mm;
  /* Filter between iterations (van Gendt et al. 2021 "inter-iteration" filtering; STIR's
   * inter-iteration
   * filter interval): after every filter_every-th sub-iteration the new image is filtered
   * before it becomes the current one (filter_every = subsets: once per iteration).
   * filter_every = 0 or kind TL_FILTER_NONE: never. */
  TlFilter filter;
  guint filter_every;
  /* s_n = 1 everywhere instead of the sensitivity image (van Gendt et al. 2021 Table 3's baseline
   * "MLEM
   * without extensions"; not a correct model, for comparisons only). */
  gboolean uniform_sensitivity;
  /* Any algorithm of the registry by name (NULL: algo's mlem / osem). */
  const char *algorithm;
  /* Prior for osl / bsrem (NULL = none), its strength (relative: TlSolverOptions.beta) and
   * parameters. */
  const char *prior;
  double beta;
  gboolean beta_absolute; /* beta as given (TlSolverOptions.beta_absolute) */
  TlPriorParams prior_params;
  float relaxation;       /* bsrem alpha_0, sirt / os-sart lambda (default 1) */
  guint32 seed;           /* svrg / saga: subset order (TlSolverOptions.seed, default 1) */
  guint start_subset;     /* the first sub-iteration's subset (TlSolverOptions.start_subset) */
  /* STIR's "zero end planes of segment 0": the data of the first and the last direct plane
   * (both crystals in ring 0, or both in the last ring) are set to zero, i.e. left out, while
   * the sensitivity still counts those pairs, as STIR's does (its end planes are often the
   * least reliable). Ring scanners with 2 or more rings; ignored otherwise. */
  gboolean zero_end_planes;
  guint warm_epochs;      /* OSEM epochs before the algorithm (TlSolverOptions.warm_epochs) */
  /* Distributed list mode (docs/scale.md): this process holds a share of the events and
   * computes the sensitivity of the pairs p mod parts = part; the reducer sums the shares
   * (TlSolverReducer). parts 0 / reducer NULL: one process. */
  guint parts, part;
  const TlSolverReducer *reducer;
  guint sens_chunks;      /* TlPetOperatorOptions.sens_chunks (0: one pass) */
  /* Randoms correction (NULL = none; tl-randoms.h, e.g. from the delayeds): the expected
   * randoms of each record's pair become the additive term of ybar = D A x + a
   * (tl_pet_operator_randoms), so EM divides by D A x + a and, with the term present, runs
   * forward, ratio and back projection as separate passes (the fused kernel has no a). Read
   * at creation only. List-mode and binned ray projectors (not "srm"). */
  const TlRandoms *randoms;
  /* Scatter correction (NULL = none; tl-sss.h): the estimate's expected scatter of each
   * record's crystal pair (and TOF bin) joins the randoms in the additive term, times the
   * per-pair factor when given (normalisation: scattered photons are detected by the same
   * crystals; with `norm` below and no factor given, its crystal efficiencies eps_a eps_b,
   * tl_norm_scatter_pair: SSS models the geometry itself). Copied at
   * creation; tl_recon_set_scatter replaces it in place. Not with "srm". */
  const TlScatterEstimate *scatter_estimate;
  TlPairFactorFunc scatter_pair_factor;
  gpointer scatter_pair_factor_data;
  /* Normalisation (NULL = none; tl-norm.h, e.g. tl_norm_load or tl_norm_estimate): made for the
   * data's scanner (else a GError naming both); each record's D = n_j a_j and the sensitivity
   * weighs every pair by n_j a_j (van Gendt et al. 2021 eq. 7). Copied at creation. List-mode and
   * binned
   * ray projectors (not "srm"). */
  const TlNorm *norm;
  /* Rays per line (STIR's "number of rays in tangential direction" and its axial twin; issue
   * 26 item 4): sinograms whose bins are lines (tl_recon_new_arc, tl_recon_new_lines); 0 or
   * 1 = one line per bin. List mode and bins given as crystal pairs refuse more than one. */
  guint rays_tangential, rays_axial;
  /* The sensitivity image given instead of computed (TlSolverOptions.sensitivity; STIR's
   * "sensitivity filename"), on the grid; borrowed at creation only. NULL: computed. */
  const TlImage *sensitivity;
} TlReconOptions;

/* Largest plausible linear attenuation coefficient at 511 keV (mm^-1): water 0.0096, cortical
 * bone ~0.017; anything above this is taken for a map in the wrong units (e.g. cm^-1). */
#define TL_RECON_MU_MAX TL_PET_MU_MAX

/* The checks of TlReconOptions.attenuation: mu on `grid`, every voxel finite and in
 * [0, TL_RECON_MU_MAX]. The GError names both grids, or the voxel and its value. */
TL_API gboolean tl_recon_check_attenuation(const TlImage *mu, const TlImageGrid *grid, GError **error);

/* MLEM, 1 subset, 10 iterations, Siddon, log-likelihood after each iteration, cache on, no
 * TOF, no filter, tor_fwhm_mm = TL_TOR_FWHM_DEFAULT. */
TL_API void tl_recon_options_init(TlReconOptions *o);

typedef struct {
  guint iteration;       /* 1-based iteration this sub-iteration belongs to */
  guint subset;          /* 0-based */
  guint n_subsets;
  guint sub_iterations;  /* sub-iterations done so far (this one included) */
  const TlArray *image;  /* the new image on the device (download with tl_recon_image) */
  double loglik;         /* NAN when not computed this time */
  double rmse;           /* NAN without a truth */
  double seconds;        /* wall time of this sub-iteration (log-likelihood and RMSE included) */
  gboolean filtered;     /* the filter between iterations ran on this image */
  const TlProfile *profile; /* GPU time per kernel since the start */
} TlReconProgress;

typedef void (*TlReconCallback)(const TlReconProgress *progress, gpointer user_data);

typedef struct _TlRecon TlRecon;

/* The data are copied to the device (events regrouped by subset); lm may be freed after. */
TL_API TlRecon *tl_recon_new_listmode(TlContext *ctx, const TlListmode *lm, const TlImageGrid *grid,
                               const TlReconOptions *opt, GError **error);
/* Counts per crystal pair (tl_listmode_histogram or read); bins with count 0 may be left out. */
TL_API TlRecon *tl_recon_new_binned(TlContext *ctx, const TlScanner *scanner, const TlBin *bins,
                             guint64 n_bins, const TlImageGrid *grid, const TlReconOptions *opt,
                             GError **error);
/* Arc-corrected STIR projection data (pet/data/tl-sinogram-arc.h): each bin a line with
 * opt->rays_tangential x opt->rays_axial rays, the pet-lines operator
 * (tl_pet_lines_operator_new_arc: subsets of interleaved views), its sensitivity the column
 * sums over every bin (not cached: no crystal pairs to key it by), weighted by the attenuation
 * factors with opt->attenuation. Projectors siddon, joseph, tor; normalisation, randoms,
 * scatter, TOF and zero end planes are refused
 * (a GError naming the option): the lines have no crystal pairs to attach them to yet. */
TL_API TlRecon *tl_recon_new_arc(TlContext *ctx, const TlSinogram *sino, const TlImageGrid *grid,
                                 const TlReconOptions *opt, GError **error);
/* Any sinogram whose bins are lines: arc-corrected data as tl_recon_new_arc, and crystal-pair
 * data (span 1, no view mashing) as the line between each bin's detectors with
 * opt->rays_tangential x opt->rays_axial rays (tl_pet_lines_operator_new_sinogram; issue 26
 * item 4 as a run path: the sensitivity over the same rays), block gaps' bins weighted 0.
 * What the doors call for crystal-pair sinograms with more than one ray (1 x 1 stays
 * tl_recon_new_binned: the cached crystal-pair sensitivity, normalisation, randoms, scatter).
 * Refusals as tl_recon_new_arc. */
TL_API TlRecon *tl_recon_new_lines(TlContext *ctx, const TlSinogram *sino, const TlImageGrid *grid,
                                   const TlReconOptions *opt, GError **error);
TL_API void tl_recon_free(TlRecon *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRecon, tl_recon_free)

/* Ground truth on the recon grid, for the RMSE in the progress reports. */
TL_API gboolean tl_recon_set_truth(TlRecon *r, const TlImage *truth, GError **error);
TL_API void tl_recon_set_callback(TlRecon *r, TlReconCallback cb, gpointer user_data);
/* Checked before each sub-iteration and between the stream's submissions. */
TL_API void tl_recon_set_cancellable(TlRecon *r, GCancellable *cancellable);

/* Work per queue submission (tl_stream_set_submit_budget): smaller = cancels sooner. */
TL_API void tl_recon_set_submit_budget(TlRecon *r, guint64 budget);

/* One sub-iteration (the next subset). FALSE + G_IO_ERROR_CANCELLED when cancelled: the
 * image is then the one the last complete sub-iteration made. */
TL_API gboolean tl_recon_step(TlRecon *r, GError **error);
/* Sub-iterations until options.iterations full iterations are done. */
TL_API gboolean tl_recon_run(TlRecon *r, GError **error);
/* The Poisson log-likelihood of the current image (a forward projection of all data). */
TL_API gboolean tl_recon_loglik(TlRecon *r, double *loglik, GError **error);

TL_API guint tl_recon_sub_iterations(const TlRecon *r);
TL_API const TlImageGrid *tl_recon_grid(const TlRecon *r);
TL_API const TlArray *tl_recon_image_array(const TlRecon *r);
/* The sensitivity image of all pairs (the "Denom"). */
TL_API const TlArray *tl_recon_sensitivity(const TlRecon *r);
/* Whether every sensitivity image came from the disk cache. */
TL_API gboolean tl_recon_sensitivity_cached(const TlRecon *r);
/* The current image, downloaded. */
TL_API TlImage *tl_recon_image(TlRecon *r, GError **error);
TL_API const TlProfile *tl_recon_profile(const TlRecon *r);
TL_API TlProjector *tl_recon_projector(TlRecon *r);
/* The operator and the solver underneath (the window changes the prior between steps). */
TL_API TlOperator *tl_recon_operator(TlRecon *r);
TL_API TlSolver *tl_recon_solver(TlRecon *r);

/* The randoms the reconstruction uses (its copy of TlReconOptions.randoms), or NULL. */
TL_API const TlRandoms *tl_recon_randoms(const TlRecon *r);
/* The additive term on the device (randoms + scatter per record, in the operator's data
 * order), or NULL when there is none. */
TL_API const TlArray *tl_recon_additive(const TlRecon *r);
/* Replaces the scatter part of the additive term in place (NULL: no scatter), keeping the
 * randoms: a = randoms + n_ab scatter per record (tl_pet_operator_additive), uploaded into the
 * reconstruction's own term, which the solver keeps using (tl_solver_set_additive): the events
 * are not uploaded again and the sensitivity is not recomputed; the image stays. Takes effect
 * from the next step. GError as tl_pet_operator_additive. */
TL_API gboolean tl_recon_set_scatter(TlRecon *r, const TlScatterEstimate *scatter, GError **error);

/* Scatter estimation iterated with the reconstruction: each round takes the current image as
 * the activity, runs SSS on it with the mu-map (tl_sss_estimate), scales the estimate to the
 * data by the tail fit (tl_scatter_tail_fit, against the reconstruction's own counts and
 * randoms), sets it as the scatter term (tl_recon_set_scatter) and runs `iterations` more full
 * iterations from the current image; with final_iterations > 0 the last round instead starts
 * the image again from the uniform start (tl_solver_restart) and runs final_iterations with the
 * final estimate: the image STIR or SIRF users reconstruct after their scatter estimation. Run
 * the first reconstruction (without scatter) before.
 *
 * A cold region under the scatter term converges slowly: EM's multiplicative update takes
 * activity out of it the more slowly the larger the additive term on its lines. At equal
 * iterations of the final image, a restarted image's cold region is therefore warmer than the
 * continued one's, whose first iterations ran without the term (the NEMA body's lung insert:
 * docs/pet.md, "The cold lung", where the estimate does as well as the truth's own scatter). */
typedef struct {
  guint round, rounds;                /* 1-based */
  const TlScatterEstimate *estimate;  /* scaled by fit.scale */
  TlTailFit fit;
  TlSssStats sss;
  double seconds;                     /* SSS, fit and the new term (not the iterations) */
} TlScatterRoundInfo;

typedef void (*TlScatterRoundCallback)(const TlScatterRoundInfo *info, gpointer user_data);

typedef struct {
  guint rounds;            /* 1 to 100 */
  guint iterations;        /* full iterations after each estimate, >= 1 */
  TlSssParams sss;         /* .tof is the reconstruction's */
  TlTailParams tail;       /* .pair_factor is the reconstruction's scatter_pair_factor */
  TlScatterRoundCallback callback; /* after each estimate, before its iterations */
  gpointer user_data;
  GCancellable *cancel;    /* checked during SSS (the reconstruction has its own) */
  guint final_iterations;  /* > 0: after the last estimate, restart and run this many instead */
} TlScatterRounds;

/* 2 rounds of 1 iteration, no restart, tl_sss_params_init, tl_tail_params_init. */
TL_API void tl_scatter_rounds_init(TlScatterRounds *o);
/* One estimate of tl_recon_scatter_rounds without the iterations after it: SSS of the current
 * image with o->sss (TOF: the reconstruction's), the tail fit (o->tail, the pair factor: the
 * reconstruction's) against the reconstruction's own counts and randoms, the term replaced in
 * place; the caller steps on (the window's job estimates between its iterations). info (may be
 * NULL) gets the fit, SSS's statistics and the seconds (round and rounds: 0; o->rounds,
 * o->iterations and o->callback are not used). Returns the scaled estimate, or NULL + GError
 * (G_IO_ERROR_CANCELLED with o->cancel: the term is then unchanged). */
TL_API TlScatterEstimate *tl_recon_scatter_estimate(TlRecon *r, const TlImage *mu,
                                             const TlScatterRounds *o, TlScatterRoundInfo *info,
                                             GError **error);
/* The last estimate (scaled), or NULL + GError (G_IO_ERROR_CANCELLED when cancelled: the image
 * is then the last complete sub-iteration's). mu: the mu-map on the reconstruction's grid. */
TL_API TlScatterEstimate *tl_recon_scatter_rounds(TlRecon *r, const TlImage *mu,
                                           const TlScatterRounds *o, GError **error);

G_END_DECLS
