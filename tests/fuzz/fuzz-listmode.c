/* List-mode files: what loads, saves and loads back with the same events and scanner. */
#include "tl-fuzz.h"
#include "pet/tl-listmode.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!in) in = tl_fuzz_path("in.tlm"), out = tl_fuzz_path("out.tlm");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlListmode) lm = tl_listmode_load(in, &e);
  if (!lm) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_listmode_save(lm, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlListmode) again = tl_listmode_load(out, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(again->n_events == lm->n_events && again->has_tof == lm->has_tof, "header");
  TL_FUZZ_CHECK(memcmp(again->events, lm->events, 12 * lm->n_events) == 0, "events differ");
  g_autofree char *s1 = tl_scanner_to_text(lm->scanner), *s2 = tl_scanner_to_text(again->scanner);
  TL_FUZZ_CHECK(strcmp(s1, s2) == 0, "scanners differ");
  return 0;
}
