/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Data files named by headers: one policy for every reader (tl-datafile.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "tl-datafile.h"
#include "tl-file.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static gboolean outside_allowed(void) {
  const char *v = g_getenv(TL_DATAFILE_OUTSIDE_ENV);
  return v && strcmp(v, "1") == 0;
}

/* Whether `path` is `dir` or lies below it (both canonical, no trailing '/'). */
static gboolean is_within(const char *dir, const char *path) {
  gsize n = strlen(dir);
  if (n == 1 && dir[0] == '/') return TRUE;
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static char *refuse(const char *header, const char *key, const char *name, const char *why,
                    GError **error) {
  g_autofree char *q = tl_text_quote(name, -1, 200);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "%s: key '%s': data file '%s' %s (expected a file in the header's folder; set "
              TL_DATAFILE_OUTSIDE_ENV "=1 to allow data elsewhere)", header, key, q, why);
  return NULL;
}

char *tl_datafile_resolve(const char *header, const char *key, const char *name,
                          GError **error) {
  if (!name || !*name) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: key '%s': no data file name (expected a file in the header's folder)",
                header, key);
    return NULL;
  }
  gboolean anywhere = outside_allowed();
  if (g_path_is_absolute(name) && !anywhere)
    return refuse(header, key, name, "is an absolute path", error);
  g_autofree char *dir = g_path_get_dirname(header);
  g_autofree char *cdir = g_canonicalize_filename(dir, NULL);
  /* lexical: `..` resolved without the file system, so "a/../../x" is seen leaving */
  char *path = g_canonicalize_filename(name, cdir);
  /* the header read as its own data (fuzz-mmr: a header naming itself scanned its text as
   * list-mode words): refused whatever the opt-in */
  GStatBuf sh, sd;
  g_autofree char *cheader = g_canonicalize_filename(header, NULL);
  if (strcmp(cheader, path) == 0 || (g_stat(header, &sh) == 0 && g_stat(path, &sd) == 0 &&
                                     sh.st_dev == sd.st_dev && sh.st_ino == sd.st_ino)) {
    g_free(path);
    g_autofree char *q = tl_text_quote(name, -1, 200);
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: key '%s': data file '%s' is the header "
                "itself (expected a separate data file)", header, key, q);
    return NULL;
  }
  if (anywhere) return path;
  if (!is_within(cdir, path) || strcmp(cdir, path) == 0) {
    g_free(path);
    return refuse(header, key, name, "leaves the header's folder", error);
  }
  /* through the file system: a symbolic link (of the file or a folder on its way) must not
   * lead out of the folder the header really is in */
  char *real_dir = realpath(cdir, NULL), *real = realpath(path, NULL);
  gboolean out = real_dir && real && !is_within(real_dir, real);
  free(real_dir);
  free(real);
  if (out) {
    g_free(path);
    return refuse(header, key, name, "is a symbolic link that leads out of the header's folder",
                  error);
  }
  return path;
}

gboolean tl_datafile_check_size(const char *header, const char *data_path, guint64 expected,
                                const char *layout, GError **error) {
  GStatBuf st;
  if (g_stat(data_path, &st) != 0) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: data file '%s': %s", header, data_path,
                g_strerror(e));
    return FALSE;
  }
  if ((guint64)st.st_size == expected) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
              "%s: data file '%s' has %" G_GUINT64_FORMAT " bytes, expected exactly %"
              G_GUINT64_FORMAT " (%s): %s", header, data_path, (guint64)st.st_size, expected,
              layout, (guint64)st.st_size > expected ? "a larger file means the header "
              "describes less than it holds" : "truncated");
  return FALSE;
}
