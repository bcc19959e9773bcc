/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Images: NIfTI-1 (plain and gzip) and raw float32 + sidecar. The first byte picks the
 * reader; for raw, the input is "sidecar text \0 data". What loads saves (as .nii and .raw)
 * and loads back with the same grid and bits. */
#include "tl-fuzz.h"
#include "image/tl-image.h"
#include <zlib.h>

static void check_round_trip(const TlImage *im, const char *path) {
  g_autoptr(GError) e = NULL;
  TL_FUZZ_CHECK(tl_image_save(im, path, &e), "save %s: %s", path, e ? e->message : "");
  g_autoptr(TlImage) again = tl_image_load(path, &e);
  TL_FUZZ_CHECK(again, "reload %s: %s", path, e ? e->message : "");
  TL_FUZZ_CHECK(tl_image_grid_equal(&again->grid, &im->grid), "grids differ (%s)", path);
  TL_FUZZ_CHECK(memcmp(again->data, im->data, 4 * tl_image_grid_n_voxels(&im->grid)) == 0,
                "voxels differ (%s)", path);
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *nii, *niigz, *raw, *side, *out_nii, *out_raw;
  if (!nii) {
    nii = tl_fuzz_path("in.nii"), niigz = tl_fuzz_path("in.nii.gz"), raw = tl_fuzz_path("in.raw");
    side = tl_fuzz_path("in.raw.txt"), out_nii = tl_fuzz_path("out.nii");
    out_raw = tl_fuzz_path("out.raw");
  }
  const char *path;
  switch (data[0] % 3) {
  case 0:
    tl_fuzz_write(nii, data + 1, size - 1);
    path = nii;
    break;
  case 1: { /* the same bytes through the gzip stream */
    gzFile z = gzopen(niigz, "wb1");
    if (!z) abort();
    if (size > 1) gzwrite(z, data + 1, (unsigned)(size - 1));
    gzclose(z);
    path = niigz;
    break;
  }
  default: {
    const guint8 *nul = memchr(data + 1, 0, size - 1);
    size_t n_side = nul ? (size_t)(nul - data - 1) : size - 1;
    tl_fuzz_write(side, data + 1, n_side);
    size_t off = nul ? n_side + 2 : size;
    tl_fuzz_write(raw, data + off, size - off);
    path = raw;
  }
  }
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load(path, &e);
  if (!im) {
    tl_fuzz_check_error(e);
    return 0;
  }
  if (im->grid.dims[0] <= 32767 && im->grid.dims[1] <= 32767 && im->grid.dims[2] <= 32767)
    check_round_trip(im, out_nii);
  check_round_trip(im, out_raw);
  return 0;
}
