/* Atomic writes and key = value parsing for the PET formats. */
#include "tl-file.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

char *tl_file_temp_name(const char *path, const char *ext) {
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
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
  gboolean ok = fflush(f) == 0 && !ferror(f);
  int e = errno;
  if (fclose(f) != 0 && ok) {
    ok = FALSE;
    e = errno;
  }
  if (ok && g_rename(*tmp, path) != 0) {
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

gboolean tl_kv_uint(const char *src, guint line, const char *key, const char *value,
                    guint64 max, guint64 *out, GError **error) {
  char *end = NULL;
  errno = 0;
  guint64 v = g_ascii_strtoull(value, &end, 10);
  if (!*value || *value == '-' || *value == '+' || *end || errno || v > max) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key '%s': value '%s' is not an integer in [0, %" G_GUINT64_FORMAT "]",
                src, line, key, value, max);
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
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: key '%s': value '%s' is not an integer",
                src, line, key, value);
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
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key '%s': value '%s' is not %u finite number%s", src, line, key,
                  value, n, n > 1 ? "s separated by spaces" : "");
      return FALSE;
    }
    out[i] = v;
    p = end;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s:%u: key '%s': value '%s' has more than the %u number%s expected", src,
                line, key, value, n, n > 1 ? "s" : "");
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
