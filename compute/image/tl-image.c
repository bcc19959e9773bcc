/* SPDX-License-Identifier: GPL-3.0-or-later */
#define _POSIX_C_SOURCE 200809L /* kill */
/* TlImageGrid / TlImage basics and the raw float32 format (data file + ".txt" sidecar). */
#include "tl-image.h"
#include "tl-file.h"
#include "tl-format.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TlImageGrid tl_image_grid_centred(guint nx, guint ny, guint nz, float vx, float vy, float vz) {
  TlImageGrid g = {{nx, ny, nz}, {vx, vy, vz}, {0, 0, 0}};
  for (int d = 0; d < 3; d++) g.origin_mm[d] = -0.5f * (float)(g.dims[d] - 1) * g.voxel_mm[d];
  return g;
}

guint64 tl_image_grid_n_voxels(const TlImageGrid *g) {
  return (guint64)g->dims[0] * g->dims[1] * g->dims[2];
}

gboolean tl_image_grid_validate_shape(const TlImageGrid *g, GError **error) {
  static const char axis[] = "xyz";
  for (int d = 0; d < 3; d++) {
    if (g->dims[d] == 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "image grid of %u x %u x %u voxels: size along %c is 0 (expected >= 1)",
                  g->dims[0], g->dims[1], g->dims[2], axis[d]);
      return FALSE;
    }
    if (!(g->voxel_mm[d] > 0) || !isfinite(g->voxel_mm[d])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "image grid: voxel size along %c is %g mm (expected positive and finite)",
                  axis[d], g->voxel_mm[d]);
      return FALSE;
    }
    if (!isfinite(g->origin_mm[d])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "image grid: origin along %c is %g (expected finite)", axis[d], g->origin_mm[d]);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean tl_image_grid_validate(const TlImageGrid *g, GError **error) {
  if (!tl_image_grid_validate_shape(g, error)) return FALSE;
  if (tl_image_grid_n_voxels(g) > TL_IMAGE_MAX_VOXELS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "image grid of %u x %u x %u voxels: expected at most 2^28 voxels", g->dims[0],
                g->dims[1], g->dims[2]);
    return FALSE;
  }
  return TRUE;
}

void tl_image_grid_voxel_centre(const TlImageGrid *g, double i, double j, double k, double out[3]) {
  out[0] = g->origin_mm[0] + i * g->voxel_mm[0];
  out[1] = g->origin_mm[1] + j * g->voxel_mm[1];
  out[2] = g->origin_mm[2] + k * g->voxel_mm[2];
}

gboolean tl_image_grid_equal(const TlImageGrid *a, const TlImageGrid *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

char *tl_image_grid_key(const TlImageGrid *g) {
  char b[6][32];
  for (int d = 0; d < 3; d++) {
    tl_format_float(b[d], g->voxel_mm[d]);
    tl_format_float(b[3 + d], g->origin_mm[d]);
  }
  return g_strdup_printf("grid-%ux%ux%u-v%s,%s,%s-o%s,%s,%s", g->dims[0], g->dims[1], g->dims[2],
                         b[0], b[1], b[2], b[3], b[4], b[5]);
}

TlImage *tl_image_new(const TlImageGrid *grid) {
  TlImage *im = g_new0(TlImage, 1);
  im->grid = *grid;
  im->data = g_new0(float, MAX(tl_image_grid_n_voxels(grid), 1));
  return im;
}

TlImage *tl_image_copy(const TlImage *im) {
  TlImage *c = tl_image_new(&im->grid);
  memcpy(c->data, im->data, sizeof(float) * tl_image_grid_n_voxels(&im->grid));
  memcpy(c->unit, im->unit, sizeof c->unit);
  return c;
}

gboolean tl_image_set_unit(TlImage *im, const char *unit) {
  if (!unit) unit = "";
  gsize n = strlen(unit);
  if (n >= TL_IMAGE_UNIT_MAX) return FALSE;
  for (gsize i = 0; i < n; i++)
    if (unit[i] < 0x21 || unit[i] > 0x7e) return FALSE; /* no spaces: "unit=X" in headers */
  memcpy(im->unit, unit, n + 1);
  return TRUE;
}

const char *tl_image_unit(const TlImage *im) { return im->unit[0] ? im->unit : "a.u."; }

void tl_image_free(TlImage *im) {
  if (!im) return;
  g_free(im->data);
  g_free(im);
}

gboolean tl_image_check_nonnegative(const TlImage *im, const char *what, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  guint64 n = tl_image_grid_n_voxels(&im->grid);
  for (guint64 i = 0; i < n; i++) {
    float v = im->data[i];
    if (v >= 0 && isfinite(v)) continue;
    guint nx = im->grid.dims[0], ny = im->grid.dims[1];
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: voxel (%u, %u, %u) holds %g (expected a finite value >= 0)", what,
                (guint)(i % nx), (guint)(i / nx % ny), (guint)(i / nx / ny), v);
    return FALSE;
  }
  return TRUE;
}

double tl_image_sum(const TlImage *im) {
  double s = 0;
  guint64 n = tl_image_grid_n_voxels(&im->grid);
  for (guint64 i = 0; i < n; i++) s += im->data[i];
  return s;
}

/* --- raw float32: little-endian, x fastest; "<file>.txt" holds the grid --- */

static char *raw_sidecar_text(const TlImageGrid *g, const char *data_name) {
  char b[6][32];
  for (int d = 0; d < 3; d++) {
    tl_format_float(b[d], g->voxel_mm[d]);
    tl_format_float(b[3 + d], g->origin_mm[d]);
  }
  return g_strdup_printf(
      "# Tomolab raw image (docs/formats.md)\ndata = %s\nformat = float32-le\n"
      "dims = %u %u %u\nvoxel_mm = %s %s %s\norigin_mm = %s %s %s\n",
      data_name, g->dims[0], g->dims[1], g->dims[2], b[0], b[1], b[2], b[3], b[4], b[5]);
}

/* A pending data file of `base`: ".<base>.new-PID-N", named by the sidecar while the pair is
 * being replaced. */
static gboolean is_pending_name(const char *name, const char *base) {
  gsize n = strlen(base);
  if (name[0] != '.' || strncmp(name + 1, base, n) != 0 || strncmp(name + 1 + n, ".new-", 5) != 0)
    return FALSE;
  const char *p = name + n + 6;
  return *p && strspn(p, "0123456789-") == strlen(p);
}

/* Pending files of killed saves that the sidecar does not name: killed before step 2, or
 * between 2 and 3 (the sidecar named it until this save replaced the pair; before the fix of
 * issue 27 such an image-sized file stayed for good). Only those of processes that no longer
 * run: another one may be saving there now. */
static void remove_stale_pending(const char *dir, const char *base, const char *sidecar) {
  g_autofree char *current = NULL;
  g_file_get_contents(sidecar, &current, NULL, NULL);
  GDir *dh = g_dir_open(dir, 0, NULL);
  for (const char *n; dh && (n = g_dir_read_name(dh));) {
    if (!is_pending_name(n, base)) continue;
    g_autofree char *line = g_strdup_printf("data = %s\n", n);
    if (current && strstr(current, line)) continue;
    long pid = strtol(n + strlen(base) + 6, NULL, 10);
    if (pid <= 0 || pid > G_MAXINT || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    g_autofree char *stale = g_build_filename(dir, n, NULL);
    g_remove(stale);
  }
  if (dh) g_dir_close(dh);
}

/* The pair is replaced so that a crash at any point leaves the old pair or the new pair:
 * (1) the new data go to a pending file; (2) the sidecar, replaced atomically, names that
 * file: from here on readers get the new pair; (3) the pending file is renamed over the data
 * file (a reader whose sidecar names a vanished pending file falls back to the data file,
 * which now holds the new data); (4) the sidecar is rewritten to name the data file. */
gboolean tl_image_save_raw(const TlImage *im, const char *path, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  const TlImageGrid *g = &im->grid;
  g_autofree char *sidecar = g_strconcat(path, ".txt", NULL);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *dir = g_path_get_dirname(path);
  static gint counter;
  g_autofree char *pending_name =
      g_strdup_printf(".%s.new-%d-%d", base, (int)getpid(), g_atomic_int_add(&counter, 1));
  g_autofree char *pending = g_build_filename(dir, pending_name, NULL);
  remove_stale_pending(dir, base, sidecar);
  FILE *f = g_fopen(pending, "wb");
  if (!f) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  guint64 n = tl_image_grid_n_voxels(g);
  gboolean ok = TRUE;
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN) {
    ok = fwrite(im->data, sizeof(float), n, f) == n;
  } else {
    for (guint64 i = 0; ok && i < n; i++) {
      guint32 w;
      memcpy(&w, &im->data[i], 4);
      w = GUINT32_TO_LE(w);
      ok = fwrite(&w, 4, 1, f) == 1;
    }
  }
  ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
  int e = errno;
  if (fclose(f) != 0 && ok) ok = FALSE, e = errno;
  if (!ok) {
    g_remove(pending);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  g_autofree char *text_pending = raw_sidecar_text(g, pending_name);
  if (!tl_file_write_text(sidecar, text_pending, error)) {
    g_remove(pending);
    return FALSE;
  }
  if (!tl_file_rename(pending, path)) {
    e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE; /* the sidecar names the pending file: the new pair stands */
  }
  g_autofree char *text = raw_sidecar_text(g, base);
  if (!tl_file_write_text(sidecar, text, error)) return FALSE;
  remove_stale_pending(dir, base, sidecar);
  return TRUE;
}

TlImage *tl_image_load_raw(const char *path, GError **error) {
  g_autofree char *sidecar = g_strconcat(path, ".txt", NULL);
  g_autofree char *text = NULL;
  gsize text_len = 0;
  if (!tl_file_check_input(sidecar, "raw image sidecar", error) ||
      !g_file_get_contents(sidecar, &text, &text_len, error)) {
    g_prefix_error(error, "raw image '%s' needs its sidecar: ", path);
    return NULL;
  }
  if (!tl_text_check(sidecar, text, text_len, 1, error)) return NULL;
  TlImageGrid g = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  guint seen = 0;
  g_autofree char *data_name = NULL;
  g_autoptr(GHashTable) keys_seen = tl_kv_seen_new();
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *key, *value;
    gboolean bad;
    double v[3];
    if (!tl_kv_split(lines[i], &key, &value, &bad)) {
      if (!bad) continue;
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: expected 'key = value'", sidecar, i + 1);
      return NULL;
    }
    if (!tl_kv_once(keys_seen, sidecar, key, i + 1, error)) return NULL;
    if (strcmp(key, "format") == 0) {
      if (strcmp(value, "float32-le") != 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: key 'format': value '%s' (expected 'float32-le')", sidecar, i + 1, value);
        return NULL;
      }
      seen |= 1;
    } else if (strcmp(key, "dims") == 0) {
      if (!tl_kv_doubles(sidecar, i + 1, key, value, 3, v, error)) return NULL;
      for (int d = 0; d < 3; d++) {
        if (v[d] < 1 || v[d] > G_MAXUINT32 || v[d] != floor(v[d])) {
          g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                      "%s:%u: key 'dims': value '%s' (expected three whole numbers >= 1)",
                      sidecar, i + 1, value);
          return NULL;
        }
        g.dims[d] = (guint)v[d];
      }
      seen |= 2;
    } else if (strcmp(key, "voxel_mm") == 0 || strcmp(key, "origin_mm") == 0) {
      if (!tl_kv_doubles(sidecar, i + 1, key, value, 3, v, error)) return NULL;
      float *dst = key[0] == 'v' ? g.voxel_mm : g.origin_mm;
      for (int d = 0; d < 3; d++) dst[d] = tl_float_from_double(v[d]);
      seen |= key[0] == 'v' ? 4 : 8;
    } else if (strcmp(key, "data") == 0) {
      g_free(data_name);
      data_name = g_strdup(value);
    } else {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: unknown key '%s'", sidecar, i + 1, key);
      return NULL;
    }
  }
  if (seen != 15) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: missing key '%s' (expected format, dims, voxel_mm and origin_mm)", sidecar,
                !(seen & 1) ? "format" : !(seen & 2) ? "dims" : !(seen & 4) ? "voxel_mm" : "origin_mm");
    return NULL;
  }
  if (!tl_image_grid_validate(&g, error)) {
    g_prefix_error(error, "%s: ", sidecar);
    return NULL;
  }
  /* the sidecar may name a pending data file of an interrupted save (tl_image_save_raw) */
  g_autofree char *base = g_path_get_basename(path), *dir = g_path_get_dirname(path);
  g_autofree char *data_path = NULL;
  if (data_name && is_pending_name(data_name, base)) {
    data_path = g_build_filename(dir, data_name, NULL);
    if (!g_file_test(data_path, G_FILE_TEST_IS_REGULAR)) g_clear_pointer(&data_path, g_free);
  }
  if (!data_path) data_path = g_strdup(path);
  g_autofree char *bytes = NULL;
  gsize len = 0;
  GStatBuf st;
  guint64 want = 4 * tl_image_grid_n_voxels(&g);
  if (!tl_file_check_input(data_path, "raw image", error)) return NULL;
  /* the size first: a wrong file is refused before it is read into memory */
  if (g_stat(data_path, &st) == 0 && (guint64)st.st_size != want) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "raw image '%s': %" G_GUINT64_FORMAT " bytes, but %u x %u x %u float32 voxels "
                "need %" G_GUINT64_FORMAT " (%s)", path, (guint64)st.st_size, g.dims[0],
                g.dims[1], g.dims[2], want, (guint64)st.st_size < want ? "truncated" : "oversized");
    return NULL;
  }
  if (!g_file_get_contents(data_path, &bytes, &len, error)) return NULL;
  guint64 n = tl_image_grid_n_voxels(&g);
  if (len != 4 * n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "raw image '%s': %" G_GSIZE_FORMAT " bytes, but %u x %u x %u float32 voxels "
                "need %" G_GUINT64_FORMAT " (%s)",
                path, len, g.dims[0], g.dims[1], g.dims[2], 4 * n, len < 4 * n ? "truncated" : "oversized");
    return NULL;
  }
  TlImage *im = tl_image_new(&g);
  memcpy(im->data, bytes, len);
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN) {
    guint32 *w = (guint32 *)im->data;
    for (guint64 i = 0; i < n; i++) w[i] = GUINT32_FROM_LE(w[i]);
  }
  for (guint64 i = 0; i < n; i++)
    if (!isfinite(im->data[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "raw image '%s': voxel %" G_GUINT64_FORMAT " holds %g (expected a finite value)",
                  path, i, im->data[i]);
      tl_image_free(im);
      return NULL;
    }
  return im;
}

/* --- the format table's entry (compute/dataset/tl-formats.c) --- */

/* No magic: the .raw extension, and its .txt sidecar beside it. */
/* Raw data has no signature: its sidecar, named after it, is the format's mark. It outranks
 * every content match, because the voxels may spell another format's magic (a float at byte
 * 128 reading "DICM" made a saved raw image reload as DICOM). */
static guint raw_probe(const char *path, const guint8 *head, gsize n) {
  (void)head, (void)n;
  if (!tl_format_path_has_extension(path, ".raw")) return 0;
  g_autofree char *side = g_strconcat(path, ".txt", NULL);
  return g_file_test(side, G_FILE_TEST_IS_REGULAR) ? TL_FORMAT_SURE + 10 : TL_FORMAT_EXTENSION;
}

static gpointer raw_load(const char *path, GError **error) {
  return tl_image_load_raw(path, error);
}

static gboolean raw_save(gconstpointer data, const char *path, GError **error) {
  return tl_image_save_raw(data, path, error);
}

/* The grid sidecar, read and written beside the data. */
static char **raw_companions(const char *path, gboolean writing) {
  (void)writing;
  char **v = g_new0(char *, 2);
  v[0] = g_strconcat(path, ".txt", NULL);
  return v;
}

const TlFormatClass tl_format_raw = {
    .name = "raw",
    .summary = "raw float32 image (.raw + .raw.txt grid sidecar)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".raw",
    .probe = raw_probe,
    .load = raw_load,
    .save = raw_save,
    .companions = raw_companions,
};
