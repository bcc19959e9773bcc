/* SPDX-License-Identifier: GPL-3.0-or-later */
#define _POSIX_C_SOURCE 200809L /* fseeko */
/* Interfile "key := value" headers (tl-interfile.h). Keys are normalised once at parse time
 * into a hash table of (value, line); every typed getter names source, line, key and value. */
#include "tl-interfile.h"
#include "tl-file.h"
#include "tl-datafile.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  char *value;
  guint line;
} Entry;

struct _TlInterfile {
  char *source;
  GHashTable *keys; /* normalised key -> Entry */
};

static void entry_free(gpointer p) {
  Entry *e = p;
  g_free(e->value);
  g_free(e);
}

char *tl_interfile_normalise_key(const char *key) {
  GString *s = g_string_new(NULL);
  const char *p = key;
  while (*p == ' ' || *p == '\t' || *p == '!' || *p == '%') p++;
  gboolean space = FALSE, in_bracket = FALSE;
  for (; *p; p++) {
    char c = *p;
    if (c == ' ' || c == '\t') {
      space = TRUE;
      continue;
    }
    if (c == '[') in_bracket = TRUE, space = FALSE;
    if (c == ']') in_bracket = FALSE, space = FALSE;
    if (space && !in_bracket && s->len) g_string_append_c(s, ' ');
    space = FALSE;
    g_string_append_c(s, g_ascii_tolower(c));
  }
  return g_string_free(s, FALSE);
}

TlInterfile *tl_interfile_parse(const char *text, gsize len, const char *source, GError **error) {
  TlInterfile *h = g_new0(TlInterfile, 1);
  h->source = g_strdup(source);
  h->keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entry_free);
  const char *p = text, *end = text + len;
  guint line = 0;
  GHashTable *seen = tl_kv_seen_new(); /* the one rule on repeats (tl-file.h) */
  while (p < end) {
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    gsize n = nl ? (gsize)(nl - p) : (gsize)(end - p);
    line++;
    /* each line checked as it comes: what follows "!END OF INTERFILE" may be anything */
    if (!tl_text_check(source, p, n, line, error)) {
      g_hash_table_destroy(seen);
      tl_interfile_free(h);
      return NULL;
    }
    g_autofree char *cur = g_strndup(p, n);
    p = nl ? nl + 1 : end;
    char *semi = strchr(cur, ';');
    if (semi) *semi = '\0';
    char *sep = strstr(cur, ":=");
    if (!sep) continue; /* blank lines, comments and section titles without ":=" */
    *sep = '\0';
    char *key = tl_interfile_normalise_key(cur);
    if (!*key) {
      g_free(key);
      continue;
    }
    /* "!END OF INTERFILE :=" ends the header */
    gboolean last = g_str_equal(key, "end of interfile");
    g_autofree char *value = g_strstrip(g_strdup(sep + 2));
    if (!tl_kv_once_or_same(seen, source, key, value, line, error)) {
      g_free(key);
      g_hash_table_destroy(seen);
      tl_interfile_free(h);
      return NULL;
    }
    Entry *e = g_new(Entry, 1);
    e->value = g_steal_pointer(&value);
    e->line = line;
    g_hash_table_replace(h->keys, key, e);
    if (last) break;
  }
  g_hash_table_destroy(seen);
  return h;
}

TlInterfile *tl_interfile_load(const char *path, GError **error) {
  if (!tl_file_check_input(path, "Interfile header", error)) return NULL;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open Interfile header '%s': %s", path,
                g_strerror(e));
    return NULL;
  }
  /* a buffer of the file's size (headers are small), never more than the maximum + 1 */
  GStatBuf st;
  gsize cap = TL_INTERFILE_MAX_HEADER + 1;
  if (g_stat(path, &st) == 0 && st.st_size >= 0 && (guint64)st.st_size < cap)
    cap = (gsize)st.st_size + 1;
  g_autofree char *buf = g_malloc(cap);
  gsize n = fread(buf, 1, cap, f);
  fclose(f);
  if (n > TL_INTERFILE_MAX_HEADER) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "Interfile header '%s': more than %u bytes (expected a text header; is this the "
                "data file?)", path, TL_INTERFILE_MAX_HEADER);
    return NULL;
  }
  return tl_interfile_parse(buf, n, path, error);
}

void tl_interfile_free(TlInterfile *h) {
  if (!h) return;
  g_hash_table_destroy(h->keys);
  g_free(h->source);
  g_free(h);
}

const char *tl_interfile_source(const TlInterfile *h) { return h->source; }

static const Entry *lookup(const TlInterfile *h, const char *key) {
  g_autofree char *k = tl_interfile_normalise_key(key);
  return g_hash_table_lookup(h->keys, k);
}

const char *tl_interfile_get(const TlInterfile *h, const char *key) {
  const Entry *e = lookup(h, key);
  return e ? e->value : NULL;
}

gboolean tl_interfile_has_prefix(const TlInterfile *h, const char *prefix) {
  g_autofree char *p = tl_interfile_normalise_key(prefix);
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, h->keys);
  while (g_hash_table_iter_next(&it, &k, NULL))
    if (g_str_has_prefix(k, p)) return TRUE;
  return FALSE;
}

gboolean tl_interfile_fail(const TlInterfile *h, const char *key, const char *expected,
                           GError **error) {
  const Entry *e = lookup(h, key);
  if (!e) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "Interfile '%s': key '%s' missing (expected %s)",
                h->source, key, expected);
    return FALSE;
  }
  g_autofree char *q = tl_text_quote(e->value, -1, 80);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "Interfile '%s' line %u: key '%s' has value '%s' (expected %s)", h->source, e->line,
              key, q, expected);
  return FALSE;
}

static gboolean parse_int(const char *s, gint64 *out) {
  while (*s == ' ' || *s == '\t') s++;
  if (!*s) return FALSE;
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(s, &end, 10);
  if (errno || end == s) return FALSE;
  while (*end == ' ' || *end == '\t') end++;
  if (*end) return FALSE;
  *out = v;
  return TRUE;
}

gboolean tl_interfile_int(const TlInterfile *h, const char *key, gboolean required, gint64 def,
                          gint64 min, gint64 max, gint64 *out, GError **error) {
  const Entry *e = lookup(h, key);
  g_autofree char *expected = g_strdup_printf("an integer in [%" G_GINT64_FORMAT ", %"
                                              G_GINT64_FORMAT "]", min, max);
  if (!e) {
    if (required) return tl_interfile_fail(h, key, expected, error);
    *out = def;
    return TRUE;
  }
  gint64 v;
  if (!parse_int(e->value, &v) || v < min || v > max)
    return tl_interfile_fail(h, key, expected, error);
  *out = v;
  return TRUE;
}

gboolean tl_interfile_double(const TlInterfile *h, const char *key, gboolean required,
                             double def, gboolean positive, double *out, GError **error) {
  const Entry *e = lookup(h, key);
  const char *expected = positive ? "a positive finite number" : "a finite number";
  if (!e) {
    if (required) return tl_interfile_fail(h, key, expected, error);
    *out = def;
    return TRUE;
  }
  const char *s = e->value;
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(s, &end);
  if (end == s) return tl_interfile_fail(h, key, expected, error);
  while (*end == ' ' || *end == '\t') end++;
  if (*end || !isfinite(v) || (positive && !(v > 0)))
    return tl_interfile_fail(h, key, expected, error);
  *out = v;
  return TRUE;
}

gboolean tl_interfile_int_list(const TlInterfile *h, const char *key, guint max_n, gint64 min,
                               gint64 max, gint64 **out, guint *n, GError **error) {
  const Entry *e = lookup(h, key);
  g_autofree char *expected =
      g_strdup_printf("a list {a, b, ...} of at most %u integers in [%" G_GINT64_FORMAT ", %"
                      G_GINT64_FORMAT "]", max_n, min, max);
  if (!e) return tl_interfile_fail(h, key, expected, error);
  g_autofree char *v = g_strstrip(g_strdup(e->value));
  char *body = v;
  gsize len = strlen(v);
  if (len && v[0] == '{') {
    if (v[len - 1] != '}') return tl_interfile_fail(h, key, expected, error);
    v[len - 1] = '\0';
    body = v + 1;
  }
  g_auto(GStrv) parts = g_strsplit(body, ",", -1);
  guint count = g_strv_length(parts);
  if (count == 0 || count > max_n) return tl_interfile_fail(h, key, expected, error);
  gint64 *vals = g_new(gint64, count);
  for (guint i = 0; i < count; i++)
    if (!parse_int(parts[i], &vals[i]) || vals[i] < min || vals[i] > max) {
      g_free(vals);
      return tl_interfile_fail(h, key, expected, error);
    }
  *out = vals;
  *n = count;
  return TRUE;
}

gboolean tl_interfile_sample_format(const TlInterfile *h, TlInterfileSample *fmt,
                                    GError **error) {
  memset(fmt, 0, sizeof *fmt);
  const char *nf = tl_interfile_get(h, "number format");
  const char *expected_nf = "float, short float, long float, signed integer or unsigned integer";
  if (!nf) return tl_interfile_fail(h, "number format", expected_nf, error);
  g_autofree char *low = tl_interfile_normalise_key(nf);
  gint64 bytes;
  if (!tl_interfile_int(h, "number of bytes per pixel", FALSE, 0, 1, 8, &bytes, error))
    return FALSE;
  if (g_str_equal(low, "float") || g_str_equal(low, "short float") ||
      g_str_equal(low, "long float")) {
    fmt->number = TL_INTERFILE_FLOAT;
    if (bytes == 0) bytes = g_str_equal(low, "long float") ? 8 : 4;
    if (bytes != 4 && bytes != 8)
      return tl_interfile_fail(h, "number of bytes per pixel", "4 or 8 for float data", error);
  } else if (g_str_equal(low, "signed integer") || g_str_equal(low, "unsigned integer")) {
    fmt->number = low[0] == 's' ? TL_INTERFILE_SIGNED : TL_INTERFILE_UNSIGNED;
    if (bytes == 0) bytes = 2;
    if (bytes != 1 && bytes != 2 && bytes != 4)
      return tl_interfile_fail(h, "number of bytes per pixel", "1, 2 or 4 for integer data",
                               error);
  } else
    return tl_interfile_fail(h, "number format", expected_nf, error);
  fmt->bytes = (guint)bytes;
  const char *bo = tl_interfile_get(h, "imagedata byte order");
  fmt->big_endian = TRUE;
  if (bo) {
    if (g_ascii_strcasecmp(bo, "littleendian") == 0) fmt->big_endian = FALSE;
    else if (g_ascii_strcasecmp(bo, "bigendian") != 0)
      return tl_interfile_fail(h, "imagedata byte order", "LITTLEENDIAN or BIGENDIAN", error);
  }
  /* STIR's "image scaling factor[1]" (and the older "scale factor"), and the DICOM-like
   * "data rescale slope/offset": value = raw * slope * factor + offset */
  double f1, f2, slope, off;
  if (!tl_interfile_double(h, "image scaling factor[1]", FALSE, 1.0, FALSE, &f1, error) ||
      !tl_interfile_double(h, "scale factor", FALSE, 1.0, FALSE, &f2, error) ||
      !tl_interfile_double(h, "data rescale slope", FALSE, 1.0, FALSE, &slope, error) ||
      !tl_interfile_double(h, "data rescale offset", FALSE, 0.0, FALSE, &off, error))
    return FALSE;
  /* a zero factor would turn every voxel into the offset: a damaged header, not an image */
  const char *zero = f1 == 0 ? "image scaling factor[1]" : f2 == 0 ? "scale factor"
                   : slope == 0 ? "data rescale slope" : NULL;
  if (zero) return tl_interfile_fail(h, zero, "a non-zero scale factor", error);
  fmt->scale = f1 * f2 * slope;
  fmt->offset = off;
  if (!isfinite(fmt->scale))
    return tl_interfile_fail(h, "image scaling factor[1]", "scale factors whose product is finite",
                             error);
  return TRUE;
}

double tl_interfile_sample_value(const guint8 *p, const TlInterfileSample *fmt) {
  guint8 b[8];
  for (guint i = 0; i < fmt->bytes; i++)
    b[i] = p[(fmt->big_endian != (G_BYTE_ORDER == G_BIG_ENDIAN)) ? fmt->bytes - 1 - i : i];
  switch (fmt->number) {
  case TL_INTERFILE_FLOAT:
    if (fmt->bytes == 4) {
      float f;
      memcpy(&f, b, 4);
      return f;
    } else {
      double d;
      memcpy(&d, b, 8);
      return d;
    }
  case TL_INTERFILE_SIGNED:
    if (fmt->bytes == 1) return (gint8)b[0];
    if (fmt->bytes == 2) {
      gint16 v;
      memcpy(&v, b, 2);
      return v;
    } else {
      gint32 v;
      memcpy(&v, b, 4);
      return v;
    }
  default:
    if (fmt->bytes == 1) return b[0];
    if (fmt->bytes == 2) {
      guint16 v;
      memcpy(&v, b, 2);
      return v;
    } else {
      guint32 v;
      memcpy(&v, b, 4);
      return v;
    }
  }
}

float *tl_interfile_read_data(const TlInterfile *h, const char *header_path,
                              const TlInterfileSample *fmt, guint64 n, GError **error) {
  const char *name = tl_interfile_get(h, "name of data file");
  if (!name || !*name) {
    tl_interfile_fail(h, "name of data file", "the data file's name", error);
    return NULL;
  }
  g_autofree char *data_path = tl_datafile_resolve(header_path, "name of data file", name, error);
  if (!data_path) return NULL;
  gint64 offset, block;
  if (!tl_interfile_int(h, "data offset in bytes[1]", FALSE, -1, 0, G_MAXINT64 / 4, &offset,
                        error) ||
      !tl_interfile_int(h, "data starting block", FALSE, 0, 0, G_MAXINT32, &block, error))
    return NULL;
  if (offset < 0) offset = block * 2048;
  if (!tl_file_check_input(data_path, "Interfile data file", error)) {
    g_prefix_error(error, "Interfile '%s' (name of data file := %s): ", header_path, name);
    return NULL;
  }
  guint64 need = n * fmt->bytes; /* n bounded by the callers (<= 2^31) */
  /* exactly the offset and the values: a larger file means a size key was misread (given
   * twice, the smaller first), and reading part of it would reconstruct the wrong data */
  g_autofree char *layout = g_strdup_printf("%" G_GUINT64_FORMAT " values of %u bytes after "
                                            "'data offset in bytes[1]' %" G_GINT64_FORMAT, n,
                                            fmt->bytes, offset);
  if (!tl_datafile_check_size(header_path, data_path, need + (guint64)offset, layout, error))
    return NULL;
  FILE *f = g_fopen(data_path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "Interfile '%s': cannot open data file '%s': %s",
                header_path, data_path, g_strerror(e));
    return NULL;
  }
  float *out = g_try_new(float, MAX(n, 1));
  if (!out || fseeko(f, offset, SEEK_SET) != 0) {
    fclose(f);
    g_free(out);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "Interfile '%s': cannot read %" G_GUINT64_FORMAT
                " values from '%s'", header_path, n, data_path);
    return NULL;
  }
  enum { CHUNK = 1 << 16 };
  g_autofree guint8 *buf = g_malloc((gsize)MAX(MIN((guint64)CHUNK, n), 1) * fmt->bytes);
  for (guint64 done = 0; done < n;) {
    gsize k = (gsize)MIN((guint64)CHUNK, n - done);
    if (fread(buf, fmt->bytes, k, f) != k) {
      fclose(f);
      g_free(out);
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "Interfile '%s': data file '%s' ended early "
                  "(value %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT ")", header_path,
                  data_path, done, n);
      return NULL;
    }
    for (gsize i = 0; i < k; i++) {
      double v = tl_interfile_sample_value(buf + i * fmt->bytes, fmt);
      if (fmt->scale != 1.0 || fmt->offset != 0.0) v = v * fmt->scale + fmt->offset;
      float fv = tl_float_from_double(v);
      if (!isfinite(fv)) {
        fclose(f);
        g_free(out);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "Interfile '%s': value %" G_GUINT64_FORMAT " (file order) of '%s' is %g "
                    "(expected a finite float)", header_path, done + i, data_path, v);
        return NULL;
      }
      out[done + i] = fv;
    }
    done += k;
  }
  fclose(f);
  return out;
}
