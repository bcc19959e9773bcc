/* DICOM image series (read only) as a TlImage, through tl-dicom.h (DCMTK). Opening one file
 * of a series opens the series: every file of its folder with the same SeriesInstanceUID
 * (at most TL_DICOM_MAX_FILES looked at), sorted along the slice normal. docs/formats.md
 * "DICOM":
 *  - values: RescaleSlope x stored + RescaleIntercept (CT: Hounsfield units);
 *  - the patient frame of DICOM is LPS; Tomolab's scanner frame is NIfTI's RAS-like one, so
 *    x = -L, y = -P, z = S. Axis-aligned orientations only (each image axis along one scanner
 *    axis, either way): the voxels are reordered onto positive axes exactly, and the grid's
 *    origin is the centre of the voxel that lands at (0, 0, 0). Oblique ones are refused;
 *  - slice spacing: from the positions along the normal (equal within 1 %), else, for one
 *    slice, SliceThickness (1 mm if absent). */
#include "tl-image.h"
#include "tl-dicom.h"
#include "tl-file.h"
#include "tl-format.h"
#include <math.h>
#include <string.h>

#define TL_DICOM_MAX_FILES 10000u

typedef struct {
  char *path;
  TlDicomSlice s;
  double depth; /* position along the normal */
} Slice;

static void slice_free(gpointer p) {
  Slice *s = p;
  tl_dicom_slice_clear(&s->s);
  g_free(s->path);
  g_free(s);
}

static int by_depth(gconstpointer a, gconstpointer b) {
  const Slice *x = *(Slice *const *)a, *y = *(Slice *const *)b;
  return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The scanner axis (0..2) a LPS direction runs along and its sign in RAS; -1 if oblique. */
static int ras_axis(const double lps[3], int *sign) {
  double ras[3] = {-lps[0], -lps[1], lps[2]};
  for (int a = 0; a < 3; a++)
    if (fabs(fabs(ras[a]) - 1) < 1e-4 && fabs(ras[(a + 1) % 3]) < 1e-4 &&
        fabs(ras[(a + 2) % 3]) < 1e-4) {
      *sign = ras[a] > 0 ? 1 : -1;
      return a;
    }
  return -1;
}

/* The files of the series `first` belongs to (itself included), headers only. */
static GPtrArray *series_files(const char *path, const TlDicomSlice *first, GError **error) {
  GPtrArray *files = g_ptr_array_new_with_free_func(slice_free);
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  Slice *self = g_new0(Slice, 1);
  self->path = g_strdup(path);
  self->s = *first;
  g_ptr_array_add(files, self);
  if (!first->series_uid[0]) return files;
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  guint looked = 0;
  while (d && (name = g_dir_read_name(d)) && looked < TL_DICOM_MAX_FILES) {
    if (strcmp(name, base) == 0) continue;
    g_autofree char *p = g_build_filename(dir, name, NULL);
    if (!g_file_test(p, G_FILE_TEST_IS_REGULAR)) continue;
    gsize n = 0;
    g_autofree guint8 *head = tl_format_read_head(p, &n, NULL);
    if (!head || tl_format_dicom.probe(p, head, n) < TL_FORMAT_SURE) continue;
    looked++;
    TlDicomSlice s;
    if (!tl_dicom_read(p, FALSE, &s, NULL) || strcmp(s.series_uid, first->series_uid) != 0)
      continue;
    Slice *e = g_new0(Slice, 1);
    e->path = g_steal_pointer(&p);
    e->s = s;
    g_ptr_array_add(files, e);
  }
  (void)error;
  return files;
}

static gboolean series_fail(GError **error, const Slice *s, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean series_fail(GError **error, const Slice *s, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': DICOM series: %s: %s", s->path, key, what);
  return FALSE;
}

gpointer tl_dicom_load_series(const char *path, GError **error) {
  if (!tl_file_check_input(path, "DICOM file", error)) return NULL;
  TlDicomSlice first;
  if (!tl_dicom_read(path, FALSE, &first, error)) return NULL;
  g_autoptr(GPtrArray) files = series_files(path, &first, error);
  Slice *s0 = files->pdata[0];
  double *o = s0->s.orientation;
  double r[3] = {1, 0, 0}, c[3] = {0, 1, 0};
  if (s0->s.has_orientation) memcpy(r, o, sizeof r), memcpy(c, o + 3, sizeof c);
  double nrm[3] = {r[1] * c[2] - r[2] * c[1], r[2] * c[0] - r[0] * c[2], r[0] * c[1] - r[1] * c[0]};
  int sign[3], axis[3] = {ras_axis(r, &sign[0]), ras_axis(c, &sign[1]), ras_axis(nrm, &sign[2])};
  if (axis[0] < 0 || axis[1] < 0 || axis[2] < 0) {
    series_fail(error, s0, "ImageOrientationPatient (0020,0037)",
                "%g \\ %g \\ %g \\ %g \\ %g \\ %g is oblique; Tomolab reads axis-aligned slices "
                "only", o[0], o[1], o[2], o[3], o[4], o[5]);
    return NULL;
  }
  for (guint k = 0; k < files->len; k++) {
    Slice *e = files->pdata[k];
    if (files->len > 1 && !e->s.has_position) {
      series_fail(error, e, "ImagePositionPatient (0020,0032)", "missing in a series of %u "
                  "files: the slices cannot be ordered", files->len);
      return NULL;
    }
    if (e->s.rows != s0->s.rows || e->s.cols != s0->s.cols) {
      series_fail(error, e, "Rows, Columns", "%u x %u, expected %u x %u as '%s' of the same "
                  "series", e->s.rows, e->s.cols, s0->s.rows, s0->s.cols, s0->path);
      return NULL;
    }
    if (fabs(e->s.spacing[0] - s0->s.spacing[0]) > 1e-4 * s0->s.spacing[0] ||
        fabs(e->s.spacing[1] - s0->s.spacing[1]) > 1e-4 * s0->s.spacing[1]) {
      series_fail(error, e, "PixelSpacing (0028,0030)", "%g \\ %g, expected %g \\ %g as '%s'",
                  e->s.spacing[0], e->s.spacing[1], s0->s.spacing[0], s0->s.spacing[1],
                  s0->path);
      return NULL;
    }
    for (int i = 0; i < 6 && e->s.has_orientation; i++)
      if (fabs(e->s.orientation[i] - o[i]) > 1e-4) {
        series_fail(error, e, "ImageOrientationPatient (0020,0037)", "component %d is %g, "
                    "expected %g as '%s'", i + 1, e->s.orientation[i], o[i], s0->path);
        return NULL;
      }
    e->depth = e->s.has_position ? e->s.position[0] * nrm[0] + e->s.position[1] * nrm[1] +
                                       e->s.position[2] * nrm[2] : 0;
  }
  g_ptr_array_sort(files, by_depth);
  guint nk = files->len;
  double dk = s0->s.thickness > 0 ? s0->s.thickness : 1.0;
  if (nk > 1) {
    const Slice *a = files->pdata[0], *b = files->pdata[nk - 1];
    dk = (b->depth - a->depth) / (nk - 1);
    for (guint k = 1; k < nk; k++) {
      const Slice *p = files->pdata[k - 1], *q = files->pdata[k];
      double gap = q->depth - p->depth;
      if (!(dk > 0) || fabs(gap - dk) > 0.01 * dk) {
        series_fail(error, q, "ImagePositionPatient (0020,0032)", "%g mm from the previous "
                    "slice '%s', expected %g mm (equal spacing, no duplicates)", gap, p->path, dk);
        return NULL;
      }
    }
  }
  /* image axis i (columns), j (rows), k (slices) -> scanner axis axis[.], direction sign[.] */
  guint n[3] = {s0->s.cols, s0->s.rows, nk};
  double d[3] = {s0->s.spacing[1], s0->s.spacing[0], dk};
  TlImageGrid grid;
  for (int a = 0; a < 3; a++) {
    grid.dims[axis[a]] = n[a];
    grid.voxel_mm[axis[a]] = (float)d[a];
  }
  /* origin: the RAS position of the source voxel with index 0 along a positive axis, the
   * last index along a negative one */
  const Slice *f0 = files->pdata[0];
  double p0[3] = {0, 0, 0};
  if (f0->s.has_position) memcpy(p0, f0->s.position, sizeof p0);
  double dirs[3][3] = {{r[0], r[1], r[2]}, {c[0], c[1], c[2]}, {nrm[0], nrm[1], nrm[2]}};
  double lps[3] = {p0[0], p0[1], p0[2]};
  for (int a = 0; a < 3; a++)
    if (sign[a] < 0)
      for (int i = 0; i < 3; i++) lps[i] += (n[a] - 1.0) * d[a] * dirs[a][i];
  double ras[3] = {-lps[0], -lps[1], lps[2]};
  for (int i = 0; i < 3; i++) grid.origin_mm[i] = (float)ras[i];
  if (tl_image_grid_n_voxels(&grid) > (1ull << 31)) {
    series_fail(error, s0, "Rows, Columns, slices", "%u x %u x %u voxels, more than 2^31", n[0],
                n[1], n[2]);
    return NULL;
  }
  g_autoptr(TlImage) img = tl_image_new(&grid);
  for (guint k = 0; k < nk; k++) {
    Slice *e = files->pdata[k];
    TlDicomSlice full;
    if (!tl_dicom_read(e->path, TRUE, &full, error)) return NULL;
    if (full.rows != n[1] || full.cols != n[0] || strcmp(full.series_uid, s0->s.series_uid)) {
      tl_dicom_slice_clear(&full);
      series_fail(error, e, "Rows, Columns, SeriesInstanceUID", "changed while reading");
      return NULL;
    }
    for (guint j = 0; j < n[1]; j++)
      for (guint i = 0; i < n[0]; i++) {
        guint src[3] = {i, j, k}, dst[3];
        for (int a = 0; a < 3; a++) dst[axis[a]] = sign[a] > 0 ? src[a] : n[a] - 1 - src[a];
        img->data[dst[0] + (gsize)grid.dims[0] * (dst[1] + (gsize)grid.dims[1] * dst[2])] =
            full.pixels[(gsize)j * n[0] + i];
      }
    tl_dicom_slice_clear(&full);
  }
  return g_steal_pointer(&img);
}

/* --- the format table's entry (compute/tl-formats.c) --- */

static guint dicom_probe(const char *path, const guint8 *head, gsize n) {
  /* Part 10 files: a 128-byte preamble, then "DICM" */
  if (n >= 132 && memcmp(head + 128, "DICM", 4) == 0) return TL_FORMAT_SURE;
  return tl_format_path_has_extension(path, ".dcm .dicom .ima") ? TL_FORMAT_EXTENSION : 0;
}

static gboolean dicom_describe(const char *path, GString *out, GError **error) {
  TlDicomSlice s;
  if (!tl_file_check_input(path, "DICOM file", error) || !tl_dicom_read(path, FALSE, &s, error))
    return FALSE;
  g_autoptr(GPtrArray) files = series_files(path, &s, error);
  g_string_append_printf(out, "modality: %s\nslice: %u columns x %u rows of %g x %g mm\n"
                         "rescale: slope %g, intercept %g\nslice thickness: %g mm\n",
                         s.modality[0] ? s.modality : "(none)", s.cols, s.rows, s.spacing[1],
                         s.spacing[0], s.slope, s.intercept, s.thickness);
  if (s.has_position)
    g_string_append_printf(out, "position (LPS): %g %g %g mm\n", s.position[0], s.position[1],
                           s.position[2]);
  if (s.has_orientation)
    g_string_append_printf(out, "orientation: %g %g %g / %g %g %g\n", s.orientation[0],
                           s.orientation[1], s.orientation[2], s.orientation[3],
                           s.orientation[4], s.orientation[5]);
  g_string_append_printf(out, "series: %s, %u file(s) of it in the folder\n",
                         s.series_uid[0] ? s.series_uid : "(no SeriesInstanceUID)", files->len);
  return TRUE;
}

static gpointer dicom_load(const char *path, GError **error) {
  return tl_dicom_load_series(path, error);
}

const TlFormatClass tl_format_dicom = {
    .name = "dicom",
    .summary = "DICOM image series (DCMTK; one file opens its series; rescaled to HU for CT; "
               "read only)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".dcm .dicom .ima",
    .probe = dicom_probe,
    .describe = dicom_describe,
    .load = dicom_load,
};
