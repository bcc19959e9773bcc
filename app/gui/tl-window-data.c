/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's data view (tl-data-view.h): win.show-data opens it; it follows the window's
 * dataset and recomputes its expected plane after every sub-iteration while shown. */
#include "tl-data-view.h"
#include "tl-window-private.h"
#include "tl-kernel-editor.h"

#define DATA_KEY "tl-data-view"
#define DATASET_KEY "tl-data-view-dataset"

static gboolean data_target(gpointer window, TlDataTarget *t) {
  TlWindow *self = window;
  *t = (TlDataTarget){0};
  t->ctx = self->ctx;
  if (!self->ctx || !self->runner) return FALSE;
  t->runner = tl_runner_ref(self->runner);
  TlPetJobOptions o = {0};
  tl_side_panel_get_options(self->side_panel, &o);
  g_strlcpy(t->projector, o.projector, sizeof t->projector);
  if (self->dataset && self->dataset->ct) { /* the CT run's projector */
    TlCtJobOptions co = {0};
    tl_side_panel_get_ct_options(self->side_panel, &co);
    g_strlcpy(t->projector, co.projector, sizeof t->projector);
  }
  /* the attenuation the run corrects for: the phantom's (a file is read by the job only) */
  if (o.mu == TL_PET_MU_PHANTOM && self->dataset && self->dataset->mu)
    t->mu = tl_image_copy(self->dataset->mu);
  tl_pet_job_options_clear(&o);
  return TRUE;
}

TlDataView *tl_window_get_data_view(TlWindow *self) {
  return g_object_get_data(G_OBJECT(self), DATA_KEY);
}

static void follow(TlWindow *self, gboolean new_step) {
  TlDataView *dv = tl_window_get_data_view(self);
  if (!dv) return;
  if (g_object_get_data(G_OBJECT(self), DATASET_KEY) != self->dataset) {
    g_object_set_data(G_OBJECT(self), DATASET_KEY, self->dataset);
    tl_data_view_set_dataset(dv, self->dataset);
  } else if (new_step && gtk_widget_get_visible(GTK_WIDGET(dv))) {
    tl_data_view_update(dv);
  }
}

static void on_frame(TlWindow *self, gboolean new_step, gpointer data) { follow(self, new_step); }

static void view_gone(gpointer data, GObject *where) {
  g_object_set_data(G_OBJECT(data), DATA_KEY, NULL);
  g_object_set_data(G_OBJECT(data), DATASET_KEY, NULL);
}

static void act_show_data(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  TlDataView *dv = tl_window_get_data_view(self);
  if (!dv) {
    dv = tl_data_view_new(GTK_WINDOW(self), data_target, self);
    g_object_set_data(G_OBJECT(self), DATA_KEY, dv);
    g_object_weak_ref(G_OBJECT(dv), view_gone, self);
  }
  gtk_window_present(GTK_WINDOW(dv));
  follow(self, TRUE);
}

/* A worker of the view still using the device when the window goes would outlive it (and, at
 * exit, the process's teardown of the driver): wait for it, a sub-iteration at most. */
void tl_window_wait_idle(gboolean (*busy)(gpointer), gpointer obj) {
  gint64 until = g_get_monotonic_time() + 120 * G_USEC_PER_SEC;
  while (busy(obj) && g_get_monotonic_time() < until) {
    if (!g_main_context_iteration(NULL, FALSE)) g_usleep(5000);
  }
}

/* gtk_window_destroy unrealizes the window at once, while its dispose waits for the last
 * reference, which a worker of the view holds: wait for the workers here, so none is left on
 * the device when the application (or a test) ends. */
static void on_unrealize(GtkWidget *w, gpointer data) {
  TlWindow *self = TL_WINDOW(w);
  TlDataView *dv = tl_window_get_data_view(self);
  if (dv) tl_window_wait_idle((gboolean(*)(gpointer))tl_data_view_is_busy, dv);
  TlKernelEditor *ed = tl_window_get_kernel_editor(self);
  if (ed) tl_window_wait_idle((gboolean(*)(gpointer))tl_kernel_editor_is_busy, ed);
}

void tl_window_data_init(TlWindow *self) {
  static const GActionEntry actions[] = {
      {"show-data", act_show_data, NULL, NULL, NULL, {0}},
  };
  g_action_map_add_action_entries(G_ACTION_MAP(self), actions, G_N_ELEMENTS(actions), self);
  g_signal_connect(self, "frame", G_CALLBACK(on_frame), NULL);
  g_signal_connect(self, "unrealize", G_CALLBACK(on_unrealize), NULL);
}

void tl_window_data_dispose(TlWindow *self) {
  TlDataView *dv = tl_window_get_data_view(self);
  if (dv) {
    tl_window_wait_idle((gboolean(*)(gpointer))tl_data_view_is_busy, dv);
    g_object_weak_unref(G_OBJECT(dv), view_gone, self);
    g_object_set_data(G_OBJECT(self), DATA_KEY, NULL);
    gtk_window_destroy(GTK_WINDOW(dv));
  }
}
