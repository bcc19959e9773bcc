/* SPDX-License-Identifier: GPL-3.0-or-later */
/* mMR list mode: the input is a header, a NUL, then the words (the seeds' headers name
 * "in.l"). Whatever loads accounts for every word and decodes to pairs the scanner allows. */
#include "tl-fuzz.h"
#include "pet/data/tl-format-mmr.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *hdr, *words;
  if (!hdr) hdr = tl_fuzz_path("in.l.hdr"), words = tl_fuzz_path("in.l");
  const guint8 *nul = memchr(data, 0, size);
  size_t nh = nul ? (size_t)(nul - data) : size;
  tl_fuzz_write(hdr, data, nh);
  tl_fuzz_write(words, nul ? nul + 1 : data, nul ? size - nh - 1 : 0);
  g_autoptr(GError) e = NULL;
  TlMmrStats st;
  /* the counting path on every input, the event-keeping one (a copy of the 28 672-crystal
   * table) on every 16th */
  if (!tl_mmr_scan(hdr, &st, &e)) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(st.prompts + st.delayeds + st.time_tags + st.dead_time_tags + st.motion_tags +
                    st.monitor_tags == st.words, "words not accounted for");
  TL_FUZZ_CHECK(st.kept_prompts + st.kept_delayeds + st.dropped_gap + st.dropped_range +
                    st.outside_frame == st.prompts + st.delayeds, "events not accounted for");
  if (size % 16) return 0;
  TlMmrOptions opt = {0.001 * (size % 5), 0};
  g_autoptr(TlListmode) lm = tl_mmr_load(words, &opt, &st, &e);
  TL_FUZZ_CHECK(lm, "scan passed but load failed: %s", e ? e->message : "");
  TL_FUZZ_CHECK(lm->n_events == st.kept_prompts && lm->n_delayed == st.kept_delayeds, "counts");
  TL_FUZZ_CHECK(tl_listmode_validate(lm, "fuzz", &e), "validate: %s", e ? e->message : "");
  for (guint64 i = 0; i < lm->n_delayed; i++)
    TL_FUZZ_CHECK(tl_scanner_pair_allowed(lm->scanner, lm->delayed[i].a, lm->delayed[i].b),
                  "delayed pair");
  return 0;
}
