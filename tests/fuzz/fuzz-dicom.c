/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DICOM (image/tl-dicom.h through DCMTK, image/tl-format-dicom.c): what loads has a grid with
 * positive sizes and finite values; what fails says why. The input is the only file of its
 * folder, so the series is that file. */
#include "tl-fuzz.h"
#include "image/tl-dicom.h"
#include "image/tl-image.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in;
  if (!in) in = tl_fuzz_path("in.dcm");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  GString *info = g_string_new(NULL);
  if (!tl_format_dicom.describe(in, info, &e)) tl_fuzz_check_error(e);
  g_string_free(info, TRUE);
  g_clear_error(&e);
  g_autoptr(TlImage) img = tl_dicom_load_series(in, &e);
  if (!img) {
    tl_fuzz_check_error(e);
    return 0;
  }
  guint64 n = tl_image_grid_n_voxels(&img->grid);
  TL_FUZZ_CHECK(n > 0, "empty image");
  for (int a = 0; a < 3; a++)
    TL_FUZZ_CHECK(img->grid.voxel_mm[a] > 0 && isfinite(img->grid.origin_mm[a]), "grid");
  for (guint64 i = 0; i < n; i++) TL_FUZZ_CHECK(isfinite(img->data[i]), "value %g", img->data[i]);
  return 0;
}
