/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The format table (compute/tl-formats.h): detection by content (not by the name), the
 * writer chosen by extension, errors naming the file, and `tomolab-cli info` / `convert` on
 * files this test writes from the published layouts (a NIfTI-1 header byte by byte, the .tlm
 * header of docs/formats.md), never by the code under test. */
#include "dataset/tl-formats.h"
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>

static const char *cli; /* argv[1]: the tomolab-cli under test */

static char *tmp_dir(void) {
  GError *error = NULL;
  char *d = g_dir_make_tmp("tl-formats-XXXXXX", &error);
  g_assert_no_error(error);
  return d;
}

/* NIfTI-1 single file (nifti1.h): 348-byte header, magic "n+1" at 344, vox_offset 352,
 * float32 (datatype 16), 4 x 3 x 2 voxels of 2 x 3 x 4 mm, qform code 1 with an identity
 * rotation and the first voxel at (-3, -3, -2) mm. Little endian. */
static void write_nifti(const char *path, const float *v) {
  guint8 h[352] = {0};
  gint32 i32 = 348;
  memcpy(h + 0, &i32, 4);                                 /* sizeof_hdr */
  gint16 dim[8] = {3, 4, 3, 2, 1, 1, 1, 1};
  memcpy(h + 40, dim, sizeof dim);                        /* dim[8] */
  gint16 datatype = 16, bitpix = 32;
  memcpy(h + 70, &datatype, 2);
  memcpy(h + 72, &bitpix, 2);
  float pixdim[8] = {1, 2, 3, 4, 1, 1, 1, 1};
  memcpy(h + 76, pixdim, sizeof pixdim);                  /* pixdim[8] */
  float vox_offset = 352, scl_slope = 1;
  memcpy(h + 108, &vox_offset, 4);
  memcpy(h + 112, &scl_slope, 4);
  h[123] = 2;                                             /* xyzt_units: mm */
  gint16 qform = 1;
  memcpy(h + 252, &qform, 2);                             /* qform_code */
  float q[6] = {0, 0, 0, -3, -3, -2};                     /* quatern_b..d, qoffset_x..z */
  memcpy(h + 256, q, sizeof q);
  memcpy(h + 344, "n+1", 4);
  FILE *f = g_fopen(path, "wb");
  g_assert_nonnull(f);
  g_assert_cmpuint(fwrite(h, 1, sizeof h, f), ==, sizeof h);
  g_assert_cmpuint(fwrite(v, sizeof(float), 24, f), ==, 24);
  fclose(f);
}

static void test_detect_by_content(void) {
  g_autofree char *dir = tmp_dir();
  float v[24];
  for (int i = 0; i < 24; i++) v[i] = i * 0.5f - 3;
  /* A NIfTI file named .tlm: the content decides. */
  g_autofree char *p = g_build_filename(dir, "image.tlm", NULL);
  write_nifti(p, v);
  GError *error = NULL;
  const TlFormatClass *f = tl_format_detect(p, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "nifti");
  TlDataKind kind;
  TlImage *im = tl_format_load_any(p, &kind, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(kind, ==, TL_DATA_IMAGE);
  g_assert_cmpuint(im->grid.dims[0], ==, 4);
  g_assert_cmpuint(im->grid.dims[2], ==, 2);
  g_assert_cmpfloat(im->grid.voxel_mm[1], ==, 3);
  g_assert_cmpfloat(im->grid.origin_mm[0], ==, -3);
  for (int i = 0; i < 24; i++) g_assert_cmpfloat(im->data[i], ==, v[i]);
  tl_image_free(im);
  /* Asked for list mode, it names what the file holds. */
  g_assert_null(tl_format_load_kind(p, TL_DATA_PET_LISTMODE, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "image.tlm"));
  g_assert_nonnull(strstr(error->message, "image"));
  g_assert_nonnull(strstr(error->message, "PET list mode"));
  g_clear_error(&error);

  /* A list-mode header (docs/formats.md) under a .nii name is list mode. */
  g_autofree char *q = g_build_filename(dir, "scan.nii", NULL);
  g_assert_true(g_file_set_contents(q, "TOMOLAB-LISTMODE 1\nevents = 0\n", -1, NULL));
  f = tl_format_detect(q, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "tlm");

  /* A raw image and its sidecar (docs/formats.md) whose voxels spell other formats' magic
   * (DICOM's "DICM" at byte 128, a list-mode header at 0) is the raw image. */
  g_autofree char *r = g_build_filename(dir, "voxels.raw", NULL);
  g_autofree char *rs = g_build_filename(dir, "voxels.raw.txt", NULL);
  guint8 bytes[4 * 48] = {0};
  memcpy(bytes, "TOMOLAB-LISTMODE 1\n", 19);
  memcpy(bytes + 128, "DICM", 4);
  g_assert_true(g_file_set_contents(r, (const char *)bytes, sizeof bytes, NULL));
  g_assert_true(g_file_set_contents(rs, "data = voxels.raw\nformat = float32-le\ndims = 4 4 3\n"
                                    "voxel_mm = 1 1 1\norigin_mm = 0 0 0\n", -1, NULL));
  f = tl_format_detect(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "raw");
  im = tl_format_load_any(r, &kind, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(kind, ==, TL_DATA_IMAGE);
  g_assert_cmpmem(im->data, sizeof bytes, bytes, sizeof bytes);
  tl_image_free(im);

  /* Nothing Tomolab reads: the message names the file and the formats it knows. */
  g_autofree char *z = g_build_filename(dir, "mystery.bin", NULL);
  g_assert_true(g_file_set_contents(z, "\x7f" "ELF\x02\x01\x01", 7, NULL));
  g_assert_null(tl_format_detect(z, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "mystery.bin"));
  g_assert_nonnull(strstr(error->message, "nifti"));
  g_clear_error(&error);
  /* A missing file: the system's reason. */
  g_autofree char *m = g_build_filename(dir, "missing.nii", NULL);
  g_assert_null(tl_format_detect(m, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_clear_error(&error);
  tl_test_remove_tree(dir);
}

static void test_output_by_extension(void) {
  GError *error = NULL;
  const TlFormatClass *f = tl_format_for_output("/x/a.NII.GZ", TL_DATA_IMAGE, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(f->name, ==, "nifti");
  f = tl_format_for_output("/x/a.raw", TL_DATA_IMAGE, NULL, &error);
  g_assert_cmpstr(f->name, ==, "raw");
  /* The kind must match: list mode has no .nii writer. */
  g_assert_null(tl_format_for_output("/x/a.nii", TL_DATA_PET_LISTMODE, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "tlm"));
  g_clear_error(&error);
  g_assert_null(tl_format_for_output("/x/a.nii", TL_DATA_IMAGE, "tlm", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* Every entry: a name, a summary, extensions starting with '.', a reader or a writer. */
  const TlFormatClass *const *all = tl_formats();
  guint n = 0;
  for (; all[n]; n++) {
    g_assert_nonnull(all[n]->name);
    g_assert_nonnull(all[n]->summary);
    g_assert_true(all[n]->extensions[0] == '.');
    g_assert_true(all[n]->load || all[n]->save);
    g_assert_true(tl_format_find(all[n]->name) == all[n]);
    for (guint k = 0; k < n; k++) g_assert_cmpstr(all[k]->name, !=, all[n]->name);
  }
  g_assert_cmpuint(n, >=, 5);
  g_autofree char *pat = tl_formats_patterns(TL_DATA_IMAGE, TRUE);
  g_assert_nonnull(strstr(pat, "*.nii.gz"));
  g_assert_null(strstr(pat, "*.tlm"));
}

static int run_cli(const char *const *args, char **out, char **err) {
  GError *error = NULL;
  int status = 0;
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)cli);
  for (guint i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out,
                             err, &status, &error));
  g_assert_no_error(error);
  g_ptr_array_free(argv, TRUE);
  g_assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* info names the format and the grid; convert NIfTI -> raw -> NIfTI keeps every value. */
static void test_cli_info_convert(void) {
  g_autofree char *dir = tmp_dir();
  float v[24];
  for (int i = 0; i < 24; i++) v[i] = 1.0f / (i + 1);
  g_autofree char *a = g_build_filename(dir, "a.nii", NULL);
  g_autofree char *b = g_build_filename(dir, "b.raw", NULL);
  g_autofree char *c = g_build_filename(dir, "c.nii.gz", NULL);
  write_nifti(a, v);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint(run_cli((const char *[]){"info", a, NULL}, &out, &err), ==, 0);
  g_assert_nonnull(strstr(out, "format: nifti"));
  g_assert_nonnull(strstr(out, "4 x 3 x 2 voxels of 2 x 3 x 4 mm"));
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"convert", a, b, NULL}, &out, &err), ==, 0);
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"convert", b, c, NULL}, &out, &err), ==, 0);
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  /* the raw data file is the float32 values themselves (docs/formats.md) */
  g_autofree char *raw = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(b, &raw, &n, NULL));
  g_assert_cmpuint(n, ==, sizeof v);
  g_assert_cmpmem(raw, n, v, sizeof v);
  GError *error = NULL;
  g_autoptr(TlImage) im = tl_format_load_kind(c, TL_DATA_IMAGE, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(im->data, sizeof v, v, sizeof v);
  /* An image into a list-mode name, and an output over its input: refused, exit 2. */
  g_autofree char *t = g_build_filename(dir, "x.tlm", NULL);
  g_assert_cmpint(run_cli((const char *[]){"convert", a, t, NULL}, &out, &err), ==, 2);
  g_assert_nonnull(strstr(err, "x.tlm"));
  g_assert_false(g_file_test(t, G_FILE_TEST_EXISTS));
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"convert", a, a, NULL}, &out, &err), ==, 2);
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_autofree char *after = NULL;
  g_assert_true(g_file_get_contents(a, &after, &n, NULL));
  g_assert_cmpuint(n, ==, 352 + sizeof v);
  /* info on an unreadable file: exit 1, the file named */
  g_autofree char *z = g_build_filename(dir, "z.dat", NULL);
  g_assert_true(g_file_set_contents(z, "hello", -1, NULL));
  g_assert_cmpint(run_cli((const char *[]){"info", z, NULL}, &out, &err), ==, 1);
  g_assert_nonnull(strstr(err, "z.dat"));
  tl_test_remove_tree(dir);
}

/* List mode -> STIR sinogram (histogrammed by convert) -> info -> binned recon: the events all
 * land in the sinogram, and its reconstruction sees the same counts. */
static void test_cli_sinogram(void) {
  g_autofree char *dir = tmp_dir();
  g_autofree char *sc = g_build_filename(dir, "ring.scanner", NULL);
  g_autofree char *lm = g_build_filename(dir, "a.tlm", NULL);
  g_autofree char *hs = g_build_filename(dir, "a.hs", NULL);
  g_autofree char *img = g_build_filename(dir, "x.nii", NULL);
  g_assert_true(g_file_set_contents(sc, "kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\n"
                                        "crystal_pitch_mm = 4\nradius_mm = 30\nring_pitch_mm = 4\n"
                                        "crystal_size_mm = 4 4 10\n", -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint(run_cli((const char *[]){"simulate", "-s", sc, "-p", "cylinder", "-n", "3000",
                                           "--exact-count", "-g", "12x12x2@4", "-q", "-o", lm, NULL},
                          &out, &err), ==, 0);
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"convert", lm, hs, NULL}, &out, &err), ==, 0);
  g_assert_nonnull(strstr(err, "3000 events histogrammed"));
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"info", hs, NULL}, &out, &err), ==, 0);
  g_assert_nonnull(strstr(out, "PET sinogram"));
  g_assert_nonnull(strstr(out, "sum 3000"));
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  g_assert_cmpint(run_cli((const char *[]){"recon", hs, "-g", "12x12x2@4", "--iterations", "2",
                                           "-o", img, NULL}, &out, &err), ==, 0);
  g_assert_nonnull(strstr(err, "3000 counts (sinogram)"));
  g_assert_true(g_file_test(img, G_FILE_TEST_EXISTS));
  tl_test_remove_tree(dir);
}

/* .tlm with delayed coincidences (docs/formats.md): the header's `delayed = N`, the delayed
 * events after the prompts (read back here with fread at the offsets the layout gives), start
 * and duration; a file cut inside the delayed block is refused naming both counts; files
 * without the keys (older ones) still load with none. */
static void test_tlm_delayed(void) {
  g_autofree char *dir = tmp_dir();
  GError *error = NULL;
  g_autoptr(TlScanner) sc = tl_scanner_new_preset("small-animal", &error);
  g_assert_no_error(error);
  g_autoptr(TlListmode) lm = tl_listmode_new(tl_scanner_copy(sc), 5);
  guint cpr = sc->crystals_per_ring;
  for (guint i = 0; i < 5; i++) lm->events[i] = (TlEvent){i, cpr / 2 + i, 0};
  lm->n_delayed = 3;
  lm->delayed = g_new(TlEvent, 3);
  for (guint i = 0; i < 3; i++) lm->delayed[i] = (TlEvent){10 + i, cpr / 2 + 20 + i, 0};
  lm->start_s = 0.5;
  lm->duration_s = 2.25;
  g_autofree char *p = g_build_filename(dir, "d.tlm", NULL);
  g_assert_true(tl_listmode_save(lm, p, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(p, &text, &n, NULL));
  g_assert_nonnull(strstr(text, "\ndelayed = 3\n"));
  g_assert_nonnull(strstr(text, "\nduration_s = 2.25\n"));
  const char *end = strstr(text, "end_header\n");
  g_assert_nonnull(end);
  gsize body = (gsize)(end + strlen("end_header\n") - text);
  g_assert_cmpuint(n - body, ==, (5 + 3) * 12);
  guint32 w[3];
  memcpy(w, text + body + 5 * 12 + 2 * 12, 12); /* the third delayed event, little endian */
  g_assert_cmpuint(GUINT32_FROM_LE(w[0]), ==, 12);
  g_assert_cmpuint(GUINT32_FROM_LE(w[1]), ==, cpr / 2 + 22);
  g_autoptr(TlListmode) back = tl_format_load_kind(p, TL_DATA_PET_LISTMODE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->n_events, ==, 5);
  g_assert_cmpuint(back->n_delayed, ==, 3);
  g_assert_cmpmem(back->delayed, 36, lm->delayed, 36);
  g_assert_cmpfloat(back->duration_s, ==, 2.25);
  g_assert_cmpfloat(back->start_s, ==, 0.5);
  /* cut inside the delayed block */
  g_autofree char *q = g_build_filename(dir, "cut.tlm", NULL);
  g_assert_true(g_file_set_contents(q, text, n - 6, NULL));
  g_assert_null(tl_listmode_load(q, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "3 delayed"));
  g_assert_nonnull(strstr(error->message, "truncated"));
  g_clear_error(&error);
  /* a delayed event that is no line of response: named as such */
  lm->delayed[1] = (TlEvent){0, 1, 0}; /* same side */
  g_assert_false(tl_listmode_save(lm, q, &error));
  g_assert_nonnull(strstr(error->message, "delayed event 1"));
  g_clear_error(&error);
  tl_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  if (argc < 2) g_error("usage: test-formats [--tap] TOMOLAB-CLI");
  cli = argv[1];
  g_test_add_func("/formats/detect-by-content", test_detect_by_content);
  g_test_add_func("/formats/output-by-extension", test_output_by_extension);
  g_test_add_func("/formats/cli-info-convert", test_cli_info_convert);
  g_test_add_func("/formats/cli-sinogram", test_cli_sinogram);
  g_test_add_func("/formats/tlm-delayed", test_tlm_delayed);
  return g_test_run();
}
