/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Cylindrical scanners with block gaps, as STIR describes them (tl-cylinder.h; Thielemans et
 * al. 2012, and STIR's Scanner.cxx for the values). */
#include "tl-cylinder.h"
#include <math.h>
#include <string.h>

/* STIR's Scanner.cxx, "Siemens mMR": 64 rings, 344 non-arc-corrected bins, 2 * 252 detectors
 * per ring, inner radius 328 mm, average depth of interaction 7 mm, ring spacing 4.0625 mm,
 * bin 2.08626 mm, view offset 0, 9 transaxial crystals per block of which one virtual ("a gap
 * at the 9th crystal where the counts are zero"). Which position of a block is the gap in the
 * list mode's numbering was measured: position d = 0 mod 9 gets no event of the real
 * acquisition in ../shared/data/mmr (tl-format-mmr.c). Crystals LSO 4 x 4 x 20 mm, energy
 * window 430-610 keV, resolution 14.5 % (Delso et al. 2011). */
static const TlCylinder mmr = {
    .stir_name = "Siemens mMR", .rings = 64, .positions = 504, .block_positions = 9,
    .inner_radius_mm = 328.0, .doi_mm = 7.0, .ring_spacing_mm = 4.0625, .bin_size_mm = 2.08626,
    .view_offset_deg = 0.0, .views = 252, .tangential = 344, .max_ring_difference = 60,
    .crystal_size = {4.0f, 4.0f, 20.0f}, .energy_window_kev = {430.0f, 610.0f},
    .energy_resolution = 0.145f,
};

const TlCylinder *tl_cylinder_mmr(void) { return &mmr; }

const TlCylinder *tl_cylinder_find(const char *name, guint rings, guint positions) {
  if (!name) return NULL;
  g_autofree char *n = g_ascii_strdown(name, -1);
  g_strstrip(n);
  gboolean is_mmr = strcmp(n, "siemens mmr") == 0 || strcmp(n, "mmr") == 0 ||
                    strcmp(n, "2008") == 0 || strcmp(n, "siemens-mmr") == 0;
  if (!is_mmr || (rings && rings != mmr.rings) || (positions && positions != mmr.positions))
    return NULL;
  return &mmr;
}

guint tl_cylinder_crystals_per_ring(const TlCylinder *c) {
  return c->block_positions ? c->positions - c->positions / c->block_positions : c->positions;
}

guint32 tl_cylinder_crystal(const TlCylinder *c, guint ring, guint d) {
  if (ring >= c->rings || d >= c->positions) return G_MAXUINT32;
  guint per_ring = tl_cylinder_crystals_per_ring(c), index = d;
  if (c->block_positions) {
    guint in_block = d % c->block_positions;
    if (in_block == 0) return G_MAXUINT32;
    index = (d / c->block_positions) * (c->block_positions - 1) + in_block - 1;
  }
  return ring * per_ring + index;
}

gboolean tl_cylinder_position(const TlCylinder *c, guint32 crystal, guint *ring, guint *d) {
  guint per_ring = tl_cylinder_crystals_per_ring(c);
  if (!per_ring || crystal / per_ring >= c->rings) return FALSE;
  guint index = crystal % per_ring;
  *ring = crystal / per_ring;
  *d = c->block_positions
           ? (index / (c->block_positions - 1)) * c->block_positions +
                 index % (c->block_positions - 1) + 1
           : index;
  return TRUE;
}

TlScanner *tl_cylinder_scanner_new(const TlCylinder *c, const char *name, guint max_rd,
                                   GError **error) {
  guint per_ring = tl_cylinder_crystals_per_ring(c);
  if (c->rings < 1 || c->positions < 4 || c->positions % 2 || c->block_positions == 1 ||
      (c->block_positions && c->positions % c->block_positions) ||
      (guint64)per_ring * c->rings > TL_SCANNER_MAX_CRYSTALS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "cylindrical scanner '%s': %u rings of %u positions in blocks of %u (expected at "
                "least 1 ring, an even number of at least 4 positions, whole blocks of at least 2 "
                "and at most %u crystals)", name ? name : c->stir_name ? c->stir_name : "",
                c->rings, c->positions, c->block_positions, TL_SCANNER_MAX_CRYSTALS);
    return NULL;
  }
  TlScanner *s = g_new0(TlScanner, 1);
  s->name = g_strdup(name ? name : c->stir_name ? c->stir_name : "cylinder");
  s->kind = TL_SCANNER_RING;
  s->n_rings = c->rings;
  s->crystals_per_ring = per_ring;
  s->n_crystals = per_ring * c->rings;
  s->max_ring_difference = MIN(max_rd, c->rings - 1);
  memcpy(s->crystal_size, c->crystal_size, sizeof s->crystal_size);
  s->energy_window_kev[0] = c->energy_window_kev[0];
  s->energy_window_kev[1] = c->energy_window_kev[1];
  s->energy_resolution = c->energy_resolution;
  tl_scanner_energy_fill(s);
  s->crystals = g_new0(TlCrystal, s->n_crystals);
  /* the crystal's centre on the effective radius: STIR places the line of response between
   * the detectors at inner radius + average depth of interaction, not on the inner faces */
  double R = c->inner_radius_mm + c->doi_mm;
  for (guint r = 0; r < c->rings; r++)
    for (guint d = 0; d < c->positions; d++) {
      guint32 id = tl_cylinder_crystal(c, r, d);
      if (id == G_MAXUINT32) continue;
      double psi = 2.0 * G_PI * d / c->positions + c->view_offset_deg * G_PI / 180.0;
      TlCrystal *k = &s->crystals[id];
      k->centre[0] = (float)(R * sin(psi));
      k->centre[1] = (float)(-R * cos(psi));
      k->centre[2] = (float)((r - 0.5 * (c->rings - 1)) * c->ring_spacing_mm);
      k->normal[0] = (float)-sin(psi);
      k->normal[1] = (float)cos(psi);
      k->normal[2] = 0.0f;
      k->group = c->block_positions ? d / c->block_positions : d;
      k->ring = r;
    }
  if (!tl_scanner_validate(s, error)) {
    tl_scanner_free(s);
    return NULL;
  }
  return s;
}

/* The known scanners' tables, built once to compare against. */
static gpointer build_mmr(gpointer unused) {
  (void)unused;
  return tl_cylinder_scanner_new(&mmr, NULL, mmr.max_ring_difference, NULL);
}

const TlCylinder *tl_cylinder_of_scanner(const TlScanner *s) {
  static GOnce once = G_ONCE_INIT;
  const TlScanner *m = g_once(&once, build_mmr, NULL);
  if (!s || !m || s->n_crystals != m->n_crystals || s->crystals_per_ring != m->crystals_per_ring ||
      s->n_rings != m->n_rings)
    return NULL;
  return memcmp(s->crystals, m->crystals, sizeof(TlCrystal) * s->n_crystals) == 0 ? &mmr : NULL;
}
