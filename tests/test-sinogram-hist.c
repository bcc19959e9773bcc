/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List mode into sinograms (pet/tl-sinogram-hist.h): the bin of every crystal pair inverts the
 * STIR mapping that tl_sinogram_to_bins applies (each bin's pair found back in a bin holding that
 * pair), every pair of two detector indices within the ring difference has its own bin, and
 * histogrammed events add up to the event count. */
#include "pet-fixture.h"
#include "pet/tl-sinogram-model.h"
#include "pet-ref.h"
#include <math.h>

static void test_pairs_and_bins(void) {
  TlScanner *fx = fx_ring_scanner(4, 12, 2, 4.0f, 40.0f, 5.0f, 3);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  GError *error = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(sc, 1, 2, &error);
  g_assert_no_error(error);
  g_assert_true(tl_sinogram_validate(s, "test", &error));
  g_assert_no_error(error);
  guint N = sc->crystals_per_ring;
  g_assert_cmpuint(s->n_segments, ==, 5);
  /* STIR's order: ascending ring differences */
  for (guint i = 0; i < 5; i++) g_assert_cmpint(s->min_ring_difference[i], ==, (gint)i - 2);
  g_assert_cmpuint(s->n_bins, ==, (guint64)(4 + 3 + 3 + 2 + 2) * (N / 2) * N);

  /* each bin numbered; the helper's forward mapping gives each bin's pair: the bin found for
   * that pair (either order) holds the same pair */
  for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = (float)(i + 1);
  g_autoptr(GArray) pairs = tl_sinogram_to_bins(s, TRUE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(pairs->len, ==, s->n_bins); /* span 1, no mashing: one pair per bin */
  g_autofree guint64 *pair_of = g_new0(guint64, s->n_bins); /* bin -> (min << 32 | max) */
  for (guint i = 0; i < pairs->len; i++) {
    const TlBin *p = &g_array_index(pairs, TlBin, i);
    pair_of[(guint64)p->count - 1] = (guint64)MIN(p->a, p->b) << 32 | MAX(p->a, p->b);
  }
  guint self = 0, twice = 0;
  for (guint i = 0; i < pairs->len; i++) {
    const TlBin *p = &g_array_index(pairs, TlBin, i);
    if (p->a == p->b) {
      self++; /* segment 0, t = -N/2: a detector with itself */
      continue;
    }
    guint64 bin = G_MAXUINT64, bin2 = G_MAXUINT64;
    g_assert_true(tl_sinogram_bin_of_pair(s, p->a, p->b, &bin));
    g_assert_true(tl_sinogram_bin_of_pair(s, p->b, p->a, &bin2));
    g_assert_cmpuint(bin, ==, bin2);
    g_assert_cmpuint(pair_of[bin], ==, (guint64)MIN(p->a, p->b) << 32 | MAX(p->a, p->b));
    twice += bin != (guint64)p->count - 1; /* the other bin of a t = -N/2 pair */
  }
  g_assert_cmpuint(self, ==, sc->n_rings * (N / 2));
  /* every pair of two different detector indices within ring difference 2 has a bin of its
   * own; a pair of the same index on two rings (an axial line along the crystal face, never a
   * line of response: the same side) has one for half of the indices, as in STIR's layout */
  g_autoptr(GHashTable) used = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autofree gint64 *keys = g_new(gint64, (gsize)sc->n_crystals * sc->n_crystals / 2);
  guint n_pairs = 0, same_index = 0;
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      gint rd = (gint)(b / N) - (gint)(a / N);
      guint64 bin;
      gboolean in = tl_sinogram_bin_of_pair(s, a, b, &bin);
      if (a % N == b % N) {
        same_index += in;
        continue;
      }
      g_assert_cmpint(in, ==, ABS(rd) <= 2);
      if (!in) continue;
      keys[n_pairs] = (gint64)bin;
      g_assert_false(g_hash_table_contains(used, &keys[n_pairs]));
      g_hash_table_add(used, &keys[n_pairs]);
      n_pairs++;
    }
  /* bins = pairs + self-pairs of segment 0 + the t = -N/2 row of segments +d and -d (N/2
   * views x (rings - d) axial positions each, d = 1, 2) */
  guint cross = (N / 2) * ((sc->n_rings - 1) + (sc->n_rings - 2));
  g_assert_cmpuint(same_index, ==, cross);
  g_assert_cmpuint(twice, <=, cross);
  g_assert_cmpuint(s->n_bins, ==, (guint64)n_pairs + self + 2 * cross);
}

static void test_events(void) {
  TlScanner *fx = fx_ring_scanner(3, 10, 2, 4.0f, 35.0f, 5.0f, 2);
  TlListmode *lm = tl_listmode_new(tl_scanner_copy(fx), 5000);
  fx_scanner_free(fx);
  g_autoptr(GRand) r = g_rand_new_with_seed(9);
  for (guint i = 0; i < lm->n_events; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, lm->scanner->n_crystals);
      e->b = g_rand_int_range(r, 0, lm->scanner->n_crystals);
    } while (!tl_scanner_pair_allowed(lm->scanner, e->a, e->b));
  }
  GError *error = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(lm->scanner, 1, G_MAXUINT, &error);
  g_assert_no_error(error);
  guint64 outside = 1;
  g_assert_true(tl_sinogram_add_events(s, lm, &outside, &error));
  g_assert_cmpuint(outside, ==, 0);
  double total = 0;
  for (guint64 i = 0; i < s->n_bins; i++) total += s->data[i];
  g_assert_cmpfloat(total, ==, (double)lm->n_events);
  /* a narrower sinogram counts the rest as outside, still accounting for every event */
  g_autoptr(TlSinogram) s0 = tl_sinogram_new_stir(lm->scanner, 1, 0, &error);
  g_assert_true(tl_sinogram_add_events(s0, lm, &outside, &error));
  double direct = 0;
  guint64 expect = 0;
  for (guint64 i = 0; i < s0->n_bins; i++) direct += s0->data[i];
  for (guint i = 0; i < lm->n_events; i++)
    expect += lm->events[i].a / 20 == lm->events[i].b / 20;
  g_assert_cmpfloat(direct, ==, (double)expect);
  g_assert_cmpuint(outside, ==, lm->n_events - expect);
  tl_listmode_free(lm);
}

/* Where pair (a, b) falls in plane (segment seg, axial position ax), as v * n_tangential + t;
 * FALSE when it falls elsewhere or in no bin. */
static gboolean pair_pixel(const TlSinogram *s, guint seg, guint ax, guint a, guint b,
                           guint *px) {
  guint64 bin;
  if (a == b || !tl_sinogram_bin_of_pair(s, a, b, &bin)) return FALSE;
  guint64 off = tl_sinogram_segment_offset(s, seg);
  guint64 size = (guint64)s->n_views * s->n_axial[seg] * s->n_tangential;
  if (bin < off || bin - off >= size || (bin - off) / s->n_tangential % s->n_axial[seg] != ax)
    return FALSE; /* another segment's bin, or another axial position */
  guint v = (guint)((bin - off) / s->n_tangential / s->n_axial[seg]);
  *px = v * s->n_tangential + (guint)((bin - off) % s->n_tangential);
  return TRUE;
}

/* One plane's expected counts against the C reference's Siddon line integrals of each bin's
 * pair (crystal centres as end points, as the device projector takes them). */
static void test_expected_plane(void) {
  TlContext *ctx = tl_test_context();
  TlScanner *fx = fx_ring_scanner(3, 10, 2, 4.0f, 35.0f, 5.0f, 2);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  GError *error = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(sc, 1, 2, &error);
  g_assert_no_error(error);
  TlImageGrid g = fx_grid(20, 20, 3, 3.0f, 3.0f, 5.0f);
  g_autoptr(TlImage) x = tl_image_new(&g);
  for (guint64 i = 0; i < fx_voxels(&g); i++) x->data[i] = 0.5f + (float)(i % 7) / 4.0f;
  guint N = s->n_detectors;
  for (guint seg = 0; seg < s->n_segments; seg += 2) { /* segments -2, 0, +2 */
    guint ax = s->n_axial[seg] - 1;
    g_autofree float *plane = g_new(float, s->n_views * s->n_tangential);
    g_assert_true(tl_sinogram_expected_plane(ctx, s, seg, ax, sc, x, "siddon", NULL, plane,
                                             &error));
    g_assert_no_error(error);
    gint rd = s->min_ring_difference[seg];
    guint r1 = rd >= 0 ? ax : ax - rd, r2 = r1 + rd;
    guint nonzero = 0;
    for (guint a = r1 * N; a < (r1 + 1) * N; a++)
      for (guint b = r2 * N; b < (r2 + 1) * N; b++) {
        guint px;
        if (!pair_pixel(s, seg, ax, a, b, &px)) continue;
        float got = plane[px];
        if (!tl_scanner_pair_allowed(sc, a, b)) {
          g_assert_cmpfloat(got, ==, 0);
          continue;
        }
        double p0[3], p1[3];
        for (int k = 0; k < 3; k++)
          p0[k] = sc->crystals[a].centre[k], p1[k] = sc->crystals[b].centre[k];
        TlRefModel m = {.kind = TL_REF_SIDDON};
        double ref = tl_ref_forward_model(&m, &g, p0, p1, x->data);
        g_assert_cmpfloat(fabs(got - ref), <=, 1e-5 * fabs(ref) + 1e-6);
        nonzero += ref > 0;
      }
    g_assert_cmpuint(nonzero, >, 20);
  }
  tl_test_context_done(ctx);
}

/* The plane under the whole model ybar = n_ab exp(-(A mu)_ab) (A x)_ab + r_ab + e_ab S_ab
 * (tl_sinogram_model_plane) against the C reference's Siddon integrals of x and mu with
 * hand-made efficiencies eps, axial factors g_ax (n_ab = eps_a eps_b g_ax, e_ab = eps_a eps_b:
 * the scatter term takes the crystals' efficiencies, not the geometric factors), randoms
 * factors and a scatter estimate sampled at every crystal (its values per pair exactly); the
 * randoms and scatter planes alone. */
static void test_model_plane(void) {
  TlContext *ctx = tl_test_context();
  TlScanner *fx = fx_ring_scanner(3, 10, 2, 4.0f, 35.0f, 5.0f, 2);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  GError *error = NULL;
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(sc, 1, 2, &error);
  g_assert_no_error(error);
  TlImageGrid g = fx_grid(20, 20, 3, 3.0f, 3.0f, 5.0f);
  g_autoptr(TlImage) x = tl_image_new(&g);
  g_autoptr(TlImage) mu = tl_image_new(&g);
  for (guint64 i = 0; i < fx_voxels(&g); i++) {
    x->data[i] = 0.5f + (float)(i % 7) / 4.0f;
    mu->data[i] = 0.002f * (float)(i % 5);
  }
  guint C = sc->crystals_per_ring, n = sc->n_crystals;
  g_autoptr(TlNorm) norm = tl_norm_new(sc, TRUE, FALSE, &error);
  g_assert_no_error(error);
  guint R = sc->n_rings; /* ring-major crystals: ring a / C */
  g_assert_cmpuint(norm->rings, ==, R);
  for (guint r = 0; r < R; r++)
    for (guint q = 0; q < R; q++) norm->axial[r * R + q] = 0.8f + 0.15f * (float)(r + q);
  g_autoptr(TlRandoms) rnd = g_new0(TlRandoms, 1);
  rnd->n_crystals = n;
  rnd->factor = g_new(double, n);
  for (guint i = 0; i < n; i++) {
    norm->efficiency[i] = 0.7f + 0.05f * (float)(i % 9);
    rnd->factor[i] = 0.01 + 0.002 * (i % 11);
  }
  g_assert_true(tl_norm_update(norm, "test", &error));
  /* every crystal a sampled detector: d = ring * C + t, the crystal's own id */
  g_autoptr(TlScatterEstimate) e = g_new0(TlScatterEstimate, 1);
  e->scanner = tl_scanner_copy(sc);
  e->n_t = C;
  e->n_r = sc->n_rings;
  e->transaxial = g_new(guint, C);
  e->ring = g_new(guint, sc->n_rings);
  for (guint t = 0; t < C; t++) e->transaxial[t] = t;
  for (guint r = 0; r < sc->n_rings; r++) e->ring[r] = r;
  guint64 np = (guint64)n * (n + 1) / 2;
  e->values = g_new(float, np);
  for (guint64 i = 0; i < np; i++) e->values[i] = 0.25f + 0.01f * (float)(i % 13);
  e->scale = 1.5;
  g_assert_true(tl_scatter_estimate_prepare(e, "test", &error));
  g_assert_no_error(error);
  TlSinogramModel model = {.projector = "siddon", .mu = mu, .norm = norm, .randoms = rnd,
                           .scatter = e};
  guint n_plane = s->n_views * s->n_tangential;
  for (guint seg = 0; seg < s->n_segments; seg += 2) { /* segments -2, 0, +2 */
    guint ax = s->n_axial[seg] - 1;
    g_autofree float *plane = g_new(float, n_plane);
    g_autofree float *pr = g_new(float, n_plane);
    g_autofree float *ps = g_new(float, n_plane);
    g_assert_true(tl_sinogram_model_plane(ctx, s, seg, ax, sc, x, &model, plane, pr, ps, &error));
    g_assert_no_error(error);
    gint rd = s->min_ring_difference[seg];
    guint r1 = rd >= 0 ? ax : ax - rd, r2 = r1 + rd;
    guint checked = 0;
    for (guint a = r1 * C; a < (r1 + 1) * C; a++)
      for (guint b = r2 * C; b < (r2 + 1) * C; b++) {
        guint px;
        if (!pair_pixel(s, seg, ax, a, b, &px)) continue;
        if (!tl_scanner_pair_allowed(sc, a, b)) {
          g_assert_cmpfloat(plane[px], ==, 0);
          continue;
        }
        double p0[3], p1[3];
        for (int k = 0; k < 3; k++)
          p0[k] = sc->crystals[a].centre[k], p1[k] = sc->crystals[b].centre[k];
        TlRefModel m = {.kind = TL_REF_SIDDON};
        /* n_ab = eps_a eps_b g_ax(ring_a, ring_b); S_ab = scale x the pair's own value */
        double eab = (double)norm->efficiency[a] * norm->efficiency[b];
        double nab = eab * norm->axial[(a / C) * R + b / C];
        double dax = nab * exp(-tl_ref_forward_model(&m, &g, p0, p1, mu->data)) *
                     tl_ref_forward_model(&m, &g, p0, p1, x->data);
        double r = rnd->factor[a] * rnd->factor[b];
        double sc_ab = eab * e->scale * e->values[tl_scatter_tri(MIN(a, b), MAX(a, b))];
        double want = dax + r + sc_ab;
        g_assert_cmpfloat(fabs(plane[px] - want), <=, 1e-5 * want);
        g_assert_cmpfloat(fabs(pr[px] - r), <=, 1e-6 * r);
        g_assert_cmpfloat(fabs(ps[px] - sc_ab), <=, 1e-6 * sc_ab);
        checked++;
      }
    g_assert_cmpuint(checked, >, 20);
  }
  /* an estimate of another scanner is refused, naming both */
  TlScanner *fx2 = fx_ring_scanner(3, 10, 2, 4.0f, 36.0f, 5.0f, 2);
  g_autoptr(TlScanner) other = tl_scanner_copy(fx2);
  fx_scanner_free(fx2);
  tl_scanner_free(e->scanner);
  e->scanner = g_steal_pointer(&other);
  model.norm = NULL;
  g_autofree float *plane = g_new(float, n_plane);
  g_assert_false(tl_sinogram_model_plane(ctx, s, 0, 0, sc, x, &model, plane, NULL, NULL, &error));
  g_assert_nonnull(error);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_test_add_func("/sinogram-hist/expected-plane", test_expected_plane);
  g_test_add_func("/sinogram-hist/model-plane", test_model_plane);
  g_test_add_func("/sinogram-hist/pairs-and-bins", test_pairs_and_bins);
  g_test_add_func("/sinogram-hist/events", test_events);
  return g_test_run();
}
