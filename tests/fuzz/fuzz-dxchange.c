/* Data Exchange HDF5 (ct/tl-format-dxchange.c, through libhdf5): what loads has the layout's
 * sizes, a parallel-beam geometry and finite line integrals; what fails says why. */
#include "tl-fuzz.h"
#include "ct/tl-ct-formats.h"
#include "image/tl-format.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in;
  if (!in) in = tl_fuzz_path("in.h5");
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  GString *info = g_string_new(NULL);
  gboolean described = tl_format_dxchange.describe(in, info, &e);
  g_string_free(info, TRUE);
  if (!described) tl_fuzz_check_error(e);
  g_clear_error(&e);
  g_autoptr(TlCtData) d = tl_ct_dxchange_load(in, &e);
  if (!d) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(described, "loads but describe failed");
  TL_FUZZ_CHECK(d->geometry->beam == TL_CT_PARALLEL, "beam");
  guint64 n = tl_ct_data_n_values(d);
  for (guint64 i = 0; i < n; i++) TL_FUZZ_CHECK(isfinite(d->proj[i]), "value %g", d->proj[i]);
  return 0;
}
