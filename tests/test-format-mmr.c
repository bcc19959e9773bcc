/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Siemens mMR list mode: words the test composes from the published PETLINK 32-bit layout
 * decode to the crystal pairs the layout gives; the real acquisition of ../shared/data/mmr
 * has every word accounted for; hostile headers and files are refused with file, key, value. */
#include "tl-test-common.h"
#include "pet/data/tl-format-mmr.h"
#include "dataset/tl-formats.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

#define REAL_HDR "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR"
#define REAL_L "../shared/data/mmr/small_listmode_file.l"

static const char *header_text =
    "!INTERFILE:=\n!originating system:=2008\n%SMS-MI header name space:=PETLINK bin address\n"
    "!data offset in bytes:=0\nname of data file := t.l\ndata format:=CoincidenceList\n"
    "number of rings:=64\ndistance between rings (cm):=0.40625\ngantry crystal radius (cm):=32.8\n"
    "image duration (sec):=900\n%total listmode word counts:=1000\n"
    "%LM event and tag words format (bits):=32\n%timing tagwords interval (msec):=1\n"
    "%axial compression:=1\n%maximum ring difference:=60\n%number of projections:=344\n"
    "%number of views:=252\n";

/* The layout, written out here from STIR's description (not from the reader): segments in the
 * order 0, -1, +1, ..., -60, +60 of 64 - |s| sinograms each. */
static guint32 bin_address(int segment, int axial, int view, int tang) {
  guint z = 0;
  for (int i = 0; i <= 120; i++) {
    int s = i == 0 ? 0 : (i % 2 ? -(i + 1) / 2 : i / 2);
    if (s == segment) break;
    z += 64 - abs(s);
  }
  z += axial;
  return ((z * 252u) + view) * 344u + (guint)(tang + 172);
}

static int floordiv2(int x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

/* Expected crystals: detectors (v + floor(t/2)) mod 504 and (v - floor((t+1)/2) + 252) mod 504;
 * rings (a, a + s) for s >= 0, (a - s, a) for s < 0; position d is a gap when d mod 9 = 0;
 * id = ring * 448 + (d / 9) * 8 + d mod 9 - 1. */
static gboolean expected_pair(int segment, int axial, int view, int tang, guint32 *a, guint32 *b) {
  int d1 = ((view + floordiv2(tang)) % 504 + 504) % 504;
  int d2 = ((view - floordiv2(tang + 1) + 252) % 504 + 504) % 504;
  int r1 = segment >= 0 ? axial : axial - segment, r2 = segment >= 0 ? axial + segment : axial;
  if (d1 % 9 == 0 || d2 % 9 == 0) return FALSE;
  *a = (guint32)(r1 * 448 + d1 / 9 * 8 + d1 % 9 - 1);
  *b = (guint32)(r2 * 448 + d2 / 9 * 8 + d2 % 9 - 1);
  return TRUE;
}

static void write_words(const char *path, const guint32 *w, gsize n) {
  guint32 *le = g_new(guint32, n);
  for (gsize i = 0; i < n; i++) le[i] = GUINT32_TO_LE(w[i]);
  g_assert_true(g_file_set_contents(path, (const char *)le, (gssize)(4 * n), NULL));
  g_free(le);
}

static char *write_header(const char *text) {
  char *p = g_build_filename(tmpdir, "t.l.hdr", NULL);
  g_assert_true(g_file_set_contents(p, text, -1, NULL));
  return p;
}

typedef struct { int seg, ax, view, tang; } Bin;

static void test_composed(void) {
  /* bins whose detector pairs avoid the gaps, a gap one, and one out of range */
  const Bin good[] = {{0, 0, 2, 1}, {-1, 5, 100, -50}, {7, 20, 251, 171}, {-60, 3, 17, -172},
                      {60, 0, 130, 2}, {3, 10, 60, -1}};
  const Bin gap = {0, 10, 9, 0}; /* d1 = 9: a gap position */
  guint32 ea = 0, eb = 0;
  g_assert_false(expected_pair(gap.seg, gap.ax, gap.view, gap.tang, &ea, &eb));
  GArray *w = g_array_new(FALSE, FALSE, 4);
  guint32 x;
  x = 0x80000000u | 5; g_array_append_val(w, x);                 /* time tag 5 ms */
  for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
    x = bin_address(good[i].seg, good[i].ax, good[i].view, good[i].tang) |
        (i % 2 ? 0u : 1u << 30);                                  /* even: prompt, odd: delayed */
    g_array_append_val(w, x);
    if (i == 2) { x = 0x80000000u | 6; g_array_append_val(w, x); } /* time tag 6 ms */
  }
  x = 0xA0000000u; g_array_append_val(w, x);                     /* dead time */
  x = 0xC0000000u; g_array_append_val(w, x);                     /* gantry motion */
  x = 0xE0000000u; g_array_append_val(w, x);                     /* monitoring */
  x = bin_address(gap.seg, gap.ax, gap.view, gap.tang) | 1u << 30; g_array_append_val(w, x);
  x = (344u * 252u * 4084u) | 1u << 30; g_array_append_val(w, x); /* past the last sinogram */
  x = 0x80000000u | 7; g_array_append_val(w, x);
  g_autofree char *data = g_build_filename(tmpdir, "t.l", NULL);
  write_words(data, (const guint32 *)(void *)w->data, w->len);
  g_autofree char *hdr = write_header(header_text);

  TlMmrStats st;
  GError *error = NULL;
  for (int which = 0; which < 2; which++) { /* by the header and by the data file */
    g_autoptr(TlListmode) lm = tl_mmr_load(which ? data : hdr, NULL, &st, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(st.words, ==, w->len);
    g_assert_cmpuint(st.prompts, ==, 4 + 1);
    g_assert_cmpuint(st.delayeds, ==, 3);
    g_assert_cmpuint(st.time_tags, ==, 3);
    g_assert_cmpuint(st.dead_time_tags, ==, 1);
    g_assert_cmpuint(st.motion_tags, ==, 1);
    g_assert_cmpuint(st.monitor_tags, ==, 1);
    g_assert_cmpuint(st.prompts + st.delayeds + st.time_tags + st.dead_time_tags + st.motion_tags +
                     st.monitor_tags, ==, st.words);
    g_assert_cmpuint(st.dropped_gap, ==, 1);
    g_assert_cmpuint(st.dropped_range, ==, 1);
    g_assert_cmpuint(st.first_ms, ==, 5);
    g_assert_cmpuint(st.last_ms, ==, 7);
    g_assert_cmpfloat_with_epsilon(st.duration_s, 0.003, 1e-12);
    g_assert_cmpuint(lm->n_events, ==, 3);
    g_assert_cmpuint(lm->n_delayed, ==, 3);
    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
      g_assert_true(expected_pair(good[i].seg, good[i].ax, good[i].view, good[i].tang, &ea, &eb));
      const TlEvent *e = i % 2 ? &lm->delayed[i / 2] : &lm->events[i / 2];
      g_assert_cmpuint(e->a, ==, ea);
      g_assert_cmpuint(e->b, ==, eb);
      g_assert_cmpint(e->tof_bin, ==, 0);
      /* geometry: a non-arc-corrected bin t lies 328 sin(|t| pi / 504) mm from the axis
       * (the inner radius; STIR's s = R sin(t * angular increment)) */
      const TlCrystal *ca = &lm->scanner->crystals[ea], *cb = &lm->scanner->crystals[eb];
      double dx = cb->centre[0] - ca->centre[0], dy = cb->centre[1] - ca->centre[1];
      double dist = fabs(ca->centre[0] * dy - ca->centre[1] * dx) / hypot(dx, dy);
      g_assert_cmpfloat_with_epsilon(dist, 335.0 * sin(abs(good[i].tang) * G_PI / 504), 0.01);
      g_assert_cmpuint(ca->ring, ==, good[i].seg >= 0 ? good[i].ax : good[i].ax - good[i].seg);
      g_assert_cmpint((int)cb->ring - (int)ca->ring, ==, good[i].seg);
    }
    g_assert_true(tl_listmode_validate(lm, "composed", &error));
    g_assert_no_error(error);
  }
  /* a frame by the time tags: [6 ms, 7 ms) holds the events after the second tag */
  TlMmrOptions opt = {0.006, 0.007};
  g_autoptr(TlListmode) f = tl_mmr_load(hdr, &opt, &st, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st.outside_frame, ==, 3 + 0);
  g_assert_cmpuint(f->n_events + f->n_delayed, ==, 3);
  g_assert_cmpfloat_with_epsilon(f->start_s, 0.006, 1e-12);
  g_assert_cmpfloat_with_epsilon(f->duration_s, 0.001, 1e-12);
  /* content detection: the header and the .l file are both the mMR format */
  g_assert_true(tl_format_detect(hdr, &error) == &tl_format_mmr);
  g_assert_true(tl_format_detect(data, &error) == &tl_format_mmr);
  g_assert_no_error(error);
  g_array_free(w, TRUE);
}

/* Counts of the real file, made independently (numpy over the raw words: bit 31, bit 30, bits
 * 29-31 of the tags): 254 816 words = 218 881 prompts + 35 320 delayeds + 613 time tags (0..612
 * ms) + 1 dead-time tag + 1 monitoring tag. */
static void test_real(void) {
  TlMmrStats st;
  GError *error = NULL;
  g_autoptr(TlListmode) lm = tl_mmr_load(REAL_L, NULL, &st, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st.words, ==, 254816);
  g_assert_cmpuint(st.prompts, ==, 218881);
  g_assert_cmpuint(st.delayeds, ==, 35320);
  g_assert_cmpuint(st.time_tags, ==, 613);
  g_assert_cmpuint(st.dead_time_tags + st.motion_tags + st.monitor_tags, ==, 2);
  g_assert_cmpuint(st.prompts + st.delayeds + st.time_tags + st.dead_time_tags + st.motion_tags +
                   st.monitor_tags, ==, st.words);
  g_assert_cmpuint(st.first_ms, ==, 0);
  g_assert_cmpuint(st.last_ms, ==, 612);
  g_assert_cmpfloat_with_epsilon(st.duration_s, 0.613, 1e-9);
  g_assert_cmpuint(st.header_words, ==, 331257106); /* the full scan's, not this file's */
  /* no event on a gap: the check that the gap is at d = 0 mod 9 */
  g_assert_cmpuint(st.dropped_gap, ==, 0);
  g_assert_cmpuint(st.dropped_range, ==, 0);
  g_assert_cmpuint(lm->n_events, ==, 218881);
  g_assert_cmpuint(lm->n_delayed, ==, 35320);
  g_assert_true(tl_listmode_validate(lm, REAL_L, &error));
  g_assert_no_error(error);
  /* frames split the events: [0, 0.3) + [0.3, end) = all */
  TlMmrStats s1, s2;
  TlMmrOptions o1 = {0, 0.3}, o2 = {0.3, 0};
  g_autoptr(TlListmode) a = tl_mmr_load(REAL_HDR, &o1, &s1, &error);
  g_assert_no_error(error);
  g_autoptr(TlListmode) b = tl_mmr_load(REAL_HDR, &o2, &s2, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->n_events + b->n_events, ==, lm->n_events);
  g_assert_cmpuint(a->n_delayed + b->n_delayed, ==, lm->n_delayed);
  g_assert_cmpuint(a->n_events, >, 0);
  g_assert_cmpuint(b->n_events, >, 0);
  g_assert_cmpuint(s1.outside_frame, ==, b->n_events + b->n_delayed);
  g_assert_cmpfloat_with_epsilon(a->duration_s, 0.3, 1e-9);
  g_assert_cmpfloat_with_epsilon(b->duration_s, 0.313, 1e-9);
  g_assert_true(memcmp(b->events, lm->events + a->n_events, 12 * b->n_events) == 0);
  /* detection by content through the format table */
  TlDataKind kind;
  const TlFormatClass *fmt = NULL;
  g_autoptr(TlListmode) any = tl_format_load_any(REAL_HDR, &kind, &fmt, &error);
  g_assert_no_error(error);
  g_assert_true(fmt == &tl_format_mmr && kind == TL_DATA_PET_LISTMODE);
  g_assert_cmpuint(any->n_events, ==, 218881);
}

/* Each bad input: a GError naming the file and the key / value. */
static void expect_error(const char *path, const char *const *words) {
  GError *error = NULL;
  TlListmode *lm = tl_mmr_load(path, NULL, NULL, &error);
  g_assert_null(lm);
  g_assert_nonnull(error);
  for (guint i = 0; words[i]; i++)
    if (!strstr(error->message, words[i]))
      g_error("message '%s' lacks '%s'", error->message, words[i]);
  g_clear_error(&error);
}

static char *header_with(const char *key, const char *replacement) {
  /* the header with the line holding `key` replaced (NULL: removed) */
  g_auto(GStrv) lines = g_strsplit(header_text, "\n", -1);
  GString *s = g_string_new(NULL);
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i]) continue;
    if (strstr(lines[i], key)) {
      if (replacement) g_string_append_printf(s, "%s\n", replacement);
    } else
      g_string_append_printf(s, "%s\n", lines[i]);
  }
  return g_string_free(s, FALSE);
}

static void test_hostile(void) {
  g_autofree char *data = g_build_filename(tmpdir, "t.l", NULL);
  guint32 words[4] = {0x80000000u, bin_address(0, 0, 0, 1) | 1u << 30, 0x80000001u, 0};
  write_words(data, words, 4);
  struct { const char *key, *line, *want[5]; } cases[] = {
      {"number of views", NULL, {"t.l.hdr", "lacks", "number of views", NULL}},
      {"name of data file", NULL, {"t.l.hdr", "name of data file", NULL}},
      {"gantry crystal radius", "gantry crystal radius (cm):=nan", {"t.l.hdr", "gantry crystal radius", "nan", NULL}},
      {"gantry crystal radius", "gantry crystal radius (cm):=40", {"t.l.hdr", "gantry crystal radius", "40", "inconsistent"}},
      {"number of rings", "number of rings:=-64", {"t.l.hdr", "number of rings", "-64", NULL}},
      {"number of projections", "%number of projections:=1e9", {"t.l.hdr", "number of projections", "1e9", NULL}},
      {"image duration", "image duration (sec):=-5", {"t.l.hdr", "image duration", "-5", NULL}},
      {"data offset", "!data offset in bytes:=4096", {"t.l.hdr", "data offset in bytes", "4096", "beyond"}},
      {"data offset", "!data offset in bytes:=-4", {"t.l.hdr", "data offset in bytes", "-4", NULL}},
      {"total listmode word counts", "%total listmode word counts:=3", {"t.l.hdr", "total listmode word counts", "3", "4 words"}},
      {"originating system", "!originating system:=1104", {"t.l.hdr", "originating system", "1104", NULL}},
      {"words format", "%LM event and tag words format (bits):=64", {"t.l.hdr", "words format", "64", NULL}},
      {"axial compression", "%axial compression:=11", {"t.l.hdr", "axial compression", "11", NULL}},
      {"data format", "data format:=Sinogram", {"t.l.hdr", "data format", "Sinogram", NULL}},
      {"number of rings", "number of rings", {"t.l.hdr", "expected 'key := value'", NULL}},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = header_with(cases[i].key, cases[i].line);
    g_autofree char *hdr = write_header(text);
    expect_error(hdr, cases[i].want);
  }
  g_autofree char *hdr = write_header(header_text);
  /* not an Interfile header */
  g_autofree char *bad = g_build_filename(tmpdir, "bad.hdr", NULL);
  g_assert_true(g_file_set_contents(bad, "INTERFILE?\nname of data file := t.l\n", -1, NULL));
  expect_error(bad, (const char *const[]){"bad.hdr", "no mMR list-mode header", NULL});
  /* truncated: 15 bytes of words */
  g_assert_true(g_file_set_contents(data, "\0\0\0\x80\0\0\0\0\0\0\0\0\0\0\0", 15, NULL));
  expect_error(hdr, (const char *const[]){"t.l", "truncated", "15", NULL});
  /* a data file with no header next to it */
  g_autofree char *lone = g_build_filename(tmpdir, "lone.l", NULL);
  write_words(lone, words, 4);
  expect_error(lone, (const char *const[]){"lone.l", "no mMR list-mode header", NULL});
  /* a NaN frame */
  write_words(data, words, 4);
  GError *error = NULL;
  TlMmrOptions opt = {NAN, 1};
  g_assert_null(tl_mmr_load(hdr, &opt, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* a generic Interfile image header is not claimed by the mMR format */
  const char *image = "!INTERFILE :=\n!name of data file := x.v\n!type of data := PET\n"
                      "!number format := float\nmatrix size [1] := 4\n";
  g_assert_cmpuint(tl_format_mmr.probe("x.hv", (const guint8 *)image, strlen(image)), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("tl-mmr-XXXXXX", NULL);
  g_test_add_func("/format-mmr/composed", test_composed);
  g_test_add_func("/format-mmr/real", test_real);
  g_test_add_func("/format-mmr/hostile", test_hostile);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return rc;
}
