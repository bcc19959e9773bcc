/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Issue 27, items 2, 3, 5 and 8 (temp files), from hand-made files (the layouts of
 * docs/formats.md, written here byte by byte, never by the code under test):
 *  - the one data-file resolver (image/tl-datafile.h): absolute names, `..` and symbolic
 *    links out of the header's folder refused unless TOMOLAB_DATA_OUTSIDE=1; data files of
 *    another size than the header describes refused, naming the sizes;
 *  - the one output-safety check (dataset/tl-outputs.h): no output writes an input's data
 *    file (convert x.mhd y.mhd where x.mhd's data are y.raw; the same for .hv/.v, .hs/.s,
 *    a raw output, recon --truth t.mhd -o t16.raw), through the API and through the CLI;
 *  - pair writers alternate the data name (X.v, X~1.v) and remove the replaced data;
 *  - temp files and folders of killed saves (a DICOM temp folder, a raw pending file named by
 *    the sidecar) are removed by a later save.
 * argv[1] (optional): tomolab-cli. */
#define _POSIX_C_SOURCE 200809L
#include "dataset/tl-formats.h"
#include "dataset/tl-outputs.h"
#include "image/tl-datafile.h"
#include "image/tl-file.h"
#include "image/tl-interfile.h"
#include "image/tl-metaimage.h"
#include "pet/data/tl-format-mmr.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *cli;
static char *root; /* a fresh folder per test: root/in holds headers, root/out is outside */

static char *at(const char *name) { return g_build_filename(root, name, NULL); }

static void put(const char *name, const void *data, gsize n) {
  g_autofree char *p = at(name);
  g_autofree char *d = g_path_get_dirname(p);
  g_mkdir_with_parents(d, 0755);
  g_assert_true(g_file_set_contents(p, data, (gssize)n, NULL));
}

static void put_text(const char *name, const char *text) { put(name, text, strlen(text)); }

/* n little-endian floats base, base + 1, ... */
static void put_floats(const char *name, guint n, float base) {
  g_autofree guint8 *b = g_malloc(4u * n);
  for (guint i = 0; i < n; i++) {
    float f = base + (float)i;
    guint32 u;
    memcpy(&u, &f, 4);
    for (int k = 0; k < 4; k++) b[4 * i + k] = (guint8)(u >> (8 * k));
  }
  put(name, b, 4u * n);
}

static void fresh_root(void) {
  if (root) tl_test_remove_tree(root);
  g_free(root);
  GError *e = NULL;
  root = g_dir_make_tmp("tl-hostile-io-XXXXXX", &e);
  g_assert_no_error(e);
  g_autofree char *in = at("in");
  g_mkdir(in, 0755);
}

/* Interfile 3.3 image header: 4 x 4 x 2 float32 little endian = 128 bytes of data. */
static char *hv_text(const char *data_name) {
  return g_strdup_printf("!INTERFILE :=\nname of data file := %s\n!number format := float\n"
                         "!number of bytes per pixel := 4\nimagedata byte order := LITTLEENDIAN\n"
                         "number of dimensions := 3\n!matrix size [1] := 4\n!matrix size [2] := 4\n"
                         "!matrix size [3] := 2\nscaling factor (mm/pixel) [1] := 2\n"
                         "scaling factor (mm/pixel) [2] := 2\nscaling factor (mm/pixel) [3] := 3\n"
                         "!END OF INTERFILE :=\n", data_name);
}

/* MetaImage header (ITK's MetaIO keys), the data file last. */
static char *mhd_text(const char *dims, const char *data_name) {
  return g_strdup_printf("ObjectType = Image\nNDims = 3\nBinaryData = True\n"
                         "BinaryDataByteOrderMSB = False\nElementSpacing = 2 2 3\n%s"
                         "ElementType = MET_FLOAT\nElementDataFile = %s\n", dims, data_name);
}

static TlImage *load_image(const char *name, GError **e) {
  g_autofree char *p = at(name);
  return tl_format_load_kind(p, TL_DATA_IMAGE, e);
}

static void expect_refused(const char *name, ...) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = load_image(name, &e);
  g_assert_null(im);
  g_assert_nonnull(e);
  g_test_message("%s: %s", name, e->message);
  va_list ap;
  va_start(ap, name);
  for (const char *needle; (needle = va_arg(ap, const char *));)
    if (!strstr(e->message, needle)) g_error("'%s' not in: %s", needle, e->message);
  va_end(ap);
}

static void expect_loads(const char *name, float first) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlImage) im = load_image(name, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(tl_image_grid_n_voxels(&im->grid), ==, 32);
  g_assert_cmpfloat(im->data[0], ==, first);
  g_assert_cmpfloat(im->data[31], ==, first + 31);
}

/* ---- item 3: where data files may be, and their size ---- */

static void test_resolver_interfile(void) {
  fresh_root();
  put_floats("in/x.v", 32, 1);
  put_floats("out/outside.v", 32, 100);
  g_autofree char *outside = at("out/outside.v"), *link = at("in/link.v"), *inner = at("in/in.v");
  g_assert_cmpint(symlink(outside, link), ==, 0);
  g_assert_cmpint(symlink("x.v", inner), ==, 0);
  const struct {
    const char *header, *data;
  } refused[] = {
      {"in/abs.hv", "/etc/passwd"},
      {"in/abs2.hv", outside},
      {"in/up.hv", "../out/outside.v"},
      {"in/up2.hv", "sub/../../out/outside.v"},
      {"in/link.hv", "link.v"},
  };
  const char *why[] = {"absolute", "absolute", "leaves the header's folder",
                       "leaves the header's folder", "symbolic link"};
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autofree char *t = hv_text(refused[i].data);
    put_text(refused[i].header, t);
    expect_refused(refused[i].header, refused[i].header, why[i], TL_DATAFILE_OUTSIDE_ENV, NULL);
  }
  /* the header as its own data (fuzz-mmr), by name and through a link */
  g_autofree char *self = hv_text("self.hv");
  put_text("in/self.hv", self);
  expect_refused("in/self.hv", "the header itself", NULL);
  g_autofree char *self_target = at("in/self2.hv"), *self_link = at("in/self2-link.hv");
  g_autofree char *self2 = hv_text("self2-link.hv");
  put_text("in/self2.hv", self2);
  g_assert_cmpint(symlink(self_target, self_link), ==, 0);
  expect_refused("in/self2.hv", "the header itself", NULL);
  /* inside the folder: a plain name, a `..` that stays, a link that stays */
  g_autofree char *t1 = hv_text("x.v"), *t2 = hv_text("sub/../x.v"), *t3 = hv_text("in.v");
  put_text("in/ok.hv", t1);
  put_text("in/ok2.hv", t2);
  put_text("in/ok3.hv", t3);
  expect_loads("in/ok.hv", 1);
  expect_loads("in/ok2.hv", 1);
  expect_loads("in/ok3.hv", 1);
  /* the user's opt-in: the outside file is read (and /etc/passwd still refused by its size) */
  g_setenv(TL_DATAFILE_OUTSIDE_ENV, "1", TRUE);
  expect_loads("in/abs2.hv", 100);
  expect_loads("in/up.hv", 100);
  expect_loads("in/link.hv", 100);
  expect_refused("in/abs.hv", "/etc/passwd", "expected exactly 128", NULL);
  g_unsetenv(TL_DATAFILE_OUTSIDE_ENV);
  /* exact size: 4 bytes more (a size key read too small) and 4 bytes fewer */
  put_floats("in/big.v", 33, 1);
  put_floats("in/small.v", 31, 1);
  g_autofree char *tb = hv_text("big.v"), *ts = hv_text("small.v");
  put_text("in/big.hv", tb);
  put_text("in/small.hv", ts);
  expect_refused("in/big.hv", "big.v", "132 bytes", "expected exactly 128", NULL);
  expect_refused("in/small.hv", "small.v", "124 bytes", "expected exactly 128", NULL);
}

static void test_resolver_metaimage(void) {
  fresh_root();
  put_floats("in/x.raw", 32, 1);
  put_floats("out/o.raw", 32, 100);
  const char *dims = "DimSize = 4 4 2\n";
  g_autofree char *a = mhd_text(dims, "/etc/passwd"), *u = mhd_text(dims, "../out/o.raw");
  put_text("in/abs.mhd", a);
  put_text("in/up.mhd", u);
  expect_refused("in/abs.mhd", "ElementDataFile", "absolute", NULL);
  expect_refused("in/up.mhd", "ElementDataFile", "leaves the header's folder", NULL);
  g_autofree char *ok = mhd_text(dims, "x.raw");
  put_text("in/ok.mhd", ok);
  expect_loads("in/ok.mhd", 1);
  /* DimSize given twice, the smaller last: half the data would be read as the image */
  g_autofree char *twice = mhd_text("DimSize = 4 4 2\nDimSize = 4 4 1\n", "x.raw");
  put_text("in/twice.mhd", twice);
  /* refused before the size check: a key given twice (image/tl-file.h, tl_kv_once) */
  expect_refused("in/twice.mhd", "twice.mhd", "'dimsize' given twice", NULL);
  /* LOCAL data with bytes after the image */
  g_autofree char *local = mhd_text(dims, "LOCAL");
  GString *s = g_string_new(local);
  for (guint i = 0; i < 33 * 4; i++) g_string_append_c(s, 0);
  put("in/local.mha", s->str, s->len);
  g_string_free(s, TRUE);
  expect_refused("in/local.mha", "expected exactly", NULL);
}

/* ---- item 2: no output writes a file an input reads ---- */

static void expect_outputs_refused(const char *in_name, const char *out_name, const char *shared) {
  g_autofree char *in = at(in_name), *out = at(out_name);
  TlNamedFile i = {"IN", in}, o = {"OUT", out};
  g_autoptr(GError) e = NULL;
  g_assert_false(tl_outputs_check(&i, 1, &o, 1, &e));
  g_assert_nonnull(e);
  g_test_message("%s", e->message);
  g_assert_nonnull(strstr(e->message, shared));
  g_assert_nonnull(strstr(e->message, "never replaces an input"));
}

static void expect_outputs_ok(const char *in_name, const char *out_name) {
  g_autofree char *in = at(in_name), *out = at(out_name);
  TlNamedFile i = {"IN", in}, o = {"OUT", out};
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_outputs_check(&i, 1, &o, 1, &e));
  g_assert_no_error(e);
}

/* The STIR projection-data header's layout keys (enough for detection and the data name). */
static char *hs_text(const char *data_name) {
  return g_strdup_printf("!INTERFILE :=\nname of data file := %s\n!PET data type := Emission\n"
                         "number of dimensions := 4\nmatrix axis label [4] := segment\n"
                         "matrix axis label [3] := view\nmatrix axis label [2] := axial coordinate\n"
                         "matrix axis label [1] := tangential coordinate\n!END OF INTERFILE :=\n",
                         data_name);
}

static void test_outputs(void) {
  fresh_root();
  g_autofree char *m = mhd_text("DimSize = 4 4 2\n", "y.raw");
  put_text("in/x.mhd", m);
  put_floats("in/y.raw", 32, 255);
  expect_outputs_refused("in/x.mhd", "in/y.mhd", "y.raw"); /* MetaImage over MetaImage */
  expect_outputs_refused("in/x.mhd", "in/y.raw", "y.raw"); /* a raw output over its data */
  expect_outputs_ok("in/x.mhd", "in/z.mhd");
  g_autofree char *h = hv_text("y.v");
  put_text("in/x.hv", h);
  put_floats("in/y.v", 32, 0);
  expect_outputs_refused("in/x.hv", "in/y.hv", "y.v");
  g_autofree char *h1 = hv_text("y~1.v");
  put_text("in/x1.hv", h1);
  expect_outputs_refused("in/x1.hv", "in/y.hv", "y~1.v"); /* the writer's other name too */
  g_autofree char *s = hs_text("y.s");
  put_text("in/x.hs", s);
  put_floats("in/y.s", 4, 0);
  expect_outputs_refused("in/x.hs", "in/y.hs", "y.s");
  /* recon --truth t.mhd -o t16.raw */
  g_autofree char *t = mhd_text("DimSize = 4 4 2\n", "t16.raw");
  put_text("in/t.mhd", t);
  put_floats("in/t16.raw", 32, 0);
  expect_outputs_refused("in/t.mhd", "in/t16.raw", "t16.raw");
  /* two outputs sharing a data file: y.mhd writes y.raw, the raw output is y.raw */
  g_autofree char *o1 = at("in/q.mhd"), *o2 = at("in/q.raw");
  TlNamedFile outs[] = {{"-o", o1}, {"--truth", o2}};
  g_autoptr(GError) e = NULL;
  g_assert_false(tl_outputs_check(NULL, 0, outs, 2, &e));
  g_assert_nonnull(strstr(e->message, "each output needs its own files"));

  /* through the CLI: refused before anything is written, the input's data untouched */
  if (!cli) return;
  g_autofree char *x = at("in/x.mhd"), *y = at("in/y.mhd"), *yraw = at("in/y.raw");
  g_autofree char *before = NULL, *after = NULL;
  gsize nb = 0, na = 0;
  g_assert_true(g_file_get_contents(yraw, &before, &nb, NULL));
  const char *argv[] = {cli, "convert", x, y, NULL};
  g_autofree char *err = NULL;
  int status = 0;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, &err, &status, NULL));
  g_test_message("%s", err);
  g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
  g_assert_nonnull(strstr(err, "y.raw"));
  g_assert_true(g_file_get_contents(yraw, &after, &na, NULL));
  g_assert_true(na == nb && memcmp(before, after, nb) == 0);
  g_assert_false(g_file_test(y, G_FILE_TEST_EXISTS));
}

/* ---- item 5: pair writers alternate the data name and remove the replaced data ---- */

static TlImage *image(float base, float voxel) {
  TlImage *im = g_new0(TlImage, 1);
  im->grid = tl_image_grid_centred(4, 4, 2, voxel, voxel, voxel);
  im->data = g_new(float, 32);
  for (guint i = 0; i < 32; i++) im->data[i] = base + (float)i;
  return im;
}

static void test_pairs(void) {
  fresh_root();
  /* an old hand-made pair: p.hv naming p.v; the new data pass through p~1.v and settle in
   * p.v (every step a complete pair: test-file-interrupt), the old data gone */
  g_autofree char *t = hv_text("p.v");
  put_text("in/p.hv", t);
  put_floats("in/p.v", 32, 7);
  g_autofree char *hv = at("in/p.hv"), *v0 = at("in/p.v"), *v1 = at("in/p~1.v");
  g_autoptr(TlImage) a = image(10, 2), b = image(20, 3);
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_image_save_interfile(a, hv, &e));
  g_assert_no_error(e);
  g_autofree char *named = tl_interfile_data_path(hv);
  g_assert_cmpstr(named, ==, v0);
  g_assert_false(g_file_test(v1, G_FILE_TEST_EXISTS));
  expect_loads("in/p.hv", 10);
  /* what a save killed before settling leaves: p.hv naming p~1.v, a stale p.v */
  g_autofree char *t1 = hv_text("p~1.v");
  put_text("in/p.hv", t1);
  put_floats("in/p~1.v", 32, 7);
  put_floats("in/p.v", 32, 99);
  g_assert_true(tl_image_save_interfile(b, hv, &e));
  g_autofree char *named2 = tl_interfile_data_path(hv);
  g_assert_cmpstr(named2, ==, v0);
  g_assert_false(g_file_test(v1, G_FILE_TEST_EXISTS));
  expect_loads("in/p.hv", 20);
  /* MetaImage the same way */
  g_autofree char *m = mhd_text("DimSize = 4 4 2\n", "q~1.raw");
  put_text("in/q.mhd", m);
  put_floats("in/q~1.raw", 32, 7);
  g_autofree char *mhd = at("in/q.mhd"), *r0 = at("in/q.raw"), *r1 = at("in/q~1.raw");
  g_assert_true(tl_image_save_metaimage(a, mhd, &e));
  g_assert_no_error(e);
  g_autofree char *mn = tl_metaimage_data_path(mhd);
  g_assert_cmpstr(mn, ==, r0);
  g_assert_false(g_file_test(r1, G_FILE_TEST_EXISTS));
  expect_loads("in/q.mhd", 10);
}

/* ---- item 8: temp files of killed saves ---- */

static int dead_pid(void) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  int st;
  waitpid(p, &st, 0);
  return (int)p;
}

static void test_stale_temps(void) {
  fresh_root();
  int dead = dead_pid();
  /* a killed DICOM save's temp folder, with the slices it had written */
  g_autofree char *tdir_name = g_strdup_printf("in/.series.tmp-%d-0", dead);
  g_autofree char *slice = g_strdup_printf("%s/IM0001.dcm", tdir_name);
  put("in/.keep", "", 0);
  put_floats(slice, 1024, 0);
  /* a raw save killed after its sidecar named the pending data (before the rename): the
   * sidecar's layout (docs/formats.md "raw") written here by hand */
  g_autofree char *pend = g_strdup_printf(".t.raw.new-%d-0", dead);
  g_autofree char *pend_rel = g_strdup_printf("in/%s", pend);
  put_floats(pend_rel, 32, 0);
  g_autofree char *side = g_strdup_printf("data = %s\nformat = float32-le\ndims = 4 4 2\n"
                                          "voxel_mm = 2 2 2\norigin_mm = -3 -3 -1\n", pend);
  put_text("in/t.raw.txt", side);
  g_autoptr(TlImage) a = image(10, 2);
  g_autofree char *raw = at("in/t.raw");
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_image_save_raw(a, raw, &e));
  g_assert_no_error(e);
  g_autofree char *tdir = at(tdir_name), *pp = at(pend_rel);
  g_assert_false(g_file_test(tdir, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(pp, G_FILE_TEST_EXISTS));
  expect_loads("in/t.raw", 10);
  /* tomolab-cli cleans its working directory when it starts */
  if (!cli) return;
  g_autofree char *stale_name = g_strdup_printf("work/.x.nii.tmp-%d-3.nii", dead);
  put_floats(stale_name, 8, 0);
  put_text("work/.x.nii.tmp-1-0.nii", "pid 1 runs: kept"); /* a live PID's temp file */
  g_autofree char *work = at("work"), *stale = at(stale_name), *live = at("work/.x.nii.tmp-1-0.nii");
  const char *argv[] = {cli, "info", NULL};
  int status = 0;
  g_assert_true(g_spawn_sync(work, (char **)argv, NULL,
                             G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                             NULL, NULL, &status, NULL));
  g_assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(live, G_FILE_TEST_EXISTS));
}

/* ---- fuzz-mmr's finding: list-mode words that spell "!INTERFILE" are data, not a header ---- */

static void test_mmr_data_like_header(void) {
  fresh_root();
  const char *real = "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR"; /* from the source root */
  g_autofree char *text = NULL;
  if (!g_file_get_contents(real, &text, NULL, NULL)) {
    g_test_skip("no ../shared/data/mmr");
    return;
  }
  /* the shared header (Siemens' layout) naming in.l; the words start with the magic text */
  GString *h = g_string_new(text);
  g_assert_cmpuint(g_string_replace(h, "small_listmode_file.l", "in.l", 1), ==, 1);
  put("in/in.l.hdr", h->str, h->len);
  g_string_free(h, TRUE);
  put("in/in.l", "!INTERFILE:=\n\n\n\n", 16);
  g_autofree char *hdr = at("in/in.l.hdr"), *words = at("in/in.l");
  TlMmrStats scan, load;
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_mmr_scan(hdr, &scan, &e));
  g_assert_no_error(e);
  g_autoptr(TlListmode) lm = tl_mmr_load(words, NULL, &load, &e);
  g_assert_no_error(e);
  g_assert_nonnull(lm);
  g_assert_cmpuint(load.words, ==, 4);
  g_assert_cmpuint(scan.words, ==, 4);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  if (argc > 1) cli = argv[1];
  g_unsetenv(TL_DATAFILE_OUTSIDE_ENV);
  g_test_add_func("/hostile-io/resolver/interfile", test_resolver_interfile);
  g_test_add_func("/hostile-io/resolver/metaimage", test_resolver_metaimage);
  g_test_add_func("/hostile-io/outputs", test_outputs);
  g_test_add_func("/hostile-io/pairs", test_pairs);
  g_test_add_func("/hostile-io/stale-temps", test_stale_temps);
  g_test_add_func("/hostile-io/mmr-data-like-header", test_mmr_data_like_header);
  int rc = g_test_run();
  if (root) tl_test_remove_tree(root);
  return rc;
}
