/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `tomolab-cli info` on STIR projection data names every geometric field of STIR's header
 * (issue 26 item 6): scanner name, detectors per ring, rings, inner ring radius, average depth of
 * interaction, ring spacing, bin size, arc-corrected bin size, view offset, views, tangential
 * positions, the segments with their ring differences, span, maximum ring difference and the
 * TOF mashing factor. The headers are written here in STIR's published layout (the Siemens mMR
 * of STIR's Scanner.cxx in span 11, segments -1..1, views mashed to keep the file small; the
 * Utah PRT-1 arc-corrected), the values the output must hold are computed here from the
 * header's own text (key := value, cm and diameters as STIR writes them), and the output is
 * what tl_dataset_info - the function `tomolab-cli info FILE` prints - gives. */
#include "tomolab-compute.h"
#include "dataset/tl-dataset.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmpdir;

/* The mMR in span 11 (segment 0: ring differences -5..5; +-1: 6..16), 252 views mashed by 28. */
static const char mmr_header[] =
    "!INTERFILE  :=\n"
    "!imaging modality := PT\n"
    "name of data file := mmr_span11.s\n"
    "originating system := Siemens mMR\n"
    "!version of keys := STIR4.0\n"
    "!GENERAL DATA :=\n"
    "!GENERAL IMAGE DATA :=\n"
    "!type of data := PET\n"
    "imagedata byte order := LITTLEENDIAN\n"
    "!PET STUDY (General) :=\n"
    "!PET data type := Emission\n"
    "applied corrections := {None}\n"
    "!number format := float\n"
    "!number of bytes per pixel := 4\n"
    "number of dimensions := 4\n"
    "matrix axis label [4] := segment\n"
    "!matrix size [4] := 3\n"
    "matrix axis label [3] := view\n"
    "!matrix size [3] := 9\n"
    "matrix axis label [2] := axial coordinate\n"
    "!matrix size [2] := { 127,115,115}\n"
    "matrix axis label [1] := tangential coordinate\n"
    "!matrix size [1] := 344\n"
    "minimum ring difference per segment := { -5,-16,6}\n"
    "maximum ring difference per segment := { 5,-6,16}\n"
    "Scanner parameters:=\n"
    "Scanner type := Siemens mMR\n"
    "Number of rings                          := 64\n"
    "Number of detectors per ring             := 504\n"
    "Inner ring diameter (cm)                 := 65.6\n"
    "Average depth of interaction (cm)        := 0.7\n"
    "Distance between rings (cm)              := 0.40625\n"
    "Default bin size (cm)                    := 0.208626\n"
    "View offset (degrees)                    := 0\n"
    "Maximum number of non-arc-corrected bins := 344\n"
    "Default number of arc-corrected bins     := 344\n"
    "Number of crystals per block in transaxial direction := 9\n"
    "End scanner parameters:=\n"
    "%TOF mashing factor := 1\n"
    "number of time frames := 1\n"
    "!END OF INTERFILE :=\n";

/* Utah PRT-1, arc-corrected: 16 rings of 384, bins of 3.1088 mm, 96 views (mashing 2). */
static const char utah_header[] =
    "!INTERFILE  :=\n"
    "name of data file := utah_arc.s\n"
    "originating system := PRT-1\n"
    "!GENERAL DATA :=\n"
    "!GENERAL IMAGE DATA :=\n"
    "!type of data := PET\n"
    "imagedata byte order := LITTLEENDIAN\n"
    "!PET STUDY (General) :=\n"
    "!PET data type := Emission\n"
    "applied corrections := {arc correction}\n"
    "!number format := float\n"
    "!number of bytes per pixel := 4\n"
    "number of dimensions := 4\n"
    "matrix axis label [4] := segment\n"
    "!matrix size [4] := 3\n"
    "matrix axis label [3] := view\n"
    "!matrix size [3] := 96\n"
    "matrix axis label [2] := axial coordinate\n"
    "!matrix size [2] := { 16,15,15}\n"
    "matrix axis label [1] := tangential coordinate\n"
    "!matrix size [1] := 128\n"
    "minimum ring difference per segment := { 0,-1,1}\n"
    "maximum ring difference per segment := { 0,-1,1}\n"
    "Scanner parameters:=\n"
    "Scanner type := PRT-1\n"
    "Number of rings                          := 16\n"
    "Number of detectors per ring             := 384\n"
    "Inner ring diameter (cm)                 := 74.6\n"
    "Average depth of interaction (cm)        := 0.7\n"
    "Distance between rings (cm)              := 0.675\n"
    "Default bin size (cm)                    := 0.31088\n"
    "View offset (degrees)                    := 2.5\n"
    "End scanner parameters:=\n"
    "!END OF INTERFILE :=\n";

/* The value of `key` in header text (case as written; the first match after a line start). */
static char *value_of(const char *text, const char *key) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *sep = strstr(lines[i], ":=");
    if (!sep) continue;
    g_autofree char *k = g_strstrip(g_strndup(lines[i], sep - lines[i]));
    const char *kk = k[0] == '!' || k[0] == '%' ? k + 1 : k;
    if (g_ascii_strcasecmp(kk, key) == 0) return g_strstrip(g_strdup(sep + 2));
  }
  g_error("header: no key '%s'", key);
  return NULL;
}

static double num(const char *text, const char *key) {
  g_autofree char *v = value_of(text, key);
  return g_ascii_strtod(v, NULL);
}

/* "{ a,b,c}" -> ints */
static guint ints(const char *text, const char *key, gint *out, guint max) {
  g_autofree char *v = value_of(text, key);
  guint n = 0;
  for (char *p = v; *p && n < max;) {
    if (*p == '-' || g_ascii_isdigit(*p)) {
      char *end;
      out[n++] = (gint)g_ascii_strtoll(p, &end, 10);
      p = end;
    } else {
      p++;
    }
  }
  return n;
}

/* `line` at the start of a line of out */
static void want(const char *out, const char *line) {
  g_autofree char *at = g_strconcat("\n", line, NULL);
  if (!strstr(out, at)) g_error("'%s' not a line of:\n%s", line, out);
}

static char *write_file(const char *header, const char *name, const char *data_name,
                        guint64 bins) {
  g_autofree char *hs = g_build_filename(tmpdir, name, NULL);
  g_autofree char *sp = g_build_filename(tmpdir, data_name, NULL);
  g_assert_true(g_file_set_contents(hs, header, -1, NULL));
  g_autofree char *zeros = g_malloc0(4 * bins);
  for (guint64 i = 0; i < bins; i += 97) ((float *)(void *)zeros)[i] = 1; /* a few counts */
  g_assert_true(g_file_set_contents(sp, zeros, (gssize)(4 * bins), NULL));
  return g_steal_pointer(&hs);
}

/* Every field the header gives, in the words and units info prints them, from its text. */
static void check_fields(const char *header, const char *out) {
  g_autofree char *name = value_of(header, "originating system");
  g_autofree char *l1 = g_strdup_printf("scanner name (originating system): %s\n", name);
  want(out, l1);
  guint dets = (guint)num(header, "Number of detectors per ring"),
        rings = (guint)num(header, "Number of rings");
  g_autofree char *l2 = g_strdup_printf("number of detectors per ring: %u\n", dets);
  g_autofree char *l3 = g_strdup_printf("number of rings: %u\n", rings);
  want(out, l2);
  want(out, l3);
  double diam_cm = num(header, "Inner ring diameter (cm)"), doi_cm = num(header, "Average depth of interaction (cm)"),
         ring_cm = num(header, "Distance between rings (cm)"), bin_cm = num(header, "Default bin size (cm)"),
         offset = num(header, "View offset (degrees)");
  g_autofree char *l4 = g_strdup_printf("inner ring radius: %.6g mm (inner ring diameter %.6g cm)\n",
                                        diam_cm * 10 / 2, diam_cm);
  g_autofree char *l5 = g_strdup_printf("average depth of interaction: %.6g mm (%.6g cm)\n",
                                        doi_cm * 10, doi_cm);
  g_autofree char *l6 = g_strdup_printf("ring spacing: %.6g mm (distance between rings %.6g cm)\n",
                                        ring_cm * 10, ring_cm);
  g_autofree char *l7 = g_strdup_printf("arc-corrected bin size: %.6g mm (default bin size %.6g cm)\n",
                                        bin_cm * 10, bin_cm);
  g_autofree char *l8 = g_strdup_printf("view offset: %.6g degrees\n", offset);
  want(out, l4);
  want(out, l5);
  want(out, l6);
  want(out, l7);
  want(out, l8);
  /* the tangential sampling at the centre: arc-corrected, the bin size; else STIR's
   * ring radius (inner + depth of interaction) x angular increment pi / detectors */
  g_autofree char *corr = value_of(header, "applied corrections");
  gboolean arc = strstr(corr, "arc correction") != NULL;
  double bin_mm = arc ? bin_cm * 10 : (diam_cm / 2 + doi_cm) * 10 * G_PI / dets;
  g_autofree char *l9 = g_strdup_printf("bin size: %.6g mm (", bin_mm);
  want(out, l9);
  guint views = (guint)num(header, "matrix size [3]"), tang = (guint)num(header, "matrix size [1]");
  g_autofree char *l10 = g_strdup_printf("number of views: %u (view mashing %u)\n", views,
                                         dets / 2 / views);
  g_autofree char *l11 = g_strdup_printf("number of tangential positions: %u (%d to %d)\n", tang,
                                         -(gint)(tang / 2), (gint)(tang - tang / 2) - 1);
  want(out, l10);
  want(out, l11);
  gint lo[16], hi[16], ax[16];
  guint ns = (guint)num(header, "matrix size [4]");
  g_assert_cmpuint(ints(header, "minimum ring difference per segment", lo, 16), ==, ns);
  g_assert_cmpuint(ints(header, "maximum ring difference per segment", hi, 16), ==, ns);
  g_assert_cmpuint(ints(header, "matrix size [2]", ax, 16), ==, ns);
  g_autofree char *l12 = g_strdup_printf("number of segments: %u\n", ns);
  want(out, l12);
  gint maxrd = 0, span = 0;
  for (guint i = 0; i < ns; i++) {
    g_autofree char *li = g_strdup_printf("segment %u: ring differences %d to %d, %d axial positions\n",
                                          i, lo[i], hi[i], ax[i]);
    want(out, li);
    maxrd = MAX(maxrd, MAX(ABS(lo[i]), ABS(hi[i])));
    if (lo[i] <= 0 && hi[i] >= 0) span = hi[i] - lo[i] + 1; /* STIR: segment 0's width */
  }
  g_autofree char *l13 = g_strdup_printf("span: %d\n", span);
  g_autofree char *l14 = g_strdup_printf("maximum ring difference: %d\n", maxrd);
  want(out, l13);
  want(out, l14);
  if (strstr(header, "TOF mashing factor")) {
    g_autofree char *l15 = g_strdup_printf("TOF mashing factor: %u\n",
                                           (guint)num(header, "TOF mashing factor"));
    want(out, l15);
  } else {
    g_assert_null(strstr(out, "TOF mashing"));
  }
}

static void run_info(const char *header, const char *name, const char *data_name, guint64 bins,
                     const char *expect_span) {
  g_autofree char *hs = write_file(header, name, data_name, bins);
  g_autoptr(GString) out = g_string_new(NULL);
  GError *error = NULL;
  g_assert_true(tl_dataset_info(hs, FALSE, out, &error));
  g_assert_no_error(error);
  g_test_message("%s", out->str);
  check_fields(header, out->str);
  want(out->str, expect_span); /* the published value itself, not only the formula's */
  g_autofree char *sp = g_build_filename(tmpdir, data_name, NULL);
  g_remove(hs);
  g_remove(sp);
}

static void test_mmr(void) {
  run_info(mmr_header, "mmr_span11.hs", "mmr_span11.s", (guint64)9 * 344 * (127 + 115 + 115),
           "span: 11\n");
}

static void test_utah_arc(void) {
  run_info(utah_header, "utah_arc.hs", "utah_arc.s", (guint64)96 * 128 * (16 + 15 + 15),
           "span: 1\n");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp("tl-stir-info-XXXXXX", NULL);
  g_test_add_func("/stir-info/mmr-span11", test_mmr);
  g_test_add_func("/stir-info/utah-arc", test_utah_arc);
  int r = g_test_run();
  g_rmdir(tmpdir);
  return r;
}
