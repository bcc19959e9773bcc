/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Interfile images as STIR writes them (.hv + .v, STIR's extended keys).
 *
 * Conventions (docs/formats.md "Interfile images"): matrix axis [1] is x (fastest), [2] y,
 * [3] z, as in Tomolab's grid; "scaling factor (mm/pixel) [i]" is the voxel size;
 * "first pixel offset (mm) [i]" (STIR-extended) is the centre of voxel 0 in scanner
 * coordinates; without it the grid is centred on the scanner origin in all three axes, which
 * is where STIR's projectors put an image whose origin is 0 (transaxially centred, axially
 * centred on the scanner). No axis is flipped. */
#include "tl-interfile.h"
#include "tl-file.h"
#include "tl-datafile.h"
#include <glib/gstdio.h>
#include "tl-format.h"
#include <math.h>
#include <string.h>

#define KEY_SIZE "matrix size[%d]"
#define KEY_VOXEL "scaling factor (mm/pixel)[%d]"
#define KEY_OFFSET "first pixel offset (mm)[%d]"

char *tl_interfile_squash(const guint8 *head, gsize n) {
  GString *s = g_string_sized_new(n);
  for (gsize i = 0; i < n; i++) {
    char c = (char)head[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '!' || c == '%') continue;
    if (c == '\0') c = '\n';
    g_string_append_c(s, g_ascii_tolower(c));
  }
  return g_string_free(s, FALSE);
}

TlImage *tl_image_load_interfile(const char *path, GError **error) {
  g_autoptr(TlInterfile) h = tl_interfile_load(path, error);
  if (!h) return NULL;
  if (!tl_interfile_get(h, "interfile"))
    return tl_interfile_fail(h, "INTERFILE", "the '!INTERFILE :=' first line", error), NULL;
  gint64 ndim, frames;
  if (!tl_interfile_int(h, "number of dimensions", TRUE, 3, 2, 3, &ndim, error) ||
      !tl_interfile_int(h, "number of time frames", FALSE, 1, 1, 1, &frames, error))
    return NULL;
  const char *type = tl_interfile_get(h, "pet data type");
  if (type && g_ascii_strcasecmp(type, "image") != 0)
    return tl_interfile_fail(h, "PET data type", "Image (projection data is the STIR sinogram "
                             "format)", error), NULL;
  TlImageGrid g;
  gint64 dims[3] = {1, 1, 1};
  double vox[3] = {1, 1, 1}, org[3];
  static const char *const labels[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; d++) {
    g_autofree char *ks = g_strdup_printf(KEY_SIZE, d + 1);
    g_autofree char *kv = g_strdup_printf(KEY_VOXEL, d + 1);
    g_autofree char *kl = g_strdup_printf("matrix axis label[%d]", d + 1);
    if (d < ndim) {
      if (!tl_interfile_int(h, ks, TRUE, 1, 1, TL_IMAGE_MAX_VOXELS, &dims[d], error) ||
          !tl_interfile_double(h, kv, FALSE, 1.0, TRUE, &vox[d], error))
        return NULL;
      const char *label = tl_interfile_get(h, kl);
      if (label && g_ascii_strcasecmp(label, labels[d]) != 0) {
        g_autofree char *exp = g_strdup_printf("'%s' (axes other than x, y, z in this order "
                                               "are not read)", labels[d]);
        return tl_interfile_fail(h, kl, exp, error), NULL;
      }
    } else if (tl_interfile_get(h, ks))
      return tl_interfile_fail(h, ks, "no size for an axis beyond 'number of dimensions'",
                               error), NULL;
    double centred = -0.5 * (double)(dims[d] - 1) * vox[d];
    g_autofree char *ko = g_strdup_printf(KEY_OFFSET, d + 1);
    if (!tl_interfile_double(h, ko, FALSE, centred, FALSE, &org[d], error)) return NULL;
    g.dims[d] = (guint)dims[d];
    g.voxel_mm[d] = tl_float_from_double(vox[d]);
    g.origin_mm[d] = tl_float_from_double(org[d]);
  }
  if ((guint64)dims[0] * (guint64)dims[1] * (guint64)dims[2] > TL_IMAGE_MAX_VOXELS) {
    g_autofree char *exp = g_strdup_printf("a grid of at most %" G_GUINT64_FORMAT " voxels (the "
                                           "matrix is %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                                           " x %" G_GINT64_FORMAT ")", TL_IMAGE_MAX_VOXELS,
                                           dims[0], dims[1], dims[2]);
    g_autofree char *k = g_strdup_printf(KEY_SIZE, (int)ndim);
    return tl_interfile_fail(h, k, exp, error), NULL;
  }
  if (!tl_image_grid_validate(&g, error)) {
    g_prefix_error(error, "Interfile '%s': ", path);
    return NULL;
  }
  TlInterfileSample fmt;
  if (!tl_interfile_sample_format(h, &fmt, error)) return NULL;
  guint64 n = tl_image_grid_n_voxels(&g);
  float *data = tl_interfile_read_data(h, path, &fmt, n, error);
  if (!data) return NULL;
  TlImage *im = g_new0(TlImage, 1); /* unit "": the header names none */
  im->grid = g;
  im->data = data;
  return im;
}

/* The header of `im` naming `data_name` (float32 little endian, STIR's keys). */
static char *interfile_header_text(gconstpointer data, const char *data_name) {
  const TlImageGrid *g = &((const TlImage *)data)->grid;
  GString *s = g_string_new("!INTERFILE  :=\n!imaging modality := PET\n");
  g_string_append_printf(s, "name of data file := %s\n", data_name);
  g_string_append(s, "!version of keys := STIR4.0\n!GENERAL DATA :=\n!GENERAL IMAGE DATA :=\n"
                     "!type of data := PET\nimagedata byte order := LITTLEENDIAN\n"
                     "!PET STUDY (General) :=\n!PET data type := Image\n"
                     "process status := Reconstructed\n!number format := float\n"
                     "!number of bytes per pixel := 4\nnumber of dimensions := 3\n");
  static const char *const labels[3] = {"x", "y", "z"};
  for (int d = 0; d < 3; d++) {
    char v[32], o[32];
    tl_format_float(v, g->voxel_mm[d]);
    tl_format_float(o, g->origin_mm[d]);
    g_string_append_printf(s, "matrix axis label [%d] := %s\n!matrix size [%d] := %u\n"
                           "scaling factor (mm/pixel) [%d] := %s\n"
                           "first pixel offset (mm) [%d] := %s\n", d + 1, labels[d], d + 1,
                           g->dims[d], d + 1, v, d + 1, o);
  }
  g_string_append(s, "number of time frames := 1\nimage scaling factor[1] := 1\n"
                     "data offset in bytes[1] := 0\nquantification units := 1\n"
                     "!END OF INTERFILE :=\n");
  return g_string_free(s, FALSE);
}

gboolean tl_image_save_interfile(const TlImage *im, const char *path, GError **error) {
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  if (!tl_format_path_has_extension(path, ".hv")) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "'%s': an Interfile image header is named *.hv (its data goes to *.v)", path);
    return FALSE;
  }
  /* X.hv -> X.v, through X~1.v: the header's rename is the commit (image/tl-file.h,
   * "Two-file outputs") */
  g_autofree char *named_now = tl_interfile_data_path(path);
  g_autofree char *data_path = tl_file_pair_next_data(path, ".v", named_now);
  guint64 n = tl_image_grid_n_voxels(&im->grid);
  /* the data first: a header never names a data file that is not complete */
  g_autofree char *tmp = NULL;
  FILE *f = tl_file_begin(data_path, &tmp, error);
  if (!f) return FALSE;
  gboolean ok = TRUE;
  if (G_BYTE_ORDER == G_LITTLE_ENDIAN)
    ok = fwrite(im->data, 4, n, f) == n;
  else
    for (guint64 i = 0; i < n && ok; i++) {
      guint32 v;
      memcpy(&v, &im->data[i], 4);
      v = GUINT32_TO_LE(v);
      ok = fwrite(&v, 4, 1, f) == 1;
    }
  if (!ok) {
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write Interfile data '%s'", data_path);
    return FALSE;
  }
  if (!tl_file_commit(f, &tmp, data_path, error)) return FALSE;
  return tl_file_pair_commit(path, ".v", data_path, interfile_header_text, im, error);
}

char *tl_interfile_data_path(const char *header) {
  if (!g_file_test(header, G_FILE_TEST_IS_REGULAR)) return NULL;
  g_autoptr(TlInterfile) h = tl_interfile_load(header, NULL);
  const char *name = h ? tl_interfile_get(h, "name of data file") : NULL;
  return name ? tl_datafile_resolve(header, "name of data file", name, NULL) : NULL;
}

/* --- the format table's entry --- */

void tl_image_describe(const TlImage *im, GString *out) {
  const TlImageGrid *g = &im->grid;
  g_string_append_printf(out, "holds: image\ngrid: %u x %u x %u voxels of %g x %g x %g mm, first "
                         "voxel centre (%g, %g, %g) mm\n", g->dims[0], g->dims[1], g->dims[2],
                         g->voxel_mm[0], g->voxel_mm[1], g->voxel_mm[2], g->origin_mm[0],
                         g->origin_mm[1], g->origin_mm[2]);
  guint64 n = tl_image_grid_n_voxels(g);
  double mn = G_MAXDOUBLE, mx = -G_MAXDOUBLE;
  for (guint64 i = 0; i < n; i++) mn = MIN(mn, im->data[i]), mx = MAX(mx, im->data[i]);
  g_string_append_printf(out, "values: min %g, max %g, sum %g\n", mn, mx, tl_image_sum(im));
}

/* "!INTERFILE" first, then an image's keys; projection data (segments, tangential
 * coordinates) and list mode (Siemens' "%SMS-MI", "listmode") score 0 so their readers win. */
static guint interfile_probe(const char *path, const guint8 *head, gsize n) {
  if (!tl_format_head_starts_with(head, n, "!INTERFILE")) return 0;
  g_autofree char *s = tl_interfile_squash(head, n);
  if (strstr(s, "sms-mi") || strstr(s, "listmode") || strstr(s, "tangentialcoordinate") ||
      strstr(s, "matrixaxislabel[4]") || strstr(s, "segment"))
    return 0;
  if (strstr(s, "petdatatype:=image") || strstr(s, "numberofdimensions:=3") ||
      strstr(s, "matrixaxislabel[3]:=z"))
    return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".hv") ? TL_FORMAT_LIKELY : TL_FORMAT_EXTENSION;
}

static gboolean interfile_describe(const char *path, GString *out, GError **error) {
  g_autoptr(TlInterfile) h = tl_interfile_load(path, error);
  if (!h) return FALSE;
  const char *keys[] = {"originating system", "imaging modality", "number format",
                        "number of bytes per pixel", "imagedata byte order", "name of data file",
                        "quantification units", "process status", NULL};
  for (guint i = 0; keys[i]; i++) {
    const char *v = tl_interfile_get(h, keys[i]);
    if (v) {
      g_autofree char *q = tl_text_quote(v, -1, 120);
      g_string_append_printf(out, "%s: %s\n", keys[i], q);
    }
  }
  g_autoptr(TlImage) im = tl_image_load_interfile(path, error);
  if (!im) return FALSE;
  tl_image_describe(im, out);
  return TRUE;
}

static gpointer interfile_load(const char *path, GError **error) {
  return tl_image_load_interfile(path, error);
}

static gboolean interfile_save(gconstpointer data, const char *path, GError **error) {
  return tl_image_save_interfile(data, path, error);
}

/* Shared with STIR projection data (pet/data/tl-format-stir-sino.c): `data_ext` ".v" / ".s". */
char **tl_interfile_companions(const char *path, gboolean writing, const char *data_ext) {
  if (writing) return tl_file_pair_data_paths(path, data_ext);
  char *data = tl_interfile_data_path(path);
  if (!data) return NULL;
  char **v = g_new0(char *, 2);
  v[0] = data;
  return v;
}

static char **interfile_companions(const char *path, gboolean writing) {
  return tl_interfile_companions(path, writing, ".v");
}

const TlFormatClass tl_format_interfile = {
    .name = "interfile",
    .summary = "Interfile image (.hv + .v; STIR's extended keys)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".hv",
    .probe = interfile_probe,
    .describe = interfile_describe,
    .load = interfile_load,
    .save = interfile_save,
    .companions = interfile_companions,
};
