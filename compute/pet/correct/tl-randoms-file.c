/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The randoms file (docs/formats.md "Randoms estimate"): a randoms estimate in the product
 * form r_ij = s_i s_j of tl-randoms.h, one factor per crystal, as text:
 *
 *   tomolab-randoms = 1
 *   scanner = <name>
 *   scanner_sha256 = <sha256 of tl_scanner_key: the crystal table, acceptance and TOF>
 *   crystals = <N>
 *   end_header
 *   <s_0>
 *   ...
 *   <s_{N-1}>          (shortest decimal that reads back to the same double)
 *
 * so `recon --randoms-out` of one run (from its delayeds) or a simulator's truth can be
 * `recon --randoms FILE` of another, and a file made for another scanner is refused. */
#include "tl-randoms.h"
#include "image/tl-file.h"
#include <errno.h>
#include <math.h>
#include <string.h>

#define MAGIC "tomolab-randoms = 1"
/* a header line, then at most ~40 bytes per crystal */
#define MAX_FILE_BYTES ((gsize)TL_SCANNER_MAX_CRYSTALS * 48 + 4096)
/* factors are square roots of expected counts: 1e150 squared still fits a double */
#define MAX_FACTOR 1e150

static char *scanner_hash(const TlScanner *s) {
  g_autofree char *key = tl_scanner_key(s);
  return g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
}

gboolean tl_randoms_save(const TlRandoms *r, const TlScanner *scanner, const char *path,
                         GError **error) {
  if (r->n_crystals != scanner->n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms file '%s': an estimate of %u "
                "crystals for scanner '%s' of %u", path, r->n_crystals, scanner->name,
                scanner->n_crystals);
    return FALSE;
  }
  g_autofree char *hash = scanner_hash(scanner);
  g_autofree char *name = g_strdup(scanner->name ? scanner->name : "");
  g_strdelimit(name, "\r\n", ' ');
  g_autoptr(GString) t = g_string_new(NULL);
  g_string_append_printf(t, MAGIC "\nscanner = %s\nscanner_sha256 = %s\ncrystals = %u\n"
                         "end_header\n", name, hash, r->n_crystals);
  for (guint i = 0; i < r->n_crystals; i++) {
    char buf[32];
    tl_format_double(buf, r->factor[i]);
    g_string_append_printf(t, "%s\n", buf);
  }
  return tl_file_write_text(path, t->str, error);
}

/* The factor lines after the header: exactly n finite values in [0, MAX_FACTOR]. */
static gboolean read_factors(const char *path, char **lines, guint first, guint n, double *out,
                             GError **error) {
  guint k = 0, ln = first;
  for (char **l = lines; *l; l++, ln++) {
    char *s = g_strstrip(*l);
    if (!*s) continue;
    if (k == n) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s' line %u: more factors "
                  "than 'crystals = %u' (expected the file to end)", path, ln, n);
      return FALSE;
    }
    if (!tl_kv_doubles(path, ln, "factor", s, 1, &out[k], error)) {
      g_prefix_error(error, "randoms file, crystal %u: ", k);
      return FALSE;
    }
    if (!(out[k] >= 0 && out[k] <= MAX_FACTOR)) { /* NaN fails this too */
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s' line %u: crystal %u's "
                  "factor %g (expected a finite value in [0, %g])", path, ln, k, out[k],
                  MAX_FACTOR);
      return FALSE;
    }
    k++;
  }
  if (k != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s': %u factors, expected %u "
                "('crystals'): the file is truncated", path, k, n);
    return FALSE;
  }
  return TRUE;
}

TlRandoms *tl_randoms_load(const char *path, const TlScanner *scanner, GError **error) {
  if (!tl_file_check_input(path, "randoms file", error)) return NULL;
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GMappedFile) mf = g_mapped_file_new(path, FALSE, error);
  if (!mf) return NULL;
  len = g_mapped_file_get_length(mf);
  if (len > MAX_FILE_BYTES) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s': %" G_GSIZE_FORMAT
                " bytes (expected at most %" G_GSIZE_FORMAT ": %u crystals)", path, len,
                MAX_FILE_BYTES, TL_SCANNER_MAX_CRYSTALS);
    return NULL;
  }
  text = g_strndup(len ? g_mapped_file_get_contents(mf) : "", len);
  if (!tl_text_check(path, text, len, 1, error)) return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  if (!lines[0] || strcmp(g_strstrip(lines[0]), MAGIC) != 0) {
    g_autofree char *q = tl_text_quote(lines[0] ? lines[0] : "", -1, 40);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s' line 1: '%s' (expected '"
                MAGIC "')", path, q);
    return NULL;
  }
  g_autofree char *name = NULL, *hash = NULL;
  guint64 n = 0;
  gboolean have_n = FALSE, ended = FALSE;
  guint ln = 1;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  char **l = lines + 1;
  for (; *l && !ended; l++) {
    ln++;
    char *key, *value;
    gboolean bad = FALSE;
    if (!tl_kv_split(*l, &key, &value, &bad)) {
      if (bad && strcmp(g_strstrip(*l), "end_header") == 0) ended = TRUE;
      else if (bad) {
        g_autofree char *q = tl_text_quote(*l, -1, 40);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s' line %u: '%s' "
                    "(expected key = value or end_header)", path, ln, q);
        return NULL;
      }
      continue;
    }
    if (!tl_kv_once(keys_seen, path, key, ln, error)) return NULL;
    if (strcmp(key, "scanner") == 0) g_free(name), name = g_strdup(value);
    else if (strcmp(key, "scanner_sha256") == 0) g_free(hash), hash = g_strdup(value);
    else if (strcmp(key, "crystals") == 0) {
      if (!tl_kv_uint(path, ln, key, value, TL_SCANNER_MAX_CRYSTALS, &n, error)) return NULL;
      have_n = TRUE;
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s' line %u: unknown key "
                  "'%s' (expected scanner, scanner_sha256, crystals)", path, ln, key);
      return NULL;
    }
  }
  if (!ended || !have_n || !hash) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "randoms file '%s': the header lacks %s",
                path, !ended ? "end_header" : !have_n ? "crystals" : "scanner_sha256");
    return NULL;
  }
  g_autofree char *want = scanner_hash(scanner);
  if (n != scanner->n_crystals || strcmp(hash, want) != 0) {
    g_autofree char *qn = tl_text_quote(name ? name : "", -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms file '%s' is for scanner '%s' "
                "(%" G_GUINT64_FORMAT " crystals, scanner_sha256 %.12s...), expected scanner "
                "'%s' (%u crystals, %.12s...)", path, qn, n, hash, scanner->name,
                scanner->n_crystals, want);
    return NULL;
  }
  g_autoptr(TlRandoms) r = g_new0(TlRandoms, 1);
  r->n_crystals = (guint)n;
  r->factor = g_new0(double, MAX(n, 1));
  if (!read_factors(path, l, ln + 1, (guint)n, r->factor, error)) return NULL;
  r->total = tl_randoms_expected_total(r, scanner);
  r->source = g_strdup(path);
  return g_steal_pointer(&r);
}
