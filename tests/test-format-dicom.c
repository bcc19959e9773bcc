/* SPDX-License-Identifier: GPL-3.0-or-later */
/* DICOM reading (image/tl-dicom.h, tl-format-dicom.c) against pydicom: tests/dicom-ref.py,
 * run with Debian's /usr/bin/python3, reads pydicom's own CT_small.dcm (a real GE CT slice)
 * and writes the values it finds, a shuffled series and hostile files; this test reads the
 * same files through the format table and compares every value.
 * Writing: a known image (known_image(), an analytic formula) saved as Secondary Capture, PET
 * and CT series reads back through Tomolab's reader (the grid bit for bit, the values within
 * half a quantisation step), and tests/dicom-check.py checks the files with pydicom against
 * the same formula recomputed there; bad images and targets give GErrors and leave nothing. */
#include "tomolab-compute.h"
#include "dataset/tl-dataset.h"
#include "dataset/tl-formats.h"
#include "image/tl-dicom.h"
#include "image/tl-image.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static const char *script, *check_script, *cli;
static char *dir;
static const char *py;

static char *path_in(const char *rel) { return g_build_filename(dir, rel, NULL); }

/* ref.txt: the source path, "rows cols spacing_row spacing_col", then the values row by row */
typedef struct {
  char *src;
  guint rows, cols;
  double sp[2];
  double *hu;
} Ref;

static void ref_load(Ref *r) {
  g_autofree char *p = path_in("ref.txt"), *text = NULL;
  g_assert_true(g_file_get_contents(p, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  r->src = g_strdup(lines[0]);
  g_assert_cmpint(sscanf(lines[1], "%u %u %lf %lf", &r->rows, &r->cols, &r->sp[0], &r->sp[1]),
                  ==, 4);
  r->hu = g_new(double, r->rows * r->cols);
  for (guint i = 0; i < r->rows * r->cols; i++) {
    g_assert_nonnull(lines[2 + i]);
    r->hu[i] = g_ascii_strtod(lines[2 + i], NULL);
  }
}

static void test_ct_small(void) {
  Ref r;
  ref_load(&r);
  g_assert_cmpuint(r.rows, ==, 128);
  g_autoptr(GError) error = NULL;
  const TlFormatClass *f = tl_format_detect(r.src, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "dicom");
  TlDataKind kind;
  g_autoptr(TlImage) img = tl_format_load_any(r.src, &kind, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(kind, ==, TL_DATA_IMAGE);
  g_assert_cmpuint(img->grid.dims[0], ==, r.cols);
  g_assert_cmpuint(img->grid.dims[1], ==, r.rows);
  g_assert_cmpuint(img->grid.dims[2], ==, 1);
  /* PixelSpacing: row spacing (y), column spacing (x); one slice: SliceThickness 5 mm */
  g_assert_cmpfloat_with_epsilon(img->grid.voxel_mm[0], r.sp[1], 1e-6);
  g_assert_cmpfloat_with_epsilon(img->grid.voxel_mm[1], r.sp[0], 1e-6);
  g_assert_cmpfloat_with_epsilon(img->grid.voxel_mm[2], 5.0, 1e-6);
  /* orientation 1 0 0 / 0 1 0 in LPS: columns run to -x, rows to -y of the RAS scanner
   * frame, so voxel (x, y) is pydicom's [rows - 1 - y][cols - 1 - x] */
  double maxdiff = 0, lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
  for (guint y = 0; y < r.rows; y++)
    for (guint x = 0; x < r.cols; x++) {
      double ref = r.hu[(r.rows - 1 - y) * r.cols + (r.cols - 1 - x)];
      maxdiff = MAX(maxdiff, fabs(img->data[y * r.cols + x] - ref));
      lo = MIN(lo, ref), hi = MAX(hi, ref);
    }
  g_assert_cmpfloat(maxdiff, ==, 0);
  g_assert_cmpfloat(lo, <, -800); /* Hounsfield units: the -1024 intercept applied */
  g_assert_cmpfloat(hi, >, 1000);
  /* origin: the RAS centre of the voxel landing at (0, 0, 0): pydicom's last column/row */
  g_assert_cmpfloat_with_epsilon(img->grid.origin_mm[0], 158.135803 - 127 * r.sp[1], 1e-3);
  g_assert_cmpfloat_with_epsilon(img->grid.origin_mm[1], 179.035797 - 127 * r.sp[0], 1e-3);
  g_assert_cmpfloat_with_epsilon(img->grid.origin_mm[2], -75.7, 1e-3);
  GString *info = g_string_new(NULL);
  g_assert_true(tl_format_describe_file(r.src, info, &error));
  g_assert_nonnull(strstr(info->str, "intercept -1024"));
  g_string_free(info, TRUE);
  g_free(r.src);
  g_free(r.hu);
}

static void test_series(void) {
  Ref r;
  ref_load(&r);
  g_autofree char *p = path_in("series/a.dcm");
  g_autoptr(GError) error = NULL;
  g_autoptr(TlImage) img = tl_format_load_kind(p, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(img->grid.dims[2], ==, 3);
  g_assert_cmpfloat_with_epsilon(img->grid.voxel_mm[2], 2.5, 1e-6);
  g_assert_cmpfloat_with_epsilon(img->grid.origin_mm[2], -75.7, 1e-3);
  /* slice k (ordered by position, not by file name) holds HU + 100 k */
  for (guint z = 0; z < 3; z++)
    for (guint y = 0; y < r.rows; y += 7)
      for (guint x = 0; x < r.cols; x += 5) {
        double ref = r.hu[(r.rows - 1 - y) * r.cols + (r.cols - 1 - x)] + 100.0 * z;
        g_assert_cmpfloat(img->data[x + r.cols * (y + r.rows * z)], ==, ref);
      }
  g_free(r.src);
  g_free(r.hu);
}

/* Each hostile file: a GError naming the file, the key and the value. */
static void hostile(const char *rel, const char *key, const char *value) {
  g_autofree char *p = path_in(rel);
  g_autoptr(GError) error = NULL;
  gpointer img = tl_format_load_kind(p, TL_DATA_IMAGE, &error);
  g_assert_null(img);
  g_assert_nonnull(error);
  g_test_message("%s: %s", rel, error->message);
  g_assert_nonnull(strstr(error->message, dir));
  g_assert_nonnull(strstr(error->message, key));
  if (value) g_assert_nonnull(strstr(error->message, value));
  /* `info` runs the same loader (issue 27: it described such files and said OK) */
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GError) info_error = NULL;
  g_assert_false(tl_dataset_info(p, FALSE, out, &info_error));
  g_assert_nonnull(info_error);
  g_assert_nonnull(strstr(info_error->message, error->message));
}

/* A SeriesInstanceUID (0020,000E; explicit VR "UI" in CT_small.dcm) holding a byte that is not
 * UTF-8: the description quotes it (fuzz-info found it printed raw, unfit for GTK). */
static void test_describe_quotes(void) {
  Ref r;
  ref_load(&r);
  g_autofree char *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(r.src, &bytes, &n, NULL));
  const char tag[] = {0x20, 0x00, 0x0e, 0x00, 'U', 'I'};
  char *at = NULL;
  for (gsize i = 0; !at && i + sizeof tag + 2 < n; i++)
    if (memcmp(bytes + i, tag, sizeof tag) == 0) at = bytes + i;
  g_assert_nonnull(at);
  g_assert_cmpuint((guint8)at[6] | (guint8)at[7] << 8, >, 4); /* the value's length */
  at[8 + 3] = (char)0xca;
  g_autofree char *p = path_in("baduid.dcm");
  g_assert_true(g_file_set_contents(p, bytes, (gssize)n, NULL));
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_format_describe_file(p, out, &error));
  g_assert_no_error(error);
  g_assert_true(g_utf8_validate(out->str, -1, NULL));
  g_assert_nonnull(strstr(out->str, "\\xca"));
  g_free(r.src);
  g_free(r.hu);
}

static void test_hostile(void) {
  hostile("nopixels/nopixels.dcm", "PixelData", NULL);
  hostile("nanslope/nanslope.dcm", "RescaleSlope", "NaN");
  hostile("sizes/a.dcm", "Rows, Columns", "64 x 64");
  hostile("gaps/s0.dcm", "ImagePositionPatient", "2 mm");
  hostile("truncated/half.dcm", "DICOM", "premature end");
  /* issue 27: pixel data cut short, an oblique slice, two slices at one position */
  hostile("short/short.dcm", "PixelData", NULL);
  hostile("oblique/oblique.dcm", "ImageOrientationPatient", NULL);
  hostile("duplicate/a.dcm", "ImagePositionPatient", NULL);
}

/* --- writing --- */

/* The known image of tests/dicom-check.py's known(): same grid, same formula. */
static TlImage *known_image(const char *kind) {
  TlImageGrid g = {{7, 5, 4}, {1.25f, 0.8f, 2.5f}, {-3.5f, 10.25f, -20.1f}};
  TlImage *im = tl_image_new(&g);
  for (guint z = 0; z < 4; z++)
    for (guint y = 0; y < 5; y++)
      for (guint x = 0; x < 7; x++) {
        double s = sin(0.9 * x + 0.5 * y + 0.3 * z), v;
        if (strcmp(kind, "sc") == 0)
          v = 1000.5 * s - 300.0 * z + 0.25;
        else if (strcmp(kind, "pet") == 0)
          v = 5000.0 * (1.0 + s) + 10.0 * z;
        else
          v = floor(1500.0 * s + 0.5) - 200.0 * z;
        im->data[x + 7 * (y + 5 * z)] = (float)v;
      }
  return im;
}

static int by_name(gconstpointer x, gconstpointer y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The sorted paths of the regular files in `folder` whose names start with `prefix`. */
static GPtrArray *files_in(const char *folder, const char *prefix) {
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) d = g_dir_open(folder, 0, NULL);
  g_assert_nonnull(d);
  for (const char *n; (n = g_dir_read_name(d));)
    if (g_str_has_prefix(n, prefix)) g_ptr_array_add(a, g_build_filename(folder, n, NULL));
  g_ptr_array_sort(a, by_name);
  return a;
}

/* dicom-check.py KIND FILES: pydicom against the formula. */
static void pydicom_check(const char *kind, GPtrArray *files) {
  g_autoptr(GPtrArray) args = g_ptr_array_new();
  g_ptr_array_add(args, (char *)py);
  g_ptr_array_add(args, (char *)check_script);
  g_ptr_array_add(args, (char *)kind);
  for (guint i = 0; i < files->len; i++) g_ptr_array_add(args, files->pdata[i]);
  g_ptr_array_add(args, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)args->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                             &out, &err, &status, &error));
  g_test_message("dicom-check.py %s: %s%s", kind, out, err);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  g_assert_true(g_str_has_prefix(out, "ok 4 files"));
}

/* Tomolab's reader: the grid bit for bit; each value within half the step the slice's range
 * allows over 16 bits (PET: intercept 0, so its maximum over 65535; CT integers: exact). */
static void read_back(const char *kind, const char *open, const TlImage *want) {
  g_autoptr(GError) error = NULL;
  const TlFormatClass *f = tl_format_detect(open, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "dicom");
  g_autoptr(TlImage) got = tl_format_load_kind(open, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_assert_true(tl_image_grid_equal(&got->grid, &want->grid));
  gsize per = 7 * 5;
  for (guint z = 0; z < 4; z++) {
    const float *w = want->data + z * per, *g = got->data + z * per;
    double lo = w[0], hi = w[0], worst = 0;
    for (gsize i = 0; i < per; i++) lo = MIN(lo, w[i]), hi = MAX(hi, w[i]);
    double step = strcmp(kind, "ct") == 0 ? 0 : strcmp(kind, "pet") == 0 ? hi / 65535
                                                                        : (hi - lo) / 65535;
    for (gsize i = 0; i < per; i++) {
      double e = fabs((double)g[i] - w[i]);
      worst = MAX(worst, e);
      g_assert_cmpfloat(e, <=, step / 2 * (1 + 1e-6) + 1e-7 * fabs(w[i]));
    }
    g_test_message("%s slice %u: largest error %g, half step %g", kind, z, worst, step / 2);
  }
}

static void test_write_sc_folder(void) {
  g_autoptr(TlImage) im = known_image("sc");
  g_autofree char *out = path_in("w-sc");
  g_autoptr(GError) error = NULL;
  /* "dicom" writes Secondary Capture; a name without .dcm is a new folder */
  g_assert_true(tl_format_save(tl_format_find("dicom"), im, out, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) files = files_in(out, "");
  g_assert_cmpuint(files->len, ==, 4);
  g_assert_true(g_str_has_suffix(files->pdata[0], "/IM_0001.dcm"));
  read_back("sc", out, im);                /* the folder */
  read_back("sc", files->pdata[2], im);    /* any file of it */
  pydicom_check("sc", files);
}

static void test_write_pet_pattern(void) {
  g_autoptr(TlImage) im = known_image("pet");
  g_autofree char *folder = path_in("w-pet");
  g_assert_cmpint(g_mkdir(folder, 0755), ==, 0);
  g_autofree char *out = g_build_filename(folder, "pet_###.dcm", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_format_save(tl_format_find("dicom-pet"), im, out, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) files = files_in(folder, "");
  g_assert_cmpuint(files->len, ==, 4); /* no temp file left */
  g_assert_true(g_str_has_suffix(files->pdata[3], "/pet_004.dcm"));
  read_back("pet", files->pdata[0], im);
  pydicom_check("pet", files);
}

/* Through the C API: Units BQML when the caller states Bq/mL; a trailing '/' names the folder */
static void test_write_pet_bqml(void) {
  g_autoptr(TlImage) im = known_image("pet");
  g_autofree char *folder = path_in("w-bqml"), *out = g_strconcat(folder, "/", NULL);
  g_autoptr(GError) error = NULL;
  TlDicomSaveOptions opt = {.iod = TL_DICOM_PET, .bqml = TRUE, .description = "known"};
  g_assert_true(tl_dicom_save_series(im, out, &opt, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) files = files_in(folder, "");
  g_assert_cmpuint(files->len, ==, 4);
  read_back("pet", folder, im);
  pydicom_check("pet-bqml", files);
}

/* write -> read keeps the grid bit for bit: odd sizes, origins and voxel sizes, one slice
 * (its spacing from SliceThickness), two slices, long rows */
static void test_write_grids(void) {
  const TlImageGrid grids[] = {
      {{3, 2, 1}, {0.1f, 0.3f, 0.7f}, {123.456f, -0.001f, 1e-7f}},
      {{1, 1, 2}, {2.0f / 3.0f, 1.0f / 7.0f, 1.2345679f}, {-999.99f, 0.5f, -3.3333333f}},
      {{600, 3, 3}, {0.0417f, 4.0f, 0.999f}, {-12.5f, 17.25f, 1000.125f}},
      {{5, 4, 3}, {1.0f, 1.0f, 1.0f}, {0.0f, 0.0f, 0.0f}},
  };
  for (guint t = 0; t < G_N_ELEMENTS(grids); t++) {
    g_autoptr(TlImage) im = tl_image_new(&grids[t]);
    for (gsize i = 0; i < tl_image_grid_n_voxels(&grids[t]); i++)
      im->data[i] = (float)(i % 17) * 0.5f - 3.0f;
    g_autofree char *name = g_strdup_printf("w-grid%u.dcm", t);
    g_autofree char *folder = path_in(name);
    g_assert_cmpint(g_mkdir(folder, 0755), ==, 0);
    g_autofree char *out = g_build_filename(folder, "g.dcm", NULL);
    g_autoptr(GError) error = NULL;
    g_assert_true(tl_format_save(tl_format_find("dicom"), im, out, &error));
    g_assert_no_error(error);
    /* one slice, no '#': the name itself */
    g_autofree char *first = g_build_filename(folder, grids[t].dims[2] == 1 ? "g.dcm"
                                                                             : "g_0001.dcm",
                                              NULL);
    g_autoptr(TlImage) back = tl_format_load_kind(first, TL_DATA_IMAGE, &error);
    g_assert_no_error(error);
    g_autofree char *a = tl_image_grid_key(&im->grid), *b = tl_image_grid_key(&back->grid);
    g_test_message("%s -> %s", a, b);
    g_assert_cmpstr(a, ==, b);
    g_assert_true(tl_image_grid_equal(&im->grid, &back->grid));
    /* values: -3 .. 5 in steps of 0.5, not integers: the step is at most 8 / 65535 */
    for (gsize i = 0; i < tl_image_grid_n_voxels(&grids[t]); i++)
      g_assert_cmpfloat(fabs(back->data[i] - im->data[i]), <=, 8.0 / 65535 / 2 * 1.000001);
  }
}

static void test_write_ct_extension(void) {
  g_autoptr(TlImage) im = known_image("ct");
  g_autofree char *folder = path_in("w-ct");
  g_assert_cmpint(g_mkdir(folder, 0755), ==, 0);
  g_autofree char *out = g_build_filename(folder, "ct.dcm", NULL);
  g_autoptr(GError) error = NULL;
  /* by extension: .dcm is "dicom"; CT by name */
  const TlFormatClass *f = tl_format_for_output(out, TL_DATA_IMAGE, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "dicom");
  g_assert_true(tl_format_save(tl_format_find("dicom-ct"), im, out, &error));
  g_assert_no_error(error);
  g_autoptr(GPtrArray) files = files_in(folder, "");
  g_assert_cmpuint(files->len, ==, 4);
  g_assert_true(g_str_has_suffix(files->pdata[0], "/ct_0001.dcm"));
  read_back("ct", files->pdata[1], im);
  pydicom_check("ct", files);

  /* the same target again: refused, the files as they were (a series may be the input) */
  g_autofree char *before = NULL, *after = NULL;
  gsize n0 = 0, n1 = 0;
  g_assert_true(g_file_get_contents(files->pdata[0], &before, &n0, NULL));
  g_autoptr(TlImage) other = known_image("sc");
  g_assert_false(tl_format_save(tl_format_find("dicom"), other, out, &error));
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "ct_0001.dcm"));
  g_assert_nonnull(strstr(error->message, "exists"));
  g_clear_error(&error);
  g_assert_true(g_file_get_contents(files->pdata[0], &after, &n1, NULL));
  g_assert_true(n0 == n1 && memcmp(before, after, n0) == 0);
  g_autoptr(GPtrArray) still = files_in(folder, "");
  g_assert_cmpuint(still->len, ==, 4);
}

/* tomolab-cli convert IN OUT --format dicom: pydicom's 3-slice series into a new folder */
static void test_cli_convert(void) {
  g_autofree char *in = path_in("series/b.dcm"), *out = path_in("cli-out");
  const char *args[] = {cli, "convert", in, out, "--format", "dicom", NULL};
  g_autofree char *so = NULL, *se = NULL;
  int status = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)args, NULL, G_SPAWN_DEFAULT, NULL, NULL, &so, &se,
                             &status, &error));
  g_test_message("convert: %s", se);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  g_autoptr(TlImage) a = tl_format_load_kind(in, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) b = tl_format_load_kind(out, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_assert_true(tl_image_grid_equal(&a->grid, &b->grid));
  /* CT_small's values are integers within 16 bits: exact */
  for (gsize i = 0; i < tl_image_grid_n_voxels(&a->grid); i++)
    g_assert_cmpfloat(a->data[i], ==, b->data[i]);
  /* into the input's own folder: refused, nothing written */
  g_autofree char *series = path_in("series");
  const char *args2[] = {cli, "convert", in, series, "--format", "dicom", NULL};
  g_clear_pointer(&so, g_free);
  g_clear_pointer(&se, g_free);
  g_assert_true(g_spawn_sync(NULL, (char **)args2, NULL, G_SPAWN_DEFAULT, NULL, NULL, &so, &se,
                             &status, &error));
  g_assert_false(g_spawn_check_wait_status(status, NULL));
  g_test_message("convert into the input's folder: %s", se);
  g_autoptr(GPtrArray) left = files_in(series, "");
  g_assert_cmpuint(left->len, ==, 3);
}

/* Each bad image or target: FALSE, a GError naming the target, and `what`, nothing left. */
static void write_fails(const TlImage *im, const char *target, const char *what,
                        const char *what2) {
  g_autoptr(GError) error = NULL;
  g_assert_false(tl_format_save(tl_format_find("dicom"), im, target, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, target));
  g_assert_nonnull(strstr(error->message, what));
  if (what2) g_assert_nonnull(strstr(error->message, what2));
  g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS) &&
                 !g_file_test(target, G_FILE_TEST_IS_DIR));
}

static void test_write_hostile(void) {
  g_autoptr(TlImage) im = known_image("sc");
  g_autofree char *nan_dir = path_in("w-nan"), *big = path_in("w-big.dcm");
  im->data[1 + 7 * (2 + 5 * 3)] = NAN;
  write_fails(im, nan_dir, "(1, 2, 3)", "nan");
  g_assert_false(g_file_test(nan_dir, G_FILE_TEST_EXISTS));
  im->data[1 + 7 * (2 + 5 * 3)] = -INFINITY;
  write_fails(im, nan_dir, "(1, 2, 3)", "inf");
  im->data[1 + 7 * (2 + 5 * 3)] = 0;
  im->data[6] = 2e9f;
  write_fails(im, big, "(6, 0, 0)", "2e+09");
  im->data[6] = 0;
  /* a folder that holds files (here the input series): refused, untouched */
  g_autofree char *series = path_in("series");
  write_fails(im, series, "holds", NULL);
  g_autoptr(GPtrArray) left = files_in(series, "");
  g_assert_cmpuint(left->len, ==, 3);
  /* no parent folder */
  g_autofree char *orphan = path_in("no/such/folder");
  write_fails(im, orphan, "No such file", NULL);
  /* a temp folder left by nothing */
  g_autoptr(GPtrArray) all = files_in(dir, ".w-");
  g_assert_cmpuint(all->len, ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_assert_cmpint(argc, >=, 4);
  script = argv[1];
  check_script = argv[2];
  cli = argv[3];
  dir = g_dir_make_tmp("tl-dicom-XXXXXX", NULL);
  g_assert_nonnull(dir);
  /* the reference and the files, by pydicom under Debian's python (not pyenv's) */
  py = g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE) ? "/usr/bin/python3"
                                                                                : "python3";
  char *args[] = {(char *)py, (char *)script, dir, NULL};
  int status = 0;
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, args, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, &err,
                             &status, &error));
  if (!g_spawn_check_wait_status(status, NULL)) g_error("dicom-ref.py failed: %s", err);
  g_test_add_func("/format-dicom/ct-small-vs-pydicom", test_ct_small);
  g_test_add_func("/format-dicom/series-order-spacing", test_series);
  g_test_add_func("/format-dicom/hostile", test_hostile);
  g_test_add_func("/format-dicom/describe-quotes", test_describe_quotes);
  g_test_add_func("/format-dicom/write-sc-folder", test_write_sc_folder);
  g_test_add_func("/format-dicom/write-pet-pattern", test_write_pet_pattern);
  g_test_add_func("/format-dicom/write-pet-bqml", test_write_pet_bqml);
  g_test_add_func("/format-dicom/write-grids", test_write_grids);
  g_test_add_func("/format-dicom/write-ct-extension", test_write_ct_extension);
  g_test_add_func("/format-dicom/cli-convert", test_cli_convert);
  g_test_add_func("/format-dicom/write-hostile", test_write_hostile);
  int rc = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  (void)!system(rm);
  return rc;
}
