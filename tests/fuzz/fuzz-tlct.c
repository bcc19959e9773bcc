/* SPDX-License-Identifier: GPL-3.0-or-later */
/* .tlct CT scans: what loads saves and loads back with the same header, geometry and data. */
#include "tl-fuzz.h"
#include "ct/tl-ct-data.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!in) in = tl_fuzz_path("in.tlct"), out = tl_fuzz_path("out.tlct");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlCtData) d = tl_ct_data_load(in, &e);
  if (!d) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_ct_data_save(d, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlCtData) again = tl_ct_data_load(out, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(again->values == d->values && again->i0 == d->i0 &&
                    again->has_grid == d->has_grid, "header differs");
  TL_FUZZ_CHECK(!d->has_grid || tl_image_grid_equal(&again->grid, &d->grid), "grid differs");
  g_autofree char *g1 = tl_ct_geometry_to_text(d->geometry);
  g_autofree char *g2 = tl_ct_geometry_to_text(again->geometry);
  TL_FUZZ_CHECK(strcmp(g1, g2) == 0, "geometry differs");
  TL_FUZZ_CHECK(memcmp(again->proj, d->proj, 4 * tl_ct_data_n_values(d)) == 0, "data differs");
  return 0;
}
