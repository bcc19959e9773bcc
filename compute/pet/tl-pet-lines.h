/* SPDX-License-Identifier: GPL-3.0-or-later */
/* "pet-lines": the PET system matrix over explicit lines (end points in mm), with a measured
 * count per line: the operator of data whose bins are lines rather than crystal pairs, such as
 * arc-corrected STIR projection data (pet/data/tl-sinogram-arc.h; issue 26 item 3). The lines
 * go through the same ray projectors as list mode and crystal-pair bins (tl-projector.h,
 * TL_LORS_END_POINTS records); the sensitivity of a subset is the column sums of its own
 * lines, A_s^T 1 (every line of the data is stored, counted or not). D (tl_operator_set_diag)
 * is applied around the projector calls.
 *
 * Several rays per line (issue 26 item 4, like STIR's "number of rays in tangential
 * direction"): each datum is a weighted sum of R rays spread over its bin, A = sum_r w_r A_r
 * (weights summing to 1: a quadrature of the bin's width), the adjoint its exact transpose;
 * the sensitivity follows.
 *
 * Time of flight (Python's line_operator, parallelproj's TOF list mode): each line carries a
 * TOF bin and every ray of it the list-mode TOF kernel (tl-projector.h TlTof: bin 0 centred on
 * the ray's midpoint, positive towards its second end point). The projector's kernels take a
 * TOF bin only with crystal-pair events, so the end points become a crystal table of two
 * "crystals" per line (2j, 2j + 1 at data position j, one table per ray) and line j the event
 * (2j, 2j + 1, bin): the same rays as without TOF and the same kernel as list mode.
 *
 * Data order: line i belongs to subset group[i] mod S (group NULL: S contiguous equal blocks
 * of the given order); subsets one after the other, the given order kept inside each. */
#pragma once
#include "tl-api.h"
#include "recon/tl-operator.h"
#include "pet/project/tl-projector.h"
#include "pet/data/tl-sinogram.h"

G_BEGIN_DECLS

#define TL_PET_LINES_MAX_RAYS 64u

/* n lines of n_rays rays each (ends: 6 floats per ray, finite, ray-major: ray r of line i at
 * ends + 6 (n r + i)), ray_weights n_rays values >= 0 summing to 1 (NULL: 1 / n_rays each),
 * counts one per line (finite, >= 0, total > 0; NULL: an operator without measured counts,
 * whose problem is given its data), all copied; projector "siddon", "joseph" or "tor" (NULL:
 * siddon), S subsets in 1..n. */
TL_API TlOperator *tl_pet_lines_operator_new(TlContext *ctx, const TlImageGrid *grid,
                                             const char *projector, guint64 n,
                                             const float *ends, guint n_rays,
                                             const float *ray_weights, const float *counts,
                                             const guint32 *group, guint subsets,
                                             GError **error);

/* The same with time of flight: tof_bin one bin per line, tof the kernel
 * (positive finite sigma_mm and bin_mm, n_sigma in (0, 10]); tof NULL: without TOF, as above
 * (tof_bin ignored). */
TL_API TlOperator *tl_pet_lines_operator_new_tof(TlContext *ctx, const TlImageGrid *grid,
                                                 const char *projector, guint64 n,
                                                 const float *ends, guint n_rays,
                                                 const float *ray_weights, const gint32 *tof_bin,
                                                 const TlTof *tof, const float *counts,
                                                 const guint32 *group, guint subsets,
                                                 GError **error);

/* The position in the operator's data order of each given line i (n entries, g_free), so
 * that a forward projection can be written back in the caller's order. */
TL_API guint64 *tl_pet_lines_operator_order(const TlOperator *op);

/* The class of operators with counts; those made without are of a twin class of the same
 * name that lacks the counts method (tl_operator_has_counts). */
/* Arc-corrected STIR projection data as this operator (issue 26 items 3-4): each bin the line
 * of pet/data/tl-sinogram-arc.h with rays_t x rays_z rays (1 x 1: the bin's own line), its
 * value the bin's count; subset k holds the views v with v mod S = k (interleaved views, as
 * STIR's subsets), in sinogram order inside. The one constructor of the CLI, the window and
 * Python for such data, so that they build the same operator. mu (mm^-1 on the grid, checked
 * as tl_pet_check_attenuation; NULL: none): D = exp(-A mu), the attenuation factor of each bin
 * from its rays' weighted line integral (van Gendt et al. 2021 eq. 6), so that the
 * sensitivity is A^T D 1. GError as tl_sinogram_arc_lines and tl_pet_lines_operator_new (a
 * sinogram without counts too). */
TL_API TlOperator *tl_pet_lines_operator_new_arc(TlContext *ctx, const TlImageGrid *grid,
                                                 const char *projector,
                                                 const TlSinogram *sino, guint rays_t,
                                                 guint rays_z, guint subsets, const TlImage *mu,
                                                 GError **error);

/* Any STIR sinogram whose bins are lines (issue 26 item 4 as a run path): arc-corrected data as
 * tl_pet_lines_operator_new_arc; data that are not arc-corrected (span 1, no view mashing) each
 * bin the line between its two detectors with rays_t x rays_z rays spread over the bin's
 * sampling and a ring's width (tl_sinogram_pair_lines), bins with a block gap at either end
 * weighted 0 (no crystal there: no line, as tl_sinogram_to_bins drops them), so the
 * sensitivity A^T D 1 sums the sinogram's crystal pairs only. Subsets of interleaved views and
 * mu as tl_pet_lines_operator_new_arc. GError as tl_sinogram_pair_lines for crystal-pair data
 * (span > 1 and mashed views named), as tl_pet_lines_operator_new_arc otherwise. */
TL_API TlOperator *tl_pet_lines_operator_new_sinogram(TlContext *ctx, const TlImageGrid *grid,
                                                      const char *projector,
                                                      const TlSinogram *sino, guint rays_t,
                                                      guint rays_z, guint subsets,
                                                      const TlImage *mu, GError **error);

TL_API extern const TlOperatorClass tl_pet_lines_operator_class;

G_END_DECLS
