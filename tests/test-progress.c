/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlProgress (compute/core/tl-progress.h), the library's one progress / cancel callback:
 * no-ops without a current progress; the fraction and the linear estimate of the time left
 * against the report's own elapsed time; only the outermost step reports; the text the window
 * and the CLI show; Cancel through the thread's streams; and a sensitivity image, the long step
 * of a cold first run, reporting its device work submission by submission up to its total. */
#include <math.h>
#include "pet-fixture.h"
#include "tl-progress.h"
#include "pet/project/tl-projector.h"
#include "pet/project/tl-sensitivity.h"

static TlContext *ctx;

typedef struct {
  GArray *reports; /* TlProgressReport, what pointing into whats */
  char what[64];   /* the first report's */
  GPtrArray *whats;
} Log;

static void on_report(const TlProgressReport *r, gpointer data) {
  Log *log = data;
  if (log->reports->len == 0) g_strlcpy(log->what, r->what, sizeof log->what);
  g_assert_nonnull(r->what);
  g_array_append_val(log->reports, *r);
  if (log->whats) g_ptr_array_add(log->whats, g_strdup(r->what));
}

static TlProgressReport *nth(Log *log, guint i) {
  g_assert_cmpuint(i, <, log->reports->len);
  return &g_array_index(log->reports, TlProgressReport, i);
}

static void test_none(void) {
  GError *error = NULL;
  g_assert_null(tl_progress_current());
  tl_progress_begin("nothing", 10);
  tl_progress_set_done(5);
  tl_progress_device_work(3);
  tl_progress_end();
  g_assert_false(tl_progress_cancelled());
  g_assert_true(tl_progress_check("nothing", &error));
  g_assert_no_error(error);
}

static void test_estimate(void) {
  Log log = {g_array_new(FALSE, FALSE, sizeof(TlProgressReport)), "", NULL};
  g_autoptr(TlProgress) p = tl_progress_new(on_report, &log, NULL);
  tl_progress_set_interval(p, 0);
  tl_progress_push(p);
  g_assert_true(tl_progress_current() == p);
  tl_progress_begin("reading", 4);
  g_assert_cmpuint(log.reports->len, ==, 1); /* at once: nothing waits silently */
  g_assert_cmpstr(log.what, ==, "reading");
  g_assert_cmpfloat(nth(&log, 0)->fraction, ==, 0);
  g_assert_cmpfloat(nth(&log, 0)->remaining_s, <, 0); /* nothing to extrapolate from */
  /* a step inside adds nothing and does not report */
  tl_progress_begin("inner", 100);
  tl_progress_set_done(50);
  tl_progress_end();
  g_assert_cmpuint(log.reports->len, ==, 1);
  g_usleep(300000);
  tl_progress_set_done(1);
  g_assert_cmpuint(log.reports->len, ==, 2);
  TlProgressReport r1 = *nth(&log, 1);
  g_assert_cmpfloat(r1.fraction, ==, 0.25);
  g_assert_cmpfloat(r1.elapsed_s, >=, 0.3);
  /* the first work done: no pace yet (the 0.3 s before it were set-up, not work) */
  g_assert_cmpfloat(r1.remaining_s, <, 0);
  g_usleep(600000);
  tl_progress_add_to(p, 2);
  TlProgressReport *r = nth(&log, 2);
  g_assert_cmpfloat(r->fraction, ==, 0.75);
  /* half the work in the time since the first: the last quarter takes half that */
  double since = r->elapsed_s - r1.elapsed_s;
  g_assert_cmpfloat(since, >=, 0.6);
  g_assert_cmpfloat(fabs(r->remaining_s - since * 0.25 / 0.5), <, 1e-9);
  tl_progress_end();
  r = nth(&log, 3);
  g_assert_true(r->done);
  g_assert_cmpfloat(r->remaining_s, ==, 0);
  tl_progress_pop(p);
  g_assert_null(tl_progress_current());
  /* rate-limited: within the interval only the first and last report */
  tl_progress_set_interval(p, 60);
  tl_progress_push(p);
  guint before = log.reports->len;
  tl_progress_begin("many", 1000);
  for (int i = 0; i < 1000; i++) tl_progress_set_done(i);
  tl_progress_end();
  tl_progress_pop(p);
  g_assert_cmpuint(log.reports->len - before, ==, 2);
  /* the heartbeat: no work counted for 0.55 s, still a report every 0.1 s */
  tl_progress_set_interval(p, 0.1);
  tl_progress_push(p);
  before = log.reports->len;
  tl_progress_begin("waiting", 10);
  g_usleep(550000);
  tl_progress_end();
  tl_progress_pop(p);
  guint beats = log.reports->len - before - 2;
  g_test_message("%u heartbeats in 0.55 s", beats);
  g_assert_cmpuint(beats, >=, 3);
  for (guint i = before + 1; i < log.reports->len; i++)
    g_assert_cmpfloat(nth(&log, i)->elapsed_s, >, nth(&log, i - 1)->elapsed_s);
  g_array_unref(log.reports);
}

static void test_format(void) {
  g_autofree char *a = tl_progress_format(&(TlProgressReport){"x", 0.37, 12.2, 20.4, FALSE});
  g_assert_cmpstr(a, ==, "37 % · 12 s · about 20 s left");
  g_autofree char *b = tl_progress_format(&(TlProgressReport){"x", -1, 3, -1, FALSE});
  g_assert_cmpstr(b, ==, "3 s");
  g_autofree char *c = tl_progress_format(&(TlProgressReport){"x", 0.5, 125, 125, FALSE});
  g_assert_cmpstr(c, ==, "50 % · 2 min 05 s · about 2 min 05 s left");
  g_autofree char *d = tl_progress_format(&(TlProgressReport){"x", 1, 9, 0, TRUE});
  g_assert_cmpstr(d, ==, "100 % · 9 s · done");
  g_autofree char *e = tl_progress_format(&(TlProgressReport){"x", 0.4, 9, 0, TRUE});
  g_assert_cmpstr(e, ==, "40 % · 9 s · stopped");
}

/* 8 sides of 4 crystals, 4 rings on a 16 x 16 x 6 grid (as test-pet-sensitivity's octagon). */
static void test_sensitivity(void) {
  GError *error = NULL;
  TlScanner *sc = fx_ring_scanner(4, 8, 4, 6.0f, 40.0f, 6.0f, 3);
  TlImageGrid g = fx_grid(16, 16, 6, 4.0f, 4.0f, 4.0f);
  g_autoptr(TlProjector) pr = tl_projector_new(ctx, "siddon", &g, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) cry = fx_upload_crystals(ctx, sc);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_stream_set_submit_budget(s, 2000); /* many small submissions */
  Log log = {g_array_new(FALSE, FALSE, sizeof(TlProgressReport)), "", g_ptr_array_new_with_free_func(g_free)};
  g_autoptr(TlProgress) p = tl_progress_new(on_report, &log, NULL);
  tl_progress_set_interval(p, 0);
  tl_progress_push(p);
  g_autoptr(TlArray) img = tl_sensitivity_image(pr, s, sc, cry, 1, 0, FALSE, NULL, &error);
  tl_progress_pop(p);
  g_assert_no_error(error);
  g_assert_nonnull(img);
  guint n = log.reports->len, inside = 0, listing = 0, first_trace = 0;
  g_test_message("%u reports, %u submissions", n, tl_stream_n_submissions(s));
  g_assert_cmpstr(log.what, ==, "sensitivity image");
  /* at once, before the projector has said the total */
  g_assert_cmpfloat(nth(&log, 0)->fraction, <, 0);
  /* two phases: the symmetric method's pair list on the host, then the device's tracing */
  for (guint i = 1; i < n; i++) {
    const char *w = log.whats->pdata[i];
    if (g_str_equal(w, "sensitivity image (listing the pairs to trace)")) {
      g_assert_cmpuint(first_trace, ==, 0);
      listing++;
    } else {
      g_assert_cmpstr(w, ==, "sensitivity image");
      if (!first_trace) first_trace = i;
    }
  }
  g_assert_cmpuint(listing, >=, 2);
  g_assert_cmpuint(first_trace, >, 0);
  g_assert_cmpuint(n - first_trace, >=, 5);
  g_assert_cmpfloat(nth(&log, first_trace)->fraction, ==, 0);
  for (guint i = first_trace + 1; i + 1 < n; i++) {
    g_assert_cmpfloat(nth(&log, i)->fraction, >=, nth(&log, i - 1)->fraction);
    inside += nth(&log, i)->fraction > 0 && nth(&log, i)->fraction < 1;
  }
  g_assert_cmpuint(inside, >=, 3);
  /* the total is the work the submissions did: the last one reaches it (the zero fills, a
   * few cost units per voxel, are the only work beyond it) */
  g_assert_cmpfloat(nth(&log, n - 2)->fraction, >=, 0.98);
  g_assert_true(nth(&log, n - 1)->done);
  g_assert_cmpfloat(nth(&log, n - 1)->fraction, ==, 1);

  /* Cancel: the thread's progress stops the streams between submissions */
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  g_cancellable_cancel(cancel);
  g_autoptr(TlProgress) q = tl_progress_new(NULL, NULL, cancel);
  tl_progress_push(q);
  g_assert_true(tl_progress_cancelled());
  g_autoptr(TlArray) none = tl_sensitivity_image(pr, s, sc, cry, 1, 0, FALSE, NULL, &error);
  tl_progress_pop(q);
  g_assert_null(none);
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  g_array_unref(log.reports);
  g_ptr_array_unref(log.whats);
  fx_scanner_free(sc);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/progress/none", test_none);
  g_test_add_func("/progress/estimate", test_estimate);
  g_test_add_func("/progress/format", test_format);
  g_test_add_func("/progress/sensitivity", test_sensitivity);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
