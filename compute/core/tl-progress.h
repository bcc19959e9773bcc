/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProgress: the one progress / cancel callback of the library's long steps (sensitivity
 * images, scatter estimation, large file loads, conversions), so every door - the window's
 * progress bar, the CLI's stderr line, Python - gets the same reports.
 *
 * A front end makes a TlProgress with its callback and cancellable and pushes it as the calling
 * thread's current one (as GLib's thread-default main context): the long steps lie deep under
 * APIs of several layers (a dataset opening the mMR reader, a reconstruction making its
 * sensitivity images), and a thread-default reaches them without a progress argument in every
 * signature between. Without one pushed, every call below is a no-op that costs a thread-local
 * read.
 *
 * A step reports its work done against a total (any unit: bytes, pairs, device cost); the
 * report has the fraction, the elapsed time and the remaining time extrapolated linearly from
 * the rate since the first report with work done (t (1 - f) / (f - f1), once 0.5 s have passed
 * since: a step's set-up, a pipeline compiled, is not taken for its pace). Only the outermost
 * step of a thread reports: a step inside another (a conversion loading its input) adds
 * nothing to it. Reports are rate-limited (every 0.25 s by default), except a step's first
 * and last; while a step runs a heartbeat thread reports every interval even when no work is
 * counted (a long submission), so nothing waits silently.
 *
 * Device work: a step begun with tl_progress_begin_device counts the cost of every submission
 * of the thread's streams as it completes (tl-stream.c calls tl_progress_device_work), so a
 * step that records big dispatches need only say its total cost. */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  const char *what;   /* the step ("sensitivity image", "reading list mode") */
  double fraction;    /* of the step done, 0..1; < 0 while the total is unknown */
  double elapsed_s;   /* since the step began */
  double remaining_s; /* extrapolated; < 0 until it can be */
  gboolean done;      /* the step's last report (fraction 1 unless it failed) */
} TlProgressReport;

/* Called on the thread doing the work or on the progress's heartbeat thread, one call at a
 * time: marshal to the UI yourself. */
typedef void (*TlProgressFunc)(const TlProgressReport *report, gpointer user_data);

typedef struct _TlProgress TlProgress;

/* cancel may be NULL; it is what tl_progress_cancelled asks (and what the thread's streams
 * check between submissions, besides their own). */
TL_API TlProgress *tl_progress_new(TlProgressFunc func, gpointer user_data, GCancellable *cancel);
TL_API void tl_progress_free(TlProgress *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlProgress, tl_progress_free)
/* The shortest time between two reports of a step (default 0.25 s; 0 = every update). */
TL_API void tl_progress_set_interval(TlProgress *p, double seconds);
/* Makes p the calling thread's current progress until the matching pop (they nest). */
TL_API void tl_progress_push(TlProgress *p);
TL_API void tl_progress_pop(TlProgress *p);
/* The calling thread's current progress (NULL = none), for worker threads of a step: they
 * call the _to functions with it. */
TL_API TlProgress *tl_progress_current(void);

/* For the library's long steps, on the thread's current progress (no-ops without one). A step
 * begun must be ended, on success and failure alike. total <= 0: not known (yet). */
TL_API void tl_progress_begin(const char *what, double total);
TL_API void tl_progress_begin_device(const char *what);
TL_API void tl_progress_set_total(double total);
/* The step goes on as a new phase: its name, total and pace start afresh (a sensitivity image
 * first lists its pairs on the host, then traces them on the device); the elapsed time is the
 * step's. */
TL_API void tl_progress_phase(const char *what, double total);
TL_API void tl_progress_set_done(double done);
TL_API void tl_progress_end(void);
/* Thread-safe: `amount` more work of the step of p (NULL: nothing). */
TL_API void tl_progress_add_to(TlProgress *p, double amount);
/* A submission of `cost` completed (tl-stream.c): counted by a device step only. */
TL_API void tl_progress_device_work(double cost);
/* Whether the current progress's cancellable is cancelled (FALSE without one). */
TL_API gboolean tl_progress_cancelled(void);
TL_API GCancellable *tl_progress_cancellable(void);
/* FALSE + G_IO_ERROR_CANCELLED ("`what`: cancelled") when cancelled. */
TL_API gboolean tl_progress_check(const char *what, GError **error);

/* "37 % · 12 s · about 20 s left" (or "12 s" while the total is unknown): the text the window
 * and the CLI show; caller frees. */
TL_API char *tl_progress_format(const TlProgressReport *report);

G_END_DECLS
