/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Ranged list-mode reading (tl_listmode_count_events, tl_listmode_load_range), the way each MPI
 * rank reads its share of the events (docs/scale.md). The files are written here from the
 * published layout (docs/formats.md: text header, then 12-byte little-endian events), and the
 * expected events come from the test's own array, not from the writer under test. */
#include "tl-test-common.h"
#include "pet/scanner/tl-listmode.h"
#include <glib/gstdio.h>
#include <string.h>

#define N 1000

static const char *SCANNER =
    "kind = ring\nrings = 1\nsides = 4\ncrystals_per_side = 2\ncrystal_pitch_mm = 4\n"
    "radius_mm = 50\ncrystal_size_mm = 4 4 10\n";

/* Event i: crystal i mod 2 (side 0) and 2 + i mod 6 (sides 1 to 3): always an allowed pair. */
static void expected(guint i, guint32 w[3]) {
  w[0] = i % 2;
  w[1] = 2 + i % 6;
  w[2] = 0;
}

/* The file with `bad` (< N) given crystal id 99, and `cut` bytes missing at the end. */
static char *write_file(const char *dir, const char *name, guint bad, gsize cut) {
  char *path = g_build_filename(dir, name, NULL);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "TOMOLAB-LISTMODE 1\nevents = %u\nevent_bytes = 12\n"
                         "byte_order = little-endian\ntof = 0\ndescription = ranged\n"
                         "begin_scanner\n%send_scanner\nend_header\n", N, SCANNER);
  for (guint i = 0; i < N; i++) {
    guint32 w[3];
    expected(i, w);
    if (i == bad) w[1] = 99;
    for (int k = 0; k < 3; k++) {
      guint32 le = GUINT32_TO_LE(w[k]);
      g_string_append_len(s, (const char *)&le, 4);
    }
  }
  g_assert_true(g_file_set_contents(path, s->str, (gssize)(s->len - cut), NULL));
  g_string_free(s, TRUE);
  return path;
}

static void check_events(const TlListmode *lm, guint first, guint count) {
  g_assert_cmpuint(lm->n_events, ==, count);
  for (guint i = 0; i < count; i++) {
    guint32 w[3];
    expected(first + i, w);
    g_assert_cmpuint(lm->events[i].a, ==, w[0]);
    g_assert_cmpuint(lm->events[i].b, ==, w[1]);
    g_assert_cmpint(lm->events[i].tof_bin, ==, (gint32)w[2]);
  }
}

static void test_range(void) {
  g_autofree char *dir = g_dir_make_tmp("tl-lmrange-XXXXXX", NULL);
  g_autofree char *path = write_file(dir, "scan.tlm", N, 0);
  GError *error = NULL;
  guint64 n = 0;
  g_assert_true(tl_listmode_count_events(path, &n, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, N);
  /* three shares as three ranks read them: together every event once */
  guint cuts[] = {0, 335, 670, N};
  for (int r = 0; r < 3; r++) {
    g_autoptr(TlListmode) lm = tl_listmode_load_range(path, cuts[r], cuts[r + 1] - cuts[r], &error);
    g_assert_no_error(error);
    check_events(lm, cuts[r], cuts[r + 1] - cuts[r]);
    g_assert_cmpuint(lm->scanner->n_crystals, ==, 8);
    g_assert_false(lm->has_tof);
  }
  g_autoptr(TlListmode) empty = tl_listmode_load_range(path, N, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(empty->n_events, ==, 0);
  /* past the end: refused, naming the file's count */
  TlListmode *past = tl_listmode_load_range(path, 900, 101, &error);
  g_assert_null(past);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "holds 1000 events"));
  g_clear_error(&error);
  past = tl_listmode_load_range(path, G_MAXUINT64, 2, &error); /* first + count overflows */
  g_assert_null(past);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_unlink(path);
  g_rmdir(dir);
}

static void test_checks(void) {
  g_autofree char *dir = g_dir_make_tmp("tl-lmrange-XXXXXX", NULL);
  g_autofree char *bad = write_file(dir, "bad.tlm", 500, 0);
  GError *error = NULL;
  /* a bad event is found in the range that holds it, and only there */
  TlListmode *lm = tl_listmode_load_range(bad, 400, 200, &error);
  g_assert_null(lm);
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "99"));
  g_clear_error(&error);
  g_autoptr(TlListmode) ok = tl_listmode_load_range(bad, 0, 500, &error);
  g_assert_no_error(error);
  check_events(ok, 0, 500);
  /* a truncated file: the header's count is checked against the size before reading */
  g_autofree char *cut = write_file(dir, "cut.tlm", N, 5);
  guint64 n = 7;
  g_assert_false(tl_listmode_count_events(cut, &n, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "truncated"));
  g_assert_cmpuint(n, ==, 7);
  g_clear_error(&error);
  g_assert_null(tl_listmode_load_range(cut, 0, 10, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  g_unlink(bad);
  g_unlink(cut);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/listmode/range", test_range);
  g_test_add_func("/listmode/range-checks", test_checks);
  return g_test_run();
}
