/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The mMR as STIR describes it, shared by the list-mode and the sinogram path (issue 26):
 * the sinogram made from the real list mode of ../shared/data/mmr carries STIR's mMR fields;
 * every prompt lands in the bin that a decoder written here from STIR's published conventions
 * computes (ECAT8 32-bit words, ProjDataInfoCylindricalNoArcCorr, Siemens' span 11); list-mode
 * and sinogram reconstructions of the same events agree; the written sinogram reconstructs. */
#include "tl-test-common.h"
#include "pet/data/tl-format-mmr.h"
#include "pet/data/tl-sinogram-hist.h"
#include "pet/tl-pet-operator.h"
#include "pet/tl-sinogram-model.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-solver.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REAL_HDR "../shared/data/mmr/PET_ACQ_small.l.hdr.STIR"
#define REAL_L "../shared/data/mmr/small_listmode_file.l"

static char *tmpdir;
static const char *cli_path;

/* --- the independent decoder (STIR's conventions, written out here) --- */

/* A prompt's bin address (bits 0-29): tangential fastest (344, centred on 172), then view
 * (252), then sinogram z over span-1 segments in ECAT order 0, -1, +1, ... -60, +60, segment s
 * holding 64 - |s| axial positions (STIR's CListRecordECAT8_32bit, ecat::find_segment_sequence).
 * Rings: ring difference s = r2 - r1, axial position = min(r1, r2). Detectors (non-arc-corrected
 * cylinder, 504 per ring): d1 = (v + floor(t/2)) mod 504, d2 = (v - floor((t+1)/2) + 252) mod 504;
 * the mMR's gap is the first position of each block of 9. FALSE: no crystal pair (a gap, or an
 * address beyond the 4084 sinograms). */
typedef struct {
  int rd, r1, r2, view, tang, d1, d2;
} Lor;

static gboolean decode(guint32 address, Lor *l) {
  int t = (int)(address % 344) - 172;
  guint rest = address / 344;
  int v = (int)(rest % 252);
  int z = (int)(rest / 252);
  int seg = 0, i = 0;
  for (;; i++) {
    if (i > 120) return FALSE;
    seg = i == 0 ? 0 : (i % 2 ? -(i + 1) / 2 : i / 2);
    if (z < 64 - abs(seg)) break;
    z -= 64 - abs(seg);
  }
  int ft = t >= 0 ? t / 2 : -((1 - t) / 2), ft1 = t + 1 >= 0 ? (t + 1) / 2 : -((-t) / 2);
  int d1 = ((v + ft) % 504 + 504) % 504, d2 = ((v - ft1 + 252) % 504 + 504) % 504;
  if (d1 % 9 == 0 || d2 % 9 == 0) return FALSE;
  l->rd = seg;
  l->r1 = seg >= 0 ? z : z - seg;
  l->r2 = l->r1 + seg;
  l->view = v;
  l->tang = t;
  l->d1 = d1;
  l->d2 = d2;
  return TRUE;
}

/* Siemens' span 11 as STIR lays it out (examples/Siemens-mMR/template_span11.hs): segments in
 * ascending order with ring differences -60..-50, ..., -5..5, ..., 50..60; axial positions per
 * segment 27, 49, 71, 93, 115, 127, ...; within a segment [view][axial][tangential]. Axial
 * position (ProjDataInfoCylindrical's comment): (r1 + r2 - (rings - 1)) * inc / 2 + (n_axial - 1)
 * / 2 with inc 2 positions per ring when a segment holds several ring differences, 1 otherwise:
 * r1 + r2 - min |rd| in span 11, min(r1, r2) in span 1. */
static const int span11_axial[11] = {27, 49, 71, 93, 115, 127, 115, 93, 71, 49, 27};

static guint64 span11_bin(const Lor *l) {
  int k = abs(l->rd) <= 5 ? 0 : (abs(l->rd) - 6) / 11 + 1;
  if (l->rd < 0) k = -k;
  int seg = k + 5, minabs = k == 0 ? 0 : 6 + (abs(k) - 1) * 11;
  guint64 off = 0;
  for (int i = 0; i < seg; i++) off += (guint64)span11_axial[i] * 252 * 344;
  int ax = l->r1 + l->r2 - minabs;
  g_assert_cmpint(ax, >=, 0);
  g_assert_cmpint(ax, <, span11_axial[seg]);
  return off + ((guint64)l->view * span11_axial[seg] + ax) * 344 + (guint64)(l->tang + 172);
}

/* Span 1, ring differences -m..m in STIR's ascending order: segment rd holds 64 - |rd|. */
static guint64 span1_bin(const Lor *l, int m) {
  guint64 off = 0;
  for (int rd = -m; rd < l->rd; rd++) off += (guint64)(64 - abs(rd)) * 252 * 344;
  int ax = MIN(l->r1, l->r2);
  return off + ((guint64)l->view * (64 - abs(l->rd)) + ax) * 344 + (guint64)(l->tang + 172);
}

/* The prompts of the file's words with time tag < end_ms (G_MAXUINT32: all), decoded. */
static GArray *decode_file(guint32 end_ms, guint64 *gaps) {
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(REAL_L, &raw, &len, NULL));
  g_assert_cmpuint(len % 4, ==, 0);
  GArray *lors = g_array_new(FALSE, FALSE, sizeof(Lor));
  guint32 now = 0;
  *gaps = 0;
  for (gsize i = 0; i < len / 4; i++) {
    guint32 w;
    memcpy(&w, raw + 4 * i, 4);
    w = GUINT32_FROM_LE(w);
    if (w >> 29 == 4) now = w & 0x1fffffffu; /* time tag, ms */
    if (w >> 31 || !((w >> 30) & 1) || now >= end_ms) continue;
    Lor l;
    if (decode(w & 0x3fffffffu, &l)) g_array_append_val(lors, l);
    else (*gaps)++;
  }
  return lors;
}

static int cmp_u64(gconstpointer a, gconstpointer b) {
  guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
  return x < y ? -1 : x > y;
}

/* The sinogram holds exactly the expected bins: each with its multiplicity, nothing else. */
static void assert_bins(const TlSinogram *s, GArray *expect) {
  g_array_sort(expect, cmp_u64);
  double total = 0;
  for (guint64 i = 0; i < s->n_bins; i++) total += s->data[i];
  g_assert_cmpfloat(total, ==, (double)expect->len);
  for (guint i = 0; i < expect->len;) {
    guint j = i;
    guint64 b = g_array_index(expect, guint64, i);
    while (j < expect->len && g_array_index(expect, guint64, j) == b) j++;
    g_assert_cmpuint(b, <, s->n_bins);
    if (s->data[b] != (float)(j - i))
      g_error("bin %" G_GUINT64_FORMAT ": %g counts, the decoder expects %u", b, s->data[b], j - i);
    i = j;
  }
}

/* --- the tests --- */

static double header_number(const char *text, const char *key) {
  const char *p = strstr(text, key);
  g_assert_nonnull(p);
  p = strstr(p, ":=");
  g_assert_nonnull(p);
  return g_ascii_strtod(p + 2, NULL);
}

static void test_header(void) {
  GError *error = NULL;
  TlMmrOptions opt = {0.0, 0.05};
  g_autoptr(TlListmode) lm = tl_mmr_load(REAL_HDR, &opt, NULL, &error);
  g_assert_no_error(error);
  /* Siemens' span 11 over every ring difference: the geometry of STIR's template_span11.hs */
  g_autoptr(TlSinogram) s11 = tl_sinogram_new_stir(lm->scanner, 11, G_MAXUINT, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(s11->name, ==, "Siemens mMR");
  g_assert_cmpuint(s11->n_detectors, ==, 504);
  g_assert_cmpuint(s11->n_views, ==, 252);
  g_assert_cmpuint(s11->n_tangential, ==, 344);
  g_assert_cmpuint(s11->n_segments, ==, 11);
  for (guint i = 0; i < 11; i++) {
    g_assert_cmpuint(s11->n_axial[i], ==, (guint)span11_axial[i]);
    g_assert_cmpint(s11->min_ring_difference[i], ==, i == 5 ? -5 : i < 5 ? -60 + 11 * (int)i : 6 + 11 * ((int)i - 6));
  }
  g_assert_cmpuint(s11->n_bins, ==, 837ull * 252 * 344);
  /* written (ring differences up to 5: one segment, a small file) and read back as text */
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(lm->scanner, 11, 5, &error);
  g_assert_no_error(error);
  g_assert_true(tl_sinogram_add_events(s, lm, NULL, &error));
  g_autofree char *hs = g_build_filename(tmpdir, "hdr.hs", NULL);
  g_assert_true(tl_sinogram_save(s, hs, &error));
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(hs, &text, NULL, NULL));
  g_assert_nonnull(strstr(text, "Scanner type := Siemens mMR\n"));
  g_assert_nonnull(strstr(text, "originating system := Siemens mMR\n"));
  /* as STIR's template_span11.hs writes them */
  g_assert_nonnull(strstr(text, "Default bin size (cm) := 0.208626\n"));
  g_assert_nonnull(strstr(text, "Average depth of interaction (cm) := 0.7\n"));
  g_assert_cmpfloat(header_number(text, "Number of detectors per ring"), ==, 504);
  g_assert_cmpfloat(header_number(text, "Number of rings"), ==, 64);
  g_assert_cmpfloat(header_number(text, "!matrix size [3]"), ==, 252);
  g_assert_cmpfloat(header_number(text, "!matrix size [1]"), ==, 344);
  g_assert_cmpfloat_with_epsilon(header_number(text, "Average depth of interaction (cm)"), 0.7, 1e-9);
  g_assert_cmpfloat_with_epsilon(header_number(text, "Default bin size (cm)"), 0.208626, 1e-9);
  g_assert_cmpfloat_with_epsilon(header_number(text, "Inner ring diameter (cm)"), 65.6, 1e-9);
  g_assert_cmpfloat_with_epsilon(header_number(text, "Distance between rings (cm)"), 0.40625, 1e-9);
  g_assert_cmpfloat(header_number(text, "Number of crystals per block in transaxial direction"), ==, 9);
  /* read back: the same geometry, gaps included */
  g_autoptr(TlSinogram) back = tl_sinogram_load(hs, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->block_positions, ==, 9);
  g_assert_cmpuint(back->n_bins, ==, s->n_bins);
  g_assert_cmpmem(back->data, sizeof(float) * s->n_bins, s->data, sizeof(float) * s->n_bins);
}

/* Every prompt of the whole file in its bin, span 11 over every ring difference and span 1 up
 * to ring difference 2. */
static void test_every_prompt(void) {
  GError *error = NULL;
  TlMmrStats st;
  g_autoptr(TlListmode) lm = tl_mmr_load(REAL_HDR, NULL, &st, &error);
  g_assert_no_error(error);
  guint64 gaps = 0;
  g_autoptr(GArray) lors = decode_file(G_MAXUINT32, &gaps);
  g_assert_cmpuint(lors->len, ==, lm->n_events);
  g_assert_cmpuint(lors->len + gaps, ==, st.prompts);
  g_test_message("%u prompts decoded, %" G_GUINT64_FORMAT " on gaps", lors->len, gaps);
  /* each event's line where STIR puts it: detectors at psi = 2 pi d / 504 on R = 328 + 7 mm,
   * (R sin psi, -R cos psi): the chord's distance from the axis R |cos((psi2 - psi1) / 2)|, its
   * direction (cos, sin) of (psi1 + psi2) / 2 modulo pi, its ends on rings r1 and r2 */
  double worst_mm = 0, worst_rad = 0;
  for (guint i = 0; i < lors->len; i++) {
    const Lor *l = &g_array_index(lors, Lor, i);
    const TlCrystal *ca = &lm->scanner->crystals[lm->events[i].a];
    const TlCrystal *cb = &lm->scanner->crystals[lm->events[i].b];
    double p1 = 2 * G_PI * l->d1 / 504, p2 = 2 * G_PI * l->d2 / 504;
    double dx = (double)cb->centre[0] - ca->centre[0], dy = (double)cb->centre[1] - ca->centre[1];
    double dist = fabs(ca->centre[0] * dy - ca->centre[1] * dx) / hypot(dx, dy);
    worst_mm = MAX(worst_mm, fabs(dist - 335.0 * fabs(cos(0.5 * (p2 - p1)))));
    double ang = remainder(atan2(dy, dx) - 0.5 * (p1 + p2), G_PI);
    worst_rad = MAX(worst_rad, fabs(ang));
    double za = (l->r1 - 31.5) * 4.0625, zb = (l->r2 - 31.5) * 4.0625;
    gboolean same = fabs(ca->centre[2] - za) < 1e-4 && fabs(cb->centre[2] - zb) < 1e-4;
    gboolean swapped = fabs(ca->centre[2] - zb) < 1e-4 && fabs(cb->centre[2] - za) < 1e-4;
    if (!same && !swapped) g_error("event %u: ends at z %g, %g (expected %g, %g)", i, ca->centre[2], cb->centre[2], za, zb);
  }
  g_test_message("lines of response against STIR's: %.2g mm, %.2g rad at most", worst_mm, worst_rad);
  g_assert_cmpfloat(worst_mm, <, 1e-3);
  g_assert_cmpfloat(worst_rad, <, 1e-5);
  {
    g_autoptr(TlSinogram) s = tl_sinogram_new_stir(lm->scanner, 11, G_MAXUINT, &error);
    g_assert_no_error(error);
    guint64 outside = 1;
    g_assert_true(tl_sinogram_add_events(s, lm, &outside, &error));
    g_assert_cmpuint(outside, ==, 0);
    g_autoptr(GArray) expect = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (guint i = 0; i < lors->len; i++) {
      guint64 b = span11_bin(&g_array_index(lors, Lor, i));
      g_array_append_val(expect, b);
    }
    assert_bins(s, expect);
    /* back to crystal pairs for the binned operator: each bin's count split over its ring
     * pairs, every event's own pair among them, the total kept. The pairs' bound counts the
     * non-zero bins (issue 26: counted by rings it refused this as 671 * 10^6 pairs) */
    g_autoptr(GArray) bins = tl_sinogram_to_bins(s, FALSE, &error);
    g_assert_no_error(error);
    g_autoptr(GHashTable) have = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autofree gint64 *keys = g_new(gint64, bins->len);
    double sum = 0;
    for (guint i = 0; i < bins->len; i++) {
      const TlBin *b = &g_array_index(bins, TlBin, i);
      keys[i] = (gint64)b->a * 65536 + b->b;
      g_hash_table_add(have, &keys[i]);
      sum += b->count;
    }
    g_assert_cmpfloat(fabs(sum - lm->n_events), <, 1e-6 * lm->n_events);
    for (guint64 i = 0; i < lm->n_events; i++) {
      gint64 k = (gint64)MIN(lm->events[i].a, lm->events[i].b) * 65536 + MAX(lm->events[i].a, lm->events[i].b);
      if (!g_hash_table_contains(have, &k)) g_error("event %" G_GUINT64_FORMAT ": pair not in its bin", i);
    }
    g_test_message("span 11: %u pairs from the non-zero bins", bins->len);
  }
  {
    g_autoptr(TlSinogram) s = tl_sinogram_new_stir(lm->scanner, 1, 2, &error);
    g_assert_no_error(error);
    guint64 outside = 0;
    g_assert_true(tl_sinogram_add_events(s, lm, &outside, &error));
    g_autoptr(GArray) expect = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (guint i = 0; i < lors->len; i++) {
      const Lor *l = &g_array_index(lors, Lor, i);
      if (abs(l->rd) > 2) continue;
      guint64 b = span1_bin(l, 2);
      g_array_append_val(expect, b);
    }
    g_assert_cmpuint(outside, ==, lors->len - expect->len);
    assert_bins(s, expect);
  }
}

static TlImage *mlem(TlContext *ctx, TlOperator *op, guint iterations) {
  GError *error = NULL;
  TlProblem pb = {.op = op};
  TlSolverOptions so;
  tl_solver_options_init(&so);
  so.iterations = iterations;
  so.objective = TL_OBJECTIVE_NEVER;
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "mlem", &pb, &so, &error);
  g_assert_no_error(error);
  g_assert_true(tl_solver_run(sv, &error));
  g_assert_no_error(error);
  TlImage *im = tl_solver_image(sv, &error);
  g_assert_no_error(error);
  return im;
}

/* The direct planes only (ring difference 0: the sensitivity's 6.3 * 10^6 pairs stay seconds
 * on a CPU device): list mode against the sinogram `convert` writes, MLEM on both. */
static void test_recon_agree(void) {
  GError *error = NULL;
  g_autoptr(TlListmode) all = tl_mmr_load(REAL_HDR, NULL, NULL, &error);
  g_assert_no_error(error);
  TlScanner *sc = tl_scanner_copy(all->scanner);
  sc->max_ring_difference = 0;
  g_autoptr(TlListmode) lm = tl_listmode_new(sc, 0);
  GArray *kept = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  for (guint64 i = 0; i < all->n_events; i++)
    if (all->events[i].a / 448 == all->events[i].b / 448) g_array_append_val(kept, all->events[i]);
  g_assert_cmpuint(kept->len, >, 2000);
  g_free(lm->events);
  lm->n_events = kept->len;
  lm->events = (TlEvent *)(void *)g_array_free(kept, FALSE);

  /* the sinogram `tomolab-cli convert` writes, opened as any file is */
  g_autofree char *hs = g_build_filename(tmpdir, "direct.hs", NULL);
  const char *argv[] = {cli_path, "convert", REAL_HDR, hs, "--max-ring-difference", "0", NULL};
  g_autofree char *out = NULL, *err = NULL;
  int status = -1;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                             &status, &error));
  g_assert_no_error(error);
  if (!g_spawn_check_wait_status(status, NULL)) g_error("convert failed: %s", err);
  g_assert_nonnull(strstr(err, "(Siemens mMR, span 1,"));
  g_autoptr(TlDataset) ds = tl_dataset_open(hs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ds->kind, ==, TL_DATASET_PET_BINS);
  /* the same scanner: the same crystals, acceptance and sizes (its key) */
  g_autofree char *k1 = tl_scanner_key(lm->scanner), *k2 = tl_scanner_key(ds->lm->scanner);
  g_assert_cmpstr(k1, ==, k2);
  g_assert_cmpfloat(ds->bin_counts, ==, (double)lm->n_events);

  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(66, 66, 32, 8.0f, 8.0f, 8.125f);
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.use_cache = TRUE; /* the second operator must find the first one's image: one key */
  g_autoptr(TlOperator) op_lm = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlOperator) op_bin = tl_pet_operator_new_binned(
      ctx, ds->lm->scanner, (TlBin *)(void *)ds->bins->data, ds->bins->len, &g, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) a = mlem(ctx, op_lm, 3);
  g_autoptr(TlImage) b = mlem(ctx, op_bin, 3);
  /* the same lines of response for the sensitivity too: the sinogram path's image is the list
   * mode's, read from the cache under the same scanner key */
  g_assert_true(tl_pet_operator_sensitivity_cached(op_bin));
  double num = 0, den = 0;
  guint64 n = (guint64)g.dims[0] * g.dims[1] * g.dims[2];
  for (guint64 i = 0; i < n; i++) {
    num += ((double)a->data[i] - b->data[i]) * ((double)a->data[i] - b->data[i]);
    den += (double)b->data[i] * b->data[i];
  }
  double rel = sqrt(num / den);
  g_test_message("list mode vs sinogram (%" G_GUINT64_FORMAT " events, %u bins): relative "
                 "difference %.3g", lm->n_events, ds->bins->len, rel);
  g_assert_cmpfloat(den, >, 0);
  g_assert_cmpfloat(rel, <=, 1e-3);

  /* the window's data view of the same sinogram: a plane's expected counts of a uniform image
   * are 0 exactly on the bins with a gap at either end (no crystal), > 0 through the centre */
  g_autoptr(TlImage) ones = tl_image_new(&g);
  for (guint64 i = 0; i < n; i++) ones->data[i] = 1.0f;
  g_autoptr(TlSinogram) sino = tl_sinogram_load(hs, &error);
  g_assert_no_error(error);
  g_autofree float *plane = g_new(float, 252 * 344);
  g_assert_true(tl_sinogram_expected_plane(ctx, sino, 0, 10, ds->lm->scanner, ones, NULL, NULL,
                                           plane, &error));
  g_assert_no_error(error);
  guint n_gap = 0;
  for (int v = 0; v < 252; v++)
    for (int t = -172; t < 172; t++) {
      Lor l;
      guint32 address = (guint32)((10u * 252 + v) * 344 + (t + 172)); /* segment 0, ring 10 */
      float y = plane[v * 344 + t + 172];
      if (!decode(address, &l)) {
        n_gap++;
        if (y != 0) g_error("view %d tangential %d: a gap bin with %g expected counts", v, t, y);
      } else if (t == 0 && !(y > 0)) {
        g_error("view %d tangential 0: %g expected counts through the centre", v, y);
      }
    }
  g_assert_cmpuint(n_gap, >, 0);
  g_clear_pointer(&op_lm, tl_operator_free);
  g_clear_pointer(&op_bin, tl_operator_free);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_assert_cmpint(argc, >=, 2); /* the tomolab-cli to run */
  cli_path = argv[1];
  tmpdir = g_dir_make_tmp("tl-mmr-stir-XXXXXX", NULL);
  g_test_add_func("/mmr-stir/header", test_header);
  g_test_add_func("/mmr-stir/every-prompt", test_every_prompt);
  g_test_add_func("/mmr-stir/recon-agree", test_recon_agree);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return rc;
}
