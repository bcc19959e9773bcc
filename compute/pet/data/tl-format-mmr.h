/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Siemens Biograph mMR list mode (PETLINK 32-bit words, `.l` + its Interfile-style header):
 * prompts and delayeds decoded to crystal pairs of the mMR crystal table, time tags counted
 * and used to select time frames. Layout and geometry in docs/formats.md. */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/scanner/tl-cylinder.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

/* mMR geometry (STIR's Scanner.cxx "Siemens mMR"; Delso et al., J Nucl Med 52:1914, 2011):
 * 64 rings 4.0625 mm apart, 504 angular positions per ring = 56 blocks of 8 crystals + 1 gap
 * position (no crystal; position d = 0 mod 9 in the list mode's numbering), inner radius
 * 328 mm + 7 mm average depth of interaction (crystals at 335 mm, where STIR places its lines
 * of response), LSO 4 x 4 x 20 mm. The crystal table is tl_cylinder_mmr()'s
 * (pet/scanner/tl-cylinder.h), the one the mMR's STIR sinograms give too. */
#define TL_MMR_RINGS 64
#define TL_MMR_POSITIONS 504          /* detectors per ring, gaps included */
#define TL_MMR_CRYSTALS_PER_RING 448  /* gaps left out of the crystal table */
#define TL_MMR_BINS 344               /* tangential positions of the bin address */
#define TL_MMR_VIEWS 252
#define TL_MMR_SINOGRAMS 4084         /* span 1, ring differences -60..60 */
#define TL_MMR_MAX_RING_DIFFERENCE 60

/* Crystal id of ring r, position d (0..503): r * 448 + (d / 9) * 8 + d % 9 - 1; G_MAXUINT32
 * for a gap position (d % 9 == 0) or out of range. */
TL_API guint32 tl_mmr_crystal_id(guint ring, guint position);

typedef enum {
  TL_MMR_DECODED,
  TL_MMR_GAP,         /* the bin's detector pair includes a gap position */
  TL_MMR_OUT_OF_RANGE /* bin address >= 344 * 252 * 4084 */
} TlMmrDecode;
/* The 30-bit bin address of an event word to its crystal pair (docs/formats.md). */
TL_API TlMmrDecode tl_mmr_decode_bin(guint32 bin_address, guint32 *a, guint32 *b);

/* The mMR as a Tomolab scanner: 64 x 448 crystals (tl_cylinder_mmr(), max ring difference 60). */
TL_API TlScanner *tl_mmr_scanner_new(void);

/* A time frame [start_s, end_s) by the time tags (ms since the start of the acquisition);
 * end_s <= 0: to the end of the file. */
typedef struct {
  double start_s, end_s;
} TlMmrOptions;

/* Every word of the file lands in exactly one of words = prompts + delayeds + time_tags +
 * dead_time_tags + motion_tags + monitor_tags. Of the prompts and delayeds, those outside
 * the frame, on a gap or with a bin address out of range are counted, not kept. */
typedef struct {
  guint64 words, prompts, delayeds, time_tags, dead_time_tags, motion_tags, monitor_tags;
  guint64 kept_prompts, kept_delayeds, outside_frame, dropped_gap, dropped_range;
  guint32 first_ms, last_ms; /* time tags (0 when none) */
  double duration_s;         /* of the file: (last_ms - first_ms + 1) ms; 0 without tags */
  guint64 header_words;      /* the header's word count (of the full scan; 0 if absent) */
  double header_duration_s;  /* the header's acquisition duration (0 if absent) */
} TlMmrStats;

/* `path`: the header (any name; "name of data file" finds the words) or the `.l` file (its
 * header is found next to it: `<path>.hdr`, else any `*.hdr*` naming it). The GError names
 * the file, the key and the value for a bad header. opt NULL: the whole file. */
TL_API TlListmode *tl_mmr_load(const char *path, const TlMmrOptions *opt, TlMmrStats *stats,
                        GError **error);
/* Counts without keeping events (for `info`). */
TL_API gboolean tl_mmr_scan(const char *path, TlMmrStats *stats, GError **error);

/* Entry of the format table (compute/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_mmr;

G_END_DECLS
