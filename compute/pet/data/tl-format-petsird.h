/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETSIRD (ETSI's PET raw-data standard, yardl binary encoding, optionally gzipped): the
 * scanner's replicated modules become Tomolab's crystal table, prompts and delayeds its list
 * mode. Read against the schema each file carries (pet/data/tl-yardl.h), so release v0.10.0
 * and the development model (+ ScannerInformation.collimatorType) are both read. Layout and
 * what is kept or refused: docs/formats.md. */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-listmode.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

#define TL_PETSIRD_MAX_MODULE_TYPES 64
/* Uncompressed size read into memory at most. */
#define TL_PETSIRD_MAX_BYTES (G_GUINT64_CONSTANT(8) << 30)

/* One event time block: its interval (ms, PETSIRD's TimeInterval) and how many of a list
 * mode's prompts and delayeds, taken in order, it holds. */
typedef struct {
  guint32 start_ms, stop_ms;
  guint64 prompts, delayeds;
} TlPetsirdBlock;

/* What a PETSIRD file holds, counted without keeping events. Per module type t: modules,
 * detecting elements per module, event energy bins; TOF bins of the same-type pair (t, t). */
typedef struct {
  char *scanner;          /* modelName */
  char *subject;          /* exam.subject.id, NULL without an exam */
  gboolean collimator_field; /* the schema has ScannerInformation.collimatorType (after v0.10.0) */
  guint module_types;
  guint modules[TL_PETSIRD_MAX_MODULE_TYPES], elements[TL_PETSIRD_MAX_MODULE_TYPES];
  guint energy_bins[TL_PETSIRD_MAX_MODULE_TYPES], tof_bins[TL_PETSIRD_MAX_MODULE_TYPES];
  guint n_crystals;       /* sum of modules x elements */
  gboolean uniform_tof;   /* one TOF binning (odd, equal, symmetric bins) for every pair */
  guint64 prompts, delayeds; /* over the pairs m1 <= m0 < module_types */
  guint64 time_blocks, event_blocks, other_blocks, extra_rows;
  guint64 first_ms, last_ms; /* event time blocks' span */
  double energy_sum[2];   /* sums of the two detections' energy-bin mid points (keV) */
  GArray *block_prompts;  /* guint64 per event time block */
  GArray *blocks;         /* TlPetsirdBlock per event time block (the list mode's order) */
} TlPetsirdInfo;

TL_API void tl_petsird_info_free(TlPetsirdInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlPetsirdInfo, tl_petsird_info_free)

/* The file's counts (every block decoded and checked; events not kept). */
TL_API TlPetsirdInfo *tl_petsird_scan(const char *path, GError **error);
/* Prompts and delayeds as list mode on the file's scanner (crystal id = the module types' crystals
 * one after the other, module-major); info (optional) gets the counts. TOF is kept when every
 * module-type pair has one odd, equal, symmetric binning, else the events carry none and the
 * list mode's description says so. */
TL_API TlListmode *tl_petsird_load(const char *path, TlPetsirdInfo **info, GError **error);

/* Writes list mode as PETSIRD v0.10.0 (yardl binary with tl_petsird_schema; gzipped when the
 * path ends in ".gz"), atomically (temp file + rename). The crystals become one module type of
 * replicated modules (docs/formats.md, "Writing PETSIRD"); prompts and delayeds keep their
 * order and orientation. blocks (n_blocks, optional) split the prompts and delayeds in order
 * into event time blocks, e.g. TlPetsirdInfo.blocks of a file read; NULL: one block over
 * [start_s, start_s + duration_s]. What PETSIRD cannot hold is refused, naming it: times
 * outside uint32 milliseconds, blocks that do not add up, crystals on the axis. Simulation tags
 * and singles rates have no PETSIRD field and are not written. */
TL_API gboolean tl_petsird_save(const TlListmode *lm, const TlPetsirdBlock *blocks,
                                guint n_blocks, const char *path, GError **error);

/* The schema text every file of release v0.10.0 carries (what the writer writes). */
TL_API extern const char tl_petsird_schema[];

TL_API extern const TlFormatClass tl_format_petsird;

G_END_DECLS
