/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProgress: a thread's current progress, its outermost step, rate-limited reports. */
#include "tl-progress.h"
#include <math.h>

/* Extrapolating from less than this is more noise than estimate (a first submission that
 * waited for the pipeline to compile, a file's header read). */
#define TL_PROGRESS_MIN_ESTIMATE_S 0.5

struct _TlProgress {
  TlProgressFunc func;
  gpointer user_data;
  GCancellable *cancel;
  gint64 interval_us;
  TlProgress *outer; /* the thread's progress before this one was pushed */
  GMutex lock;       /* the step below: worker threads of a step add to it */
  GMutex call_lock;  /* one callback at a time (the worker's and the heartbeat's) */
  guint depth;       /* steps begun and not ended; only depth 1 reports */
  char *what;
  gboolean device;
  double total, done;
  gint64 start_us, last_us;
  /* the rate is measured from the first report with work done: a step's set-up (a pipeline
   * compiled, a pair list made) would otherwise stretch every early estimate */
  gint64 first_us;
  double first_fraction;
  /* the heartbeat: a report every interval while the step runs, even when no work is counted
   * (a long submission, a pipeline being compiled), so nothing waits silently */
  GCond cond;
  GThread *ticker;
  gboolean ticking;
};

static _Thread_local TlProgress *current;

TlProgress *tl_progress_new(TlProgressFunc func, gpointer user_data, GCancellable *cancel) {
  TlProgress *p = g_new0(TlProgress, 1);
  p->func = func;
  p->user_data = user_data;
  p->cancel = cancel ? g_object_ref(cancel) : NULL;
  p->interval_us = 250000;
  g_mutex_init(&p->lock);
  g_mutex_init(&p->call_lock);
  g_cond_init(&p->cond);
  return p;
}

void tl_progress_free(TlProgress *p) {
  if (!p) return;
  g_clear_object(&p->cancel);
  g_free(p->what);
  g_mutex_clear(&p->lock);
  g_mutex_clear(&p->call_lock);
  g_cond_clear(&p->cond);
  g_free(p);
}

void tl_progress_set_interval(TlProgress *p, double seconds) {
  p->interval_us = (gint64)(MAX(seconds, 0) * 1e6);
}

void tl_progress_push(TlProgress *p) {
  p->outer = current;
  current = p;
}

void tl_progress_pop(TlProgress *p) {
  g_return_if_fail(current == p);
  current = p->outer;
  p->outer = NULL;
}

TlProgress *tl_progress_current(void) { return current; }

/* With p->lock held: the report now, or FALSE when it is not due. */
static gboolean make_report(TlProgress *p, gboolean force, gboolean done, TlProgressReport *r) {
  gint64 now = g_get_monotonic_time();
  if (!force && now - p->last_us < p->interval_us) return FALSE;
  p->last_us = now;
  r->what = p->what;
  r->elapsed_s = (now - p->start_us) * 1e-6;
  r->fraction = p->total > 0 ? CLAMP(p->done / p->total, 0.0, 1.0) : -1;
  if (done && r->fraction < 0) r->fraction = 1;
  r->done = done;
  r->remaining_s = -1;
  if (r->fraction > 0 && p->first_us == 0) {
    p->first_us = now;
    p->first_fraction = r->fraction;
  }
  double since = (now - p->first_us) * 1e-6;
  if (done)
    r->remaining_s = 0;
  else if (p->first_us && r->fraction > p->first_fraction && since >= TL_PROGRESS_MIN_ESTIMATE_S)
    r->remaining_s = since * (1 - r->fraction) / (r->fraction - p->first_fraction);
  return TRUE;
}

/* Reports outside the lock: the callback may take the UI's locks. `what` is copied first. */
static void emit(TlProgress *p, gboolean force, gboolean done) {
  TlProgressReport r;
  g_mutex_lock(&p->lock);
  gboolean due = p->depth == 1 && make_report(p, force, done, &r);
  char what[128];
  if (due) g_strlcpy(what, p->what ? p->what : "", sizeof what);
  g_mutex_unlock(&p->lock);
  if (!due || !p->func) return;
  r.what = what;
  g_mutex_lock(&p->call_lock);
  p->func(&r, p->user_data);
  g_mutex_unlock(&p->call_lock);
}

static gpointer tick(gpointer data) {
  TlProgress *p = data;
  g_mutex_lock(&p->lock);
  while (p->ticking) {
    g_cond_wait_until(&p->cond, &p->lock, g_get_monotonic_time() + MAX(p->interval_us, 50000));
    if (!p->ticking) break;
    g_mutex_unlock(&p->lock);
    emit(p, FALSE, FALSE);
    g_mutex_lock(&p->lock);
  }
  g_mutex_unlock(&p->lock);
  return NULL;
}

static void begin(const char *what, double total, gboolean device) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  gboolean outermost = p->depth++ == 0;
  if (outermost) {
    g_free(p->what);
    p->what = g_strdup(what);
    p->device = device;
    p->total = total;
    p->done = 0;
    p->start_us = g_get_monotonic_time();
    p->first_us = 0;
    p->ticking = p->func && p->interval_us > 0;
  }
  g_mutex_unlock(&p->lock);
  if (outermost && p->ticking) p->ticker = g_thread_new("tl-progress", tick, p);
  /* the first report at once: nothing waits silently */
  if (outermost) emit(p, TRUE, FALSE);
}

void tl_progress_begin(const char *what, double total) { begin(what, total, FALSE); }
void tl_progress_begin_device(const char *what) { begin(what, 0, TRUE); }

void tl_progress_set_total(double total) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  if (p->depth == 1) p->total = total;
  g_mutex_unlock(&p->lock);
}

void tl_progress_phase(const char *what, double total) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  gboolean outermost = p->depth == 1;
  if (outermost) {
    g_free(p->what);
    p->what = g_strdup(what);
    p->total = total;
    p->done = 0;
    p->first_us = 0;
  }
  g_mutex_unlock(&p->lock);
  if (outermost) emit(p, TRUE, FALSE);
}

void tl_progress_set_done(double done) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  if (p->depth == 1) p->done = done;
  g_mutex_unlock(&p->lock);
  emit(p, FALSE, FALSE);
}

void tl_progress_add_to(TlProgress *p, double amount) {
  if (!p) return;
  g_mutex_lock(&p->lock);
  if (p->depth == 1) p->done += amount;
  g_mutex_unlock(&p->lock);
  emit(p, FALSE, FALSE);
}

void tl_progress_device_work(double cost) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  gboolean counted = p->depth == 1 && p->device;
  if (counted) p->done += cost;
  g_mutex_unlock(&p->lock);
  if (counted) emit(p, FALSE, FALSE);
}

void tl_progress_end(void) {
  TlProgress *p = current;
  if (!p) return;
  g_mutex_lock(&p->lock);
  guint depth = p->depth;
  g_mutex_unlock(&p->lock);
  g_return_if_fail(depth > 0);
  if (depth == 1 && p->ticker) { /* the heartbeat stops before the last report */
    g_mutex_lock(&p->lock);
    p->ticking = FALSE;
    g_cond_signal(&p->cond);
    g_mutex_unlock(&p->lock);
    g_thread_join(g_steal_pointer(&p->ticker));
  }
  if (depth == 1) emit(p, TRUE, TRUE);
  g_mutex_lock(&p->lock);
  p->depth--;
  g_mutex_unlock(&p->lock);
}

GCancellable *tl_progress_cancellable(void) { return current ? current->cancel : NULL; }

gboolean tl_progress_cancelled(void) {
  return current && current->cancel && g_cancellable_is_cancelled(current->cancel);
}

gboolean tl_progress_check(const char *what, GError **error) {
  if (!tl_progress_cancelled()) return TRUE;
  g_set_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "%s: cancelled", what);
  return FALSE;
}

static void append_duration(GString *s, double t) {
  if (t < 100)
    g_string_append_printf(s, "%.0f s", t);
  else if (t < 6000)
    g_string_append_printf(s, "%.0f min %02.0f s", floor(t / 60), fmod(floor(t), 60));
  else
    g_string_append_printf(s, "%.1f h", t / 3600);
}

char *tl_progress_format(const TlProgressReport *r) {
  GString *s = g_string_new(NULL);
  if (r->fraction >= 0) g_string_append_printf(s, "%.0f %% · ", floor(100 * r->fraction));
  append_duration(s, r->elapsed_s);
  if (r->done) {
    /* a step that failed or was cancelled ends short of its total */
    g_string_append(s, r->fraction >= 0 && r->fraction < 1 ? " · stopped" : " · done");
  } else if (r->remaining_s >= 0) {
    g_string_append(s, " · about ");
    append_duration(s, r->remaining_s);
    g_string_append(s, " left");
  }
  return g_string_free(s, FALSE);
}
