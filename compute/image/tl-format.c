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

char *tl_format_list_names(const TlFormatClass *const *list, TlDataKind kind, gboolean writers) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; list[i]; i++) {
    const TlFormatClass *f = list[i];
    if ((kind != TL_DATA_N_KINDS && f->kind != kind) || (writers ? !f->save : !f->load)) continue;
    g_string_append_printf(s, "%s%s (%s)", s->len ? ", " : "", f->name, f->extensions);
  }
  return g_string_free(s, FALSE);
}

const TlFormatClass *tl_format_detect_in(const TlFormatClass *const *list, const char *path,
                                         GError **error) {
  gsize n = 0;
  g_autofree guint8 *head = tl_format_read_head(path, &n, error);
  if (!head) return NULL;
  const TlFormatClass *best = NULL;
  guint best_score = 0;
  for (guint i = 0; list[i]; i++) {
    if (!list[i]->probe || !list[i]->load) continue;
    guint score = list[i]->probe(path, head, n);
    /* the extension breaks ties between equally sure content matches */
    if (score > 0 && score < TL_FORMAT_EXTENSION * 2 &&
        !tl_format_path_has_extension(path, list[i]->extensions))
      score = 0;
    else if (score >= TL_FORMAT_LIKELY && tl_format_path_has_extension(path, list[i]->extensions))
      score += 1;
    if (score > best_score) best = list[i], best_score = score;
  }
  if (!best) {
    g_autofree char *known = tl_format_list_names(list, TL_DATA_N_KINDS, FALSE);
    g_autofree char *q = tl_text_quote(path, -1, 200); /* any bytes: the message stays UTF-8 */
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "'%s' is a directory, and no format reads this folder (expected one of: %s)",
                  q, known);
    else
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "'%s': not a format Tomolab reads (%" G_GSIZE_FORMAT " bytes looked at; "
                  "expected one of: %s)", q, n, known);
  }
  return best;
}

const TlFormatClass *tl_format_for_output_in(const TlFormatClass *const *list, const char *path,
                                             TlDataKind kind, const char *name, GError **error) {
  if (name) {
    const TlFormatClass *f = NULL;
    for (guint i = 0; list[i] && !f; i++)
      if (g_ascii_strcasecmp(list[i]->name, name) == 0) f = list[i];
    if (!f || f->kind != kind || !f->save) {
      g_autofree char *known = tl_format_list_names(list, kind, TRUE);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "format '%s' cannot write %s (formats that can: %s)", name,
                  tl_data_kind_name(kind), known);
      return NULL;
    }
    return f;
  }
  /* the longest matching extension wins (".nii.gz" over ".gz") */
  const TlFormatClass *best = NULL;
  gsize best_len = 0;
  g_autofree char *lower = g_ascii_strdown(path, -1);
  for (guint i = 0; list[i]; i++) {
    if (list[i]->kind != kind || !list[i]->save) continue;
    g_auto(GStrv) exts = g_strsplit(list[i]->extensions, " ", -1);
    for (guint e = 0; exts[e]; e++) {
      gsize len = strlen(exts[e]);
      if (len > best_len && g_str_has_suffix(lower, exts[e])) best = list[i], best_len = len;
    }
  }
  if (!best) {
    g_autofree char *known = tl_format_list_names(list, kind, TRUE);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "'%s': no format writes %s with this extension (expected one of: %s)", path,
                tl_data_kind_name(kind), known);
  }
  return best;
}
