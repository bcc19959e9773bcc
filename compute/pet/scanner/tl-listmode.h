/* SPDX-License-Identifier: GPL-3.0-or-later */
/* List-mode PET data: 12-byte events (crystal pair + TOF bin); positions come from the
 * scanner's crystal table. File format in docs/formats.md (text header + binary events). */
#pragma once
#include "tl-api.h"
#include "tl-scanner.h"

G_BEGIN_DECLS

typedef struct {
  guint32 a, b;    /* crystal ids */
  gint32 tof_bin;  /* 0 = centre; sign and offset defined in docs/formats.md; 0 without TOF */
} TlEvent;
G_STATIC_ASSERT(sizeof(TlEvent) == 12);

/* What a simulated prompt is (TlListmode.tags, one byte per event): simulation truth, so each
 * correction can be checked against it. */
typedef enum {
  TL_TAG_TRUE = 0,      /* both photons unscattered from one annihilation */
  TL_TAG_SCATTERED = 1, /* one annihilation, at least one photon scattered in the object */
  TL_TAG_RANDOM = 2,    /* photons of two annihilations (accidental coincidence) */
  TL_TAG_N
} TlEventTag;

typedef struct {
  TlScanner *scanner;     /* owned */
  guint64 n_events;
  TlEvent *events;        /* owned */
  gboolean has_tof;
  char *description;      /* free text (phantom, seed...) */
  /* Optional, zero / NULL = none (readers of scanner data and the simulator fill them; .tlm
   * stores them as `delayed = N` and `start_s`, `duration_s`). Delayed-window coincidences are kept apart from the prompts (`events`) for
   * the randoms estimate; start_s and duration_s: the acquisition time the events span. */
  guint64 n_delayed;
  TlEvent *delayed;       /* owned */
  double start_s, duration_s;
  /* Optional truth of simulated data: n_events TlEventTag bytes (owned), NULL = unknown
   * (measured data, older files, other formats). `.tlm` stores them as `tags = 1`. */
  guint8 *tags;
  /* Optional singles rates (counts per second, one per crystal, owned; NULL = none) with the
   * coincidence window 2 tau (ns) they were counted with: the randoms model of Casey &
   * Hoffman, r_ij = 2 tau S_i S_j T (tl_randoms_from_singles). The simulator fills them (with
   * randoms from singles); `.tlm` stores them as `singles = 1` + `coincidence_window_ns`. */
  double *singles;
  double coincidence_window_ns;
} TlListmode;

TL_API TlListmode *tl_listmode_new(TlScanner *scanner_owned, guint64 n_events);
TL_API void tl_listmode_free(TlListmode *lm);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlListmode, tl_listmode_free)

/* Reading validates the header, sizes, counts and crystal-id ranges; the GError names
 * the file, the field, the value found and what was expected. */
TL_API TlListmode *tl_listmode_load(const char *path, GError **error);
TL_API gboolean tl_listmode_save(const TlListmode *lm, const char *path, GError **error);
/* A share of the events without reading the others (distributed reconstruction: each
 * process reads its own range by file offset). count_events reads the header only and checks
 * the file size against it; load_range reads events [first, first + count) (first + count <=
 * the file's events, else a GError naming both) into a TlListmode of `count` events, checked
 * as load checks them. */
TL_API gboolean tl_listmode_count_events(const char *path, guint64 *n_events, GError **error);
TL_API TlListmode *tl_listmode_load_range(const char *path, guint64 first, guint64 count,
                                   GError **error);
/* What load checks, for data from elsewhere: ids < n_crystals, allowed pairs, TOF bins in
 * [-(tof_bins-1)/2, (tof_bins-1)/2] with TOF (has_tof needs scanner->tof_bins > 0), 0 without;
 * tags (when present) below TL_TAG_N; singles (when present) finite, in [0, 1e12] per second,
 * with a coincidence window in (0, 1000] ns. */
TL_API gboolean tl_listmode_validate(const TlListmode *lm, const char *source, GError **error);

/* Counts of the prompts by tag (all 0 without tags); returns FALSE when there are none. */
TL_API gboolean tl_listmode_tag_counts(const TlListmode *lm, guint64 counts[TL_TAG_N]);

/* Events [first, first + count) as a device array of 12-byte elements (TlEvent). */
TL_API TlArray *tl_listmode_upload(const TlListmode *lm, TlContext *ctx, guint64 first, guint64 count,
                            GError **error);

/* Binned data: counts per crystal pair (a < b), histogrammed from list mode. */
typedef struct {
  guint32 a, b;
  float count;
} TlBin;

TL_API GArray *tl_listmode_histogram(const TlListmode *lm); /* of TlBin, sorted by (a, b) */

/* Entry of the format table (compute/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_tlm;

G_END_DECLS
