/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reconstruction checkpoints (app/cli/tl-cli-checkpoint.c, docs/scale.md): what loads, saves
 * and loads back with the same progress, hash, grid and voxels; what does not load gives one
 * line of UTF-8. */
#include "tl-fuzz.h"
#include "tl-cli-dist.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!in) in = tl_fuzz_path("in.ckpt"), out = tl_fuzz_path("out.ckpt");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  TlCliCheckpoint a, b;
  if (!tl_cli_checkpoint_load(in, &a, &e)) {
    tl_fuzz_check_error(e);
    TL_FUZZ_CHECK(a.image == NULL, "an image after a failed load");
    return 0;
  }
  TL_FUZZ_CHECK(tl_cli_checkpoint_save(out, a.image, a.sub_iterations, a.subsets, a.hash, &e),
                "save: %s", e ? e->message : "");
  TL_FUZZ_CHECK(tl_cli_checkpoint_load(out, &b, &e), "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(a.sub_iterations == b.sub_iterations && a.subsets == b.subsets &&
                strcmp(a.hash, b.hash) == 0, "header");
  TL_FUZZ_CHECK(tl_image_grid_equal(&a.image->grid, &b.image->grid), "grid");
  guint64 n = tl_image_grid_n_voxels(&a.image->grid);
  TL_FUZZ_CHECK(memcmp(a.image->data, b.image->data, n * sizeof(float)) == 0, "voxels");
  tl_cli_checkpoint_clear(&a);
  tl_cli_checkpoint_clear(&b);
  return 0;
}
