/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDocument: what the window reconstructs or shows: the library's TlDataset
 * (compute/dataset/tl-dataset.h: the file's detection, kind and defaults, shared with the CLI
 * and Python) plus what only the window keeps (a simulation's truth and mu-map, its name, what
 * `tomolab-cli info` says). Built on worker threads (tl_document_simulate, tl_document_load);
 * the window swaps it in only once it is complete, so a failed load leaves the previous
 * dataset as it was. */
#pragma once
#include <gio/gio.h>
#include "tl-job.h"
#include "dataset/tl-dataset.h"

G_BEGIN_DECLS

typedef struct {
  TlDataset *ds;         /* owned: the data and their defaults */
  char *name;            /* file name or a description of the simulation */
  char *path;            /* the file (NULL when simulated) */
  /* Borrowed from ds, by its kind (NULL otherwise): */
  TlListmode *lm;        /* PET list mode; for a sinogram its scanner with no events */
  TlCtData *ct;          /* a CT scan (a file or simulated) */
  TlImage *image;        /* an opened image (lm and ct NULL) */
  GArray *bins;          /* PET sinogram: its crystal pairs (TlBin) of lm's scanner */
  double bin_counts;     /* their total */
  const TlFormatClass *format; /* the opened file's format; NULL when simulated */
  TlImage *truth;        /* on grid, NULL when unknown */
  TlImage *mu;           /* PET: the phantom's mu-map (mm^-1) on grid when simulated */
  gboolean attenuated;   /* PET: simulated with attenuation (so mu should be corrected for) */
  char *details;         /* what `tomolab-cli info` says of the file; NULL when simulated */
  TlImageGrid grid;      /* the dataset's default grid (a simulation's: its phantom's) */
  char *phantom;         /* the simulated phantom's preset name (NEMA: analysed), else NULL */
  char *mu_file;         /* mu written to a temporary file for runs (tl_document_mu_file) */
} TlDocument;

/* Reference counted: the window and the runner creating a job from it both hold one. */
TlDocument *tl_document_ref(TlDocument *d);
void tl_document_unref(TlDocument *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlDocument, tl_document_unref)

/* params as win.simulate takes them (a{sv}): phantom (s), scanner (s: a preset name or a
 * scanner description file), events (d), seed (t), coarsen (u: grid voxels this many
 * times the scanner grid's), attenuation (b, default off; the phantom's mu-map is kept
 * for the correction either way), tof (b, default off: record TOF bins; the scanner must
 * have them). Missing keys take the Simulate dialog's defaults. */
/* modality (s) "ct" simulates a CT scan instead (needs ctx): phantom (s, a CT preset,
 * default shepp-logan), beam (s: cone or parallel), size (u: volume voxels per side,
 * 1 mm, default 64), views (u, 90), detector (u: columns = rows, 96), i0 (d: incident
 * photons, 0 = noise-free), seed (t). */
TlDocument *tl_document_simulate(TlContext *ctx, GVariant *params, GCancellable *cancel, GError **error);
/* Something to reconstruct (list mode or a CT scan), not an image to look at. */
gboolean tl_document_iterative(const TlDocument *d);
/* Measurements per full pass: events (PET) or detector pixels of all views (CT). */
double tl_document_events(const TlDocument *d);
/* Any file the format table reads (tl_dataset_open: detected by content): list mode, a
 * sinogram (reconstructed binned), CT data or an image, on the dataset's default grid. */
TlDocument *tl_document_load(const char *path, GError **error);
/* CT parallel beam from a format that stores no centre: searches it (once; the CLI's
 * --centre auto) and moves the geometry there. TRUE at once otherwise. On the worker. */
gboolean tl_document_find_centre(TlDocument *d, TlContext *ctx, GError **error);

/* A job for the runner, made from a run (compute/run/tl-run-spec.h) as the CLI makes its run:
 * PET reconstruction of list mode or a sinogram, CT (the run's centre: a column, "auto"
 * searched, else the dataset's), or the image itself (which has nothing to iterate). The grid:
 * the run's, else its truth's, else its attenuation map's, else the dataset's; subsets left to
 * the run: the dataset's. The document must outlive the job's creation only; files the run
 * names are read here, so call it on the worker. */
TlJob *tl_document_new_job(const TlDocument *d, TlContext *ctx, const TlRunSpec *run,
                           GError **error);
/* A simulation's mu-map as a file a run can name (attenuation = FILE): written once to a
 * temporary folder, removed with the document. Main thread. */
const char *tl_document_mu_file(TlDocument *d, GError **error);

G_END_DECLS
