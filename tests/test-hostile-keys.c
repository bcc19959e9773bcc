/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Issue 27, items 6 and 8: repeated keys and `info` that loads.
 *
 * Every "key = value" or Interfile-style reader refuses a key given twice, naming the file,
 * the key and both lines (the files are written here from the layouts of docs/formats.md,
 * each with one key repeated: the readers kept either value silently, so a size given twice
 * read half the data). A checkpoint claiming more sub-iterations than its run has is
 * refused, and its grid errors name the file. `tomolab-cli info` runs the loader a
 * reconstruction would: CASToR files with a crystal id of 10^9 or no scanner file are
 * refused with the loader's message (info used to describe their headers and exit 0).
 * The CLI's path is the first argument (tests/meson.build). */
#include "tl-test-common.h"
#include "ct/tl-ct-formats.h"
#include "ct/tl-ct-geometry.h"
#include "dataset/tl-dataset.h"
#include "image/tl-file.h"
#include "pet/correct/tl-norm.h"
#include "pet/correct/tl-randoms.h"
#include "pet/correct/tl-sss.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

static char *dir;
static const char *cli_path;

static char *at(const char *name) { return g_build_filename(dir, name, NULL); }

static void put(const char *name, const void *bytes, gssize len) {
  g_autofree char *p = at(name);
  GError *e = NULL;
  g_file_set_contents(p, bytes, len < 0 ? (gssize)strlen(bytes) : len, &e);
  g_assert_no_error(e);
}

/* The error names the file, the key, the second line and the first. */
static void twice(GError *error, const char *name, const char *key, guint second, guint first) {
  g_assert_nonnull(error);
  g_test_message("%s: %s", name, error->message);
  g_autofree char *where = g_strdup_printf("%s:%u: key '%s' given twice", name, second, key);
  g_autofree char *before = g_strdup_printf("first on line %u", first);
  if (!strstr(error->message, where) || !strstr(error->message, before))
    g_error("%s: expected '%s' and '%s' in: %s", name, where, before, error->message);
}

/* A file through the format table (detection, then its loader): refused as `twice` says,
 * naming `text` (the file holding the keys: the file itself, or a raw image's sidecar). */
static void load_twice_in(const char *name, const char *text, const char *key, guint second,
                          guint first) {
  g_autofree char *p = at(name), *t = at(text);
  GError *error = NULL;
  TlDataKind kind;
  gpointer d = tl_format_load_any(p, &kind, NULL, &error);
  if (d) tl_data_free(kind, d);
  g_assert_null(d);
  twice(error, t, key, second, first);
  g_error_free(error);
}

static void load_twice(const char *name, const char *key, guint second, guint first) {
  load_twice_in(name, name, key, second, first);
}

static void test_images(void) {
  /* raw float32 + its sidecar (docs/formats.md "Raw images") */
  float v[8] = {0};
  put("r.raw", v, sizeof v);
  put("r.raw.txt", "format = float32-le\ndims = 2 2 2\ndims = 2 2 1\nvoxel_mm = 1 1 1\n"
      "origin_mm = 0 0 0\n", -1);
  load_twice_in("r.raw", "r.raw.txt", "dims", 3, 2);
  /* MetaImage: DimSize twice (the second one read half the data) */
  put("m.raw", v, sizeof v);
  put("m.mhd", "ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\nDimSize = 2 2 1\n"
      "ElementType = MET_FLOAT\nElementSpacing = 1 1 1\nElementByteOrderMSB = False\n"
      "ElementDataFile = m.raw\n", -1);
  load_twice("m.mhd", "dimsize", 4, 3);
  /* Interfile image: "matrix size [3]" twice, in two spellings of the same key */
  put("i.v", v, sizeof v);
  put("i.hv", "!INTERFILE :=\n!imaging modality := PET\nname of data file := i.v\n"
      "!PET data type := Image\nnumber of dimensions := 3\n!matrix size [1] := 2\n"
      "!matrix size [2] := 2\n!matrix size [3] := 2\nmatrix size[3] := 1\n"
      "!number format := float\n!number of bytes per pixel := 4\n"
      "imagedata byte order := LITTLEENDIAN\n!END OF INTERFILE :=\n", -1);
  load_twice("i.hv", "matrix size[3]", 9, 8);
  /* ...while a key repeated with the same value, as STIR writes "imaging modality", loads */
  put("same.hv", "!INTERFILE :=\nimaging modality := PET\nname of data file := i.v\n"
      "imaging modality := PET\n!PET data type := Image\nnumber of dimensions := 3\n"
      "!matrix size [1] := 2\n!matrix size [2] := 2\n!matrix size [3] := 2\n"
      "!number format := float\n!number of bytes per pixel := 4\n"
      "imagedata byte order := LITTLEENDIAN\n!END OF INTERFILE :=\n", -1);
  g_autofree char *same = at("same.hv");
  GError *error = NULL;
  g_autoptr(TlImage) im = tl_format_load_kind(same, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(im->grid.dims[2], ==, 2);
}

static void test_projection_data(void) {
  /* STIR projection data: the views given twice (6 then 12 read half the data) */
  put("s.s", "", 0);
  put("s.hs", "!INTERFILE :=\n!imaging modality := PT\nname of data file := s.s\n"
      "!GENERAL DATA :=\n!GENERAL IMAGE DATA :=\n!type of data := PET\n"
      "imagedata byte order := LITTLEENDIAN\n!PET STUDY (General) :=\n"
      "!PET data type := Emission\n!number format := float\n!number of bytes per pixel := 4\n"
      "number of dimensions := 4\nmatrix axis label [4] := segment\n!matrix size [4] := 1\n"
      "matrix axis label [3] := view\n!matrix size [3] := 6\n"
      "matrix axis label [2] := axial coordinate\n!matrix size [2] := {1}\n"
      "matrix axis label [1] := tangential coordinate\n!matrix size [1] := 4\n"
      "!matrix size [3] := 12\nminimum ring difference per segment := {0}\n"
      "maximum ring difference per segment := {0}\n!END OF INTERFILE :=\n", -1);
  load_twice("s.hs", "matrix size[3]", 21, 16);
  /* TIFF stack sidecar: pixel_mm twice (docs/formats.md says refused) */
  const char *sc = "tomolab-tiff-stack = 1\nangles = 0 180\npixel_mm = 1 1\npixel_mm = 2 2\n";
  TlTiffSidecar s;
  GError *error = NULL;
  g_assert_false(tl_ct_tiff_sidecar_parse(sc, strlen(sc), "t.txt", &s, &error));
  tl_ct_tiff_sidecar_clear(&s);
  twice(error, "t.txt", "pixel_mm", 4, 3);
  g_clear_error(&error);
  /* CT geometry text: the detector twice */
  const char *geo = "tomolab-ct-geometry = 1\nbeam = parallel\ndetector = 4 2\n\n"
                    "detector = 8 2\nviews = 1\nview 0 = 1 0 0 0 0 0 1 0 0 0 0 1\n";
  g_assert_null(tl_ct_geometry_from_text(geo, "g.txt", &error));
  twice(error, "g.txt", "detector", 5, 3);
  g_clear_error(&error);
}

static void test_pet_files(void) {
  GError *error = NULL;
  g_autofree char *n = at("n.tln"), *sc = at("s.tls"), *ra = at("r.txt"), *lm = at("l.tlm");
  /* the normalisation, the scatter estimate, the randoms, list mode: a count twice */
  put("n.tln", "TOMOLAB-NORM 1\ncrystals = 16\nrings = 2\n# again:\ncrystals = 32\n", -1);
  g_assert_null(tl_norm_load(n, NULL, &error));
  twice(error, n, "crystals", 5, 2);
  g_clear_error(&error);
  put("s.tls", "TOMOLAB-SCATTER 1\ntof_bins = 1\ndescription = a\ndescription = b\n", -1);
  g_assert_null(tl_scatter_estimate_load(sc, &error));
  twice(error, sc, "description", 4, 3);
  g_clear_error(&error);
  put("r.txt", "tomolab-randoms = 1\nscanner = x\ncrystals = 4\ncrystals = 2\nend_header\n"
      "1\n1\n", -1);
  g_autoptr(TlScanner) scanner = tl_scanner_new_preset("small-animal", &error);
  g_assert_no_error(error);
  g_assert_null(tl_randoms_load(ra, scanner, &error));
  twice(error, ra, "crystals", 4, 3);
  g_clear_error(&error);
  put("l.tlm", "TOMOLAB-LISTMODE 1\nevents = 0\nevent_bytes = 12\nevents = 5\nend_header\n", -1);
  g_assert_null(tl_listmode_load(lm, &error));
  twice(error, lm, "events", 4, 2);
  g_clear_error(&error);
}

/* --- through tomolab-cli --- */

typedef struct {
  int code;
  char *out, *err;
} Run;

static Run cli(const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)cli_path);
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *)) g_ptr_array_add(argv, (char *)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  Run r = {0, NULL, NULL};
  int status = 0;
  GError *e = NULL;
  g_spawn_sync(dir, (char **)argv->pdata, NULL, 0, NULL, NULL, &r.out, &r.err, &status, &e);
  g_assert_no_error(e);
  g_ptr_array_free(argv, TRUE);
  if (WIFSIGNALED(status))
    g_error("tomolab-cli %s ... died of signal %d; stderr: %s", first, WTERMSIG(status), r.err);
  r.code = WEXITSTATUS(status);
  return r;
}

/* Exit 1, stderr holding every NULL-terminated substring. */
static void refused(Run r, ...) {
  if (r.code != 1) g_error("exit %d (expected 1); stderr: %s", r.code, r.err);
  va_list ap;
  va_start(ap, r);
  for (const char *want = va_arg(ap, const char *); want; want = va_arg(ap, const char *))
    if (!strstr(r.err, want)) g_error("stderr lacks '%s': %s", want, r.err);
  va_end(ap);
  g_test_message("%s", r.err);
  g_free(r.out);
  g_free(r.err);
}

static void ok(Run r) {
  if (r.code != 0) g_error("exit %d (expected 0); stderr: %s", r.code, r.err);
  g_free(r.out);
  g_free(r.err);
}

/* A ring of 16 crystals in 2 rings of 8 (CASToR's layout: the crystal's middle and its
 * outward axis, float32), and its header. */
static void put_castor_scanner(void) {
  float lut[16 * 6];
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 8; i++) {
      double a = 2 * G_PI * i / 8;
      float *c = lut + 6 * (r * 8 + i);
      c[0] = (float)(55 * cos(a)), c[1] = (float)(55 * sin(a)), c[2] = (float)(r * 4.0 - 2);
      c[3] = (float)cos(a), c[4] = (float)sin(a), c[5] = 0;
    }
  put("ring16.lut", lut, sizeof lut);
  put("ring16.hscan", "modality: PET\nscanner name: ring16\nnumber of elements: 16\n"
      "number of layers: 1\nnumber of crystals in layer: 16\ncrystals size depth: 10\n"
      "crystals size transaxial: 4\ncrystals size axial: 4\n", -1);
}

/* CASToR list mode without optional fields: time (ms), id1, id2 as uint32 little endian. */
static void put_castor_list(const char *stem, const char *scanner, guint32 id2) {
  guint32 ev[2][3] = {{0, 0, 12}, {5, 1, id2}};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 3; k++) ev[i][k] = GUINT32_TO_LE(ev[i][k]);
  g_autofree char *cdf = g_strconcat(stem, ".cdf", NULL), *cdh = g_strconcat(stem, ".cdh", NULL);
  put(cdf, ev, sizeof ev);
  g_autofree char *h = g_strdup_printf("Scanner name: %s\nData filename: %s\nNumber of events: 2\n"
                                       "Data mode: list-mode\nData type: PET\n", scanner, cdf);
  put(cdh, h, -1);
}

static void test_info_loads(void) {
  put_castor_scanner();
  put_castor_list("good", "ring16", 13);
  ok(cli("info", "good.cdh", NULL));
  /* crystal id 10^9 of a 16-crystal scanner; a scanner nobody wrote */
  put_castor_list("id", "ring16", 1000000000);
  refused(cli("info", "id.cdh", NULL), "id.cdh", "does not load", "1000000000", NULL);
  put_castor_list("noscan", "nosuch", 13);
  refused(cli("info", "noscan.cdh", NULL), "noscan.cdh", "does not load", "nosuch", NULL);
  /* a repeated key: the Interfile image of test_images, through info */
  refused(cli("info", "i.hv", NULL), "i.hv:9", "matrix size[3]", "first on line 8", NULL);
}

/* A tiny list-mode scan, reconstructed with a checkpoint; the checkpoint's header edited as
 * the layout of app/cli/tl-cli-checkpoint.c says (text lines, then the voxels). */
static const char *ring_text = "name = ring96\nkind = ring\nrings = 8\nsides = 12\n"
                               "crystals_per_side = 8\ncrystal_pitch_mm = 4\n"
                               "radius_mm = 70\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\n";

static void edit_checkpoint(const char *from, const char *to, const char *old_line,
                            const char *new_line) {
  g_autofree char *p = at(from), *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(p, &bytes, &n, NULL));
  const char *hit = g_strstr_len(bytes, (gssize)n, old_line);
  g_assert_nonnull(hit);
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)bytes, (guint)(hit - bytes));
  g_byte_array_append(b, (const guint8 *)new_line, (guint)strlen(new_line));
  gsize rest = strlen(old_line);
  g_byte_array_append(b, (const guint8 *)hit + rest, (guint)(n - (gsize)(hit - bytes) - rest));
  put(to, b->data, b->len);
  g_byte_array_free(b, TRUE);
}

#define RUN run[0], run[1], run[2], run[3], run[4], run[5], run[6], run[7], run[8], run[9], run[10]

static void test_checkpoint(void) {
  put("ring.txt", ring_text, -1);
  ok(cli("simulate", "-s", "ring.txt", "-n", "3000", "-g", "16x16x8@4", "-o", "scan.tlm", "-q",
         NULL));
  /* 2 iterations of 2 subsets: a run of 4 sub-iterations, checkpointed after each 2 */
  const char *run[] = {"recon", "scan.tlm", "-g", "16x16x8@4", "-a", "osem", "--iterations",
                       "2", "--subsets", "2", "-q"};
  ok(cli(RUN, "-o", "a.nii",
         "--checkpoint", "c.ckpt", NULL));
  ok(cli(RUN, "-o", "b.nii",
         "--resume", "c.ckpt", NULL));
  edit_checkpoint("c.ckpt", "many.ckpt", "sub_iterations = 4\n", "sub_iterations = 1000\n");
  refused(cli(RUN, "-o",
              "m.nii", "--resume", "many.ckpt", NULL),
          "many.ckpt", "1000 sub-iterations", "only 4", NULL);
  edit_checkpoint("c.ckpt", "dup.ckpt", "subsets = 2\n", "subsets = 2\nsub_iterations = 1\n");
  refused(cli(RUN, "-o",
              "d.nii", "--resume", "dup.ckpt", NULL),
          "dup.ckpt:4: key 'sub_iterations' given twice", "first on line 2", NULL);
  edit_checkpoint("c.ckpt", "grid.ckpt", "voxel_mm = 4 4 4\n", "voxel_mm = 4 0 4\n");
  refused(cli(RUN, "-o",
              "g.nii", "--resume", "grid.ckpt", NULL),
          "checkpoint '", "grid.ckpt'", NULL);
}

/* The PETRIC keys enter the checkpoint's options hash: a run resumed with another kappa image,
 * seed or OSEM warm start is refused, and resumed with the same ones it goes on (a hash that
 * ignored a key would let the refused cases through). */
static void put_kappa(const char *name, float value) {
  TlImageGrid g = tl_image_grid_centred(16, 16, 8, 4, 4, 4);
  g_autoptr(TlImage) k = tl_image_new(&g);
  for (gsize i = 0; i < tl_image_grid_n_voxels(&g); i++) k->data[i] = value;
  g_autofree char *p = at(name);
  GError *e = NULL;
  g_assert_true(tl_image_save_nifti(k, p, &e));
  g_assert_no_error(e);
}

static void test_checkpoint_petric_keys(void) {
  put("ring.txt", ring_text, -1);
  ok(cli("simulate", "-s", "ring.txt", "-n", "3000", "-g", "16x16x8@4", "-o", "scan.tlm", "-q",
         NULL));
  put_kappa("k1.nii", 1.0f);
  put_kappa("k2.nii", 2.0f);
  const char *run[] = {"recon", "scan.tlm", "-g", "16x16x8@4", "-a", "bsrem", "--iterations",
                       "2", "--subsets", "2", "-q"};
  ok(cli(RUN, "--prior", "rdp", "--beta", "0.1", "--kappa", "k1.nii", "--osem-epochs", "1",
         "-o", "k.nii", "--checkpoint", "k.ckpt", NULL));
  refused(cli(RUN, "--prior", "rdp", "--beta", "0.1", "--kappa", "k2.nii", "--osem-epochs", "1",
              "-o", "k2out.nii", "--resume", "k.ckpt", NULL),
          "--resume k.ckpt", "other options", NULL);
  refused(cli(RUN, "--prior", "rdp", "--beta", "0.1", "--kappa", "k1.nii", "-o", "e.nii",
              "--resume", "k.ckpt", NULL),
          "--resume k.ckpt", "other options", NULL);
  ok(cli(RUN, "--prior", "rdp", "--beta", "0.1", "--kappa", "k1.nii", "--osem-epochs", "1",
         "-o", "k1out.nii", "--resume", "k.ckpt", NULL));
  const char *svrg[] = {"recon", "scan.tlm", "-g", "16x16x8@4", "-a", "svrg", "--iterations",
                        "2", "--subsets", "2", "-q", "--prior", "rdp", "--beta", "0.1"};
#define SVRG svrg[0], svrg[1], svrg[2], svrg[3], svrg[4], svrg[5], svrg[6], svrg[7], svrg[8], \
             svrg[9], svrg[10], svrg[11], svrg[12], svrg[13], svrg[14]
  ok(cli(SVRG, "--seed", "3", "-o", "s.nii", "--checkpoint", "s.ckpt", NULL));
  refused(cli(SVRG, "--seed", "4", "-o", "s4.nii", "--resume", "s.ckpt", NULL),
          "--resume s.ckpt", "other options", NULL);
  refused(cli(SVRG, "-o", "s1.nii", "--resume", "s.ckpt", NULL), "--resume s.ckpt",
          "other options", NULL);
  ok(cli(SVRG, "--seed", "3", "-o", "s3.nii", "--resume", "s.ckpt", NULL));
#undef SVRG
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  if (argc < 2) g_error("usage: test-hostile-keys [--tap] TOMOLAB-CLI");
  cli_path = argv[1];
  GError *error = NULL;
  dir = g_dir_make_tmp("tl-hostile-keys-XXXXXX", &error);
  g_assert_no_error(error);
  g_test_add_func("/hostile-keys/images", test_images);
  g_test_add_func("/hostile-keys/projection-data", test_projection_data);
  g_test_add_func("/hostile-keys/pet-files", test_pet_files);
  g_test_add_func("/hostile-keys/info-loads", test_info_loads);
  g_test_add_func("/hostile-keys/checkpoint", test_checkpoint);
  g_test_add_func("/hostile-keys/checkpoint-petric-keys", test_checkpoint_petric_keys);
  int rc = g_test_run();
  tl_test_remove_tree(dir);
  g_free(dir);
  return rc;
}
