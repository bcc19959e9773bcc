/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `tomolab-cli info` over every format (issue 27): detection by content, the description and
 * the load a reconstruction runs (tl_dataset_info; with the defaults when the first byte's
 * high bit is set). The first byte's low bits pick a row below: the file info is run on, a
 * text file (a header or a sidecar) and a binary file. The rest of the input is the text
 * file, a NUL, then the binary file; rows without a text file take the whole rest as the
 * binary. Whatever the bytes, the call returns: TRUE with a description of valid UTF-8, or
 * a GError of one UTF-8 message. */
#include "tl-fuzz.h"
#include "dataset/tl-dataset.h"

static const char *const names[][3] = {
    {"in.nii", NULL, "in.nii"},          {"in.hv", "in.hv", "in.v"},
    {"in.hs", "in.hs", "in.s"},          {"in.mhd", "in.mhd", "in.raw"},
    {"in.mha", NULL, "in.mha"},          {"in.cdh", "in.cdh", "in.cdf"},
    {"in.tlm", NULL, "in.tlm"},          {"in.tlct", NULL, "in.tlct"},
    {"in.raw", "in.raw.txt", "in.raw"},  {"in.l.hdr", "in.l.hdr", "in.l"},
    {"in.h5", NULL, "in.h5"},            {"in.dcm", NULL, "in.dcm"},
    {"in.tln", NULL, "in.tln"},          {"in.hscan", "in.hscan", "in.lut"},
    {"in.geom", "in.geom", NULL},        {"in.txt", "in.txt", NULL},
    {"in", NULL, "in"},                  {"in.tif", "in.tif.txt", "in.tif"},
};

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 18) return 0;
  static char *paths[G_N_ELEMENTS(names)][3];
  if (!paths[0][0])
    for (guint i = 0; i < G_N_ELEMENTS(names); i++)
      for (int k = 0; k < 3; k++) paths[i][k] = names[i][k] ? tl_fuzz_path(names[i][k]) : NULL;
  guint pick = (data[0] & 0x7f) % G_N_ELEMENTS(names);
  char *const *p = paths[pick];
  const guint8 *body = data + 1;
  size_t n = size - 1;
  if (!p[1]) {
    tl_fuzz_write(p[2], body, n);
  } else {
    const guint8 *nul = memchr(body, 0, n);
    size_t n1 = nul ? (size_t)(nul - body) : n;
    tl_fuzz_write(p[1], body, n1);
    /* the binary always rewritten: no earlier input's file is read with this one */
    if (p[2]) tl_fuzz_write(p[2], nul ? nul + 1 : body, nul ? n - n1 - 1 : 0);
  }
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GError) e = NULL;
  if (!tl_dataset_info(p[0], (data[0] & 0x80) != 0, out, &e)) tl_fuzz_check_error(e);
  TL_FUZZ_CHECK(g_utf8_validate(out->str, (gssize)out->len, NULL), "description not UTF-8");
  return 0;
}
