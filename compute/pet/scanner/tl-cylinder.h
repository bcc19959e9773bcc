/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCylinder: a cylindrical scanner as STIR describes one (its Scanner.cxx and
 * ProjDataInfoCylindricalNoArcCorr): rings of detector *positions* on a circle of the effective
 * radius (inner radius + average depth of interaction), some of them block gaps that hold no
 * crystal. The one geometry both the list-mode readers and the STIR projection-data path build
 * their crystal table from, so that a line of response is at the same place whichever file it
 * came from (issue 26: the mMR's list mode at 328 mm and its sinograms at 335 mm before).
 *
 * Position d of ring r sits at psi = 2 pi d / positions + view offset, (x, y) = (R sin psi,
 * -R cos psi) (STIR's convention), z = (r - (rings - 1) / 2) * ring spacing. With gaps, every
 * block of block_positions positions starts with a gap (no crystal): the crystals of a ring are
 * numbered in position order skipping the gaps, crystal id = ring * crystals_per_ring + index;
 * a crystal's group (no line of response within one group) is its block, else its position. */
#pragma once
#include "tl-api.h"
#include "tl-scanner.h"

G_BEGIN_DECLS

typedef struct {
  const char *stir_name;          /* STIR's name ("Siemens mMR"), NULL for none */
  guint rings, positions;         /* positions per ring, gaps included (even) */
  guint block_positions;          /* positions per transaxial block, the first a gap; 0 = none */
  double inner_radius_mm, doi_mm; /* effective radius = inner radius + average DOI */
  double ring_spacing_mm, bin_size_mm, view_offset_deg;
  guint views, tangential;        /* the scanner's own sinogram: views (positions / 2) and
                                   * tangential positions (its transaxial acceptance) */
  guint max_ring_difference;
  float crystal_size[3];          /* mm: transaxial, axial, depth */
  float energy_window_kev[2], energy_resolution; /* as TlScanner's (0: the defaults) */
} TlCylinder;

/* The Siemens Biograph mMR as STIR's Scanner.cxx describes it: 64 rings 4.0625 mm apart, 504
 * positions = 56 blocks of 9 (8 crystals and a gap), inner radius 328 mm, average depth of
 * interaction 7 mm, bin 2.08626 mm, 252 views x 344 tangential, ring differences up to 60. */
TL_API const TlCylinder *tl_cylinder_mmr(void);
/* A known real scanner by STIR's name or alias ("Siemens mMR", "mMR", "2008"; any case) whose
 * rings and positions are those given (0: any); NULL if none. */
TL_API const TlCylinder *tl_cylinder_find(const char *name, guint rings, guint positions);

TL_API guint tl_cylinder_crystals_per_ring(const TlCylinder *c);
/* Crystal id of ring r, position d; G_MAXUINT32 for a gap or out of range. */
TL_API guint32 tl_cylinder_crystal(const TlCylinder *c, guint ring, guint position);
/* Ring and position of a crystal id; FALSE when out of range. */
TL_API gboolean tl_cylinder_position(const TlCylinder *c, guint32 crystal, guint *ring,
                                     guint *position);
/* The crystal table (max ring difference max_rd, clamped to rings - 1); name NULL: stir_name. */
TL_API TlScanner *tl_cylinder_scanner_new(const TlCylinder *c, const char *name, guint max_rd,
                                          GError **error);
/* Whether `s` is the crystal table of a known real scanner (the same crystals, whatever its
 * name and acceptance): the list mode of that scanner is then binned in its own geometry. */
TL_API const TlCylinder *tl_cylinder_of_scanner(const TlScanner *s);

G_END_DECLS
