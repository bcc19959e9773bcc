/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The mu-map check (tl-attenuation.h). */
#include "tl-attenuation.h"
#include <math.h>

gboolean tl_pet_check_attenuation(const TlImage *mu, const TlImageGrid *grid, GError **error) {
  if (!tl_image_grid_equal(&mu->grid, grid)) {
    g_autofree char *want = tl_image_grid_key(grid), *got = tl_image_grid_key(&mu->grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "attenuation map on grid %s, but the reconstruction is on %s (resample the "
                "mu-map to the image grid first)", got, want);
    return FALSE;
  }
  guint64 nv = tl_image_grid_n_voxels(grid);
  for (guint64 i = 0; i < nv; i++) {
    float v = mu->data[i];
    if (!isfinite(v) || v < 0.0f || v > TL_PET_MU_MAX) {
      guint64 x = i % grid->dims[0], y = i / grid->dims[0] % grid->dims[1],
              z = i / grid->dims[0] / grid->dims[1];
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "attenuation map voxel (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                  ", %" G_GUINT64_FORMAT "): mu = %g mm^-1, expected a finite value in [0, %g] "
                  "(water is 0.0096 mm^-1 at 511 keV; a map in cm^-1 is 10x too large)",
                  x, y, z, (double)v, (double)TL_PET_MU_MAX);
      return FALSE;
    }
  }
  return TRUE;
}
