/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Scatter estimate files (docs/formats.md, "Scatter estimates"): a text header with the
 * detector sampling, the scale and the scanner description, then the float32 values. */
#define _POSIX_C_SOURCE 200809L /* getline, ftello */
#include "tl-sss.h"
#include "image/tl-file.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAGIC "TOMOLAB-SCATTER 1"
/* Header lines longer than this are refused before they are kept (a list of 2^21 indices
 * needs ~16 MiB). */
#define MAX_LINE ((gsize)32 << 20)

static void write_list(FILE *f, const char *key, const guint *v, guint n) {
  fprintf(f, "%s =", key);
  for (guint i = 0; i < n; i++) fprintf(f, " %u", v[i]);
  fputc('\n', f);
}

gboolean tl_scatter_estimate_save(const TlScatterEstimate *e, const char *path, GError **error) {
  TlScatterEstimate *check = tl_scatter_estimate_copy(e);
  gboolean valid = tl_scatter_estimate_prepare(check, path, error);
  tl_scatter_estimate_free(check);
  if (!valid) return FALSE;
  g_autofree char *scanner = tl_scanner_to_text(e->scanner);
  g_autofree char *desc = g_strdup(e->description ? e->description : "");
  g_strdelimit(desc, "\r\n", ' ');
  guint64 nv = tl_scatter_estimate_n_pairs(e) * MAX(e->n_bins, 1);
  char scale[32];
  tl_format_double(scale, e->scale);
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  fprintf(f, MAGIC "\ntransaxial_samples = %u\nring_samples = %u\ntof_bins = %u\n"
             "values = %" G_GUINT64_FORMAT "\nvalue_bytes = 4\nbyte_order = little-endian\n"
             "scale = %s\n", e->n_t, e->n_r, e->n_bins, nv, scale);
  write_list(f, "transaxial", e->transaxial, e->n_t);
  write_list(f, "rings", e->ring, e->n_r);
  fprintf(f, "description = %s\nbegin_scanner\n%send_scanner\nend_header\n", desc, scanner);
  gboolean ok = TRUE;
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN) {
    ok = fwrite(e->values, sizeof(float), nv, f) == nv;
  } else {
    for (guint64 i = 0; ok && i < nv; i++) {
      guint32 w;
      memcpy(&w, &e->values[i], 4);
      w = GUINT32_TO_LE(w);
      ok = fwrite(&w, 4, 1, f) == 1;
    }
  }
  if (!ok) {
    int err = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(err));
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

typedef struct {
  guint64 n_t, n_r, bins, values;
  double scale;
  GArray *transaxial, *rings; /* guint */
  char *description;
  GString *scanner;
  guint scanner_line;
  guint seen;
} Header;

/* "i0 i1 ..." into `out`, each < max, at most `limit` of them. */
static gboolean parse_list(const char *path, guint line, const char *key, const char *value,
                           guint64 limit, GArray *out, GError **error) {
  g_array_set_size(out, 0);
  const char *p = value;
  while (*p) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    char *end = NULL;
    errno = 0;
    guint64 v = g_ascii_strtoull(p, &end, 10);
    if (end == p || *p == '-' || *p == '+' || errno || v > G_MAXUINT32 ||
        (*end && *end != ' ' && *end != '\t')) {
      g_autofree char *q = tl_text_quote(p, -1, 40);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': '%s' is not a list of "
                  "integers in [0, %u]", path, line, key, q, G_MAXUINT32);
      return FALSE;
    }
    if (out->len >= limit) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': more than %" G_GUINT64_FORMAT
                  " values", path, line, key, limit);
      return FALSE;
    }
    guint u = (guint)v;
    g_array_append_val(out, u);
    p = end;
  }
  return TRUE;
}

static gboolean read_header(FILE *f, const char *path, Header *h, GError **error) {
  char *line = NULL;
  size_t cap = 0;
  guint lineno = 0;
  gboolean in_scanner = FALSE, ok = FALSE;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (;;) {
    ssize_t len = getline(&line, &cap, f);
    lineno++;
    if (len < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header ends before 'end_header' "
                  "(line %u)", path, lineno);
      goto out;
    }
    if ((gsize)len > MAX_LINE) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: a header line of %zd bytes: expected "
                  "at most %" G_GSIZE_FORMAT, path, lineno, len, MAX_LINE);
      goto out;
    }
    if (lineno == 1) {
      g_strchomp(line);
      if (strcmp(line, MAGIC) != 0) {
        g_autofree char *q = tl_text_quote(line, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: not a Tomolab scatter estimate "
                    "(first line '%s', expected '" MAGIC "')", path, q);
        goto out;
      }
      continue;
    }
    if (!tl_text_check(path, line, (gsize)len, lineno, error)) goto out;
    if (in_scanner) {
      if (strcmp(g_strchomp(line), "end_scanner") == 0) in_scanner = FALSE;
      else g_string_append_printf(h->scanner, "%s\n", line);
      continue;
    }
    g_strchomp(line);
    if (g_str_has_prefix(line, "description =")) {
      if (!tl_kv_once(keys_seen, path, "description", lineno, error)) goto out;
      g_free(h->description);
      h->description = g_strdup(g_strstrip(line + strlen("description =")));
      continue;
    }
    if (strcmp(line, "begin_scanner") == 0) {
      if (h->seen & 512) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: a second 'begin_scanner'", path,
                    lineno);
        goto out;
      }
      in_scanner = TRUE;
      h->scanner_line = lineno + 1;
      h->seen |= 512;
      continue;
    }
    if (strcmp(line, "end_header") == 0) break;
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(line, &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", path, lineno);
      goto out;
    }
    if (!tl_kv_once(keys_seen, path, key, lineno, error)) goto out;
    guint64 v;
    if (strcmp(key, "transaxial_samples") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, TL_SCANNER_MAX_CRYSTALS, &h->n_t, error)) goto out;
      h->seen |= 1;
    } else if (strcmp(key, "ring_samples") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, TL_SCANNER_MAX_CRYSTALS, &h->n_r, error)) goto out;
      h->seen |= 2;
    } else if (strcmp(key, "tof_bins") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, 65535, &h->bins, error)) goto out;
      h->seen |= 4;
    } else if (strcmp(key, "values") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, TL_SCATTER_MAX_VALUES, &h->values, error))
        goto out;
      h->seen |= 8;
    } else if (strcmp(key, "value_bytes") == 0) {
      if (!tl_kv_uint(path, lineno, key, value, G_MAXUINT32, &v, error)) goto out;
      if (v != 4) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key 'value_bytes': value '%s' "
                    "(expected 4: float32)", path, lineno, value);
        goto out;
      }
      h->seen |= 16;
    } else if (strcmp(key, "byte_order") == 0) {
      if (strcmp(value, "little-endian") != 0) {
        g_autofree char *q = tl_text_quote(value, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key 'byte_order': value '%s' "
                    "(expected 'little-endian')", path, lineno, q);
        goto out;
      }
      h->seen |= 32;
    } else if (strcmp(key, "scale") == 0) {
      if (!tl_kv_doubles(path, lineno, key, value, 1, &h->scale, error)) goto out;
      if (!(isfinite(h->scale) && h->scale >= 0)) {
        g_autofree char *q = tl_text_quote(value, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key 'scale': value '%s' (expected "
                    "a finite value >= 0)", path, lineno, q);
        goto out;
      }
      h->seen |= 64;
    } else if (strcmp(key, "transaxial") == 0) {
      if (!parse_list(path, lineno, key, value, TL_SCANNER_MAX_CRYSTALS, h->transaxial, error))
        goto out;
      h->seen |= 128;
    } else if (strcmp(key, "rings") == 0) {
      if (!parse_list(path, lineno, key, value, TL_SCANNER_MAX_CRYSTALS, h->rings, error))
        goto out;
      h->seen |= 256;
    } else {
      g_autofree char *q = tl_text_quote(key, -1, 40);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", path, lineno, q);
      goto out;
    }
  }
  static const char *names[] = {"transaxial_samples", "ring_samples", "tof_bins", "values",
                                "value_bytes", "byte_order", "scale", "transaxial", "rings",
                                "begin_scanner"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (!(h->seen & (1u << i))) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks '%s'", path, names[i]);
      goto out;
    }
  if (in_scanner) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: 'begin_scanner' without 'end_scanner'",
                path);
    goto out;
  }
  ok = TRUE;
out:
  free(line);
  return ok;
}

TlScatterEstimate *tl_scatter_estimate_load(const char *path, GError **error) {
  if (!tl_file_check_input(path, "scatter estimate", error)) return NULL;
  FILE *f = g_fopen(path, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", path, g_strerror(e));
    return NULL;
  }
  Header h = {.scanner = g_string_new(NULL), .transaxial = g_array_new(FALSE, FALSE, sizeof(guint)),
              .rings = g_array_new(FALSE, FALSE, sizeof(guint))};
  TlScatterEstimate *e = NULL;
  g_autofree char *src = g_strdup_printf("%s (scanner)", path);
  if (!read_header(f, path, &h, error)) goto out;
  if (h.transaxial->len != h.n_t || h.rings->len != h.n_r) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: 'transaxial' lists %u indices and 'rings' "
                "%u, but transaxial_samples = %" G_GUINT64_FORMAT " and ring_samples = %"
                G_GUINT64_FORMAT ": expected as many as announced", path, h.transaxial->len,
                h.rings->len, h.n_t, h.n_r);
    goto out;
  }
  /* every count bounded before the products: D(D+1)/2 x bins <= 2^28 needs D < 2^15 */
  guint64 D = h.n_t * h.n_r, nb = MAX(h.bins, 1);
  guint64 pairs = D < (G_GUINT64_CONSTANT(1) << 24) ? D * (D + 1) / 2 : G_MAXUINT64;
  if (D == 0 || pairs > TL_SCATTER_MAX_VALUES / nb) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                " sampled detectors and %" G_GUINT64_FORMAT " TOF bins: expected at least one "
                "detector and at most %" G_GUINT64_FORMAT " values (pairs x bins)", path, h.n_t,
                h.n_r, h.bins, TL_SCATTER_MAX_VALUES);
    goto out;
  }
  if (pairs * nb != h.values) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                " sampled detectors make %" G_GUINT64_FORMAT " pairs x %" G_GUINT64_FORMAT
                " bins = %" G_GUINT64_FORMAT " values, but the header says values = %"
                G_GUINT64_FORMAT, path, h.n_t, h.n_r, pairs, nb, pairs * nb, h.values);
    goto out;
  }
  TlScanner *scanner = tl_scanner_from_text(h.scanner->str, src, h.scanner_line, error);
  if (!scanner) goto out;
  e = g_new0(TlScatterEstimate, 1);
  e->scanner = scanner;
  e->n_t = (guint)h.n_t;
  e->n_r = (guint)h.n_r;
  e->n_bins = (guint)h.bins;
  e->scale = h.scale;
  e->transaxial = (guint *)g_array_free(g_steal_pointer(&h.transaxial), FALSE);
  e->ring = (guint *)g_array_free(g_steal_pointer(&h.rings), FALSE);
  e->description = g_strdup(h.description ? h.description : "");
  struct stat st;
  off_t start = ftello(f);
  if (fstat(fileno(f), &st) != 0 || start < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", path);
    g_clear_pointer(&e, tl_scatter_estimate_free);
    goto out;
  }
  guint64 have = (guint64)st.st_size - (guint64)start, need = h.values * 4;
  if (have != need) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: %s: the header announces %" G_GUINT64_FORMAT
                " values (%" G_GUINT64_FORMAT " bytes) but %" G_GUINT64_FORMAT " bytes follow it",
                path, have < need ? "truncated" : "oversized", h.values, need, have);
    g_clear_pointer(&e, tl_scatter_estimate_free);
    goto out;
  }
  e->values = g_try_new(float, MAX(h.values, 1));
  if (!e->values || fread(e->values, 4, h.values, f) != h.values) {
    g_set_error(error, TL_ERROR, e->values ? TL_ERROR_IO : TL_ERROR_OUT_OF_MEMORY,
                "%s: cannot read %" G_GUINT64_FORMAT " values", path, h.values);
    g_clear_pointer(&e, tl_scatter_estimate_free);
    goto out;
  }
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    for (guint64 i = 0; i < h.values; i++) {
      guint32 w;
      memcpy(&w, &e->values[i], 4);
      w = GUINT32_FROM_LE(w);
      memcpy(&e->values[i], &w, 4);
    }
  if (!tl_scatter_estimate_prepare(e, path, error)) g_clear_pointer(&e, tl_scatter_estimate_free);
out:
  fclose(f);
  g_string_free(h.scanner, TRUE);
  if (h.transaxial) g_array_unref(h.transaxial);
  if (h.rings) g_array_unref(h.rings);
  g_free(h.description);
  return e;
}
