/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD and the yardl binary encoding:
 * - yardl: the worked example of yardl's "Compact Binary Encoding Reference", its bytes typed in
 *   here from the page, decodes to the values the page gives;
 * - the files of ../shared/data/petsird, written by PETSIRD's reference generator: every count the
 *   reference reader printed (its README) is found, for v0.10.0 and the development model, plain
 *   and gzipped;
 * - the same file's NDJSON copy (PETSIRD's own text writer), decoded here with the model's formulas
 *   written in this test, gives every crystal centre and every prompt's crystal pair;
 * - truncated and altered files are refused with the file named, never a crash. */
#include "tl-test-common.h"
#include "pet/data/tl-format-petsird.h"
#include "pet/data/tl-yardl.h"
#include "dataset/tl-formats.h"
#include "tl-json.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define DIR "../shared/data/petsird/"
static char *tmpdir;

/* ---- yardl's worked example ---- */

static void test_yardl_example(void) {
  static const char schema[] =
      "{\"protocol\":{\"name\":\"MyProtocol\",\"sequence\":[{\"name\":\"floatArray\",\"type\":"
      "{\"array\":{\"items\":\"float32\",\"dimensions\":[{\"length\":2},{\"length\":2}]}}},"
      "{\"name\":\"points\",\"type\":{\"stream\":{\"items\":\"Sandbox.Point\"}}}]},\"types\":"
      "[{\"name\":\"Point\",\"fields\":[{\"name\":\"x\",\"type\":\"uint64\"},{\"name\":\"y\","
      "\"type\":\"int32\"}]}]}";
  g_assert_cmpuint(strlen(schema), ==, 304); /* the page's length, varint b0 02 */
  static const guint8 values[] = {0x9a, 0x99, 0x99, 0x3f, 0x9a, 0x99, 0x59, 0x40, 0x33, 0x33, 0xb3,
                                  0x40, 0x9a, 0x99, 0xf9, 0x40, 0x03, 0x01, 0x04, 0x03, 0x08, 0x05,
                                  0x0c, 0x02, 0xbc, 0x05, 0xc0, 0x0c, 0x80, 0xea, 0x30, 0xbf, 0xee,
                                  0x6d, 0x00};
  g_autoptr(GByteArray) b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"yardl\x01\x00\x00\x00\xb0\x02", 11);
  g_byte_array_append(b, (const guint8 *)schema, 304);
  g_byte_array_append(b, values, sizeof values);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlYardlReader) r = tl_yardl_reader_new(b->data, b->len, "example", &e);
  g_assert_no_error(e);
  g_autoptr(TlYardlValue) fa = tl_yardl_read_value(r, "floatArray", &e);
  g_assert_no_error(e);
  guint64 n;
  const double *x = tl_yardl_numbers(fa, &n);
  g_assert_cmpuint(n, ==, 4);
  const float want[4] = {1.2f, 3.4f, 5.6f, 7.8f};
  for (int i = 0; i < 4; i++) g_assert_cmpfloat(x[i], ==, want[i]);
  const double pts[5][2] = {{1, 2}, {3, 4}, {5, 6}, {700, 800}, {800000, -900000}};
  for (int i = 0; i <= 5; i++) {
    g_autoptr(TlYardlValue) p = NULL;
    g_assert_true(tl_yardl_read_item(r, "points", &p, &e));
    g_assert_no_error(e);
    if (i == 5) {
      g_assert_null(p);
      break;
    }
    x = tl_yardl_numbers(p, &n);
    g_assert_cmpuint(n, ==, 2);
    g_assert_cmpfloat(x[0], ==, pts[i][0]);
    g_assert_cmpfloat(x[1], ==, pts[i][1]);
  }
  g_assert_true(tl_yardl_reader_finish(r, &e));
  /* every truncation of it is refused, naming the source */
  for (guint cut = 0; cut < b->len; cut++) {
    g_autoptr(GError) e2 = NULL;
    g_autoptr(TlYardlReader) r2 = tl_yardl_reader_new(b->data, cut, "cut", &e2);
    gboolean ok = r2 != NULL;
    if (ok) {
      g_autoptr(TlYardlValue) v = tl_yardl_read_value(r2, "floatArray", &e2);
      TlYardlValue *p = v ? (TlYardlValue *)1 : NULL;
      while (p && (ok = tl_yardl_read_item(r2, "points", &p, &e2)) && p) tl_yardl_value_free(p);
      ok = v && ok && tl_yardl_reader_finish(r2, &e2);
    }
    g_assert_false(ok);
    g_assert_nonnull(e2);
    g_assert_nonnull(strstr(e2->message, "cut"));
  }
}

/* ---- the reference reader's counts (../shared/data/petsird/README.md) ---- */

typedef struct {
  const char *file;
  gboolean collimator;
  guint modules[2], elements[2], energy[2], tof[2];
  guint64 prompts;
  guint n_blocks;
  guint64 per_pair[6]; /* prompts per block and module-type pair; 3 pairs */
  double energy1, energy2;
} Ref;

static const Ref refs[] = {
    {"petsird-v0.10.0_small.bin", FALSE, {16, 6}, {8, 10}, {3, 1}, {11, 5}, 1200, 4,
     {91, 109, 97, 103}, 544.2777760314941, 566.166654027303},
    {"petsird-main-69c7b78_small.bin", TRUE, {16, 6}, {8, 10}, {3, 1}, {11, 5}, 1200, 4,
     {91, 109, 97, 103}, 544.2777760314941, 566.166654027303},
    {"petsird-v0.10.0_default.bin.gz", FALSE, {40, 15}, {56, 90}, {3, 1}, {11, 5}, 8991, 6,
     {482, 495, 498, 497, 546, 479}, 549.5476925866568, 560.1953691158607},
    {"petsird-main-69c7b78_default.bin.gz", TRUE, {40, 15}, {56, 90}, {3, 1}, {11, 5}, 9021, 6,
     {473, 508, 521, 513, 478, 514}, 553.887222129349, 564.4773184570474},
};

static void test_reference_counts(gconstpointer data) {
  const Ref *ref = data;
  g_autofree char *path = g_strconcat(DIR, ref->file, NULL);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlPetsirdInfo) i = tl_petsird_scan(path, &e);
  g_assert_no_error(e);
  g_assert_cmpstr(i->scanner, ==, "PETSIRD_TEST");
  g_assert_cmpstr(i->subject, ==, "123456");
  g_assert_cmpint(i->collimator_field, ==, ref->collimator);
  g_assert_cmpuint(i->module_types, ==, 2);
  for (int t = 0; t < 2; t++) {
    g_assert_cmpuint(i->modules[t], ==, ref->modules[t]);
    g_assert_cmpuint(i->elements[t], ==, ref->elements[t]);
    g_assert_cmpuint(i->energy_bins[t], ==, ref->energy[t]);
    g_assert_cmpuint(i->tof_bins[t], ==, ref->tof[t]);
  }
  g_assert_cmpuint(i->n_crystals, ==, ref->modules[0] * ref->elements[0] + ref->modules[1] * ref->elements[1]);
  g_assert_false(i->uniform_tof); /* pairs (0,0), (1,0), (1,1): 11, 1 and 5 bins */
  g_assert_cmpuint(i->prompts, ==, ref->prompts);
  g_assert_cmpuint(i->delayeds, ==, 0);
  g_assert_cmpuint(i->event_blocks, ==, ref->n_blocks);
  g_assert_cmpuint(i->time_blocks, ==, ref->n_blocks);
  g_assert_cmpuint(i->block_prompts->len, ==, ref->n_blocks);
  for (guint k = 0; k < ref->n_blocks; k++) /* the generator uses one count for all three pairs */
    g_assert_cmpuint(g_array_index(i->block_prompts, guint64, k), ==, 3 * ref->per_pair[k]);
  g_assert_cmpuint(i->first_ms, ==, 0);
  g_assert_cmpuint(i->last_ms, ==, ref->n_blocks); /* "Last time block at N ms" */
  g_assert_cmpfloat(fabs(i->energy_sum[0] / (double)i->prompts - ref->energy1), <, 1e-9);
  g_assert_cmpfloat(fabs(i->energy_sum[1] / (double)i->prompts - ref->energy2), <, 1e-9);
  g_assert_cmpuint(i->extra_rows, ==, ref->n_blocks); /* the generator's third row, each block */
  /* detection picks the format from the content (gzip: with the extension) */
  const TlFormatClass *f = tl_format_detect(path, &e);
  g_assert_no_error(e);
  g_assert_cmpstr(f->name, ==, "petsird");
}

/* ---- the NDJSON copy, decoded with the model's formulas ---- */

static const TlJson *at(const TlJson *j, guint i) {
  g_assert_nonnull(j);
  g_assert_cmpint(j->kind, ==, TL_JSON_ARRAY);
  g_assert_cmpuint(i, <, j->n);
  return j->items[i];
}

static const TlJson *get(const TlJson *j, const char *k) {
  const TlJson *v = tl_json_get(j, k);
  g_assert_nonnull(v);
  return v;
}

static double num(const TlJson *j) {
  g_assert_cmpint(j->kind, ==, TL_JSON_NUMBER);
  return j->number;
}

/* y = M x, M the 3 x 4 row-major "matrix" of a RigidTransformation */
static void transform(const TlJson *tf, const double x[3], double y[3]) {
  const TlJson *m = get(tf, "matrix");
  for (int r = 0; r < 3; r++)
    y[r] = num(at(m, 4 * r)) * x[0] + num(at(m, 4 * r + 1)) * x[1] + num(at(m, 4 * r + 2)) * x[2] +
           num(at(m, 4 * r + 3));
}

static void test_ndjson(void) {
  g_autofree char *text = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(DIR "petsird-v0.10.0_small.ndjson", &text, &len, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlListmode) lm = tl_petsird_load(DIR "petsird-v0.10.0_small.bin", NULL, &e);
  g_assert_no_error(e);
  g_autoptr(TlJson) h = tl_json_parse(lines[1], strlen(lines[1]), "ndjson header", &e);
  g_assert_no_error(e);
  const TlJson *sc = get(get(h, "header"), "scanner");
  const TlJson *rms = get(get(sc, "scannerGeometry"), "replicatedModules");
  guint offset[2], nel[2], nen[2], id = 0;
  for (guint t = 0; t < 2; t++) {
    const TlJson *rm = at(rms, t), *det = get(get(rm, "object"), "detectingElements");
    const TlJson *corners = get(get(get(det, "object"), "shape"), "corners");
    double c[3] = {0, 0, 0};
    for (guint k = 0; k < 8; k++)
      for (int i = 0; i < 3; i++) c[i] += num(at(get(at(corners, k), "c"), i)) / 8;
    offset[t] = id;
    nel[t] = get(det, "transforms")->n;
    const TlJson *edges = get(get(at(get(sc, "eventEnergyBinEdges"), t), "edges"), "data");
    nen[t] = edges->n - 1;
    for (guint m = 0; m < get(rm, "transforms")->n; m++)
      for (guint el = 0; el < nel[t]; el++, id++) {
        double x[3], y[3];
        transform(at(get(det, "transforms"), el), c, x);
        transform(at(get(rm, "transforms"), m), x, y);
        for (int i = 0; i < 3; i++) g_assert_cmpfloat(fabs(lm->scanner->crystals[id].centre[i] - y[i]), <, 1e-3);
      }
  }
  g_assert_cmpuint(id, ==, lm->scanner->n_crystals);
  /* radii of the README: 400 mm (type 0) and 150 mm (type 1) to the boxes' inner faces; the
   * centres sit half a crystal depth (20 and 10 mm) further out */
  const float *c0 = lm->scanner->crystals[0].centre, *c1 = lm->scanner->crystals[offset[1]].centre;
  g_assert_cmpfloat(fabs(hypot(c0[0], c0[1]) - 410), <, 1);
  g_assert_cmpfloat(fabs(hypot(c1[0], c1[1]) - 155), <, 1);
  guint64 k = 0;
  for (guint b = 2; lines[b] && *lines[b]; b++) {
    g_autoptr(TlJson) blk = tl_json_parse(lines[b], strlen(lines[b]), "ndjson block", &e);
    g_assert_no_error(e);
    const TlJson *pe = get(get(get(blk, "timeBlocks"), "EventTimeBlock"), "promptEvents");
    for (guint m0 = 0; m0 < 2; m0++)
      for (guint m1 = 0; m1 <= m0; m1++) {
        const TlJson *list = at(at(pe, m0), m1);
        for (guint i = 0; i < list->n; i++, k++) {
          const TlJson *bins = get(list->items[i], "detectionBins");
          guint a = offset[m0] + (guint)num(at(bins, 0)) / nen[m0];
          guint bb = offset[m1] + (guint)num(at(bins, 1)) / nen[m1];
          g_assert_cmpuint(k, <, lm->n_events);
          g_assert_cmpuint(lm->events[k].a, ==, a);
          g_assert_cmpuint(lm->events[k].b, ==, bb);
          g_assert_cmpint(lm->events[k].tof_bin, ==, 0); /* TOF binned per pair: not kept */
        }
      }
  }
  g_assert_cmpuint(k, ==, lm->n_events);
  g_assert_false(lm->has_tof);
  g_assert_nonnull(strstr(lm->description, "TOF not kept"));
}

/* ---- hostile copies ---- */

static void test_hostile(void) {
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(DIR "petsird-v0.10.0_small.bin", &data, &len, NULL));
  g_autofree char *path = g_build_filename(tmpdir, "h.bin", NULL);
  /* cut anywhere: refused, the file named */
  for (gsize cut = 0; cut < len; cut += cut < 13000 ? 997 : 4999) {
    g_assert_true(g_file_set_contents(path, data, (gssize)cut, NULL));
    g_autoptr(GError) e = NULL;
    g_autoptr(TlListmode) lm = tl_petsird_load(path, NULL, &e);
    g_assert_null(lm);
    g_assert_nonnull(e);
    g_assert_nonnull(strstr(e->message, path));
  }
  /* a byte more than the protocol */
  g_autofree char *more = g_malloc(len + 1);
  memcpy(more, data, len);
  more[len] = 0;
  g_assert_true(g_file_set_contents(path, more, (gssize)len + 1, NULL));
  g_autoptr(GError) e = NULL;
  g_assert_null(tl_petsird_scan(path, &e));
  g_assert_nonnull(strstr(e->message, "after the protocol's last step"));
  g_clear_error(&e);
  /* another protocol's name in the schema */
  char *pn = NULL;
  static const char sig[] = "\"name\":\"PETSIRD\"";
  for (gsize i = 0; !pn && i + strlen(sig) < 13000; i++)
    if (memcmp(more + i, sig, strlen(sig)) == 0) pn = more + i;
  g_assert_nonnull(pn);
  memcpy(pn + 8, "PETSIRX", 7);
  g_assert_true(g_file_set_contents(path, more, (gssize)len, NULL));
  g_assert_null(tl_petsird_scan(path, &e));
  g_assert_nonnull(strstr(e->message, "PETSIRX"));
  g_clear_error(&e);
  /* every byte after the schema flipped in turn (a sample): no crash, GError or counts */
  for (gsize i = 12895; i < len; i += 1009) {
    memcpy(more, data, len);
    more[i] ^= 0x5a;
    g_assert_true(g_file_set_contents(path, more, (gssize)len, NULL));
    g_autoptr(GError) e2 = NULL;
    g_autoptr(TlListmode) lm = tl_petsird_load(path, NULL, &e2);
    g_assert_true((lm != NULL) != (e2 != NULL));
    if (lm) g_assert_true(tl_listmode_validate(lm, path, NULL));
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-petsird-XXXXXX", NULL);
  g_test_add_func("/petsird/yardl-example", test_yardl_example);
  for (guint i = 0; i < G_N_ELEMENTS(refs); i++) {
    g_autofree char *name = g_strdup_printf("/petsird/reference/%s", refs[i].file);
    g_test_add_data_func(name, &refs[i], test_reference_counts);
  }
  g_test_add_func("/petsird/ndjson", test_ndjson);
  g_test_add_func("/petsird/hostile", test_hostile);
  int rc = g_test_run();
  g_autofree char *h = g_build_filename(tmpdir, "h.bin", NULL);
  g_remove(h);
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
