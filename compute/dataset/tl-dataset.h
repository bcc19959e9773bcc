/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDataset: any file Tomolab reads, opened through the one format table (tl-formats.h) and
 * typed (an image, PET list mode, PET bins from a sinogram, CT projections), with what the data
 * allow and the defaults of a reconstruction computed once, here, for every door: the CLI, the
 * window and Python ask the dataset instead of keeping their own detection and defaults.
 *
 * The defaults (docs/architecture.md "The dataset layer"):
 * - PET image grid: the scanner's fine grid (tl_scanner_default_grid: voxels of half the
 *   crystal width) coarsened by TL_DATASET_PET_COARSEN = 2, keeping each count's parity:
 *   voxels of one crystal width (the mMR: 133 x 133 x 66 of 4 mm), the window's grid. The
 *   CLI used the fine grid (263 x 263 x 130 of 2 mm): 8 times the voxels, for detail the
 *   detector's ~4 mm resolution hardly holds, at 8 times the memory and the time of the
 *   sensitivity image and of every projection (the mMR's sensitivity takes about a minute on
 *   lavapipe, the CPU device every test and many users run on, at 4 mm). The fine grid
 *   stays one option away (`recon --grid`, Python's grid=, Scanner.default_grid()).
 * - CT image grid: the grid the file suggests, else a cube of 1 mm voxels two thirds of the
 *   detector's columns wide (the window's rule; the CLI had none and refused).
 * - CT centre of rotation (parallel beam): searched (tl_dataset_find_centre: ct/tl-ct-centre.c,
 *   the same search as `ct-recon --centre auto`) and moved into the geometry, since neither
 *   Data Exchange nor TIFF stacks store it and the detector's middle column is rarely right
 *   (tooth.h5: 295.5, not 319.5). The search needs a device, so it is a second call.
 * - Subsets for algorithms that use them: PET one per TL_DATASET_EVENTS_PER_SUBSET counts, at
 *   least 1 and at most TL_DATASET_SUBSETS (tl_dataset_pet_subsets); CT TL_DATASET_SUBSETS, at
 *   most one per view. Every door used 10 whatever the counts: on 2e5 simulated events that
 *   is 2e4 events an update, and OSEM's RMSE against the truth turned up after the third
 *   sub-iteration (docs/workbench.md's table); with 5e5 counts a subset it falls at every one.
 * - Iterations: TL_DATASET_PET_ITERATIONS, TL_DATASET_CT_ITERATIONS (the run's "auto").
 * - A simulation's events: TL_DATASET_SIM_EVENTS, on the grid coarsened by
 *   TL_DATASET_PET_COARSEN (the Simulate dialog, the demo, `tomolab-cli simulate`). */
#pragma once
#include "tl-api.h"
#include "dataset/tl-formats.h"
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/data/tl-sinogram.h"
#include "ct/tl-ct-data.h"
#include "ct/tl-ct-centre.h"
#include "tl-context.h"

G_BEGIN_DECLS

#define TL_DATASET_SUBSETS 10
#define TL_DATASET_EVENTS_PER_SUBSET 5e5
#define TL_DATASET_PET_ITERATIONS 3
#define TL_DATASET_CT_ITERATIONS 10
#define TL_DATASET_SIM_EVENTS 1e6

/* PET subsets for `counts` events (or counts in bins): counts / TL_DATASET_EVENTS_PER_SUBSET
 * rounded down, clamped to [1, TL_DATASET_SUBSETS]; 1 for a count that is not finite. */
TL_API guint tl_dataset_pet_subsets(double counts);

typedef enum {
  TL_DATASET_IMAGE,        /* an image to look at, a truth or a mu-map */
  TL_DATASET_PET_LISTMODE, /* PET events */
  TL_DATASET_PET_BINS,     /* a PET sinogram as counts per crystal pair, reconstructed binned
                            * (arc-corrected: per line, TlDataset.arc) */
  TL_DATASET_CT,           /* CT projections */
} TlDatasetKind;

/* What the data allow beyond the plain reconstruction (TlDataset.allows). */
typedef enum {
  TL_DATASET_ALLOWS_RANDOMS_DELAYEDS = 1 << 0, /* delayed coincidences recorded: randoms estimate */
  TL_DATASET_ALLOWS_RANDOMS_SINGLES = 1 << 1,  /* singles rates: randoms from singles */
  TL_DATASET_ALLOWS_TOF = 1 << 2,              /* events carry TOF bins */
  TL_DATASET_ALLOWS_ATTENUATION = 1 << 3,      /* PET: with a mu-map on the grid */
  TL_DATASET_ALLOWS_NORM = 1 << 4,             /* PET: with a normalisation of its scanner */
  TL_DATASET_ALLOWS_QUANT = 1 << 5,            /* a known duration: images in Bq/mL */
  TL_DATASET_ALLOWS_CENTRE = 1 << 6,           /* CT parallel beam: a centre of rotation to set */
} TlDatasetAllows;

typedef struct {
  TlDatasetKind kind;
  char *path;
  const TlFormatClass *format;
  /* The data, owned; one of them by kind. PET bins: lm holds the sinogram's scanner and no
   * events, bins its crystal pairs (TlBin) with bin_counts their total. */
  TlImage *image;
  TlListmode *lm;
  GArray *bins;
  double bin_counts;
  TlCtData *ct;
  /* the time frame the data span (s); duration 0 = unknown */
  double start_s, duration_s;
  guint allows;   /* TlDatasetAllows */
  guint tof_bins; /* the scanner's, when the events carry TOF (else 0) */
  /* Defaults (above). */
  TlImageGrid grid;
  guint subsets;
  /* CT parallel beam: the column the rotation axis projects onto in the geometry now (the
   * file's until found or set); NAN otherwise. centre_found: set by tl_dataset_find_centre,
   * with its search's details in `search`. */
  double centre;
  gboolean centre_known; /* the format stores it (.tlct) or the data were made in memory */
  gboolean centre_found;
  TlCtCentre search;
  /* PET bins from arc-corrected STIR projection data (issue 26): the sinogram itself, whose
   * bins are lines, not crystal pairs (tl_recon_new_arc, tl_pet_lines_operator_new_arc); bins
   * is then NULL, lm its cylindrical scanner (for the grid) without events, bin_counts its
   * total. NULL otherwise. */
  TlSinogram *arc;
  /* PET bins from a sinogram that is not arc-corrected: the sinogram too (bins holds its
   * crystal pairs), kept for a run with several rays per pair (tl_dataset_lines). NULL
   * otherwise. */
  TlSinogram *pair_sinogram;
} TlDataset;

TL_API const char *tl_dataset_kind_name(TlDatasetKind kind); /* "image", "PET list mode", ... */

/* Any file the format table reads as an image, PET list mode, a PET sinogram or CT
 * projections; other kinds (a scanner, a normalisation) are refused naming what the file
 * holds. The CT centre is not searched yet (tl_dataset_find_centre). */
TL_API TlDataset *tl_dataset_open(const char *path, GError **error);
/* Takes data already loaded (owned; kind one of the four above), for data made in memory (a
 * simulation) or read by a share (MPI ranks): the same defaults. NULL + GError when `kind`
 * is none of the dataset's. */
TL_API TlDataset *tl_dataset_new_take(TlDataKind kind, gpointer data, const char *path, GError **error);
TL_API void tl_dataset_free(TlDataset *ds);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlDataset, tl_dataset_free)

/* The PET grid rule for a scanner (above), and the fine grid coarsened by any factor (the
 * window's simulations: the Simulate dialog's choice; 1 = the fine grid). */
#define TL_DATASET_PET_COARSEN 2
TL_API TlImageGrid tl_dataset_pet_grid(const TlScanner *scanner);
TL_API TlImageGrid tl_dataset_grid_coarsened(const TlScanner *scanner, guint factor);

/* CT parallel beam from a format that stores no centre (Data Exchange, TIFF stacks): searches
 * the centre on the middle detector row once (later calls return at once) and moves the
 * geometry to it. TRUE without a search for data that need none (a .tlct's geometry is exact;
 * cone beam, PET, images). */
TL_API gboolean tl_dataset_find_centre(TlDataset *ds, TlContext *ctx, GError **error);
/* The same search for any parallel-beam data (`ct-recon --centre auto`), once. */
TL_API gboolean tl_dataset_search_centre(TlDataset *ds, TlContext *ctx, GError **error);
/* Recomputes the defaults after the caller changed the data (the CLI's --pixel-size and
 * --slices move the suggested grid); a centre found or set stays. */
TL_API void tl_dataset_update_defaults(TlDataset *ds);
/* CT parallel beam: moves the geometry so the axis projects onto column `centre` (a user's
 * value: finite, within the detector's columns; the GError names the value and the range). */
TL_API gboolean tl_dataset_set_centre(TlDataset *ds, double centre, GError **error);
/* Whether find_centre has a search to do (a device is then needed). */
TL_API gboolean tl_dataset_needs_centre(const TlDataset *ds);

/* The sinogram a PET run on these data reconstructs as lines (tl_recon_new_lines), or NULL for
 * crystal pairs or list mode: arc-corrected data always; a crystal-pair sinogram when the run
 * asks for more than one ray per pair (rays_t x rays_z > 1, the run keys rays-tangential and
 * rays-axial). The one choice of the CLI, the window and Python (issue 26 item 4); list mode
 * given rays keeps NULL and the crystal-pair operators refuse them, naming the data. */
TL_API const TlSinogram *tl_dataset_lines(const TlDataset *ds, guint rays_t, guint rays_z);

/* Measurements per pass: events, bin counts, detector pixels of all views; 0 for an image. */
TL_API double tl_dataset_measurements(const TlDataset *ds);
/* "key: value" lines: kind, format, time frame, what it allows, the defaults. */
TL_API void tl_dataset_describe(const TlDataset *ds, GString *out);

/* What `tomolab-cli info FILE` does (and tests/fuzz/fuzz-info.c): the file's description
 * (tl_format_describe_file, often from its header alone), then the loader a reconstruction
 * would run on it: tl_dataset_open for data, the format's own loader for the rest (scanners,
 * normalisations). A description alone said "OK" on files every loader refuses (a CASToR
 * crystal id 10^9, DICOM pixel data cut short, a NaN angle). `defaults` appends
 * tl_dataset_describe. FALSE + the loader's GError, prefixed "does not load: ", when it
 * refuses; `out` then holds the description. */
TL_API gboolean tl_dataset_info(const char *path, gboolean defaults, GString *out,
                                GError **error);

G_END_DECLS
