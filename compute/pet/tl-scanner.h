/* TlScanner: a PET scanner as a crystal table (centre + inward normal per crystal),
 * uploaded once to the device. Ring scanners (regular-polygon rings) and the planar
 * dual-head scanner of seed 004 share the representation: every crystal has a `group`
 * (polygon side or head) and a `ring`; a pair (a, b) is a valid line of response iff
 * group(a) != group(b) and |ring(a) - ring(b)| <= max_ring_difference. The same rule
 * runs on the device when the sensitivity image iterates all pairs. */
#pragma once
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

typedef enum {
  TL_SCANNER_RING,
  TL_SCANNER_DUAL_HEAD,
} TlScannerKind;

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
} TlScanner;

TlScanner *tl_scanner_new_preset(const char *preset, GError **error); /* "dmi", "small-animal", "dual-head" */
TlScanner *tl_scanner_load(const char *path, GError **error);          /* docs/formats.md */
gboolean tl_scanner_save(const TlScanner *s, const char *path, GError **error);
TlScanner *tl_scanner_copy(const TlScanner *s);
void tl_scanner_free(TlScanner *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlScanner, tl_scanner_free)

gboolean tl_scanner_pair_allowed(const TlScanner *s, guint a, guint b);
/* A stable text key of everything that changes projections (for caches). */
char *tl_scanner_key(const TlScanner *s);

G_END_DECLS
