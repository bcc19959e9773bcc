/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSrm: a precomputed system response matrix (SRM) of the dual-head scanner (Chou et al. 2012,
 * Chou et al. 2012), stored once per symmetry class.
 *
 * Detector response. h(c_u, c_l; v) is "the probability for an annihilation taking place in
 * voxel v to be detected at the LOR (c_u, c_l)" (Chou et al. 2012). Here it is numerically
 * integrated for a point at the voxel centre: back-to-back photons in isotropic directions,
 *
 *   h = (2 / 4 pi) Int_{omega towards head 0} f_A(omega) f_B(-omega) d omega,
 *   f_A = exp(-mu s0 / cos) - exp(-mu s1 / cos),
 *
 * with [s0, s1] the depths (along x) over which the photon's line lies inside crystal A's
 * column of the head, so a photon that enters a neighbour's face and penetrates into A counts
 * for A (depth of interaction, penetration). Each head is a gapless slab of columns of the
 * crystal pitch, `depth_mm` deep (scanner crystal_size[2]); mu is the linear attenuation of
 * LYSO at 511 keV, 0.087 mm^-1 (attenuation length 11.5 mm; e.g. Saint-Gobain's PreLude 420
 * sheet: 1.15 cm). The first interaction absorbs (no scatter in the crystal, no energy
 * window, no gaps, no lateral head edges: the slab is unbounded sideways, which is what
 * makes the shift invariance exact).
 *
 * Symmetries (Chou et al. 2012 eq. 6-9), valid when the y and z voxel sizes are pitch / D (D >= 1
 * integer) and the grid is centred on the scanner:
 *   shift      h(c_u + m, c_l + m; v + (0, D m)) = h(c_u, c_l; v)            (eq. 6)
 *   reflection y -> -y and z -> -z map direction (du, dv) to (-du, dv), (du, -dv)  (eq. 8)
 *   x          h(c_l, c_u; v) = h(c_u, c_l; R_x v) (eq. 7), with eq. 8 and 6: the point
 *              reflection through the LOR's midpoint leaves the pair unchanged, so only
 *              planes ix <= (nx - 1) / 2 are stored (the seed's 60 of 119 p-planes)
 *   interchange y <-> z (eq. 9; equal pitch and voxel size in y and z, same lattice parity):
 *              direction (du, dv) is stored as (max, min).
 * So one class per (|du|, |dv|) (sorted when interchanging) holds the response of the
 * reference LOR from crystal (0, 0) of head 0, voxels given RELATIVE to that crystal in
 * half-voxel units (m_y, m_z) and by the plane ix. Any LOR (u_a, v_a) -> (u_b, v_b) and voxel
 * map to a stored element by tl_srm_element() (and the same arithmetic in shaders/pet/srm_*).
 *
 * Cache files: tl_srm_save / tl_srm_load (docs/srm.md), keyed by scanner and grid. */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-scanner.h"

G_BEGIN_DECLS

#define TL_SRM_LYSO_MU 0.087 /* mm^-1 at 511 keV */
/* Most stored elements a matrix may have (cache files are held to it before allocating). */
#define TL_SRM_MAX_ELEMENTS (1ull << 30)

typedef struct {
  double mu_per_mm;  /* crystal attenuation at 511 keV; default TL_SRM_LYSO_MU */
  double depth_mm;   /* crystal depth; <= 0: the scanner's crystal_size[2] */
  guint samples;     /* integration points per axis of the direction box (default 8) */
  double threshold;  /* elements below threshold x the class maximum are dropped (1e-3;
                        0 keeps every nonzero) */
} TlSrmParams;

TL_API void tl_srm_params_init(TlSrmParams *p);

/* The response h of the crystal pair (a on head 0, b on head 1: crystal ids of `s`) for a
 * point at `p` (mm): the model above, in absolute coordinates (no symmetry used). */
TL_API double tl_srm_point_response(const TlScanner *s, const TlSrmParams *prm, guint a, guint b,
                             const double p[3]);

typedef struct _TlSrm TlSrm;

/* Builds the stored classes (threaded over classes). Needs a dual-head scanner and a grid
 * as described above; the GError says which condition fails. */
TL_API TlSrm *tl_srm_new(const TlScanner *s, const TlImageGrid *grid, const TlSrmParams *prm,
                  GError **error);
TL_API void tl_srm_free(TlSrm *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlSrm, tl_srm_free)

/* h for the pair (a, b) (either order) and voxel index (x fastest), via the symmetries. */
TL_API float tl_srm_element(const TlSrm *m, guint a, guint b, guint64 voxel);

/* Sizes: stored classes and elements, bytes of the stored form (key + value per element and
 * the class offsets), and the full matrix: LORs x voxels and its nonzeros (counted by
 * expanding every LOR through the symmetries when count_full_nnz; else 0). */
typedef struct {
  guint n_classes;
  guint64 stored;
  guint64 stored_bytes;
  guint64 n_lors, n_voxels;
  guint64 full_nnz;
} TlSrmSizes;
TL_API void tl_srm_sizes(const TlSrm *m, gboolean count_full_nnz, TlSrmSizes *out);

/* Device form, used by the "pet-srm" operator (tl-srm-operator.h). */
typedef struct {
  guint nx, ny, nz, D;
  gint ey, ez;                 /* voxel iy = (m_y + ey) / 2 + u_a D (m_y + ey even) */
  gboolean interchange, xsym;
  guint n_classes;
  const guint32 *class_ptr;    /* n_classes + 1 */
  const guint32 *key;          /* ix, m_y, m_z packed as TL_SRM_KEY_* (tl_constants.glsl) */
  const float *val;
  guint nu, nv;
} TlSrmTables;
TL_API void tl_srm_tables(const TlSrm *m, TlSrmTables *t);
TL_API const TlImageGrid *tl_srm_grid(const TlSrm *m);
/* Class of direction (du, dv) = (u_b - u_a, v_b - v_a) and the transform flags:
 * bit 0 swap y/z, bit 1 negate y, bit 2 negate z. */
TL_API guint tl_srm_class(const TlSrm *m, int du, int dv, guint *flags);
/* Head coordinates of a crystal id: head (0/1), u (along y), v (along z). */
TL_API void tl_srm_crystal(const TlSrm *m, guint id, guint *head, guint *u, guint *v);

/* Cache file: a binary file (header with scanner key, grid key, params; then the classes),
 * written atomically; load bounds every count by the file size and TL_SRM_MAX_ELEMENTS
 * before allocating and checks the keys against the scanner and grid given. */
TL_API gboolean tl_srm_save(const TlSrm *m, const char *path, GError **error);
TL_API TlSrm *tl_srm_load(const char *path, const TlScanner *s, const TlImageGrid *grid,
                   const TlSrmParams *prm, GError **error);
/* $XDG_CACHE_HOME/tomolab/srm-<hash>.bin: loaded when present and matching, else built and
 * saved. *from_cache (may be NULL) says which. */
TL_API TlSrm *tl_srm_cached(const TlScanner *s, const TlImageGrid *grid, const TlSrmParams *prm,
                     gboolean *from_cache, GError **error);

G_END_DECLS
