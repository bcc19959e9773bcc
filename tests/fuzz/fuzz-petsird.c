/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD / yardl: the first byte picks what the rest is. 0: a whole file. 1: the values after
 * the schema of the shipped v0.10.0 file (its first 12 895 bytes, read once from
 * ../shared/data/petsird or $TL_FUZZ_PETSIRD; without it the input is taken whole), so mutations
 * reach the header and the time blocks rather than the schema. Whatever loads is list mode that
 * validates, with as many events as the scan counted. */
#include "tl-fuzz.h"
#include "pet/data/tl-format-petsird.h"

#define SCHEMA_END 12895

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *path;
  static guint8 *prefix;
  static gsize n_prefix;
  if (!path) {
    path = tl_fuzz_path("in.bin");
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
  g_autoptr(TlListmode) lm = tl_petsird_load(path, NULL, &e);
  if (!lm) { /* the scan does not build the scanner: its geometry may still be refused */
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(lm->n_events == info->prompts && lm->n_delayed == info->delayeds, "counts");
  TL_FUZZ_CHECK(tl_listmode_validate(lm, "fuzz", &e), "validate: %s", e ? e->message : "");
  return 0;
}
