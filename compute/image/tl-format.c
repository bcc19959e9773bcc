/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Helpers every format's probe shares (tl-format.h). */
#include "image/tl-format.h"
#include "image/tl-file.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *tl_data_kind_name(TlDataKind kind) {
  switch (kind) {
  case TL_DATA_IMAGE: return "image";
  case TL_DATA_PET_LISTMODE: return "PET list mode";
  case TL_DATA_PET_SINOGRAM: return "PET sinogram";
  case TL_DATA_CT: return "CT projections";
  case TL_DATA_SCANNER: return "PET scanner";
  case TL_DATA_PET_NORM: return "PET normalisation";
  default: return "unknown";
  }
}

gboolean tl_format_path_has_extension(const char *path, const char *extensions) {
  g_autofree char *lower = g_ascii_strdown(path, -1);
  g_auto(GStrv) exts = g_strsplit(extensions, " ", -1);
  for (guint i = 0; exts[i]; i++)
    if (exts[i][0] && g_str_has_suffix(lower, exts[i])) return TRUE;
  return FALSE;
}

guint8 *tl_format_read_head(const char *path, gsize *n, GError **error) {
  *n = 0;
  /* a folder has no head: formats of folders (an image series) probe its path */
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) return g_malloc0(1);
  if (g_file_test(path, G_FILE_TEST_EXISTS) && !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "'%s' is not a regular file", q);
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot open '%s': %s", q,
                g_strerror(e));
    return NULL;
  }
  guint8 *buf = g_malloc0(TL_FORMAT_HEAD_BYTES + 1);
  *n = fread(buf, 1, TL_FORMAT_HEAD_BYTES, f);
  gboolean bad = ferror(f);
  fclose(f);
  if (bad) {
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO, "'%s': read error", q);
    g_free(buf);
    return NULL;
  }
  return buf;
}

gboolean tl_format_head_starts_with(const guint8 *head, gsize n_head, const char *text) {
  gsize i = 0;
  if (n_head >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3;
  while (i < n_head && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
    i++;
  gsize len = strlen(text);
  return n_head - i >= len && g_ascii_strncasecmp((const char *)head + i, text, len) == 0;
}
