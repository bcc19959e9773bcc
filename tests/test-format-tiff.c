/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TIFF stacks of projections (ct/tl-format-tiff-stack.c): the TIFFs are written here with
 * libtiff (the library, not Tomolab's reader) and the .tlgeom sidecar as text from
 * docs/formats.md; values, normalisation and geometry against values computed here. */
#include "tomolab-compute.h"
#include "dataset/tl-formats.h"
#include "ct/tl-ct-formats.h"
#include <math.h>
#include <string.h>
#include <tiffio.h>

static char *dir;
enum { W = 6, H = 3, N = 4 };

/* pages x H x W; kind 0 = float32, 1 = uint16; value(page, i) */
static char *write_tiff(const char *name, guint pages, guint w, guint h, int kind,
                        double (*value)(guint, guint)) {
  char *path = g_build_filename(dir, name, NULL);
  TIFF *t = TIFFOpen(path, "w");
  g_assert_nonnull(t);
  for (guint p = 0; p < pages; p++) {
    guint pw = (p == 1 && w == 0) ? W + 1 : (w ? w : W); /* w = 0: page 1 has another width */
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, pw);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, kind == 0 ? 32 : 16);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, kind == 0 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 1);
    for (guint r = 0; r < h; r++) {
      float f[16];
      guint16 u[16];
      for (guint x = 0; x < pw; x++) {
        double v = value(p, r * pw + x);
        f[x] = (float)v;
        u[x] = (guint16)v;
      }
      g_assert_cmpint(TIFFWriteScanline(t, kind == 0 ? (void *)f : (void *)u, r, 0), ==, 1);
    }
    g_assert_true(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
  return path;
}

static void write_side(const char *tiff, const char *text) {
  g_autofree char *p = g_strconcat(tiff, ".tlgeom", NULL);
  g_assert_true(g_file_set_contents(p, text, -1, NULL));
}

static double li(guint p, guint i) { return 0.1 * p + 0.01 * i; }
static double counts(guint p, guint i) { return round(100 + (900.0 + i) * exp(-li(p, i))); }
static double flat(guint p, guint i) { return 1000.0 + i + (p ? 2 : 0); } /* mean 1001 + i */
static double dark(guint p, guint i) { (void)i; return p ? 120.0 : 80.0; } /* mean 100 */
static double nan_at_5(guint p, guint i) { return p == 2 && i == 5 ? NAN : li(p, i); }

static void test_line_integrals(void) {
  g_autofree char *p = write_tiff("li.tif", N, W, H, 0, li);
  write_side(p, "tomolab-tiff-stack = 1\nbeam = parallel\nangles = 0 180\npixel_mm = 0.5 2\n"
                "centre_u = 2\nvalues = line-integrals\n");
  g_autoptr(GError) error = NULL;
  const TlFormatClass *f = tl_format_detect(p, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "tiff-stack");
  g_autoptr(TlCtData) d = tl_format_load_kind(p, TL_DATA_CT, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(d->geometry->n_views, ==, N);
  g_assert_cmpuint(d->geometry->det_u, ==, W);
  g_assert_cmpuint(d->geometry->det_v, ==, H);
  for (guint k = 0; k < N; k++)
    for (guint i = 0; i < W * H; i++)
      g_assert_cmpfloat_with_epsilon(d->proj[k * W * H + i], li(k, i), 1e-6);
  /* view k at 45 k deg; u = e_u.X / 0.5 + 2, v = z / 2 + 1 */
  double x[3] = {0.3, -0.4, 1.0};
  for (guint k = 0; k < N; k++) {
    double t = k * G_PI / 4, u, v;
    tl_ct_geometry_project(d->geometry, k, x, &u, &v);
    g_assert_cmpfloat_with_epsilon(u, (-sin(t) * x[0] + cos(t) * x[1]) / 0.5 + 2, 1e-9);
    g_assert_cmpfloat_with_epsilon(v, x[2] / 2 + 1, 1e-9);
  }
}

static void test_counts(void) {
  g_autofree char *p = write_tiff("c.tif", N, W, H, 1, counts);
  g_autofree char *fl = write_tiff("flat.tif", 2, W, H, 1, flat);
  g_autofree char *dk = write_tiff("dark.tif", 2, W, H, 1, dark);
  write_side(p, "tomolab-tiff-stack = 1\nangles = 0 180\npixel_mm = 1 1\nvalues = counts\n"
                "flat = flat.tif\ndark = dark.tif\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(TlCtData) d = tl_format_load_kind(p, TL_DATA_CT, &error);
  g_assert_no_error(error);
  for (guint k = 0; k < N; k++)
    for (guint i = 0; i < W * H; i++) {
      double ref = -log((counts(k, i) - 100) / (1001.0 + i - 100));
      g_assert_cmpfloat_with_epsilon(d->proj[k * W * H + i], ref, 1e-5);
    }
}

static void hostile(const char *tiff, const char *side, const char *key, const char *value) {
  if (side) write_side(tiff, side);
  g_autoptr(GError) error = NULL;
  TlCtData *d = tl_ct_tiff_stack_load(tiff, &error);
  if (d) tl_ct_data_free(d);
  g_assert_null(d);
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, tiff));
  if (key) g_assert_nonnull(strstr(error->message, key));
  if (value) g_assert_nonnull(strstr(error->message, value));
}

static void test_hostile(void) {
  g_autofree char *p = write_tiff("h.tif", N, W, H, 0, li);
  const char *head = "tomolab-tiff-stack = 1\nvalues = line-integrals\n";
  g_autofree char *s1 = g_strconcat(head, "angles = 0 180\n", NULL);
  hostile(p, s1, "pixel_mm", "missing");
  g_autofree char *s2 = g_strconcat(head, "angles = 0 180\npixel_mm = nan 1\n", NULL);
  hostile(p, s2, "pixel_mm", "nan");
  g_autofree char *s3 = g_strconcat(head, "angles = 0 180\npixel_mm = -1 1\n", NULL);
  hostile(p, s3, "pixel_mm", "-1");
  g_autofree char *s4 = g_strconcat(head, "angles = 0 180\npixel_mm = 1 1\ncolour = red\n", NULL);
  hostile(p, s4, "colour", "red");
  g_autofree char *s5 = g_strconcat(head, "angles = 0 0\npixel_mm = 1 1\n", NULL);
  hostile(p, s5, "angles", "0 0");
  hostile(p, "tomolab-tiff-stack = 1\nangles = 0 180\npixel_mm = 1 1\n", "flat", "missing");
  hostile(p, "tomolab-tiff-stack = 1\nangles = 0 180\npixel_mm = 1 1\nflat = ../x.tif\n", "flat",
          "../x.tif");
  hostile(p, "tomolab-tiff-stack = 1\nbeam = cone\nangles = 0 360\npixel_mm = 1 1\n"
             "sid_mm = 500\nvalues = line-integrals\n", "sdd_mm", "missing");
  g_autofree char *good = g_strconcat(head, "angles = 0 180\npixel_mm = 1 1\n", NULL);
  /* pages of different sizes; a NaN pixel; truncated; no sidecar */
  g_autofree char *q = write_tiff("sizes.tif", N, 0, H, 0, li);
  hostile(q, good, "ImageWidth x ImageLength", "7 x 3");
  g_autofree char *r = write_tiff("nan.tif", N, W, H, 0, nan_at_5);
  hostile(r, good, "pixel", "nan");
  g_autofree char *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(p, &bytes, &n, NULL));
  g_autofree char *cut = g_build_filename(dir, "cut.tif", NULL);
  g_assert_true(g_file_set_contents(cut, bytes, (gssize)(n / 3), NULL));
  hostile(cut, good, NULL, NULL);
  g_autofree char *lone = write_tiff("lone.tif", 1, W, H, 0, li);
  hostile(lone, NULL, "sidecar", "lone.tif.tlgeom");
}

int main(int argc, char **argv) {
  /* scripts/fuzz.sh: --write-seeds DIR writes small stacks (float32 and uint16, 1 and 4 pages)
   * as fuzz-tiff's seeds, by libtiff as above */
  if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
    dir = g_strdup(argv[2]);
    g_free(write_tiff("f32.tif", N, W, H, 0, li));
    g_free(write_tiff("u16.tif", 1, W, H, 1, counts));
    return 0;
  }
  g_test_init(&argc, &argv, NULL);
  dir = g_dir_make_tmp("tl-tiff-XXXXXX", NULL);
  g_assert_nonnull(dir);
  g_test_add_func("/format-tiff/line-integrals", test_line_integrals);
  g_test_add_func("/format-tiff/counts-flat-dark", test_counts);
  g_test_add_func("/format-tiff/hostile", test_hostile);
  int rc = g_test_run();
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  (void)!system(rm);
  return rc;
}
