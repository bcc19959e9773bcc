/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CASToR datafiles and scanner LUTs (tl-format-castor.h, docs/formats.md).
 *
 * Event layout (CASToR 3.1 iDataFilePET::GetEventSpecific; FLTNBDATA = float32, all
 * little-endian here):
 *   list mode: uint32 time (ms), [float attenuation], [float scatter], [float random],
 *              [float normalisation], [float TOF (ps)], uint32 id1, uint32 id2
 *   histogram: uint32 time (ms), [float attenuation], [float random], [float normalisation],
 *              then per TOF bin: float value, [float scatter]; uint32 id1, uint32 id2
 * The TOF measurement dt puts the annihilation at L/2 + c dt / 2 from crystal id1 towards id2
 * (CASToR's projectors: lor_tof_center = length/2 + tof_measurement * c/2). Tomolab's s is
 * positive towards crystal b (docs/formats.md), so with a = id1, b = id2: s = c dt / 2.
 * Scanner LUT (iScannerPET::LoadLUT): per crystal float32 centre x, y, z then orientation x, y,
 * z pointing from the scanner axis outwards; CASToR uses the point centre + (mean DOI - depth/2)
 * orientation, mean DOI < 0 meaning depth/2. */
#include "tl-format-castor.h"
#include "image/tl-file.h"
#include "image/tl-datafile.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define C_MM_PER_PS 0.299792458
#define HEADER_MAX (1u << 20)
/* crystals farther than 100 m from the origin are refused (no scanner is; found by
 * fuzz-castor-scanner: a crystal at 1e20 mm overflowed the default grid's voxel count) */
#define MAX_POSITION_MM 1e5
/* a histogram's counts expanded to events: at most this many */
#define EXPAND_MAX (1ull << 31)

void tl_castor_free(TlCastorData *d) {
  if (!d) return;
  g_free(d->scanner_name);
  g_free(d->isotope);
  g_free(d->time_ms);
  g_free(d->id1);
  g_free(d->id2);
  g_free(d->atn);
  g_free(d->rand);
  g_free(d->norm);
  g_free(d->scat);
  g_free(d->value);
  g_free(d->tof_ps);
  g_free(d);
}

guint tl_castor_event_bytes(const TlCastorData *d) {
  guint n = 12 + 4 * (d->has_atn + d->has_rand + d->has_norm);
  if (d->histogram) return n + 4 * d->tof_bins * (1 + d->has_scat);
  return n + 4 * (d->has_scat + d->has_tof);
}

/* --- "key: value" text (CASToR headers, .hscan) --- */

typedef struct {
  char *key, *value; /* key lower-cased */
  guint line;
} Kv;

static void kv_free(gpointer p) {
  Kv *kv = p;
  g_free(kv->key);
  g_free(kv->value);
  g_free(kv);
}

/* Lines "key: value  # comment"; blank and '#' lines skipped; a key at most once. */
static GPtrArray *read_kv(const char *path, GError **error) {
  if (!tl_file_check_input(path, "CASToR header", error)) return NULL;
  GStatBuf st;
  if (g_stat(path, &st) == 0 && (guint64)st.st_size > HEADER_MAX) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: a header of %" G_GUINT64_FORMAT
                " bytes (expected at most %u)", path, (guint64)st.st_size, HEADER_MAX);
    return NULL;
  }
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, error)) return NULL;
  if (!tl_text_check(path, text, len, 1, error)) return NULL;
  GPtrArray *kvs = g_ptr_array_new_with_free_func(kv_free);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  for (guint i = 0; lines[i]; i++) {
    char *hash = strchr(lines[i], '#');
    if (hash) *hash = 0;
    char *l = g_strstrip(lines[i]);
    if (!*l) continue;
    if (strchr(l, '\r')) { /* a lone CR inside a line: no writer could give it back */
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: a carriage return inside the line",
                  path, i + 1);
      g_ptr_array_free(kvs, TRUE);
      return NULL;
    }
    char *colon = strchr(l, ':');
    if (!colon) {
      g_autofree char *q = tl_text_quote(l, -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key: value', found '%s'",
                  path, i + 1, q);
      g_ptr_array_free(kvs, TRUE);
      return NULL;
    }
    *colon = 0;
    Kv *kv = g_new0(Kv, 1);
    kv->key = g_ascii_strdown(g_strstrip(l), -1);
    kv->value = g_strdup(g_strstrip(colon + 1));
    kv->line = i + 1;
    if (!tl_kv_once(keys_seen, path, kv->key, kv->line, error)) {
      kv_free(kv);
      g_ptr_array_free(kvs, TRUE);
      return NULL;
    }
    g_ptr_array_add(kvs, kv);
  }
  return kvs;
}

static const Kv *kv_find(GPtrArray *kvs, const char *key) {
  for (guint j = 0; j < kvs->len; j++)
    if (strcmp(((Kv *)kvs->pdata[j])->key, key) == 0) return kvs->pdata[j];
  return NULL;
}

static gboolean kv_required(const char *path, GPtrArray *kvs, const char *key, const Kv **out,
                            GError **error) {
  *out = kv_find(kvs, key);
  if (!*out) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: the header lacks the key '%s'", path, key);
    return FALSE;
  }
  return TRUE;
}

G_GNUC_PRINTF(4, 5)
static gboolean kv_bad(GError **error, const char *path, const Kv *kv, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *q = tl_text_quote(kv->value, -1, 60);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': value '%s' %s", path, kv->line,
              kv->key, q, m);
  return FALSE;
}

/* An optional number in [lo, hi] (finite); absent: *out = dflt. */
static gboolean kv_number(const char *path, GPtrArray *kvs, const char *key, double lo, double hi,
                          gboolean lo_open, double dflt, double *out, GError **error) {
  const Kv *kv = kv_find(kvs, key);
  if (!kv) {
    *out = dflt;
    return TRUE;
  }
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(kv->value, &end);
  if (end == kv->value || *end || errno || !isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
    char range[48] = "";
    if (hi < G_MAXDOUBLE) g_snprintf(range, sizeof range, " and <= %g", hi);
    return kv_bad(error, path, kv, "(expected a finite number %s %g%s)", lo_open ? ">" : ">=", lo,
                  range);
  }
  *out = v;
  return TRUE;
}

static gboolean kv_count(const char *path, GPtrArray *kvs, const char *key, guint64 max,
                         guint64 dflt, guint64 *out, GError **error) {
  const Kv *kv = kv_find(kvs, key);
  if (!kv) {
    *out = dflt;
    return TRUE;
  }
  return tl_kv_uint(path, kv->line, kv->key, kv->value, max, out, error);
}

static gboolean kv_flag(const char *path, GPtrArray *kvs, const char *key, gboolean *out,
                        GError **error) {
  guint64 v;
  if (!kv_count(path, kvs, key, 1, 0, &v, error)) return FALSE;
  *out = v != 0;
  return TRUE;
}

/* The file a header names: its name part, next to the header, through the one data-file
 * resolver (image/tl-datafile.h: no symbolic link out of the folder). NULL: no usable name
 * (*error set only when the resolver refused it). */
static char *sibling(const char *header, const char *key, const char *value, GError **error) {
  const char *s1 = strrchr(value, '/'), *s2 = strrchr(value, '\\');
  const char *name = s1 && (!s2 || s1 > s2) ? s1 + 1 : s2 ? s2 + 1 : value;
  if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return NULL;
  return tl_datafile_resolve(header, key, name, error);
}

/* --- datafiles --- */

char *tl_castor_data_path(const char *cdh) {
  if (!g_file_test(cdh, G_FILE_TEST_IS_REGULAR)) return NULL;
  g_autoptr(GPtrArray) kvs = read_kv(cdh, NULL);
  const Kv *kv;
  if (!kvs || !kv_required(cdh, kvs, "data filename", &kv, NULL)) return NULL;
  return sibling(cdh, "data filename", kv->value, NULL);
}

static gboolean read_cdh(const char *path, TlCastorData *d, char **cdf, GError **error) {
  g_autoptr(GPtrArray) kvs = read_kv(path, error);
  if (!kvs) return FALSE;
  const Kv *kv;
  if (!kv_required(path, kvs, "data filename", &kv, error)) return FALSE;
  GError *e = NULL;
  *cdf = sibling(path, "data filename", kv->value, &e);
  if (e) return g_propagate_error(error, e), FALSE;
  if (!*cdf) return kv_bad(error, path, kv, "(expected a file name)");
  if (!kv_required(path, kvs, "data type", &kv, error)) return FALSE;
  if (g_ascii_strcasecmp(kv->value, "PET") != 0) return kv_bad(error, path, kv, "(expected PET)");
  if (!kv_required(path, kvs, "data mode", &kv, error)) return FALSE;
  if (g_ascii_strcasecmp(kv->value, "list-mode") == 0 || g_ascii_strcasecmp(kv->value, "listmode") == 0)
    d->histogram = FALSE;
  else if (g_ascii_strcasecmp(kv->value, "histogram") == 0)
    d->histogram = TRUE;
  else
    return kv_bad(error, path, kv, "(expected list-mode or histogram)");
  if (!kv_required(path, kvs, "scanner name", &kv, error)) return FALSE;
  /* it names a file (<name>.hscan / .geom) and is written back as a header value */
  if (!*kv->value || strpbrk(kv->value, ":/\\"))
    return kv_bad(error, path, kv, "(expected a scanner name without ':', '/' or '\\')");
  d->scanner_name = g_strdup(kv->value);
  if (!kv_required(path, kvs, "number of events", &kv, error)) return FALSE;
  if (!tl_kv_uint(path, kv->line, kv->key, kv->value, G_MAXINT64, &d->n_events, error))
    return FALSE;
  if ((kv = kv_find(kvs, "isotope"))) d->isotope = g_strdup(kv->value);
  guint64 lines, kind;
  if (!kv_count(path, kvs, "maximum number of lines per event", G_MAXUINT16, 1, &lines, error) ||
      !kv_count(path, kvs, "coincidence kind flag", 1, 0, &kind, error))
    return FALSE;
  if (lines != 1)
    return kv_bad(error, path, kv_find(kvs, "maximum number of lines per event"),
                  "(only 1 line per event is read here)");
  if (kind) return kv_bad(error, path, kv_find(kvs, "coincidence kind flag"), "(only 0 is read here)");
  if ((kv = kv_find(kvs, "poi information flag")) && strcmp(kv->value, "0") != 0)
    return kv_bad(error, path, kv, "(points of interaction are not read here: expected 0)");
  if (!kv_number(path, kvs, "start time (s)", 0, G_MAXDOUBLE, FALSE, 0, &d->start_s, error) ||
      !kv_number(path, kvs, "duration (s)", 0, G_MAXDOUBLE, FALSE, 0, &d->duration_s, error) ||
      !kv_number(path, kvs, "calibration factor", 0, G_MAXDOUBLE, TRUE, 1, &d->calibration, error) ||
      !kv_number(path, kvs, "maximum axial difference mm", -G_MAXDOUBLE, G_MAXDOUBLE, FALSE, -1,
                 &d->max_axial_diff_mm, error) ||
      !kv_flag(path, kvs, "attenuation correction flag", &d->has_atn, error) ||
      !kv_flag(path, kvs, "normalization correction flag", &d->has_norm, error) ||
      !kv_flag(path, kvs, "scatter correction flag", &d->has_scat, error) ||
      !kv_flag(path, kvs, "random correction flag", &d->has_rand, error) ||
      !kv_flag(path, kvs, "tof information flag", &d->has_tof, error))
    return FALSE;
  d->tof_bins = 1;
  if (d->has_tof) {
    if (!kv_required(path, kvs, "tof resolution (ps)", &kv, error) ||
        !kv_number(path, kvs, "tof resolution (ps)", 0, 1e6, TRUE, 0, &d->tof_fwhm_ps, error))
      return FALSE;
    if (d->histogram) {
      guint64 bins;
      if (!kv_required(path, kvs, "histo tof number of bins", &kv, error) ||
          !kv_count(path, kvs, "histo tof number of bins", 4096, 1, &bins, error) ||
          !kv_required(path, kvs, "histo tof bin size (ps)", &kv, error) ||
          !kv_number(path, kvs, "histo tof bin size (ps)", 0, 1e6, TRUE, 0, &d->tof_bin_ps, error))
        return FALSE;
      if (bins < 2)
        return kv_bad(error, path, kv_find(kvs, "histo tof number of bins"),
                      "(expected at least 2 with the TOF flag)");
      d->tof_bins = (guint)bins;
    } else {
      if (!kv_required(path, kvs, "list tof measurement range (ps)", &kv, error) ||
          !kv_number(path, kvs, "list tof measurement range (ps)", 0, 1e6, TRUE, 0, &d->tof_range_ps,
                     error) ||
          !kv_number(path, kvs, "list tof quantization bin size (ps)", 0, 1e6, TRUE, 0,
                     &d->tof_quant_ps, error))
        return FALSE;
    }
  }
  return TRUE;
}

static gboolean check_float(const char *cdf, guint64 i, const char *field, float v,
                            GError **error) {
  if (isfinite(v)) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: event %" G_GUINT64_FORMAT ": %s is %g "
              "(expected a finite number)", cdf, i, field, (double)v);
  return FALSE;
}

static float get_f(const guint8 **p) {
  guint32 u;
  memcpy(&u, *p, 4);
  u = GUINT32_FROM_LE(u);
  float f;
  memcpy(&f, &u, 4);
  *p += 4;
  return f;
}

static guint32 get_u(const guint8 **p) {
  guint32 u;
  memcpy(&u, *p, 4);
  *p += 4;
  return GUINT32_FROM_LE(u);
}

TlCastorData *tl_castor_load(const char *cdh, GError **error) {
  g_autoptr(TlCastorData) d = g_new0(TlCastorData, 1);
  g_autofree char *cdf = NULL;
  if (!read_cdh(cdh, d, &cdf, error)) return NULL;
  if (!tl_file_check_input(cdf, "CASToR data file", error)) return NULL;
  GStatBuf st;
  if (g_stat(cdf, &st) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot stat '%s'", cdf);
    return NULL;
  }
  guint64 size = (guint64)st.st_size, eb = tl_castor_event_bytes(d);
  /* the count against the file before anything is allocated */
  if (d->n_events > size / eb || d->n_events * eb != size) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key 'number of events': value %" G_GUINT64_FORMAT " needs %s bytes of %"
                G_GUINT64_FORMAT "-byte events but '%s' holds %" G_GUINT64_FORMAT " bytes (%s)",
                cdh, d->n_events, d->n_events > size / eb ? "more" : "a different number of", eb,
                cdf, size, d->n_events * eb > size || d->n_events > size / eb ? "truncated" : "oversized");
    return NULL;
  }
  guint64 n = d->n_events, nb = d->tof_bins;
  d->time_ms = g_try_new(guint32, MAX(n, 1));
  d->id1 = g_try_new(guint32, MAX(n, 1));
  d->id2 = g_try_new(guint32, MAX(n, 1));
  if (d->has_atn) d->atn = g_try_new(float, MAX(n, 1));
  if (d->has_rand) d->rand = g_try_new(float, MAX(n, 1));
  if (d->has_norm) d->norm = g_try_new(float, MAX(n, 1));
  if (d->has_scat) d->scat = g_try_new(float, MAX(n * (d->histogram ? nb : 1), 1));
  if (d->histogram) d->value = g_try_new(float, MAX(n * nb, 1));
  else if (d->has_tof) d->tof_ps = g_try_new(float, MAX(n, 1));
  if (!d->time_ms || !d->id1 || !d->id2 || (d->has_atn && !d->atn) || (d->has_rand && !d->rand) ||
      (d->has_norm && !d->norm) || (d->has_scat && !d->scat) || (d->histogram && !d->value) ||
      (!d->histogram && d->has_tof && !d->tof_ps)) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%s: no memory for %" G_GUINT64_FORMAT
                " events", cdf, n);
    return NULL;
  }
  FILE *f = g_fopen(cdf, "rb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open '%s': %s", cdf, g_strerror(e));
    return NULL;
  }
  guint8 *buf = g_malloc(eb * 4096);
  gboolean ok = TRUE;
  for (guint64 i0 = 0; ok && i0 < n; i0 += 4096) {
    guint64 m = MIN(4096, n - i0);
    if (fread(buf, eb, m, f) != m) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: read error at event %" G_GUINT64_FORMAT, cdf, i0);
      ok = FALSE;
      break;
    }
    const guint8 *p = buf;
    for (guint64 i = i0; ok && i < i0 + m; i++) {
      d->time_ms[i] = get_u(&p);
      if (d->has_atn) ok = ok && check_float(cdf, i, "attenuation", d->atn[i] = get_f(&p), error);
      if (!d->histogram) {
        if (d->has_scat) ok = ok && check_float(cdf, i, "scatter", d->scat[i] = get_f(&p), error);
        if (d->has_rand) ok = ok && check_float(cdf, i, "random", d->rand[i] = get_f(&p), error);
        if (d->has_norm) ok = ok && check_float(cdf, i, "normalisation", d->norm[i] = get_f(&p), error);
        if (d->has_tof) ok = ok && check_float(cdf, i, "TOF", d->tof_ps[i] = get_f(&p), error);
      } else {
        if (d->has_rand) ok = ok && check_float(cdf, i, "random", d->rand[i] = get_f(&p), error);
        if (d->has_norm) ok = ok && check_float(cdf, i, "normalisation", d->norm[i] = get_f(&p), error);
        for (guint64 t = 0; t < nb; t++) {
          ok = ok && check_float(cdf, i, "value", d->value[i * nb + t] = get_f(&p), error);
          if (d->has_scat)
            ok = ok && check_float(cdf, i, "scatter", d->scat[i * nb + t] = get_f(&p), error);
        }
      }
      d->id1[i] = get_u(&p);
      d->id2[i] = get_u(&p);
    }
  }
  g_free(buf);
  fclose(f);
  return ok ? g_steal_pointer(&d) : NULL;
}

static void put_u(GByteArray *b, guint32 u) {
  u = GUINT32_TO_LE(u);
  g_byte_array_append(b, (const guint8 *)&u, 4);
}

static void put_f(GByteArray *b, float f) {
  guint32 u;
  memcpy(&u, &f, 4);
  put_u(b, u);
}

static void put_num(GString *s, const char *key, double v) {
  char buf[32];
  tl_format_double(buf, v);
  g_string_append_printf(s, "%s: %s\n", key, buf);
}

/* The header of `d` naming `data_name`. */
static char *castor_header_text(gconstpointer data, const char *data_name) {
  const TlCastorData *d = data;
  GString *h = g_string_new(NULL);
  g_string_append_printf(h, "Data filename: %s\nNumber of events: %" G_GUINT64_FORMAT
                         "\nData mode: %s\nData type: PET\nScanner name: %s\n", data_name,
                         d->n_events, d->histogram ? "histogram" : "list-mode", d->scanner_name);
  put_num(h, "Start time (s)", d->start_s);
  put_num(h, "Duration (s)", d->duration_s);
  put_num(h, "Calibration factor", d->calibration);
  if (d->isotope && *d->isotope && !strpbrk(d->isotope, "\r\n#"))
    g_string_append_printf(h, "Isotope: %s\n", d->isotope);
  if (d->max_axial_diff_mm >= 0) put_num(h, "Maximum axial difference mm", d->max_axial_diff_mm);
  g_string_append_printf(h, "Attenuation correction flag: %d\nNormalization correction flag: %d\n"
                         "Scatter correction flag: %d\nRandom correction flag: %d\n"
                         "TOF information flag: %d\n", d->has_atn, d->has_norm, d->has_scat,
                         d->has_rand, d->has_tof);
  if (d->has_tof) {
    put_num(h, "TOF resolution (ps)", d->tof_fwhm_ps);
    if (d->histogram) {
      g_string_append_printf(h, "Histo TOF number of bins: %u\n", d->tof_bins);
      put_num(h, "Histo TOF bin size (ps)", d->tof_bin_ps);
    } else {
      put_num(h, "List TOF measurement range (ps)", d->tof_range_ps);
      if (d->tof_quant_ps > 0) put_num(h, "List TOF quantization bin size (ps)", d->tof_quant_ps);
    }
  }
  return g_string_free(h, FALSE);
}

gboolean tl_castor_save(const TlCastorData *d, const char *cdh, GError **error) {
  if (!g_str_has_suffix(cdh, ".cdh")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': a CASToR header ends in .cdh", cdh);
    return FALSE;
  }
  if (!d->scanner_name || !*d->scanner_name || strpbrk(d->scanner_name, "\r\n#:/\\")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': scanner name '%s' (expected one "
                "line without '#', ':', '/' or '\\')", cdh, d->scanner_name ? d->scanner_name : "");
    return FALSE;
  }
  /* X.cdf, through X~1.cdf: the header's rename is the commit (image/tl-file.h, "Two-file
   * outputs") */
  g_autofree char *named_now = tl_castor_data_path(cdh);
  g_autofree char *cdf = tl_file_pair_next_data(cdh, ".cdf", named_now);
  char *tmp = NULL;
  FILE *f = tl_file_begin(cdf, &tmp, error);
  if (!f) return FALSE;
  guint64 nb = d->histogram ? d->tof_bins : 1;
  GByteArray *b = g_byte_array_new();
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < d->n_events; i++) {
    put_u(b, d->time_ms[i]);
    if (d->has_atn) put_f(b, d->atn[i]);
    if (!d->histogram) {
      if (d->has_scat) put_f(b, d->scat[i]);
      if (d->has_rand) put_f(b, d->rand[i]);
      if (d->has_norm) put_f(b, d->norm[i]);
      if (d->has_tof) put_f(b, d->tof_ps[i]);
    } else {
      if (d->has_rand) put_f(b, d->rand[i]);
      if (d->has_norm) put_f(b, d->norm[i]);
      for (guint64 t = 0; t < nb; t++) {
        put_f(b, d->value[i * nb + t]);
        if (d->has_scat) put_f(b, d->scat[i * nb + t]);
      }
    }
    put_u(b, d->id1[i]);
    put_u(b, d->id2[i]);
    if (b->len >= (1u << 20) || i + 1 == d->n_events) {
      ok = fwrite(b->data, 1, b->len, f) == b->len;
      g_byte_array_set_size(b, 0);
    }
  }
  g_byte_array_free(b, TRUE);
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", cdf, g_strerror(e));
    return FALSE;
  }
  if (!tl_file_commit(f, &tmp, cdf, error)) return FALSE;
  return tl_file_pair_commit(cdh, ".cdf", cdf, castor_header_text, d, error);
}

/* --- to and from Tomolab list mode --- */

TlListmode *tl_castor_to_listmode(const TlCastorData *d, const TlScanner *scanner,
                                  const char *source, GError **error) {
  const char *src = source ? source : "CASToR data";
  if (d->histogram && d->tof_bins > 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: TOF histogram data (%u bins) has no Tomolab "
                "list-mode equivalent (read it with tl_castor_load)", src, d->tof_bins);
    return NULL;
  }
  guint64 total = d->n_events;
  if (d->histogram) { /* counts become that many events */
    total = 0;
    for (guint64 i = 0; i < d->n_events; i++) {
      float v = d->value[i];
      if (!(v >= 0) || v != floorf(v) || v > (float)EXPAND_MAX || total + (guint64)v > EXPAND_MAX) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: histogram event %" G_GUINT64_FORMAT
                    ": value %g is not a count (expected a whole number >= 0, %" G_GUINT64_FORMAT
                    " events at most in all)", src, i, (double)v, (guint64)EXPAND_MAX);
        return NULL;
      }
      total += (guint64)v;
    }
  }
  double w_ps = 0;
  if (d->has_tof && !d->histogram) {
    /* TOF bins: the header's quantisation step, else one sigma of the timing resolution; odd
     * count covering the measurement range */
    w_ps = d->tof_quant_ps > 0 ? d->tof_quant_ps : d->tof_fwhm_ps / (2.0 * sqrt(2.0 * G_LN2));
    if (!(0.5 * C_MM_PER_PS * w_ps >= 1e-3) || !(d->tof_fwhm_ps >= 1e-3)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: TOF bins of %g ps and a resolution of %g ps "
                  "(expected a bin of at least 1 um along the line and a resolution >= 0.001 ps)",
                  src, w_ps, d->tof_fwhm_ps);
      return NULL;
    }
  }
  TlScanner *s = tl_scanner_copy(scanner);
  if (d->has_tof && !d->histogram) {
    double half = ceil(0.5 * d->tof_range_ps / w_ps - 0.5);
    if (half > 4095) half = 4095;
    s->tof_bins = 2 * (guint)half + 1;
    s->tof_bin_mm = (float)(0.5 * C_MM_PER_PS * w_ps);
    s->tof_fwhm_ps = (float)d->tof_fwhm_ps;
  } else {
    s->tof_bins = 0;
    s->tof_bin_mm = s->tof_fwhm_ps = 0;
  }
  TlListmode *lm = g_new0(TlListmode, 1);
  lm->scanner = s;
  lm->has_tof = s->tof_bins > 0;
  lm->n_events = total;
  lm->events = g_try_new0(TlEvent, MAX(total, 1));
  lm->start_s = d->start_s;
  lm->duration_s = d->duration_s;
  lm->description = g_strdup_printf("CASToR %s data, scanner %s", d->histogram ? "histogram" : "list-mode",
                                    d->scanner_name);
  if (!lm->events) {
    tl_listmode_free(lm);
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%s: no memory for %" G_GUINT64_FORMAT
                " events", src, total);
    return NULL;
  }
  gint32 hb = (gint32)s->tof_bins / 2;
  for (guint64 i = 0, k = 0; i < d->n_events; i++) {
    guint64 rep = d->histogram ? (guint64)d->value[i] : 1;
    gint32 bin = 0;
    if (lm->has_tof) {
      double sm = 0.5 * C_MM_PER_PS * d->tof_ps[i];
      double bb = round(sm / s->tof_bin_mm);
      /* a measurement past the range: the outer bin (the range is CASToR's coincidence window) */
      bin = (gint32)CLAMP(bb, -hb, hb);
    }
    for (guint64 r = 0; r < rep; r++, k++) lm->events[k] = (TlEvent){d->id1[i], d->id2[i], bin};
  }
  if (!tl_listmode_validate(lm, src, error)) g_clear_pointer(&lm, tl_listmode_free);
  return lm;
}

TlCastorData *tl_castor_from_listmode(const TlListmode *lm, const char *scanner_name) {
  TlCastorData *d = g_new0(TlCastorData, 1);
  d->scanner_name = g_strdup(scanner_name);
  d->n_events = lm->n_events;
  d->start_s = lm->start_s;
  d->duration_s = lm->duration_s;
  d->calibration = 1;
  d->max_axial_diff_mm = -1;
  d->tof_bins = 1;
  guint64 n = MAX(lm->n_events, 1);
  d->time_ms = g_new0(guint32, n);
  d->id1 = g_new(guint32, n);
  d->id2 = g_new(guint32, n);
  const TlScanner *s = lm->scanner;
  if (lm->has_tof && s->tof_bins) {
    double w_ps = 2.0 * s->tof_bin_mm / C_MM_PER_PS;
    d->has_tof = TRUE;
    d->tof_fwhm_ps = s->tof_fwhm_ps;
    d->tof_quant_ps = w_ps;
    d->tof_range_ps = s->tof_bins * w_ps;
    d->tof_ps = g_new(float, n);
    for (guint64 i = 0; i < lm->n_events; i++) d->tof_ps[i] = (float)(lm->events[i].tof_bin * w_ps);
  }
  for (guint64 i = 0; i < lm->n_events; i++) {
    d->id1[i] = lm->events[i].a;
    d->id2[i] = lm->events[i].b;
  }
  return d;
}

/* --- scanners: .hscan + .lut --- */

static char *lut_path(const char *hscan) {
  const char *dot = strrchr(hscan, '.'), *slash = strrchr(hscan, '/');
  gsize n = dot && (!slash || dot > slash) ? (gsize)(dot - hscan) : strlen(hscan);
  g_autofree char *stem = g_strndup(hscan, n);
  return g_strconcat(stem, ".lut", NULL);
}

/* The LUT of a scanner header: CASToR's is always X.lut beside X.hscan; Tomolab's writer names
 * it too (`tomolab lut file`, a key CASToR does not read) so that its save can commit by the
 * header's rename like the other pairs (X.lut or X~1.lut, image/tl-file.h). NULL + error when
 * the named file is refused by the data-file resolver. */
static char *hscan_lut(const char *hscan, GPtrArray *kvs, GError **error) {
  const Kv *kv = kv_find(kvs, "tomolab lut file");
  if (!kv) return lut_path(hscan);
  GError *e = NULL;
  char *lut = sibling(hscan, kv->key, kv->value, &e);
  if (e) return g_propagate_error(error, e), NULL;
  if (!lut) kv_bad(error, hscan, kv, "(expected a file name)");
  return lut;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* index of v among the sorted distinct values (within tol) */
static guint rank_of(const double *sorted, guint n, double v) {
  guint lo = 0, hi = n;
  while (lo + 1 < hi) {
    guint mid = (lo + hi) / 2;
    if (sorted[mid] <= v + 1e-9) lo = mid; else hi = mid;
  }
  return lo;
}

static guint distinct(double *v, guint n, double tol) {
  qsort(v, n, sizeof *v, cmp_double);
  guint m = 0;
  for (guint i = 0; i < n; i++)
    if (m == 0 || v[i] - v[m - 1] > tol) v[m++] = v[i];
  return m;
}

TlScanner *tl_castor_scanner_load(const char *hscan, GError **error) {
  g_autoptr(GPtrArray) kvs = read_kv(hscan, error);
  if (!kvs) return NULL;
  const Kv *kv;
  guint64 n, layers;
  double depth, trans, axial, mdoi;
  if (!kv_required(hscan, kvs, "modality", &kv, error)) return NULL;
  if (strcmp(kv->value, "PET") != 0) {
    kv_bad(error, hscan, kv, "(expected PET)");
    return NULL;
  }
  if (!kv_required(hscan, kvs, "number of elements", &kv, error) ||
      !kv_count(hscan, kvs, "number of elements", TL_SCANNER_MAX_CRYSTALS, 0, &n, error) ||
      !kv_required(hscan, kvs, "number of layers", &kv, error) ||
      !kv_count(hscan, kvs, "number of layers", 1, 0, &layers, error) ||
      !kv_required(hscan, kvs, "crystals size depth", &kv, error) ||
      !kv_number(hscan, kvs, "crystals size depth", 0, 1e4, TRUE, 0, &depth, error) ||
      !kv_number(hscan, kvs, "crystals size transaxial", 0, 1e4, TRUE, 0, &trans, error) ||
      !kv_number(hscan, kvs, "crystals size axial", 0, 1e4, TRUE, 0, &axial, error) ||
      !kv_number(hscan, kvs, "mean depth of interaction", -G_MAXDOUBLE, 1e4, FALSE, -1, &mdoi, error))
    return NULL;
  if (layers != 1) {
    kv_bad(error, hscan, kv_find(kvs, "number of layers"), "(only 1 layer is read here)");
    return NULL;
  }
  if (n < 2) {
    kv_bad(error, hscan, kv_find(kvs, "number of elements"), "(expected at least 2)");
    return NULL;
  }
  if ((kv = kv_find(kvs, "number of crystals in layer")) ||
      (kv = kv_find(kvs, "number of crystals in layer(s)"))) {
    guint64 nl;
    if (!tl_kv_uint(hscan, kv->line, kv->key, kv->value, TL_SCANNER_MAX_CRYSTALS, &nl, error))
      return NULL;
    if (nl != n) {
      kv_bad(error, hscan, kv, "(expected %" G_GUINT64_FORMAT ", the number of elements)", n);
      return NULL;
    }
  }
  if (trans <= 0) trans = axial > 0 ? axial : depth;
  if (axial <= 0) axial = trans;
  g_autofree char *lut = hscan_lut(hscan, kvs, error);
  if (!lut || !tl_file_check_input(lut, "CASToR scanner LUT", error)) return NULL;
  GStatBuf st;
  if (g_stat(lut, &st) != 0 || (guint64)st.st_size != n * 24) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key 'number of elements': value %" G_GUINT64_FORMAT
                " needs %" G_GUINT64_FORMAT " bytes of LUT but '%s' holds %" G_GUINT64_FORMAT,
                hscan, n, n * 24, lut, (guint64)st.st_size);
    return NULL;
  }
  g_autofree char *raw = NULL;
  gsize len = 0;
  if (!g_file_get_contents(lut, &raw, &len, error)) return NULL;
  double dshift = (mdoi < 0 ? depth / 2 : mdoi) - depth / 2; /* along the outward orientation */
  TlScanner *s = g_new0(TlScanner, 1);
  g_autofree char *base = g_path_get_basename(hscan);
  s->name = g_strndup(base, strcspn(base, "."));
  if ((kv = kv_find(kvs, "scanner name")) && *kv->value) g_free(s->name), s->name = g_strdup(kv->value);
  s->kind = TL_SCANNER_RING;
  s->n_crystals = (guint)n;
  s->crystals = g_new0(TlCrystal, n);
  s->crystal_size[0] = (float)trans;
  s->crystal_size[1] = (float)axial;
  s->crystal_size[2] = (float)depth;
  g_autofree double *zs = g_new(double, n), *ang = g_new(double, n);
  const guint8 *p = (const guint8 *)raw;
  for (guint64 i = 0; i < n; i++) {
    float v[6];
    for (int j = 0; j < 6; j++) v[j] = get_f(&p);
    double on = sqrt((double)v[3] * v[3] + (double)v[4] * v[4] + (double)v[5] * v[5]);
    for (int j = 0; j < 6; j++)
      if (!isfinite(v[j]) || !(on > 0.5 && on < 2) || fabsf(v[j]) > MAX_POSITION_MM) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: crystal %" G_GUINT64_FORMAT ": value %g "
                    "(expected finite positions within %g mm of the origin and a unit orientation)",
                    lut, i, (double)v[j], MAX_POSITION_MM);
        tl_scanner_free(s);
        return NULL;
      }
    TlCrystal *k = &s->crystals[i];
    for (int j = 0; j < 3; j++) {
      k->centre[j] = (float)(v[j] + dshift * v[3 + j] / on);
      k->normal[j] = (float)(-v[3 + j] / on);
    }
    zs[i] = k->centre[2];
    ang[i] = atan2(k->centre[1], k->centre[0]);
  }
  /* rings: the distinct axial positions; groups: the distinct angles (crystals facing each
   * other at one angle never pair) */
  g_autofree double *zu = g_memdup2(zs, sizeof(double) * n), *au = g_memdup2(ang, sizeof(double) * n);
  guint nz = distinct(zu, (guint)n, 1e-3), na = distinct(au, (guint)n, 1e-6);
  (void)na;
  for (guint64 i = 0; i < n; i++) {
    s->crystals[i].ring = rank_of(zu, nz, zs[i] + 1e-3 / 2);
    s->crystals[i].group = rank_of(au, na, ang[i] + 1e-6 / 2);
  }
  s->n_rings = nz;
  s->max_ring_difference = nz - 1;
  guint per = (guint)(n / nz);
  gboolean major = per * (guint64)nz == n;
  for (guint64 i = 0; major && i < n; i++) major = s->crystals[i].ring == i / per;
  s->crystals_per_ring = major ? per : 0;
  if (!tl_scanner_validate(s, error)) g_clear_pointer(&s, tl_scanner_free);
  return s;
}

/* The header text of a scanner save naming its LUT (tl_file_pair_commit's TlFilePairText). */
static char *hscan_text(gconstpointer body, const char *lut_name) {
  return g_strdup_printf("%stomolab lut file: %s\n", (const char *)body, lut_name);
}

/* The LUT the current header names; NULL without a readable header. */
static char *hscan_lut_now(const char *hscan) {
  if (!g_file_test(hscan, G_FILE_TEST_IS_REGULAR)) return NULL;
  g_autoptr(GPtrArray) kvs = read_kv(hscan, NULL);
  return kvs ? hscan_lut(hscan, kvs, NULL) : NULL;
}

gboolean tl_castor_scanner_save(const TlScanner *s, const char *hscan, GError **error) {
  if (!tl_scanner_validate(s, error)) return FALSE;
  /* X.lut, through X~1.lut: the header's rename is the commit (image/tl-file.h, "Two-file
   * outputs"); with one fixed LUT name a kill between the two renames left the old header over
   * the new LUT, read with the old crystal sizes */
  g_autofree char *named_now = hscan_lut_now(hscan);
  g_autofree char *lut = tl_file_pair_next_data(hscan, ".lut", named_now);
  g_autofree char *base = g_path_get_basename(hscan);
  g_autofree char *name = g_strndup(base, strcspn(base, "."));
  double depth = s->crystal_size[2], rmax = 0, zlo = G_MAXDOUBLE, zhi = -G_MAXDOUBLE;
  char *tmp = NULL;
  FILE *f = tl_file_begin(lut, &tmp, error);
  if (!f) return FALSE;
  GByteArray *b = g_byte_array_new();
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    /* CASToR: the crystal's middle and its outward axis; "mean depth of interaction: 0" below
     * puts CASToR's line ends on the inner face, where Tomolab's are */
    for (int j = 0; j < 3; j++) put_f(b, (float)(k->centre[j] - 0.5 * depth * k->normal[j]));
    for (int j = 0; j < 3; j++) put_f(b, -k->normal[j]);
    rmax = MAX(rmax, hypot(k->centre[0], k->centre[1]));
    zlo = MIN(zlo, k->centre[2]);
    zhi = MAX(zhi, k->centre[2]);
  }
  gboolean ok = fwrite(b->data, 1, b->len, f) == b->len;
  g_byte_array_free(b, TRUE);
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", lut, g_strerror(e));
    return FALSE;
  }
  if (!tl_file_commit(f, &tmp, lut, error)) return FALSE;
  /* the default reconstruction grid CASToR wants: voxels of half a crystal over the span */
  double vox = 0.5 * MIN(s->crystal_size[0], s->crystal_size[1]);
  double fov_t = MIN(2 * rmax, 2 * MAX_POSITION_MM), fov_a = MIN(zhi - zlo + s->crystal_size[1], 2 * MAX_POSITION_MM);
  guint vt = (guint)CLAMP(ceil(fov_t / vox), 1, 1024), va = (guint)CLAMP(ceil(fov_a / vox), 1, 1024);
  GString *h = g_string_new(NULL);
  g_string_append_printf(h, "# CASToR scanner LUT header written by Tomolab from scanner '%s'\n"
                         "modality: PET\nscanner name: %s\nnumber of elements: %u\n"
                         "number of layers: 1\nnumber of crystals in layer: %u\n",
                         s->name ? s->name : "", name, s->n_crystals, s->n_crystals);
  put_num(h, "crystals size depth", depth);
  put_num(h, "crystals size transaxial", s->crystal_size[0]);
  put_num(h, "crystals size axial", s->crystal_size[1]);
  put_num(h, "scanner radius", rmax);
  g_string_append_printf(h, "voxels number transaxial: %u\nvoxels number axial: %u\n", vt, va);
  put_num(h, "field of view transaxial", fov_t);
  put_num(h, "field of view axial", fov_a);
  g_string_append(h, "min angle difference: 0\nmean depth of interaction: 0\n"
                     "description: written by Tomolab (line ends on the crystals' inner faces)\n");
  ok = tl_file_pair_commit(hscan, ".lut", lut, hscan_text, h->str, error);
  g_string_free(h, TRUE);
  return ok;
}

/* --- scanners: generic .geom descriptions (iScannerPET::ComputeLUT, one layer) ---
 * Crystals of the first angular rsector, its inner face's normal along +y: module i, submodule j
 * and crystal k are numbered transaxial first; crystal k's middle is at
 *   x = x0 + dir ((k mod ntc)(ct + gct) + ct/2),  y = radius + depth/2,
 *   z = z0 + floor(k / ntc)(ca + gca) + ca/2
 * with x0 = -dir size_trs_rsector / 2 moved by dir (i mod ntm)(size_trs_mod + gtm) and
 * dir (j mod nts)(size_trs_submod + gts) (z0 likewise along z, rsectors axially centred), dir = 1
 * for CW, -1 for CCW. Rsector rsa is rotated by a = first angle + rsa span / n:
 * x' = cos a x + dir sin a y, y' = -dir sin a x + cos a y; its orientation is (dir sin a, cos a,
 * 0). Ids: ring-major, ring = the axial crystal row over rsectors, modules and submodules. */

static gboolean geom_count(const char *path, GPtrArray *kvs, const char *key, gboolean required,
                           guint64 dflt, guint64 *out, GError **error) {
  const Kv *kv;
  if (required && !kv_required(path, kvs, key, &kv, error)) return FALSE;
  if (!kv_count(path, kvs, key, 1u << 16, dflt, out, error)) return FALSE;
  if (*out < 1) return kv_bad(error, path, kv_find(kvs, key), "(expected at least 1)");
  return TRUE;
}

TlScanner *tl_castor_geom_load(const char *geom, GError **error) {
  g_autoptr(GPtrArray) kvs = read_kv(geom, error);
  if (!kvs) return NULL;
  const Kv *kv;
  guint64 n, layers, nrs, ntc, nac, nar, ntm, nam, nts, nas, zs;
  double radius, depth, ct, ca, mdoi, gar, gtm, gam, gts, gas, gtc, gac, first, span;
  if (!kv_required(geom, kvs, "modality", &kv, error)) return NULL;
  if (strcmp(kv->value, "PET") != 0) {
    kv_bad(error, geom, kv, "(expected PET)");
    return NULL;
  }
  if (!kv_required(geom, kvs, "number of elements", &kv, error) ||
      !kv_count(geom, kvs, "number of elements", TL_SCANNER_MAX_CRYSTALS, 0, &n, error) ||
      !kv_required(geom, kvs, "number of layers", &kv, error) ||
      !kv_count(geom, kvs, "number of layers", 1, 0, &layers, error) ||
      !geom_count(geom, kvs, "number of rsectors", TRUE, 1, &nrs, error) ||
      !geom_count(geom, kvs, "number of crystals transaxial", TRUE, 1, &ntc, error) ||
      !geom_count(geom, kvs, "number of crystals axial", TRUE, 1, &nac, error) ||
      !geom_count(geom, kvs, "number of rsectors axial", FALSE, 1, &nar, error) ||
      !geom_count(geom, kvs, "number of modules transaxial", FALSE, 1, &ntm, error) ||
      !geom_count(geom, kvs, "number of modules axial", FALSE, 1, &nam, error) ||
      !geom_count(geom, kvs, "number of submodules transaxial", FALSE, 1, &nts, error) ||
      !geom_count(geom, kvs, "number of submodules axial", FALSE, 1, &nas, error) ||
      !kv_count(geom, kvs, "rsectors nbzshift", 0, 0, &zs, error) ||
      !kv_required(geom, kvs, "scanner radius", &kv, error) ||
      !kv_number(geom, kvs, "scanner radius", 0, 1e5, TRUE, 0, &radius, error) ||
      !kv_required(geom, kvs, "crystals size depth", &kv, error) ||
      !kv_number(geom, kvs, "crystals size depth", 0, 1e4, TRUE, 0, &depth, error) ||
      !kv_required(geom, kvs, "crystals size transaxial", &kv, error) ||
      !kv_number(geom, kvs, "crystals size transaxial", 0, 1e4, TRUE, 0, &ct, error) ||
      !kv_required(geom, kvs, "crystals size axial", &kv, error) ||
      !kv_number(geom, kvs, "crystals size axial", 0, 1e4, TRUE, 0, &ca, error) ||
      !kv_number(geom, kvs, "mean depth of interaction", -G_MAXDOUBLE, 1e4, FALSE, -1, &mdoi, error) ||
      !kv_number(geom, kvs, "rsector gap axial", 0, 1e4, FALSE, 0, &gar, error) ||
      !kv_number(geom, kvs, "module gap transaxial", 0, 1e4, FALSE, 0, &gtm, error) ||
      !kv_number(geom, kvs, "module gap axial", 0, 1e4, FALSE, 0, &gam, error) ||
      !kv_number(geom, kvs, "submodule gap transaxial", 0, 1e4, FALSE, 0, &gts, error) ||
      !kv_number(geom, kvs, "submodule gap axial", 0, 1e4, FALSE, 0, &gas, error) ||
      !kv_number(geom, kvs, "crystal gap transaxial", 0, 1e4, FALSE, 0, &gtc, error) ||
      !kv_number(geom, kvs, "crystal gap axial", 0, 1e4, FALSE, 0, &gac, error) ||
      !kv_number(geom, kvs, "rsectors first angle", -1e4, 1e4, FALSE, 0, &first, error) ||
      !kv_number(geom, kvs, "rsectors angular span", 0, 360, TRUE, 360, &span, error))
    return NULL;
  if (layers != 1) {
    kv_bad(error, geom, kv_find(kvs, "number of layers"), "(only 1 layer is read here)");
    return NULL;
  }
  int dir = 1;
  if ((kv = kv_find(kvs, "rotation direction"))) {
    if (g_ascii_strcasecmp(kv->value, "CCW") == 0) dir = -1;
    else if (g_ascii_strcasecmp(kv->value, "CW") != 0) {
      kv_bad(error, geom, kv, "(expected CW or CCW)");
      return NULL;
    }
  }
  guint64 rings = nar * nam * nas * nac, per_ring = nrs * ntm * nts * ntc;
  if (rings * per_ring != n || rings > TL_SCANNER_MAX_CRYSTALS || per_ring > TL_SCANNER_MAX_CRYSTALS) {
    kv_bad(error, geom, kv_find(kvs, "number of elements"), "(the rsectors, modules, submodules "
           "and crystals make %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT ")", rings, per_ring);
    return NULL;
  }
  double st_sub = ntc * ct + (ntc - 1) * gtc, sa_sub = nac * ca + (nac - 1) * gac;
  double st_mod = nts * st_sub + (nts - 1) * gts, sa_mod = nas * sa_sub + (nas - 1) * gas;
  double st_rs = ntm * st_mod + (ntm - 1) * gtm, sa_rs = nam * sa_mod + (nam - 1) * gam;
  double dshift = (mdoi < 0 ? depth / 2 : mdoi) - depth / 2;
  TlScanner *s = g_new0(TlScanner, 1);
  g_autofree char *base = g_path_get_basename(geom);
  s->name = g_strndup(base, strcspn(base, "."));
  if ((kv = kv_find(kvs, "scanner name")) && *kv->value) g_free(s->name), s->name = g_strdup(kv->value);
  s->kind = TL_SCANNER_RING;
  s->n_crystals = (guint)n;
  s->n_rings = (guint)rings;
  s->crystals_per_ring = (guint)per_ring;
  s->max_ring_difference = s->n_rings - 1;
  s->crystal_size[0] = (float)ct;
  s->crystal_size[1] = (float)ca;
  s->crystal_size[2] = (float)depth;
  s->crystals = g_new0(TlCrystal, n);
  for (guint64 rsa = 0; rsa < nrs; rsa++) {
    double a = remainder((first + rsa * span / nrs) * G_PI / 180.0, 2 * G_PI);
    double c = cos(a), sn = sin(a);
    for (guint64 rs = 0; rs < nar; rs++)
      for (guint64 m = 0; m < ntm * nam; m++)
        for (guint64 sm = 0; sm < nts * nas; sm++)
          for (guint64 k = 0; k < ntc * nac; k++) {
            double x = -dir * st_rs / 2 + dir * (double)(m % ntm) * (st_mod + gtm) +
                       dir * (double)(sm % nts) * (st_sub + gts) +
                       dir * ((double)(k % ntc) * (ct + gtc) + ct / 2);
            double z = -(nar * sa_rs + (nar - 1) * gar) / 2 + rs * (sa_rs + gar) +
                       (double)(m / ntm) * (sa_mod + gam) + (double)(sm / nts) * (sa_sub + gas) +
                       (double)(k / ntc) * (ca + gac) + ca / 2;
            double y = radius + depth / 2;
            guint64 ring = ((rs * nam + m / ntm) * nas + sm / nts) * nac + k / ntc;
            guint64 id = ring * per_ring + ((rsa * ntm + m % ntm) * nts + sm % nts) * ntc + k % ntc;
            double ox = dir * sn, oy = c; /* outward */
            TlCrystal *t = &s->crystals[id];
            t->centre[0] = (float)(c * x + dir * sn * y + dshift * ox);
            t->centre[1] = (float)(-dir * sn * x + c * y + dshift * oy);
            t->centre[2] = (float)z;
            t->normal[0] = (float)-ox;
            t->normal[1] = (float)-oy;
            t->normal[2] = 0.0f;
            t->group = (guint32)rsa; /* no line of response inside an rsector */
            t->ring = (guint32)ring;
            if (fabs(t->centre[0]) > MAX_POSITION_MM || fabs(t->centre[1]) > MAX_POSITION_MM ||
                fabs(t->centre[2]) > MAX_POSITION_MM) {
              g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: crystal %" G_GUINT64_FORMAT
                          " lies %g mm from the axis plane (expected within %g mm: sizes, gaps or "
                          "counts too large)", geom, id, fabs(z) + fabs(x) + radius, MAX_POSITION_MM);
              tl_scanner_free(s);
              return NULL;
            }
          }
  }
  if (!tl_scanner_validate(s, error)) g_clear_pointer(&s, tl_scanner_free);
  return s;
}

/* --- the format table's entries --- */

static gboolean head_has_key(const guint8 *head, gsize n, const char *key) {
  g_autofree char *text = g_ascii_strdown((const char *)head, (gssize)n);
  return strstr(text, key) != NULL;
}

static guint castor_probe(const char *path, const guint8 *head, gsize n) {
  if (head_has_key(head, n, "data filename:") && head_has_key(head, n, "number of events:") &&
      head_has_key(head, n, "data mode:"))
    return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".cdh") ? TL_FORMAT_EXTENSION : 0;
}

/* The scanner a datafile names: <name>.hscan next to it, else in $CASTOR_CONFIG/scanner. */
static TlScanner *find_scanner(const char *cdh, const char *name, GError **error) {
  g_autofree char *file = g_strconcat(name, ".hscan", NULL);
  g_autofree char *near = sibling(cdh, "scanner name", file, NULL);
  if (near && g_file_test(near, G_FILE_TEST_IS_REGULAR)) return tl_castor_scanner_load(near, error);
  g_autofree char *gfile = g_strconcat(name, ".geom", NULL);
  g_autofree char *gnear = sibling(cdh, "scanner name", gfile, NULL);
  if (gnear && g_file_test(gnear, G_FILE_TEST_IS_REGULAR)) return tl_castor_geom_load(gnear, error);
  const char *cfg = g_getenv("CASTOR_CONFIG");
  if (cfg && !strpbrk(name, "/\\")) {
    g_autofree char *p = g_build_filename(cfg, "scanner", file, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) return tl_castor_scanner_load(p, error);
    g_autofree char *gp = g_build_filename(cfg, "scanner", gfile, NULL);
    if (g_file_test(gp, G_FILE_TEST_IS_REGULAR)) return tl_castor_geom_load(gp, error);
  }
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key 'scanner name': value '%s': no '%s' or "
              "'%s' next to it or in $CASTOR_CONFIG/scanner", cdh, name, file, gfile);
  return NULL;
}

static gpointer castor_load(const char *path, GError **error) {
  g_autoptr(TlCastorData) d = tl_castor_load(path, error);
  if (!d) return NULL;
  g_autoptr(TlScanner) s = find_scanner(path, d->scanner_name, error);
  if (!s) return NULL;
  return tl_castor_to_listmode(d, s, path, error);
}

static gboolean castor_save(gconstpointer data, const char *path, GError **error) {
  return tl_castor_save_listmode(data, NULL, path, error);
}

gboolean tl_castor_save_listmode(const TlListmode *lm, const TlNorm *norm, const char *path,
                                 GError **error) {
  if (norm && !tl_norm_check_scanner(norm, lm->scanner, path, error)) return FALSE;
  if (!g_str_has_suffix(path, ".cdh")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': a CASToR header ends in .cdh", path);
    return FALSE;
  }
  /* the scanner goes next to the data as <stem>-scanner.hscan + .lut */
  g_autofree char *stem = g_strndup(path, strlen(path) - 4);
  g_autofree char *hscan = g_strconcat(stem, "-scanner.hscan", NULL);
  g_autofree char *sname = g_path_get_basename(hscan);
  sname[strlen(sname) - 6] = 0;
  if (!tl_castor_scanner_save(lm->scanner, hscan, error)) return FALSE;
  g_autoptr(TlCastorData) d = tl_castor_from_listmode(lm, sname);
  if (norm) {
    d->has_norm = TRUE;
    d->norm = g_new(float, MAX(lm->n_events, 1));
    tl_norm_records(norm, (const guint32 *)lm->events, lm->n_events, d->norm);
    for (guint64 i = 0; i < lm->n_events; i++) d->norm[i] = d->norm[i] > 0 ? 1.0f / d->norm[i] : 0;
  }
  return tl_castor_save(d, path, error);
}

static gboolean castor_describe(const char *path, GString *out, GError **error) {
  g_autoptr(TlCastorData) d = tl_castor_load(path, error);
  if (!d) return FALSE;
  double sum = 0;
  if (d->histogram)
    for (guint64 i = 0; i < d->n_events * d->tof_bins; i++) sum += d->value[i];
  g_string_append_printf(out, "holds: PET %s\nmodality: PET\nscanner: %s (CASToR scanner name)\n"
                         "events: %" G_GUINT64_FORMAT "%s\n", d->histogram ? "histogram" : "list mode",
                         d->scanner_name, d->n_events, d->histogram ? " histogram bins" : " prompts");
  if (d->histogram) g_string_append_printf(out, "counts: %g\n", sum);
  g_string_append_printf(out, "start: %g s\nduration: %g s\n", d->start_s, d->duration_s);
  if (d->has_tof && d->histogram)
    g_string_append_printf(out, "TOF: %u bins of %g ps, %g ps FWHM\n", d->tof_bins, d->tof_bin_ps,
                           d->tof_fwhm_ps);
  else if (d->has_tof)
    g_string_append_printf(out, "TOF: measured (ps), range %g ps, %g ps FWHM\n", d->tof_range_ps,
                           d->tof_fwhm_ps);
  else
    g_string_append(out, "TOF: no\n");
  g_string_append_printf(out, "fields: attenuation %s, scatter %s, random %s, normalisation %s\n",
                         d->has_atn ? "yes" : "no", d->has_scat ? "yes" : "no",
                         d->has_rand ? "yes" : "no", d->has_norm ? "yes" : "no");
  if (d->isotope) g_string_append_printf(out, "isotope: %s\n", d->isotope);
  return TRUE;
}

/* The data file; a list-mode save also writes the scanner next to it (<stem>-scanner.hscan
 * + .lut, tl_castor_save_listmode). */
static char **castor_companions(const char *path, gboolean writing) {
  GPtrArray *v = g_ptr_array_new();
  if (writing) {
    g_auto(GStrv) pair = tl_file_pair_data_paths(path, ".cdf");
    for (guint i = 0; pair[i]; i++) g_ptr_array_add(v, g_strdup(pair[i]));
    if (g_str_has_suffix(path, ".cdh")) {
      g_autofree char *stem = g_strndup(path, strlen(path) - 4);
      g_ptr_array_add(v, g_strconcat(stem, "-scanner.hscan", NULL));
      g_ptr_array_add(v, g_strconcat(stem, "-scanner.lut", NULL));
      g_ptr_array_add(v, g_strconcat(stem, "-scanner~1.lut", NULL));
    }
  } else {
    char *data = tl_castor_data_path(path);
    if (data) g_ptr_array_add(v, data);
  }
  g_ptr_array_add(v, NULL);
  return (char **)g_ptr_array_free(v, FALSE);
}

static char **hscan_companions(const char *path, gboolean writing) {
  if (!tl_format_path_has_extension(path, ".hscan")) return NULL;
  if (writing) return tl_file_pair_data_paths(path, ".lut"); /* X.lut and X~1.lut */
  char **v = g_new0(char *, 2);
  v[0] = hscan_lut_now(path);
  if (!v[0]) v[0] = lut_path(path);
  return v;
}

const TlFormatClass tl_format_castor = {
    .name = "castor",
    .summary = "CASToR PET data (.cdh + .cdf: list mode or histogram; the scanner as .hscan + .lut)",
    .kind = TL_DATA_PET_LISTMODE,
    .extensions = ".cdh",
    .probe = castor_probe,
    .describe = castor_describe,
    .load = castor_load,
    .save = castor_save,
    .companions = castor_companions,
};

static guint hscan_probe(const char *path, const guint8 *head, gsize n) {
  if (head_has_key(head, n, "number of elements") && head_has_key(head, n, "modality"))
    return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".hscan .geom") ? TL_FORMAT_EXTENSION : 0;
}

/* a .geom (it has rsectors) or a .hscan + .lut */
static gpointer hscan_load(const char *path, GError **error) {
  gsize n = 0;
  g_autofree guint8 *head = tl_format_read_head(path, &n, error);
  if (!head) return NULL;
  if (head_has_key(head, n, "number of rsectors")) return tl_castor_geom_load(path, error);
  return tl_castor_scanner_load(path, error);
}

static gboolean hscan_save(gconstpointer data, const char *path, GError **error) {
  if (!g_str_has_suffix(path, ".hscan")) { /* .geom is read only */
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': CASToR scanners are written as "
                ".hscan + .lut (a .geom is read only)", path);
    return FALSE;
  }
  return tl_castor_scanner_save(data, path, error);
}

const TlFormatClass tl_format_castor_scanner = {
    .name = "castor-scanner",
    .summary = "CASToR scanner: look-up table (.hscan + .lut) or generic description (.geom, read)",
    .kind = TL_DATA_SCANNER,
    .extensions = ".hscan .geom",
    .probe = hscan_probe,
    .load = hscan_load,
    .save = hscan_save,
    .companions = hscan_companions,
};
