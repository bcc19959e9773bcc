/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlScanner: presets, crystal tables built from a regular layout, the pair rule, cache keys.
 * The text description (load/save) is in tl-scanner-text.c. */
#include "tl-scanner.h"
#include "tl-cylinder.h"
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Speed of light in mm/ps; a time difference dt moves the TOF position by c*dt/2. */
#define TL_C_MM_PER_PS 0.299792458

typedef struct {
  const char *name;
  TlScannerLayout layout;
  float crystal_size[3];
  guint tof_bins;
  float tof_bin_mm, tof_fwhm_ps;
  float energy_window_kev[2], energy_resolution;
} Preset;

static const Preset presets[] = {
    /* PET-DMI of reference-cases.md (GE Discovery MI-like, after parallelproj's benchmark):
     * 36 rings of 34 sides x 16 crystals, 4.03125 mm along a side, inner radius 380.56 mm,
     * ring i at z = 5.31556 i + 2.8 floor(i/9) mm. The crystal faces tile a side and the
     * rings of a 9-ring module; the 2.8 mm module gaps are dead. TOF: 29 bins of 25.37 mm
     * (13 x 13.02 ps), 385 ps FWHM. Energy: window 425-650 keV, resolution 9.4 % FWHM at
     * 511 keV (Hsu et al. 2017, J Nucl Med 58:1511, the Discovery MI's NEMA NU 2 evaluation). */
    {"dmi",
     {.kind = TL_SCANNER_RING, .n_rings = 36, .n_sides = 34, .crystals_per_side = 16,
      .module_rings = 9, .radius_mm = 380.56, .crystal_pitch_mm = 4.03125,
      .ring_pitch_mm = 5.31556, .module_gap_mm = 2.8},
     {4.03125f, 5.31556f, 25.0f}, 29, 25.37f, 385.0f, {425.0f, 650.0f}, 0.094f},
    /* A small-animal ring (Siemens Inveon-like): 80 rings of 1.59 mm, 16 blocks of 20
     * crystals of 1.59 mm pitch per ring (320 per ring), 161 mm ring diameter, 127 mm axial
     * field of view, 10 mm deep crystals, no TOF. Energy: window 350-625 keV, resolution
     * 14.6 % at 511 keV (Bao et al. 2009, J Nucl Med 50:401, the Inveon's NEMA NU 4
     * evaluation: "14.6% on average for the entire system", peak NECR at 350-625 keV). */
    {"small-animal",
     {.kind = TL_SCANNER_RING, .n_rings = 80, .n_sides = 16, .crystals_per_side = 20,
      .radius_mm = 80.5, .crystal_pitch_mm = 1.59, .ring_pitch_mm = 1.59},
     {1.59f, 1.59f, 10.0f}, 0, 0.0f, 0.0f, {350.0f, 625.0f}, 0.146f},
    /* Chou et al. 2012 (Chou et al. 2012): "two HRRT detectors ... placed at only ~6 cm apart ...
     * a 104 x 72 array of 20 x 2.1 x 2.1 mm^3 ... crystals having a crystal thickness and a
     * pitch equal to 20 mm and 2.4 mm". 104 crystals along y (249.6 mm), 72 along z
     * (172.8 mm); the 2.4 mm pitch cell is taken as the sensitive face. Energy: the HRRT's
     * 400-650 keV window (Boellaard et al. 2003, Phys Med Biol 48:429: the best NECR of the
     * lower levels 350, 400 and 450 keV with 650 keV upper); resolution 17 %, an assumed
     * figure typical of LSO block detectors of that generation (not taken from a paper). */
    {"dual-head",
     {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {104, 72}, .head_pitch_mm = {2.4, 2.4},
      .head_distance_mm = 60.0},
     {2.4f, 2.4f, 20.0f}, 0, 0.0f, 0.0f, {400.0f, 650.0f}, 0.17f},
};

static const char *const preset_names[] = {"dmi", "small-animal", "dual-head", NULL};

const char *const *tl_scanner_preset_names(void) { return preset_names; }

static gboolean layout_check(const TlScannerLayout *l, GError **error) {
  const char *bad = NULL;
  if (l->kind == TL_SCANNER_RING) {
    if (l->n_rings < 1 || l->n_sides < 3 || l->crystals_per_side < 1)
      bad = "rings >= 1, sides >= 3 and crystals_per_side >= 1";
    else if (!(l->radius_mm > 0 && l->crystal_pitch_mm > 0 && isfinite(l->radius_mm) &&
               isfinite(l->crystal_pitch_mm)))
      bad = "a positive finite radius_mm and crystal_pitch_mm";
    else if (l->n_rings > 1 && !(l->ring_pitch_mm > 0 && isfinite(l->ring_pitch_mm)))
      bad = "a positive ring_pitch_mm";
    else if (!(l->module_gap_mm >= 0 && isfinite(l->module_gap_mm) && isfinite(l->phase_deg)))
      bad = "module_gap_mm >= 0 and a finite phase_deg";
    else if ((guint64)l->n_rings * l->n_sides * l->crystals_per_side > TL_SCANNER_MAX_CRYSTALS)
      bad = "at most 2^21 crystals (rings x sides x crystals_per_side)";
    if (bad) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "ring layout: expected %s", bad);
      return FALSE;
    }
    /* The crystals of a side must fit on it, or neighbouring sides would overlap. */
    double side = 2.0 * l->radius_mm * tan(G_PI / l->n_sides);
    double used = l->crystals_per_side * l->crystal_pitch_mm;
    if (used > side * (1 + 1e-9)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "ring layout: %u crystals of %g mm need %g mm but a side of a %u-gon of "
                  "radius %g mm is only %g mm long",
                  l->crystals_per_side, l->crystal_pitch_mm, used, l->n_sides, l->radius_mm,
                  side);
      return FALSE;
    }
    return TRUE;
  }
  if (l->kind == TL_SCANNER_DUAL_HEAD) {
    if (l->head_crystals[0] < 1 || l->head_crystals[1] < 1 ||
        2 * (guint64)l->head_crystals[0] * l->head_crystals[1] > TL_SCANNER_MAX_CRYSTALS)
      bad = "head_crystals of at least 1 x 1 and at most 2^21 crystals in both heads";
    else if (!(l->head_pitch_mm[0] > 0 && l->head_pitch_mm[1] > 0 &&
               isfinite(l->head_pitch_mm[0]) && isfinite(l->head_pitch_mm[1])))
      bad = "positive finite head_pitch_mm";
    else if (!(l->head_distance_mm > 0 && isfinite(l->head_distance_mm)))
      bad = "a positive finite head_distance_mm";
    if (bad) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "dual-head layout: expected %s", bad);
      return FALSE;
    }
    return TRUE;
  }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "layout kind %d is unknown", l->kind);
  return FALSE;
}

static void build_ring(TlScanner *s, const TlScannerLayout *l) {
  guint per_ring = l->n_sides * l->crystals_per_side;
  s->n_rings = l->n_rings;
  s->crystals_per_ring = per_ring;
  s->n_crystals = l->n_rings * per_ring;
  s->crystals = g_new0(TlCrystal, s->n_crystals);
  double *z = g_new(double, l->n_rings);
  for (guint i = 0; i < l->n_rings; i++)
    z[i] = l->ring_pitch_mm * i + (l->module_rings ? l->module_gap_mm * (i / l->module_rings) : 0);
  double zc = 0.5 * (z[0] + z[l->n_rings - 1]); /* centre the set on z = 0 */
  for (guint side = 0; side < l->n_sides; side++) {
    double phi = (l->phase_deg / 180.0 + 2.0 * side / l->n_sides) * G_PI;
    double c = cos(phi), sn = sin(phi);
    for (guint j = 0; j < l->crystals_per_side; j++) {
      /* along the side's tangent (-sin, cos): counter-clockwise order within a ring */
      double u = (j - 0.5 * (l->crystals_per_side - 1)) * l->crystal_pitch_mm;
      for (guint r = 0; r < l->n_rings; r++) {
        TlCrystal *k = &s->crystals[r * per_ring + side * l->crystals_per_side + j];
        k->centre[0] = (float)(l->radius_mm * c - u * sn);
        k->centre[1] = (float)(l->radius_mm * sn + u * c);
        k->centre[2] = (float)(z[r] - zc);
        k->normal[0] = (float)-c;
        k->normal[1] = (float)-sn;
        k->normal[2] = 0.0f;
        k->group = side;
        k->ring = r;
      }
    }
  }
  g_free(z);
}

static void build_dual_head(TlScanner *s, const TlScannerLayout *l) {
  guint nu = l->head_crystals[0], nv = l->head_crystals[1];
  s->n_rings = 1;
  s->n_crystals = 2 * nu * nv;
  s->crystals_per_ring = s->n_crystals;
  s->crystals = g_new0(TlCrystal, s->n_crystals);
  for (guint h = 0; h < 2; h++)
    for (guint v = 0; v < nv; v++)
      for (guint u = 0; u < nu; u++) {
        TlCrystal *k = &s->crystals[(h * nv + v) * nu + u];
        double side = h == 0 ? -1.0 : 1.0;
        k->centre[0] = (float)(side * 0.5 * l->head_distance_mm);
        k->centre[1] = (float)((u - 0.5 * (nu - 1)) * l->head_pitch_mm[0]);
        k->centre[2] = (float)((v - 0.5 * (nv - 1)) * l->head_pitch_mm[1]);
        k->normal[0] = (float)-side;
        k->group = h;
        k->ring = 0;
      }
}

TlScanner *tl_scanner_new_from_layout(const char *name, const TlScannerLayout *layout,
                                      const TlScanner *base, GError **error) {
  if (!layout_check(layout, error)) return NULL;
  TlScanner *s = g_new0(TlScanner, 1);
  s->name = g_strdup(name ? name : "custom");
  s->kind = layout->kind;
  s->layout = g_memdup2(layout, sizeof *layout);
  if (layout->kind == TL_SCANNER_RING)
    build_ring(s, layout);
  else
    build_dual_head(s, layout);
  if (base) {
    memcpy(s->crystal_size, base->crystal_size, sizeof s->crystal_size);
    s->max_ring_difference = MIN(base->max_ring_difference, s->n_rings - 1);
    s->tof_bins = base->tof_bins;
    s->tof_bin_mm = base->tof_bin_mm;
    s->tof_fwhm_ps = base->tof_fwhm_ps;
    memcpy(s->energy_window_kev, base->energy_window_kev, sizeof s->energy_window_kev);
    s->energy_resolution = base->energy_resolution;
  } else {
    gboolean ring = layout->kind == TL_SCANNER_RING;
    s->crystal_size[0] = (float)(ring ? layout->crystal_pitch_mm : layout->head_pitch_mm[0]);
    s->crystal_size[1] = (float)(ring ? (layout->n_rings > 1 ? layout->ring_pitch_mm
                                                             : layout->crystal_pitch_mm)
                                      : layout->head_pitch_mm[1]);
    s->crystal_size[2] = 20.0f;
    s->max_ring_difference = s->n_rings - 1;
  }
  tl_scanner_energy_fill(s);
  if (!tl_scanner_validate(s, error)) {
    tl_scanner_free(s);
    return NULL;
  }
  return s;
}

TlScanner *tl_scanner_new_preset(const char *preset, GError **error) {
  for (gsize i = 0; i < G_N_ELEMENTS(presets); i++) {
    if (g_strcmp0(preset, presets[i].name) != 0) continue;
    const Preset *p = &presets[i];
    TlScanner base = {.tof_bins = p->tof_bins, .tof_bin_mm = p->tof_bin_mm,
                      .tof_fwhm_ps = p->tof_fwhm_ps, .max_ring_difference = G_MAXUINT,
                      .energy_window_kev = {p->energy_window_kev[0], p->energy_window_kev[1]},
                      .energy_resolution = p->energy_resolution};
    memcpy(base.crystal_size, p->crystal_size, sizeof base.crystal_size);
    return tl_scanner_new_from_layout(p->name, &p->layout, &base, error);
  }
  g_autofree char *known = g_strjoinv(", ", (char **)preset_names);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown scanner preset '%s' (expected one of: %s)", preset ? preset : "(null)",
              known);
  return NULL;
}

G_GNUC_PRINTF(3, 4)
static gboolean fail(GError **error, const TlScanner *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scanner '%s': %s", s->name, m);
  return FALSE;
}

gboolean tl_scanner_validate(const TlScanner *s, GError **error) {
  if (s->n_crystals < 2 || !s->crystals)
    return fail(error, s, "%u crystals (expected at least 2)", s->n_crystals);
  if (s->n_rings < 1) return fail(error, s, "%u rings (expected at least 1)", s->n_rings);
  if (s->max_ring_difference > s->n_rings - 1)
    return fail(error, s, "max_ring_difference %u exceeds rings - 1 = %u",
                s->max_ring_difference, s->n_rings - 1);
  for (int i = 0; i < 3; i++)
    if (!(s->crystal_size[i] > 0) || !isfinite(s->crystal_size[i]))
      return fail(error, s, "crystal size %g mm (expected positive and finite)",
                  s->crystal_size[i]);
  if (s->tof_bins % 2 == 0 && s->tof_bins)
    return fail(error, s, "%u TOF bins (expected an odd number: bin 0 is the LOR midpoint)",
                s->tof_bins);
  if (s->tof_bins && (!(s->tof_bin_mm > 0) || !(s->tof_fwhm_ps > 0) ||
                      !isfinite(s->tof_bin_mm) || !isfinite(s->tof_fwhm_ps)))
    return fail(error, s, "TOF bin %g mm, FWHM %g ps (expected both positive)", s->tof_bin_mm,
                s->tof_fwhm_ps);
  const float *w = s->energy_window_kev;
  gboolean no_energy = w[0] == 0 && w[1] == 0 && s->energy_resolution == 0; /* not given */
  if (!no_energy && !(isfinite(w[0]) && isfinite(w[1]) && w[0] >= 0 && w[0] < w[1] &&
                      w[1] <= TL_SCANNER_MAX_ENERGY_KEV))
    return fail(error, s, "energy window %g-%g keV (expected 0 <= low < high <= %g)", w[0], w[1],
                TL_SCANNER_MAX_ENERGY_KEV);
  if (!(s->energy_resolution >= 0 && s->energy_resolution <= 1))
    return fail(error, s, "energy resolution %g (expected a FWHM fraction at 511 keV in [0, 1])",
                s->energy_resolution);
  gboolean ring_major = s->crystals_per_ring && (guint64)s->crystals_per_ring * s->n_rings == s->n_crystals;
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    double nn = 0;
    for (int d = 0; d < 3; d++) {
      if (!isfinite(k->centre[d]) || !isfinite(k->normal[d]))
        return fail(error, s, "crystal %u has a non-finite centre or normal", i);
      nn += (double)k->normal[d] * k->normal[d];
    }
    if (fabs(nn - 1.0) > 1e-3)
      return fail(error, s, "crystal %u: normal of length %g (expected 1)", i, sqrt(nn));
    if (k->ring >= s->n_rings)
      return fail(error, s, "crystal %u: ring %u (expected < %u)", i, k->ring, s->n_rings);
    if (ring_major && k->ring != i / s->crystals_per_ring)
      return fail(error, s, "crystal %u: ring %u, but id = ring * %u + i gives ring %u", i,
                  k->ring, s->crystals_per_ring, i / s->crystals_per_ring);
  }
  return TRUE;
}

TlScanner *tl_scanner_copy(const TlScanner *s) {
  TlScanner *c = g_memdup2(s, sizeof *s);
  c->name = g_strdup(s->name);
  c->crystals = g_memdup2(s->crystals, sizeof(TlCrystal) * s->n_crystals);
  c->layout = s->layout ? g_memdup2(s->layout, sizeof *s->layout) : NULL;
  return c;
}

void tl_scanner_free(TlScanner *s) {
  if (!s) return;
  g_free(s->name);
  g_free(s->crystals);
  g_free(s->layout);
  g_free(s);
}

gboolean tl_scanner_pair_allowed(const TlScanner *s, guint a, guint b) {
  if (a >= s->n_crystals || b >= s->n_crystals) return FALSE;
  const TlCrystal *ca = &s->crystals[a], *cb = &s->crystals[b];
  guint dr = ca->ring > cb->ring ? ca->ring - cb->ring : cb->ring - ca->ring;
  return ca->group != cb->group && dr <= s->max_ring_difference;
}

float tl_scanner_tof_sigma_mm(const TlScanner *s) {
  return (float)(0.5 * TL_C_MM_PER_PS * s->tof_fwhm_ps / (2.0 * sqrt(2.0 * G_LN2)));
}

void tl_scanner_energy(const TlScanner *s, double window_kev[2], double *resolution) {
  const float *w = s->energy_window_kev;
  gboolean none = w[0] == 0 && w[1] == 0 && s->energy_resolution == 0;
  window_kev[0] = none ? TL_SCANNER_DEFAULT_ENERGY_LOW_KEV : w[0];
  window_kev[1] = none ? TL_SCANNER_DEFAULT_ENERGY_HIGH_KEV : w[1];
  *resolution = none ? TL_SCANNER_DEFAULT_ENERGY_RESOLUTION : s->energy_resolution;
}

void tl_scanner_energy_fill(TlScanner *s) {
  double w[2], r;
  tl_scanner_energy(s, w, &r);
  s->energy_window_kev[0] = (float)w[0];
  s->energy_window_kev[1] = (float)w[1];
  s->energy_resolution = (float)r;
}

/* SHA-256 of the crystal table and of every field that changes a projection. The name
 * and the layout are left out: the same crystals give the same projections; so are the
 * energy window and resolution (they change what a simulation keeps and a scatter estimate,
 * never a projection: the sensitivity and SRM caches stay valid across them). */
char *tl_scanner_key(const TlScanner *s) {
  g_autoptr(GChecksum) h = g_checksum_new(G_CHECKSUM_SHA256);
  guint32 head[6] = {1 /* key version */, s->kind, s->n_crystals, s->n_rings,
                     s->max_ring_difference, s->tof_bins};
  g_checksum_update(h, (const guchar *)head, sizeof head);
  float f[5] = {s->crystal_size[0], s->crystal_size[1], s->crystal_size[2], s->tof_bin_mm,
                s->tof_fwhm_ps};
  g_checksum_update(h, (const guchar *)f, sizeof f);
  g_checksum_update(h, (const guchar *)s->crystals, sizeof(TlCrystal) * s->n_crystals);
  return g_strdup_printf("scanner-%u-%s", s->n_crystals, g_checksum_get_string(h));
}

TlArray *tl_scanner_upload(const TlScanner *s, TlContext *ctx, GError **error) {
  G_STATIC_ASSERT(sizeof(TlCrystal) == 32);
  TlArray *a = tl_array_new(ctx, s->n_crystals, sizeof(TlCrystal), error);
  if (a && !tl_array_upload(a, s->crystals, error)) g_clear_pointer(&a, tl_array_free);
  return a;
}

TlImageGrid tl_scanner_default_grid(const TlScanner *s) {
  if (g_strcmp0(s->name, "dmi") == 0) return tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  if (g_strcmp0(s->name, "small-animal") == 0)
    return tl_image_grid_centred(128, 128, 159, 0.795f, 0.795f, 0.795f);
  /* Chou et al. 2012: 0.5 x 0.6 x 0.6 mm voxels, 119 planes across the gap; 60 mm in y and z */
  if (g_strcmp0(s->name, "dual-head") == 0)
    return tl_image_grid_centred(119, 100, 100, 0.5f, 0.6f, 0.6f);
  /* The mMR from either path (its list mode or its STIR sinograms): the grid its crystals on
   * the inner faces gave, kept when the depth of interaction moved them to 335 mm (issue 26),
   * which would give 268 x 268: an odd count keeps the sensitivity's mirror symmetries
   * (docs/pet.md: 69 s against 615 s cold on the coarse grid) */
  if (tl_cylinder_of_scanner(s) == tl_cylinder_mmr())
    return tl_image_grid_centred(263, 263, 130, 2.0f, 2.0f, 2.0f);
  float v = 0.5f * MIN(s->crystal_size[0], s->crystal_size[1]);
  float lo[3] = {G_MAXFLOAT, G_MAXFLOAT, G_MAXFLOAT}, hi[3] = {-G_MAXFLOAT, -G_MAXFLOAT, -G_MAXFLOAT};
  for (guint i = 0; i < s->n_crystals; i++)
    for (int d = 0; d < 3; d++) {
      lo[d] = MIN(lo[d], s->crystals[i].centre[d]);
      hi[d] = MAX(hi[d], s->crystals[i].centre[d]);
    }
  guint n[3];
  for (int d = 0; d < 3; d++) {
    /* transaxially 80% of the crystal span, axially all of it */
    float ext = (d == 2 && s->kind == TL_SCANNER_RING) ? hi[d] - lo[d] + s->crystal_size[1]
                                                        : 0.8f * (hi[d] - lo[d]);
    /* clamped before the cast: crystals ~1e20 mm away (a hostile table) made it undefined */
    double cells = isfinite(ext / v) ? ceil((double)ext / v) : 1.0;
    n[d] = (guint)CLAMP(cells, 1.0, 65535.0);
  }
  return tl_image_grid_centred(n[0], n[1], n[2], v, v, v);
}

guint64 tl_pair_count(guint n) { return (guint64)n * (n - (n > 0)) / 2; }

guint64 tl_pair_index(guint n, guint a, guint b) {
  guint d = (b + n - a) % n; /* b = a + d (mod n) */
  if (2 * d > n || (2 * d == n && a > b)) {
    guint t = a;
    a = b;
    b = t;
    d = n - d;
  }
  return a + (guint64)n * (d - 1);
}

void tl_pair_decode(guint n, guint64 p, guint *a, guint *b) {
  *a = (guint)(p % n);
  *b = (guint)((*a + p / n + 1) % n);
}
