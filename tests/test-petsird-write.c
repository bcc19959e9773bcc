/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PETSIRD writer (compute/pet/data/tl-petsird-write.c):
 * - the file starts with the very bytes PETSIRD's reference generator wrote (magic, version, the
 *   v0.10.0 schema), so PETSIRD's own readers, which compare the schema, accept it;
 * - a Tomolab list-mode file (.tlm, DMI with TOF, delayeds) converted by `tomolab-cli convert`
 *   is read back by Tomolab equal event by event, and decoded by an independent decoder written
 *   in Python from yardl's encoding reference (tests/petsird-decode.py, no code shared with
 *   Tomolab's reader) to the same crystal positions, events, TOF and energy bins;
 * - the real mMR list mode (prompts and delayeds) and a no-TOF scanner, the same;
 * - every shipped PETSIRD file read, written with its time blocks and read back gives the same
 *   counts per time block and the same events;
 * - what PETSIRD cannot hold is refused with what and why, the old file left as it was. */
#include "tl-test-common.h"
#include "pet/data/tl-format-petsird.h"
#include "pet/data/tl-format-mmr.h"
#include "pet/scanner/tl-listmode.h"
#include "tl-json.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define DIR "../shared/data/petsird/"
#define MMR "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR"
static char *tmpdir, *python, *decoder, *cli;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

/* ---- the reference's first bytes ---- */

static void test_schema_bytes(void) {
  g_autofree char *ref = NULL, *out = NULL;
  gsize nref, nout;
  g_assert_true(g_file_get_contents(DIR "petsird-v0.10.0_small.bin", &ref, &nref, NULL));
  /* "yardl", uint32 1, varint 12884 (the reference file's, two bytes), the schema */
  g_assert_cmpmem(ref, 9, "yardl\x01\x00\x00\x00", 9);
  gsize n = ((guint8)ref[9] & 0x7f) | ((gsize)(guint8)ref[10] << 7);
  g_assert_cmpuint(n, ==, 12884);
  g_assert_cmpuint(strlen(tl_petsird_schema), ==, n);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_preset("small-animal", &e);
  g_assert_no_error(e);
  g_autoptr(TlListmode) lm = tl_listmode_new(g_steal_pointer(&s), 1);
  lm->events[0] = (TlEvent){0, 1000, 0};
  g_autofree char *path = tmp_path("schema.petsird");
  g_assert_true(tl_petsird_save(lm, NULL, 0, path, &e));
  g_assert_no_error(e);
  g_assert_true(g_file_get_contents(path, &out, &nout, NULL));
  g_assert_cmpuint(nout, >, 11 + n);
  g_assert_cmpmem(out, 11 + n, ref, 11 + n);
  g_remove(path);
}

/* ---- list mode to compare with ---- */

/* n random prompts and delayeds on a preset, TOF bins over the scanner's range when it has TOF. */
static TlListmode *random_listmode(const char *preset, guint64 n, guint64 nd, guint32 seed) {
  g_autoptr(GError) e = NULL;
  TlScanner *s = tl_scanner_new_preset(preset, &e);
  g_assert_no_error(e);
  TlListmode *lm = tl_listmode_new(s, n);
  lm->has_tof = s->tof_bins > 0;
  lm->n_delayed = nd;
  lm->delayed = g_new(TlEvent, nd);
  lm->tags = g_new0(guint8, n); /* simulation truth: PETSIRD has no field for it */
  lm->start_s = 2.0;
  lm->duration_s = 3.5;
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  gint32 h = s->tof_bins ? (gint32)(s->tof_bins - 1) / 2 : 0;
  for (guint64 i = 0; i < n + nd; i++) {
    TlEvent *ev = i < n ? &lm->events[i] : &lm->delayed[i - n];
    do {
      ev->a = (guint32)g_rand_int_range(r, 0, (gint32)s->n_crystals);
      ev->b = (guint32)g_rand_int_range(r, 0, (gint32)s->n_crystals);
    } while (!tl_scanner_pair_allowed(s, ev->a, ev->b));
    ev->tof_bin = h ? g_rand_int_range(r, -h, h + 1) : 0;
    if (i < n) lm->tags[i] = (guint8)(i % TL_TAG_N);
  }
  g_assert_true(tl_listmode_validate(lm, preset, NULL));
  return lm;
}

static float size_max(const TlScanner *s) {
  return MAX(s->crystal_size[0], MAX(s->crystal_size[1], s->crystal_size[2]));
}

static void assert_events_equal(const TlEvent *x, const TlEvent *y, guint64 n) {
  for (guint64 i = 0; i < n; i++) {
    if (x[i].a != y[i].a || x[i].b != y[i].b || x[i].tof_bin != y[i].tof_bin)
      g_error("event %" G_GUINT64_FORMAT ": (%u, %u, %d) read back as (%u, %u, %d)", i, x[i].a,
              x[i].b, x[i].tof_bin, y[i].a, y[i].b, y[i].tof_bin);
  }
}

/* Tomolab's reader gives back the list mode written: every crystal position, event, delayed,
 * the TOF binning, energy window and time span. */
static void assert_read_back(const TlListmode *src, const char *path) {
  g_autoptr(GError) e = NULL;
  g_autoptr(TlPetsirdInfo) info = NULL;
  g_autoptr(TlListmode) lm = tl_petsird_load(path, &info, &e);
  g_assert_no_error(e);
  const TlScanner *a = src->scanner, *b = lm->scanner;
  g_assert_cmpstr(b->name, ==, a->name);
  g_assert_cmpuint(b->n_crystals, ==, a->n_crystals);
  for (guint i = 0; i < a->n_crystals; i++)
    for (int d = 0; d < 3; d++)
      if (fabs(a->crystals[i].centre[d] - b->crystals[i].centre[d]) > 1e-3)
        g_error("crystal %u: centre[%d] %.6f read back as %.6f", i, d, a->crystals[i].centre[d],
                b->crystals[i].centre[d]);
      else if (fabs(a->crystals[i].normal[d] - b->crystals[i].normal[d]) > 1e-5)
        g_error("crystal %u: normal[%d] %.7f read back as %.7f", i, d, a->crystals[i].normal[d],
                b->crystals[i].normal[d]);
  g_assert_cmpuint(info->module_types, ==, 1);
  g_assert_cmpuint(info->energy_bins[0], ==, 1);
  g_assert_cmpint(lm->has_tof, ==, src->has_tof);
  if (src->has_tof) {
    g_assert_cmpuint(b->tof_bins, ==, a->tof_bins);
    g_assert_cmpfloat(fabs(b->tof_bin_mm - a->tof_bin_mm), <=, 1e-5 * a->tof_bin_mm);
    g_assert_cmpfloat(fabs(b->tof_fwhm_ps - a->tof_fwhm_ps), <=, 1e-5 * a->tof_fwhm_ps);
  }
  double wa[2], wb[2], ra, rb;
  tl_scanner_energy(a, wa, &ra);
  tl_scanner_energy(b, wb, &rb);
  g_assert_cmpfloat(wa[0], ==, wb[0]);
  g_assert_cmpfloat(wa[1], ==, wb[1]);
  g_assert_cmpfloat(ra, ==, rb);
  g_assert_cmpfloat(size_max(a), ==, size_max(b)); /* depth: the reader sorts the box's sides */
  g_assert_cmpuint(lm->n_events, ==, src->n_events);
  assert_events_equal(src->events, lm->events, src->n_events);
  g_assert_cmpuint(lm->n_delayed, ==, src->delayed ? src->n_delayed : 0);
  assert_events_equal(src->delayed, lm->delayed, lm->n_delayed);
  g_assert_cmpfloat(fabs(lm->start_s - src->start_s), <, 5e-4);
  g_assert_cmpfloat(fabs(lm->duration_s - src->duration_s), <, 1e-3);
  g_assert_null(lm->tags);
}

/* ---- the independent decoder (tests/petsird-decode.py) ---- */

static double num(const TlJson *j) {
  g_assert_nonnull(j);
  g_assert_cmpint(j->kind, ==, TL_JSON_NUMBER);
  return j->number;
}

static const TlJson *at(const TlJson *j, guint i) {
  g_assert_nonnull(j);
  g_assert_cmpint(j->kind, ==, TL_JSON_ARRAY);
  g_assert_cmpuint(i, <, j->n);
  return j->items[i];
}

/* What the Python decoder finds in `path` against the list mode written; `blocks` (n) the
 * time blocks expected (NULL: one over the list mode's span). */
static void assert_decoded(const TlListmode *src, const char *path, const TlPetsirdBlock *blocks,
                           guint n_blocks) {
  g_autofree char *events = tmp_path("events.out");
  const char *argv[] = {python, decoder, path, events, NULL};
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                             &status, NULL));
  if (!g_spawn_check_wait_status(status, NULL)) g_error("petsird-decode.py %s: %s", path, err);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlJson) j = tl_json_parse(out, strlen(out), "petsird-decode.py", &e);
  g_assert_no_error(e);
  const TlScanner *s = src->scanner;
  g_assert_cmpfloat(num(tl_json_get(j, "schema_bytes")), ==, 12884);
  g_assert_cmpstr(tl_json_string(tl_json_get(j, "model")), ==, s->name);
  g_assert_cmpfloat(num(tl_json_get(j, "module_types")), ==, 1);
  const TlJson *cr = tl_json_get(j, "crystals");
  g_assert_cmpuint(cr->n, ==, s->n_crystals);
  for (guint i = 0; i < s->n_crystals; i++)
    for (guint d = 0; d < 3; d++)
      if (fabs(num(at(at(cr, i), d)) - s->crystals[i].centre[d]) > 1e-3)
        g_error("decoded crystal %u: centre[%u] %.6f (written %.6f)", i, d, num(at(at(cr, i), d)),
                s->crystals[i].centre[d]);
  /* TOF: Tomolab's bins as edges (bin 0 centred on the midpoint), else one bin */
  const TlJson *te = at(at(tl_json_get(j, "tof_edges"), 0), 0);
  guint nt = src->has_tof ? s->tof_bins : 1;
  g_assert_cmpuint(te->n, ==, nt + 1);
  if (src->has_tof)
    for (guint i = 0; i <= nt; i++)
      g_assert_cmpfloat(fabs(num(at(te, i)) - ((double)i - nt / 2.0) * s->tof_bin_mm), <, 1e-3);
  g_assert_cmpfloat(num(at(te, 0)), ==, -num(at(te, nt)));
  double w[2], res;
  tl_scanner_energy(s, w, &res);
  const TlJson *ee = at(tl_json_get(j, "energy_edges"), 0);
  g_assert_cmpuint(ee->n, ==, 2);
  g_assert_cmpfloat(num(at(ee, 0)), ==, (float)w[0]);
  g_assert_cmpfloat(num(at(ee, 1)), ==, (float)w[1]);
  g_assert_cmpfloat(num(at(tl_json_get(j, "energy_resolution"), 0)), ==, (float)res);
  /* blocks and every event, in order */
  TlPetsirdBlock whole = {(guint32)round(src->start_s * 1000),
                          (guint32)round((src->start_s + src->duration_s) * 1000), src->n_events,
                          src->delayed ? src->n_delayed : 0};
  if (!blocks) blocks = &whole, n_blocks = 1;
  const TlJson *bl = tl_json_get(j, "blocks");
  g_assert_cmpuint(bl->n, ==, n_blocks);
  for (guint k = 0; k < n_blocks; k++) {
    g_assert_cmpstr(tl_json_string(tl_json_get(at(bl, k), "tag")), ==, "EventTimeBlock");
    g_assert_cmpfloat(num(tl_json_get(at(bl, k), "start")), ==, blocks[k].start_ms);
    g_assert_cmpfloat(num(tl_json_get(at(bl, k), "stop")), ==, blocks[k].stop_ms);
    g_assert_cmpfloat(num(tl_json_get(at(bl, k), "prompts")), ==, blocks[k].prompts);
    g_assert_cmpfloat(num(tl_json_get(at(bl, k), "delayeds")), ==, blocks[k].delayeds);
  }
  g_autofree guint32 *rec = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(events, (char **)&rec, &len, NULL));
  guint64 nd = src->delayed ? src->n_delayed : 0;
  g_assert_cmpuint(len, ==, 20 * (src->n_events + nd));
  gint32 mid = src->has_tof ? (gint32)(s->tof_bins - 1) / 2 : 0;
  guint64 ip = 0, id = 0, r = 0;
  for (guint k = 0; k < n_blocks; k++)
    for (guint kind = 0; kind < 2; kind++)
      for (guint64 i = 0; i < (kind ? blocks[k].delayeds : blocks[k].prompts); i++, r++) {
        const guint32 *x = rec + 5 * r;
        const TlEvent *ev = kind ? &src->delayed[id++] : &src->events[ip++];
        if (GUINT32_FROM_LE(x[0]) != k || GUINT32_FROM_LE(x[1]) != kind ||
            GUINT32_FROM_LE(x[2]) != ev->a || GUINT32_FROM_LE(x[3]) != ev->b ||
            (gint32)GUINT32_FROM_LE(x[4]) != ev->tof_bin + mid)
          g_error("decoded record %" G_GUINT64_FORMAT ": block %u kind %u (%u, %u, tofIdx %u), "
                  "written block %u kind %u (%u, %u, TOF bin %d)", r, x[0], x[1], x[2], x[3],
                  x[4], k, kind, ev->a, ev->b, ev->tof_bin);
      }
  g_remove(events);
}

/* ---- (a) + (b): Tomolab's list mode through `tomolab-cli convert` ---- */

static void run_cli(const char *in, const char *out) {
  const char *argv[] = {cli, "convert", in, out, NULL};
  g_autofree char *so = NULL, *se = NULL;
  int status;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &so, &se,
                             &status, NULL));
  if (!g_spawn_check_wait_status(status, NULL)) g_error("tomolab-cli convert %s %s: %s", in, out, se);
  g_assert_nonnull(strstr(se, "(petsird)"));
}

static void test_tlm(void) {
  g_autoptr(TlListmode) lm = random_listmode("dmi", 20000, 3000, 26);
  g_autofree char *tlm = tmp_path("dmi.tlm"), *out = tmp_path("dmi.petsird"),
                  *gz = tmp_path("dmi.bin.gz");
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_listmode_save(lm, tlm, &e));
  g_assert_no_error(e);
  run_cli(tlm, out);
  assert_read_back(lm, out);
  assert_decoded(lm, out, NULL, 0);
  /* the DMI's sides are rigid copies of one another: 16-crystal modules, not one per crystal */
  g_autoptr(TlPetsirdInfo) info = tl_petsird_scan(out, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(info->modules[0], ==, 36 * 34);
  g_assert_cmpuint(info->elements[0], ==, 16);
  /* gzipped by the name, the same content */
  run_cli(tlm, gz);
  assert_read_back(lm, gz);
  assert_decoded(lm, gz, NULL, 0);
  g_remove(tlm);
  g_remove(out);
  g_remove(gz);
}

static void test_no_tof(void) {
  g_autoptr(TlListmode) lm = random_listmode("small-animal", 5000, 0, 7);
  g_free(lm->delayed);
  lm->delayed = NULL;
  lm->n_delayed = 0;
  g_autofree char *out = tmp_path("sa.petsird");
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_petsird_save(lm, NULL, 0, out, &e));
  g_assert_no_error(e);
  assert_read_back(lm, out);
  assert_decoded(lm, out, NULL, 0);
  g_remove(out);
}

static void test_dual_head(void) {
  g_autoptr(TlListmode) lm = random_listmode("dual-head", 3000, 100, 8);
  g_autofree char *out = tmp_path("dh.petsird");
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_petsird_save(lm, NULL, 0, out, &e));
  g_assert_no_error(e);
  assert_read_back(lm, out);
  assert_decoded(lm, out, NULL, 0);
  g_remove(out);
}

/* The real mMR list mode, prompts and delayeds, through the format table's writer. */
static void test_mmr(void) {
  g_autoptr(GError) e = NULL;
  TlMmrStats st;
  g_autoptr(TlListmode) lm = tl_mmr_load(MMR, NULL, &st, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(lm->n_events, ==, 218881);
  g_assert_cmpuint(lm->n_delayed, ==, 35320);
  g_autofree char *out = tmp_path("mmr.bin");
  run_cli(MMR, out);
  g_autoptr(TlPetsirdInfo) info = tl_petsird_scan(out, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(info->elements[0], ==, 8); /* the mMR's blocks of 8 crystals */
  g_assert_cmpuint(info->modules[0], ==, 64 * 56);
  assert_read_back(lm, out);
  assert_decoded(lm, out, NULL, 0);
  g_remove(out);
}

/* ---- (c): the shipped files read, written, read back ---- */

static void test_shipped(gconstpointer data) {
  const char *file = data;
  g_autofree char *in = g_strconcat(DIR, file, NULL), *out = tmp_path("shipped.petsird");
  g_autoptr(GError) e = NULL;
  g_autoptr(TlPetsirdInfo) i1 = NULL, i2 = NULL;
  g_autoptr(TlListmode) lm = tl_petsird_load(in, &i1, &e);
  g_assert_no_error(e);
  g_assert_true(tl_petsird_save(lm, (const TlPetsirdBlock *)i1->blocks->data, i1->blocks->len,
                                out, &e));
  g_assert_no_error(e);
  g_autoptr(TlListmode) back = tl_petsird_load(out, &i2, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(i2->blocks->len, ==, i1->blocks->len);
  for (guint k = 0; k < i1->blocks->len; k++) {
    const TlPetsirdBlock *a = &g_array_index(i1->blocks, TlPetsirdBlock, k);
    const TlPetsirdBlock *b = &g_array_index(i2->blocks, TlPetsirdBlock, k);
    g_assert_cmpuint(a->start_ms, ==, b->start_ms);
    g_assert_cmpuint(a->stop_ms, ==, b->stop_ms);
    g_assert_cmpuint(a->prompts, ==, b->prompts);
    g_assert_cmpuint(a->delayeds, ==, b->delayeds);
    g_assert_cmpuint(g_array_index(i1->block_prompts, guint64, k), ==,
                     g_array_index(i2->block_prompts, guint64, k));
  }
  g_assert_cmpuint(i2->prompts, ==, i1->prompts);
  g_assert_cmpuint(i2->n_crystals, ==, i1->n_crystals);
  assert_read_back(lm, out);
  if (strstr(file, "small")) /* the default files hold 45 MB of efficiencies: too slow in Python */
    assert_decoded(lm, out, (const TlPetsirdBlock *)i1->blocks->data, i1->blocks->len);
  g_remove(out);
}

/* ---- refusals: what PETSIRD cannot hold ---- */

static void refused(const TlListmode *lm, const TlPetsirdBlock *b, guint nb, const char *path,
                    const char *const *words) {
  g_autoptr(GError) e = NULL;
  g_assert_false(tl_petsird_save(lm, b, nb, path, &e));
  g_assert_nonnull(e);
  g_assert_nonnull(strstr(e->message, path));
  for (guint i = 0; words[i]; i++)
    if (!strstr(e->message, words[i])) g_error("'%s' lacks '%s'", e->message, words[i]);
  /* the file there before is untouched */
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "old");
}

static void test_refusals(void) {
  g_autoptr(TlListmode) lm = random_listmode("small-animal", 100, 10, 9);
  g_autofree char *path = tmp_path("refused.petsird");
  g_assert_true(g_file_set_contents(path, "old", -1, NULL));
  lm->start_s = -1;
  refused(lm, NULL, 0, path, (const char *const[]){"start_s", "-1", "uint32 milliseconds", NULL});
  lm->start_s = 0;
  lm->duration_s = 5e6; /* 58 days */
  refused(lm, NULL, 0, path, (const char *const[]){"start_s + duration_s", "5e+06", "uint32", NULL});
  lm->duration_s = 1;
  TlPetsirdBlock b[2] = {{0, 500, 60, 5}, {500, 1000, 30, 5}};
  refused(lm, b, 2, path, (const char *const[]){"2 time blocks", "90 prompts", "expected", "100", NULL});
  b[1] = (TlPetsirdBlock){500, 1000, G_MAXUINT64, 5}; /* a sum that would wrap round */
  refused(lm, b, 2, path, (const char *const[]){"time block 1", "18446744073709551615", "40", "left", NULL});
  b[1] = (TlPetsirdBlock){900, 500, 40, 5};
  refused(lm, b, 2, path, (const char *const[]){"time block 1", "[900, 500)", "start <= stop", NULL});
  float keep[3];
  memcpy(keep, lm->scanner->crystals[7].centre, sizeof keep);
  lm->scanner->crystals[7].centre[0] = lm->scanner->crystals[7].centre[1] = 0;
  refused(lm, NULL, 0, path, (const char *const[]){"crystal 7", "off the axis", NULL});
  memcpy(lm->scanner->crystals[7].centre, keep, sizeof keep);
  lm->events[3].a = 1u << 30; /* invalid list mode: never crashes, never written */
  refused(lm, NULL, 0, path, (const char *const[]){"1073741824", NULL});
  lm->events[3].a = 0;
  g_remove(path);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  if (argc < 4) g_error("usage: %s PYTHON petsird-decode.py TOMOLAB-CLI", argv[0]);
  python = argv[1];
  decoder = argv[2];
  cli = argv[3];
  tmpdir = g_dir_make_tmp("tl-petsird-write-XXXXXX", NULL);
  g_test_add_func("/petsird-write/schema-bytes", test_schema_bytes);
  g_test_add_func("/petsird-write/tlm-convert", test_tlm);
  g_test_add_func("/petsird-write/no-tof", test_no_tof);
  g_test_add_func("/petsird-write/dual-head", test_dual_head);
  g_test_add_func("/petsird-write/mmr", test_mmr);
  static const char *const shipped[] = {"petsird-v0.10.0_small.bin", "petsird-main-69c7b78_small.bin",
                                        "petsird-v0.10.0_default.bin.gz",
                                        "petsird-main-69c7b78_default.bin.gz"};
  for (guint i = 0; i < G_N_ELEMENTS(shipped); i++) {
    g_autofree char *name = g_strdup_printf("/petsird-write/shipped/%s", shipped[i]);
    g_test_add_data_func(name, shipped[i], test_shipped);
  }
  g_test_add_func("/petsird-write/refusals", test_refusals);
  int rc = g_test_run();
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
