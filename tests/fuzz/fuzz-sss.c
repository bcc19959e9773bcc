/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Scatter estimate files (pet/tl-sss.h): what loads, saves and loads back with the same
 * sampling, scale, values and scanner, and interpolates to the same pair values. */
#include "tl-fuzz.h"
#include "pet/correct/tl-sss.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in, *out;
  if (!in) in = tl_fuzz_path("in.tlsc"), out = tl_fuzz_path("out.tlsc");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScatterEstimate) s = tl_scatter_estimate_load(in, &e);
  if (!s) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_scatter_estimate_save(s, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlScatterEstimate) again = tl_scatter_estimate_load(out, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  guint64 nv = tl_scatter_estimate_n_pairs(s) * MAX(s->n_bins, 1);
  TL_FUZZ_CHECK(again->n_t == s->n_t && again->n_r == s->n_r && again->n_bins == s->n_bins &&
                    again->scale == s->scale, "header");
  TL_FUZZ_CHECK(memcmp(again->transaxial, s->transaxial, sizeof(guint) * s->n_t) == 0 &&
                    memcmp(again->ring, s->ring, sizeof(guint) * s->n_r) == 0, "sampling");
  TL_FUZZ_CHECK(memcmp(again->values, s->values, 4 * nv) == 0, "values differ");
  g_autofree char *s1 = tl_scanner_to_text(s->scanner), *s2 = tl_scanner_to_text(again->scanner);
  TL_FUZZ_CHECK(strcmp(s1, s2) == 0, "scanners differ");
  TL_FUZZ_CHECK(tl_scatter_estimate_check_scanner(again, s->scanner, out, &e), "scanner key");
  /* a few pairs: finite, >= 0, the same from both */
  guint n = s->scanner->n_crystals;
  for (guint k = 0; k < 16 && n > 1; k++) {
    guint a = (k * 7919u) % n, b = (k * 104729u + 1) % n;
    double v = tl_scatter_estimate_pair(s, a, b);
    TL_FUZZ_CHECK(isfinite(v) && v >= 0 && v == tl_scatter_estimate_pair(again, a, b),
                  "pair %u %u: %g", a, b, v);
    gint half = (gint)s->n_bins / 2;
    double t = tl_scatter_estimate_pair_tof(s, a, b, half);
    TL_FUZZ_CHECK(isfinite(t) && t >= 0, "pair %u %u bin %d: %g", a, b, half, t);
  }
  return 0;
}
