/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List-mode files: what loads, saves and loads back with the same events, delayeds, tags,
 * singles and scanner; a ranged read of what loads gives the same events and tags. */
#include "tl-fuzz.h"
#include "pet/scanner/tl-listmode.h"

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
  TL_FUZZ_CHECK(again->n_delayed == lm->n_delayed &&
                (!lm->n_delayed || memcmp(again->delayed, lm->delayed, 12 * lm->n_delayed) == 0),
                "delayed events differ");
  TL_FUZZ_CHECK(!again->tags == !lm->tags &&
                (!lm->tags || memcmp(again->tags, lm->tags, lm->n_events) == 0), "tags differ");
  guint nc = lm->scanner->n_crystals;
  TL_FUZZ_CHECK(!again->singles == !lm->singles &&
                (!lm->singles || (memcmp(again->singles, lm->singles, 8 * nc) == 0 &&
                                  again->coincidence_window_ns == lm->coincidence_window_ns)),
                "singles differ");
  for (guint64 i = 0; lm->tags && i < lm->n_events; i++)
    TL_FUZZ_CHECK(lm->tags[i] < TL_TAG_N, "tag %u of event %" G_GUINT64_FORMAT " loaded", lm->tags[i], i);
  /* a ranged read of the same file gives the same events and tags */
  if (lm->n_events) {
    guint64 first = lm->n_events / 3, count = lm->n_events - first;
    g_autoptr(TlListmode) part = tl_listmode_load_range(in, first, count, &e);
    TL_FUZZ_CHECK(part, "range: %s", e ? e->message : "");
    TL_FUZZ_CHECK(memcmp(part->events, lm->events + first, 12 * count) == 0, "range events differ");
    TL_FUZZ_CHECK(!part->tags == !lm->tags &&
                  (!lm->tags || memcmp(part->tags, lm->tags + first, count) == 0), "range tags differ");
    TL_FUZZ_CHECK(!part->singles == !lm->singles &&
                  (!lm->singles || memcmp(part->singles, lm->singles, 8 * nc) == 0),
                  "range singles differ");
    TL_FUZZ_CHECK(part->duration_s == lm->duration_s && part->start_s == lm->start_s,
                  "range frame differs");
  }
  g_autofree char *s1 = tl_scanner_to_text(lm->scanner), *s2 = tl_scanner_to_text(again->scanner);
  TL_FUZZ_CHECK(strcmp(s1, s2) == 0, "scanners differ");
  return 0;
}
