/* SPDX-License-Identifier: GPL-3.0-or-later */
/* MetaImage: the input is one .mha file (header + LOCAL data, compressed or not); a header
 * naming another file reads "in.raw" (the bytes after the first NUL when the first byte is odd).
 * What loads saves as .mha and .mhd and loads back with the same grid and bits. */
#include "tl-fuzz.h"
#include "image/tl-metaimage.h"

static void check_round_trip(const TlImage *im, const char *path) {
  g_autoptr(GError) e = NULL;
  TL_FUZZ_CHECK(tl_image_save_metaimage(im, path, &e), "save %s: %s", path, e ? e->message : "");
  g_autoptr(TlImage) again = tl_image_load_metaimage(path, &e);
  TL_FUZZ_CHECK(again, "reload %s: %s", path, e ? e->message : "");
  TL_FUZZ_CHECK(tl_image_grid_equal(&again->grid, &im->grid), "grids differ (%s)", path);
  TL_FUZZ_CHECK(memcmp(again->data, im->data, 4 * tl_image_grid_n_voxels(&im->grid)) == 0,
                "voxels differ (%s)", path);
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *mha, *raw, *out_mha, *out_mhd;
  if (!mha) {
    mha = tl_fuzz_path("in.mha"), raw = tl_fuzz_path("in.raw");
    out_mha = tl_fuzz_path("out.mha"), out_mhd = tl_fuzz_path("out.mhd");
  }
  if (data[0] & 1) {
    const guint8 *nul = memchr(data + 1, 0, size - 1);
    size_t n_head = nul ? (size_t)(nul - data - 1) : size - 1;
    tl_fuzz_write(mha, data + 1, n_head);
    size_t off = nul ? n_head + 2 : size;
    tl_fuzz_write(raw, data + off, size - off);
  } else
    tl_fuzz_write(mha, data + 1, size - 1);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load_metaimage(mha, &e);
  if (!im) {
    tl_fuzz_check_error(e);
    return 0;
  }
  check_round_trip(im, out_mha);
  check_round_trip(im, out_mhd);
  return 0;
}
