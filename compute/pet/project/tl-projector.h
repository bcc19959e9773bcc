/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProjector: the PET system matrix A on the device, a_jn = contribution of voxel n to line
 * of response (LOR) j in mm (intersection length for Siddon, interpolation weight x step for
 * Joseph). Every reconstruction algorithm reaches projections through this interface only:
 * forward (y = A x), back (x += A^T w, the exact adjoint: same traversal code), the fused EM
 * step of van Gendt et al. 2021 Listing 1, the log-likelihood sum and the sensitivity image.
 *
 * A projector is created by name ("siddon", "joseph", "tor"). Each name is a TlProjectorClass in its
 * own file (tl-siddon.c, tl-joseph.c); the ray-tracing classes share the kernels of
 * tl-projector-ray.c and differ in one specialization constant, so a new projector is a new
 * file (+ a GLSL include for a ray tracer) and one line in tl-projector.c's table; the
 * registry (compute/tl-registry.h) lists it for the front ends from its name, label and flags.
 *
 * LORs come from list-mode events or bins (crystal pairs resolved through the scanner's crystal
 * table on the device) or from explicit end points. Calls record work on a TlStream and return
 * before it runs (except loglik, which finishes the stream); arrays must outlive that work.
 * Back projection accumulates with float atomic add where the device has it, else with a
 * compare-and-swap loop (TlScatter). A TlProjector is used by one thread at a time. */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/correct/tl-norm.h"

G_BEGIN_DECLS

typedef enum {
  TL_LORS_EVENTS,     /* TlEvent records (12 bytes): crystal pair, measured count 1 */
  TL_LORS_BINS,       /* TlBin records (12 bytes): crystal pair + measured count */
  TL_LORS_END_POINTS, /* 6 floats per LOR: x0 y0 z0 x1 y1 z1 in mm (24 bytes) */
} TlLorKind;

/* Time of flight (van Gendt et al. 2021 sec. 2.3 eq. 8, d_j = c dt_j / 2). An event's TOF bin b
 * (TlEvent.tof_bin; docs/formats.md: bin 0 centred on the LOR midpoint, positive towards
 * crystal b, centre c_b = b * bin_mm) weights the point at signed distance x (mm) from the
 * midpoint along the LOR by the Gaussian N(x; c, sigma) integrated over the bin and truncated
 * at n_sigma sigmas, renormalised:
 *   h_b(x) = [Phi(clamp(c_b + w/2 - x)) - Phi(clamp(c_b - w/2 - x))] / erf(n / sqrt 2),
 *   Phi(t) = erf(t / (sigma sqrt 2)) / 2,  clamp to [-n sigma, n sigma],  w = bin_mm,
 * so sum_b h_b(x) = 1 wherever the bins cover x +- n sigma (the non-TOF weights are the
 * TOF weights summed over bins, and the sensitivity image is the non-TOF one). The
 * projector's weight a_jn is multiplied by h_b at the sample position (Joseph, TOR: the
 * point on the plane; Siddon: the middle of the voxel's chord) and only the planes / voxels
 * within c_b +- (w/2 + n sigma) are visited. */
typedef struct {
  float sigma_mm;  /* Gaussian sigma along the LOR (tl_scanner_tof_sigma_mm) */
  float bin_mm;    /* bin width along the LOR */
  float n_sigma;   /* truncation, in sigmas (> 0) */
} TlTof;

/* Default truncation (reference-cases.md: "kernel truncated at 3 sigma"). */
#define TL_TOF_N_SIGMA 3.0
/* The scanner's TOF kernel; n_sigma <= 0 means TL_TOF_N_SIGMA. GError when the scanner has
 * no TOF bins or n_sigma is above 10. */
TL_API gboolean tl_tof_init(TlTof *tof, const TlScanner *scanner, double n_sigma, GError **error);

typedef struct {
  TlLorKind kind;
  TlArray *records;         /* the records (elem size 12 or 24 bytes) */
  const TlArray *crystals;  /* events/bins: the scanner's crystal table (tl_scanner_upload) */
  guint64 first, count;     /* records [first, first + count) */
  /* Attenuation (may be NULL = none): a_j = exp(-integral of mu along LOR j) per record,
   * indexed like `records` (record first + i reads atten[first + i]). With it the system
   * matrix is A' = diag(a) A (van Gendt et al. 2021 eq. 6) in forward, back, em and loglik alike.
   * */
  const TlArray *atten;
  /* Time of flight (NULL = none): only with TL_LORS_EVENTS, whose third word is the bin. */
  const TlTof *tof;
} TlLors;

typedef enum {
  TL_SCATTER_AUTO,         /* TL_SCATTER_FIXED (deterministic on every device); the CPU plane
                            * path of Joseph's EM pass, itself deterministic, may replace it */
  TL_SCATTER_FLOAT_ATOMIC, /* float atomic add (fails on devices without it) */
  TL_SCATTER_CAS,          /* compare-and-swap loop, chosen by specialization constant */
  TL_SCATTER_CAS_PORTABLE, /* CAS in the kernel built without the float-atomic capability
                            * (what devices lacking it run; selectable to test it anywhere) */
  TL_SCATTER_FIXED,        /* 64-bit fixed-point sums (core/tl-fixed.h): the same image on every
                            * run, whatever the order the invocations add in; the float modes
                            * above differ between runs by ~1e-7 relative. Grids of more than
                            * 2^31 - 4 voxels fall back to float atomics or CAS. */
} TlScatter;

typedef struct _TlProjector TlProjector;

/* The normalisation in a sensitivity image (van Gendt et al. 2021 eq. 7 with n_j a_j: s_n = sum
 * over the
 * pairs j of n_j a_j a_jn): the model (made for the scanner; the symmetric method keeps only
 * the symmetries it is invariant under, tl_norm_invariant) and its device tables
 * (tl_norm_upload, read by shaders/pet/pet_norm.glsl). */
typedef struct {
  const TlNorm *norm;
  const TlArray *table;
} TlSensNorm;

/* What a projector can do: TlProjectorClass.flags and the registry's TlProjectorInfo
 * (compute/tl-registry.h), which the CLI's help, the window's list and Python read. */
typedef enum {
  TL_PROJECTOR_LISTMODE = 1 << 0,  /* list-mode events */
  TL_PROJECTOR_BINNED = 1 << 1,    /* binned data (crystal-pair histograms, sinograms) */
  TL_PROJECTOR_TOF = 1 << 2,       /* time of flight (list mode) */
  TL_PROJECTOR_DUAL_HEAD = 1 << 3, /* dual-head scanners only */
} TlProjectorFlags;

/* A projector's passes (tl_projector_kernels). */
typedef enum {
  TL_PROJECTOR_FORWARD, /* tl_projector_forward, and loglik */
  TL_PROJECTOR_BACK,    /* tl_projector_back */
  TL_PROJECTOR_EM,      /* tl_projector_em, em_loglik */
} TlProjectorPass;

/* One projector implementation. The projector's own state lives behind `priv`. */
typedef struct {
  const char *name;
  const char *summary;
  const char *label; /* the window's list ("Siddon") */
  guint flags;       /* TlProjectorFlags */
  gboolean (*init)(TlProjector *p, GError **error);
  /* The name with the settings that change a_jn (caches key on it); NULL: the name. */
  char *(*key)(const TlProjector *p);
  void (*finalize)(TlProjector *p);
  gboolean (*forward)(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                      TlArray *out, GError **error);
  gboolean (*back)(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *weights,
                   TlArray *image, GError **error);
  /* partials: NULL, or tl_projector_loglik_partials() floats for the same pass's
   * log-likelihood partial sums (tl_projector_em_loglik). */
  gboolean (*em)(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                 TlArray *corr, TlArray *partials, GError **error);
  gboolean (*loglik)(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                     double *sum, GError **error);
  /* norm: NULL = none (tl_projector_sensitivity_norm) */
  gboolean (*sensitivity)(TlProjector *p, TlStream *s, const TlScanner *scanner,
                          const TlArray *crystals, guint stride, guint offset,
                          const TlArray *mu, const TlSensNorm *norm, TlArray *image,
                          GError **error);
  /* NULL or whether `sensitivity` walks the rays in double for these settings
   * (tl_projector_sensitivity_in_double). */
  gboolean (*sensitivity_double)(const TlProjector *p);
  /* NULL or the built-in kernels `pass` runs for these LORs (tl_projector_kernels). */
  const char *const *(*kernels)(const TlProjector *p, TlProjectorPass pass, const TlLors *lors);
} TlProjectorClass;

/* How a sensitivity image (every allowed pair, tl_projector_sensitivity) is computed. Both
 * accumulate in 64-bit fixed point on the device (exact integer sums, shaders/pet/pet_sens.comp),
 * so the image is the float rounding of the sum of the kernels' float weights.
 *   FULL:      every pair traced.
 *   SYMMETRIC: one pair per orbit of the symmetries the scanner and the grid share
 *              (tl-sensitivity.h TlSensSymmetry), the image completed by those symmetries:
 *              only for all pairs (stride 1) without attenuation (a mu-map has no symmetry)
 *              and a scanner/grid with at least one symmetry besides the identity; with a
 *              normalisation, only the symmetries it is invariant under (tl_norm_invariant:
 *              none for measured crystal efficiencies, so FULL).
 *   AUTO:      SYMMETRIC where it applies, else FULL (the default). */
typedef enum {
  TL_SENS_AUTO,
  TL_SENS_FULL,
  TL_SENS_SYMMETRIC,
} TlSensMethod;

/* The arithmetic of the sensitivity image's ray walk. The float walk (the forward, back and
 * EM kernels') rounds each chord by ~1e-5 and its voxel planes the same way for every ray:
 * on the DMI demo grid the image is 4.7e-6 of its maximum from a double-precision sum, the
 * double walk 3.8e-8 (bench/README.md, bench/sensitivity).
 *   DOUBLE: the walk in double (Siddon on devices with shaderFloat64; fails elsewhere).
 *   FLOAT:  the float walk (the only one for Joseph and the TOR).
 *   AUTO:   DOUBLE where it can run, else FLOAT (the default). */
typedef enum {
  TL_SENS_PRECISION_AUTO,
  TL_SENS_PRECISION_FLOAT,
  TL_SENS_PRECISION_DOUBLE,
} TlSensPrecision;

/* Settings of a projector that has them (others ignore them). */
/* How the list-mode EM sub-iteration (tl_projector_em) runs: AUTO picks the plane path on CPU
 * devices for Joseph when no scatter mode was set (tl-projector-planes.c), else FUSED, the
 * one-kernel forward-ratio-back pass (pet_em.glsl); PLANES fails where it cannot run. */
typedef enum {
  TL_EM_AUTO,
  TL_EM_FUSED,
  TL_EM_PLANES,
} TlEmMethod;

typedef struct {
  /* "tor": FWHM (mm) of the Gaussian across the tube of response (>= 0; 0 = Joseph). */
  double tor_fwhm_mm;
} TlProjectorParams;

#define TL_TOR_FWHM_DEFAULT 2.0

struct _TlProjector {
  const TlProjectorClass *klass;
  TlContext *ctx;
  TlImageGrid grid;
  TlScatter scatter;
  TlProjectorParams params;
  TlSensMethod sens_method; /* tl_projector_set_sensitivity_method; AUTO */
  TlSensPrecision sens_precision; /* tl_projector_set_sensitivity_precision; AUTO */
  TlEmMethod em_method;     /* tl_projector_set_em_method; AUTO */
  gpointer priv;
};

/* Names known to tl_projector_new, NULL-terminated. */
TL_API const char *const *tl_projector_names(void);
/* The classes tl_projector_new knows, NULL-terminated (one line each in tl-projector.c). */
TL_API const TlProjectorClass *const *tl_projector_classes(void);
TL_API TlProjector *tl_projector_new(TlContext *ctx, const char *name, const TlImageGrid *grid,
                              GError **error);
/* The same with settings (NULL = defaults: tor_fwhm_mm = TL_TOR_FWHM_DEFAULT). */
TL_API TlProjector *tl_projector_new_with(TlContext *ctx, const char *name, const TlImageGrid *grid,
                                   const TlProjectorParams *params, GError **error);
TL_API void tl_projector_free(TlProjector *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlProjector, tl_projector_free)

TL_API const char *tl_projector_name(const TlProjector *p);
/* Name + settings that change the weights, e.g. "tor fwhm 2 mm" (g_free). */
TL_API char *tl_projector_key(const TlProjector *p);
TL_API const TlImageGrid *tl_projector_grid(const TlProjector *p);
TL_API void tl_projector_set_scatter(TlProjector *p, TlScatter scatter);
TL_API void tl_projector_set_em_method(TlProjector *p, TlEmMethod method);

/* The built-in kernels (core/tl-kernels.h names; static, NULL-terminated) that `pass` runs
 * for `lors` with the projector's settings, the device and the kernels edited as they are now:
 * e.g. Joseph's EM pass on a CPU device {"pet_em_rec", "pet_back_slabs", "pet_pairs"}, on a
 * GPU {"pet_em"}. What an edit must replace to change that pass (the kernel editor,
 * recon --kernel). NULL when the class does not say. */
TL_API const char *const *tl_projector_kernels(const TlProjector *p, TlProjectorPass pass,
                                        const TlLors *lors);

/* Whether replacing built-in kernel `name` changes what `pass` computes for `lors`: one of
 * tl_projector_kernels, or pet_em (pet_em_cas) for Joseph's EM pass on a CPU device, whose
 * edited text replaces the plane path there (tl-projector-planes.c). A class that does not
 * list its kernels: TRUE. */
TL_API gboolean tl_projector_kernel_used(const TlProjector *p, TlProjectorPass pass, const TlLors *lors,
                                  const char *name);

/* out[i] = (A image)_{first + i} for i < lors->count (out: floats, >= count elements). */
TL_API gboolean tl_projector_forward(TlProjector *p, TlStream *s, const TlLors *lors,
                              const TlArray *image, TlArray *out, GError **error);
/* image += A^T w over the LORs; weights[i] belongs to record first + i (NULL = all 1),
 * like out[i] of forward. */
TL_API gboolean tl_projector_back(TlProjector *p, TlStream *s, const TlLors *lors,
                           const TlArray *weights, TlArray *image, GError **error);
/* The fused EM step: corr_n += sum_j a_jn m_j / (A image)_j over LORs with (A image)_j > 0
 * (m_j: 1 per event, the count of a bin). */
TL_API gboolean tl_projector_em(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                         TlArray *corr, GError **error);
/* tl_projector_em that, in the same pass (no second projection), also writes the Poisson
 * log-likelihood data term sum_j m_j log (A image)_j over LORs with (A image)_j > 0 as float
 * partial sums: partials[g] for g < tl_projector_loglik_partials(p, lors) (one per workgroup;
 * partials may be longer, the rest is untouched). Sum them in double on the host: that is
 * tl_projector_loglik at `image`, the image before any update from `corr`. */
TL_API gboolean tl_projector_em_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                                const TlArray *image, TlArray *corr, TlArray *partials,
                                GError **error);
/* Number of partial sums tl_projector_em_loglik writes for `lors` (0 for no LORs). */
TL_API guint64 tl_projector_loglik_partials(const TlProjector *p, const TlLors *lors);
/* *sum = sum_j m_j log (A image)_j over LORs with (A image)_j > 0. Finishes the stream. */
TL_API gboolean tl_projector_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                             const TlArray *image, double *sum, GError **error);
/* image += back projection of every allowed crystal pair p (tl_scanner_pair_allowed) with
 * p % stride == offset in the pair order of tl_pair_index(); stride 1, offset 0 = all. */
TL_API gboolean tl_projector_sensitivity(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                  const TlArray *crystals, guint stride, guint offset,
                                  TlArray *image, GError **error);
/* The same with attenuation (van Gendt et al. 2021 eq. 7): image += sum over those pairs p of
 * a_p (back projection of p), a_p = exp(-integral along p of mu) with this projector's
 * weights; mu (mm^-1) on the projector's grid, NULL = tl_projector_sensitivity. */
TL_API gboolean tl_projector_sensitivity_atten(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                        const TlArray *crystals, guint stride, guint offset,
                                        const TlArray *mu, TlArray *image, GError **error);

/* The same with the normalisation too (van Gendt et al. 2021 eq. 7 with n_j a_j): image += sum
 * over those
 * pairs of n_p a_p (back projection of p). norm NULL = tl_projector_sensitivity_atten; its
 * model must be for `scanner` (tl_norm_check_scanner). Grids above 2^31 voxels (the float
 * path) refuse a normalisation. */
TL_API gboolean tl_projector_sensitivity_norm(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                       const TlArray *crystals, guint stride, guint offset,
                                       const TlArray *mu, const TlSensNorm *norm,
                                       TlArray *image, GError **error);

/* TL_SENS_PRECISION_DOUBLE where it cannot run makes the sensitivity calls fail. */
TL_API void tl_projector_set_sensitivity_precision(TlProjector *p, TlSensPrecision precision);
/* Whether the sensitivity calls walk the rays in double (TlSensPrecision): part of the
 * sensitivity cache's key, since the images differ by the float walk's rounding. */
TL_API gboolean tl_projector_sensitivity_in_double(const TlProjector *p);

/* TL_SENS_SYMMETRIC where it cannot apply makes the sensitivity calls fail (tests force it). */
TL_API void tl_projector_set_sensitivity_method(TlProjector *p, TlSensMethod method);
/* The method the sensitivity calls use for these arguments (TL_SENS_FULL or
 * TL_SENS_SYMMETRIC, never AUTO) and, in *order (may be NULL), the number of symmetries
 * used (1 for FULL). */
TL_API TlSensMethod tl_projector_sensitivity_plan(const TlProjector *p, const TlScanner *scanner,
                                           guint stride, gboolean attenuation, guint *order);
/* The same with a normalisation (NULL = none): the symmetries n is invariant under only. */
TL_API TlSensMethod tl_projector_sensitivity_plan_norm(const TlProjector *p, const TlScanner *scanner,
                                                guint stride, gboolean attenuation,
                                                const TlNorm *norm, guint *order);

/* Reorders events, stably, so that those whose dominant axis (the one along which the LOR
 * crosses the most voxels of grid) is x come first, then y, then z: neighbouring invocations
 * then walk rays of one kind and length range (Kovács (n.d.) groups events by dominant direction),
 * while the order within a group (random in time) keeps concurrent scatters apart. */
TL_API void tl_events_group_by_axis(TlEvent *ev, guint64 n, const TlScanner *s, const TlImageGrid *g);
/* The same groups, each ordered by line: by transaxial direction, then offset from the axis,
 * then axial position, so neighbouring invocations walk nearly the same voxels (Kovács (n.d.)
 * groups by direction too). For CPU devices, where no two lanes' atomics contend and the
 * cache decides: 20 % off the EM sub-iteration on lavapipe for Siddon and Joseph alike
 * (bench/README.md). GPUs keep the grouping alone, whose random order keeps a warp's atomics
 * apart. Deterministic (ties keep their order). */
TL_API void tl_events_order_by_line(TlEvent *ev, guint64 n, const TlScanner *s, const TlImageGrid *g);

G_END_DECLS
