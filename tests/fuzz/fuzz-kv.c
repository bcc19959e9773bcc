/* SPDX-License-Identifier: GPL-3.0-or-later */
/* key = value lines and the number parsers every text format shares: parsed numbers print
 * (tl_format_double/float) to text that parses back to the same bits. */
#include "tl-fuzz.h"
#include "image/tl-file.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 4096) return 0;
  g_autofree char *line = tl_fuzz_text(data, size);
  char *key, *value;
  gboolean bad;
  if (!tl_kv_split(line, &key, &value, &bad)) return 0;
  g_autoptr(GError) e = NULL;
  guint64 u;
  if (tl_kv_uint("fuzz", 1, key, value, G_MAXUINT64, &u, &e)) {
    g_autofree char *t = g_strdup_printf("%" G_GUINT64_FORMAT, u);
    guint64 u2;
    TL_FUZZ_CHECK(tl_kv_uint("fuzz", 1, key, t, G_MAXUINT64, &u2, NULL) && u2 == u, "%s", t);
  } else {
    tl_fuzz_check_error(e);
  }
  g_clear_error(&e);
  gint64 i;
  if (!tl_kv_int("fuzz", 1, key, value, &i, &e)) tl_fuzz_check_error(e);
  g_clear_error(&e);
  double v[4];
  for (guint n = 1; n <= 4; n++) {
    if (!tl_kv_doubles("fuzz", 1, key, value, n, v, &e)) {
      tl_fuzz_check_error(e);
      g_clear_error(&e);
      continue;
    }
    for (guint k = 0; k < n; k++) {
      char b[32];
      tl_format_double(b, v[k]);
      double back;
      TL_FUZZ_CHECK(tl_kv_doubles("fuzz", 1, key, b, 1, &back, NULL) && back == v[k], "%s", b);
      float f = tl_float_from_double(v[k]);
      tl_format_float(b, f);
      if (isfinite(f)) TL_FUZZ_CHECK((float)g_ascii_strtod(b, NULL) == f, "%s", b);
    }
  }
  g_autofree char *q = tl_text_quote(value, -1, 64);
  TL_FUZZ_CHECK(g_utf8_validate(q, -1, NULL), "quote not UTF-8");
  return 0;
}
