/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Scanner descriptions: what loads, prints and loads back to the same table. */
#include "tl-fuzz.h"
#include "pet/scanner/tl-scanner.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 16) return 0;
  g_autofree char *text = tl_fuzz_text(data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScanner) s = tl_scanner_from_text(text, "fuzz", 1, &e);
  if (!s) {
    tl_fuzz_check_error(e);
    return 0;
  }
  g_autofree char *printed = tl_scanner_to_text(s);
  g_autoptr(TlScanner) again = tl_scanner_from_text(printed, "printed", 1, &e);
  TL_FUZZ_CHECK(again, "reload failed: %s\n%s", e ? e->message : "", printed);
  TL_FUZZ_CHECK(again->n_crystals == s->n_crystals, "%u vs %u crystals", again->n_crystals,
                s->n_crystals);
  TL_FUZZ_CHECK(memcmp(again->crystals, s->crystals, sizeof(TlCrystal) * s->n_crystals) == 0,
                "tables differ");
  double w1[2], w2[2], r1, r2;
  tl_scanner_energy(s, w1, &r1);
  tl_scanner_energy(again, w2, &r2);
  TL_FUZZ_CHECK(w1[0] == w2[0] && w1[1] == w2[1] && r1 == r2, "energy %g-%g/%g vs %g-%g/%g",
                w1[0], w1[1], r1, w2[0], w2[1], r2);
  TL_FUZZ_CHECK(tl_scanner_validate(again, &e), "reloaded scanner invalid: %s", e ? e->message : "");
  g_autofree char *printed2 = tl_scanner_to_text(again);
  TL_FUZZ_CHECK(strcmp(printed, printed2) == 0, "printed forms differ");
  return 0;
}
