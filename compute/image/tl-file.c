/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Atomic writes and key = value parsing for the PET formats. */
#define _POSIX_C_SOURCE 200809L /* kill */
#include "tl-file.h"
#include <signal.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <float.h>
#include <math.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* ".<name>.tmp-PID-N<ext>": the PID of a temp file, or 0 for any other name. */
static int temp_pid(const char *name) {
  const char *t = name[0] == '.' ? strstr(name + 1, ".tmp-") : NULL;
  if (!t) return 0;
  char *end = NULL;
  long pid = strtol(t + 5, &end, 10);
  if (end == t + 5 || *end != '-' || pid <= 0 || pid > G_MAXINT) return 0;
  if (!g_ascii_isdigit(end[1])) return 0;
  return (int)pid;
}

/* A killed DICOM save's temp folder: its files (the slices written so far), then itself.
 * Only plain files one level down: a temp folder never holds more. */
static void remove_temp_folder(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (!d) return;
  for (const char *n; (n = g_dir_read_name(d));) {
    g_autofree char *p = g_build_filename(path, n, NULL);
    if (!g_file_test(p, G_FILE_TEST_IS_SYMLINK) && g_file_test(p, G_FILE_TEST_IS_REGULAR))
      g_remove(p);
  }
  g_dir_close(d);
  g_rmdir(path);
}

/* Temp files and folders of processes that no longer run (killed during a save) in `dir`. A
 * live PID is never touched: another Tomolab may be saving there now. */
void tl_file_remove_stale_temps(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return;
  for (const char *n; (n = g_dir_read_name(d));) {
    int pid = temp_pid(n);
    if (!pid || pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    g_autofree char *p = g_build_filename(dir, n, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
      remove_temp_folder(p);
    else
      g_remove(p);
  }
  g_dir_close(d);
}

/* TL_TEST_FAIL_AT=N: the Nth step kills the process (SIGKILL: nothing flushed, nothing
 * cleaned up, as a power cut or `kill -9` would). The environment is read at every step, so
 * a test sets it in a forked child; unset, a step costs one getenv. */
void tl_file_fault_point(void) {
  static gint steps;
  const char *at = g_getenv("TL_TEST_FAIL_AT");
  if (!at) return;
  gint n = g_atomic_int_add(&steps, 1) + 1;
  if (n == atoi(at)) raise(SIGKILL);
}

gboolean tl_file_rename(const char *from, const char *to) {
  tl_file_fault_point();
  return g_rename(from, to) == 0;
}

/* X.hv -> X.v and X~1.v: a pair's two data names, used in turn */
static void pair_names(const char *header, const char *data_ext, char **a, char **b) {
  const char *dot = strrchr(header, '.'), *slash = strrchr(header, '/');
  gsize stem = dot && (!slash || dot > slash) ? (gsize)(dot - header) : strlen(header);
  g_autofree char *s = g_strndup(header, stem);
  *a = g_strconcat(s, data_ext, NULL);
  *b = g_strconcat(s, "~1", data_ext, NULL);
}

char **tl_file_pair_data_paths(const char *header, const char *data_ext) {
  char **v = g_new0(char *, 3);
  pair_names(header, data_ext, &v[0], &v[1]);
  return v;
}

static gboolean same_path(const char *a, const char *b) {
  g_autofree char *ca = g_canonicalize_filename(a, NULL), *cb = g_canonicalize_filename(b, NULL);
  return strcmp(ca, cb) == 0;
}

char *tl_file_pair_next_data(const char *header, const char *data_ext, const char *named_now) {
  g_autofree char *a = NULL, *b = NULL;
  pair_names(header, data_ext, &a, &b);
  /* X~1.v unless the current header names it (a save killed before settling): never the
   * file the current header names */
  return g_strdup(named_now && same_path(b, named_now) ? a : b);
}

gboolean tl_file_pair_commit(const char *header, const char *data_ext, const char *data_path,
                             TlFilePairText text, gconstpointer data, GError **error) {
  g_autofree char *stable = NULL, *other = NULL;
  pair_names(header, data_ext, &stable, &other);
  g_autofree char *name = g_path_get_basename(data_path);
  g_autofree char *t = text(data, name);
  if (!tl_file_write_text(header, t, error)) { /* the commit */
    g_remove(data_path);
    return FALSE;
  }
  const char *final = data_path;
  if (!same_path(data_path, stable)) {
    /* settle on the stable name X.v: a hard link renamed over it (the header names X~1.v, so
     * X.v is free), then the header naming X.v; both names hold the new data throughout.
     * Where links fail the pair stays valid under X~1.v. */
    g_autofree char *tmp = tl_file_temp_name(stable, NULL);
    if (link(data_path, tmp) == 0) {
      if (tl_file_rename(tmp, stable)) {
        g_autofree char *stable_name = g_path_get_basename(stable);
        g_autofree char *t2 = text(data, stable_name);
        if (tl_file_write_text(header, t2, NULL)) final = stable;
      } else {
        g_remove(tmp);
      }
    }
  }
  tl_file_pair_finish(header, data_ext, final);
  return TRUE;
}

void tl_file_pair_finish(const char *header, const char *data_ext, const char *data_path) {
  g_auto(GStrv) v = tl_file_pair_data_paths(header, data_ext);
  g_autofree char *cd = g_canonicalize_filename(data_path, NULL);
  for (guint i = 0; v[i]; i++) {
    g_autofree char *c = g_canonicalize_filename(v[i], NULL);
    if (strcmp(c, cd) == 0) continue;
    /* the data the old header named, or new data a killed save left unnamed */
    tl_file_fault_point();
    g_remove(v[i]);
  }
}

gboolean tl_file_write_text(const char *path, const char *text, GError **error) {
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  if (fputs(text, f) < 0) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

char *tl_file_temp_name(const char *path, const char *ext) {
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  tl_file_remove_stale_temps(dir);
  /* hidden, unique per process and call, in the same folder so rename() is atomic */
  static gint counter;
  return g_strdup_printf("%s/.%s.tmp-%d-%d%s", dir, base, (int)getpid(),
                         g_atomic_int_add(&counter, 1), ext ? ext : "");
}

FILE *tl_file_begin(const char *path, char **tmp, GError **error) {
  *tmp = tl_file_temp_name(path, NULL);
  FILE *f = g_fopen(*tmp, "wb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    g_clear_pointer(tmp, g_free);
  }
  return f;
}

gboolean tl_file_commit(FILE *f, char **tmp, const char *path, GError **error) {
  /* on disk before the rename, so a crash after it never finds a named but empty file */
  gboolean ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
  int e = errno;
  if (fclose(f) != 0 && ok) {
    ok = FALSE;
    e = errno;
  }
  if (ok && !tl_file_rename(*tmp, path)) {
    ok = FALSE;
    e = errno;
  }
  if (!ok) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    g_remove(*tmp);
  }
  g_clear_pointer(tmp, g_free);
  return ok;
}

void tl_file_abort(FILE *f, char **tmp) {
  if (f) fclose(f);
  if (*tmp) g_remove(*tmp);
  g_clear_pointer(tmp, g_free);
}

gboolean tl_kv_split(char *line, char **key, char **value, gboolean *bad) {
  *bad = FALSE;
  char *hash = strchr(line, '#');
  if (hash) *hash = '\0';
  g_strstrip(line);
  if (!*line) return FALSE;
  char *eq = strchr(line, '=');
  if (!eq) {
    *bad = TRUE;
    return FALSE;
  }
  *eq = '\0';
  *key = g_strstrip(line);
  *value = g_strstrip(eq + 1);
  return TRUE;
}

typedef struct {
  guint line;
  char *value; /* NULL for tl_kv_once: no repeat allowed */
} Seen;

static void seen_free(gpointer p) {
  Seen *e = p;
  g_free(e->value);
  g_free(e);
}

GHashTable *tl_kv_seen_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, seen_free);
}

gboolean tl_kv_once_or_same(GHashTable *seen, const char *src, const char *key,
                            const char *value, guint line, GError **error) {
  const Seen *first = g_hash_table_lookup(seen, key);
  if (!first) {
    Seen *e = g_new(Seen, 1);
    *e = (Seen){line, g_strdup(value)};
    g_hash_table_insert(seen, g_strdup(key), e);
    return TRUE;
  }
  if (value && first->value && strcmp(value, first->value) == 0) return TRUE;
  g_autofree char *k = tl_text_quote(key, -1, 60);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "%s:%u: key '%s' given twice (first on line %u%s; expected each key once)", src,
              line, k, first->line, value ? " with another value" : "");
  return FALSE;
}

gboolean tl_kv_once(GHashTable *seen, const char *src, const char *key, guint line,
                    GError **error) {
  return tl_kv_once_or_same(seen, src, key, NULL, line, error);
}

gboolean tl_kv_uint(const char *src, guint line, const char *key, const char *value,
                    guint64 max, guint64 *out, GError **error) {
  char *end = NULL;
  errno = 0;
  guint64 v = g_ascii_strtoull(value, &end, 10);
  if (!*value || *value == '-' || *value == '+' || *end || errno || v > max) {
    g_autofree char *k = tl_text_quote(key, -1, 60), *q = tl_text_quote(value, -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key '%s': value '%s' is not an integer in [0, %" G_GUINT64_FORMAT "]",
                src, line, k, q, max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean tl_kv_int(const char *src, guint line, const char *key, const char *value,
                   gint64 *out, GError **error) {
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(value, &end, 10);
  if (!*value || *end || errno) {
    g_autofree char *k = tl_text_quote(key, -1, 60), *q = tl_text_quote(value, -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': value '%s' is not an integer",
                src, line, k, q);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean tl_kv_doubles(const char *src, guint line, const char *key, const char *value,
                       guint n, double *out, GError **error) {
  const char *p = value;
  for (guint i = 0; i < n; i++) {
    while (*p == ' ' || *p == '\t') p++;
    char *end = NULL;
    errno = 0;
    double v = g_ascii_strtod(p, &end);
    if (end == p || errno || !isfinite(v) || (*end && *end != ' ' && *end != '\t')) {
      g_autofree char *k = tl_text_quote(key, -1, 60), *q = tl_text_quote(value, -1, 80);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key '%s': value '%s' is not %u finite number%s", src, line, k,
                  q, n, n > 1 ? "s separated by spaces" : "");
      return FALSE;
    }
    out[i] = v;
    p = end;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p) {
    g_autofree char *k = tl_text_quote(key, -1, 60), *q = tl_text_quote(value, -1, 80);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key '%s': value '%s' has more than the %u number%s expected", src,
                line, k, q, n, n > 1 ? "s" : "");
    return FALSE;
  }
  return TRUE;
}

/* Tries increasing precision: "380.56" rather than "380.56000000000000227". */
void tl_format_double(char buf[32], double v) {
  for (int prec = 6; prec <= 17; prec++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
    g_ascii_formatd(buf, 32, fmt, v);
    if (g_ascii_strtod(buf, NULL) == v) return;
  }
}

void tl_format_float(char buf[32], float v) {
  for (int prec = 6; prec <= 9; prec++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
    g_ascii_formatd(buf, 32, fmt, v);
    if ((float)g_ascii_strtod(buf, NULL) == v) return;
  }
}

float tl_float_from_double(double v) {
  /* below the midpoint of FLT_MAX and 2^128 a double rounds to a finite float: the shortest
   * text of FLT_MAX ("3.40282347e+38") is slightly above FLT_MAX and must read back as it
   * (found by tests/fuzz/fuzz-image) */
  if (isnan(v) || fabs(v) < 0x1.ffffffp127) return (float)v;
  return v > 0 ? INFINITY : -INFINITY;
}

char *tl_text_quote(const char *text, gssize len, gsize max) {
  gsize n = len < 0 ? strlen(text) : (gsize)len;
  GString *s = g_string_sized_new(MIN(n, max) + 8);
  const char *p = text, *end = text + n;
  while (p < end) {
    if (s->len >= max) {
      g_string_append(s, "...");
      break;
    }
    gunichar c = g_utf8_get_char_validated(p, end - p);
    if (c == (gunichar)-1 || c == (gunichar)-2 || c < 0x20 || c == 0x7f) {
      g_string_append_printf(s, "\\x%02x", (guint8)*p);
      p++;
      continue;
    }
    const char *next = g_utf8_next_char(p);
    g_string_append_len(s, p, next - p);
    p = next;
  }
  return g_string_free(s, FALSE);
}

gboolean tl_file_check_input(const char *path, const char *what, GError **error) {
  GStatBuf st;
  if (g_stat(path, &st) != 0) {
    int e = errno;
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot open %s '%s': %s", what, q, g_strerror(e));
    return FALSE;
  }
  if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "'%s' is %s, not a %s", q,
                S_ISDIR(st.st_mode) ? "a directory" : "not a regular file", what);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_text_check(const char *src, const char *text, gsize len, guint first_line,
                       GError **error) {
  const char *p = text, *end = text + len, *line_start = text;
  guint line = first_line;
  while (p < end) {
    gunichar c = g_utf8_get_char_validated(p, end - p);
    if (c == '\n') {
      line++;
      line_start = ++p;
      continue;
    }
    if (c == (gunichar)-1 || c == (gunichar)-2 || (c < 0x20 && c != '\t' && c != '\r') ||
        c == 0x7f) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: byte 0x%02x at column %u is not text (expected a UTF-8 text header)",
                  src, line, (guint8)*p, (guint)(p - line_start) + 1);
      return FALSE;
    }
    p = g_utf8_next_char(p);
  }
  return TRUE;
}
