/* DICOM reading (image/tl-dicom.h, tl-format-dicom.c) against pydicom: tests/dicom-ref.py,
 * run with Debian's /usr/bin/python3, reads pydicom's own CT_small.dcm (a real GE CT slice)
 * and writes the values it finds, a shuffled series and hostile files; this test reads the
 * same files through the format table and compares every value. */
#include "tomolab-compute.h"
#include "tl-formats.h"
#include "image/tl-dicom.h"
#include "image/tl-image.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static const char *script;
static char *dir;

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
}

static void test_hostile(void) {
  hostile("nopixels/nopixels.dcm", "PixelData", NULL);
  hostile("nanslope/nanslope.dcm", "RescaleSlope", "NaN");
  hostile("sizes/a.dcm", "Rows, Columns", "64 x 64");
  hostile("gaps/s0.dcm", "ImagePositionPatient", "2 mm");
  hostile("truncated/half.dcm", "DICOM", "premature end");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_assert_cmpint(argc, >=, 2);
  script = argv[1];
  dir = g_dir_make_tmp("tl-dicom-XXXXXX", NULL);
  g_assert_nonnull(dir);
  /* the reference and the files, by pydicom under Debian's python (not pyenv's) */
  const char *py = g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE) ? "/usr/bin/python3"
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
  int rc = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  (void)!system(rm);
  return rc;
}
