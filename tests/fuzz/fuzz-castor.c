/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CASToR datafiles: the input is a .cdh header, a NUL, then the .cdf bytes (the seeds' headers
 * name "in.cdf"). What loads saves and loads back to the same values and the same data bytes. */
#include "tl-fuzz.h"
#include "pet/data/tl-format-castor.h"

static gboolean same_floats(const float *a, const float *b, guint64 n) {
  if (!a || !b) return a == b;
  return memcmp(a, b, 4 * n) == 0;
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 1 << 18) return 0;
  static char *cdh, *cdf, *out, *out_cdf;
  if (!cdh)
    cdh = tl_fuzz_path("in.cdh"), cdf = tl_fuzz_path("in.cdf"), out = tl_fuzz_path("out.cdh"),
    out_cdf = tl_fuzz_path("out.cdf");
  const guint8 *nul = memchr(data, 0, size);
  size_t nh = nul ? (size_t)(nul - data) : size;
  tl_fuzz_write(cdh, data, nh);
  tl_fuzz_write(cdf, nul ? nul + 1 : data, nul ? size - nh - 1 : 0);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlCastorData) d = tl_castor_load(cdh, &e);
  if (!d) {
    tl_fuzz_check_error(e);
    return 0;
  }
  TL_FUZZ_CHECK(tl_castor_save(d, out, &e), "save: %s", e ? e->message : "");
  g_autoptr(TlCastorData) again = tl_castor_load(out, &e);
  TL_FUZZ_CHECK(again, "reload: %s", e ? e->message : "");
  guint64 n = d->n_events, nb = d->histogram ? d->tof_bins : 1;
  TL_FUZZ_CHECK(again->n_events == n && again->histogram == d->histogram &&
                    again->tof_bins == d->tof_bins && again->has_tof == d->has_tof &&
                    again->start_s == d->start_s && again->duration_s == d->duration_s &&
                    again->tof_fwhm_ps == d->tof_fwhm_ps && again->tof_range_ps == d->tof_range_ps,
                "header values differ");
  TL_FUZZ_CHECK(memcmp(again->id1, d->id1, 4 * n) == 0 && memcmp(again->id2, d->id2, 4 * n) == 0 &&
                    memcmp(again->time_ms, d->time_ms, 4 * n) == 0, "ids or times differ");
  TL_FUZZ_CHECK(same_floats(again->atn, d->atn, n) && same_floats(again->rand, d->rand, n) &&
                    same_floats(again->norm, d->norm, n) && same_floats(again->tof_ps, d->tof_ps, n) &&
                    same_floats(again->scat, d->scat, n * nb) &&
                    same_floats(again->value, d->value, n * nb), "fields differ");
  g_autofree char *a = NULL, *b = NULL;
  gsize la = 0, lb = 0;
  TL_FUZZ_CHECK(g_file_get_contents(cdf, &a, &la, NULL) && g_file_get_contents(out_cdf, &b, &lb, NULL),
                "read back");
  TL_FUZZ_CHECK(la == lb && memcmp(a, b, la) == 0, "data bytes differ");
  return 0;
}
