/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD / yardl: the first byte picks what the rest is. 0: a whole file. 1: the values after
 * the schema of the shipped v0.10.0 file (its first 12 895 bytes, read once from
 * ../shared/data/petsird or $TL_FUZZ_PETSIRD; without it the input is taken whole), so mutations
 * reach the header and the time blocks rather than the schema. Whatever loads is list mode that
 * validates, with as many events as the scan counted, and written back (tl_petsird_save, with
 * its time blocks) reads back the same events, delayeds and counts per block. */
#include <string.h>
#include "tl-fuzz.h"
#include "pet/data/tl-format-petsird.h"

#define SCHEMA_END 12895

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *path, *out;
  static guint8 *prefix;
  static gsize n_prefix;
  if (!path) {
    path = tl_fuzz_path("in.bin");
    out = tl_fuzz_path("out.petsird");
    const char *src = g_getenv("TL_FUZZ_PETSIRD");
    g_autofree char *all = NULL;
    gsize len = 0;
    if (g_file_get_contents(src ? src : "../shared/data/petsird/petsird-v0.10.0_small.bin", &all,
                            &len, NULL) && len > SCHEMA_END) {
      prefix = g_memdup2(all, SCHEMA_END);
      n_prefix = SCHEMA_END;
    }
  }
  g_autoptr(GByteArray) b = g_byte_array_new();
  if (data[0] == 1 && prefix) g_byte_array_append(b, prefix, (guint)n_prefix);
  g_byte_array_append(b, data + 1, (guint)(size - 1));
  tl_fuzz_write(path, b->data, b->len);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlPetsirdInfo) info = tl_petsird_scan(path, &e);
  if (!info) {
    tl_fuzz_check_error(e);
    return 0;
  }
  g_autoptr(TlPetsirdInfo) info2 = NULL;
  g_autoptr(TlListmode) lm = tl_petsird_load(path, &info2, &e);
  if (!lm) { /* the scan does not build the scanner: its geometry may still be refused */
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(lm->n_events == info->prompts && lm->n_delayed == info->delayeds, "counts");
  TL_FUZZ_CHECK(tl_listmode_validate(lm, "fuzz", &e), "validate: %s", e ? e->message : "");
  /* the round trip; large crystal tables (a few hundred bytes of transforms can make 2^21
   * crystals, a module each when written) are left to the read-only checks above */
  if (lm->scanner->n_crystals > 65536) return 0;
  const GArray *bl = info2->blocks;
  if (!tl_petsird_save(lm, (const TlPetsirdBlock *)bl->data, bl->len, out, &e)) {
    tl_fuzz_check_error(e); /* a refusal must say why (a crystal at the readers' limits) */
    return 0;
  }
  g_autoptr(TlPetsirdInfo) info3 = NULL;
  g_autoptr(TlListmode) back = tl_petsird_load(out, &info3, &e);
  TL_FUZZ_CHECK(back, "written file not read back: %s", e ? e->message : "");
  TL_FUZZ_CHECK(back->n_events == lm->n_events && back->n_delayed == lm->n_delayed &&
                back->scanner->n_crystals == lm->scanner->n_crystals, "round-trip counts");
  TL_FUZZ_CHECK(!lm->n_events || memcmp(back->events, lm->events, lm->n_events * sizeof(TlEvent)) == 0,
                "round-trip prompts");
  TL_FUZZ_CHECK(!lm->n_delayed || memcmp(back->delayed, lm->delayed, lm->n_delayed * sizeof(TlEvent)) == 0,
                "round-trip delayeds");
  TL_FUZZ_CHECK(info3->blocks->len == bl->len && (!bl->len || memcmp(info3->blocks->data, bl->data,
                bl->len * sizeof(TlPetsirdBlock)) == 0), "round-trip time blocks");
  return 0;
}
