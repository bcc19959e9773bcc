/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Normalisation files (.tln, pet/tl-norm.h): the input is the file. What loads saves and loads
 * back to the same factors, classes, scanner and hash, and evaluates n_ab the same. */
#include "tl-fuzz.h"
#include "pet/correct/tl-norm.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!in) in = tl_fuzz_path("in.tln"), out = tl_fuzz_path("out.tln");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlNorm) n = tl_norm_load(in, NULL, &e);
  if (!n) {
    tl_fuzz_check_error(e);
    return 0;
  }
  /* a file that loads is for its own scanner, and describes itself */
  TL_FUZZ_CHECK(tl_norm_check_scanner(n, n->scanner, in, &e), "own scanner: %s",
                e ? e->message : "");
  g_autoptr(GString) d = g_string_new(NULL);
  tl_norm_describe(n, d);
  TL_FUZZ_CHECK(g_utf8_validate(d->str, -1, NULL), "description not UTF-8");
  TL_FUZZ_CHECK(tl_norm_save(n, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlNorm) again = tl_norm_load(out, n->scanner, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  TL_FUZZ_CHECK(again->n_crystals == n->n_crystals && again->rings == n->rings &&
                    again->crystals_per_ring == n->crystals_per_ring &&
                    again->block == n->block && again->radial == n->radial,
                "classes differ");
  TL_FUZZ_CHECK(strcmp(again->sha256, n->sha256) == 0 &&
                    strcmp(again->scanner_sha256, n->scanner_sha256) == 0 &&
                    strcmp(again->description, n->description) == 0,
                "hash, scanner or description differ");
  TL_FUZZ_CHECK(memcmp(again->efficiency, n->efficiency, 4 * (gsize)n->n_crystals) == 0 &&
                    memcmp(again->axial, n->axial, 4 * (gsize)n->rings * n->rings) == 0 &&
                    memcmp(again->transaxial, n->transaxial,
                           4 * (gsize)n->radial * n->block) == 0,
                "factors differ");
  /* a few pairs: finite, >= 0, the same from both */
  for (guint k = 0; k < 16 && n->n_crystals > 1; k++) {
    guint a = (guint)((k * 2654435761u) % n->n_crystals), b = (a + 1 + k) % n->n_crystals;
    if (a == b) continue;
    float v = tl_norm_pair(n, a, b);
    TL_FUZZ_CHECK(isfinite(v) && v >= 0 && v == tl_norm_pair(again, a, b), "n(%u, %u) = %g", a,
                  b, (double)v);
  }
  return 0;
}
