/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtProjector: the CT system matrix A of one geometry and one volume grid, on the device
 * (Petit 2020 eq. 2.4-2.5: y = A x forward, x = A^T y back). Methods:
 *
 *   joseph   Joseph's interpolating projector (Petit 2020 ch. 3)          forward + adjoint
 *   siddon   Siddon's exact intersection lengths (Petit 2020 ch. 3)       forward + adjoint
 *   raycast  equidistant trilinear samples (Siegl et al. 2011 Algorithm 2)        forward + adjoint
 *   voxel    voxel-driven back projection with bilinear detector
 *            interpolation and 1/w^2 weights (Siegl et al. 2011 eq. 1, Alg. 1)   back only (FDK's)
 *
 * Forward projection is ray-driven: one work item per detector pixel. The back projectors of
 * joseph, siddon and raycast are the exact adjoints of their forwards, in two forms
 * (TlCtBack): a SCATTER, ray-driven like the forward (the same walk, each ray's value added
 * into the voxels it touches with atomics), and a GATHER (one work item per voxel, looping
 * over the views, the same weights a_jn rebuilt per voxel from the same rays: no atomics, but
 * every pixel of each voxel's footprint is visited; 5-8x the forward on lavapipe, 35-400x on
 * an H100, bench/README.md). Both are adjoint to 1e-5 (tests/test-ct-projector.c). voxel's
 * back projection is a gather.
 *
 * Projection data are float arrays of views x rows (det_v) x columns (det_u), column fastest.
 * A call works on a selection of views (TlCtViews: first + k * stride, k < count) and its
 * projection array holds just those views, contiguous, in that order. Calls record work on a
 * TlStream and return before it runs; the arrays must outlive that work. */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"
#include "image/tl-image.h"
#include "tl-ct-geometry.h"

G_BEGIN_DECLS

typedef enum {
  TL_CT_JOSEPH,
  TL_CT_SIDDON,
  TL_CT_RAYCAST,
  TL_CT_VOXEL,
} TlCtMethod;

typedef struct {
  guint first, stride, count;
} TlCtViews;

/* How the back projection of joseph, siddon and raycast runs. */
typedef enum {
  TL_CT_BACK_AUTO,        /* $TOMOLAB_CT_BACK (a name below) if set, else by
                           * device type: the one measured fastest (tl-ct-projector.c) */
  TL_CT_BACK_GATHER,      /* voxel-driven gather of the exact weights (no atomics) */
  TL_CT_BACK_SCATTER,     /* ray-driven scatter: float atomic add where the device has
                           * shaderBufferFloat32AtomicAdd, else the compare-and-swap kernel */
  TL_CT_BACK_SCATTER_CAS, /* the scatter built without the float-atomic capability (what devices
                           * lacking it run; selectable to test or time it anywhere) */
  TL_CT_BACK_SCATTER_TILED, /* joseph: the scatter by 16 x 16-pixel tiles, each plane's adds summed
                           * in shared memory first (fewer global atomics, for GPUs); other
                           * projectors, or no float atomics: as SCATTER */
  TL_CT_BACK_SCATTER_FIXED, /* the scatter summed in 64-bit fixed point (core/tl-fixed.h): the
                           * same image on every run, which the float scatters above are not
                           * (~1e-7 relative apart); AUTO's scatter. Grids of more than 2^31 - 4
                           * voxels: as SCATTER. One 64-bit integer atomic per term where the
                           * device has shaderBufferInt64Atomics, else as SCATTER_FIXED32 */
  TL_CT_BACK_SCATTER_FIXED32, /* the same sums, bit for bit, with two 32-bit atomics per term
                           * (what devices without 64-bit atomics run; selectable to test or
                           * time it anywhere) */
} TlCtBack;

typedef struct _TlCtProjector TlCtProjector;

/* "auto", "gather", "scatter", "scatter-cas", "scatter-tiled", "scatter-fixed",
 * "scatter-fixed32"; GError names
 * the known ones. */
TL_API const char *tl_ct_back_name(TlCtBack b);
TL_API gboolean tl_ct_back_from_name(const char *name, TlCtBack *out, GError **error);

TL_API const char *tl_ct_method_name(TlCtMethod m);
/* "joseph", "siddon", "raycast", "voxel"; GError names the known ones. */
TL_API gboolean tl_ct_method_from_name(const char *name, TlCtMethod *out, GError **error);

/* Fails for an invalid grid, or (cone beam) when the volume reaches behind a view's source
 * (every voxel must lie in front of every source, so all rays meet it for t > 0). The
 * geometry is copied. */
TL_API TlCtProjector *tl_ct_projector_new(TlContext *ctx, const TlCtGeometry *geometry,
                                   const TlImageGrid *grid, TlCtMethod method, GError **error);
TL_API void tl_ct_projector_free(TlCtProjector *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtProjector, tl_ct_projector_free)

TL_API TlContext *tl_ct_projector_context(const TlCtProjector *p);
TL_API const TlCtGeometry *tl_ct_projector_geometry(const TlCtProjector *p);
TL_API const TlImageGrid *tl_ct_projector_grid(const TlCtProjector *p);
TL_API TlCtMethod tl_ct_projector_method(const TlCtProjector *p);
/* Chooses the back projection (built now; AUTO resolves as above). Fails for an unknown mode,
 * or for an unreadable $TOMOLAB_CT_BACK (AUTO), naming it. voxel: always its gather. */
TL_API gboolean tl_ct_projector_set_back(TlCtProjector *p, TlCtBack mode, GError **error);
/* The back projection in use, resolved: GATHER, SCATTER, SCATTER_CAS or SCATTER_TILED (SCATTER
 * on a device without float atomics reads SCATTER_CAS; SCATTER_TILED where it does not apply
 * reads what ran instead). */
TL_API TlCtBack tl_ct_projector_back_mode(const TlCtProjector *p);
/* Voxel-driven back projection only (others ignore it): with disc, only the voxels within the
 * disc inscribed in each slice (radius min(nx, ny) / 2 voxels about the grid's centre column)
 * are back-projected, the others are set to 0 (left as they are when accumulating): a slice
 * scored on that disc (tl-ct-centre.h) costs ~21 % less. Default FALSE. */
TL_API void tl_ct_projector_set_disc(TlCtProjector *p, gboolean disc);
/* Ray casting: sample spacing in mm (default half the smallest voxel edge). */
TL_API void tl_ct_projector_set_step(TlCtProjector *p, float step_mm);
TL_API float tl_ct_projector_step(const TlCtProjector *p);
/* The per-view table the kernels read (32 floats per view, shaders/ct/ct_common.glsl). */
TL_API const TlArray *tl_ct_projector_views_table(const TlCtProjector *p);

/* Every view of the geometry. */
TL_API TlCtViews tl_ct_views_all(const TlCtGeometry *g);
/* Views s, s + n, s + 2n ... (interleaved subset s of n). */
TL_API TlCtViews tl_ct_views_subset(const TlCtGeometry *g, guint s, guint n);
/* Detector pixels of a selection (the length its projection array needs). */
TL_API guint64 tl_ct_views_n_pixels(const TlCtGeometry *g, const TlCtViews *v);

/* proj = A image (accumulate: proj += A image) over the selected views. voxel: error. */
TL_API gboolean tl_ct_projector_forward(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                 const TlArray *image, TlArray *proj, gboolean accumulate,
                                 GError **error);
/* image = A^T proj (accumulate: image += ...). voxel: image = sum_n p^_n(u, v) / w^2. */
TL_API gboolean tl_ct_projector_back(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                              const TlArray *proj, TlArray *image, gboolean accumulate,
                              GError **error);

/* Volumes larger than one allocation are held in z-slabs (tl-ct-slabs.h, which loops over
 * them with these two). The CT kernels index voxels with 32-bit integers: */
#define TL_CT_MAX_VOXELS G_GUINT64_CONSTANT(0xffffffff)
/* proj (+)= A restricted to planes [z0, z0 + nz), whose voxels slab holds (nx ny nz floats). */
TL_API gboolean tl_ct_projector_forward_slab(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                             const TlArray *slab, guint z0, guint nz,
                                             TlArray *proj, gboolean accumulate, GError **error);
/* Planes [z0, z0 + nz) of A^T proj (voxel: of FDK's sum) into slab (accumulate: +=), by the
 * gather whatever tl_ct_projector_set_back chose: the same bits as the unsplit gather. */
TL_API gboolean tl_ct_projector_back_slab(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                          const TlArray *proj, TlArray *slab, guint z0, guint nz,
                                          gboolean accumulate, GError **error);
/* Fails (naming the grid, its bytes and the limits) where the volume does not fit one array:
 * the device's largest allocation or Tomolab's 2^28-voxel images. tl_ct_projector_new accepts
 * any volume up to TL_CT_MAX_VOXELS whose planes fit an allocation; the single-array calls
 * above and the iterative reconstructions need this too. */
TL_API gboolean tl_ct_volume_check_one_array(TlContext *ctx, const TlImageGrid *grid,
                                             GError **error);

G_END_DECLS
