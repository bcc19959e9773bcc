/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The .tlgeom sidecar of TIFF projection stacks (ct/tl-format-tiff-stack.c): what parses
 * has the values its checks promise; what fails says why. */
#include "tl-fuzz.h"
#include "ct/tl-ct-formats.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 16) return 0;
  g_autoptr(GError) e = NULL;
  TlTiffSidecar s;
  if (!tl_ct_tiff_sidecar_parse((const char *)data, size, "fuzz.tlgeom", &s, &e)) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(s.pixel_mm[0] > 0 && s.pixel_mm[1] > 0 && s.arc_deg != 0 && isfinite(s.start_deg),
                "accepted bad numbers");
  TL_FUZZ_CHECK(s.beam != TL_CT_CONE || s.sdd_mm > s.sid_mm, "cone distances");
  TL_FUZZ_CHECK(s.values != TL_TIFF_COUNTS || s.flat, "counts without flat");
  tl_ct_tiff_sidecar_clear(&s);
  return 0;
}
