/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's progress bar: the library's long steps (tl-progress.h) - a run's sensitivity
 * images and scatter rounds (TlRunner's worker), a file's load and its CT centre search (the
 * open task) - shown over the views with what, how far, the time spent and left, and Cancel
 * (win.cancel-step). The workers only store their last report; a 100 ms timer on the main
 * thread shows it, so no report waits on the main loop and none floods it. */
#include "tl-window-private.h"

struct _TlWindowProgress {
  GMutex lock;
  TlProgressReport report;
  char what[128];
  gboolean active;
  GCancellable *cancel; /* the load under way's */
};

static void on_load_progress(const TlProgressReport *report, gpointer data) {
  TlWindowProgress *wp = data;
  g_mutex_lock(&wp->lock);
  wp->report = *report;
  g_strlcpy(wp->what, report->what, sizeof wp->what);
  wp->active = !report->done;
  g_mutex_unlock(&wp->lock);
}

TlProgress *tl_window_progress_for_load(TlWindow *self) {
  TlWindowProgress *wp = self->load_progress;
  g_mutex_lock(&wp->lock);
  g_clear_object(&wp->cancel);
  wp->cancel = g_cancellable_new();
  TlProgress *p = tl_progress_new(on_load_progress, wp, wp->cancel);
  g_mutex_unlock(&wp->lock);
  return p;
}

/* The step under way: a load's first (it comes before any run on its data), else the run's. */
static gboolean current(TlWindow *self, TlProgressReport *r, char *what, gsize size) {
  TlWindowProgress *wp = self->load_progress;
  g_mutex_lock(&wp->lock);
  gboolean active = wp->active;
  if (active) {
    *r = wp->report;
    g_strlcpy(what, wp->what, size);
  }
  g_mutex_unlock(&wp->lock);
  if (!active && self->runner) active = tl_runner_get_progress(self->runner, r, what, size);
  r->what = what;
  return active;
}

static gboolean tick(gpointer data) {
  TlWindow *self = data;
  TlProgressReport r;
  char what[128];
  gboolean active = current(self, &r, what, sizeof what);
  gtk_widget_set_visible(GTK_WIDGET(self->progress_box), active);
  self->progress_fraction = active ? r.fraction : -1;
  if (!active) return G_SOURCE_CONTINUE;
  g_autofree char *text = tl_progress_format(&r);
  g_autofree char *label = g_strdup_printf("%c%s", g_ascii_toupper(r.what[0]), r.what[0] ? r.what + 1 : "");
  gtk_label_set_text(self->progress_label, label);
  gtk_progress_bar_set_text(self->progress_bar, text);
  if (r.fraction >= 0)
    gtk_progress_bar_set_fraction(self->progress_bar, r.fraction);
  else
    gtk_progress_bar_pulse(self->progress_bar); /* total not known yet: it moves anyway */
  return G_SOURCE_CONTINUE;
}

/* Cancel: the load under way, else the run's step (a run stopped while its job is made ends
 * Stopped; during a scatter round the last complete image stays, as Stop does). */
static void act_cancel_step(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  TlWindowProgress *wp = self->load_progress;
  g_mutex_lock(&wp->lock);
  gboolean load = wp->active && wp->cancel;
  if (load) g_cancellable_cancel(wp->cancel);
  g_mutex_unlock(&wp->lock);
  if (!load && self->runner) tl_runner_stop(self->runner);
}

static const GActionEntry kActions[] = {
  {"cancel-step", act_cancel_step, NULL, NULL, NULL, {0}},
};

void tl_window_progress_init(TlWindow *self) {
  TlWindowProgress *wp = g_new0(TlWindowProgress, 1);
  g_mutex_init(&wp->lock);
  self->load_progress = wp;
  self->progress_fraction = -1;
  g_action_map_add_action_entries(G_ACTION_MAP(self), kActions, G_N_ELEMENTS(kActions), self);
  self->progress_timer = g_timeout_add(100, tick, self);
}

void tl_window_progress_dispose(TlWindow *self) {
  g_clear_handle_id(&self->progress_timer, g_source_remove);
}

/* In finalize: an open task's thread may report until the task (which holds the window) ends. */
void tl_window_progress_finalize(TlWindow *self) {
  TlWindowProgress *wp = g_steal_pointer(&self->load_progress);
  if (!wp) return;
  g_clear_object(&wp->cancel);
  g_mutex_clear(&wp->lock);
  g_free(wp);
}

double tl_window_get_progress_fraction(TlWindow *self) {
  return self->progress_fraction;
}

gboolean tl_window_progress_shown(TlWindow *self) {
  return gtk_widget_get_visible(GTK_WIDGET(self->progress_box));
}
