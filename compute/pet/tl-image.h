/* TlImageGrid + TlImage: a 3-D float volume on a regular grid, x fastest.
 * origin_mm is the centre of voxel (0,0,0) in scanner coordinates (mm), axes aligned. */
#pragma once
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

typedef struct {
  guint dims[3];
  float voxel_mm[3];
  float origin_mm[3];
} TlImageGrid;

typedef struct {
  TlImageGrid grid;
  float *data; /* dims[0]*dims[1]*dims[2], index = x + dims[0]*(y + dims[1]*z) */
} TlImage;

/* A grid of dims voxels of size voxel_mm centred on the scanner origin. */
TlImageGrid tl_image_grid_centred(guint nx, guint ny, guint nz, float vx, float vy, float vz);
guint64 tl_image_grid_n_voxels(const TlImageGrid *g);
gboolean tl_image_grid_equal(const TlImageGrid *a, const TlImageGrid *b);
char *tl_image_grid_key(const TlImageGrid *g);

TlImage *tl_image_new(const TlImageGrid *grid); /* zero-filled */
TlImage *tl_image_copy(const TlImage *im);
void tl_image_free(TlImage *im);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlImage, tl_image_free)

/* NIfTI-1 (.nii, .nii.gz) with a correct qform/sform affine; raw float32 (.raw + .txt
 * sidecar, see docs/formats.md) as a fallback. Writes are atomic (temp file + rename). */
TlImage *tl_image_load(const char *path, GError **error);
gboolean tl_image_save(const TlImage *im, const char *path, GError **error);

G_END_DECLS
