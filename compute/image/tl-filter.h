/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlFilter: image filters on device volumes, post-reconstruction or between iterations
 * (van Gendt et al. 2021 sec. 2.3, "Filtering techniques"):
 *   "... we consider two simple filtering techniques, which can be applied
 *   post-reconstruction or inter-iteration. A Gaussian filter is capable of lowering the
 *   noise in the reconstructed images [...]. It does, however, add blurriness. As a result,
 *   the edges between different tissue are softened. Compared to a gaussian filter, a median
 *   filter results in less edge softening, while still lowering the amount of noise during
 *   image reconstruction [...]."
 *
 * Text form (CLI, GUI): "median3", "median5" (exact median of the 3^3 / 5^3 neighbourhood),
 * "gauss:FWHM" with FWHM in mm (> 0, finite) or "metz:FWHM:N" (below). The Gaussian is separable; per axis
 * sigma = FWHM / 2.3548 / voxel size (voxels), taps t in [-r, r] with
 * r = floor(TL_FILTER_GAUSS_TRUNCATE * sigma), weights exp(-t^2 / (2 sigma^2)) normalised to
 * sum 1 along each axis (r = 0 leaves that axis alone). Both filters replicate edges: a
 * neighbour outside the grid reads the nearest voxel inside (clamp-to-edge), so a constant
 * image stays constant; the Gaussian therefore preserves the total only for activity more
 * than r voxels from every face.
 *
 * "metz:FWHM:N" is STIR's separable Cartesian Metz filter (Metz & Beck 1974): per
 * axis the frequency response M = (1 - (1 - G^2)^(N+1)) / G of the Gaussian's
 * G (FWHM in mm), so power N = 0 is the Gaussian above and N > 0 restores the mid frequencies
 * the Gaussian damps (resolution recovery) while still cutting the highest. Its kernel is
 * that response's inverse transform, a signed sum of N + 1 Gaussians of widths
 * sigma * sqrt(2j - 1) (binomial weights), sampled and truncated like the Gaussian at
 * TL_FILTER_METZ_TRUNCATE sigmas of the widest, normalised to sum 1. */
#pragma once
#include "tl-api.h"
#include "tl-image.h"
#include "tl-stream.h"

G_BEGIN_DECLS

typedef enum {
  TL_FILTER_NONE,
  TL_FILTER_MEDIAN3,
  TL_FILTER_MEDIAN5,
  TL_FILTER_GAUSS,
  TL_FILTER_METZ,
} TlFilterKind;

typedef struct {
  TlFilterKind kind;
  double fwhm_mm; /* TL_FILTER_GAUSS and TL_FILTER_METZ */
  guint power;    /* TL_FILTER_METZ: N (0 = the Gaussian), at most TL_FILTER_METZ_MAX_POWER */
} TlFilter;

/* Kernel truncation in sigmas. */
#define TL_FILTER_GAUSS_TRUNCATE 3.0
/* Metz: truncation in sigmas of the widest Gaussian (its signed sum needs more than 3). */
#define TL_FILTER_METZ_TRUNCATE 4.0
#define TL_FILTER_METZ_MAX_POWER 20u
/* Largest Gaussian radius in voxels per axis (a larger one is an error, not a slow run). */
#define TL_FILTER_GAUSS_MAX_RADIUS 256u

/* Parses the text form; "none" gives TL_FILTER_NONE. The GError names the text and what
 * was expected. */
TL_API gboolean tl_filter_parse(const char *text, TlFilter *out, GError **error);
/* The text form back ("median3", "gauss:4"); free with g_free. */
TL_API char *tl_filter_to_string(const TlFilter *f);

/* Half kernel of the Gaussian along an axis of voxel size voxel_mm: returns r and, when w is
 * not NULL, fills w[0..r] (w[|t|] is the weight of offset t; w[0] + 2 sum w[1..r] = 1). */
TL_API guint tl_filter_gauss_radius(double fwhm_mm, double voxel_mm);
TL_API guint tl_filter_gauss_weights(double fwhm_mm, double voxel_mm, double *w);
/* The same for the Metz filter of power N (N = 0 gives tl_filter_gauss_weights' kernel with
 * the Metz truncation). */
TL_API guint tl_filter_metz_radius(double fwhm_mm, guint power, double voxel_mm);
TL_API guint tl_filter_metz_weights(double fwhm_mm, guint power, double voxel_mm, double *w);
/* The Metz filter's frequency response at f cycles per mm (the continuous one: 1 at f = 0). */
TL_API double tl_filter_metz_response(double fwhm_mm, guint power, double f);

/* Filters `image` (floats on `grid`, x fastest) in place. `scratch` holds at least as many
 * floats (NULL: allocated and freed here). Records labelled dispatches ("gauss x", "gauss y",
 * "gauss z", "median3", "median5") on `stream` (NULL: a private stream) and finishes it
 * before returning, so the temporaries can go. TL_FILTER_NONE does nothing. */
TL_API gboolean tl_filter_apply(TlContext *ctx, TlStream *stream, const TlFilter *f,
                         const TlImageGrid *grid, TlArray *image, TlArray *scratch,
                         GError **error);

G_END_DECLS
