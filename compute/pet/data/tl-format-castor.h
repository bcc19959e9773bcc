/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CASToR PET data (`.cdh` header + `.cdf` binary events, list mode and histogram, with the
 * optional attenuation, scatter, random, normalisation and TOF fields) and CASToR scanner
 * look-up tables (`.hscan` + `.lut`): read and written, so a Tomolab simulation can be handed to
 * CASToR and a CASToR dataset reconstructed here. Layouts in docs/formats.md. */
#pragma once
#include "tl-api.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/correct/tl-norm.h"
#include "image/tl-format.h"

G_BEGIN_DECLS

/* A CASToR datafile as it is on disk: the header's values and one column per event field
 * (NULL when the header's flag is off), so a file read and written back is the same bytes. */
typedef struct {
  char *scanner_name;         /* "Scanner name": the .hscan of that name describes the crystals */
  char *isotope;              /* "Isotope" (NULL: absent) */
  gboolean histogram;         /* "Data mode": list-mode (FALSE) or histogram (TRUE) */
  guint64 n_events;
  double start_s, duration_s; /* "Start time (s)", "Duration (s)" */
  double calibration;         /* "Calibration factor" (1 when absent) */
  gboolean has_atn, has_scat, has_rand, has_norm, has_tof;
  double tof_fwhm_ps;         /* "TOF resolution (ps)" */
  double tof_range_ps;        /* list mode: "List TOF measurement range (ps)" */
  double tof_quant_ps;        /* list mode: "List TOF quantization bin size (ps)", 0 absent */
  guint tof_bins;             /* histogram: "Histo TOF number of bins" (1 without TOF) */
  double tof_bin_ps;          /* histogram: "Histo TOF bin size (ps)" */
  double max_axial_diff_mm;   /* "Maximum axial difference mm", < 0 absent */
  guint32 *time_ms, *id1, *id2;
  float *atn, *rand, *norm;   /* one per event */
  float *scat, *value;        /* list: scat one per event; histogram: tof_bins per event */
  float *tof_ps;              /* list mode: TOF measurement (ps), positive towards id2 */
} TlCastorData;

TL_API void tl_castor_free(TlCastorData *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCastorData, tl_castor_free)

/* Bytes per event of the header's layout. */
TL_API guint tl_castor_event_bytes(const TlCastorData *d);
TL_API TlCastorData *tl_castor_load(const char *cdh, GError **error);
/* Writes `cdh` and `<cdh without .cdh>.cdf` next to it (`~1.cdf` when the header being
 * replaced names `.cdf`): one rename commits the pair (image/tl-file.h). */
/* The data file the header `cdh` names (image/tl-datafile.h), NULL when none (g_free). */
TL_API char *tl_castor_data_path(const char *cdh);
TL_API gboolean tl_castor_save(const TlCastorData *d, const char *cdh, GError **error);

/* List-mode data as Tomolab events on `scanner` (ids checked against it). TOF: the CASToR
 * measurement dt (ps) is s = c dt / 2 along id1 -> id2, binned to the scanner's TOF bins. */
TL_API TlListmode *tl_castor_to_listmode(const TlCastorData *d, const TlScanner *scanner,
                                  const char *source, GError **error);
/* The events of `lm` as list-mode CASToR data (time 0, TOF bin k -> 2 k w / c ps). */
TL_API TlCastorData *tl_castor_from_listmode(const TlListmode *lm, const char *scanner_name);
/* What the castor format's save writes for list mode (`path` ends in .cdh; the scanner goes
 * next to it as <stem>-scanner.hscan + .lut), with a normalisation (NULL = none, made for
 * lm's scanner) as each event's "normalization correction factor" field: 1 / n_ab, since
 * CASToR divides the forward projection by its multiplicative corrections
 * (oProjectionLine::ForwardProject, value /= m_multiplicativeCorrection); n = 0 gives 0, an
 * event CASToR skips. */
TL_API gboolean tl_castor_save_listmode(const TlListmode *lm, const TlNorm *norm, const char *path,
                                 GError **error);

/* Scanners: `.hscan` (text) + `.lut` next to it (6 float32 per crystal: centre x y z, outward
 * orientation x y z). */
TL_API TlScanner *tl_castor_scanner_load(const char *hscan, GError **error);
TL_API gboolean tl_castor_scanner_save(const TlScanner *s, const char *hscan, GError **error);
/* A generic `.geom` description (one layer; rsectors, modules, submodules, crystals, gaps,
 * first angle, angular span, rotation direction; no z-shifts), read only. Groups: rsectors. */
TL_API TlScanner *tl_castor_geom_load(const char *geom, GError **error);

/* Entries of the format table (compute/tl-formats.c). */
TL_API extern const TlFormatClass tl_format_castor;
TL_API extern const TlFormatClass tl_format_castor_scanner;

G_END_DECLS
