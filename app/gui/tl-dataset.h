/* TlDataset: what the window reconstructs or shows: list-mode data with its image grid
 * (and the true activity when simulated), or an image on its own. Built on worker
 * threads (tl_dataset_simulate, tl_dataset_load); the window swaps it in only once it
 * is complete, so a failed load leaves the previous dataset as it was. */
#pragma once
#include <gio/gio.h>
#include "tl-job.h"

G_BEGIN_DECLS

typedef struct {
  char *name;            /* file name or a description of the simulation */
  char *path;            /* the file (NULL when simulated) */
  TlListmode *lm;        /* NULL for an image */
  TlImage *truth;        /* on grid, NULL when unknown */
  TlImage *image;        /* an opened image (lm NULL) */
  TlImageGrid grid;
} TlDataset;

/* Reference counted: the window and the runner creating a job from it both hold one. */
TlDataset *tl_dataset_ref(TlDataset *d);
void tl_dataset_unref(TlDataset *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlDataset, tl_dataset_unref)

/* params as win.simulate takes them (a{sv}): phantom (s), scanner (s: a preset name or a
 * scanner description file), events (d), seed (t), coarsen (u: grid voxels this many
 * times the scanner grid's), attenuation (b, default off: the reconstruction does not
 * correct for it yet, so attenuated data give the hot-rim image). Missing keys take the Simulate dialog's defaults. */
TlDataset *tl_dataset_simulate(GVariant *params, GCancellable *cancel, GError **error);
/* .tlm list mode, else an image (.nii, .nii.gz, .raw). */
TlDataset *tl_dataset_load(const char *path, guint coarsen, GError **error);

/* A job for the runner: PET reconstruction of list mode, or the image itself (which has
 * nothing to iterate). The dataset must outlive the job's creation only. */
TlJob *tl_dataset_new_job(const TlDataset *d, TlContext *ctx, const TlPetJobOptions *opt,
                          GError **error);

G_END_DECLS
