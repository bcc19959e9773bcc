/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlScanner: a PET scanner as a crystal table (centre + inward normal per crystal),
 * uploaded once to the device. Ring scanners (regular-polygon rings) and the planar
 * dual-head scanner of Chou et al. 2012 share the representation: every crystal has a `group`
 * (polygon side or head) and a `ring`; a pair (a, b) is a valid line of response iff
 * group(a) != group(b) and |ring(a) - ring(b)| <= max_ring_difference. The same rule
 * runs on the device when the sensitivity image iterates all pairs. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-array.h"
#include "tl-error.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

/* The most crystals a scanner may have: 2^21 (64 MiB of table), four times the largest
 * built (a total-body scanner has 564 480); every count read from a file is held to it before
 * anything is allocated. 2^24 let a 30-byte preset override build 4.6 * 10^6 crystals for
 * 20 s (found by tests/fuzz/fuzz-scanner). */
#define TL_SCANNER_MAX_CRYSTALS (1u << 21)

typedef enum {
  TL_SCANNER_RING,
  TL_SCANNER_DUAL_HEAD,
} TlScannerKind;

/* The regular layout a crystal table was built from (NULL for explicit tables).
 * Ring: n_rings rings, each a regular polygon of n_sides sides with crystals_per_side
 * crystals crystal_pitch_mm apart, crystal centres on the inner faces at radius_mm from
 * the axis (the polygon's apothem); ring i at z = ring_pitch_mm*i + module_gap_mm*(i /
 * module_rings), the set centred on z = 0; side s faces the axis from angle
 * phase_deg + 360*s/n_sides (x towards y). Dual-head: two planar heads of
 * head_crystals[0] (along y) x head_crystals[1] (along z) crystals, inner faces at
 * x = -/+ head_distance_mm/2 (group 0 at -x). docs/formats.md has the details. */
typedef struct {
  TlScannerKind kind;
  guint n_rings, n_sides, crystals_per_side, module_rings;
  double radius_mm, crystal_pitch_mm, ring_pitch_mm, module_gap_mm, phase_deg;
  guint head_crystals[2];
  double head_pitch_mm[2], head_distance_mm;
} TlScannerLayout;

/* Device layout (scalar, 32 bytes): what kernels read for each crystal. */
typedef struct {
  float centre[3];  /* mm, scanner coordinates; axial axis z */
  guint32 group;    /* polygon side / head index */
  float normal[3];  /* unit vector pointing into the field of view */
  guint32 ring;     /* axial ring index (0 for dual-head) */
} TlCrystal;

typedef struct {
  char *name;                 /* preset or file name */
  TlScannerKind kind;
  guint n_crystals;
  TlCrystal *crystals;        /* n_crystals entries; crystal id = index */
  guint n_rings;
  guint crystals_per_ring;    /* ring scanners: id = ring * crystals_per_ring + i */
  guint max_ring_difference;  /* acceptance; n_rings - 1 = all */
  float crystal_size[3];      /* mm: transaxial, axial, depth (for TOR widths, drawing) */
  /* Time of flight (the acquisition's; 0 bins = no TOF) */
  guint tof_bins;
  float tof_bin_mm;           /* bin width along the LOR */
  float tof_fwhm_ps;          /* timing resolution */
  TlScannerLayout *layout;    /* owned; NULL when built from an explicit crystal table */
  /* Energy (the acquisition's window, the detector's resolution; docs/formats.md). All three
   * 0 = not given (a table built in code): tl_scanner_energy() then gives the defaults below.
   * They change no projection, so tl_scanner_key leaves them out. */
  float energy_window_kev[2]; /* a photon is kept when its measured energy is in [low, high] */
  float energy_resolution;    /* FWHM / E at 511 keV, a fraction (0.094 = 9.4 %) */
} TlScanner;

/* Energy defaults for descriptions without the keys (older files) and tables built in code:
 * a common wide LSO/LYSO window and a resolution typical of block detectors of the 2000s. */
#define TL_SCANNER_DEFAULT_ENERGY_LOW_KEV 350.0
#define TL_SCANNER_DEFAULT_ENERGY_HIGH_KEV 650.0
#define TL_SCANNER_DEFAULT_ENERGY_RESOLUTION 0.15
/* Bounds validate holds them to: 0 <= low < high <= this, resolution in [0, 1]. */
#define TL_SCANNER_MAX_ENERGY_KEV 10000.0

TL_API TlScanner *tl_scanner_new_preset(const char *preset, GError **error); /* "dmi", "small-animal", "dual-head" */
TL_API TlScanner *tl_scanner_load(const char *path, GError **error);          /* docs/formats.md */
TL_API gboolean tl_scanner_save(const TlScanner *s, const char *path, GError **error);
TL_API TlScanner *tl_scanner_copy(const TlScanner *s);
TL_API void tl_scanner_free(TlScanner *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlScanner, tl_scanner_free)

TL_API gboolean tl_scanner_pair_allowed(const TlScanner *s, guint a, guint b);
/* A stable text key of everything that changes projections (for caches). */
TL_API char *tl_scanner_key(const TlScanner *s);

/* Builds the crystal table of a layout (kind, rings, sides...); the other fields (crystal
 * size, acceptance, TOF) come from `base` when given, else from defaults. */
TL_API TlScanner *tl_scanner_new_from_layout(const char *name, const TlScannerLayout *layout,
                                      const TlScanner *base, GError **error);
/* Checks counts, ids, acceptance and TOF fields; every constructor and loader calls it. */
TL_API gboolean tl_scanner_validate(const TlScanner *s, GError **error);
/* The text description (docs/formats.md); `source` names the text in error messages
 * and `first_line` numbers its first line (for descriptions embedded in other files). */
TL_API char *tl_scanner_to_text(const TlScanner *s);
TL_API TlScanner *tl_scanner_from_text(const char *text, const char *source, guint first_line,
                                GError **error);
TL_API const char *const *tl_scanner_preset_names(void); /* NULL-terminated */
/* TOF kernel width along the LOR: sigma = (c/2) * FWHM / (2 sqrt(2 ln 2)), in mm. */
TL_API float tl_scanner_tof_sigma_mm(const TlScanner *s);
/* The energy window (keV) and resolution (FWHM fraction at 511 keV) in effect: the scanner's,
 * or the defaults above when it gives none (all three fields 0). */
TL_API void tl_scanner_energy(const TlScanner *s, double window_kev[2], double *resolution);
/* Sets the defaults on a scanner that gives no energy fields (all three 0); else no change. */
TL_API void tl_scanner_energy_fill(TlScanner *s);
/* The crystal table on the device: n_crystals elements of 32 bytes (TlCrystal). */
TL_API TlArray *tl_scanner_upload(const TlScanner *s, TlContext *ctx, GError **error);

/* A grid suited to a scanner: the reference grids for the presets (DMI: 215 x 215 x 71
 * of 2.78 mm), else one covering the field of view with voxels of half a crystal. */
TL_API TlImageGrid tl_scanner_default_grid(const TlScanner *s);

/* Pair numbering shared with the kernels: a = p mod n, b = (a + p / n + 1) mod n, for
 * p < n (n - 1) / 2 (shaders/pet/pet_common.glsl). */
TL_API guint64 tl_pair_count(guint n_crystals);
TL_API guint64 tl_pair_index(guint n_crystals, guint a, guint b); /* a != b, either order */
TL_API void tl_pair_decode(guint n_crystals, guint64 p, guint *a, guint *b);

/* Entry of the format table (compute/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_scanner;

G_END_DECLS
