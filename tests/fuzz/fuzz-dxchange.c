/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Data Exchange HDF5 (ct/tl-format-dxchange.c, through libhdf5 in a reader process, see
 * image/tl-isolate.h): what loads has the layout's sizes, a parallel-beam geometry and finite
 * line integrals; what fails says why. libhdf5 1.10 crashes on some damaged files: that
 * ends the reader process only, and the parent must come back with a GError (counted, and
 * printed at exit as "reader processes lost"). */
#include "tl-fuzz.h"
#include "ct/tl-ct-formats.h"
#include "image/tl-format.h"
#include "image/tl-isolate.h"
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sanitizer/common_interface_defs.h>

/* In each reader process: a crash there is libhdf5's, contained by design, not a finding of
 * this harness, so libFuzzer's crash report (which would name the input of the moment the
 * process was forked) is switched off, and the sanitizer's report goes nowhere. */
static void child_setup(void) {
  __sanitizer_set_death_callback(NULL);
  /* a segfault ends the process at once: the sanitizer's report (a symbolised stack, ~10 ms)
   * would go nowhere anyway */
  signal(SIGSEGV, SIG_DFL), signal(SIGBUS, SIG_DFL), signal(SIGFPE, SIG_DFL);
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, 2), close(null);
}

static guint disagreements; /* describe's reader lost where load's was not */
static guint unstable;      /* describe failed in a reused reader, not in fresh ones */

static void report(void) {
  fprintf(stderr, "fuzz-dxchange: reader processes lost (libhdf5 crashes contained): %u; "
          "inputs loaded although describe's reader was lost: %u; describe failed in a reused "
          "reader only: %u\n", tl_isolate_children_lost(), disagreements, unstable);
}

/* FUZZ_LOST_DIR=DIR keeps each input that cost a reader process (regression files). */
static void keep_if_lost(guint before, const guint8 *data, size_t size) {
  const char *dir = g_getenv("FUZZ_LOST_DIR");
  if (!dir || tl_isolate_children_lost() == before) return;
  g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1, data, size);
  g_autofree char *name = g_strdup_printf("%s/lost-%s.h5", dir, sum);
  tl_fuzz_write(name, data, size);
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *in;
  if (!in) {
    in = tl_fuzz_path("in.h5");
    tl_isolate_reuse_children(child_setup); /* a fork per input: ~80 inputs/s under ASan */
    atexit(report);
  }
  tl_fuzz_write(in, data, size);
  g_autoptr(GError) e = NULL;
  GString *info = g_string_new(NULL);
  guint lost = tl_isolate_children_lost();
  gboolean described = tl_format_dxchange.describe(in, info, &e);
  gboolean describe_lost = tl_isolate_children_lost() != lost;
  keep_if_lost(lost, data, size);
  g_string_free(info, TRUE);
  if (!described) tl_fuzz_check_error(e);
  g_clear_error(&e);
  lost = tl_isolate_children_lost();
  g_autoptr(TlCtData) d = tl_ct_dxchange_load(in, &e);
  keep_if_lost(lost, data, size);
  if (!d) {
    tl_fuzz_check_error(e);
    return 0;
  }
  /* Describe and load each read the file in a reader process. libhdf5 1.10 reads freed or
   * uninitialised memory on some damaged files (docs/formats.md), and the fuzzer's reader
   * processes are reused, so libhdf5's state differs from one read to the next: one reader
   * can crash, or answer another layout, where the other does not. Such a disagreement is
   * libhdf5's, contained, and counted; describe failing again, every time, while load
   * succeeds is a finding (both run the same layout code). */
  if (!described && describe_lost) {
    disagreements++;
    return 0;
  }
  if (!described) {
    /* again as the application runs them, each in a fresh reader process */
    g_autofree char *first = g_strdup(e ? e->message : "(no message)");
    tl_isolate_reuse_children_stop();
    GString *info2 = g_string_new(NULL);
    g_clear_error(&e);
    described = tl_format_dxchange.describe(in, info2, &e);
    g_string_free(info2, TRUE);
    g_autoptr(GError) e2 = NULL;
    g_autoptr(TlCtData) fresh = described ? NULL : tl_ct_dxchange_load(in, &e2);
    tl_isolate_reuse_children(child_setup);
    if (described || !fresh) {
      unstable++;
      return 0;
    }
    TL_FUZZ_CHECK(described, "loads but describe fails, in fresh processes too: %s / %s", first,
                  e ? e->message : "(no message)");
  }
  TL_FUZZ_CHECK(d->geometry->beam == TL_CT_PARALLEL, "beam");
  guint64 n = tl_ct_data_n_values(d);
  for (guint64 i = 0; i < n; i++) TL_FUZZ_CHECK(isfinite(d->proj[i]), "value %g", d->proj[i]);
  return 0;
}
