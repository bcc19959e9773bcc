/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Run files (compute/run/tl-run-spec.c) and the run part of provenance sidecars
 * (tl-run-sidecar.c): what parses writes back to the same run; what fails says why. The first
 * byte chooses the reader: even the key = value text, odd a sidecar's JSON. */
#include "tl-fuzz.h"
#include "run/tl-run-sidecar.h"
#include "run/tl-run-spec.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 16) return 0;
  g_autofree char *text = tl_fuzz_text(data + 1, size - 1);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  gboolean ok = data[0] % 2 == 0 ? tl_run_spec_parse(s, text, "fuzz.run", &e)
                                 : tl_run_sidecar_read_run(s, text, "fuzz.json", &e);
  if (!ok) {
    tl_fuzz_check_error(e);
    return 0;
  }
  /* every accepted run is written and read back to itself */
  g_autofree char *written = tl_run_spec_to_text(s);
  g_autoptr(TlRunSpec) back = tl_run_spec_new();
  TL_FUZZ_CHECK(tl_run_spec_parse(back, written, "written", &e), "written text refused: %s",
                e ? e->message : "?");
  TL_FUZZ_CHECK(tl_run_spec_equal(s, back), "round trip changed the run");
  return 0;
}
