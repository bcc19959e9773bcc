/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlNorm: the normalisation, per-LOR efficiency factors n_ab of the model
 *
 *   ybar_ab = n_ab a_ab (A x)_ab + r_ab      (a_ab attenuation, r_ab the additive term),
 *
 * as a component model (Casey, Gadala & Bendriem 1995; Badawi & Marsden 1999, "Developments
 * in component-based normalization for 3D PET"; the components of STIR's
 * ML_estimate_component_based_normalisation):
 *
 *   n_ab = eps_a eps_b g_ax(ring_a, ring_b) g_tr(d_ab, u_ab),
 *
 *  - eps_i: the efficiency of crystal i (one per crystal);
 *  - g_ax(r, s) = g_ax(s, r): the axial factor of each ring pair (plane efficiencies and the
 *    axial solid angle, which depends on the ring difference; R x R for R rings);
 *  - g_tr(d, u): the transaxial geometric factor of the LOR's place in the ring: with t the
 *    crystal's transaxial index (id mod C, C crystals per ring), d = the shorter way round
 *    from t_a to t_b (0..C/2: the radial position of the LOR) and u = t_a mod B, the position
 *    within its block of B crystals (the scanner's group: a polygon side, an mMR block) of the
 *    crystal from which d is counted (the smaller u when d = C/2). A rotation by one block
 *    maps every LOR onto one of the same class, so the class holds the radial (solid angle,
 *    depth of interaction) and the crystal-interference effects of STIR's "geo" factors.
 *
 * A scanner whose crystals are not ring-major in rings of C >= 2 (dual-head, explicit tables
 * without crystals_per_ring) has no transaxial classes (C = 0, one factor); one ring, or more
 * than TL_NORM_MAX_RINGS, no axial ones (R = 1). Degeneracies: eps_i -> alpha(ring_i) eps_i
 * with g_ax(r, s) -> g_ax(r, s) / (alpha(r) alpha(s)), and eps_i -> beta(u_i) eps_i with
 * g_tr(d, u) -> g_tr / (beta(u) beta((u + d) mod B)), leave every n_ab unchanged, so the
 * estimate fixes them (tl_norm_estimate): the mean of eps over each ring and over each block
 * position is 1 (with the classes that make them free), and the mean of n over every pair
 * the scanner accepts is 1 (the normalisation is relative; calibration is separate).
 *
 * The factors are float32 on the host, in the file and on the device, so the three evaluate
 * n_ab from the same numbers: host (tl_norm_pair), device (shaders/pet/pet_norm.glsl, from the
 * compact tables of tl_norm_upload) and file (docs/formats.md, `.tln`). */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-listmode.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

/* At most this many rings get axial factors (R x R floats): 1024 = 4 MiB. */
#define TL_NORM_MAX_RINGS 1024u
/* At most this many transaxial classes (C/2 + 1) x B. */
#define TL_NORM_MAX_TRANSAXIAL (1u << 22)
/* Factors are relative (mean 1): anything above this (or negative, or not finite) is refused. */
#define TL_NORM_MAX_FACTOR 1e6

typedef struct {
  TlScanner *scanner;       /* the scanner it was made for (owned copy) */
  char *scanner_sha256;     /* tl_norm_scanner_key(scanner) */
  guint n_crystals;
  guint rings;              /* R: axial classes are ring pairs; 1 = no axial factors */
  guint crystals_per_ring;  /* C: t = id mod C; 0 = no transaxial classes */
  guint block;              /* B: u = t mod B (1 without transaxial classes) */
  guint radial;             /* D = C/2 + 1 radial classes d = 0..C/2 (1 without) */
  float *efficiency;        /* eps_i, n_crystals */
  float *axial;             /* g_ax[r * R + s], R x R, symmetric */
  float *transaxial;        /* g_tr[d * B + u], D x B */
  guint32 *ring;            /* ring class of each crystal (all 0 when R = 1) */
  char *description;        /* free text (the scan it was estimated from) */
  char *sha256;             /* of the class layout and the factors (tl_norm_update) */
} TlNorm;

/* The classes `scanner` supports (see above); axial / transaxial FALSE turn them off. */
TL_API void tl_norm_layout(const TlScanner *scanner, gboolean axial, gboolean transaxial, guint *rings,
                    guint *crystals_per_ring, guint *block, guint *radial);
/* Every factor 1, on `scanner` (copied). */
TL_API TlNorm *tl_norm_new(const TlScanner *scanner, gboolean axial, gboolean transaxial,
                    GError **error);
TL_API TlNorm *tl_norm_copy(const TlNorm *n);
TL_API void tl_norm_free(TlNorm *n);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlNorm, tl_norm_free)

/* After changing factors by hand: checks them (finite, in [0, TL_NORM_MAX_FACTOR], g_ax
 * symmetric, some eps > 0), names the table, index and value in the GError (`source`, may be
 * NULL, prefixes it), and recomputes sha256. */
TL_API gboolean tl_norm_update(TlNorm *n, const char *source, GError **error);

/* Indices of pair (a, b)'s factors in n->axial and n->transaxial (a != b, ids < n_crystals). */
static inline guint tl_norm_axial_index(const TlNorm *n, guint a, guint b) {
  return n->ring[a] * n->rings + n->ring[b];
}
static inline guint tl_norm_transaxial_index(const TlNorm *n, guint a, guint b) {
  guint C = n->crystals_per_ring, B = n->block;
  if (C == 0) return 0;
  guint ta = a % C, tb = b % C;
  guint d = tb >= ta ? tb - ta : tb + C - ta, u = ta % B;
  if (2 * d > C) {
    d = C - d;
    u = tb % B;
  } else if (2 * d == C) {
    u = MIN(ta % B, tb % B);
  }
  return d * B + u;
}
/* n_ab as the device computes it: ((eps_a eps_b) g_ax) g_tr in float. */
static inline float tl_norm_pair(const TlNorm *n, guint a, guint b) {
  float e = n->efficiency[a] * n->efficiency[b];
  return e * n->axial[tl_norm_axial_index(n, a, b)] *
         n->transaxial[tl_norm_transaxial_index(n, a, b)];
}
/* The factor of the scatter term: the crystal efficiencies eps_a eps_b alone. g_ax and g_tr
 * hold the solid angle and crystal interference of the trues' line model, which SSS models
 * itself (its own solid angles and crystal faces): against the simulator the whole n_ab moved
 * the scatter term +3 to +7 % on direct planes and -5 % at ring differences >= 6, the
 * efficiencies alone kept it within 1.5 % (bench/README.md, "The lung, found"). */
static inline float tl_norm_scatter_pair(const TlNorm *n, guint a, guint b) {
  return n->efficiency[a] * n->efficiency[b];
}
/* out[j] = n of record j's pair (records of 3 words: crystal a, crystal b, ...: TlEvent,
 * TlBin); ids must be < n_crystals (checked by the list-mode and binned validators). */
TL_API void tl_norm_records(const TlNorm *n, const guint32 *records, guint64 count, float *out);

/* SHA-256 (hex) of what n_ab depends on in a scanner: the crystal table (centres, normals,
 * groups, rings), the crystal count, crystals per ring and the acceptance (not the name, the
 * crystal size or TOF). A normalisation is for the scanner whose key it holds. */
TL_API char *tl_norm_scanner_key(const TlScanner *scanner);
/* GError (naming `source`, both scanners and their crystal counts) unless n was made for
 * `scanner`. */
TL_API gboolean tl_norm_check_scanner(const TlNorm *n, const TlScanner *scanner, const char *source,
                               GError **error);
/* Whether n(perm[a], perm[b]) = n(a, b) exactly for every pair the scanner accepts (perm: a
 * crystal permutation, e.g. a symmetry of the sensitivity image, tl-sensitivity.h). */
TL_API gboolean tl_norm_invariant(const TlNorm *n, const guint32 *perm);

/* The device tables pet_norm.glsl reads (uint words, then floats): [0] n_crystals, [1] R,
 * [2] C, [3] B, [4] D, [5] offset of eps, [6] of g_ax (R x R), [7] of g_tr (D x B). */
TL_API TlArray *tl_norm_upload(const TlNorm *n, TlContext *ctx, GError **error);

/* The file (docs/formats.md, `.tln`): text header with the scanner block, float32 tables.
 * load: every count checked against the embedded scanner's classes before allocating, every
 * factor finite and in range, the byte count exact; `expected` (may be NULL) is the scanner
 * the caller's data come from: a file for another scanner is a GError naming both. */
TL_API gboolean tl_norm_save(const TlNorm *n, const char *path, GError **error);
TL_API TlNorm *tl_norm_load(const char *path, const TlScanner *expected, GError **error);
/* "key: value" lines for `tomolab-cli info`: scanner, classes, factor ranges. */
TL_API void tl_norm_describe(const TlNorm *n, GString *out);

/* Entry of the format table (compute/tl-formats.c): TL_DATA_PET_NORM. */
TL_API extern const TlFormatClass tl_format_norm;

G_END_DECLS
