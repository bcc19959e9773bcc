/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Interfile images: STIR's own image (../shared/data/stir-image) read with its grid and values
 * (the values against an fread of the .v written here, not the reader); headers and data the
 * test writes from the Interfile 3.3 / STIR layout in every number format and byte order; the
 * writer's files read back bit for bit (and its .v read with fread); content detection; hostile
 * headers refused with a GError naming the file, the key and the value. */
#include "tomolab-compute.h"
#include "dataset/tl-formats.h"
#include "image/tl-interfile.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define STIR_HV "../shared/data/stir-image/test_image_3.hv"
#define STIR_V "../shared/data/stir-image/test_image_3.v"
#define MMR_HDR "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR"

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void write_file(const char *path, const void *data, gsize n) {
  g_autoptr(GError) e = NULL;
  g_assert_true(g_file_set_contents(path, data, (gssize)n, &e));
}

/* meson runs tests in the build folder; the shared data are found from the source root */
static char *shared(const char *rel) {
  const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
  return root ? g_build_filename(root, rel, NULL) : g_strdup(rel);
}

static void test_stir_image(void) {
  g_autofree char *hv = shared(STIR_HV), *v = shared(STIR_V);
  g_autoptr(GError) e = NULL;
  TlDataKind kind;
  const TlFormatClass *f = NULL;
  TlImage *im = tl_format_load_any(hv, &kind, &f, &e);
  g_assert_no_error(e);
  g_assert_cmpstr(f->name, ==, "interfile");
  g_assert_cmpint(kind, ==, TL_DATA_IMAGE);
  g_assert_cmpuint(im->grid.dims[0], ==, 97);
  g_assert_cmpuint(im->grid.dims[1], ==, 97);
  g_assert_cmpuint(im->grid.dims[2], ==, 31);
  g_assert_cmpfloat(im->grid.voxel_mm[0], ==, 3.1088f);
  g_assert_cmpfloat(im->grid.voxel_mm[1], ==, 3.1088f);
  g_assert_cmpfloat(im->grid.voxel_mm[2], ==, 3.375f);
  /* STIR's header names no unit: arbitrary units, an empty string (issue 27: the field was left
   * uninitialised; meson runs this test with MALLOC_PERTURB_ so garbage shows) */
  g_assert_cmpstr(im->unit, ==, "");
  g_assert_cmpstr(tl_image_unit(im), ==, "a.u.");
  /* no first pixel offset in STIR's header: centred, -(n-1)/2 voxels */
  g_assert_cmpfloat_with_epsilon(im->grid.origin_mm[0], -48 * 3.1088, 1e-3);
  g_assert_cmpfloat_with_epsilon(im->grid.origin_mm[2], -15 * 3.375, 1e-4);
  /* the values: the .v read here, little-endian float32 from offset 0 */
  FILE *fp = g_fopen(v, "rb");
  g_assert_nonnull(fp);
  gsize n = 97 * 97 * 31;
  guint8 *raw = g_malloc(n * 4);
  g_assert_cmpuint(fread(raw, 4, n, fp), ==, n);
  g_assert_cmpint(fgetc(fp), ==, EOF);
  fclose(fp);
  double sum = 0, mx = 0;
  for (gsize i = 0; i < n; i++) {
    guint32 u = (guint32)raw[4 * i] | (guint32)raw[4 * i + 1] << 8 |
                (guint32)raw[4 * i + 2] << 16 | (guint32)raw[4 * i + 3] << 24;
    float x;
    memcpy(&x, &u, 4);
    g_assert_cmpmem(&x, 4, &im->data[i], 4);
    sum += x, mx = MAX(mx, x);
  }
  g_assert_cmpfloat(mx, >, 0); /* a real image, not zeros */
  g_assert_cmpfloat(sum, >, 1000);
  /* converting to .hv writes STIR's bytes again */
  g_autofree char *out = tmp_path("stir-copy.hv"), *out_v = tmp_path("stir-copy.v");
  g_assert_true(tl_format_save(f, im, out, &e));
  g_autofree char *a = NULL;
  gsize na = 0;
  g_assert_true(g_file_get_contents(out_v, &a, &na, NULL));
  g_assert_cmpmem(a, na, raw, n * 4);
  g_free(raw);
  tl_image_free(im);
}

typedef struct {
  const char *format;
  int bytes;
  gboolean big;
  double scale; /* 0: no key */
} Variant;

static void put(guint8 *p, int bytes, gboolean big, const void *v) {
  for (int i = 0; i < bytes; i++) p[i] = ((const guint8 *)v)[(big != (G_BYTE_ORDER == G_BIG_ENDIAN)) ? bytes - 1 - i : i];
}

/* A 5 x 4 x 3 image with values i - 20 (signed) or i (unsigned) in each layout. */
static void test_number_formats(void) {
  static const Variant vs[] = {
      {"float", 4, FALSE, 0},           {"float", 4, TRUE, 0},
      {"float", 8, FALSE, 0},           {"long float", 8, TRUE, 2.5},
      {"signed integer", 2, TRUE, 0},   {"signed integer", 2, FALSE, 0.5},
      {"signed integer", 1, FALSE, 0},  {"signed integer", 4, TRUE, 0},
      {"unsigned integer", 1, FALSE, 0}, {"unsigned integer", 2, TRUE, 3},
      {"unsigned integer", 4, FALSE, 0},
  };
  guint nx = 5, ny = 4, nz = 3, n = nx * ny * nz;
  for (guint k = 0; k < G_N_ELEMENTS(vs); k++) {
    const Variant *v = &vs[k];
    g_autofree char *hv = tmp_path("nf.hv"), *dv = tmp_path("nf.data");
    g_autofree guint8 *buf = g_malloc0(16 + n * 8);
    float expect[60];
    for (guint i = 0; i < n; i++) {
      double x = v->format[0] == 'u' ? i : (double)i - 20;
      guint8 *p = buf + 16 + i * v->bytes; /* 16 bytes of offset */
      if (v->format[0] != 's' && v->format[0] != 'u') {
        if (v->bytes == 4) { float f = (float)(x * 0.25); put(p, 4, v->big, &f); x = f; }
        else { double d = x * 0.25; put(p, 8, v->big, &d); x = d; }
      } else if (v->bytes == 1) { gint8 c = (gint8)x; *p = (guint8)c; }
      else if (v->bytes == 2) { gint16 s = (gint16)x; put(p, 2, v->big, &s); }
      else { gint32 s = (gint32)x; put(p, 4, v->big, &s); }
      expect[i] = (float)(x * (v->scale ? v->scale : 1));
    }
    write_file(dv, buf, 16 + n * v->bytes);
    g_autofree char *scale = v->scale ? g_strdup_printf("image scaling factor[1] := %g\n", v->scale)
                                      : g_strdup("");
    g_autofree char *text = g_strdup_printf(
        "!INTERFILE  :=\n!imaging modality := PET\nname of data file := nf.data\n"
        "!GENERAL DATA :=\n!type of data := PET\nimagedata byte order := %s\n"
        "!PET data type := Image\n!number format := %s\n!number of bytes per pixel := %d\n"
        "number of dimensions := 3\nmatrix axis label [1] := x\n!matrix size [1] := %u\n"
        "scaling factor (mm/pixel) [1] := 2\nmatrix axis label [2] := y\n!matrix size [2] := %u\n"
        "scaling factor (mm/pixel) [2] := 3\nmatrix axis label [3] := z\n!matrix size [3] := %u\n"
        "scaling factor (mm/pixel) [3] := 4.5\nfirst pixel offset (mm) [1] := -7.5\n"
        "first pixel offset (mm) [2] := 1.25\nfirst pixel offset (mm) [3] := -3\n"
        "data offset in bytes[1] := 16\n%snumber of time frames := 1\n!END OF INTERFILE :=\n",
        v->big ? "BIGENDIAN" : "LITTLEENDIAN", v->format, v->bytes, nx, ny, nz, scale);
    write_file(hv, text, strlen(text));
    g_autoptr(GError) e = NULL;
    const TlFormatClass *f = tl_format_detect(hv, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(f->name, ==, "interfile");
    g_autoptr(TlImage) im = tl_image_load_interfile(hv, &e);
    g_assert_no_error(e);
    g_assert_cmpuint(im->grid.dims[0], ==, nx);
    g_assert_cmpuint(im->grid.dims[2], ==, nz);
    g_assert_cmpfloat(im->grid.voxel_mm[2], ==, 4.5f);
    g_assert_cmpfloat(im->grid.origin_mm[0], ==, -7.5f);
    g_assert_cmpfloat(im->grid.origin_mm[1], ==, 1.25f);
    g_assert_cmpfloat(im->grid.origin_mm[2], ==, -3.0f);
    for (guint i = 0; i < n; i++) g_assert_cmpfloat(im->data[i], ==, expect[i]);
    /* the writer: float32 little endian that reads back bit for bit */
    g_autofree char *out = tmp_path("nf-out.hv"), *out_v = tmp_path("nf-out.v");
    g_assert_true(tl_image_save_interfile(im, out, &e));
    g_assert_no_error(e);
    g_autofree char *bytes = NULL;
    gsize nb = 0;
    g_assert_true(g_file_get_contents(out_v, &bytes, &nb, NULL));
    g_assert_cmpuint(nb, ==, 4 * n);
    for (guint i = 0; i < n; i++) {
      float x;
      put((guint8 *)&x, 4, FALSE, bytes + 4 * i);
      g_assert_cmpmem(&x, 4, &expect[i], 4);
    }
    g_autoptr(TlImage) again = tl_image_load_interfile(out, &e);
    g_assert_no_error(e);
    g_assert_true(tl_image_grid_equal(&again->grid, &im->grid));
    g_assert_cmpmem(again->data, 4 * n, im->data, 4 * n);
  }
}

/* Random grids and values (negative zero, subnormals, large) through the writer and back. */
static void test_round_trip(void) {
  GRand *r = g_rand_new_with_seed(12);
  for (int k = 0; k < 5; k++) {
    TlImageGrid g = {{g_rand_int_range(r, 1, 9), g_rand_int_range(r, 1, 9), g_rand_int_range(r, 1, 9)},
                     {(float)g_rand_double_range(r, 0.1, 5), 1.0f / 3, 2.78f},
                     {(float)g_rand_double_range(r, -300, 300), -0.0f, 1e-7f}};
    g_autoptr(TlImage) im = tl_image_new(&g);
    guint64 n = tl_image_grid_n_voxels(&g);
    for (guint64 i = 0; i < n; i++) {
      guint32 u = g_rand_int(r);
      float x;
      memcpy(&x, &u, 4);
      im->data[i] = isfinite(x) ? x : -0.0f;
    }
    g_autofree char *p = tmp_path("rt.hv");
    g_autoptr(GError) e = NULL;
    g_assert_true(tl_image_save_interfile(im, p, &e));
    g_autoptr(TlImage) again = tl_image_load_interfile(p, &e);
    g_assert_no_error(e);
    g_assert_cmpmem(&again->grid, sizeof g, &im->grid, sizeof g);
    g_assert_cmpmem(again->data, 4 * n, im->data, 4 * n);
  }
  g_rand_free(r);
}

/* The mMR list-mode header and projection data are not images: the probe leaves them. */
static void test_probe(void) {
  g_autofree char *mmr = shared(MMR_HDR);
  gsize n = 0;
  g_autoptr(GError) e = NULL;
  g_autofree guint8 *head = tl_format_read_head(mmr, &n, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(tl_format_interfile.probe(mmr, head, n), ==, 0);
  const char *hs = "!INTERFILE  :=\nnumber of dimensions := 4\nmatrix axis label [4] := segment\n"
                   "matrix axis label [1] := tangential coordinate\n";
  g_assert_cmpuint(tl_format_interfile.probe("a.hv", (const guint8 *)hs, strlen(hs)), ==, 0);
  const char *nifti_like = "not interfile";
  g_assert_cmpuint(tl_format_interfile.probe("a.hv", (const guint8 *)nifti_like, 13), ==, 0);
}

/* --- hostile headers --- */

static const char *good_header =
    "!INTERFILE  :=\nname of data file := h.v\nimagedata byte order := LITTLEENDIAN\n"
    "!PET data type := Image\n!number format := float\n!number of bytes per pixel := 4\n"
    "number of dimensions := 3\n!matrix size [1] := 4\nscaling factor (mm/pixel) [1] := 2\n"
    "!matrix size [2] := 3\nscaling factor (mm/pixel) [2] := 2\n!matrix size [3] := 2\n"
    "scaling factor (mm/pixel) [3] := 2\ndata offset in bytes[1] := 0\n!END OF INTERFILE :=\n";

/* The good header with `from` replaced by `to` (or appended), data of n_data bytes; the load
 * fails and the message holds the file name and each of the NULL-terminated `needles`. */
static void expect_refused(const char *from, const char *to, gsize n_data, ...) {
  g_autofree char *hv = tmp_path("h.hv"), *v = tmp_path("h.v");
  GString *s = g_string_new(good_header);
  if (from) g_assert_cmpint(g_string_replace(s, from, to, 1), ==, 1);
  write_file(hv, s->str, s->len);
  g_string_free(s, TRUE);
  g_autofree guint8 *zeros = g_malloc0(MAX(n_data, 1));
  write_file(v, zeros, n_data);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load_interfile(hv, &e);
  g_assert_null(im);
  g_assert_nonnull(e);
  g_test_message("%s", e->message);
  g_assert_nonnull(strstr(e->message, hv));
  va_list ap;
  va_start(ap, n_data);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(e->message, needle)) g_error("'%s' not in: %s", needle, e->message);
  va_end(ap);
}

static void test_hostile(void) {
  gsize ok = 4 * 3 * 2 * 4;
  /* the good header loads */
  expect_refused(NULL, NULL, ok - 1, "96", "95", NULL); /* truncated data: sizes named */
  expect_refused("!matrix size [1] := 4", "!matrix size [1] := 1000000000", ok, "matrix size[1]",
                 "1000000000", NULL);
  expect_refused("!matrix size [3] := 2", "!matrix size [3] := 200000000", ok, "matrix size[3]",
                 "200000000", NULL);
  expect_refused("!matrix size [2] := 3", "!matrix size [2] := -3", ok, "matrix size[2]", "-3",
                 NULL);
  expect_refused("scaling factor (mm/pixel) [1] := 2", "scaling factor (mm/pixel) [1] := nan", ok,
                 "scaling factor (mm/pixel)[1]", "nan", NULL);
  expect_refused("scaling factor (mm/pixel) [2] := 2", "scaling factor (mm/pixel) [2] := -2", ok,
                 "scaling factor (mm/pixel)[2]", "-2", NULL);
  expect_refused("!END OF", "image scaling factor[1] := inf\n!END OF", ok,
                 "image scaling factor[1]", "inf", NULL);
  /* a zero factor would load every voxel as 0 (issue 27 item 4): refused, the key named */
  expect_refused("!END OF", "image scaling factor[1] := 0\n!END OF", ok,
                 "image scaling factor[1]", "0", NULL);
  expect_refused("!END OF", "data rescale slope := 0.0\n!END OF", ok, "data rescale slope", "0",
                 NULL);
  expect_refused("!number format := float", "!number format := complex", ok, "number format",
                 "complex", NULL);
  expect_refused("!number of bytes per pixel := 4", "!number of bytes per pixel := 3", ok,
                 "number of bytes per pixel", "3", NULL);
  expect_refused("LITTLEENDIAN", "MIDDLEENDIAN", ok, "imagedata byte order", "MIDDLEENDIAN", NULL);
  expect_refused("data offset in bytes[1] := 0", "data offset in bytes[1] := 4096", ok,
                 "4096", NULL);
  expect_refused("data offset in bytes[1] := 0", "data offset in bytes[1] := -8", ok,
                 "data offset in bytes[1]", "-8", NULL);
  expect_refused("number of dimensions := 3", "number of dimensions := 7", ok,
                 "number of dimensions", "7", NULL);
  /* inconsistent: 2 dimensions with a third size */
  expect_refused("number of dimensions := 3", "number of dimensions := 2", ok, "matrix size[3]",
                 NULL);
  expect_refused("!matrix size [1] := 4\n", "", ok, "matrix size[1]", "missing", NULL);
  expect_refused("name of data file := h.v", "name of data file := nowhere.v", ok, "nowhere.v",
                 NULL);
  expect_refused("!INTERFILE  :=\n", "", ok, "INTERFILE", NULL);
  /* a NaN voxel */
  {
    g_autofree char *hv = tmp_path("h.hv"), *v = tmp_path("h.v");
    write_file(hv, good_header, strlen(good_header));
    float data[24] = {0};
    data[7] = NAN;
    write_file(v, data, sizeof data);
    g_autoptr(GError) e = NULL;
    g_assert_null(tl_image_load_interfile(hv, &e));
    g_assert_nonnull(strstr(e->message, "value 7"));
  }
  /* bytes after "!END OF INTERFILE :=" are not read (keys there ignored, binary allowed) */
  {
    g_autofree char *hv = tmp_path("h.hv"), *v = tmp_path("h.v");
    GString *t = g_string_new(good_header);
    g_string_append(t, "!matrix size [1] := 999\n");
    g_string_append_len(t, "\x01\xff\x00\x7f", 4);
    write_file(hv, t->str, t->len);
    g_string_free(t, TRUE);
    float data[24] = {0};
    data[23] = 5;
    write_file(v, data, sizeof data);
    g_autoptr(GError) e = NULL;
    g_autoptr(TlImage) im = tl_image_load_interfile(hv, &e);
    g_assert_no_error(e);
    g_assert_cmpuint(im->grid.dims[0], ==, 4);
    g_assert_cmpfloat(im->data[23], ==, 5);
  }
  /* binary garbage as a header */
  {
    g_autofree char *hv = tmp_path("g.hv");
    guint8 junk[64];
    for (int i = 0; i < 64; i++) junk[i] = (guint8)(i * 37 + 1);
    write_file(hv, junk, sizeof junk);
    g_autoptr(GError) e = NULL;
    g_assert_null(tl_image_load_interfile(hv, &e));
    g_assert_true(g_utf8_validate(e->message, -1, NULL));
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("tl-interfile-XXXXXX", NULL);
  g_test_add_func("/format/interfile/stir-image", test_stir_image);
  g_test_add_func("/format/interfile/number-formats", test_number_formats);
  g_test_add_func("/format/interfile/round-trip", test_round_trip);
  g_test_add_func("/format/interfile/probe", test_probe);
  g_test_add_func("/format/interfile/hostile", test_hostile);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  return rc;
}
