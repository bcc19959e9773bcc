/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TIFF projection stacks (ct/tl-format-tiff-stack.c): the input is the TIFF file, read by
 * libtiff and Tomolab's page reader, beside a fixed valid sidecar; what loads has the pages'
 * sizes and finite line integrals, what fails says why in one line. (The sidecar's own parser
 * has fuzz-tiff-sidecar.) */
#include "tl-fuzz.h"
#include "ct/tl-ct-formats.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in;
  if (!in) {
    in = tl_fuzz_path("in.tif");
    g_autofree char *side = g_strconcat(in, ".tlgeom", NULL);
    const char *text = "tomolab-tiff-stack = 1\nbeam = parallel\nangles = 0 180\n"
                       "pixel_mm = 1 1\nvalues = line-integrals\n";
    tl_fuzz_write(side, (const guint8 *)text, strlen(text));
  }
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlCtData) d = tl_ct_tiff_stack_load(in, &e);
  if (!d) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(d->geometry->beam == TL_CT_PARALLEL, "beam");
  TL_FUZZ_CHECK(d->geometry->n_views >= 1, "views");
  guint64 n = tl_ct_data_n_values(d);
  TL_FUZZ_CHECK(n <= (guint64)1 << 28, "%" G_GUINT64_FORMAT " values", n);
  for (guint64 i = 0; i < n; i++) TL_FUZZ_CHECK(isfinite(d->proj[i]), "value %g", d->proj[i]);
  return 0;
}
