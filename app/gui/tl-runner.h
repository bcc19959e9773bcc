/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRunner: the worker thread that owns a TlJob. The main thread only sends requests
 * (run, pause, step, stop, which slices are shown); the worker answers with frames
 * (statistics + the displayed slices, read back from the device) delivered on the main
 * context. No call here blocks on the device. */
#pragma once
#include "tl-job.h"
#include "image/tl-nema.h"
#include "tl-progress.h"

G_BEGIN_DECLS

typedef enum {
  TL_RUN_PREPARING,   /* the job is being created (sensitivity image...) */
  TL_RUN_RUNNING,
  TL_RUN_PAUSED,
  TL_RUN_FINISHED,    /* all iterations done */
  TL_RUN_STOPPED,
  TL_RUN_FAILED,
} TlRunState;

enum { TL_VIEW_AXIAL, TL_VIEW_CORONAL, TL_VIEW_SAGITTAL, TL_VIEW_MIP, TL_N_VIEWS };

/* Which slices to read back: voxel indices of the crosshair, and whether the MIP is
 * shown (it needs the whole volume). */
typedef struct {
  guint pos[3];
  gboolean mip;
} TlViewRequest;

typedef struct {
  guint width, height;   /* pixels; row 0 is the top of the view */
  float *data;
} TlSlice;

typedef struct {
  TlRunState state;
  gboolean has_step;     /* a new sub-iteration (else only new slices or a state change) */
  TlJobStep step;
  TlViewRequest view;    /* what the slices show */
  TlSlice slices[TL_N_VIEWS];  /* data NULL when not read */
  GError *error;
  char *saved;           /* a save request was handled: this path... */
  GError *save_error;    /* ...or this error */
  /* Analysis of the image shown, computed on the worker (tl_runner_set_analysis): after
   * every new sub-iteration and when the ROIs change. */
  GArray *roi_stats;     /* TlRoiStats, one per ROI; NULL when not computed */
  gboolean has_nema;
  TlNemaResult nema;
  TlImage *snapshot;     /* tl_runner_snapshot answered: a host copy of the image shown */
  gboolean changed;      /* this sub-iteration is the first with new settings (steering) */
  char unit[TL_IMAGE_UNIT_MAX]; /* of the slices (TlJob.unit; "" = arbitrary) */
} TlFrame;

void tl_frame_free(TlFrame *f);

typedef TlJob *(*TlJobFactory)(TlContext *ctx, gpointer data, GError **error);
typedef void (*TlFrameFunc)(TlFrame *frame, gpointer user_data);  /* frame is borrowed */

typedef struct _TlRunner TlRunner;

/* Starts the worker, which creates the job with factory(ctx, factory_data) and then
 * waits (paused) unless `run`. `frame_func` runs on the calling thread's main context
 * until tl_runner_free. total_sub_iterations 0 = no limit. */
TlRunner *tl_runner_new(TlContext *ctx, TlJobFactory factory, gpointer factory_data,
                        GDestroyNotify factory_free, const TlViewRequest *view,
                        guint total_sub_iterations, gboolean run, TlFrameFunc frame_func,
                        gpointer user_data);
/* Stops after the current submission and joins the worker; no frame arrives after. */
void tl_runner_free(TlRunner *r);
/* The same without waiting: no frame arrives after, the worker ends (and frees its job)
 * on its own once the device work under way returns; tl_runner_free joins it later. */
void tl_runner_retire(TlRunner *r);
gboolean tl_runner_exited(TlRunner *r);

/* A reference that keeps the device lock valid after tl_runner_free (for a worker outside the
 * runner); tl_runner_unref drops it. */
TlRunner *tl_runner_ref(TlRunner *r);
void tl_runner_unref(TlRunner *r);
/* Held by the run's worker for a whole sub-iteration: whoever takes it (e.g. to install an
 * edited kernel) acts between two sub-iterations, running or paused. */
void tl_runner_lock_device(TlRunner *r);
void tl_runner_unlock_device(TlRunner *r);
/* With the device lock held: whether an edit of built-in kernel `name` changes the run's next
 * sub-iterations (TlJobVTable.check_kernel; TRUE without a job or where it does not say). */
gboolean tl_runner_check_kernel_locked(TlRunner *r, const char *name, GError **error);
/* With the device lock held: the next sub-iteration is the first with something new (an edited
 * kernel), and the convergence plot marks it as steering changes are. */
void tl_runner_mark_change(TlRunner *r);
/* The run's current image, read back between two sub-iterations (blocks for up to one: call
 * on a worker). GError before the job exists. */
TlImage *tl_runner_read_image(TlRunner *r, GError **error);
/* The job's model of the expected counts (TlJobVTable.get_model: the iterate, the corrections,
 * the additive term's sum), taken between two sub-iterations like tl_runner_read_image. GError
 * before the job exists or for a job without one (CT, an image). */
gboolean tl_runner_read_model(TlRunner *r, TlJobModel *model, GError **error);
/* The long step under way on the worker (a sensitivity image, SSS; tl-progress.h): TRUE and
 * its last report (what copied into `what`) while one is, else FALSE. tl_runner_stop cancels
 * it: a run stopped while its job was made ends Stopped. */
gboolean tl_runner_get_progress(TlRunner *r, TlProgressReport *report, char *what, gsize size);
void tl_runner_run(TlRunner *r);
void tl_runner_pause(TlRunner *r);
void tl_runner_step(TlRunner *r);     /* one sub-iteration, then paused */
void tl_runner_stop(TlRunner *r);     /* the last complete image stays */
void tl_runner_set_view(TlRunner *r, const TlViewRequest *view);
void tl_runner_set_total(TlRunner *r, guint total_sub_iterations);
/* A new prior (name "" or NULL = none), beta and gamma for the job's next sub-iteration
 * (penalised algorithms; others ignore it). */
void tl_runner_set_prior(TlRunner *r, const char *prior, double beta, double gamma);
/* ROIs (copied; n 0 = none) and the NEMA layout (copied; NULL = none) measured on the worker
 * after every sub-iteration; the next frame answers with their statistics. */
void tl_runner_set_analysis(TlRunner *r, const TlRoi *rois, guint n, const TlNemaLayout *nema);
/* A host copy of the image shown (frame->snapshot) between two sub-iterations. */
void tl_runner_snapshot(TlRunner *r);
/* Steering: before the next sub-iteration the job is replaced by factory(ctx, data) started
 * from the current iterate (TlJobVTable.set_image); the sub-iteration count goes on. The
 * runner owns `data` from now (free is called on it). A job without get_iterate/set_image
 * fails the run with a message. */
void tl_runner_rebuild(TlRunner *r, TlJobFactory factory, gpointer data, GDestroyNotify free);
/* Writes the current image (NIfTI, atomic) between two sub-iterations; a frame with
 * `saved` or `save_error` answers. */
void tl_runner_save(TlRunner *r, const char *path);

G_END_DECLS
