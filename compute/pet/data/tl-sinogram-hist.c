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

/* Segment i's ring differences for `span` up to max_rd: span 1 one per ring difference, else
 * segment 0 the |rd| <= (span - 1) / 2 and each next one span more (Siemens' span 11: -5..5,
 * 6..16, ... 50..60), the last cut at max_rd. Returns the number of segments on each side. */
static guint segment_count(guint span, guint max_rd) {
  guint half = (span - 1) / 2;
  return max_rd <= half ? 0 : (max_rd - half + span - 1) / span;
}

TlSinogram *tl_sinogram_new_stir(const TlScanner *sc, guint span, guint max_rd, GError **error) {
  const TlCylinder *model = tl_cylinder_of_scanner(sc);
  guint N = model ? model->positions : sc->crystals_per_ring;
  if (!model && (sc->kind != TL_SCANNER_RING || N < 4 || N % 2 || N > TL_SINOGRAM_MAX_DETECTORS ||
                 sc->n_rings < 1 || sc->n_rings > TL_SINOGRAM_MAX_RINGS ||
                 (guint64)N * sc->n_rings != sc->n_crystals)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "scanner '%s': %u crystals in %u rings of %u: sinograms need a ring scanner with "
                "an even number of crystals per ring (at most %u) and at most %u rings",
                sc->name ? sc->name : "", sc->n_crystals, sc->n_rings, N,
                TL_SINOGRAM_MAX_DETECTORS, TL_SINOGRAM_MAX_RINGS);
    return NULL;
  }
  if (span < 1 || span % 2 == 0 || span > 2 * sc->n_rings - 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scanner '%s': span %u (expected an odd "
                "number from 1 to 2 x %u rings - 1; Siemens' mMR sinograms use 11)",
                sc->name ? sc->name : "", span, sc->n_rings);
    return NULL;
  }
  guint m = MIN(max_rd, MIN(sc->max_ring_difference, sc->n_rings - 1));
  guint nt = model ? model->tangential : N, side = segment_count(span, m), half = (span - 1) / 2;
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->n_rings = sc->n_rings;
  s->n_detectors = N;
  s->n_views = N / 2;
  s->n_tangential = nt;
  s->n_segments = 2 * side + 1;
  s->n_axial = g_new(guint, s->n_segments);
  s->min_ring_difference = g_new(gint, s->n_segments);
  s->max_ring_difference = g_new(gint, s->n_segments);
  guint64 bins = 0;
  for (guint i = 0; i < s->n_segments; i++) {
    gint k = (gint)i - (gint)side; /* segment number: STIR's order -side..side */
    gint lo = k == 0 ? -(gint)MIN(half, m) : (gint)(half + (ABS(k) - 1) * span + 1);
    gint hi = k == 0 ? (gint)MIN(half, m) : (gint)MIN(half + ABS(k) * span, m);
    if (k < 0) {
      gint t = lo;
      lo = -hi;
      hi = -t;
    }
    s->min_ring_difference[i] = lo;
    s->max_ring_difference[i] = hi;
    guint minabs = lo <= 0 && hi >= 0 ? 0 : (guint)MIN(ABS(lo), ABS(hi));
    s->n_axial[i] = (2 * (sc->n_rings - 1) - 2 * minabs) / (lo == hi ? 2 : 1) + 1;
    bins += (guint64)s->n_axial[i] * s->n_views * nt;
  }
  if (bins > TL_SINOGRAM_MAX_BINS) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "scanner '%s': %" G_GUINT64_FORMAT " sinogram bins for ring differences up to %u "
                "in span %u (at most %" G_GUINT64_FORMAT "): ask for a larger span or a smaller "
                "ring difference", sc->name ? sc->name : "", bins, m, span, TL_SINOGRAM_MAX_BINS);
    tl_sinogram_free(s);
    return NULL;
  }
  if (model) {
    /* the scanner's own sinogram as STIR describes it: its name, gaps, DOI, bin size */
    s->name = g_strdup(model->stir_name);
    s->block_positions = model->block_positions;
    s->inner_radius_mm = model->inner_radius_mm;
    s->doi_mm = model->doi_mm;
    s->ring_spacing_mm = model->ring_spacing_mm;
    s->bin_size_mm = model->bin_size_mm;
    s->view_offset_deg = model->view_offset_deg;
  } else {
    /* the circle through ring 0's crystal centres; the ring spacing from the first two rings */
    const TlCrystal *c0 = &sc->crystals[0];
    s->name = g_strdup(sc->name ? sc->name : "tomolab");
    s->inner_radius_mm = hypot(c0->centre[0], c0->centre[1]);
    s->ring_spacing_mm = sc->n_rings > 1 ? fabs(sc->crystals[N].centre[2] - c0->centre[2]) : 1.0;
    s->bin_size_mm = G_PI * s->inner_radius_mm / N;
  }
  s->n_bins = bins;
  s->data = g_try_new0(float, MAX(bins, 1));
  if (!s->data) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "scanner '%s': %.1f MB of sinogram "
                "could not be allocated", sc->name ? sc->name : "", bins * 4e-6);
    tl_sinogram_free(s);
    return NULL;
  }
  return s;
}

gboolean tl_sinogram_bin_of_pair(const TlSinogram *s, guint a, guint b, guint64 *bin) {
  TlCylinder cyl;
  tl_sinogram_cylinder(s, &cyl);
  return tl_sinogram_bin_of_pair_in(s, &cyl, a, b, bin);
}

gboolean tl_sinogram_bin_of_pair_in(const TlSinogram *s, const TlCylinder *cyl, guint a, guint b,
                                    guint64 *bin) {
  gint N = (gint)s->n_detectors;
  if (a == b) return FALSE;
  if ((N / 2) / (gint)s->n_views != 1) return FALSE; /* view mashing: not one bin per pair */
  /* the lower id first: a pair whose two detectors have the same index on different rings
   * (t = -N/2) lies in both segments +d and -d, and either order must give the same bin */
  guint lo = MIN(a, b), hi = MAX(a, b);
  for (int o = 0; o < 2; o++) {
    guint c1 = o ? hi : lo, c2 = o ? lo : hi, p1, p2, q1, q2;
    if (!tl_cylinder_position(cyl, c1, &q1, &p1) || !tl_cylinder_position(cyl, c2, &q2, &p2))
      return FALSE;
    gint d1 = (gint)p1, d2 = (gint)p2, r1 = (gint)q1, r2 = (gint)q2;
    /* t in [-n_t/2, n_t - 1 - n_t/2] with t = d1 - d2 + N/2 (mod N) */
    gint t0 = -(gint)(s->n_tangential / 2);
    gint t = t0 + mod(d1 - d2 + N / 2 - t0, N);
    if (t > (gint)s->n_tangential - 1 + t0) continue;
    gint v = mod(d1 - floor_half(t), N);
    if (v >= N / 2 || mod(v - floor_half(t + 1) + N / 2, N) != d2) continue;
    gint rd = r2 - r1, seg = tl_sinogram_segment_of(s, rd);
    if (seg < 0) return FALSE;
    /* the axial position from the segment's lowest ring sum: one per ring (span 1), one per
     * half ring (span > 1; tl-sinogram.h) */
    gint slo = s->min_ring_difference[seg], shi = s->max_ring_difference[seg];
    gint minabs = slo <= 0 && shi >= 0 ? 0 : MIN(ABS(slo), ABS(shi));
    gint ax = (r1 + r2 - minabs) / (slo == shi ? 2 : 1);
    if (ax < 0 || ax >= (gint)s->n_axial[seg]) return FALSE;
    *bin = tl_sinogram_segment_offset(s, (guint)seg) +
           ((guint64)v * s->n_axial[seg] + (guint64)ax) * s->n_tangential + (guint64)(t - t0);
    return TRUE;
  }
  return FALSE;
}

gboolean tl_sinogram_add_events(TlSinogram *s, const TlListmode *lm, guint64 *outside,
                                GError **error) {
  TlCylinder cyl;
  tl_sinogram_cylinder(s, &cyl);
  guint64 out = 0, n_crystals = (guint64)s->n_rings * tl_cylinder_crystals_per_ring(&cyl);
  if (lm->scanner->n_crystals != n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "list mode of scanner '%s' (%u crystals) into a sinogram of %u rings x %u "
                "detectors", lm->scanner->name ? lm->scanner->name : "", lm->scanner->n_crystals,
                s->n_rings, s->n_detectors);
    return FALSE;
  }
  for (guint64 i = 0; i < lm->n_events; i++) {
    guint64 bin;
    if (tl_sinogram_bin_of_pair_in(s, &cyl, lm->events[i].a, lm->events[i].b, &bin))
      s->data[bin] += 1.0f;
    else
      out++;
  }
  if (outside) *outside = out;
  return TRUE;
}

