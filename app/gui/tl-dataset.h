/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDataset: what the window reconstructs or shows: list-mode data with its image grid
 * (and the true activity when simulated), or an image on its own. Built on worker
 * threads (tl_dataset_simulate, tl_dataset_load); the window swaps it in only once it
 * is complete, so a failed load leaves the previous dataset as it was. */
#pragma once
#include <gio/gio.h>
#include "tl-job.h"
#include "tl-formats.h"

G_BEGIN_DECLS

typedef struct {
  char *name;            /* file name or a description of the simulation */
  char *path;            /* the file (NULL when simulated) */
  TlListmode *lm;        /* PET list mode, NULL otherwise */
  TlCtData *ct;          /* a CT scan (.tlct or simulated), NULL otherwise */
  TlImage *truth;        /* on grid, NULL when unknown */
  TlImage *mu;           /* PET: the phantom's mu-map (mm^-1) on grid when simulated */
  gboolean attenuated;   /* PET: simulated with attenuation (so mu should be corrected for) */
  TlImage *image;        /* an opened image (lm and ct NULL) */
  GArray *bins;          /* PET sinogram: its crystal pairs (TlBin) of lm's scanner (lm holds no
                            events then); NULL otherwise */
  double bin_counts;     /* their total */
  const TlFormatClass *format; /* the opened file's format (compute/tl-formats.h); NULL when simulated */
  char *details;         /* what `tomolab-cli info` says of the file; NULL when simulated */
  TlImageGrid grid;
  char *phantom;         /* the simulated phantom's preset name (NEMA: analysed), else NULL */
} TlDataset;

/* Reference counted: the window and the runner creating a job from it both hold one. */
TlDataset *tl_dataset_ref(TlDataset *d);
void tl_dataset_unref(TlDataset *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlDataset, tl_dataset_unref)

/* params as win.simulate takes them (a{sv}): phantom (s), scanner (s: a preset name or a
 * scanner description file), events (d), seed (t), coarsen (u: grid voxels this many
 * times the scanner grid's), attenuation (b, default off; the phantom's mu-map is kept
 * for the correction either way), tof (b, default off: record TOF bins; the scanner must
 * have them). Missing keys take the Simulate dialog's defaults. */
/* modality (s) "ct" simulates a CT scan instead (needs ctx): phantom (s, a CT preset,
 * default shepp-logan), beam (s: cone or parallel), size (u: volume voxels per side,
 * 1 mm, default 64), views (u, 90), detector (u: columns = rows, 96), i0 (d: incident
 * photons, 0 = noise-free), seed (t). */
TlDataset *tl_dataset_simulate(TlContext *ctx, GVariant *params, GCancellable *cancel, GError **error);
/* Something to reconstruct (list mode or a CT scan), not an image to look at. */
gboolean tl_dataset_iterative(const TlDataset *d);
/* Measurements per full pass: events (PET) or detector pixels of all views (CT). */
double tl_dataset_events(const TlDataset *d);
/* Any file the format table reads (detected by content): list mode, a sinogram (reconstructed
 * binned), CT data or an image. */
TlDataset *tl_dataset_load(const char *path, guint coarsen, GError **error);

/* A job for the runner: PET reconstruction of list mode, or the image itself (which has
 * nothing to iterate). The dataset must outlive the job's creation only. A mu-map file
 * (opt->mu = TL_PET_MU_FILE) is read here, so call it on the worker. */
TlJob *tl_dataset_new_job(const TlDataset *d, TlContext *ctx, const TlPetJobOptions *opt,
                          const TlCtJobOptions *ct_opt, GError **error);

G_END_DECLS
