/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Filter specs (gauss:FWHM, metz:FWHM:N, median3, median5, none): what parses prints back to
 * the same filter; Gaussian and Metz weights are finite and sum to 1 (Metz's may be negative). */
#include "tl-fuzz.h"
#include "image/tl-filter.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 256) return 0;
  g_autofree char *text = tl_fuzz_text(data, size);
  TlFilter f;
  g_autoptr(GError) e = NULL;
  if (!tl_filter_parse(text, &f, &e)) {
    tl_fuzz_check_error(e);
    return 0;
  }
  g_autofree char *printed = tl_filter_to_string(&f);
  TlFilter g;
  TL_FUZZ_CHECK(tl_filter_parse(printed, &g, NULL), "'%s' does not parse back", printed);
  TL_FUZZ_CHECK(g.kind == f.kind && g.fwhm_mm == f.fwhm_mm && g.power == f.power,
                "'%s' parses to another filter",
                printed);
  if (f.kind == TL_FILTER_GAUSS) {
    guint r = tl_filter_gauss_radius(f.fwhm_mm, 1.0);
    if (r > 4096) return 0;
    double *w = g_new(double, r + 1), sum = 0;
    tl_filter_gauss_weights(f.fwhm_mm, 1.0, w);
    for (guint t = 0; t <= r; t++) {
      TL_FUZZ_CHECK(isfinite(w[t]) && w[t] >= 0, "weight %u is %g", t, w[t]);
      sum += t ? 2 * w[t] : w[t];
    }
    g_free(w);
    TL_FUZZ_CHECK(fabs(sum - 1) < 1e-9, "weights sum to %g", sum);
  }
  if (f.kind == TL_FILTER_METZ) {
    guint r = tl_filter_metz_radius(f.fwhm_mm, f.power, 1.0);
    if (r > 4096) return 0;
    double *w = g_new(double, r + 1), sum = 0;
    tl_filter_metz_weights(f.fwhm_mm, f.power, 1.0, w);
    for (guint t = 0; t <= r; t++) {
      TL_FUZZ_CHECK(isfinite(w[t]), "weight %u is %g", t, w[t]);
      sum += t ? 2 * w[t] : w[t];
    }
    g_free(w);
    TL_FUZZ_CHECK(fabs(sum - 1) < 1e-9, "weights sum to %g", sum);
  }
  return 0;
}
