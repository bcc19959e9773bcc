/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlWindow's kernel editor (tl-kernel-editor.h): win.edit-kernel opens it on a built-in kernel
 * ("" = the first kernel the run's last sub-iteration called, before any the forward
 * projection of the dataset's modality); what it installs into is the window's device and
 * current run, asked for at each Apply. */
#include "tl-kernel-editor.h"
#include "tl-window-private.h"

#define EDITOR_KEY "tl-kernel-editor"

static gboolean editor_target(gpointer window, TlKernelTarget *t) {
  TlWindow *self = window;
  *t = (TlKernelTarget){0};
  t->ctx = self->ctx;
  if (!self->ctx) return FALSE;
  if (self->runner) t->runner = tl_runner_ref(self->runner);
  t->run_kernels = g_object_get_data(G_OBJECT(self), "tl-run-kernels");
  if (self->dataset && self->dataset->lm) {
    t->scanner = self->dataset->lm->scanner;
    t->grid = self->dataset->grid;
    TlPetJobOptions o = {0};
    tl_side_panel_get_options(self->side_panel, &o);
    g_strlcpy(t->projector, o.projector, sizeof t->projector);
    tl_pet_job_options_clear(&o);
  }
  return TRUE;
}

TlKernelEditor *tl_window_get_kernel_editor(TlWindow *self) {
  return g_object_get_data(G_OBJECT(self), EDITOR_KEY);
}

static void editor_gone(gpointer data, GObject *where) {
  g_object_set_data(G_OBJECT(data), EDITOR_KEY, NULL);
}

static void act_edit_kernel(GSimpleAction *a, GVariant *p, gpointer data) {
  TlWindow *self = data;
  const char *name = p ? g_variant_get_string(p, NULL) : "";
  /* "": the first kernel the run's last sub-iteration called, else the forward projection */
  const char *const *calls = g_object_get_data(G_OBJECT(self), "tl-run-kernels");
  if (!name[0]) name = calls && calls[0] ? calls[0]
                       : self->dataset && self->dataset->ct ? "ct_forward"
                                                            : "pet_forward";
  TlKernelEditor *ed = tl_window_get_kernel_editor(self);
  if (!ed) {
    ed = tl_kernel_editor_new(GTK_WINDOW(self), editor_target, self);
    g_object_set_data(G_OBJECT(self), EDITOR_KEY, ed);
    g_object_weak_ref(G_OBJECT(ed), editor_gone, self);
    gtk_window_set_hide_on_close(GTK_WINDOW(ed), FALSE);
  }
  if (g_strcmp0(tl_kernel_editor_get_kernel(ed), name) != 0) tl_kernel_editor_show_kernel(ed, name);
  gtk_window_present(GTK_WINDOW(ed));
}


void tl_window_kernels_init(TlWindow *self) {
  static const GActionEntry actions[] = {
      {"edit-kernel", act_edit_kernel, "s", NULL, NULL, {0}},
  };
  g_action_map_add_action_entries(G_ACTION_MAP(self), actions, G_N_ELEMENTS(actions), self);
}

/* The editor is transient for the window: closed with it. */
void tl_window_kernels_dispose(TlWindow *self) {
  TlKernelEditor *ed = tl_window_get_kernel_editor(self);
  if (ed) {
    /* a compile or install under way finishes first (it uses the device; at exit the driver
     * goes away under it otherwise) */
    tl_window_wait_idle((gboolean(*)(gpointer))tl_kernel_editor_is_busy, ed);
    g_object_weak_unref(G_OBJECT(ed), editor_gone, self);
    g_object_set_data(G_OBJECT(self), EDITOR_KEY, NULL);
    gtk_window_destroy(GTK_WINDOW(ed));
  }
}
