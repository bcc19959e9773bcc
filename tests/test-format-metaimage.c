/* SPDX-License-Identifier: GPL-3.0-or-later */
/* MetaImage: .mha / .mhd files the test writes from ITK's MetaIO layout (every element type,
 * both byte orders, HeaderSize, zlib-compressed data compressed here with zlib), read with the
 * expected grid and values; the writer's files read back bit for bit and its .raw read with
 * fread; STIR's real image converted to .mha and back unchanged; hostile headers refused with
 * a GError naming the file, the key and the value. */
#include "tomolab-compute.h"
#include "dataset/tl-formats.h"
#include "image/tl-metaimage.h"
#include "image/tl-interfile.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

static char *tmpdir;
static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static void write_file(const char *path, const void *data, gsize n) {
  g_assert_true(g_file_set_contents(path, data, (gssize)n, NULL));
}

static void put(guint8 *p, int bytes, gboolean big, const void *v) {
  for (int i = 0; i < bytes; i++)
    p[i] = ((const guint8 *)v)[(big != (G_BYTE_ORDER == G_BIG_ENDIAN)) ? bytes - 1 - i : i];
}

typedef struct {
  const char *type;
  int bytes;
  gboolean big, compressed, local;
  int header_size; /* -2: no key */
} Variant;

static void check_writer(const TlImage *im) {
  g_autoptr(GError) e = NULL;
  guint64 n = tl_image_grid_n_voxels(&im->grid);
  for (int mha = 0; mha < 2; mha++) {
    g_autofree char *p = tmp_path(mha ? "w.mha" : "w.mhd");
    g_assert_true(tl_image_save_metaimage(im, p, &e));
    g_assert_no_error(e);
    const TlFormatClass *f = tl_format_detect(p, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(f->name, ==, "metaimage");
    g_autoptr(TlImage) again = tl_image_load_metaimage(p, &e);
    g_assert_no_error(e);
    g_assert_cmpmem(&again->grid, sizeof again->grid, &im->grid, sizeof im->grid);
    g_assert_cmpmem(again->data, 4 * n, im->data, 4 * n);
    /* the data bytes: little-endian float32 at the end of the file */
    g_autofree char *raw_path = mha ? g_strdup(p) : tmp_path("w.raw");
    g_autofree char *bytes = NULL;
    gsize nb = 0;
    g_assert_true(g_file_get_contents(raw_path, &bytes, &nb, NULL));
    g_assert_cmpuint(nb, >=, 4 * n);
    const char *d = bytes + nb - 4 * n;
    for (guint64 i = 0; i < n; i++) {
      float x;
      put((guint8 *)&x, 4, FALSE, d + 4 * i);
      g_assert_cmpmem(&x, 4, &im->data[i], 4);
    }
  }
}

static void test_layouts(void) {
  static const Variant vs[] = {
      {"MET_FLOAT", 4, FALSE, FALSE, TRUE, -2},  {"MET_FLOAT", 4, TRUE, FALSE, FALSE, -2},
      {"MET_DOUBLE", 8, FALSE, TRUE, TRUE, -2},  {"MET_SHORT", 2, TRUE, FALSE, FALSE, 10},
      {"MET_USHORT", 2, FALSE, TRUE, FALSE, -2}, {"MET_UCHAR", 1, FALSE, FALSE, FALSE, -1},
      {"MET_CHAR", 1, FALSE, FALSE, TRUE, -2},   {"MET_INT", 4, TRUE, FALSE, FALSE, -2},
      {"MET_UINT", 4, FALSE, TRUE, TRUE, -2},
  };
  guint nx = 4, ny = 3, nz = 5, n = nx * ny * nz;
  for (guint k = 0; k < G_N_ELEMENTS(vs); k++) {
    const Variant *v = &vs[k];
    gboolean sgn = !strstr(v->type, "_U");
    g_autofree guint8 *raw = g_malloc0(n * 8);
    float expect[60];
    for (guint i = 0; i < n; i++) {
      double x = sgn ? (double)i - 30 : i;
      guint8 *p = raw + i * v->bytes;
      if (strstr(v->type, "FLOAT")) { float f = (float)(x / 8); put(p, 4, v->big, &f); x = f; }
      else if (strstr(v->type, "DOUBLE")) { double d = x / 3; put(p, 8, v->big, &d); x = d; }
      else if (v->bytes == 1) *p = (guint8)(gint8)x;
      else if (v->bytes == 2) { gint16 s = (gint16)x; put(p, 2, v->big, &s); }
      else { gint32 s = (gint32)x; put(p, 4, v->big, &s); }
      expect[i] = (float)x;
    }
    gsize stored = n * v->bytes;
    g_autofree guint8 *packed = NULL;
    if (v->compressed) {
      uLongf len = compressBound(stored);
      packed = g_malloc(len);
      g_assert_cmpint(compress(packed, &len, raw, stored), ==, Z_OK);
      stored = len;
    }
    const guint8 *payload = v->compressed ? packed : raw;
    g_autofree char *comp = v->compressed
        ? g_strdup_printf("CompressedData = True\nCompressedDataSize = %" G_GSIZE_FORMAT "\n", stored)
        : g_strdup("CompressedData = False\n");
    g_autofree char *hs = v->header_size > -2 ? g_strdup_printf("HeaderSize = %d\n", v->header_size)
                                              : g_strdup("");
    const char *dfile = v->compressed ? "m.zraw" : "m.raw";
    g_autofree char *header = g_strdup_printf(
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = %s\n%s"
        "TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = -10 2.5 7\nCenterOfRotation = 0 0 0\n"
        "AnatomicalOrientation = RAI\nElementSpacing = 1.5 2 0.75\nDimSize = %u %u %u\n%s"
        "ElementType = %s\nElementDataFile = %s\n", v->big ? "True" : "False", comp, nx, ny, nz,
        hs, v->type, v->local ? "LOCAL" : dfile);
    g_autofree char *path = tmp_path(v->local ? "m.mha" : "m.mhd");
    if (v->local) {
      GByteArray *b = g_byte_array_new();
      g_byte_array_append(b, (const guint8 *)header, strlen(header));
      g_byte_array_append(b, payload, stored);
      write_file(path, b->data, b->len);
      g_byte_array_free(b, TRUE);
    } else {
      g_autofree char *dp = tmp_path(dfile);
      gsize pad = v->header_size > 0 ? (gsize)v->header_size : v->header_size == -1 ? 7 : 0;
      g_autofree guint8 *b = g_malloc0(pad + stored);
      memcpy(b + pad, payload, stored);
      write_file(dp, b, pad + stored);
      write_file(path, header, strlen(header));
    }
    g_autoptr(GError) e = NULL;
    TlDataKind kind;
    const TlFormatClass *f = NULL;
    g_autoptr(TlImage) im = tl_format_load_any(path, &kind, &f, &e);
    g_assert_no_error(e);
    g_assert_cmpstr(f->name, ==, "metaimage");
    g_assert_cmpuint(im->grid.dims[0], ==, nx);
    g_assert_cmpuint(im->grid.dims[2], ==, nz);
    g_assert_cmpfloat(im->grid.voxel_mm[0], ==, 1.5f);
    g_assert_cmpfloat(im->grid.voxel_mm[2], ==, 0.75f);
    g_assert_cmpfloat(im->grid.origin_mm[0], ==, -10.0f);
    g_assert_cmpfloat(im->grid.origin_mm[1], ==, 2.5f);
    g_assert_cmpfloat(im->grid.origin_mm[2], ==, 7.0f);
    for (guint i = 0; i < n; i++) g_assert_cmpfloat(im->data[i], ==, expect[i]);
    check_writer(im);
  }
}

/* 2-D images, Origin instead of Offset, ElementSize instead of ElementSpacing. */
static void test_2d(void) {
  const char *h = "NDims = 2\nDimSize = 3 2\nElementSize = 0.5 0.25\nOrigin = 1 2\n"
                  "ElementType = MET_USHORT\nElementDataFile = LOCAL\n";
  guint8 b[256];
  gsize hl = strlen(h);
  memcpy(b, h, hl);
  for (int i = 0; i < 6; i++) b[hl + 2 * i] = (guint8)(i * 40), b[hl + 2 * i + 1] = 1;
  g_autofree char *p = tmp_path("two.mha");
  write_file(p, b, hl + 12);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load_metaimage(p, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(im->grid.dims[2], ==, 1);
  g_assert_cmpfloat(im->grid.voxel_mm[1], ==, 0.25f);
  g_assert_cmpfloat(im->grid.origin_mm[1], ==, 2.0f);
  g_assert_cmpfloat(im->data[5], ==, 256 + 200);
}

static void test_stir_image(void) {
  const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
  g_autofree char *hv = g_build_filename(root ? root : ".",
                                         "../shared/data/stir-image/test_image_3.hv", NULL);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load_interfile(hv, &e);
  g_assert_no_error(e);
  check_writer(im);
}

static const char *good =
    "ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nElementSpacing = 1 1 1\nOffset = 0 0 0\n"
    "TransformMatrix = 1 0 0 0 1 0 0 0 1\nElementType = MET_FLOAT\nElementDataFile = h.raw\n";

static void expect_refused(const char *from, const char *to, gsize n_data, ...) {
  g_autofree char *mhd = tmp_path("h.mhd"), *raw = tmp_path("h.raw");
  GString *s = g_string_new(good);
  if (from) g_assert_cmpint(g_string_replace(s, from, to, 1), ==, 1);
  write_file(mhd, s->str, s->len);
  g_string_free(s, TRUE);
  g_autofree guint8 *zeros = g_malloc0(MAX(n_data, 1));
  write_file(raw, zeros, n_data);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = tl_image_load_metaimage(mhd, &e);
  g_assert_null(im);
  g_assert_nonnull(e);
  g_test_message("%s", e->message);
  g_assert_nonnull(strstr(e->message, mhd));
  va_list ap;
  va_start(ap, n_data);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(e->message, needle)) g_error("'%s' not in: %s", needle, e->message);
  va_end(ap);
}

static void test_hostile(void) {
  expect_refused(NULL, NULL, 31, "31", "32", NULL); /* truncated */
  expect_refused("DimSize = 2 2 2", "DimSize = 2 2 1e9", 32, "dimsize", "1e9", NULL);
  expect_refused("DimSize = 2 2 2", "DimSize = 100000 100000 100000", 32, "dimsize",
                 "100000 100000 100000", "2^28", NULL);
  expect_refused("DimSize = 2 2 2", "DimSize = 2 -2 2", 32, "dimsize", "-2", NULL);
  expect_refused("DimSize = 2 2 2", "DimSize = 2 2", 32, "dimsize", NULL);
  expect_refused("ElementSpacing = 1 1 1", "ElementSpacing = 1 nan 1", 32, "elementspacing", "nan",
                 NULL);
  expect_refused("ElementSpacing = 1 1 1", "ElementSpacing = 1 0 1", 32, "elementspacing", NULL);
  expect_refused("Offset = 0 0 0", "Offset = 0 inf 0", 32, "offset", "inf", NULL);
  expect_refused("1 0 0 0 1 0 0 0 1", "0 1 0 1 0 0 0 0 1", 32, "transformmatrix", "0 1 0", NULL);
  expect_refused("MET_FLOAT", "MET_COMPLEX", 32, "elementtype", "MET_COMPLEX", NULL);
  expect_refused("NDims = 3", "NDims = 5", 32, "ndims", "5", NULL);
  expect_refused("ElementType", "ElementNumberOfChannels = 3\nElementType", 96,
                 "elementnumberofchannels", "3", NULL);
  expect_refused("ElementType", "HeaderSize = 4096\nElementType", 32, "headersize", "4096", NULL);
  expect_refused("ElementType", "HeaderSize = 8\nElementType", 32, "32", "8", NULL);
  expect_refused("ElementType", "CompressedData = True\nCompressedDataSize = 32\nElementType", 32,
                 "zlib", NULL);
  /* issue 27: fewer bytes than the file holds (exact size, image/tl-datafile.h) */
  expect_refused("ElementType", "CompressedData = True\nCompressedDataSize = 20\nElementType", 32,
                 "32 bytes", "expected exactly 20", NULL);
  expect_refused(NULL, NULL, 36, "36 bytes", "expected exactly 32", NULL);
  expect_refused("ElementType", "CompressedData = True\nCompressedDataSize = 99\nElementType", 32,
                 "compresseddatasize", "99", NULL);
  expect_refused("ElementType", "CompressedData = maybe\nElementType", 32, "compresseddata",
                 "maybe", NULL);
  expect_refused("ElementDataFile = h.raw", "ElementDataFile = slice%03d.raw 1 2 1", 32,
                 "elementdatafile", NULL);
  expect_refused("ElementDataFile = h.raw", "ElementDataFile = nowhere.raw", 32, "nowhere.raw",
                 NULL);
  expect_refused("ElementDataFile = h.raw\n", "", 32, "ElementDataFile", NULL);
  {
    g_autofree char *mhd = tmp_path("h.mhd"), *raw = tmp_path("h.raw");
    write_file(mhd, good, strlen(good));
    float v[8] = {0, 1, 2, NAN, 4, 5, 6, 7};
    write_file(raw, v, sizeof v);
    g_autoptr(GError) e = NULL;
    g_assert_null(tl_image_load_metaimage(mhd, &e));
    g_assert_nonnull(strstr(e->message, "voxel 3"));
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("tl-metaimage-XXXXXX", NULL);
  g_test_add_func("/format/metaimage/layouts", test_layouts);
  g_test_add_func("/format/metaimage/2d", test_2d);
  g_test_add_func("/format/metaimage/stir-image", test_stir_image);
  g_test_add_func("/format/metaimage/hostile", test_hostile);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  return rc;
}
