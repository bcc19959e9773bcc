/* The sensitivity image s_n = sum over every detectable crystal pair j of a_jn: the S_n of
 * seed 000 eq. 3-4, the "Denom" seed 002 precomputes, sum_{i in S_k} H_ij of seed 004 eq. 4.
 * The device iterates the pairs itself (tl_projector_sensitivity); the image is cached in
 * $XDG_CACHE_HOME/tomolab/sensitivity-<sha256>.f32, keyed by tl_scanner_key +
 * tl_image_grid_key + projector name + subset, since a clinical scanner has ~2 * 10^8 pairs. */
#pragma once
#include "tl-projector.h"

G_BEGIN_DECLS

/* Pairs p (tl_pair_index order) with p % subsets == subset; subsets 1, subset 0 = all.
 * Returns a new device image. *from_cache (may be NULL) says whether it was read from disk.
 * A cache that cannot be written costs a recomputation next time, not a failure. */
TlArray *tl_sensitivity_image(TlProjector *p, TlStream *s, const TlScanner *scanner,
                              const TlArray *crystals, guint subsets, guint subset,
                              gboolean use_cache, gboolean *from_cache, GError **error);
/* With attenuation (seed 000 eq. 7): s'_n = sum over the pairs p of a_p a_pn, a_p =
 * exp(-integral of mu along p); mu (mm^-1, on the projector's grid) may be NULL. The cache
 * key then includes mu_hash (tl_sensitivity_mu_hash of the map); mu_hash NULL = no caching. */
TlArray *tl_sensitivity_image_atten(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                    const TlArray *crystals, guint subsets, guint subset,
                                    const TlArray *mu, const char *mu_hash, gboolean use_cache,
                                    gboolean *from_cache, GError **error);
/* SHA-256 (hex) of the mu-map's float32 voxels; caller frees. */
char *tl_sensitivity_mu_hash(const TlImage *mu);
/* Where that image is cached (whether or not the file exists); caller frees. */
char *tl_sensitivity_cache_path(const TlProjector *p, const TlScanner *scanner, guint subsets,
                                guint subset);

G_END_DECLS
