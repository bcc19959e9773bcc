/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlImageGrid + TlImage: a 3-D float volume on a regular grid, x fastest.
 * origin_mm is the centre of voxel (0,0,0) in scanner coordinates (mm), axes aligned. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

/* The largest image Tomolab makes or reads: 2^28 voxels (1 GiB of float32; the DMI grid is
 * 3.3 * 10^6). Grids and image files claiming more are refused before any allocation. */
#define TL_IMAGE_MAX_VOXELS (G_GUINT64_CONSTANT(1) << 28)

typedef struct {
  guint dims[3];
  float voxel_mm[3];
  float origin_mm[3];
} TlImageGrid;

/* The unit of an image's values, e.g. "Bq/mL" (pet/tl-units.h), "mm^-1", "HU"; "" = arbitrary
 * (a reconstruction without calibration: counts per unit sensitivity). Printable ASCII. */
#define TL_IMAGE_UNIT_MAX 24

typedef struct {
  TlImageGrid grid;
  float *data; /* dims[0]*dims[1]*dims[2], index = x + dims[0]*(y + dims[1]*z) */
  char unit[TL_IMAGE_UNIT_MAX]; /* "" = arbitrary units; kept by NIfTI (descrip) and DICOM */
} TlImage;

/* A grid of dims voxels of size voxel_mm centred on the scanner origin. */
TL_API TlImageGrid tl_image_grid_centred(guint nx, guint ny, guint nz, float vx, float vy, float vz);
TL_API guint64 tl_image_grid_n_voxels(const TlImageGrid *g);
TL_API gboolean tl_image_grid_equal(const TlImageGrid *a, const TlImageGrid *b);
TL_API char *tl_image_grid_key(const TlImageGrid *g);

/* Dims >= 1, voxel sizes positive, everything finite, at most TL_IMAGE_MAX_VOXELS; the GError
 * names the field and the value found. Every fallible call taking a grid checks it. */
TL_API gboolean tl_image_grid_validate(const TlImageGrid *g, GError **error);
/* The same without the voxel bound: for a grid computed in pieces (CT FDK in z-slabs,
 * run/tl-run-ct-direct.h), never held as one TlImage, which its memory bounds instead. */
TL_API gboolean tl_image_grid_validate_shape(const TlImageGrid *g, GError **error);
/* Centre of voxel (i, j, k) in mm: origin + (i*vx, j*vy, k*vz). */
TL_API void tl_image_grid_voxel_centre(const TlImageGrid *g, double i, double j, double k, double out[3]);

TL_API TlImage *tl_image_new(const TlImageGrid *grid); /* zero-filled */
TL_API TlImage *tl_image_copy(const TlImage *im); /* grid, voxels and unit */
/* Sets the unit (NULL or "" = arbitrary); FALSE, unit unchanged, for one of TL_IMAGE_UNIT_MAX
 * or more bytes or with a character outside printable ASCII (it goes into file headers). */
TL_API gboolean tl_image_set_unit(TlImage *im, const char *unit);
/* The unit for people: im->unit, or "a.u." when none is set. */
TL_API const char *tl_image_unit(const TlImage *im);
TL_API void tl_image_free(TlImage *im);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlImage, tl_image_free)

/* The one image loader: any image format of tl_image_formats() (NIfTI, raw, Interfile with
 * STIR's .hv, MetaImage .mha/.mhd, DICOM), detected by content like the format table does
 * (tl-image-formats.c). save picks the writer by the extension (.nii, .nii.gz, .raw, .hv,
 * .mha, .mhd, .dcm). Writes are atomic (temp file + rename). */
TL_API TlImage *tl_image_load(const char *path, GError **error);
TL_API gboolean tl_image_save(const TlImage *im, const char *path, GError **error);
/* The image formats, NULL-terminated: the image part of the format table. */
TL_API const TlFormatClass *const *tl_image_formats(void);

/* Activity must be finite and >= 0: the GError names `what`, the voxel and its value. */
TL_API gboolean tl_image_check_nonnegative(const TlImage *im, const char *what, GError **error);
TL_API double tl_image_sum(const TlImage *im);

/* NIfTI-1 and raw float32 (tl-image-nifti.c, tl-image.c), each format alone. */
TL_API TlImage *tl_image_load_nifti(const char *path, GError **error);
TL_API gboolean tl_image_save_nifti(const TlImage *im, const char *path, GError **error);
/* Reads planes [first, first + n) of the volume being written into buf (nx ny n floats). */
typedef gboolean (*TlImagePlanesFunc)(guint first, guint n, float *buf, gpointer data,
                                      GError **error);
/* NIfTI-1 (.nii, .nii.gz) of a volume held elsewhere (a device's z-slabs), written plane by
 * plane through a host buffer of at most 64 MiB (one plane where a plane is larger): the same
 * bytes as tl_image_save_nifti of the whole image, for grids of any voxel count that pass
 * tl_image_grid_validate_shape (NIfTI-1: at most 32767 voxels per axis). unit NULL = none. */
TL_API gboolean tl_image_save_nifti_planes(const TlImageGrid *grid, const char *unit,
                                           const char *path, TlImagePlanesFunc read,
                                           gpointer data, GError **error);
TL_API TlImage *tl_image_load_raw(const char *path, GError **error);
TL_API gboolean tl_image_save_raw(const TlImage *im, const char *path, GError **error);

/* Entries of the format table (compute/dataset/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_nifti;
TL_API extern const TlFormatClass tl_format_raw;

G_END_DECLS
