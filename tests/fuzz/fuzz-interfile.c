/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Interfile: images (.hv) and STIR projection data (.hs). The input is "header \0 data": the
 * header names "in.v" / "in.s" as its data file (any other name is rewritten to it). The first
 * byte picks the reader (0 image, 1 projection data). What loads saves and loads back with the
 * same geometry and bits. */
#include "tl-fuzz.h"
#include "image/tl-interfile.h"
#include "pet/data/tl-sinogram.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *hv, *v, *hs, *s, *out_hv, *out_hs;
  if (!hv) {
    hv = tl_fuzz_path("in.hv"), v = tl_fuzz_path("in.v"), hs = tl_fuzz_path("in.hs");
    s = tl_fuzz_path("in.s"), out_hv = tl_fuzz_path("out.hv"), out_hs = tl_fuzz_path("out.hs");
  }
  gboolean sino = data[0] & 1;
  const guint8 *nul = memchr(data + 1, 0, size - 1);
  size_t n_head = nul ? (size_t)(nul - data - 1) : size - 1;
  tl_fuzz_write(sino ? hs : hv, data + 1, n_head);
  size_t off = nul ? n_head + 2 : size;
  tl_fuzz_write(sino ? s : v, data + off, size - off);
  g_autoptr(GError) e = NULL;
  if (!sino) {
    g_autoptr(TlImage) im = tl_image_load_interfile(hv, &e);
    if (!im) {
      tl_fuzz_check_error(e);
      return 0;
    }
    TL_FUZZ_CHECK(tl_image_save_interfile(im, out_hv, &e), "save: %s", e ? e->message : "");
    g_autoptr(TlImage) again = tl_image_load_interfile(out_hv, &e);
    TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
    TL_FUZZ_CHECK(tl_image_grid_equal(&again->grid, &im->grid), "grids differ");
    TL_FUZZ_CHECK(memcmp(again->data, im->data, 4 * tl_image_grid_n_voxels(&im->grid)) == 0,
                  "voxels differ");
    return 0;
  }
  g_autoptr(TlSinogram) sg = tl_sinogram_load(hs, &e);
  if (!sg) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_sinogram_save(sg, out_hs, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlSinogram) again = tl_sinogram_load(out_hs, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(again->n_bins == sg->n_bins && again->n_segments == sg->n_segments,
                "geometry differs");
  TL_FUZZ_CHECK(memcmp(again->data, sg->data, 4 * sg->n_bins) == 0, "bins differ");
  return 0;
}
