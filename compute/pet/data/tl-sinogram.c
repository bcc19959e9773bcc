/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSinogram geometry, its crystal pairs and forward projections (tl-sinogram.h). */
#include "tl-sinogram.h"
#include <math.h>
#include <string.h>

void tl_sinogram_free(TlSinogram *s) {
  if (!s) return;
  g_free(s->name);
  g_free(s->n_axial);
  g_free(s->min_ring_difference);
  g_free(s->max_ring_difference);
  g_free(s->data);
  g_free(s);
}

TlSinogram *tl_sinogram_copy(const TlSinogram *s, gboolean copy_data) {
  TlSinogram *c = g_memdup2(s, sizeof *s);
  c->name = g_strdup(s->name);
  c->n_axial = g_memdup2(s->n_axial, sizeof(guint) * s->n_segments);
  c->min_ring_difference = g_memdup2(s->min_ring_difference, sizeof(gint) * s->n_segments);
  c->max_ring_difference = g_memdup2(s->max_ring_difference, sizeof(gint) * s->n_segments);
  c->data = copy_data ? g_memdup2(s->data, sizeof(float) * s->n_bins)
                      : g_new0(float, MAX(s->n_bins, 1));
  return c;
}

guint64 tl_sinogram_segment_offset(const TlSinogram *s, guint seg) {
  guint64 off = 0;
  for (guint i = 0; i < seg; i++) off += (guint64)s->n_axial[i] * s->n_views * s->n_tangential;
  return off;
}

static guint min_abs_rd(const TlSinogram *s, guint seg) {
  gint lo = s->min_ring_difference[seg], hi = s->max_ring_difference[seg];
  if (lo <= 0 && hi >= 0) return 0;
  return (guint)MIN(ABS(lo), ABS(hi));
}

/* axial positions of a segment: ring sums from min|rd| to 2 (n - 1) - min|rd|, one position
 * per ring (step 2) when lo == hi, per half ring (step 1) otherwise */
static guint expected_axial(const TlSinogram *s, guint seg) {
  guint m = min_abs_rd(s, seg), k = s->min_ring_difference[seg] == s->max_ring_difference[seg] ? 2 : 1;
  return (2 * (s->n_rings - 1) - 2 * m) / k + 1;
}

static gboolean bad(GError **error, const char *source, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean bad(GError **error, const char *source, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data '%s': %s", source, msg);
  return FALSE;
}

gboolean tl_sinogram_validate(const TlSinogram *s, const char *source, GError **error) {
  if (s->n_rings < 1 || s->n_rings > TL_SINOGRAM_MAX_RINGS)
    return bad(error, source, "'number of rings' %u (expected 1 to %u)", s->n_rings,
               TL_SINOGRAM_MAX_RINGS);
  if (s->n_detectors < 4 || s->n_detectors % 2 || s->n_detectors > TL_SINOGRAM_MAX_DETECTORS)
    return bad(error, source, "'number of detectors per ring' %u (expected an even number from 4 "
               "to %u)", s->n_detectors, TL_SINOGRAM_MAX_DETECTORS);
  if (s->n_segments < 1 || s->n_segments > TL_SINOGRAM_MAX_SEGMENTS)
    return bad(error, source, "%u segments ('matrix size' of the segment axis; expected 1 to %u)", s->n_segments,
               TL_SINOGRAM_MAX_SEGMENTS);
  if (s->n_views < 1 || (s->n_detectors / 2) % s->n_views)
    return bad(error, source, "%u views ('matrix size' of the view axis; expected a divisor of "
               "detectors per ring / 2 = %u: view mashing by a whole factor)", s->n_views, s->n_detectors / 2);
  if (s->n_tangential < 1 || s->n_tangential > s->n_detectors)
    return bad(error, source, "%u tangential positions ('matrix size' of the tangential axis; "
               "expected 1 to the %u detectors per ring)",
               s->n_tangential, s->n_detectors);
  if (!(s->inner_radius_mm > 0) || !isfinite(s->inner_radius_mm) || !(s->doi_mm >= 0) ||
      !isfinite(s->doi_mm) || !(s->ring_spacing_mm > 0) || !isfinite(s->ring_spacing_mm) ||
      !isfinite(s->view_offset_deg) || !(s->bin_size_mm >= 0) || !isfinite(s->bin_size_mm))
    return bad(error, source, "scanner radius %g mm, depth of interaction %g mm, ring spacing %g "
               "mm, bin size %g mm, view offset %g degrees (expected positive radius and "
               "spacing, the others finite and >= 0)", s->inner_radius_mm, s->doi_mm,
               s->ring_spacing_mm, s->bin_size_mm, s->view_offset_deg);
  if (s->block_positions && (s->block_positions < 2 || s->n_detectors % s->block_positions))
    return bad(error, source, "blocks of %u detector positions with a gap each (expected at least "
               "2 dividing the %u detectors per ring)", s->block_positions, s->n_detectors);
  if (s->arc_corrected && !(s->bin_size_mm > 0))
    return bad(error, source, "arc-corrected data without 'default bin size (cm)' (expected the "
               "tangential sampling)");
  guint64 total = 0;
  gboolean *seen = g_new0(gboolean, 2 * s->n_rings);
  for (guint i = 0; i < s->n_segments; i++) {
    gint lo = s->min_ring_difference[i], hi = s->max_ring_difference[i];
    if (lo > hi || lo <= -(gint)s->n_rings || hi >= (gint)s->n_rings) {
      g_free(seen);
      return bad(error, source, "segment %u (file order): ring differences %d to %d ('minimum/maximum "
                 "ring difference per segment'; expected min <= max within +-(%u - 1) rings)", i, lo, hi, s->n_rings);
    }
    for (gint d = lo; d <= hi; d++) {
      if (seen[d + (gint)s->n_rings]) {
        g_free(seen);
        return bad(error, source, "ring difference %d is in two segments (segment %u repeats "
                   "it)", d, i);
      }
      seen[d + (gint)s->n_rings] = TRUE;
    }
    guint e = expected_axial(s, i);
    if (s->n_axial[i] != e) {
      g_free(seen);
      return bad(error, source, "segment %u (ring differences %d to %d): %u axial positions "
                 "('matrix size' of the axial axis; expected %u for %u rings)", i, lo, hi, s->n_axial[i], e, s->n_rings);
    }
    total += (guint64)s->n_axial[i] * s->n_views * s->n_tangential;
  }
  g_free(seen);
  if (total != s->n_bins || total > TL_SINOGRAM_MAX_BINS)
    return bad(error, source, "%" G_GUINT64_FORMAT " bins from the geometry, %" G_GUINT64_FORMAT
               " held (expected equal, at most %" G_GUINT64_FORMAT ")", total, s->n_bins,
               TL_SINOGRAM_MAX_BINS);
  return TRUE;
}

void tl_sinogram_cylinder(const TlSinogram *s, TlCylinder *c) {
  const TlCylinder *k = tl_cylinder_find(s->name, s->n_rings, s->n_detectors);
  /* the known scanner only when every geometric field agrees (a header may override one) */
  if (k && k->block_positions == s->block_positions &&
      fabs(k->inner_radius_mm - s->inner_radius_mm) < 1e-3 && fabs(k->doi_mm - s->doi_mm) < 1e-3 &&
      fabs(k->ring_spacing_mm - s->ring_spacing_mm) < 1e-3 &&
      fabs(k->view_offset_deg - s->view_offset_deg) < 1e-6) {
    *c = *k;
    return;
  }
  double R = s->inner_radius_mm + s->doi_mm;
  *c = (TlCylinder){
      .stir_name = s->name, .rings = s->n_rings, .positions = s->n_detectors,
      .block_positions = s->block_positions, .inner_radius_mm = s->inner_radius_mm,
      .doi_mm = s->doi_mm, .ring_spacing_mm = s->ring_spacing_mm, .bin_size_mm = s->bin_size_mm,
      .view_offset_deg = s->view_offset_deg, .views = s->n_detectors / 2,
      .tangential = s->n_tangential, .max_ring_difference = s->n_rings - 1,
      .crystal_size = {(float)(2 * G_PI * R / s->n_detectors), (float)s->ring_spacing_mm,
                       (float)(s->doi_mm > 0 ? 2 * s->doi_mm : 10.0)}};
}

TlScanner *tl_sinogram_scanner(const TlSinogram *s, GError **error) {
  guint maxrd = 0;
  for (guint i = 0; i < s->n_segments; i++)
    maxrd = MAX(maxrd, (guint)MAX(ABS(s->min_ring_difference[i]), ABS(s->max_ring_difference[i])));
  TlCylinder c;
  tl_sinogram_cylinder(s, &c);
  g_autofree char *name =
      g_strdup_printf("STIR %s", s->name && *s->name ? s->name : "cylindrical scanner");
  return tl_cylinder_scanner_new(&c, name, maxrd, error);
}

/* floor division by 2 for negative t too (STIR's t >> 1) */
static gint half_floor(gint t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }

/* Calls visit for each crystal pair (a, b; a of detector 1) of bin (seg, view, ax, t). */
typedef void (*PairVisit)(guint a, guint b, guint n_pairs, gpointer data);

static guint bin_pairs(const TlSinogram *s, const TlCylinder *cyl, guint seg, guint view,
                       guint ax, gint t, PairVisit visit, gpointer data) {
  guint N = s->n_detectors, mash = (N / 2) / s->n_views;
  gint lo = s->min_ring_difference[seg], hi = s->max_ring_difference[seg];
  guint k = lo == hi ? 2 : 1;
  gint sum = (gint)(min_abs_rd(s, seg) + ax * k);
  /* count first, then visit with the count (the value is split evenly) */
  guint count = 0;
  for (int pass = 0; pass < 2; pass++)
    for (guint u = view * mash; u < (view + 1) * mash; u++) {
      guint d1 = (guint)(((gint)u + half_floor(t) + 2 * (gint)N) % (gint)N);
      guint d2 = (guint)(((gint)u - half_floor(t + 1) + (gint)N / 2 + 2 * (gint)N) % (gint)N);
      for (gint rd = lo; rd <= hi; rd++) {
        if ((sum - rd) % 2) continue;
        gint r1 = (sum - rd) / 2, r2 = r1 + rd;
        if (r1 < 0 || r2 < 0 || r1 >= (gint)s->n_rings || r2 >= (gint)s->n_rings) continue;
        guint32 a = tl_cylinder_crystal(cyl, (guint)r1, d1), b = tl_cylinder_crystal(cyl, (guint)r2, d2);
        if (a == G_MAXUINT32 || b == G_MAXUINT32) continue; /* a block gap: no crystal */
        if (pass == 0) count++;
        else visit(a, b, count, data);
      }
    }
  return count;
}

typedef struct {
  GArray *bins;
  float value;
} PairsCtx;

static void add_pair(guint a, guint b, guint n_pairs, gpointer data) {
  PairsCtx *c = data;
  TlBin bin = {MIN(a, b), MAX(a, b), c->value / (float)n_pairs};
  g_array_append_val(c->bins, bin);
}

/* Ring pairs (r1, r2) with r2 - r1 in [lo, hi]. */
static guint64 ring_pairs(const TlSinogram *s, guint seg) {
  guint64 n = 0;
  for (gint rd = s->min_ring_difference[seg]; rd <= s->max_ring_difference[seg]; rd++)
    n += (guint64)MAX((gint)s->n_rings - ABS(rd), 0);
  return n;
}

/* The pairs that would be expanded, bounded: every bin's (keep_zero) or the non-zero bins' only,
 * each bin counted with its segment's ring pairs per axial position at most (issue 26: the
 * bound once counted every ring for every axial position, refusing the mMR's 0.6 s of data as
 * "up to 777125888 crystal pairs"). */
static gboolean check_pairs(const TlSinogram *s, gboolean keep_zero, GError **error) {
  if (s->arc_corrected) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "STIR projection data of %s: arc-corrected bins are not crystal pairs (they "
                "are lines: pet/data/tl-sinogram-arc.h, reconstructed by tl_recon_new_arc); "
                "expected non-arc-corrected data here",
                s->name ? s->name : "(unnamed)");
    return FALSE;
  }
  guint64 pairs = 0, mash = (s->n_detectors / 2) / s->n_views;
  const float *v = s->data;
  for (guint i = 0; i < s->n_segments; i++) {
    guint64 seg_bins = (guint64)s->n_views * s->n_axial[i] * s->n_tangential, used = seg_bins;
    if (!keep_zero) {
      used = 0;
      for (guint64 j = 0; j < seg_bins; j++) used += v[j] != 0;
    }
    v += seg_bins;
    /* pairs per bin: the views mashed times the ring pairs of one axial position */
    guint64 per_bin = mash * ((ring_pairs(s, i) + s->n_axial[i] - 1) / s->n_axial[i]);
    pairs += used * per_bin;
  }
  if (pairs > TL_SINOGRAM_MAX_BINS / 4) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "STIR projection data of %s: up to %" G_GUINT64_FORMAT " crystal pairs in %s bins "
                "(at most %" G_GUINT64_FORMAT " are expanded)", s->name ? s->name : "(unnamed)",
                pairs, keep_zero ? "all" : "the non-zero", TL_SINOGRAM_MAX_BINS / 4);
    return FALSE;
  }
  return TRUE;
}

GArray *tl_sinogram_to_bins(const TlSinogram *s, gboolean keep_zero, GError **error) {
  if (!check_pairs(s, keep_zero, error)) return NULL;
  TlCylinder cyl;
  tl_sinogram_cylinder(s, &cyl);
  PairsCtx c = {g_array_new(FALSE, FALSE, sizeof(TlBin)), 0};
  const float *v = s->data;
  gint t0 = -(gint)(s->n_tangential / 2);
  for (guint seg = 0; seg < s->n_segments; seg++)
    for (guint view = 0; view < s->n_views; view++)
      for (guint ax = 0; ax < s->n_axial[seg]; ax++)
        for (guint t = 0; t < s->n_tangential; t++, v++) {
          if (!(*v >= 0) || !isfinite(*v)) {
            g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "STIR projection data of %s: segment "
                        "%u view %u axial %u tangential %d holds %g (expected counts: finite, "
                        ">= 0)", s->name ? s->name : "(unnamed)", seg, view, ax, t0 + (gint)t, *v);
            g_array_free(c.bins, TRUE);
            return NULL;
          }
          if (*v == 0 && !keep_zero) continue;
          c.value = *v;
          bin_pairs(s, &cyl, seg, view, ax, t0 + (gint)t, add_pair, &c);
        }
  return c.bins;
}

typedef struct {
  const float *values;
  guint64 next, len;
  double sum;
} SumCtx;

static void sum_pair(guint a, guint b, guint n_pairs, gpointer data) {
  SumCtx *c = data;
  if (c->next < c->len) c->sum += c->values[c->next];
  c->next++;
}

gboolean tl_sinogram_set_from_pairs(TlSinogram *s, const GArray *pairs, const float *values,
                                    GError **error) {
  if (!check_pairs(s, TRUE, error)) return FALSE;
  TlCylinder cyl;
  tl_sinogram_cylinder(s, &cyl);
  SumCtx c = {values, 0, pairs->len, 0};
  float *v = s->data;
  gint t0 = -(gint)(s->n_tangential / 2);
  for (guint seg = 0; seg < s->n_segments; seg++)
    for (guint view = 0; view < s->n_views; view++)
      for (guint ax = 0; ax < s->n_axial[seg]; ax++)
        for (guint t = 0; t < s->n_tangential; t++, v++) {
          c.sum = 0;
          bin_pairs(s, &cyl, seg, view, ax, t0 + (gint)t, sum_pair, &c);
          *v = (float)c.sum;
        }
  if (c.next != pairs->len) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u pairs given, the geometry has %"
                G_GUINT64_FORMAT " (expected those of tl_sinogram_to_bins with keep_zero)",
                pairs->len, c.next);
    return FALSE;
  }
  return TRUE;
}

/* Every geometric field of STIR's header, one per line under STIR's names, in STIR's units
 * beside Tomolab's mm (issue 26 item 6: a STIR user compares them field by field). */
static void describe_stir_fields(const TlSinogram *s, GString *out) {
  guint N = MAX(s->n_detectors, 1), mash = (s->n_detectors / 2) / MAX(s->n_views, 1);
  double R = s->inner_radius_mm + s->doi_mm;
  /* the tangential sampling at the centre: arc-corrected, the bin size itself; not
   * arc-corrected, the effective radius times the angle between neighbouring bins, pi / N
   * (STIR's ProjDataInfoCylindricalNoArcCorr: ring radius x angular increment) */
  double bin = s->arc_corrected ? s->bin_size_mm : R * G_PI / N;
  gint lo0 = 0, hi0 = 0, maxrd = 0, width = 1;
  for (guint i = 0; i < s->n_segments; i++) {
    gint lo = s->min_ring_difference[i], hi = s->max_ring_difference[i];
    maxrd = MAX(maxrd, MAX(ABS(lo), ABS(hi)));
    width = MAX(width, hi - lo + 1);
    if (lo <= 0 && hi >= 0) lo0 = lo, hi0 = hi;
  }
  /* STIR's span: the ring differences of segment 0 (the others' widths as given) */
  gint span = s->n_segments && lo0 <= 0 && hi0 >= 0 ? hi0 - lo0 + 1 : width;
  gint t0 = -(gint)(s->n_tangential / 2);
  g_string_append_printf(out, "scanner name (originating system): %s\n",
                         s->name && *s->name ? s->name : "(unnamed)");
  g_string_append_printf(out, "number of detectors per ring: %u\n", s->n_detectors);
  g_string_append_printf(out, "number of rings: %u\n", s->n_rings);
  g_string_append_printf(out, "inner ring radius: %.6g mm (inner ring diameter %.6g cm)\n",
                         s->inner_radius_mm, 2 * s->inner_radius_mm / 10);
  g_string_append_printf(out, "average depth of interaction: %.6g mm (%.6g cm)\n", s->doi_mm,
                         s->doi_mm / 10);
  g_string_append_printf(out, "ring spacing: %.6g mm (distance between rings %.6g cm)\n",
                         s->ring_spacing_mm, s->ring_spacing_mm / 10);
  g_string_append_printf(out, "bin size: %.6g mm (tangential sampling at the centre, %s)\n", bin,
                         s->arc_corrected ? "arc-corrected" : "effective radius x pi / detectors");
  g_string_append_printf(out, "arc-corrected bin size: %.6g mm (default bin size %.6g cm)%s\n",
                         s->bin_size_mm, s->bin_size_mm / 10,
                         s->bin_size_mm > 0 ? "" : " (not given)");
  g_string_append_printf(out, "view offset: %.6g degrees\n", s->view_offset_deg);
  g_string_append_printf(out, "number of views: %u (view mashing %u)\n", s->n_views, mash);
  g_string_append_printf(out, "number of tangential positions: %u (%d to %d)\n", s->n_tangential,
                         t0, t0 + (gint)s->n_tangential - 1);
  g_string_append_printf(out, "number of segments: %u\n", s->n_segments);
  for (guint i = 0; i < s->n_segments; i++)
    g_string_append_printf(out, "segment %u: ring differences %d to %d, %u axial positions\n", i,
                           s->min_ring_difference[i], s->max_ring_difference[i], s->n_axial[i]);
  g_string_append_printf(out, "span: %d\n", span);
  g_string_append_printf(out, "maximum ring difference: %d\n", maxrd);
  if (s->tof_mash) g_string_append_printf(out, "TOF mashing factor: %u\n", s->tof_mash);
}

void tl_sinogram_describe(const TlSinogram *s, GString *out) {
  g_string_append_printf(out, "modality: PET\nscanner: %s, %u rings of %u detectors, radius %g "
                         "mm + %g mm depth of interaction, rings %g mm apart\n",
                         s->name && *s->name ? s->name : "(unnamed)", s->n_rings, s->n_detectors,
                         s->inner_radius_mm, s->doi_mm, s->ring_spacing_mm);
  g_string_append_printf(out, "sinogram: %u segments, %u views (mashing %u), %u tangential "
                         "positions, %s\n", s->n_segments, s->n_views,
                         (s->n_detectors / 2) / MAX(s->n_views, 1), s->n_tangential,
                         s->arc_corrected ? "arc-corrected" : "not arc-corrected");
  if (s->block_positions)
    g_string_append_printf(out, "block gaps: blocks of %u detector positions, the first a gap "
                           "(%u crystals per ring)\n", s->block_positions,
                           s->n_detectors - s->n_detectors / s->block_positions);
  /* every geometric field of STIR's header, so a STIR user can compare (issue 26) */
  g_string_append_printf(out, "geometry: inner ring radius %g mm, average depth of interaction %g "
                         "mm (effective radius %g mm), ring spacing %g mm, default bin size %g mm%s, "
                         "view offset %g degrees\n", s->inner_radius_mm, s->doi_mm,
                         s->inner_radius_mm + s->doi_mm, s->ring_spacing_mm, s->bin_size_mm,
                         s->bin_size_mm > 0 ? "" : " (not given)", s->view_offset_deg);
  g_string_append(out, "segments (ring differences: axial positions):");
  for (guint i = 0; i < s->n_segments; i++)
    g_string_append_printf(out, "%s %d..%d: %u", i ? "," : "", s->min_ring_difference[i],
                           s->max_ring_difference[i], s->n_axial[i]);
  g_string_append_c(out, '\n');
  describe_stir_fields(s, out);
  double sum = 0, mn = G_MAXDOUBLE, mx = -G_MAXDOUBLE;
  for (guint64 i = 0; i < s->n_bins; i++)
    sum += s->data[i], mn = MIN(mn, s->data[i]), mx = MAX(mx, s->data[i]);
  g_string_append_printf(out, "bins: %" G_GUINT64_FORMAT ", min %g, max %g, sum %g\n",
                         s->n_bins, s->n_bins ? mn : 0, s->n_bins ? mx : 0, sum);
}
