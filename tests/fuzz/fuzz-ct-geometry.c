/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT geometry text: whatever loads saves and loads back identically (the normalised
 * matrices, bit for bit, and the printed text). */
#include "tl-fuzz.h"
#include "ct/tl-ct-geometry.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 16) return 0;
  g_autofree char *text = tl_fuzz_text(data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_from_text(text, "fuzz", &e);
  if (!g) {
    tl_fuzz_check_error(e);
    return 0;
  }
  g_autofree char *printed = tl_ct_geometry_to_text(g);
  g_autoptr(TlCtGeometry) again = tl_ct_geometry_from_text(printed, "printed", &e);
  TL_FUZZ_CHECK(again, "reload: %s\n%s", e ? e->message : "", printed);
  TL_FUZZ_CHECK(again->n_views == g->n_views && again->det_u == g->det_u &&
                    again->det_v == g->det_v && again->beam == g->beam, "header differs");
  TL_FUZZ_CHECK(memcmp(again->matrices, g->matrices, 96 * (size_t)g->n_views) == 0,
                "matrices differ");
  g_autofree char *printed2 = tl_ct_geometry_to_text(again);
  TL_FUZZ_CHECK(strcmp(printed, printed2) == 0, "printed forms differ");
  return 0;
}
