/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Command-line numbers and --grid: strict parsing; a parsed grid printed with the shortest
 * exact numbers parses back to the same grid. */
#include "tl-fuzz.h"
#include "tl-cli.h"
#include "image/tl-file.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size > 256) return 0;
  g_autofree char *text = tl_fuzz_text(data, size);
  g_autoptr(GError) e = NULL;
  TlImageGrid g;
  if (tl_cli_parse_grid(text, &g, &e)) {
    char v[3][32];
    for (int d = 0; d < 3; d++) tl_format_double(v[d], g.voxel_mm[d]);
    g_autofree char *printed =
        g_strdup_printf("%ux%ux%u@%s,%s,%s", g.dims[0], g.dims[1], g.dims[2], v[0], v[1], v[2]);
    TlImageGrid g2;
    TL_FUZZ_CHECK(tl_cli_parse_grid(printed, &g2, NULL), "'%s' does not parse back", printed);
    TL_FUZZ_CHECK(tl_image_grid_equal(&g, &g2), "'%s' parses to another grid", printed);
  } else {
    tl_fuzz_check_error(e);
  }
  g_clear_error(&e);
  guint64 u;
  if (tl_cli_parse_uint("--n", text, 0, G_MAXUINT64, &u, &e)) {
    g_autofree char *t = g_strdup_printf("%" G_GUINT64_FORMAT, u);
    TL_FUZZ_CHECK(strcmp(t, text) == 0 || text[0] == '0', "'%s' read as %s", text, t);
  } else {
    tl_fuzz_check_error(e);
  }
  g_clear_error(&e);
  double x;
  if (!tl_cli_parse_double("--x", text, -G_MAXDOUBLE, G_MAXDOUBLE, &x, &e)) tl_fuzz_check_error(e);
  return 0;
}
