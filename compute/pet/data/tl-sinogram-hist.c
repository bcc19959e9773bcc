/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List mode into sinograms (tl-sinogram-hist.h). The bin of a pair inverts tl-sinogram.c's
 * mapping (STIR's ProjDataInfoCylindricalNoArcCorr):
 *   d1 = (v + floor(t / 2)) mod N,  d2 = (v - floor((t + 1) / 2) + N / 2) mod N
 * so d1 - d2 = t - N/2 (mod N) and d1 + d2 = 2 v - (t mod 2) + N/2 (mod N): t from the
 * difference, v from the sum; of the pair's two orientations one gives v < N/2, except when
 * d1 = d2 on different rings (t = -N/2): STIR's sinogram holds that pair in segment +d and in
 * -d, and the lower crystal id as detector 1 picks one of them. */
#include "tl-sinogram-hist.h"
#include <math.h>
#include <string.h>

static gint floor_half(gint t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }
static gint mod(gint a, gint n) { return ((a % n) + n) % n; }

gint tl_sinogram_segment_of(const TlSinogram *s, gint rd) {
  for (guint i = 0; i < s->n_segments; i++)
    if (s->min_ring_difference[i] <= rd && rd <= s->max_ring_difference[i]) return (gint)i;
  return -1;
}

TlSinogram *tl_sinogram_new_for_scanner(const TlScanner *sc, guint max_rd, GError **error) {
  guint N = sc->crystals_per_ring;
  if (sc->kind != TL_SCANNER_RING || N < 4 || N % 2 || N > TL_SINOGRAM_MAX_DETECTORS ||
      sc->n_rings < 1 || sc->n_rings > TL_SINOGRAM_MAX_RINGS ||
      (guint64)N * sc->n_rings != sc->n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "scanner '%s': %u crystals in %u rings of %u: sinograms need a ring scanner with "
                "an even number of crystals per ring (at most %u) and at most %u rings",
                sc->name ? sc->name : "", sc->n_crystals, sc->n_rings, N,
                TL_SINOGRAM_MAX_DETECTORS, TL_SINOGRAM_MAX_RINGS);
    return NULL;
  }
  guint m = MIN(max_rd, MIN(sc->max_ring_difference, sc->n_rings - 1));
  guint64 bins = 0;
  for (gint rd = -(gint)m; rd <= (gint)m; rd++)
    bins += (guint64)(sc->n_rings - ABS(rd)) * (N / 2) * N;
  if (bins > TL_SINOGRAM_MAX_BINS) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "scanner '%s': %" G_GUINT64_FORMAT " sinogram bins for ring differences up to %u "
                "(at most %" G_GUINT64_FORMAT "): ask for a smaller ring difference",
                sc->name ? sc->name : "", bins, m, TL_SINOGRAM_MAX_BINS);
    return NULL;
  }
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->name = g_strdup(sc->name ? sc->name : "tomolab");
  s->n_segments = 2 * m + 1;
  s->n_axial = g_new(guint, s->n_segments);
  s->min_ring_difference = g_new(gint, s->n_segments);
  s->max_ring_difference = g_new(gint, s->n_segments);
  for (guint i = 0; i < s->n_segments; i++) {
    gint rd = i == 0 ? 0 : (i % 2 ? -(gint)((i + 1) / 2) : (gint)(i / 2)); /* 0, -1, +1, ... */
    s->min_ring_difference[i] = s->max_ring_difference[i] = rd;
    s->n_axial[i] = sc->n_rings - (guint)ABS(rd);
  }
  s->n_views = N / 2;
  s->n_tangential = N;
  s->n_rings = sc->n_rings;
  s->n_detectors = N;
  /* the circle through ring 0's crystal centres; the ring spacing from the first two rings */
  const TlCrystal *c0 = &sc->crystals[0];
  s->inner_radius_mm = hypot(c0->centre[0], c0->centre[1]);
  s->ring_spacing_mm = sc->n_rings > 1 ? fabs(sc->crystals[N].centre[2] - c0->centre[2]) : 1.0;
  s->bin_size_mm = G_PI * s->inner_radius_mm / N;
  s->view_offset_deg = 0;
  s->n_bins = bins;
  s->data = g_new0(float, bins);
  return s;
}

gboolean tl_sinogram_bin_of_pair(const TlSinogram *s, guint a, guint b, guint64 *bin) {
  gint N = (gint)s->n_detectors;
  if (a == b || a >= s->n_rings * (guint)N || b >= s->n_rings * (guint)N) return FALSE;
  if ((N / 2) / (gint)s->n_views != 1) return FALSE; /* view mashing: not one bin per pair */
  /* the lower id first: a pair whose two detectors have the same index on different rings
   * (t = -N/2) lies in both segments +d and -d, and either order must give the same bin */
  guint lo = MIN(a, b), hi = MAX(a, b);
  for (int o = 0; o < 2; o++) {
    guint c1 = o ? hi : lo, c2 = o ? lo : hi;
    gint d1 = (gint)(c1 % (guint)N), d2 = (gint)(c2 % (guint)N);
    gint r1 = (gint)(c1 / (guint)N), r2 = (gint)(c2 / (guint)N);
    /* t in [-n_t/2, n_t - 1 - n_t/2] with t = d1 - d2 + N/2 (mod N) */
    gint t0 = -(gint)(s->n_tangential / 2);
    gint t = t0 + mod(d1 - d2 + N / 2 - t0, N);
    if (t > (gint)s->n_tangential - 1 + t0) continue;
    gint v = mod(d1 - floor_half(t), N);
    if (v >= N / 2 || mod(v - floor_half(t + 1) + N / 2, N) != d2) continue;
    gint seg = tl_sinogram_segment_of(s, r2 - r1);
    if (seg < 0) return FALSE;
    if (s->min_ring_difference[seg] != s->max_ring_difference[seg]) return FALSE; /* span > 1 */
    /* span 1: one axial position per ring pair, from the lower ring sum of the segment */
    gint rd = r2 - r1, ax = rd >= 0 ? r1 : r2;
    if (ax < 0 || ax >= (gint)s->n_axial[seg]) return FALSE;
    *bin = tl_sinogram_segment_offset(s, (guint)seg) +
           ((guint64)v * s->n_axial[seg] + (guint64)ax) * s->n_tangential + (guint64)(t - t0);
    return TRUE;
  }
  return FALSE;
}

gboolean tl_sinogram_add_events(TlSinogram *s, const TlListmode *lm, guint64 *outside,
                                GError **error) {
  guint64 out = 0, n_crystals = (guint64)s->n_rings * s->n_detectors;
  if (lm->scanner->n_crystals != n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "list mode of scanner '%s' (%u crystals) into a sinogram of %u rings x %u "
                "detectors", lm->scanner->name ? lm->scanner->name : "", lm->scanner->n_crystals,
                s->n_rings, s->n_detectors);
    return FALSE;
  }
  for (guint64 i = 0; i < lm->n_events; i++) {
    guint64 bin;
    if (tl_sinogram_bin_of_pair(s, lm->events[i].a, lm->events[i].b, &bin))
      s->data[bin] += 1.0f;
    else
      out++;
  }
  if (outside) *outside = out;
  return TRUE;
}

