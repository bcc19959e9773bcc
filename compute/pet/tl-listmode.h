/* List-mode PET data: 12-byte events (crystal pair + TOF bin); positions come from the
 * scanner's crystal table. File format in docs/formats.md (text header + binary events). */
#pragma once
#include "tl-scanner.h"

G_BEGIN_DECLS

typedef struct {
  guint32 a, b;    /* crystal ids */
  gint32 tof_bin;  /* 0 = centre; sign and offset defined in docs/formats.md; 0 without TOF */
} TlEvent;
G_STATIC_ASSERT(sizeof(TlEvent) == 12);

typedef struct {
  TlScanner *scanner;     /* owned */
  guint64 n_events;
  TlEvent *events;        /* owned */
  gboolean has_tof;
  char *description;      /* free text (phantom, seed...) */
  /* Optional, zero / NULL = none (readers of scanner data fill them; .tlm does not store
   * them yet). Delayed-window coincidences are kept apart from the prompts (`events`) for
   * the randoms estimate; start_s and duration_s: the acquisition time the events span. */
  guint64 n_delayed;
  TlEvent *delayed;       /* owned */
  double start_s, duration_s;
} TlListmode;

TlListmode *tl_listmode_new(TlScanner *scanner_owned, guint64 n_events);
void tl_listmode_free(TlListmode *lm);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlListmode, tl_listmode_free)

/* Reading validates the header, sizes, counts and crystal-id ranges; the GError names
 * the file, the field, the value found and what was expected. */
TlListmode *tl_listmode_load(const char *path, GError **error);
gboolean tl_listmode_save(const TlListmode *lm, const char *path, GError **error);
/* A share of the events without reading the others (distributed reconstruction: each
 * process reads its own range by file offset). count_events reads the header only and checks
 * the file size against it; load_range reads events [first, first + count) (first + count <=
 * the file's events, else a GError naming both) into a TlListmode of `count` events, checked
 * as load checks them. */
gboolean tl_listmode_count_events(const char *path, guint64 *n_events, GError **error);
TlListmode *tl_listmode_load_range(const char *path, guint64 first, guint64 count,
                                   GError **error);
/* What load checks, for data from elsewhere: ids < n_crystals, allowed pairs, TOF bins in
 * [-(tof_bins-1)/2, (tof_bins-1)/2] with TOF (has_tof needs scanner->tof_bins > 0), 0 without. */
gboolean tl_listmode_validate(const TlListmode *lm, const char *source, GError **error);

/* Events [first, first + count) as a device array of 12-byte elements (TlEvent). */
TlArray *tl_listmode_upload(const TlListmode *lm, TlContext *ctx, guint64 first, guint64 count,
                            GError **error);

/* Binned data: counts per crystal pair (a < b), histogrammed from list mode. */
typedef struct {
  guint32 a, b;
  float count;
} TlBin;

GArray *tl_listmode_histogram(const TlListmode *lm); /* of TlBin, sorted by (a, b) */

/* Entry of the format table (compute/tl-formats.c). */
extern const TlFormatClass tl_format_tlm;

G_END_DECLS
