/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Hostile input: files this test writes itself (truncated, huge counts, NaN, wrong magic,
 * random bytes, directories, missing files), fed to the CLI verbs as subprocesses and to the
 * readers directly. Every outcome is exit code 1 or 2 with one line on stderr naming the file,
 * the field and the value, never a signal, and inputs are never changed. The CLI's path is the
 * first argument (tests/meson.build), else $TOMOLAB_CLI. */
#define _POSIX_C_SOURCE 200809L /* link, kill, getppid */
#include "tl-test-common.h"
#include "ct/tl-ct-geometry.h"
#include "image/tl-file.h"
#include "image/tl-filter.h"
#include "image/tl-image.h"
#include "pet/scanner/tl-scanner.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/wait.h>

/* The recon verbs call tl_cli_reject_zero / tl_cli_check_outputs (/hostile/recon-verbs). */
#define TL_RECON_VERBS_CHECKED 1

static char *dir; /* a fresh temp folder per test */
static const char *cli_path;

static char *at(const char *name) { return g_build_filename(dir, name, NULL); }

static void put(const char *name, const void *bytes, gssize len) {
  g_autofree char *p = at(name);
  GError *e = NULL;
  g_file_set_contents(p, bytes, len < 0 ? (gssize)strlen(bytes) : len, &e);
  g_assert_no_error(e);
}

static char *get(const char *name, gsize *len) {
  g_autofree char *p = at(name);
  char *text = NULL;
  if (!g_file_get_contents(p, &text, len, NULL)) return NULL;
  return text;
}

typedef struct {
  int code;
  char *err;
} Run;

/* Runs tomolab-cli in `dir`; a signal fails the test at once. */
static Run cli(const char *first, ...) {
  const char *exe = cli_path;
  g_assert_nonnull(exe);
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)exe);
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *)) g_ptr_array_add(argv, (char *)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  Run r = {0, NULL};
  int status = 0;
  GError *e = NULL;
  g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
               &r.err, &status, &e);
  g_assert_no_error(e);
  g_ptr_array_free(argv, TRUE);
  if (WIFSIGNALED(status))
    g_error("tomolab-cli %s ... died of signal %d; stderr: %s", first, WTERMSIG(status), r.err);
  g_assert_true(WIFEXITED(status));
  r.code = WEXITSTATUS(status);
  return r;
}

/* Exit 1 or 2, one valid UTF-8 line on stderr holding every NULL-terminated substring. */
static void refused(Run r, ...) {
  if (r.code != 1 && r.code != 2) g_error("exit %d (expected 1 or 2); stderr: %s", r.code, r.err);
  g_assert_true(g_utf8_validate(r.err, -1, NULL));
  const char *nl = strchr(r.err, '\n');
  if (!nl || nl[1]) g_error("expected one line on stderr, got: %s", r.err);
  va_list ap;
  va_start(ap, r);
  for (const char *want = va_arg(ap, const char *); want; want = va_arg(ap, const char *))
    if (!strstr(r.err, want)) g_error("stderr lacks '%s': %s", want, r.err);
  va_end(ap);
  g_free(r.err);
}

/* ---- writers of (bad) files ---- */

/* A NIfTI-1 single file: 348-byte header, 4 bytes of extension flag, then `data_bytes` of
 * the float32 voxels (fewer than the header claims for a truncated file). */
static void put_nifti(const char *name, int nx, int ny, int nz, const float *voxels,
                      gsize data_bytes) {
  guint8 h[352] = {0};
  gint32 i32 = 348;
  memcpy(h, &i32, 4);
  gint16 dim[8] = {3, (gint16)nx, (gint16)ny, (gint16)nz, 1, 1, 1, 1};
  memcpy(h + 40, dim, sizeof dim);
  gint16 dt = 16, bitpix = 32; /* DT_FLOAT32 */
  memcpy(h + 70, &dt, 2);
  memcpy(h + 72, &bitpix, 2);
  float pixdim[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  memcpy(h + 76, pixdim, sizeof pixdim);
  float off = 352;
  memcpy(h + 108, &off, 4);
  memcpy(h + 344, "n+1", 4);
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, h, sizeof h);
  if (data_bytes) g_byte_array_append(b, (const guint8 *)voxels, (guint)data_bytes);
  put(name, b->data, b->len);
  g_byte_array_unref(b);
}

/* A list-mode file around a scanner block and `n` events of (0, 1, 0). */
static void put_tlm(const char *name, const char *scanner, guint n_claimed, guint n_written) {
  GString *s = g_string_new("TOMOLAB-LISTMODE 1\n");
  g_string_append_printf(s, "events = %u\nevent_bytes = 12\nbyte_order = little-endian\ntof = 0\n"
                            "begin_scanner\n%send_scanner\nend_header\n", n_claimed, scanner);
  for (guint i = 0; i < n_written; i++) {
    guint32 ev[3] = {GUINT32_TO_LE(0), GUINT32_TO_LE(1), 0};
    g_string_append_len(s, (const char *)ev, 12);
  }
  put(name, s->str, s->len);
  g_string_free(s, TRUE);
}

static const char *table_scanner(const char *ring_of_row3) {
  static char buf[512];
  g_snprintf(buf, sizeof buf,
             "kind = ring\ncrystal_size_mm = 1 1 1\ncrystals = 4\n"
             "10 0 0 -1 0 0 0 0\n0 10 0 0 -1 0 1 0\n-10 0 0 1 0 0 2 0\n0 -10 0 0 1 0 3 %s\n",
             ring_of_row3);
  return buf;
}

/* ---- 1. scanner descriptions ---- */

static void test_scanner(void) {
  /* ring id 2^32 - 1: n_rings = max + 1 wrapped to 0 and divided by zero (SIGFPE) */
  put("wrap.txt", table_scanner("4294967295"), -1);
  refused(cli("simulate", "--scanner", "wrap.txt", "-o", "o.tlm", "-q", NULL), "wrap.txt:7",
          "ring 4.29497e+09", "expected integers in [0, 4)", NULL);
  /* the same inside a list-mode file */
  put_tlm("wrap.tlm", table_scanner("4294967295"), 1, 1);
  refused(cli("recon", "wrap.tlm", "-o", "r.nii", "-q", NULL), "wrap.tlm (scanner)",
          "ring 4.29497e+09", NULL);
  /* an empty table */
  put("empty.txt", "kind = ring\ncrystal_size_mm = 1 1 1\ncrystals = 0\n", -1);
  refused(cli("simulate", "--scanner", "empty.txt", "-o", "o.tlm", "-q", NULL), "empty.txt",
          "'crystals'", "value 0", NULL);
  /* 2^31 rows announced by a 60-byte file: refused before any allocation (g_malloc aborted) */
  put("huge.txt", "kind = ring\ncrystal_size_mm = 1 1 1\ncrystals = 2147483648\n", -1);
  refused(cli("simulate", "--scanner", "huge.txt", "-o", "o.tlm", "-q", NULL), "huge.txt:3",
          "'crystals'", "2147483648", "[0, 2097152]", NULL);
  put("many.txt", "kind = ring\ncrystal_size_mm = 1 1 1\ncrystals = 2000000\n10 0 0 -1 0 0 0 0\n", -1);
  refused(cli("simulate", "--scanner", "many.txt", "-o", "o.tlm", "-q", NULL), "many.txt",
          "'crystals'", "of 2000000 rows", NULL);
  /* a layout of 2^60 crystals */
  put("layout.txt", "kind = ring\nrings = 1048576\nsides = 1048576\ncrystals_per_side = 1\n"
                    "crystal_pitch_mm = 1e-9\nradius_mm = 1000\nring_pitch_mm = 1\ncrystal_size_mm = 1 1 1\n", -1);
  refused(cli("simulate", "--scanner", "layout.txt", "-o", "o.tlm", "-q", NULL), "layout.txt",
          "2^21 crystals", NULL);
  /* a 30-byte preset override of 4.6 * 10^6 crystals: 20 s of work (found by fuzz-scanner) */
  put("rings.txt", "preset = dmi\nrings = 8400\n", -1);
  gint64 t0 = g_get_monotonic_time();
  refused(cli("simulate", "--scanner", "rings.txt", "-o", "o.tlm", "-q", NULL), "rings.txt",
          "2^21 crystals", NULL);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
  /* out-of-range doubles (a cast of them is undefined; UBSan runs this suite too) */
  put("big.txt", "kind = ring\ncrystal_size_mm = 1e300 1 1\ncrystals = 2\n"
                 "1e300 0 0 -1 0 0 0 0\n0 10 0 0 -1 0 1 1e300\n", -1);
  refused(cli("simulate", "--scanner", "big.txt", "-o", "o.tlm", "-q", NULL), "big.txt:5",
          "ring 1e+300", NULL);
  put("bigsize.txt", "kind = ring\ncrystal_size_mm = 1e300 1 1\ncrystals = 2\n"
                     "10 0 0 -1 0 0 0 0\n0 10 0 0 -1 0 1 0\n", -1);
  refused(cli("simulate", "--scanner", "bigsize.txt", "-o", "o.tlm", "-q", NULL), "bigsize.txt",
          "crystal_size_mm': value 1e+300", NULL);
}

/* ---- 2. NIfTI ---- */

static void test_nifti(void) {
  float v[64];
  for (int i = 0; i < 64; i++) v[i] = 0.01f;
  /* truncated: 63 of 64 voxels (it loaded zero-filled) */
  put_nifti("trunc.nii", 4, 4, 4, v, 63 * 4);
  refused(cli("ct-simulate", "--phantom", "trunc.nii", "-o", "s.tlct", "-q", NULL), "trunc.nii",
          "truncated", "604 bytes", "need 608", NULL);
  /* a 352-byte header claiming 2000 x 2000 x 1000 voxels (the process went past 10 GB) */
  put_nifti("huge.nii", 2000, 2000, 1000, v, 0);
  refused(cli("ct-simulate", "--phantom", "huge.nii", "-o", "s.tlct", "-q", NULL), "huge.nii",
          "2000 x 2000 x 1000", "at most 2^28", NULL);
  /* NaN and infinity are refused as for .raw (they reached a reconstruction as 0) */
  v[5] = NAN;
  put_nifti("nan.nii", 4, 4, 4, v, sizeof v);
  refused(cli("ct-simulate", "--phantom", "nan.nii", "-o", "s.tlct", "-q", NULL), "nan.nii",
          "voxel 5", "nan", NULL);
  v[5] = INFINITY;
  put_nifti("inf.nii", 4, 4, 4, v, sizeof v);
  refused(cli("ct-simulate", "--phantom", "inf.nii", "-o", "s.tlct", "-q", NULL), "inf.nii",
          "voxel 5", "inf", NULL);
  /* random bytes: a reason, not "nifticlib failed" */
  guint8 junk[600];
  GRand *rand = g_rand_new_with_seed(7);
  for (gsize i = 0; i < sizeof junk; i++) junk[i] = (guint8)g_rand_int(rand);
  g_rand_free(rand);
  put("junk.nii", junk, sizeof junk);
  refused(cli("ct-simulate", "--phantom", "junk.nii", "-o", "s.tlct", "-q", NULL), "junk.nii",
          "sizeof_hdr", NULL);
  put("short.nii", junk, 100);
  refused(cli("ct-simulate", "--phantom", "short.nii", "-o", "s.tlct", "-q", NULL), "short.nii",
          "100 bytes", "at least 348", NULL);
  g_autofree char *d = at("adir.nii");
  g_mkdir(d, 0700);
  refused(cli("ct-simulate", "--phantom", "adir.nii", "-o", "s.tlct", "-q", NULL), "adir.nii",
          "is a directory", NULL);
  refused(cli("ct-simulate", "--phantom", "missing.nii", "-o", "s.tlct", "-q", NULL),
          "missing.nii", "No such file", NULL);
}

/* ---- raw images: NaN, size, and the pair replaced as one ---- */

static void test_raw(void) {
  TlImageGrid g = tl_image_grid_centred(2, 2, 1, 1, 1, 1);
  g_autoptr(TlImage) a = tl_image_new(&g), b = tl_image_new(&g);
  for (int i = 0; i < 4; i++) a->data[i] = 1, b->data[i] = 2;
  g_autofree char *p = at("t.raw");
  GError *e = NULL;
  g_assert_true(tl_image_save_raw(a, p, &e));
  g_assert_no_error(e);
  /* a crash after the sidecar names the pending data file: the new pair */
  g_autofree char *pend = at(".t.raw.new-1-0");
  g_assert_true(g_file_set_contents(pend, (const char *)b->data, 16, NULL));
  g_autofree char *side = get("t.raw.txt", NULL);
  char *pos = strstr(side, "data = t.raw\n");
  g_assert_nonnull(pos);
  GString *s = g_string_new_len(side, pos - side);
  g_string_append(s, "data = .t.raw.new-1-0\n");
  g_string_append(s, pos + strlen("data = t.raw\n"));
  put("t.raw.txt", s->str, s->len);
  g_autoptr(TlImage) got = tl_image_load_raw(p, &e);
  g_assert_no_error(e);
  g_assert_cmpfloat(got->data[3], ==, 2);
  /* ...and after the pending file was renamed over the data file: still the new pair */
  g_assert_cmpint(g_rename(pend, p), ==, 0);
  g_autoptr(TlImage) got2 = tl_image_load_raw(p, &e);
  g_assert_no_error(e);
  g_assert_cmpfloat(got2->data[0], ==, 2);
  g_string_free(s, TRUE);
  /* a save leaves no pending or temp file behind, and the sidecar names the data file */
  g_assert_true(tl_image_save_raw(a, p, &e));
  g_autofree char *side2 = get("t.raw.txt", NULL);
  g_assert_nonnull(strstr(side2, "data = t.raw\n"));
  GDir *dh = g_dir_open(dir, 0, NULL);
  for (const char *n; (n = g_dir_read_name(dh));) g_assert_false(n[0] == '.');
  g_dir_close(dh);
  /* a pending file of a killed save is removed at the next save; a live process's is kept */
  int dead = 4194303;
  while (kill(dead, 0) == 0 || errno != ESRCH) dead--;
  g_autofree char *dead_name = g_strdup_printf(".t.raw.new-%d-0", dead);
  g_autofree char *live_name = g_strdup_printf(".t.raw.new-%d-0", (int)getppid());
  put(dead_name, "x", 1);
  put(live_name, "x", 1);
  g_assert_true(tl_image_save_raw(b, p, &e));
  g_autofree char *dp = at(dead_name), *lp = at(live_name);
  g_assert_false(g_file_test(dp, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(lp, G_FILE_TEST_EXISTS));
  g_remove(lp);
  /* NaN in a raw file */
  float bad[4] = {1, NAN, 1, 1};
  g_assert_true(g_file_set_contents(p, (const char *)bad, 16, NULL));
  refused(cli("ct-simulate", "--phantom", "t.raw", "-o", "s.tlct", "-q", NULL), "t.raw",
          "voxel 1", "nan", NULL);
  g_assert_true(g_file_set_contents(p, (const char *)bad, 15, NULL));
  refused(cli("ct-simulate", "--phantom", "t.raw", "-o", "s.tlct", "-q", NULL), "t.raw",
          "15 bytes", "need 16", "truncated", NULL);
}

/* ---- 3. CT geometry: what loads saves and loads back identically ---- */

static void test_geometry(void) {
  static const double scales[] = {1, 1e-150, 1e-160, 1e-200, 1e-300, 1e-310, 1e150, 1e300};
  for (gsize k = 0; k < G_N_ELEMENTS(scales); k++)
    for (int third_only = 0; third_only < 2; third_only++) {
      double P[12] = {800, 0, 320, 160000, 0, 800, 320, 160000, 0, 0, 1, 500};
      for (int i = third_only ? 8 : 0; i < 12; i++) P[i] *= scales[k];
      GString *t = g_string_new("tomolab-ct-geometry = 1\nbeam = cone\ndetector = 64 64\nviews = 1\n"
                                "view 0 =");
      for (int i = 0; i < 12; i++) {
        char b[32];
        tl_format_double(b, P[i]);
        g_string_append_printf(t, " %s", b);
      }
      g_string_append_c(t, '\n');
      g_autoptr(GError) e = NULL;
      g_autoptr(TlCtGeometry) g = tl_ct_geometry_from_text(t->str, "g.txt", &e);
      g_string_free(t, TRUE);
      if (!g) { /* refused: with the view named */
        g_assert_nonnull(strstr(e->message, "view 0"));
        continue;
      }
      g_autofree char *saved = tl_ct_geometry_to_text(g);
      g_autoptr(TlCtGeometry) again = tl_ct_geometry_from_text(saved, "saved", &e);
      g_assert_no_error(e);
      g_autofree char *saved2 = tl_ct_geometry_to_text(again);
      g_assert_cmpstr(saved, ==, saved2);
      g_assert_cmpmem(g->matrices, 96, again->matrices, 96);
    }
  /* a 'views' count the file cannot hold is refused before 2^24 matrices are allocated */
  put("views.txt", "tomolab-ct-geometry = 1\nbeam = cone\ndetector = 4 4\nviews = 16777216\n", -1);
  refused(cli("ct-simulate", "--geometry", "views.txt", "-o", "s.tlct", "-q", NULL), "views.txt:4",
          "'views'", "16777216", NULL);
  put("det.txt", "tomolab-ct-geometry = 1\nbeam = cone\ndetector = 1e300 -5\nviews = 1\n", -1);
  refused(cli("ct-simulate", "--geometry", "det.txt", "-o", "s.tlct", "-q", NULL), "det.txt:3",
          "'detector'", "1e300 -5", NULL);
}

/* ---- 4. numbers on the command line ---- */

static void test_numbers(void) {
  static const char *grids[][2] = {
      {"-2x1x1@1", "'-2'"}, {"4294967304x1x1@1", "'4294967304'"}, {"8x8x8@1junk", "'1junk'"},
      {"8x8x8@nan", "'nan'"}, {"8x8x8@1,2", "expected NXxNYxNZ"}, {"8x8@1", "expected NXxNYxNZ"},
      {"2000x2000x1000@1", "2^28"}, {"8x8x8@0", "'0'"}, {" 8x8x8@1", "' 8'"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(grids); i++) {
    refused(cli("simulate", "--grid", grids[i][0], "-o", "o.tlm", "-q", NULL), "--grid",
            grids[i][1], NULL);
    refused(cli("ct-simulate", "--grid", grids[i][0], "-o", "o.tlct", "-q", NULL), "--grid",
            grids[i][1], NULL);
  }
  refused(cli("simulate", "--threads", "2x", "-o", "o.tlm", NULL), "2x", NULL);
}

/* ---- 5. outputs never harm inputs ---- */

static void test_outputs(void) {
  refused(cli("simulate", "--truth", "X.nii", "-o", "X.nii", NULL), "--truth 'X.nii'", "-o", NULL);
  refused(cli("simulate", "--truth", "X.nii", "--mu", "X.nii", "-o", "o.tlm", NULL), "--mu 'X.nii'",
          "--truth", NULL);
  /* the scanner file named as the output: refused, the file unchanged */
  const char *scanner = "preset = small-animal\nrings = 4\n";
  put("S.txt", scanner, -1);
  refused(cli("simulate", "--scanner", "S.txt", "-o", "S.txt", NULL), "-o 'S.txt'", "--scanner",
          NULL);
  g_autofree char *after = get("S.txt", NULL);
  g_assert_cmpstr(after, ==, scanner);
  /* through another name of the same file (a hard link: same inode) */
  g_autofree char *s = at("S.txt"), *l = at("L.txt");
  g_assert_cmpint(link(s, l), ==, 0);
  refused(cli("simulate", "--scanner", "S.txt", "-o", "L.txt", NULL), "-o 'L.txt'", NULL);
  put("geo.txt", "tomolab-ct-geometry = 1\n", -1);
  refused(cli("ct-simulate", "--geometry", "geo.txt", "--save-geometry", "geo.txt", "-o", "s.tlct",
              NULL), "--save-geometry 'geo.txt'", "--geometry", NULL);
  /* unwritable: found before the work, not after it */
  gint64 t0 = g_get_monotonic_time();
  refused(cli("simulate", "--events", "1e9", "-o", "no/such/dir/o.tlm", NULL), "no/such/dir/o.tlm",
          "No such file", NULL);
  refused(cli("simulate", "--events", "1e9", "-o", "o.tlm", "--truth", ".", NULL), "--truth '.'",
          "is a directory", NULL);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 20 * G_USEC_PER_SEC);
  /* a temp file of a killed save (a PID that no longer runs) is removed at the next save
   * there; one of a live process is kept */
  int dead = 4194303;
  while (kill(dead, 0) == 0 || errno != ESRCH) dead--;
  g_autofree char *stale = g_strdup_printf(".o.tlm.tmp-%d-0", dead);
  g_autofree char *live = g_strdup_printf(".o.tlm.tmp-%d-0", (int)getppid());
  put(stale, "x", 1);
  put(live, "x", 1);
  Run r = cli("simulate", "--scanner", "small-animal", "--phantom", "cylinder", "--grid", "16x16x16@2", "--events", "50",
              "-o", "o.tlm", "-q", NULL);
  g_assert_cmpint(r.code, ==, 0);
  g_free(r.err);
  g_autofree char *sp = at(stale), *lp = at(live);
  g_assert_false(g_file_test(sp, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(lp, G_FILE_TEST_EXISTS));
}

/* ---- 6. messages ---- */

static void test_messages(void) {
  /* random bytes: no raw bytes in the message (GTK refused the text) */
  guint8 junk[200];
  GRand *rand = g_rand_new_with_seed(3);
  for (gsize i = 0; i < sizeof junk; i++) junk[i] = (guint8)g_rand_int_range(rand, 128, 256);
  g_rand_free(rand);
  put("junk.tlm", junk, sizeof junk);
  refused(cli("recon", "junk.tlm", "-o", "r.nii", NULL), "junk.tlm", "not a Tomolab list-mode",
          "\\x", NULL);
  /* binary inside a header */
  put("bin.tlm", "TOMOLAB-LISTMODE 1\nevents = 1\xff\xfe\nend_header\n", -1);
  refused(cli("recon", "bin.tlm", "-o", "r.nii", NULL), "bin.tlm:2", "byte 0xff", NULL);
  put("nul.txt", "kind = ring\n\0crystals = 3\n", 26);
  refused(cli("simulate", "--scanner", "nul.txt", "-o", "o.tlm", NULL), "nul.txt:2", "byte 0x00",
          NULL);
  /* a scanner file that does not exist is no "unknown scanner preset" */
  refused(cli("simulate", "--scanner", "nope.txt", "-o", "o.tlm", NULL), "nope.txt",
          "No such file", NULL);
  refused(cli("simulate", "--scanner", "nope", "-o", "o.tlm", NULL), "nope", "preset", NULL);
  /* a directory is a directory, not "header ends before end_header" */
  g_autofree char *d1 = at("d.tlm"), *d2 = at("d.tlct");
  g_mkdir(d1, 0700);
  g_mkdir(d2, 0700);
  refused(cli("recon", "d.tlm", "-o", "r.nii", NULL), "d.tlm", "is a directory", NULL);
  refused(cli("ct-recon", "d.tlct", "-o", "r.nii", NULL), "d.tlct", "is a directory", NULL);
  /* truncated and oversized event sections, a missing key, a wrong magic */
  const char *sc = "preset = small-animal\nrings = 2\n";
  put_tlm("short.tlm", sc, 3, 2);
  refused(cli("recon", "short.tlm", "-o", "r.nii", NULL), "short.tlm", "truncated", "3 events",
          NULL);
  put_tlm("long.tlm", sc, 1, 2);
  refused(cli("recon", "long.tlm", "-o", "r.nii", NULL), "long.tlm", "oversized", NULL);
  put("noev.tlm", "TOMOLAB-LISTMODE 1\nevent_bytes = 12\nend_header\n", -1);
  refused(cli("recon", "noev.tlm", "-o", "r.nii", NULL), "noev.tlm", "'events'", NULL);
  put("ev.tlm", "TOMOLAB-LISTMODE 1\nevents = -1\nend_header\n", -1);
  refused(cli("recon", "ev.tlm", "-o", "r.nii", NULL), "ev.tlm:2", "'events'", "'-1'", NULL);
  put("ct.tlct", "TOMOLAB-CT 1\nvalues = nan\nend_header\n", -1);
  refused(cli("ct-recon", "ct.tlct", "-o", "r.nii", NULL), "ct.tlct:2", "'values'", "'nan'", NULL);
  put("ct2.tlct", "TOMOLAB-CX 1\n", -1);
  refused(cli("ct-recon", "ct2.tlct", "-o", "r.nii", NULL), "ct2.tlct", "TOMOLAB-CT 1", NULL);
  /* a non-UTF-8 file name */
  refused(cli("recon", "\xff\xfe.tlm", "-o", "r.nii", NULL), "No such file", NULL);
}

/* ---- 4, 5 in the recon verbs: --subsets 0, an output over an input ---- */

static void test_recon_verbs(void) {
  if (!TL_RECON_VERBS_CHECKED) {
    g_test_skip("tl-cli-recon.c / tl-cli-ct-recon.c do not call tl_cli_check_outputs yet");
    return;
  }
  put("dual.txt", "kind = dual-head\nhead_crystals = 4 3\nhead_pitch_mm = 2 2\n"
                  "head_distance_mm = 50\ncrystal_size_mm = 2 2 10\n", -1);
  Run r = cli("simulate", "--scanner", "dual.txt", "--phantom", "point", "--grid", "8x8x8@4",
              "--events", "30", "--truth", "t.nii", "-o", "a.tlm", "-q", NULL);
  g_assert_cmpint(r.code, ==, 0);
  g_free(r.err);
  gsize n0, n1;
  g_autofree char *before = get("t.nii", &n0);
  /* --subsets 0 silently became 10 */
  refused(cli("recon", "a.tlm", "--algo", "osem", "--subsets", "0", "-o", "r.nii", NULL),
          "--subsets 0", NULL);
  refused(cli("recon", "a.tlm", "--algo", "osem", "--subsets=0", "-o", "r.nii", NULL),
          "--subsets 0", NULL);
  /* the truth and the attenuation map are inputs */
  refused(cli("recon", "a.tlm", "--truth", "t.nii", "-o", "t.nii", NULL), "-o 't.nii'", "--truth",
          NULL);
  refused(cli("recon", "a.tlm", "--attenuation", "t.nii", "-o", "t.nii", NULL), "-o 't.nii'",
          NULL);
  refused(cli("recon", "a.tlm", "-o", "a.tlm", NULL), "-o 'a.tlm'", NULL);
  refused(cli("recon", "a.tlm", "-o", "no/dir/r.nii", NULL), "cannot be written", NULL);
  /* randoms: an unknown source; a file without delayed coincidences */
  refused(cli("recon", "a.tlm", "--randoms", "pairs", "-o", "r.nii", NULL),
          "--randoms 'pairs'", "expected delayeds", NULL);
  refused(cli("recon", "a.tlm", "--randoms", "singles", "-o", "r.nii", NULL), "a.tlm",
          "no singles rates", NULL);
  refused(cli("recon", "a.tlm", "--randoms", "delayeds", "-o", "r.nii", NULL), "a.tlm",
          "no delayed coincidences", NULL);
  /* scatter: sss needs the mu-map; the rounds and the output need sss; estimate files that
   * are not one, hold a NaN, or are for another scanner; outputs over inputs */
  refused(cli("recon", "a.tlm", "--scatter", "sss", "-o", "r.nii", NULL),
          "scatter = sss needs attenuation", NULL);
  refused(cli("recon", "a.tlm", "--scatter-rounds", "3", "-o", "r.nii", NULL),
          "need scatter = sss", NULL);
  refused(cli("recon", "a.tlm", "--scatter-restart", "-o", "r.nii", NULL), "scatter-restart",
          "need scatter = sss", NULL);
  refused(cli("recon", "a.tlm", "--scatter", "sss", "--attenuation", "t.nii", "--scatter-restart",
              "--start", "t.nii", "-o", "r.nii", NULL), "scatter-restart = true",
          "start = t.nii", NULL);
  refused(cli("recon", "a.tlm", "--scatter", "sss", "--attenuation", "t.nii", "--scatter-rounds",
              "0x", "-o", "r.nii", NULL), "scatter-rounds", NULL);
  refused(cli("recon", "a.tlm", "--scatter", "sss", "--attenuation", "t.nii", "--scatter-out",
              "t.nii", "-o", "r.nii", NULL), "--scatter-out 't.nii'", NULL);
  put("junk.tlsc", "TOMOLAB-SCATTER 9\n", -1);
  refused(cli("recon", "a.tlm", "--scatter", "junk.tlsc", "-o", "r.nii", NULL), "junk.tlsc",
          "not a Tomolab scatter estimate", NULL);
  refused(cli("recon", "a.tlm", "--scatter", "junk.tlsc", "-o", "junk.tlsc", NULL),
          "-o 'junk.tlsc'", NULL);
  const char *sct = "TOMOLAB-SCATTER 1\ntransaxial_samples = 1\nring_samples = 1\ntof_bins = 0\n"
                    "values = 1\nvalue_bytes = 4\nbyte_order = little-endian\nscale = 1\n"
                    "transaxial = 0\nrings = 0\nbegin_scanner\nkind = ring\nrings = 1\nsides = 4\n"
                    "crystals_per_side = 1\ncrystal_pitch_mm = 4\nradius_mm = 40\n"
                    "crystal_size_mm = 4 4 10\nend_scanner\nend_header\n";
  for (int k = 0; k < 2; k++) {
    GString *f = g_string_new(sct);
    float v = k ? NAN : 1.0f;
    g_string_append_len(f, (const char *)&v, 4);
    put(k ? "nan.tlsc" : "ring.tlsc", f->str, f->len);
    g_string_free(f, TRUE);
  }
  refused(cli("recon", "a.tlm", "--scatter", "nan.tlsc", "-o", "r.nii", NULL), "nan.tlsc",
          "value 0", "nan", NULL);
  refused(cli("recon", "a.tlm", "--scatter", "ring.tlsc", "-o", "r.nii", NULL), "ring.tlsc",
          "scatter estimate is for scanner", "4 crystals", "24 crystals", NULL);
  /* Bq/mL: a file without a duration, a bad factor, an unknown isotope, a frame alone */
  refused(cli("recon", "a.tlm", "--calibration", "2", "-o", "r.nii", NULL), "a.tlm",
          "give --duration", NULL);
  refused(cli("recon", "a.tlm", "--calibration", "nan", "--duration", "10", "-o", "r.nii", NULL),
          "--calibration", "nan", NULL);
  refused(cli("recon", "a.tlm", "--calibration", "0", "--duration", "10", "-o", "r.nii", NULL),
          "--calibration '0'", "> 0", NULL);
  refused(cli("recon", "a.tlm", "--calibration", "2", "--duration", "-5", "-o", "r.nii", NULL),
          "--duration", "-5", NULL);
  refused(cli("recon", "a.tlm", "--calibration", "2", "--duration", "10", "--isotope", "X19",
              "-o", "r.nii", NULL), "isotope 'X19'", "F18", NULL);
  refused(cli("recon", "a.tlm", "--duration", "10", "-o", "r.nii", NULL), "need calibration",
          NULL);
  refused(cli("calibrate", "t.nii", "--concentration", "-3", "--duration", "10", NULL),
          "t.nii", "known -3 Bq/mL", NULL);
  g_autofree char *after = get("t.nii", &n1);
  g_assert_cmpmem(before, n0, after, n1);
  r = cli("ct-simulate", "--grid", "8x8x4@2", "--views", "3", "--detector", "10x6",
          "--projector", "joseph", "--truth", "ct.nii", "-o", "a.tlct", "-q", NULL);
  g_assert_cmpint(r.code, ==, 0);
  g_free(r.err);
  refused(cli("ct-recon", "a.tlct", "--truth", "ct.nii", "-o", "ct.nii", NULL), "-o 'ct.nii'",
          NULL);
  refused(cli("ct-recon", "a.tlct", "--algo", "sart", "--subsets", "0", "-o", "r.nii", NULL),
          "--subsets 0", NULL);
}

/* ---- normalisation files (.tln) for recon --norm, and norm-estimate's options ---- */

/* `src` with its header line `from` replaced by `to` and the float at byte `off` after the
 * header set to v (off < 0: none), cut bytes removed at the end. */
static void put_tln(const char *name, const char *src, const char *from, const char *to,
                    gssize off, float v, gsize cut) {
  gsize len = 0;
  g_autofree char *data = get(src, &len);
  g_assert_nonnull(data);
  gsize hlen = (gsize)(strstr(data, "end_header\n") - data) + strlen("end_header\n");
  GString *s = g_string_new_len(data, (gssize)hlen);
  if (from) {
    char *p = strstr(s->str, from);
    g_assert_nonnull(p);
    gsize pos = (gsize)(p - s->str);
    g_string_erase(s, (gssize)pos, (gssize)strlen(from));
    g_string_insert(s, (gssize)pos, to);
  }
  gsize h2 = s->len;
  g_string_append_len(s, data + hlen, (gssize)(len - hlen));
  if (off >= 0) memcpy(s->str + h2 + off, &v, 4); /* little-endian hosts: the file's order */
  put(name, s->str, (gssize)(s->len - cut));
  g_string_free(s, TRUE);
}

static void test_norm(void) {
  put("ring.txt", "kind = ring\nrings = 3\nsides = 8\ncrystals_per_side = 3\n"
                  "crystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\n"
                  "crystal_size_mm = 4 4 10\n", -1);
  put("dual.txt", "kind = dual-head\nhead_crystals = 4 3\nhead_pitch_mm = 2 2\n"
                  "head_distance_mm = 50\ncrystal_size_mm = 2 2 10\n", -1);
  Run r = cli("simulate", "--scanner", "ring.txt", "--phantom", "cylinder", "--grid", "8x8x4@4",
              "--no-attenuation", "--events", "3000", "-o", "a.tlm", "-q", NULL);
  g_assert_cmpint(r.code, ==, 0);
  g_free(r.err);
  r = cli("simulate", "--scanner", "dual.txt", "--phantom", "point", "--grid", "8x8x8@4",
          "--events", "300", "-o", "d.tlm", "-q", NULL);
  g_assert_cmpint(r.code, ==, 0);
  g_free(r.err);
  r = cli("norm-estimate", "a.tlm", "--radius", "10", "--length", "10", "--grid", "8x8x4@4",
          "-o", "n.tln", "-q", NULL);
  if (r.code != 0) g_error("norm-estimate: %s", r.err);
  g_free(r.err);
  r = cli("norm-estimate", "d.tlm", "--radius", "5", "--length", "10", "--grid", "8x8x8@4",
          "-o", "other.tln", "-q", NULL);
  if (r.code != 0) g_error("norm-estimate: %s", r.err);
  g_free(r.err);
  gsize n0, n1;
  g_autofree char *before = get("n.tln", &n0);
  /* bad files: each refused with the file and the value */
  put_tln("trunc.tln", "n.tln", NULL, NULL, -1, 0, 4);
  refused(cli("recon", "a.tlm", "--norm", "trunc.tln", "-o", "r.nii", "-q", NULL), "trunc.tln",
          "truncated", NULL);
  put_tln("neg.tln", "n.tln", NULL, NULL, 4 * 5, -0.25f, 0);
  refused(cli("recon", "a.tlm", "--norm", "neg.tln", "-o", "r.nii", "-q", NULL), "neg.tln",
          "efficiency of crystal 5 = -0.25", NULL);
  put_tln("nan.tln", "n.tln", NULL, NULL, 4 * 72, NAN, 0);
  refused(cli("recon", "a.tlm", "--norm", "nan.tln", "-o", "r.nii", "-q", NULL), "nan.tln",
          "axial factor of rings (0, 0) = nan", NULL);
  put_tln("size.tln", "n.tln", "crystals = 72", "crystals = 71", -1, 0, 0);
  refused(cli("recon", "a.tlm", "--norm", "size.tln", "-o", "r.nii", "-q", NULL), "size.tln",
          "wrong size", "crystals = 71", NULL);
  put_tln("zero.tln", "n.tln", "crystals = 72", "crystals = 0", -1, 0, 0);
  refused(cli("recon", "a.tlm", "--norm", "zero.tln", "-o", "r.nii", "-q", NULL), "zero.tln",
          "crystals = 0", NULL);
  put_tln("huge.tln", "n.tln", "crystals = 72", "crystals = 4294967296", -1, 0, 0);
  refused(cli("recon", "a.tlm", "--norm", "huge.tln", "-o", "r.nii", "-q", NULL), "huge.tln",
          "'crystals'", "4294967296", NULL);
  refused(cli("recon", "a.tlm", "--norm", "other.tln", "-o", "r.nii", "-q", NULL), "other.tln",
          "for scanner", "but the data are from scanner", NULL);
  refused(cli("recon", "a.tlm", "--norm", "missing.tln", "-o", "r.nii", "-q", NULL),
          "missing.tln", "No such file", NULL);
  refused(cli("recon", "a.tlm", "--norm", "n.tln", "-o", "n.tln", NULL), "-o 'n.tln'", NULL);
  refused(cli("info", "neg.tln", NULL), "neg.tln", "-0.25", NULL);
  /* norm-estimate: options */
  refused(cli("norm-estimate", "a.tlm", "--length", "10", "-o", "x.tln", NULL), "--radius", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "nan", "--length", "10", "-o", "x.tln", NULL),
          "--radius", "nan", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "-3", "--length", "10", "-o", "x.tln", NULL),
          "--radius", "-3", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "30", "--length", "10", "--grid", "8x8x4@4",
              "-o", "x.tln", "-q", NULL), "beyond the grid", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "10", "--length", "10", "--centre", "1,2",
              "-o", "x.tln", NULL), "--centre '1,2'", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "10", "--length", "10", "--rounds", "0",
              "-o", "x.tln", NULL), "--rounds 0", NULL);
  refused(cli("norm-estimate", "a.tlm", "--radius", "10", "--length", "10", "-o", "a.tlm", NULL),
          "-o 'a.tlm'", NULL);
  refused(cli("norm-estimate", "ring.txt", "--radius", "10", "--length", "10", "-o", "x.tln",
              "-q", NULL), "ring.txt", "PET scanner", "expected PET list mode", NULL);
  g_autofree char *x = at("x.tln");
  g_assert_false(g_file_test(x, G_FILE_TEST_EXISTS)); /* nothing written by a refused run */
  /* convert --norm: CASToR list mode only, and the normalisation of the data's scanner */
  refused(cli("convert", "a.tlm", "b.tlm", "--norm", "n.tln", NULL), "--norm", "CASToR (.cdh)", NULL);
  refused(cli("convert", "a.tlm", "b.cdh", "--norm", "other.tln", NULL), "other.tln",
          "for scanner", NULL);
  g_autofree char *after = get("n.tln", &n1);
  g_assert_cmpmem(before, n0, after, n1);
}

/* ---- 8. smaller ---- */

/* Found by the fuzzers (tests/fuzz): -0.0 loaded back from NIfTI as +0.0 (x * 1 + 0), and
 * messages of in-memory parsers quoted invalid UTF-8. */
static void test_fuzz_findings(void) {
  TlImageGrid g = tl_image_grid_centred(2, 1, 1, 1, 1, 1);
  g_autoptr(TlImage) im = tl_image_new(&g);
  im->data[0] = -0.0f;
  g_autofree char *p = at("z.nii");
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_image_save(im, p, &e));
  g_autoptr(TlImage) back = tl_image_load(p, &e);
  g_assert_no_error(e);
  g_assert_true(signbit(back->data[0]));
  /* an origin of -0.0 came back as +0.0 (m + 0) */
  TlImageGrid gz = tl_image_grid_centred(1, 1, 1, 1, 1, 1);
  gz.origin_mm[1] = -0.0f;
  g_autoptr(TlImage) imz = tl_image_new(&gz);
  g_assert_true(tl_image_save(imz, p, &e));
  g_autoptr(TlImage) backz = tl_image_load(p, &e);
  g_assert_no_error(e);
  g_assert_true(tl_image_grid_equal(&backz->grid, &gz));
  /* a voxel size of FLT_MAX printed as "3.40282347e+38" read back as infinity */
  gz.voxel_mm[0] = G_MAXFLOAT;
  g_autoptr(TlImage) imf = tl_image_new(&gz);
  g_autofree char *raw = at("f.raw");
  g_assert_true(tl_image_save(imf, raw, &e));
  g_autoptr(TlImage) backf = tl_image_load(raw, &e);
  g_assert_no_error(e);
  g_assert_true(tl_image_grid_equal(&backf->grid, &gz));
  TlFilter f;
  g_assert_false(tl_filter_parse("gauss:\xff\xfe", &f, &e));
  g_assert_true(g_utf8_validate(e->message, -1, NULL));
  g_clear_error(&e);
  g_assert_null(tl_ct_geometry_from_text("tomolab-ct-geometry = 1\nbeam = \xff\n", "g", &e));
  g_assert_true(g_utf8_validate(e->message, -1, NULL));
  g_assert_nonnull(strstr(e->message, "g:2"));
  g_clear_error(&e);
  double v;
  g_assert_false(tl_kv_doubles("kv", 1, "k\xc3", "1 \xff", 1, &v, &e));
  g_assert_true(g_utf8_validate(e->message, -1, NULL));
  refused(cli("simulate", "--grid", "8x8x8@\xd0\xc7", "-o", "o.tlm", NULL), "--grid", NULL);
  /* a TOF FWHM past FLT_MAX (no TOF bins, so unchecked) became inf and the printed scanner
   * did not load back (fuzz-scanner) */
  g_clear_error(&e);
  g_assert_null(tl_scanner_from_text("kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 1\n"
                                     "crystal_pitch_mm = 5\nradius_mm = 40\nring_pitch_mm = 4\n"
                                     "crystal_size_mm = 4 4 10\ntof_fwhm_ps = 3e81\n", "s", 1, &e));
  g_assert_error(e, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(e->message, "s:9: key 'tof_fwhm_ps'"));
  g_clear_error(&e);
}

static void test_smaller(void) {
  /* a vanishing FWHM: finite weights (the identity), not NaN */
  double w[8];
  for (double fwhm = 1e-3; fwhm > 1e-320; fwhm *= 1e-20) {
    guint r = tl_filter_gauss_weights(fwhm, 1.0, w);
    g_assert_cmpuint(r, ==, 0);
    g_assert_cmpfloat(w[0], ==, 1.0);
  }
}

static void with_dir(gconstpointer fn) {
  dir = g_dir_make_tmp("tl-hostile-XXXXXX", NULL);
  g_assert_nonnull(dir);
  ((void (*)(void))fn)();
  /* the test's files only */
  g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
  g_assert_cmpint(system(cmd), ==, 0);
  g_clear_pointer(&dir, g_free);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  cli_path = argc > 1 ? argv[1] : g_getenv("TOMOLAB_CLI");
  g_test_add_data_func("/hostile/scanner", test_scanner, with_dir);
  g_test_add_data_func("/hostile/nifti", test_nifti, with_dir);
  g_test_add_data_func("/hostile/raw", test_raw, with_dir);
  g_test_add_data_func("/hostile/geometry", test_geometry, with_dir);
  g_test_add_data_func("/hostile/numbers", test_numbers, with_dir);
  g_test_add_data_func("/hostile/outputs", test_outputs, with_dir);
  g_test_add_data_func("/hostile/messages", test_messages, with_dir);
  g_test_add_data_func("/hostile/smaller", test_smaller, with_dir);
  g_test_add_data_func("/hostile/recon-verbs", test_recon_verbs, with_dir);
  g_test_add_data_func("/hostile/fuzz-findings", test_fuzz_findings, with_dir);
  g_test_add_data_func("/hostile/norm", test_norm, with_dir);
  return g_test_run();
}
