/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The .tlct file: text header (with the geometry embedded) + float32 projections. */
#include "tl-ct-data.h"
#include "image/tl-file.h"
#include "image/tl-format.h"
#include <errno.h>
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#define TL_CT_MAGIC "TOMOLAB-CT 1"

TlCtData *tl_ct_data_new(TlCtGeometry *geometry) {
  TlCtData *d = g_new0(TlCtData, 1);
  d->geometry = geometry;
  d->proj = g_new0(float, tl_ct_data_n_values(d));
  d->values = TL_CT_LINE_INTEGRALS;
  return d;
}

void tl_ct_data_free(TlCtData *d) {
  if (!d) return;
  tl_ct_geometry_free(d->geometry);
  g_free(d->proj);
  g_free(d->description);
  g_free(d);
}

guint64 tl_ct_data_n_values(const TlCtData *d) {
  const TlCtGeometry *g = d->geometry;
  return (guint64)g->n_views * g->det_u * g->det_v;
}

gboolean tl_ct_data_save(const TlCtData *d, const char *path, GError **error) {
  g_autofree char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  char a[32];
  fprintf(f, TL_CT_MAGIC "\nvalues = %s\n",
          d->values == TL_CT_COUNTS ? "counts" : "line-integrals");
  tl_format_double(a, d->i0);
  fprintf(f, "i0 = %s\nbyte_order = little-endian\n", a);
  if (d->has_grid) {
    const TlImageGrid *g = &d->grid;
    fprintf(f, "grid = %u %u %u", g->dims[0], g->dims[1], g->dims[2]);
    for (int i = 0; i < 6; i++) {
      tl_format_float(a, i < 3 ? g->voxel_mm[i] : g->origin_mm[i - 3]);
      fprintf(f, " %s", a);
    }
    fputc('\n', f);
  }
  if (d->description) {
    g_autofree char *desc = g_strdup(d->description);
    g_strdelimit(desc, "\n\r", ' ');
    fprintf(f, "description = %s\n", desc);
  }
  g_autofree char *geo = tl_ct_geometry_to_text(d->geometry);
  fprintf(f, "begin_geometry\n%send_geometry\nend_header\n", geo);
  guint64 n = tl_ct_data_n_values(d);
  gboolean ok = TRUE;
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN) {
    ok = fwrite(d->proj, sizeof(float), n, f) == n;
  } else {
    for (guint64 i = 0; i < n && ok; i++) {
      guint32 v;
      memcpy(&v, &d->proj[i], 4);
      v = GUINT32_TO_LE(v);
      ok = fwrite(&v, 4, 1, f) == 1;
    }
  }
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

gboolean tl_ct_data_sniff(const char *path) {
  FILE *f = g_fopen(path, "rb");
  if (!f) return FALSE;
  char buf[sizeof TL_CT_MAGIC] = {0};
  gboolean ok = fread(buf, 1, sizeof buf - 1, f) == sizeof buf - 1 && strcmp(buf, TL_CT_MAGIC) == 0;
  fclose(f);
  return ok;
}

static gboolean parse_grid(const char *src, guint line, const char *value, TlImageGrid *g,
                           GError **error) {
  double v[9];
  if (!tl_kv_doubles(src, line, "grid", value, 9, v, error)) return FALSE;
  for (int i = 0; i < 3; i++) {
    if (v[i] < 1 || v[i] > G_MAXUINT || v[i] != floor(v[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key 'grid': dimension %g is not a positive integer", src, line, v[i]);
      return FALSE;
    }
    g->dims[i] = (guint)v[i];
    g->voxel_mm[i] = tl_float_from_double(v[3 + i]);
    g->origin_mm[i] = tl_float_from_double(v[6 + i]);
  }
  g_autoptr(GError) e = NULL;
  if (!tl_image_grid_validate(g, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key 'grid': %s", src, line, e->message);
    return FALSE;
  }
  return TRUE;
}

TlCtData *tl_ct_data_load(const char *path, GError **error) {
  g_autoptr(GError) e = NULL;
  if (!tl_file_check_input(path, "CT scan", error)) return NULL;
  /* mapped, not read: a scan can be gigabytes and is copied once, into d->proj */
  g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, &e);
  if (!map) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s", e->message);
    return NULL;
  }
  const char *buf = g_mapped_file_get_contents(map);
  gsize len = g_mapped_file_get_length(map);
  if (len < strlen(TL_CT_MAGIC) + 1 || strncmp(buf, TL_CT_MAGIC "\n", strlen(TL_CT_MAGIC) + 1)) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: not a Tomolab CT file (the first line must be '" TL_CT_MAGIC "')", path);
    return NULL;
  }
  const char *end = g_strstr_len(buf, len, "\nend_header\n");
  if (!end) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: no 'end_header' line", path);
    return NULL;
  }
  if (!tl_text_check(path, buf, end - buf + 1, 1, error)) return NULL;
  g_autofree char *header = g_strndup(buf, end - buf + 1);
  const char *data = end + strlen("\nend_header\n");
  g_auto(GStrv) lines = g_strsplit(header, "\n", -1);
  /* the geometry block goes to the geometry parser with its lines kept in place (blanked
   * elsewhere) so its messages carry the file's line numbers */
  GString *geo = g_string_new("\n"); /* line 1, the magic */
  gboolean in_geo = FALSE, have_geo = FALSE, have_values = FALSE, have_order = FALSE;
  g_autoptr(TlCtData) d = g_new0(TlCtData, 1);
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (guint i = 1; lines[i]; i++) {
    guint line = i + 1;
    if (strcmp(lines[i], "begin_geometry") == 0 && !have_geo) {
      in_geo = TRUE;
      g_string_append_c(geo, '\n');
      continue;
    }
    if (in_geo) {
      if (strcmp(lines[i], "end_geometry") == 0) in_geo = FALSE, have_geo = TRUE;
      else g_string_append(geo, lines[i]);
      g_string_append_c(geo, '\n');
      continue;
    }
    g_string_append_c(geo, '\n');
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(lines[i], &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value', found '%s'",
                  path, line, lines[i]);
      g_string_free(geo, TRUE);
      return NULL;
    }
    gboolean ok = tl_kv_once(keys_seen, path, key, line, error);
    if (!ok) {
    } else if (strcmp(key, "values") == 0) {
      have_values = TRUE;
      if (strcmp(value, "line-integrals") == 0) d->values = TL_CT_LINE_INTEGRALS;
      else if (strcmp(value, "counts") == 0) d->values = TL_CT_COUNTS;
      else {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'values': '%s' is not 'line-integrals' or 'counts'", path, line,
                    value);
        ok = FALSE;
      }
    } else if (strcmp(key, "i0") == 0) {
      ok = tl_kv_doubles(path, line, key, value, 1, &d->i0, error);
    } else if (strcmp(key, "byte_order") == 0) {
      have_order = strcmp(value, "little-endian") == 0;
      if (!have_order) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'byte_order': '%s' is not 'little-endian'", path, line, value);
        ok = FALSE;
      }
    } else if (strcmp(key, "grid") == 0) {
      ok = d->has_grid = parse_grid(path, line, value, &d->grid, error);
    } else if (strcmp(key, "description") == 0) {
      g_free(d->description);
      d->description = g_strdup(value);
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", path, line, key);
      ok = FALSE;
    }
    if (!ok) {
      g_string_free(geo, TRUE);
      return NULL;
    }
  }
  g_autofree char *geo_text = g_string_free(geo, FALSE);
  const char *missing = !have_values ? "values" : !have_order ? "byte_order"
                        : !have_geo ? "begin_geometry ... end_geometry" : NULL;
  if (missing) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: '%s' is missing", path, missing);
    return NULL;
  }
  if (!(d->geometry = tl_ct_geometry_from_text(geo_text, path, error))) return NULL;
  guint64 n = tl_ct_data_n_values(d), have = len - (data - buf);
  if (have != 4 * n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: the data section has %" G_GUINT64_FORMAT " bytes; %u views of %u x %u "
                "float32 need %" G_GUINT64_FORMAT " (%s)", path, have, d->geometry->n_views,
                d->geometry->det_u, d->geometry->det_v, 4 * n, have < 4 * n ? "truncated" : "oversized");
    return NULL;
  }
  d->proj = g_new(float, n);
  memcpy(d->proj, data, 4 * n);
  for (guint64 i = 0; i < n; i++) {
    if (G_BYTE_ORDER != G_LITTLE_ENDIAN) {
      guint32 v;
      memcpy(&v, &d->proj[i], 4);
      v = GUINT32_FROM_LE(v);
      memcpy(&d->proj[i], &v, 4);
    }
    if (!isfinite(d->proj[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: value %" G_GUINT64_FORMAT
                  " (view %" G_GUINT64_FORMAT ") is not finite", path, i,
                  i / ((guint64)d->geometry->det_u * d->geometry->det_v));
      return NULL;
    }
  }
  return g_steal_pointer(&d);
}

/* --- the format table's entry (compute/tl-formats.c) --- */

static guint tlct_probe(const char *path, const guint8 *head, gsize n) {
  if (tl_format_head_starts_with(head, n, TL_CT_MAGIC)) return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".tlct") ? TL_FORMAT_EXTENSION : 0;
}

static gpointer tlct_load(const char *path, GError **error) {
  return tl_ct_data_load(path, error);
}

static gboolean tlct_save(gconstpointer data, const char *path, GError **error) {
  return tl_ct_data_save(data, path, error);
}

const TlFormatClass tl_format_tlct = {
    .name = "tlct",
    .summary = "Tomolab CT scan (.tlct: text header with the geometry + float32 projections)",
    .kind = TL_DATA_CT,
    .extensions = ".tlct",
    .probe = tlct_probe,
    .load = tlct_load,
    .save = tlct_save,
};
