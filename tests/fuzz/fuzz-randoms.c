/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Randoms files (pet/tl-randoms-file.c) of one small fixed scanner: what loads saves and loads
 * back to the same factors. The token @HASH@ in the input becomes that scanner's key hash, so
 * inputs get past the scanner check and reach the factor list. */
#include "tl-fuzz.h"
#include "pet/correct/tl-randoms.h"

static TlScanner *scanner(void) {
  static TlScanner *s;
  if (!s) {
    s = tl_scanner_from_text("kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\n"
                             "crystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\n"
                             "crystal_size_mm = 4 4 10\n", "fuzz", 1, NULL);
    if (!s) abort();
  }
  return s;
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 16) return 0;
  static char *in, *out, *hash;
  if (!in) {
    in = tl_fuzz_path("in.txt"), out = tl_fuzz_path("out.txt");
    g_autofree char *key = tl_scanner_key(scanner());
    hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
  }
  g_autoptr(GString) t = g_string_new_len((const char *)data, (gssize)size);
  g_string_replace(t, "@HASH@", hash, 0);
  tl_fuzz_write(in, (const guint8 *)t->str, t->len);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlRandoms) r = tl_randoms_load(in, scanner(), &e);
  if (!r) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(r->n_crystals == scanner()->n_crystals, "count");
  TL_FUZZ_CHECK(tl_randoms_save(r, scanner(), out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlRandoms) again = tl_randoms_load(out, scanner(), &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(memcmp(again->factor, r->factor, sizeof(double) * r->n_crystals) == 0,
                "factors differ");
  TL_FUZZ_CHECK(again->total == r->total, "totals differ");
  return 0;
}
