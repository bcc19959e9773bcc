/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT's direct reconstructions (FDK, FBP) of a run, the one path of every door (the CLI's
 * ct-recon and recon, the window's CT job, Python's fdk / fbp): the volume is held in z-slabs
 * (ct/tl-ct-slabs.h), so it may exceed the device's largest allocation, and it reaches the
 * host in pieces: NIfTI is written plane by plane (image/tl-image.h), Python gets one array.
 *
 * The bounds (docs/ct.md, "Large volumes"): a grid is the user's choice, not a count read
 * from a file, so no fixed voxel cap applies beyond what the kernels index
 * (TL_CT_MAX_VOXELS); it is bounded by memory instead, checked before anything is allocated:
 * the device's memory (its largest device-local heap) must hold the volume, the slab limit
 * one plane, and the host what the caller will keep there (the whole volume for Python's
 * array or a TlImage, one chunk for a NIfTI written plane by plane). Iterative solvers keep
 * the volume in one array (tl_ct_volume_check_one_array refuses what does not fit). */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "ct/tl-ct-slabs.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

/* The host's available memory in bytes (Linux: MemAvailable; else the physical memory). */
TL_API guint64 tl_run_host_memory(void);
/* Whether a direct reconstruction of `grid` fits here, `host_bytes` being what the caller
 * will hold on the host besides the data: refused (TL_ERROR_OUT_OF_MEMORY) with a message
 * naming the grid, its bytes and the limit that does not allow it. */
TL_API gboolean tl_run_ct_direct_check(TlContext *ctx, const TlImageGrid *grid,
                                       guint64 host_bytes, GError **error);
/* FDK (fbp FALSE; cone or parallel beam) or FBP (parallel beam only) of proj (every view of
 * the geometry, line integrals) into z-slabs on the device; the stream is finished.
 * batch 0 = automatic. Checks the grid first (tl_run_ct_direct_check with host_bytes 0). */
TL_API TlCtSlabs *tl_run_ct_direct(TlContext *ctx, TlStream *s, const TlCtGeometry *geometry,
                                   const TlImageGrid *grid, gboolean fbp, TlCtFilter filter,
                                   guint batch, const TlArray *proj, GError **error);
/* The volume to the host as one TlImage (grids of at most TL_IMAGE_MAX_VOXELS: the window,
 * a truth's RMSE, formats other than NIfTI); GError naming the grid and the limit. */
TL_API TlImage *tl_run_ct_slabs_image(const TlCtSlabs *v, GError **error);
/* Writes the volume: NIfTI (.nii, .nii.gz) plane by plane whatever its size, other image
 * formats (tl_image_save) through one TlImage. */
TL_API gboolean tl_run_ct_slabs_save(const TlCtSlabs *v, const char *unit, const char *path,
                                     GError **error);

G_END_DECLS
