/* SPDX-License-Identifier: GPL-3.0-or-later */
/* System response matrix cache files (pet/tl-srm.h) for a fixed tiny dual-head scanner and
 * grid: what loads saves and loads back with the same elements. The first input of a run
 * (an empty one) writes a valid file as a seed to the corpus folder given by $SRM_SEED. */
#include "tl-fuzz.h"
#include "pet/srm/tl-srm.h"

static TlScanner *scanner;
static TlImageGrid grid;

static void setup(void) {
  TlScannerLayout l = {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {3, 2},
                       .head_pitch_mm = {2.4, 2.4}, .head_distance_mm = 10.0};
  scanner = tl_scanner_new_from_layout("fuzz", &l, NULL, NULL);
  if (!scanner) abort();
  grid = tl_image_grid_centred(3, 6, 4, 2.0f, 1.2f, 1.2f);
  const char *seed = g_getenv("SRM_SEED");
  if (seed) {
    TlSrm *m = tl_srm_new(scanner, &grid, NULL, NULL);
    g_autofree char *p = g_build_filename(seed, "valid.srm", NULL);
    if (!m || !tl_srm_save(m, p, NULL)) abort();
    tl_srm_free(m);
  }
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!scanner) setup();
  if (!in) in = tl_fuzz_path("in.srm"), out = tl_fuzz_path("out.srm");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlSrm) m = tl_srm_load(in, scanner, &grid, NULL, &e);
  if (!m) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_srm_save(m, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlSrm) again = tl_srm_load(out, scanner, &grid, NULL, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  guint per = scanner->n_crystals / 2;
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++)
      for (guint64 v = 0; v < tl_image_grid_n_voxels(&grid); v++)
        TL_FUZZ_CHECK(tl_srm_element(m, a, b, v) == tl_srm_element(again, a, b, v),
                      "element (%u, %u, %" G_GUINT64_FORMAT ") differs", a, b, v);
  return 0;
}
