/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sensitivity image s_n = sum over every detectable crystal pair j of a_jn: the S_n of
 * van Gendt et al. 2021 eq. 3-4, the "Denom" Kovács (n.d.) precomputes, sum_{i in S_k} H_ij of
 * Chou et al. 2012 eq. 4.
 * The device iterates the pairs itself (tl_projector_sensitivity); the image is cached in
 * $XDG_CACHE_HOME/tomolab/sensitivity-<sha256>.f32, keyed by tl_scanner_key +
 * tl_image_grid_key + projector name + subset, since a clinical scanner has ~2 * 10^8 pairs. */
#pragma once
#include "tl-api.h"
#include "tl-projector.h"

G_BEGIN_DECLS

/* Pairs p (tl_pair_index order) with p % subsets == subset; subsets 1, subset 0 = all.
 * Returns a new device image. *from_cache (may be NULL) says whether it was read from disk.
 * A cache that cannot be written costs a recomputation next time, not a failure. */
TL_API TlArray *tl_sensitivity_image(TlProjector *p, TlStream *s, const TlScanner *scanner,
                              const TlArray *crystals, guint subsets, guint subset,
                              gboolean use_cache, gboolean *from_cache, GError **error);
/* With attenuation (van Gendt et al. 2021 eq. 7): s'_n = sum over the pairs p of a_p a_pn, a_p =
 * exp(-integral of mu along p); mu (mm^-1, on the projector's grid) may be NULL. The cache
 * key then includes mu_hash (tl_sensitivity_mu_hash of the map); mu_hash NULL = no caching. */
TL_API TlArray *tl_sensitivity_image_atten(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                    const TlArray *crystals, guint subsets, guint subset,
                                    const TlArray *mu, const char *mu_hash, gboolean use_cache,
                                    gboolean *from_cache, GError **error);
/* With the normalisation too (van Gendt et al. 2021 eq. 7 with n_j a_j): s''_n = sum over the
 * pairs p of
 * n_p a_p a_pn (norm NULL = tl_sensitivity_image_atten). The cache key then includes the
 * normalisation's sha256 (TlNorm.sha256). */
TL_API TlArray *tl_sensitivity_image_norm(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                   const TlArray *crystals, guint subsets, guint subset,
                                   const TlArray *mu, const char *mu_hash,
                                   const TlSensNorm *norm, gboolean use_cache,
                                   gboolean *from_cache, GError **error);
/* SHA-256 (hex) of the mu-map's float32 voxels; caller frees. */
TL_API char *tl_sensitivity_mu_hash(const TlImage *mu);
/* The exact symmetries of a scanner's crystal table and an image grid that the sensitivity
 * image uses (compute/pet/tl-sensitivity-sym.c): transforms c = 0..15 (bit 2 swap x and y,
 * then bit 0 x -> -x, bit 1 y -> -y, bit 3 z -> -z), those that map every crystal onto a
 * crystal (pair rule kept) and the grid's voxels onto its voxels. The sum over all pairs is
 * then the sum over one pair per orbit, weighted by 1 / (symmetries fixing it), of the images
 * under the `order` symmetries: about order x fewer pairs to trace. */
typedef struct {
  guint order;    /* number of symmetries, identity included (1 = none usable) */
  guint32 mask;   /* bit c set: transform c is one (bit 0, the identity, always) */
  guint32 *perm;  /* order > 1: for each non-identity transform, by increasing c, the crystal
                   * each crystal maps to (n_crystals entries each); else NULL */
} TlSensSymmetry;

/* swaps: whether the transforms swapping x and y may be used. Siddon's chord lengths are
 * symmetric under them; Joseph's and the TOR's dominant axis is x on a tie |dx| = |dy| (a
 * 45-degree pair), whose mirror image under a swap is not the same computation: FALSE there. */
TL_API void tl_sensitivity_symmetry(const TlScanner *scanner, const TlImageGrid *grid, gboolean swaps,
                             TlSensSymmetry *sym);
/* tl_sensitivity_symmetry keeping only the transforms `norm` is invariant under
 * (tl_norm_invariant; a subgroup, so the sum stays exact). norm NULL: all of them. */
TL_API void tl_sensitivity_symmetry_norm(const TlScanner *scanner, const TlImageGrid *grid,
                                  gboolean swaps, const TlNorm *norm, TlSensSymmetry *sym);
/* The first voxel plane of `grid` along axis k, origin - vox / 2, in double; exactly
 * -n vox / 2 when that puts the grid's middle within 0.1 um of 0 (the tolerance for "centred"
 * of the symmetries above). A float origin cannot hold a centred grid's -(n - 1) vox / 2 (the
 * demo grid's middle sits 5.5e-6 mm off): the double walk of the sensitivity image
 * (pet_sens_f64) uses this plane, so the full and the symmetric method sum over one grid
 * (they differed by 3.3e-6 of the maximum on the DMI before). */
TL_API double tl_sensitivity_plane_lo(const TlImageGrid *grid, int k);
/* The swaps argument for projector p. */
TL_API gboolean tl_sensitivity_swaps(const TlProjector *p);
TL_API void tl_sensitivity_symmetry_clear(TlSensSymmetry *sym);
/* The allowed pairs (tl_pair_index numbers) that are the smallest of their orbit under sym
 * (order > 1), grouped by the number of symmetries fixing the pair, 1, 2, 4, 8, 16:
 * counts[k] pairs fixed by 2^k of them, in that order; g_free the result. */
TL_API guint32 *tl_sensitivity_orbit_pairs(const TlScanner *scanner, const TlSensSymmetry *sym,
                                    guint64 counts[5]);

/* Where that image is cached (whether or not the file exists); caller frees. */
TL_API char *tl_sensitivity_cache_path(const TlProjector *p, const TlScanner *scanner, guint subsets,
                                guint subset);

G_END_DECLS
