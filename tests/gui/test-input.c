/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The window used as a person uses it: real input events through the X server (XTEST,
 * tl-gui-input.h) click every toolbar button and every window menu item, press the documented
 * keys and make the documented mouse gestures on the views, and each effect is asserted (a
 * state, a sub-iteration count, a window that opens, a view that changes). And a cold first
 * run: the progress bar of its sensitivity image shows a fraction within 2 s of the run's start
 * and an estimate within 10 s, and a click on Cancel ends the run Stopped.
 *
 * The application's own items (Keyboard Shortcuts, About, Quit) need a GtkApplication, which
 * registers on a session bus: with TL_INPUT_APP set (the test input-app, run under
 * dbus-run-session) this program instead runs the real TlApplication and clicks those three. */
#include "tl-gui-input.h"
#include "tl-gui-test.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include "tl-compare-view.h"
#include "tl-kernel-editor.h"
#include "tl-plot.h"
#include "tl-profile-view.h"
#include "tl-screenshot.h"
#include "tl-simulate-dialog.h"
#include "tl-window-private.h"
#include "tl-application.h"

static char *tmpdir, *scanner_path;

/* TL_INPUT_SHOTS=DIR: what the tests see, saved there as PNGs to look at. */
static void shot(GtkWidget *w, const char *name) {
  const char *dir = g_getenv("TL_INPUT_SHOTS");
  if (!dir) return;
  g_autofree char *path = g_strdup_printf("%s/%s.png", dir, name);
  for (int tries = 0; tries < 5; tries++) { /* "drew nothing" between a frame and its paint */
    g_autoptr(GError) error = NULL;
    tl_gui_spin(0.3);
    if (tl_widget_save_png(w, path, &error)) return;
    g_test_message("%s: %s", path, error->message);
  }
}

/* ---- Finding widgets ---------------------------------------------------------------- */

/* The first widget under root (depth first) that is actionable with `action` (and `target`
 * when not NULL) and mapped. */
static GtkWidget *find_action(GtkWidget *root, const char *action, GVariant *target) {
  if (GTK_IS_ACTIONABLE(root) && gtk_widget_get_mapped(root)) {
    const char *name = gtk_actionable_get_action_name(GTK_ACTIONABLE(root));
    GVariant *t = gtk_actionable_get_action_target_value(GTK_ACTIONABLE(root));
    if (g_strcmp0(name, action) == 0 && (!target || (t && g_variant_equal(t, target))))
      return root;
  }
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *w = find_action(c, action, target);
    if (w) return w;
  }
  return NULL;
}

/* A shown toplevel of that type other than the main window, or NULL. */
static GtkWindow *toplevel_of(GType type) {
  GListModel *l = gtk_window_get_toplevels();
  for (guint i = 0; i < g_list_model_get_n_items(l); i++) {
    g_autoptr(GtkWindow) w = g_list_model_get_item(l, i);
    if (G_TYPE_CHECK_INSTANCE_TYPE(w, type) && gtk_widget_get_visible(GTK_WIDGET(w)))
      return w;
  }
  return NULL;
}

static gboolean has_toplevel(TlWindow *w, gpointer d) { return toplevel_of(*(GType *)d) != NULL; }
static gboolean no_toplevel(TlWindow *w, gpointer d) { return toplevel_of(*(GType *)d) == NULL; }

/* A toplevel of that type appears; Escape (a real key press) closes it again. */
static void expect_dialog_then_escape(TlWindow *win, GType type, const char *what) {
  g_assert_true(tl_gui_wait_for(win, has_toplevel, &type));
  GtkWindow *d = toplevel_of(type);
  g_test_message("%s opened %s \"%s\"", what, G_OBJECT_TYPE_NAME(d), gtk_window_get_title(d));
  tl_gui_spin(0.3); /* mapped and focused */
  tl_gui_input_key(GDK_KEY_Escape, NULL);
  g_assert_true(tl_gui_wait_for(win, no_toplevel, &type));
  gtk_window_present(GTK_WINDOW(win));
  tl_gui_spin(0.2);
}

/* Closes the shown toplevel of that type and waits until it is gone (without a window
 * manager a window left over the main one would take its clicks). */
static void close_toplevel(TlWindow *win, GType type) {
  gtk_window_close(toplevel_of(type));
  g_assert_true(tl_gui_wait_for(win, no_toplevel, &type));
  /* without a window manager nothing gives the focus back: the main window takes it */
  gtk_window_present(GTK_WINDOW(win));
  tl_gui_spin(0.3);
}

static GtkWidget *toolbar_button(TlWindow *win, const char *action) {
  GtkWidget *b = find_action(GTK_WIDGET(win), action, NULL);
  g_assert_nonnull(b);
  return b;
}

/* The main menu's item `label` clicked as a person does (tl-gui-input.h). */
static void menu_click(TlWindow *win, const char *label) {
  g_test_message("menu → %s", label);
  GtkPopover *pop = tl_gui_menu_open(win);
  if (g_str_equal(label, "_Keep Snapshot")) shot(GTK_WIDGET(pop), "input-menu");
  tl_gui_menu_activate(win, pop, label);
}

static const char *status_text(TlWindow *win) { return gtk_label_get_text(win->status_label); }
static gboolean run_highlighted(TlWindow *win) {
  return gtk_widget_has_css_class(GTK_WIDGET(win->run_button), "suggested-action");
}

/* ---- Data ------------------------------------------------------------------------- */

/* ---- Toolbar, keys, controls that tell the truth ------------------------------------ */

static gboolean in_run_state(TlWindow *w, gpointer d) { return tl_gui_in_state(w, d); }

static void test_toolbar(void) {
  TlWindow *win = tl_gui_new_window();
  /* nothing to run yet: Run neither sensitive nor highlighted */
  g_assert_false(run_highlighted(win));
  GType sim = TL_TYPE_SIMULATE_DIALOG;
  tl_gui_input_click(toolbar_button(win, "win.simulate-dialog"), 1);
  expect_dialog_then_escape(win, sim, "Simulate…");
  tl_gui_input_key(GDK_KEY_n, (const guint[]){GDK_KEY_Control_L, 0});
  expect_dialog_then_escape(win, sim, "Ctrl+N");
  tl_gui_input_click(toolbar_button(win, "win.open"), 1);
  expect_dialog_then_escape(win, GTK_TYPE_FILE_CHOOSER_DIALOG, "Open");

  tl_side_panel_set_algorithm(tl_window_get_side_panel(win), TRUE, 2, 2);
  tl_gui_simulate(win, "cylinder", scanner_path, 2e4, 2);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  /* prepared, not started: Ready, not Paused; now there is something to run */
  g_assert_nonnull(strstr(status_text(win), "Ready"));
  g_assert_null(strstr(status_text(win), "Paused"));
  g_assert_true(run_highlighted(win));
  shot(GTK_WIDGET(win), "input-ready");

  tl_gui_input_click(toolbar_button(win, "win.step"), 1);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(1)));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_nonnull(strstr(status_text(win), "Paused"));
  tl_gui_input_key(GDK_KEY_Right, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(2)));

  /* Run (the button) to the end: Finished, nothing left to run */
  tl_gui_input_click(toolbar_button(win, "win.run-pause"), 1);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 4);
  g_assert_nonnull(strstr(status_text(win), "Finished"));
  g_assert_false(run_highlighted(win));
  /* Step after Finished continues by one sub-iteration (docs/workbench.md) */
  GtkWidget *step = toolbar_button(win, "win.step");
  g_assert_true(gtk_widget_is_sensitive(step));
  tl_gui_input_click(step, 1);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(5)));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  tl_gui_input_key(GDK_KEY_Right, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(6)));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_FINISHED)));

  /* more iterations: Space runs, Escape stops; then Run is off and Step too */
  tl_side_panel_set_iterations(tl_window_get_side_panel(win), 500);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_true(run_highlighted(win));
  tl_gui_input_key(GDK_KEY_space, NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(7)));
  tl_gui_input_key(GDK_KEY_Escape, NULL);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_STOPPED)));
  g_assert_false(run_highlighted(win));
  g_assert_false(gtk_widget_is_sensitive(toolbar_button(win, "win.step")));
  /* and the buttons: run, pause (the same button), stop */
  tl_gui_activate(win, "restart", NULL);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  tl_gui_input_click(toolbar_button(win, "win.run-pause"), 1);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(1)));
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_RUNNING);
  tl_gui_input_click(toolbar_button(win, "win.run-pause"), 1);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  tl_gui_input_click(toolbar_button(win, "win.stop"), 1);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_STOPPED)));
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
}

/* ---- Mouse on the views, then every menu item ---------------------------------------- */

static gboolean roi_measured(TlWindow *w, gpointer d) {
  TlRoiStats st;
  return tl_window_get_roi_stats(w, 0, &st) && st.n > 0;
}
static gboolean no_roi(TlWindow *w, gpointer d) {
  TlRoiStats st;
  return !tl_window_get_roi_stats(w, 0, &st);
}
static gboolean has_snapshot(TlWindow *w, gpointer d) { return tl_window_get_snapshot(w, d) != NULL; }
static gboolean error_shown(TlWindow *w, gpointer d) { return tl_window_get_last_error(w) != NULL; }
static gboolean stack_is(TlWindow *w, gpointer d) {
  return g_strcmp0(gtk_stack_get_visible_child_name(w->stack), d) == 0;
}

static void test_views_and_menu(void) {
  TlWindow *win = tl_gui_new_window();
  tl_side_panel_set_algorithm(tl_window_get_side_panel(win), TRUE, 2, 2);
  tl_gui_simulate(win, "cylinder", scanner_path, 2e4, 2);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  tl_gui_activate(win, "run", NULL);
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  GtkWidget *axial = GTK_WIDGET(tl_window_get_slice_view(win, TL_VIEW_AXIAL));
  double w = gtk_widget_get_width(axial), h = gtk_widget_get_height(axial);

  /* click: the crosshair moves in all views; wheel: the slice */
  guint before[3];
  memcpy(before, win->pos, sizeof before);
  tl_gui_input_move(axial, w * 0.3, h * 0.3);
  tl_gui_input_drag(axial, 1, w * 0.3, h * 0.3, w * 0.3, h * 0.3, 1, NULL);
  g_assert_true(win->pos[0] != before[0] || win->pos[1] != before[1]);
  guint z = win->pos[2];
  tl_gui_input_scroll(axial, -1, NULL);
  g_assert_cmpuint(win->pos[2], !=, z);
  /* Ctrl+wheel zooms; Menu → Reset Zoom (and Ctrl+0) bring it back */
  tl_gui_input_scroll(axial, -1, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_cmpfloat(tl_slice_view_get_zoom(TL_SLICE_VIEW(axial)), !=, 1.0);
  menu_click(win, "_Reset Zoom");
  g_assert_cmpfloat(tl_slice_view_get_zoom(TL_SLICE_VIEW(axial)), ==, 1.0);
  tl_gui_input_scroll(axial, -1, (const guint[]){GDK_KEY_Control_L, 0});
  tl_gui_input_key(GDK_KEY_0, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_cmpfloat(tl_slice_view_get_zoom(TL_SLICE_VIEW(axial)), ==, 1.0);
  /* right-drag: window/level, the preset becomes manual */
  tl_gui_input_drag(axial, 3, w * 0.5, h * 0.5, w * 0.7, h * 0.4, 6, NULL);
  g_assert_cmpint(tl_side_panel_get_levels_preset(tl_window_get_side_panel(win)), ==, TL_LEVELS_MANUAL);
  /* Shift+drag: a line profile with the truth */
  tl_gui_input_drag(axial, 1, w * 0.25, h * 0.5, w * 0.75, h * 0.5, 6, (const guint[]){GDK_KEY_Shift_L, 0});
  g_assert_cmpuint(tl_plot_n_series(tl_window_get_line_plot(win)), ==, 2);
  /* Ctrl+drag: a spherical ROI, measured on the worker */
  tl_gui_input_drag(axial, 1, w * 0.5, h * 0.5, w * 0.58, h * 0.5, 6, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_true(tl_gui_wait_for(win, roi_measured, NULL));

  /* the menu, item by item */
  menu_click(win, "C_lear ROIs");
  g_assert_true(tl_gui_wait_for(win, no_roi, NULL));
  menu_click(win, "_Keep Snapshot");
  g_assert_true(tl_gui_wait_for(win, has_snapshot, (gpointer) "run 1 at 4"));
  tl_gui_input_click(toolbar_button(win, "win.step"), 1); /* continues: 5 */
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(5)));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  menu_click(win, "_Keep Snapshot");
  g_assert_true(tl_gui_wait_for(win, has_snapshot, (gpointer) "run 1 at 5"));
  menu_click(win, "_Compare the Last Two Snapshots");
  g_assert_nonnull(tl_window_get_compare_view(win));
  g_assert_true(gtk_widget_get_visible(GTK_WIDGET(win->compare_window)));
  g_assert_cmpstr(gtk_window_get_title(win->compare_window), ==, "Compare run 1 at 4 and run 1 at 5");
  gtk_window_close(win->compare_window);
  gtk_window_present(GTK_WINDOW(win));
  tl_gui_spin(0.3);
  menu_click(win, "Restart from the _Last Snapshot");
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 0);
  tl_gui_activate(win, "step", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(1)));
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  menu_click(win, "Re_start the Run");
  g_assert_true(tl_gui_wait_for(win, in_run_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 0);
  /* a cylinder is no NEMA phantom: the analysis says so */
  menu_click(win, "_NEMA Analysis");
  g_assert_true(tl_gui_wait_for(win, error_shown, NULL));
  g_assert_true(g_str_has_prefix(tl_window_get_last_error(win), "NEMA analysis"));

  gboolean mip = gtk_widget_get_visible(GTK_WIDGET(tl_window_get_slice_view(win, TL_VIEW_MIP)));
  menu_click(win, "Show _MIP");
  g_assert_cmpint(gtk_widget_get_visible(GTK_WIDGET(tl_window_get_slice_view(win, TL_VIEW_MIP))), ==, !mip);
  GtkWidget *strip = GTK_WIDGET(tl_window_get_profile_view(win));
  gboolean shown = gtk_widget_get_visible(strip);
  menu_click(win, "_Profiling Strip");
  g_assert_cmpint(gtk_widget_get_visible(strip), ==, !shown);
  tl_gui_input_key(GDK_KEY_p, (const guint[]){GDK_KEY_Control_L, 0});
  g_assert_cmpint(gtk_widget_get_visible(strip), ==, shown);
  menu_click(win, "_Device Details");
  g_assert_true(tl_gui_wait_for(win, stack_is, (gpointer) "device"));
  tl_gui_spin(0.5);
  g_test_message("window %d x %d", gtk_widget_get_width(GTK_WIDGET(win)), gtk_widget_get_height(GTK_WIDGET(win)));
  menu_click(win, "_Device Details");
  g_assert_true(tl_gui_wait_for(win, stack_is, (gpointer) "workbench"));

  GType data = TL_TYPE_DATA_VIEW, editor = TL_TYPE_KERNEL_EDITOR;
  menu_click(win, "Show the _Data");
  g_assert_true(tl_gui_wait_for(win, has_toplevel, &data));
  close_toplevel(win, data);
  /* Not the editor under LeakSanitizer: a process that opened it ends with GLib's first quark
   * array unreachable (docs/reliability.md), so it is clicked in the normal build */
#if defined(__SANITIZE_ADDRESS__)
  (void)editor;
  g_test_message("Edit Kernel… not clicked under AddressSanitizer (GLib's quark array under LeakSanitizer)");
#else
  menu_click(win, "_Edit Kernel…");
  g_assert_true(tl_gui_wait_for(win, has_toplevel, &editor));
  close_toplevel(win, editor);
#endif

  /* the items that ask for a file: the chooser opens, Escape dismisses it */
  static const char *const choosers[] = {
    "_Save Image as NIfTI…", "Export _View as PNG…", "Export _Plots (CSV + PNG)…",
    "Export _ROIs as CSV…", "Export NEMA as CS_V…", "_Open Run…", "Save _Run…",
  };
  for (gsize i = 0; i < G_N_ELEMENTS(choosers); i++) {
    menu_click(win, choosers[i]);
    expect_dialog_then_escape(win, GTK_TYPE_FILE_CHOOSER_DIALOG, choosers[i]);
  }
  tl_gui_destroy_window(win);
}

/* The shortcuts window lists the keys and the mouse gestures (from the resource the
 * application loads it from). */
static void test_shortcuts(void) {
  g_autoptr(GtkBuilder) b = gtk_builder_new_from_resource("/org/tomolab/Tomolab/gtk/help-overlay.ui");
  GtkWidget *w = GTK_WIDGET(gtk_builder_get_object(b, "help_overlay"));
  g_assert_true(GTK_IS_SHORTCUTS_WINDOW(w));
  static const char *const gestures[] = {"Click", "Mouse wheel", "Ctrl + mouse wheel", "Drag",
                                         "Right-drag", "Shift + drag", "Ctrl + drag",
                                         "Ctrl + Shift + drag"};
  GString *all = g_string_new(NULL);
  GSList *objects = gtk_builder_get_objects(b);
  for (GSList *l = objects; l; l = l->next)
    if (GTK_IS_SHORTCUTS_SHORTCUT(l->data)) {
      g_autofree char *sub = NULL, *accel = NULL;
      g_object_get(l->data, "subtitle", &sub, "accelerator", &accel, NULL);
      g_string_append_printf(all, "|%s|%s", sub ? sub : "", accel ? accel : "");
    }
  g_slist_free(objects);
  for (gsize i = 0; i < G_N_ELEMENTS(gestures); i++) {
    g_autofree char *needle = g_strdup_printf("|%s|", gestures[i]);
    g_assert_nonnull(strstr(all->str, needle));
  }
  g_assert_nonnull(strstr(all->str, "|space"));
  g_assert_nonnull(strstr(all->str, "|<Ctrl>Right"));
  g_string_free(all, TRUE);
  if (g_getenv("TL_INPUT_SHOTS")) {
    gtk_window_set_default_size(GTK_WINDOW(w), 1280, 800);
    gtk_window_present(GTK_WINDOW(w));
    tl_gui_spin(0.5);
    shot(w, "input-shortcuts");
  }
  gtk_window_destroy(GTK_WINDOW(w));
}

/* ---- A cold first run's progress ----------------------------------------------------- */

static gboolean progress_fraction(TlWindow *w, gpointer d) {
  return tl_window_get_progress_fraction(w) > 0;
}
static gboolean progress_estimate(TlWindow *w, gpointer d) {
  const char *t = gtk_progress_bar_get_text(w->progress_bar);
  return tl_window_progress_shown(w) && t && strstr(t, "left");
}
static gboolean progress_gone(TlWindow *w, gpointer d) { return !tl_window_progress_shown(w); }
static gboolean run_left_preparing(TlWindow *w, gpointer d) {
  return tl_window_has_run(w) && tl_window_get_run_state(w) != TL_RUN_PREPARING;
}

/* The small-animal preset on its grid (64 x 64 x 81 of 1.59 mm): a sensitivity image of its
 * pairs listed, then traced, over a minute at load 20: cancelled once the estimate is seen. */
static void test_progress(void) {
  /* small submissions: the sensitivity image's progress moves however fast the device (read
   * by each new stream) */
  g_setenv("TOMOLAB_SUBMIT_BUDGET", "200000", TRUE);
  TlWindow *win = tl_gui_new_window();
  tl_side_panel_set_algorithm(tl_window_get_side_panel(win), TRUE, 1, 1);
  tl_gui_simulate(win, "cylinder", "small-animal", 2e3, 2);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  gint64 t0 = g_get_monotonic_time(); /* the run is being prepared from here */
  g_assert_true(tl_gui_wait_for(win, progress_fraction, NULL));
  double t_fraction = (g_get_monotonic_time() - t0) * 1e-6;
  const char *what = gtk_label_get_text(win->progress_label);
  g_test_message("progress bar: \"%s\" at %.2f s: %s", what, t_fraction,
                 gtk_progress_bar_get_text(win->progress_bar));
  g_assert_cmpfloat(t_fraction, <=, 2.0);
  g_assert_true(g_str_has_prefix(what, "Sensitivity image"));
  g_assert_true(tl_gui_wait_for(win, progress_estimate, NULL));
  double t_estimate = (g_get_monotonic_time() - t0) * 1e-6;
  g_test_message("estimate at %.2f s: %s", t_estimate, gtk_progress_bar_get_text(win->progress_bar));
  g_assert_cmpfloat(t_estimate, <=, 10.0);
  shot(GTK_WIDGET(win), "input-progress");
  /* Cancel (a click): the run ends Stopped, no error, the bar goes */
  tl_gui_input_click(find_action(GTK_WIDGET(win), "win.cancel-step", NULL), 1);
  g_assert_true(tl_gui_wait_for(win, run_left_preparing, NULL));
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_STOPPED);
  g_assert_true(tl_gui_wait_for(win, progress_gone, NULL));
  g_assert_nonnull(strstr(status_text(win), "Stopped"));
  g_assert_false(g_action_group_get_action_enabled(G_ACTION_GROUP(win), "save-image"));
  /* a new run is cold again (nothing was cached): Escape cancels it too */
  tl_gui_activate(win, "restart", NULL);
  g_assert_true(tl_gui_wait_for(win, progress_fraction, NULL));
  tl_gui_input_key(GDK_KEY_Escape, NULL);
  g_assert_true(tl_gui_wait_for(win, run_left_preparing, NULL));
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_STOPPED);
  g_assert_true(tl_gui_wait_for(win, progress_gone, NULL));
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
  g_unsetenv("TOMOLAB_SUBMIT_BUDGET");
}

/* ---- The application's own items ---------------------------------------------------- */

typedef struct {
  TlApplication *app;
  gboolean ran, quit_clicked, timed_out;
  gint64 quit_at;
  guint timer; /* from the click on Quit: fails the test if the run goes on */
} AppRun;

static gboolean app_timeout(gpointer data) {
  AppRun *r = data;
  r->timed_out = TRUE; /* Quit did not end the run: end it, and fail below */
  g_application_quit(G_APPLICATION(r->app));
  return G_SOURCE_REMOVE;
}

/* Runs inside g_application_run, from the main loop once the window is activated: Keyboard
 * Shortcuts and About open their windows, Quit ends g_application_run. */
static gboolean app_script(gpointer data) {
  AppRun *r = data;
  r->ran = TRUE;
  GtkWindow *w = gtk_application_get_active_window(GTK_APPLICATION(r->app));
  g_assert_true(TL_IS_WINDOW(w));
  TlWindow *win = TL_WINDOW(w);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  tl_gui_spin(0.3);
  /* the help overlay GtkApplication loads from the resources: the keys and the gestures */
  GType shortcuts = GTK_TYPE_SHORTCUTS_WINDOW;
  menu_click(win, "_Keyboard Shortcuts");
  g_assert_true(tl_gui_wait_for(win, has_toplevel, &shortcuts));
  GtkShortcutsWindow *help = gtk_application_window_get_help_overlay(GTK_APPLICATION_WINDOW(win));
  g_assert_true(GTK_WINDOW(help) == toplevel_of(shortcuts));
  g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(help)));
  shot(GTK_WIDGET(help), "input-app-shortcuts");
  expect_dialog_then_escape(win, shortcuts, "Keyboard Shortcuts");
  /* About: the application's name and licence */
  GType about = ADW_TYPE_ABOUT_WINDOW;
  menu_click(win, "_About Tomolab");
  g_assert_true(tl_gui_wait_for(win, has_toplevel, &about));
  GtkWindow *a = toplevel_of(about);
  g_assert_true(gtk_window_get_transient_for(a) == GTK_WINDOW(win));
  g_assert_cmpstr(adw_about_window_get_application_name(ADW_ABOUT_WINDOW(a)), ==, "Tomolab");
  g_assert_cmpint(adw_about_window_get_license_type(ADW_ABOUT_WINDOW(a)), ==, GTK_LICENSE_GPL_3_0);
  shot(GTK_WIDGET(a), "input-app-about");
  close_toplevel(win, about);
  /* Quit: g_application_run returns (app_timeout fails the test if it does not) */
  menu_click(win, "_Quit");
  r->quit_clicked = TRUE;
  r->quit_at = g_get_monotonic_time();
  r->timer = g_timeout_add_seconds(30, app_timeout, r);
  return G_SOURCE_REMOVE;
}

static void on_app_activate(GApplication *app, AppRun *r) {
  g_idle_add(app_script, r);
}

static void test_app_menu(void) {
  /* registering org.tomolab.Tomolab needs a session bus: dbus-run-session gives one */
  if (!g_getenv("DBUS_SESSION_BUS_ADDRESS"))
    g_error("no session bus (DBUS_SESSION_BUS_ADDRESS unset): run this test under "
            "dbus-run-session (Debian package dbus-daemon)");
  AppRun r = {.app = tl_application_new()};
  g_signal_connect_after(r.app, "activate", G_CALLBACK(on_app_activate), &r);
  char *argv[] = {"tomolab", NULL};
  int status = g_application_run(G_APPLICATION(r.app), 1, argv);
  double after_quit = (g_get_monotonic_time() - r.quit_at) * 1e-6;
  if (r.timer && !r.timed_out) g_source_remove(r.timer);
  g_test_message("g_application_run returned %d, %.2f s after Quit was clicked", status, after_quit);
  g_assert_true(r.ran);
  g_assert_true(r.quit_clicked);
  g_assert_false(r.timed_out);
  g_assert_cmpint(status, ==, 0);
  g_assert_cmpfloat(after_quit, <, 30);
  /* the windows go with the application */
  GList *windows = gtk_application_get_windows(GTK_APPLICATION(r.app));
  for (GList *l = windows; l; l = l->next) gtk_window_destroy(l->data);
  tl_gui_spin(0.2);
  g_object_unref(r.app);
}

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(path, name, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_DIR)) remove_tree(p);
    else g_unlink(p);
  }
  if (d) g_dir_close(d);
  g_rmdir(path);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  if (!tl_gui_input_init()) {
    g_print("1..0 # SKIP no X11 display with XTEST (run under xvfb-run)\n");
    return 0;
  }
  tmpdir = g_dir_make_tmp("tomolab-input-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  /* an empty cache: the first run on each grid computes its sensitivity image */
  g_autofree char *cache = g_build_filename(tmpdir, "cache", NULL);
  g_setenv("XDG_CACHE_HOME", cache, TRUE);
  scanner_path = tl_gui_write_ring(tmpdir, "input-ring", 8, 12, 4, 30);
  if (g_getenv("TL_INPUT_APP")) { /* the test input-app, under dbus-run-session */
    g_test_add_func("/gui/input/app-menu", test_app_menu);
  } else {
    g_test_add_func("/gui/input/toolbar", test_toolbar);
    g_test_add_func("/gui/input/views-and-menu", test_views_and_menu);
    g_test_add_func("/gui/input/shortcuts", test_shortcuts);
    g_test_add_func("/gui/input/progress", test_progress);
  }
  int rc = g_test_run();
  remove_tree(tmpdir);
  return rc;
}
