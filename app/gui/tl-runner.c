/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The worker loop: wait for a request, do one sub-iteration at a time, read back the
 * displayed slices, post a frame. The lock guards the request fields only; the job is
 * touched by the worker alone. */
#include <math.h>
#include <string.h>
#include "tl-background.h"
#include "tl-runner.h"
#include "dataset/tl-formats.h"
#include "tl-progress.h"

struct _TlRunner {
  GThread *thread;
  GMutex lock;
  GCond cond;
  GMutex device_lock;       /* held by the worker while it uses the job */
  GMainContext *main;
  GCancellable *cancel;     /* stop / free: ends the current sub-iteration early */
  TlContext *ctx;
  TlJobFactory factory;
  gpointer factory_data;
  GDestroyNotify factory_free;
  TlFrameFunc frame_func;
  gpointer user_data;
  gint alive;               /* 0 once retired: frames still queued are dropped */
  gint exited;              /* the worker returned (its job is freed) */
  gint refs;                /* the owner + one per queued frame */
  char *save_path;          /* request: write the current image here (under lock) */

  /* Requests (under lock) */
  gboolean running, quit, stop;
  gboolean failed;          /* a step or read-back failed: nothing more runs */
  guint steps;
  guint total;
  TlViewRequest view;
  gboolean view_dirty;
  char prior[16];           /* request: a new prior for the job's next step */
  double beta, gamma;
  gboolean prior_dirty;
  TlRoi *rois;              /* request: the ROIs measured (n_rois) */
  guint n_rois;
  TlNemaLayout *nema;       /* request: the NEMA layout, NULL none */
  gboolean analysis_dirty;
  gboolean snapshot;        /* request: a host copy of the image */
  TlJobFactory rebuild;     /* request: a new job from the current iterate */
  gpointer rebuild_data;
  GDestroyNotify rebuild_free;

  TlJob *job;               /* worker only */
  guint done;               /* sub-iterations done (worker) */
  guint offset;             /* sub-iterations done before the job was last rebuilt (worker) */
  gboolean changed;         /* settings changed since the last step (worker) */

  /* The library's long steps on the worker (sensitivity images, SSS; tl-progress.h): the
   * last report, read by the window's progress bar (tl_runner_get_progress). Its own lock:
   * the report comes from inside the job's calls. */
  TlProgress *progress;     /* pushed on the worker around the job's creation and steps */
  GMutex progress_lock;
  TlProgressReport report;
  char report_what[128];
  gboolean report_active;   /* a step is under way (its last report not yet "done") */
};

typedef struct {
  TlRunner *runner;
  TlFrame *frame;
} Delivery;

void tl_frame_free(TlFrame *f) {
  if (!f)
    return;
  tl_job_step_clear(&f->step);
  for (int i = 0; i < TL_N_VIEWS; i++)
    g_free(f->slices[i].data);
  g_clear_error(&f->error);
  g_free(f->saved);
  g_clear_error(&f->save_error);
  if (f->roi_stats)
    g_array_unref(f->roi_stats);
  g_clear_pointer(&f->snapshot, tl_image_free);
  g_free(f);
}

static void runner_unref(TlRunner *r) {
  if (!g_atomic_int_dec_and_test(&r->refs))
    return;
  g_mutex_clear(&r->device_lock); /* here: tl_runner_lock_device callers hold references */
  g_main_context_unref(r->main);
  g_free(r);
}

TlRunner *tl_runner_ref(TlRunner *r) {
  g_atomic_int_inc(&r->refs);
  return r;
}

void tl_runner_unref(TlRunner *r) { runner_unref(r); }
void tl_runner_lock_device(TlRunner *r) { g_mutex_lock(&r->device_lock); }

TlImage *tl_runner_read_image(TlRunner *r, GError **error) {
  g_mutex_lock(&r->device_lock);
  TlImage *im = NULL;
  if (!r->job) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "The run has no image yet");
  } else {
    im = tl_image_new(&r->job->grid);
    tl_image_set_unit(im, r->job->unit);
    if (!tl_array_download(r->job->vt->image(r->job), im->data, error))
      g_clear_pointer(&im, tl_image_free);
  }
  g_mutex_unlock(&r->device_lock);
  return im;
}

gboolean tl_runner_read_model(TlRunner *r, TlJobModel *model, GError **error) {
  *model = (TlJobModel){0};
  g_mutex_lock(&r->device_lock);
  gboolean ok = FALSE;
  if (!r->job)
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "The run has no image yet");
  else if (!r->job->vt->get_model)
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "This run has no model of PET counts");
  else
    ok = r->job->vt->get_model(r->job, model, error);
  g_mutex_unlock(&r->device_lock);
  return ok;
}
void tl_runner_unlock_device(TlRunner *r) { g_mutex_unlock(&r->device_lock); }

gboolean tl_runner_check_kernel_locked(TlRunner *r, const char *name, GError **error) {
  return !r->job || !r->job->vt->check_kernel || r->job->vt->check_kernel(r->job, name, error);
}

/* Under the device lock, so it is the next sub-iteration's: the worker reads `changed` only
 * while it holds the lock. */
void tl_runner_mark_change(TlRunner *r) { r->changed = TRUE; }

/* Each queued frame holds a reference: after tl_runner_free it is dropped unseen. */
static gboolean deliver(gpointer data) {
  Delivery *d = data;
  if (g_atomic_int_get(&d->runner->alive))
    d->runner->frame_func(d->frame, d->runner->user_data);
  return G_SOURCE_REMOVE;
}

static void delivery_free(gpointer data) {
  Delivery *d = data;
  tl_frame_free(d->frame);
  runner_unref(d->runner);
  g_free(d);
}

static void post(TlRunner *r, TlFrame *f) {
  Delivery *d = g_new(Delivery, 1);
  g_atomic_int_inc(&r->refs);
  *d = (Delivery){r, f};
  /* Below GDK_PRIORITY_REDRAW: a burst of frames never delays drawing the screen. Always an
   * idle source on the window's context, never g_main_context_invoke: that calls `deliver`
   * on this worker thread whenever it can acquire the context, i.e. whenever the main thread
   * is not inside the main loop at that moment (a test driving the window, a long handler),
   * and the window's frame handler then ran beside the main thread (a SIGSEGV of the lessons
   * test under ASan: `self->dataset` read on the worker while the main thread swapped it). */
  GSource *src = g_idle_source_new();
  g_source_set_priority(src, G_PRIORITY_DEFAULT_IDLE);
  g_source_set_callback(src, deliver, d, delivery_free);
  g_source_attach(src, r->main);
  g_source_unref(src);
}

static void post_state(TlRunner *r, TlRunState state, GError *error) {
  TlFrame *f = g_new0(TlFrame, 1);
  f->state = state;
  f->error = error;
  post(r, f);
}

static float *read_range(const TlArray *a, guint64 first, guint64 n, GError **error) {
  float *buf = g_new(float, n);
  if (!tl_array_download_range(a, first, n, buf, error)) {
    g_free(buf);
    return NULL;
  }
  return buf;
}

/* Reads only what the views show: one range for the axial slice, one row per z for the
 * coronal one; the sagittal slice and the MIP come from the whole volume only when the
 * MIP is shown, else from the z-slabs spanning the sagittal column. */
static gboolean read_slices(const TlJob *job, const TlViewRequest *v, gboolean want_volume, TlFrame *f,
                            float **volume, GError **error) {
  const TlArray *img = job->vt->image((TlJob *)job);
  const guint nx = job->grid.dims[0], ny = job->grid.dims[1], nz = job->grid.dims[2];
  const guint x = MIN(v->pos[0], nx - 1), y = MIN(v->pos[1], ny - 1), z = MIN(v->pos[2], nz - 1);
  const guint64 plane = (guint64)nx * ny;
  TlSlice *ax = &f->slices[TL_VIEW_AXIAL], *co = &f->slices[TL_VIEW_CORONAL];
  TlSlice *sa = &f->slices[TL_VIEW_SAGITTAL], *mip = &f->slices[TL_VIEW_MIP];
  g_autofree float *vol = NULL;
  if ((v->mip || want_volume) && !(vol = read_range(img, 0, plane * nz, error)))
    return FALSE;

  /* Axial: x to the right, y downwards (image rows). */
  *ax = (TlSlice){nx, ny, vol ? g_memdup2(vol + z * plane, plane * sizeof(float))
                              : read_range(img, z * plane, plane, error)};
  if (!ax->data)
    return FALSE;
  /* Coronal and sagittal: z upwards. */
  *co = (TlSlice){nx, nz, g_new(float, (gsize)nx * nz)};
  *sa = (TlSlice){ny, nz, g_new(float, (gsize)ny * nz)};
  g_autofree float *column = vol ? NULL : g_new(float, (gsize)(ny - 1) * nx + 1);
  for (guint k = 0; k < nz; k++) {
    float *co_row = co->data + (gsize)(nz - 1 - k) * nx;
    float *sa_row = sa->data + (gsize)(nz - 1 - k) * ny;
    const float *slab = vol ? vol + k * plane : NULL;
    if (!slab) {
      if (!tl_array_download_range(img, k * plane + (guint64)y * nx, nx, co_row, error) ||
          !tl_array_download_range(img, k * plane + x, (guint64)(ny - 1) * nx + 1, column, error))
        return FALSE;
      for (guint j = 0; j < ny; j++)
        sa_row[j] = column[(gsize)j * nx];
    } else {
      memcpy(co_row, slab + (gsize)y * nx, nx * sizeof(float));
      for (guint j = 0; j < ny; j++)
        sa_row[j] = slab[x + (gsize)j * nx];
    }
  }
  if (vol && v->mip) {
    /* Coronal MIP (maximum along y), z upwards. */
    *mip = (TlSlice){nx, nz, g_new(float, (gsize)nx * nz)};
    for (guint k = 0; k < nz; k++) {
      float *row = mip->data + (gsize)(nz - 1 - k) * nx;
      for (guint i = 0; i < nx; i++) {
        float m = -INFINITY;
        for (guint j = 0; j < ny; j++)
          m = MAX(m, vol[k * plane + (gsize)j * nx + i]);
        row[i] = m;
      }
    }
  }
  f->view = *v;
  g_strlcpy(f->unit, job->unit, sizeof f->unit);
  if (volume)
    *volume = g_steal_pointer(&vol);
  return TRUE;
}

/* ROI statistics and the NEMA analysis of the volume just read (on the worker: a large
 * image takes milliseconds the window's frame clock must not pay). */
static void analyse(const TlJob *job, float *vol, const TlRoi *rois, guint n, const TlNemaLayout *nema,
                    TlFrame *f) {
  TlImage im = {job->grid, vol};
  f->roi_stats = g_array_sized_new(FALSE, TRUE, sizeof(TlRoiStats), n);
  g_array_set_size(f->roi_stats, n);
  for (guint i = 0; i < n; i++)
    tl_roi_stats(&rois[i], &im, &g_array_index(f->roi_stats, TlRoiStats, i));
  if (nema && tl_image_grid_equal(&nema->grid, &job->grid)) {
    tl_nema_analyse(nema, &im, &f->nema);
    f->has_nema = TRUE;
  }
}

/* The current iterate into a new job made by the factory; the old job goes. */
static gboolean rebuild_job(TlRunner *r, TlJobFactory factory, gpointer data, GError **error) {
  if (!r->job->vt->get_iterate) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                "This reconstruction cannot take new settings while it runs; restart it");
    return FALSE;
  }
  g_autoptr(TlImage) im = r->job->vt->get_iterate(r->job, error);
  if (!im)
    return FALSE;
  /* Device memory of the old job goes back before the new one (with new subsets its
   * sensitivity images) is made. */
  g_clear_pointer(&r->job, tl_job_free);
  r->job = factory(r->ctx, data, error);
  if (!r->job)
    return FALSE;
  if (!r->job->vt->set_image) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "The new reconstruction cannot start from an image");
    return FALSE;
  }
  if (!r->job->vt->set_image(r->job, im, error))
    return FALSE;
  r->offset = r->done;
  return TRUE;
}

static TlRunState idle_state(TlRunner *r) {
  if (r->failed)
    return TL_RUN_FAILED;
  if (r->stop)
    return TL_RUN_STOPPED;
  if (r->total && r->done >= r->total)
    return TL_RUN_FINISHED;
  return r->running ? TL_RUN_RUNNING : TL_RUN_PAUSED;
}

/* In the format the name's extension asks for (compute/tl-formats.h); every format's save
 * is atomic (temp file + rename). */
static void save_image(TlRunner *r, char *path) {
  TlFrame *f = g_new0(TlFrame, 1);
  GError *error = NULL;
  g_mutex_lock(&r->device_lock);
  g_autoptr(TlImage) im = r->job ? tl_image_new(&r->job->grid) : NULL;
  if (im) tl_image_set_unit(im, r->job->unit); /* NIfTI keeps it in descrip */
  gboolean ok = im && tl_array_download(r->job->vt->image(r->job), im->data, &error);
  if (!im)
    g_set_error(&error, G_IO_ERROR, G_IO_ERROR_FAILED, "No image: the reconstruction failed");
  g_mutex_unlock(&r->device_lock);
  const TlFormatClass *format = ok ? tl_format_for_output(path, TL_DATA_IMAGE, NULL, &error) : NULL;
  ok = format && tl_format_save(format, im, path, &error);
  g_mutex_lock(&r->lock);
  f->state = idle_state(r);
  g_mutex_unlock(&r->lock);
  f->saved = path;
  f->save_error = error;
  post(r, f);
}

static void on_progress(const TlProgressReport *report, gpointer data) {
  TlRunner *r = data;
  g_mutex_lock(&r->progress_lock);
  r->report = *report;
  g_strlcpy(r->report_what, report->what, sizeof r->report_what);
  r->report.what = r->report_what;
  r->report_active = !report->done;
  g_mutex_unlock(&r->progress_lock);
}

gboolean tl_runner_get_progress(TlRunner *r, TlProgressReport *report, char *what, gsize size) {
  g_mutex_lock(&r->progress_lock);
  gboolean active = r->report_active;
  if (active) {
    *report = r->report;
    g_strlcpy(what, r->report_what, size);
    report->what = what;
  }
  g_mutex_unlock(&r->progress_lock);
  return active;
}

static gpointer worker(gpointer data) {
  TlRunner *r = data;
  GError *error = NULL;
  tl_background_lower_priority();
  g_mutex_lock(&r->device_lock);
  tl_progress_push(r->progress);
  r->job = r->factory(r->ctx, r->factory_data, &error);
  tl_progress_pop(r->progress);
  g_mutex_unlock(&r->device_lock);
  on_progress(&(TlProgressReport){"", 1, 0, 0, TRUE}, r); /* a failed step ends no report */
  /* Cancel on the progress bar (tl_runner_stop) while the job was made: stopped, no error */
  if (!r->job && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_clear_error(&error);
    post_state(r, TL_RUN_STOPPED, NULL);
    g_atomic_int_set(&r->exited, 1);
    return NULL;
  }
  if (!r->job) {
    post_state(r, TL_RUN_FAILED, error);
    g_atomic_int_set(&r->exited, 1);
    return NULL;
  }
  g_mutex_lock(&r->lock);
  r->view_dirty = TRUE;
  TlRunState last_state = TL_RUN_PREPARING;
  for (;;) {
    gboolean work = !r->quit && !r->stop && !r->failed && (r->running || r->steps > 0) &&
                    !(r->total && r->done >= r->total);
    TlRunState state = idle_state(r);
    if (!work && !r->view_dirty && !r->prior_dirty && state == last_state && !r->quit &&
        !r->save_path && !r->analysis_dirty && !r->snapshot && !r->rebuild) {
      g_cond_wait(&r->cond, &r->lock);
      continue;
    }
    if (r->quit)
      break;
    char *save_path = g_steal_pointer(&r->save_path);
    if (save_path) {
      g_mutex_unlock(&r->lock);
      save_image(r, save_path);
      g_mutex_lock(&r->lock);
      continue;
    }
    gboolean do_step = work;
    if (do_step && r->steps > 0)
      r->steps--;
    TlViewRequest view = r->view;
    r->view_dirty = FALSE;
    /* The analysis runs after a new sub-iteration or new ROIs, on a copy of the request. */
    gboolean analysis = (r->n_rois > 0 || r->nema) && (do_step || r->analysis_dirty);
    g_autofree TlRoi *rois = analysis ? g_memdup2(r->rois, r->n_rois * sizeof(TlRoi)) : NULL;
    guint n_rois = r->n_rois;
    g_autofree TlNemaLayout *nema = analysis && r->nema ? g_memdup2(r->nema, sizeof *r->nema) : NULL;
    gboolean cleared = r->analysis_dirty && r->n_rois == 0;
    r->analysis_dirty = FALSE;
    gboolean snapshot = r->snapshot;
    r->snapshot = FALSE;
    TlJobFactory rebuild = r->rebuild;
    gpointer rebuild_data = r->rebuild_data;
    GDestroyNotify rebuild_free = r->rebuild_free;
    r->rebuild = NULL;
    gboolean new_prior = r->prior_dirty;
    char prior[16];
    double beta = r->beta, gamma = r->gamma;
    memcpy(prior, r->prior, sizeof prior);
    r->prior_dirty = FALSE;
    g_mutex_unlock(&r->lock);

    TlFrame *f = g_new0(TlFrame, 1);
    g_mutex_lock(&r->device_lock);
    if (!r->job) {  /* a failed rebuild left none: the failure was reported */
      g_mutex_unlock(&r->device_lock);
      if (rebuild && rebuild_free)
        rebuild_free(rebuild_data);
      tl_frame_free(f);
      g_mutex_lock(&r->lock);
      continue;
    }
    gboolean ok = TRUE;
    /* New settings while running or paused: the next sub-iteration runs a job made with
     * them from the current image (the old factory data goes with the old job). */
    if (rebuild) {
      tl_progress_push(r->progress); /* new subsets: new sensitivity images */
      ok = rebuild_job(r, rebuild, rebuild_data, &error);
      tl_progress_pop(r->progress);
      if (r->factory_free)
        r->factory_free(r->factory_data);
      r->factory = rebuild;
      r->factory_data = rebuild_data;
      r->factory_free = rebuild_free;
      r->changed = TRUE;
      /* the new job's prior is the one its options name */
    }
    /* a prior changed while running or paused: the next sub-iteration uses it */
    if (ok && new_prior && r->job->vt->set_prior) {
      ok = r->job->vt->set_prior(r->job, prior, beta, gamma, &error);
      r->changed = TRUE;
    }
    if (ok && do_step) {
      tl_progress_push(r->progress); /* a scatter round (SSS) reports from inside a step */
      ok = r->job->vt->step(r->job, r->cancel, &f->step, &error);
      tl_progress_pop(r->progress);
      if (ok) {
        f->has_step = TRUE;
        f->step.sub_iterations += r->offset;
        r->done = f->step.sub_iterations;
        f->changed = r->changed;
        r->changed = FALSE;
      }
    }
    on_progress(&(TlProgressReport){"", 1, 0, 0, TRUE}, r);
    /* Cancelled: nothing new to show, the last complete image is already on screen. */
    gboolean cancelled = !ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_autofree float *vol = NULL;
    if (ok)
      ok = read_slices(r->job, &view, analysis || snapshot, f, analysis || snapshot ? &vol : NULL, &error);
    if (ok && analysis)
      analyse(r->job, vol, rois, n_rois, nema, f);
    else if (ok && cleared)
      f->roi_stats = g_array_new(FALSE, TRUE, sizeof(TlRoiStats));  /* none left */
    if (ok && snapshot) {
      f->snapshot = g_new0(TlImage, 1);
      *f->snapshot = (TlImage){r->job->grid, g_steal_pointer(&vol)};
      tl_image_set_unit(f->snapshot, r->job->unit);
    }
    g_mutex_unlock(&r->device_lock);

    g_mutex_lock(&r->lock);
    if (cancelled) {
      g_clear_error(&error);
      tl_frame_free(f);
      continue;
    }
    if (!ok) {
      r->running = FALSE;
      r->steps = 0;
      r->failed = TRUE;
      f->state = TL_RUN_FAILED;
      f->error = g_steal_pointer(&error);
      last_state = TL_RUN_FAILED;
      post(r, f);
      continue;
    }
    /* Finished: raising the iterations later leaves the run paused, not running. */
    if (r->total && r->done >= r->total)
      r->running = FALSE;
    f->state = last_state = idle_state(r);
    post(r, f);
  }
  g_mutex_unlock(&r->lock);
  /* Device memory goes back as soon as the runner is retired, not when it is joined. */
  g_mutex_lock(&r->device_lock);
  g_clear_pointer(&r->job, tl_job_free);
  g_mutex_unlock(&r->device_lock);
  g_atomic_int_set(&r->exited, 1);
  return NULL;
}

TlRunner *tl_runner_new(TlContext *ctx, TlJobFactory factory, gpointer factory_data,
                        GDestroyNotify factory_free, const TlViewRequest *view,
                        guint total_sub_iterations, gboolean run, TlFrameFunc frame_func,
                        gpointer user_data) {
  TlRunner *r = g_new0(TlRunner, 1);
  g_mutex_init(&r->lock);
  g_cond_init(&r->cond);
  g_mutex_init(&r->device_lock);
  r->main = g_main_context_ref_thread_default();
  r->cancel = g_cancellable_new();
  g_mutex_init(&r->progress_lock);
  r->progress = tl_progress_new(on_progress, r, r->cancel);
  r->ctx = ctx;
  r->factory = factory;
  r->factory_data = factory_data;
  r->factory_free = factory_free;
  r->frame_func = frame_func;
  r->user_data = user_data;
  r->alive = 1;
  r->refs = 1;
  r->view = *view;
  r->total = total_sub_iterations;
  r->running = run;
  r->thread = g_thread_new("tl-runner", worker, r);
  return r;
}

void tl_runner_retire(TlRunner *r) {
  g_atomic_int_set(&r->alive, 0);
  g_mutex_lock(&r->lock);
  r->quit = TRUE;
  g_cond_signal(&r->cond);
  g_mutex_unlock(&r->lock);
  g_cancellable_cancel(r->cancel);
}

gboolean tl_runner_exited(TlRunner *r) {
  return g_atomic_int_get(&r->exited);
}

void tl_runner_free(TlRunner *r) {
  if (!r)
    return;
  tl_runner_retire(r);
  g_thread_join(r->thread);
  if (r->factory_free)
    r->factory_free(r->factory_data);
  g_object_unref(r->cancel);
  tl_progress_free(r->progress);
  g_mutex_clear(&r->progress_lock);
  g_mutex_clear(&r->lock);
  g_cond_clear(&r->cond);
  g_free(r->save_path);
  g_free(r->rois);
  g_free(r->nema);
  if (r->rebuild && r->rebuild_free)
    r->rebuild_free(r->rebuild_data);
  runner_unref(r);
}

#define REQUEST(r, body)             \
  do {                               \
    g_mutex_lock(&(r)->lock);        \
    body;                            \
    g_cond_signal(&(r)->cond);       \
    g_mutex_unlock(&(r)->lock);      \
  } while (0)

void tl_runner_run(TlRunner *r) { REQUEST(r, r->running = TRUE); }
void tl_runner_pause(TlRunner *r) { REQUEST(r, r->running = FALSE; r->steps = 0); }
void tl_runner_step(TlRunner *r) { REQUEST(r, r->running = FALSE; r->steps++); }
void tl_runner_set_total(TlRunner *r, guint total) { REQUEST(r, r->total = total); }

void tl_runner_set_prior(TlRunner *r, const char *prior, double beta, double gamma) {
  REQUEST(r, g_strlcpy(r->prior, prior ? prior : "", sizeof r->prior); r->beta = beta;
          r->gamma = gamma; r->prior_dirty = TRUE);
}

void tl_runner_stop(TlRunner *r) {
  REQUEST(r, r->stop = TRUE; r->running = FALSE; r->steps = 0);
  g_cancellable_cancel(r->cancel);
}

void tl_runner_set_view(TlRunner *r, const TlViewRequest *view) {
  REQUEST(r, r->view = *view; r->view_dirty = TRUE);
}

void tl_runner_save(TlRunner *r, const char *path) {
  REQUEST(r, g_free(r->save_path); r->save_path = g_strdup(path));
}

void tl_runner_set_analysis(TlRunner *r, const TlRoi *rois, guint n, const TlNemaLayout *nema) {
  REQUEST(r, g_free(r->rois); r->rois = n ? g_memdup2(rois, n * sizeof *rois) : NULL; r->n_rois = n;
          g_free(r->nema); r->nema = nema ? g_memdup2(nema, sizeof *nema) : NULL;
          r->analysis_dirty = TRUE);
}

void tl_runner_snapshot(TlRunner *r) { REQUEST(r, r->snapshot = TRUE); }

void tl_runner_rebuild(TlRunner *r, TlJobFactory factory, gpointer data, GDestroyNotify free) {
  REQUEST(r, if (r->rebuild && r->rebuild_free) r->rebuild_free(r->rebuild_data);
          r->rebuild = factory; r->rebuild_data = data; r->rebuild_free = free);
}
