/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Scatter estimation by single scatter simulation (SSS; Watson, Newport & Casey 1996; Watson
 * 2000, IEEE TNS 47(4) 1587, eq. 1-3) on a downsampled mu-map and activity image, TOF-SSS
 * (Watson 2007, IEEE TNS 54(5) 1679), tail fitting, and the estimate saved to / loaded from a
 * file (docs/formats.md, "Scatter estimates").
 *
 * For two detectors A, B (crystal faces) the single-scatter coincidence rate is (Watson 2000,
 * eq. 1-3; the integral over the scatter points S of the scattering medium)
 *
 *   S^AB = int_Vs dV_S  sigma_AS sigma_BS / (4 pi R_AS^2 R_BS^2)  (mu_S / sigma_c) dsigma_c/dOmega
 *          [ I^A + I^B ]
 *   I^A  = eps(E0) eps(E') exp(-int_S^A mu ds - int_S^B mu' ds)  int_S^A lambda ds
 *   I^B  = eps(E') eps(E0) exp(-int_S^A mu' ds - int_S^B mu ds)  int_S^B lambda ds
 *
 * sigma_XS the geometric cross section of crystal X for photons from S (face area times the
 * cosine of incidence), R_XS the distance, mu at 511 keV and mu' at the scattered energy
 * E' = E0 / (2 - cos theta) (Compton, E0 = m_e c^2), theta the scattering angle at S between the
 * photon's path from one detector's side and its path to the other, dsigma_c/dOmega the
 * Klein-Nishina cross section, sigma_c its total at 511 keV (so mu_S / sigma_c is the electron
 * density), eps(E) the chance that the energy window accepts a photon of energy E (a Gaussian
 * energy resolution), lambda the activity. I^A: the pair is emitted between S and A, the photon
 * towards A arrives unscattered, its partner scatters at S towards B (I^B the other way round).
 * mu' = mu sigma_KN(E') / sigma_KN(E0): Compton scattering dominates water and tissue at these
 * energies (Watson's approximation).
 *
 * TOF-SSS (Watson 2007): the two photons of I^A travel d_A = R_AS - t and d_B = t + R_BS for an
 * annihilation at distance t from S on the leg S -> A, so the TOF position along the LOR
 * (positive towards B, the list-mode convention) is s = (d_A - d_B)/2 = o - t, o =
 * (R_AS - R_BS)/2; for I^B, s = o + t. With a Gaussian timing resolution sigma_t (mm along the
 * LOR) and bins of width w centred on c_b = b w, an annihilation at s lands in bin b with
 * H(c_b - s), H(u) = Phi((u + w/2)/sigma_t) - Phi((u - w/2)/sigma_t), so int lambda ds of each leg
 * becomes, per bin,
 *   I^A: G_SA(c_b - o),   I^B: G_SB(o - c_b),   G_SX(y) = int_0^R_XS lambda(S + t u_SX) H(y + t) dt
 * One function G per leg (scatter point, detector), tabulated once (cubic Hermite nodes with
 * exact values and slopes: lambda is constant on each voxel chord, and int H has the closed
 * form sigma_t [Psi((u + w/2)/sigma_t) - Psi((u - w/2)/sigma_t)], Psi(x) = x Phi(x) + phi(x)),
 * serves every pair the detector is in. Summed over bins that cover the LOR, G gives the leg's
 * non-TOF emission integral; bins beyond the scanner's lose their share, as in the data.
 *
 * Discretisation: the mu-map and the activity are averaged over blocks of voxels into a coarse
 * grid (voxel_mm); the line integrals walk that grid exactly (chord lengths); scatter points
 * are blocks of scatter_mm of the coarse grid whose mean mu reaches mu_threshold, placed at
 * their mu-weighted centroid with the block's mean mu and volume (so sum V_S mu_S keeps every
 * electron of the blocks). Detectors are sampled: transaxial positions evenly spaced in crystal
 * index around each ring, rings evenly spaced including the first and last (detector_mm),
 * at the crystals' face centres; every crystal pair is interpolated from the sampled ones
 * (linear in ring and transaxial index, periodic around the ring, for both ends: 16 corners).
 * Values are per crystal pair (per TOF bin), in units of activity x mm^3 per acquisition; the
 * tail fit scales them to counts. Ring scanners only (crystal id = ring * crystals_per_ring + i).
 */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "pet/scanner/tl-listmode.h"
#include "tl-randoms.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

/* m_e c^2 in keV: the energy of an unscattered annihilation photon. */
#define TL_SSS_E0_KEV 510.99895

/* The detectors' energy window: accepted energies [low_kev, high_kev] measured with a Gaussian
 * resolution of FWHM fwhm_511 * 511 keV at 511 keV, scaling as sqrt(E) (scintillation
 * statistics): eps(E) = [erf((high - E)/(sqrt2 s_E)) - erf((low - E)/(sqrt2 s_E))]/2,
 * s_E = fwhm_511 sqrt(511 E) / 2.3548. fwhm_511 = 0: a perfect measurement (a step). */
typedef struct {
  double low_kev, high_kev;
  double fwhm_511;
} TlEnergyWindow;

/* 425-650 keV, 12 % FWHM at 511 keV (a LSO/LYSO clinical scanner). */
TL_API void tl_energy_window_init(TlEnergyWindow *w);
/* The scanner's window and resolution (tl_scanner_energy: its fields, else the defaults the
 * simulator uses), the model of the simulator's energy measurement (tl-compton.h). */
TL_API void tl_energy_window_from_scanner(TlEnergyWindow *w, const TlScanner *scanner);
/* eps(E) of the window (E in keV). */
TL_API double tl_energy_window_efficiency(const TlEnergyWindow *w, double e_kev);

/* Model switches, for comparisons only (tests: an estimate that leaves a term out must fail
 * the truth): no attenuation of either leg; an isotropic angular distribution instead of
 * Klein-Nishina (energies still from Compton kinematics). */
typedef enum {
  TL_SSS_NO_ATTENUATION = 1 << 0,
  TL_SSS_ISOTROPIC = 1 << 1,
} TlSssFlags;

typedef struct {
  TlEnergyWindow window;  /* all 0 (the default): the scanner's (tl_energy_window_from_scanner) */
  double voxel_mm;      /* coarse grid for the line integrals (each axis: the nearest whole
                         * number of image voxels, at least 1) */
  double scatter_mm;    /* scatter point blocks (whole coarse voxels, at least 1) */
  double mu_threshold;  /* mm^-1: blocks with a mean mu below this hold no scatter point */
  double detector_mm;   /* detector sampling, transaxial and axial; 0 = every crystal, ring */
  gboolean tof;         /* per TOF bin of the scanner (tof_bins > 0) */
  guint n_threads;      /* 0 = the processors */
  guint flags;          /* TlSssFlags */
  /* the progress step's name (tl-progress.h); NULL: "scatter estimation (SSS)". The scatter
   * rounds of a reconstruction name the round ("..., round 2 of 3"), so a window or a CLI
   * line says how much of the run is left, not only of this estimate. */
  const char *progress_label;
} TlSssParams;

/* The scanner's energy window, voxel 10 mm, scatter points every 20 mm, mu >= 0.001 mm^-1
 * (a tenth of water), detectors every 40 mm, no TOF. */
TL_API void tl_sss_params_init(TlSssParams *p);

/* The most values (sampled pairs x TOF bins) an estimate may hold, made or read: 2^28 (1 GiB
 * of float32). */
#define TL_SCATTER_MAX_VALUES (G_GUINT64_CONSTANT(1) << 28)

/* A scatter estimate: values for the sampled detector pairs, interpolated to any crystal
 * pair. Sampled detector d = ring sample * n_t + transaxial sample (crystal
 * ring[d / n_t] * crystals_per_ring + transaxial[d % n_t]); pairs dA <= dB stored in the
 * order of tri(dA, dB) = dB (dB + 1)/2 + dA, each with n_bins values (TOF bins -half..half,
 * positive towards dB) or one (n_bins = 0). A pair's expected scatter counts are scale times
 * the interpolated value. With every crystal and ring sampled the values are per crystal
 * pair exactly. */
typedef struct {
  TlScanner *scanner;     /* owned: the scanner the estimate is for */
  guint n_t, n_r;
  guint *transaxial;      /* n_t crystal indices within a ring, increasing */
  guint *ring;            /* n_r ring indices, increasing */
  guint n_bins;           /* TOF bins (the scanner's, odd), 0 = non-TOF */
  float *values;          /* n_pairs x max(n_bins, 1) */
  double scale;           /* multiplies every value (the tail fit's k; 1 before a fit) */
  char *description;      /* free text (one line) */
  /* made from the above by tl_scatter_estimate_prepare (every constructor calls it) */
  float *sums;            /* per sampled pair: the sum over the bins (n_bins > 0), else NULL */
  guint32 *corner;        /* per crystal: 4 sampled detectors ... */
  double *weight;         /* ... and their interpolation weights */
} TlScatterEstimate;

typedef struct {
  guint scatter_points;
  guint n_t, n_r;          /* sampled detectors: transaxial x rings */
  guint coarse_dims[3];    /* the coarse grid */
  float coarse_mm[3];
  double seconds_legs;     /* line integrals (and TOF tables) per scatter point and detector */
  double seconds_pairs;    /* the sum over scatter points per sampled pair */
} TlSssStats;

/* The estimate for `scanner` from an activity image and a mu-map (mm^-1 at 511 keV) on the same
 * grid. GError for a scanner that is not a ring scanner, other grids, a negative or non-finite
 * voxel (naming it), a mu above TL_PET_MU_MAX (0.05 mm^-1), bad parameters, TOF without TOF
 * bins, an estimate above TL_SCATTER_MAX_VALUES; G_IO_ERROR_CANCELLED when cancelled. No scatter
 * point (mu = 0 everywhere) gives an estimate of zeros. stats may be NULL. */
TL_API TlScatterEstimate *tl_sss_estimate(const TlScanner *scanner, const TlImage *activity,
                                   const TlImage *mu, const TlSssParams *params,
                                   GCancellable *cancel, TlSssStats *stats, GError **error);

TL_API void tl_scatter_estimate_free(TlScatterEstimate *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlScatterEstimate, tl_scatter_estimate_free)
TL_API TlScatterEstimate *tl_scatter_estimate_copy(const TlScatterEstimate *e);

/* Checks the sampling and values (as the loader does; `source` names them in messages) and makes
 * the interpolation tables; for estimates built by hand. */
TL_API gboolean tl_scatter_estimate_prepare(TlScatterEstimate *e, const char *source, GError **error);

static inline guint64 tl_scatter_tri(guint da, guint db) {
  return (guint64)db * (db + 1) / 2 + da;
}
/* Sampled pairs (D (D + 1) / 2, D = n_t n_r). */
TL_API guint64 tl_scatter_estimate_n_pairs(const TlScatterEstimate *e);

/* Expected scatter counts of crystal pair (a, b) (scale x the interpolated value): summed over
 * the TOF bins; and in TOF bin `bin` (positive towards b; |bin| <= half, else 0; a non-TOF
 * estimate: GError-free 0 from _tof, use the first). Ids must be < n_crystals. */
TL_API double tl_scatter_estimate_pair(const TlScatterEstimate *e, guint a, guint b);
TL_API double tl_scatter_estimate_pair_tof(const TlScatterEstimate *e, guint a, guint b, gint bin);

/* Whether the estimate is for `scanner` (the same tl_scanner_key); the GError names both. */
TL_API gboolean tl_scatter_estimate_check_scanner(const TlScatterEstimate *e, const TlScanner *scanner,
                                           const char *source, GError **error);

/* The file (docs/formats.md): a text header with the sampling, the scale and the scanner, then
 * the float32 values; written atomically. Loading bounds every count before allocating, checks
 * the file size, the sampling (indices increasing, in range) and every value (finite, >= 0),
 * naming the file, the field or value, what was found and what was expected. */
TL_API gboolean tl_scatter_estimate_save(const TlScatterEstimate *e, const char *path, GError **error);
TL_API TlScatterEstimate *tl_scatter_estimate_load(const char *path, GError **error);

/* Per-pair efficiency factor n_ab (normalisation) that multiplies the scatter term of a pair
 * (scattered photons are detected by the same crystals as trues); NULL = 1. */
typedef double (*TlPairFactorFunc)(guint a, guint b, gpointer user_data);

/* Tail fitting: the scale k that makes k n_ab S_ab match the measured prompts minus the
 * expected randoms on the crystal pairs whose lines miss the object. A pair is in the tail
 * when its line, projected along the scanner axis, passes farther than margin_mm from the
 * convex hull of the mu-map's support (voxels with mu > mu_support, projected along z) -- a
 * conservative test: every such line misses the object in 3-D too. */
typedef struct {
  double mu_support;      /* mm^-1 (default 0.0005, 5 % of water) */
  double margin_mm;       /* default 10 mm */
  double min_counts;      /* fewer prompts in the tail: GError (default 100) */
  TlPairFactorFunc pair_factor;
  gpointer pair_factor_data;
} TlTailParams;

TL_API void tl_tail_params_init(TlTailParams *p);

/* k by weighted least squares with the Poisson weights 1 / (n S) of scatter counts: minimising
 * sum_tail (y - r - k n S)^2 / (n S) gives k = sum_tail (y - r) / sum_tail n S (the ratio of the
 * tail's net counts to its unscaled estimate; 0 when the net counts are not positive). */
typedef struct {
  double scale;           /* k */
  guint64 tail_pairs;     /* allowed pairs in the tail */
  double tail_counts;     /* prompts y there */
  double tail_randoms;    /* expected randoms r there */
  double tail_estimate;   /* sum n S of the unscaled estimate there */
  double total_estimate;  /* sum n S over every allowed pair (unscaled) */
} TlTailFit;

/* The fit of `e` (its scale is not used nor changed) against `counts` (prompts per crystal pair,
 * TlBin, any order, pairs must be allowed; duplicates add) and `randoms` (NULL = none). GError
 * naming the counts when the tail holds fewer than min_counts prompts, or no estimate (an
 * object filling the field of view), and for a mu-map that is not finite. */
TL_API gboolean tl_scatter_tail_fit(const TlScatterEstimate *e, const TlImage *mu, const TlBin *counts,
                             guint64 n_counts, const TlRandoms *randoms, const TlTailParams *p,
                             TlTailFit *fit, GError **error);
/* The tail test of tl_scatter_tail_fit on its own (tests, views): made once per scanner and
 * mu-map (the scanner must outlive it), then asked per pair. GError for bad parameters or a
 * mu-map that is not finite. */
typedef struct _TlScatterTail TlScatterTail;
TL_API TlScatterTail *tl_scatter_tail_new(const TlScanner *scanner, const TlImage *mu,
                                   const TlTailParams *p, GError **error);
TL_API gboolean tl_scatter_tail_has(const TlScatterTail *t, guint a, guint b);
TL_API void tl_scatter_tail_free(TlScatterTail *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlScatterTail, tl_scatter_tail_free)

/* One line: "SSS: 412 scatter points, 24 x 3 detectors, ..." */
TL_API char *tl_scatter_estimate_describe(const TlScatterEstimate *e);

G_END_DECLS
