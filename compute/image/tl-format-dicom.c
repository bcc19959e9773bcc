/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DICOM image series as a TlImage and back, through tl-dicom.h (DCMTK). Opening one file of a
 * series opens the series: every file of its folder with the same SeriesInstanceUID (at most
 * TL_DICOM_MAX_FILES looked at), sorted along the slice normal; opening a folder opens the
 * series of its first DICOM file by name. docs/formats.md "DICOM":
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
#include <errno.h>
#include <glib/gstdio.h>
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

/* A slice a save has not renamed in yet (tl_file_temp_name: ".NAME.tmp-PID-N..."): never part
 * of a series, which a killed save would otherwise have extended by a duplicate. */
static gboolean unsaved(const char *name) { return name[0] == '.' && strstr(name, ".tmp-") != NULL; }

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
    if (unsaved(name)) continue;
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
  /* A numbered series appears one rename at a time (tl_dicom_save_series): a save killed
   * between them leaves part of it, which would load as a thinner image. Tomolab writes the
   * count on every slice; other writers' ImagesInAcquisition may span several series. */
  if (s0->s.by_tomolab && s0->s.images_in_acquisition &&
      s0->s.images_in_acquisition != files->len) {
    series_fail(error, s0, "ImagesInAcquisition (0020,1002)", "%u, but its folder holds %u "
                "files of the series (an interrupted save or a lost slice)",
                s0->s.images_in_acquisition, files->len);
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
  /* + 0.0: an origin at 0 is +0, not the -0 of negating LPS 0 (grids compare bitwise) */
  for (int i = 0; i < 3; i++) grid.origin_mm[i] = (float)(ras[i] + 0.0);
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

/* --- writing: tl_dicom_save_series --- */

/* The largest |value| written: RescaleSlope and RescaleIntercept are decimal strings, and
 * readers (Tomolab's included, tl-dicom.cpp) refuse magnitudes beyond 1e9 in them. */
#define TL_DICOM_MAX_VALUE 1e9

/* v as a DS (decimal string, at most 16 characters): the most digits that fit, so a float
 * (9 significant digits) always reads back to itself; "-0" written as "0". */
static void ds_text(double v, char out[17]) {
  if (v == 0) v = 0;
  for (int prec = 17; prec >= 1; prec--) {
    char fmt[8], buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    if (strlen(buf) <= 16) {
      g_strlcpy(out, buf, 17);
      return;
    }
  }
  g_assert_not_reached(); /* "%.1g" of a finite double fits: "-1e-308" */
}

/* The 16-bit coding of one slice: stored = round((v - intercept) / slope), chosen so the
 * slice's range fills the words and every value comes back within half a step (slope / 2).
 * Integer values that fit are kept exactly (slope 1: CT in HU). PET's intercept is 0
 * (PS3.3 C.8.9.4: Rescale Intercept shall be 0). Returns the slope and intercept as
 * written, then codes the words with the values read back from that text. */
static void code_slice(TlDicomIod iod, const float *v, guint cols, guint rows, guint16 *words,
                       TlDicomWriteSlice *w) {
  gsize n = (gsize)cols * rows;
  double lo = v[0], hi = v[0];
  gboolean integral = TRUE;
  for (gsize i = 0; i < n; i++) {
    lo = MIN(lo, v[i]), hi = MAX(hi, v[i]);
    integral = integral && v[i] == floorf(v[i]);
  }
  double slope = 1, intercept = 0;
  gboolean sgn;
  if (iod == TL_DICOM_PET) {
    sgn = lo < 0;
    if (!sgn && !(integral && hi <= 65535)) slope = hi > 0 ? hi / 65535 : 1;
    if (sgn && !(integral && lo >= -32768 && hi <= 32767)) slope = MAX(-lo, hi) / 32767;
  } else if (integral && lo >= -32768 && hi <= 32767) {
    sgn = TRUE;
  } else {
    sgn = FALSE;
    intercept = lo;
    if (!(integral && hi - lo <= 65535) && hi > lo) slope = (hi - lo) / 65535;
  }
  ds_text(slope, w->slope);
  ds_text(intercept, w->intercept);
  double a = g_ascii_strtod(w->slope, NULL), b = g_ascii_strtod(w->intercept, NULL);
  double qlo = sgn ? -32768 : 0, qhi = sgn ? 32767 : 65535;
  /* DICOM's columns run along -x and its rows along -y (tl_dicom_save_series) */
  for (guint j = 0; j < rows; j++)
    for (guint i = 0; i < cols; i++) {
      double q = CLAMP(round((v[(gsize)(rows - 1 - j) * cols + (cols - 1 - i)] - b) / a), qlo,
                       qhi);
      words[(gsize)j * cols + i] = sgn ? (guint16)(gint16)q : (guint16)q;
    }
  w->is_signed = sgn;
}

static gboolean is_dicom_name(const char *path) {
  return tl_format_path_has_extension(path, ".dcm .dicom .ima");
}

/* The file names of the n slices (see tl-dicom.h): a run of '#' in the name is the slice
 * number with at least that many digits; without one, "_NNNN" goes before the extension. */
static GPtrArray *slice_names(const char *path, guint n, gboolean folder) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *dir = folder ? g_strdup(path) : g_path_get_dirname(path);
  g_autofree char *base = folder ? g_strdup("IM_####.dcm") : g_path_get_basename(path);
  const char *hash = strchr(base, '#');
  if (!hash && n == 1) {
    g_ptr_array_add(names, g_strdup(path));
    return names;
  }
  g_autofree char *head = NULL, *tail = NULL;
  int width = 4;
  if (hash) {
    width = (int)strspn(hash, "#");
    head = g_strndup(base, hash - base);
    tail = g_strdup(hash + width);
  } else {
    const char *dot = strrchr(base, '.'); /* not folder: is_dicom_name, so there is one */
    head = g_strdup_printf("%.*s_", (int)(dot - base), base);
    tail = g_strdup(dot);
  }
  int digits = 1;
  for (guint m = n; m >= 10; m /= 10) digits++;
  width = MAX(width, digits);
  for (guint k = 0; k < n; k++) {
    g_autofree char *name = g_strdup_printf("%s%0*u%s", head, width, k + 1, tail);
    g_ptr_array_add(names, g_build_filename(dir, name, NULL));
  }
  return names;
}

static void remove_all(GPtrArray *paths, guint n) {
  for (guint k = 0; k < n; k++) g_remove(paths->pdata[k]);
}

gboolean tl_dicom_save_series(gconstpointer image, const char *out_path,
                              const TlDicomSaveOptions *opt, GError **error) {
  const TlImage *im = image;
  /* "out/" names the folder "out" (its temp sibling is ".out.tmp-...") */
  g_autofree char *path = g_strdup(out_path);
  for (gsize len = strlen(path); len > 1 && path[len - 1] == '/'; len--) path[len - 1] = 0;
  if (!tl_image_grid_validate(&im->grid, error)) return FALSE;
  const TlImageGrid *g = &im->grid;
  guint nx = g->dims[0], ny = g->dims[1], nz = g->dims[2];
  if (nx > TL_DICOM_MAX_DIM || ny > TL_DICOM_MAX_DIM) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': DICOM Columns, Rows: %u x %u, "
                "expected at most %u x %u", path, nx, ny, TL_DICOM_MAX_DIM, TL_DICOM_MAX_DIM);
    return FALSE;
  }
  gsize per = (gsize)nx * ny;
  for (gsize i = 0; i < per * nz; i++)
    if (!isfinite(im->data[i]) || fabsf(im->data[i]) > TL_DICOM_MAX_VALUE) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': DICOM: voxel (%zu, %zu, %zu) "
                  "is %g, expected a finite value within +-1e9 (RescaleSlope and "
                  "RescaleIntercept are decimal strings)", path, i % nx, i / nx % ny, i / per,
                  im->data[i]);
      return FALSE;
    }
  /* the targets: never an existing file (the series may be the input) */
  gboolean folder = !is_dicom_name(path);
  g_autofree char *tmpdir = NULL;
  if (folder) {
    if (g_file_test(path, G_FILE_TEST_EXISTS)) {
      g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
      const char *first = d ? g_dir_read_name(d) : NULL;
      if (!d || first) {
        g_set_error(error, TL_ERROR, TL_ERROR_IO, "'%s': %s%s%s: a DICOM series goes into a new "
                    "or empty folder (no file is replaced; an output name ending in .dcm "
                    "writes numbered files next to it)", path, d ? "the folder holds '" :
                    "exists and is not a folder", d ? first : "", d ? "'" : "");
        return FALSE;
      }
    }
    /* written in a hidden folder beside it, renamed when complete */
    tmpdir = tl_file_temp_name(path, NULL);
    if (g_mkdir(tmpdir, 0755) != 0) {
      int e = errno;
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
      return FALSE;
    }
  }
  g_autoptr(GPtrArray) names = slice_names(path, nz, folder);
  g_autoptr(GPtrArray) written = slice_names(folder ? tmpdir : path, nz, folder);
  for (guint k = 0; k < nz && !folder; k++)
    if (g_file_test(names->pdata[k], G_FILE_TEST_EXISTS)) {
      g_set_error(error, TL_ERROR, TL_ERROR_IO, "'%s' exists: a DICOM series never replaces a "
                  "file (it may be part of the input); remove it or choose another name",
                  (char *)names->pdata[k]);
      return FALSE;
    }

  TlDicomWriteSlice w = {0};
  w.iod = opt->iod;
  w.bqml = opt->iod == TL_DICOM_PET && opt->bqml;
  w.rows = ny, w.cols = nx, w.n_slices = nz;
  w.description = opt->description ? opt->description : "Tomolab";
  tl_dicom_new_uid(w.study_uid);
  tl_dicom_new_uid(w.series_uid);
  tl_dicom_new_uid(w.frame_uid);
  g_autoptr(GDateTime) now = g_date_time_new_now_local();
  g_autofree char *date = g_date_time_format(now, "%Y%m%d"), *time = g_date_time_format(now, "%H%M%S");
  g_strlcpy(w.date, date, sizeof w.date);
  g_strlcpy(w.time, time, sizeof w.time);
  /* Axial slices in DICOM's usual orientation: rows along +L, columns along +P (LPS), so the
   * normal is +S. Tomolab's frame is x = -L, y = -P, z = S (the reader's convention): the
   * first pixel is voxel (nx - 1, ny - 1, k); PixelSpacing is "between rows \ between
   * columns" = vy \ vx. */
  static const double iop[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 6; i++) ds_text(iop[i], w.orientation[i]);
  ds_text(g->voxel_mm[1], w.spacing[0]);
  ds_text(g->voxel_mm[0], w.spacing[1]);
  ds_text(g->voxel_mm[2], w.thickness);
  guint16 *words = g_new(guint16, per);
  w.pixels = words;
  gboolean ok = TRUE;
  guint done = 0;
  for (guint k = 0; k < nz && ok; k++) {
    double ras[3] = {(double)g->origin_mm[0] + (nx - 1.0) * g->voxel_mm[0],
                     (double)g->origin_mm[1] + (ny - 1.0) * g->voxel_mm[1],
                     (double)g->origin_mm[2] + (double)k * g->voxel_mm[2]};
    ds_text(-ras[0], w.position[0]);
    ds_text(-ras[1], w.position[1]);
    ds_text(ras[2], w.position[2]);
    ds_text(ras[2], w.location);
    w.instance = k + 1;
    code_slice(opt->iod, im->data + k * per, nx, ny, words, &w);
    const char *final = names->pdata[k];
    if (folder) {
      ok = tl_dicom_write_slice(written->pdata[k], final, &w, error);
    } else {
      g_autofree char *tmp = tl_file_temp_name(final, ".dcm");
      ok = tl_dicom_write_slice(tmp, final, &w, error);
      if (ok && !tl_file_rename(tmp, final)) {
        int e = errno;
        g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", final, g_strerror(e));
        ok = FALSE;
      }
      if (!ok) g_remove(tmp);
    }
    if (ok) done++;
  }
  g_free(words);
  if (ok && folder && !tl_file_rename(tmpdir, path)) {
    int e = errno;
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': %s", path, g_strerror(e));
    ok = FALSE;
  }
  if (!ok) {
    /* nothing of a failed series stays */
    remove_all(folder ? written : names, done);
    if (folder) g_rmdir(tmpdir);
  }
  return ok;
}

/* --- the format table's entry (compute/dataset/tl-formats.c) --- */

/* The first file (by name) of a folder that starts like a DICOM Part 10 file; NULL if none
 * among the first TL_DICOM_MAX_FILES names. */
static char *first_dicom_file(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  char *best = NULL;
  const char *name;
  for (guint looked = 0; d && (name = g_dir_read_name(d)) && looked < TL_DICOM_MAX_FILES;
       looked++) {
    if (unsaved(name) || (best && strcmp(name, best) >= 0)) continue;
    g_autofree char *p = g_build_filename(dir, name, NULL);
    if (!g_file_test(p, G_FILE_TEST_IS_REGULAR)) continue;
    gsize n = 0;
    g_autofree guint8 *head = tl_format_read_head(p, &n, NULL);
    if (!head || n < 132 || memcmp(head + 128, "DICM", 4) != 0) continue;
    g_free(best);
    best = g_strdup(name);
  }
  if (!best) return NULL;
  char *p = g_build_filename(dir, best, NULL);
  g_free(best);
  return p;
}

/* A folder given for a series: its first DICOM file; else the path itself. */
static char *series_member(const char *path, GError **error) {
  if (!g_file_test(path, G_FILE_TEST_IS_DIR)) return g_strdup(path);
  char *p = first_dicom_file(path);
  if (!p)
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': a folder without DICOM files (none "
                "of its first %u names starts with a 128-byte preamble and 'DICM')", path,
                TL_DICOM_MAX_FILES);
  return p;
}

static guint dicom_probe(const char *path, const guint8 *head, gsize n) {
  /* Part 10 files: a 128-byte preamble, then "DICM" */
  if (n >= 132 && memcmp(head + 128, "DICM", 4) == 0) return TL_FORMAT_SURE;
  /* a folder (empty head) whose names include a DICOM file: only the names are looked at */
  if (n == 0 && g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    for (guint looked = 0; d && (name = g_dir_read_name(d)) && looked < TL_DICOM_MAX_FILES;
         looked++)
      if (is_dicom_name(name)) return TL_FORMAT_LIKELY;
    return 0;
  }
  return tl_format_path_has_extension(path, ".dcm .dicom .ima") ? TL_FORMAT_EXTENSION : 0;
}

static gboolean dicom_describe(const char *dir_or_file, GString *out, GError **error) {
  g_autofree char *path = series_member(dir_or_file, error);
  if (!path) return FALSE;
  TlDicomSlice s;
  if (!tl_file_check_input(path, "DICOM file", error) || !tl_dicom_read(path, FALSE, &s, error))
    return FALSE;
  g_autoptr(GPtrArray) files = series_files(path, &s, error);
  /* the file's strings quoted: a UID of bytes that are not UTF-8 reached the description
   * GTK shows (found by fuzz-info) */
  g_autofree char *modality = tl_text_quote(s.modality, -1, 40);
  g_autofree char *uid = tl_text_quote(s.series_uid, -1, 80);
  g_string_append_printf(out, "modality: %s\nslice: %u columns x %u rows of %g x %g mm\n"
                         "rescale: slope %g, intercept %g\nslice thickness: %g mm\n",
                         s.modality[0] ? modality : "(none)", s.cols, s.rows, s.spacing[1],
                         s.spacing[0], s.slope, s.intercept, s.thickness);
  if (s.has_position)
    g_string_append_printf(out, "position (LPS): %g %g %g mm\n", s.position[0], s.position[1],
                           s.position[2]);
  if (s.has_orientation)
    g_string_append_printf(out, "orientation: %g %g %g / %g %g %g\n", s.orientation[0],
                           s.orientation[1], s.orientation[2], s.orientation[3],
                           s.orientation[4], s.orientation[5]);
  g_string_append_printf(out, "series: %s, %u file(s) of it in the folder\n",
                         s.series_uid[0] ? uid : "(no SeriesInstanceUID)", files->len);
  return TRUE;
}

static gpointer dicom_load(const char *dir_or_file, GError **error) {
  g_autofree char *path = series_member(dir_or_file, error);
  return path ? tl_dicom_load_series(path, error) : NULL;
}

static gboolean save_with(TlDicomIod iod, gconstpointer image, const char *path, GError **error) {
  TlDicomSaveOptions opt = {.iod = iod};
  return tl_dicom_save_series(image, path, &opt, error);
}
static gboolean dicom_save(gconstpointer image, const char *path, GError **error) {
  return save_with(TL_DICOM_SECONDARY_CAPTURE, image, path, error);
}
static gboolean dicom_save_pet(gconstpointer image, const char *path, GError **error) {
  return save_with(TL_DICOM_PET, image, path, error);
}
static gboolean dicom_save_ct(gconstpointer image, const char *path, GError **error) {
  return save_with(TL_DICOM_CT, image, path, error);
}

const TlFormatClass tl_format_dicom = {
    .name = "dicom",
    .summary = "DICOM image series (DCMTK; one file or its folder opens the series; rescaled to "
               "HU for CT; writes Secondary Capture, a file per slice, into OUT/ or OUT_NNNN.dcm)",
    .kind = TL_DATA_IMAGE,
    .extensions = ".dcm .dicom .ima",
    .probe = dicom_probe,
    .describe = dicom_describe,
    .load = dicom_load,
    .save = dicom_save,
};

/* Write-only variants for values the caller vouches for (convert --format dicom-pet). */
const TlFormatClass tl_format_dicom_pet = {
    .name = "dicom-pet",
    .summary = "DICOM PET Image series (Modality PT, Units NONE), written as 'dicom'",
    .kind = TL_DATA_IMAGE,
    .extensions = ".dcm .dicom .ima",
    .save = dicom_save_pet,
};

const TlFormatClass tl_format_dicom_ct = {
    .name = "dicom-ct",
    .summary = "DICOM CT Image series (Modality CT, values in Hounsfield units), written as 'dicom'",
    .kind = TL_DATA_IMAGE,
    .extensions = ".dcm .dicom .ima",
    .save = dicom_save_ct,
};
