/* TlImageGrid / TlImage basics and the raw float32 format (data file + ".txt" sidecar). */
#include "tl-image.h"
#include "tl-file.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

TlImageGrid tl_image_grid_centred(guint nx, guint ny, guint nz, float vx, float vy, float vz) {
  TlImageGrid g = {{nx, ny, nz}, {vx, vy, vz}, {0, 0, 0}};
  for (int d = 0; d < 3; d++) g.origin_mm[d] = -0.5f * (float)(g.dims[d] - 1) * g.voxel_mm[d];
  return g;
}

guint64 tl_image_grid_n_voxels(const TlImageGrid *g) {
  return (guint64)g->dims[0] * g->dims[1] * g->dims[2];
}

gboolean tl_image_grid_validate(const TlImageGrid *g, GError **error) {
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
  if (tl_image_grid_n_voxels(g) >= G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "image grid of %u x %u x %u voxels: expected fewer than 2^32 voxels", g->dims[0],
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
  return c;
}

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

static gboolean ends_with(const char *path, const char *ext) {
  g_autofree char *lower = g_ascii_strdown(path, -1);
  return g_str_has_suffix(lower, ext);
}

TlImage *tl_image_load(const char *path, GError **error) {
  if (ends_with(path, ".raw")) return tl_image_load_raw(path, error);
  if (ends_with(path, ".nii") || ends_with(path, ".nii.gz") || ends_with(path, ".hdr") ||
      ends_with(path, ".img") || ends_with(path, ".hdr.gz") || ends_with(path, ".img.gz"))
    return tl_image_load_nifti(path, error);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "'%s': unknown image type (expected .nii, .nii.gz, .hdr/.img or .raw)", path);
  return NULL;
}

gboolean tl_image_save(const TlImage *im, const char *path, GError **error) {
  if (ends_with(path, ".raw")) return tl_image_save_raw(im, path, error);
  if (ends_with(path, ".nii") || ends_with(path, ".nii.gz")) return tl_image_save_nifti(im, path, error);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "'%s': unknown image type to write (expected .nii, .nii.gz or .raw)", path);
  return FALSE;
}

/* --- raw float32: little-endian, x fastest; "<file>.txt" holds the grid --- */

gboolean tl_image_save_raw(const TlImage *im, const char *path, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  const TlImageGrid *g = &im->grid;
  char b[6][32];
  for (int d = 0; d < 3; d++) {
    tl_format_float(b[d], g->voxel_mm[d]);
    tl_format_float(b[3 + d], g->origin_mm[d]);
  }
  g_autofree char *sidecar = g_strconcat(path, ".txt", NULL);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *text = g_strdup_printf(
      "# Tomolab raw image (docs/formats.md)\ndata = %s\nformat = float32-le\n"
      "dims = %u %u %u\nvoxel_mm = %s %s %s\norigin_mm = %s %s %s\n",
      base, g->dims[0], g->dims[1], g->dims[2], b[0], b[1], b[2], b[3], b[4], b[5]);
  char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
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
  if (!ok) {
    int e = errno;
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    return FALSE;
  }
  /* sidecar first: a reader that finds the data finds its description too */
  if (!g_file_set_contents(sidecar, text, -1, error)) {
    tl_file_abort(f, &tmp);
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

TlImage *tl_image_load_raw(const char *path, GError **error) {
  g_autofree char *sidecar = g_strconcat(path, ".txt", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(sidecar, &text, NULL, error)) {
    g_prefix_error(error, "raw image '%s' needs its sidecar: ", path);
    return NULL;
  }
  TlImageGrid g = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  guint seen = 0;
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
      for (int d = 0; d < 3; d++) dst[d] = (float)v[d];
      seen |= key[0] == 'v' ? 4 : 8;
    } else if (strcmp(key, "data") != 0) {
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
  g_autofree char *bytes = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &bytes, &len, error)) return NULL;
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
  return im;
}
