/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Start of every in-process GUI test. */
#pragma once
#include <glib.h>
#include <gtk/gtk.h>
#include "tl-window.h"
#include "tl-data-view.h"
#include "tl-test-common.h"

/* Creates $XDG_RUNTIME_DIR, then gtk_test_init + adw_init and pins the Vulkan modules.
 * Without a display it prints a TAP skip and returns FALSE (the test script always runs the
 * GUI tests under xvfb-run, so there they never skip). */
gboolean tl_gui_test_init(int *argc, char ***argv);

/* Condition on the window for tl_gui_wait_for. */
typedef gboolean (*TlGuiCond)(TlWindow *win, gpointer data);

/* Runs the main loop until cond holds or TL_GUI_WAIT_TIMEOUT_S pass (a 20 ms timer wakes the
 * blocking iteration to look at the clock); returns cond's last value. */
#define TL_GUI_WAIT_TIMEOUT_S 90
gboolean tl_gui_wait_for(TlWindow *win, TlGuiCond cond, gpointer data);

/* Runs the main loop for that long. */
void tl_gui_spin(double seconds);

/* Conditions: the device is open (or failed); no job is busy; the run is in state
 * GINT_TO_POINTER(TlRunState); at least GUINT_TO_POINTER(n) sub-iterations are done. */
gboolean tl_gui_is_ready(TlWindow *w, gpointer d);
gboolean tl_gui_is_idle(TlWindow *w, gpointer d);
gboolean tl_gui_in_state(TlWindow *w, gpointer d);
gboolean tl_gui_reached(TlWindow *w, gpointer d);
/* The data view d (a TlDataView) is idle with its histogram made; the window's data view has
 * made at least GUINT_TO_POINTER(n) expected planes and is idle. */
gboolean tl_gui_data_idle(TlWindow *w, gpointer d);
gboolean tl_gui_expected_after(TlWindow *w, gpointer d);

/* Activates a window action, asserting that it is enabled. */
void tl_gui_activate(TlWindow *win, const char *name, GVariant *param);
/* Destroys the window and runs the pending main-loop work. */
void tl_gui_destroy_window(TlWindow *win);
/* The texture's pixels (asserted non-NULL), for comparing what a view shows. */
GBytes *tl_gui_texture_bytes(GdkTexture *t);
/* Simulate… through the window's action: `events` of `phantom` on `scanner` (a preset name or a
 * scanner file), seed 7, the grid coarsened by `coarsen`. */
void tl_gui_simulate(TlWindow *win, const char *phantom, const char *scanner, double events,
                     guint coarsen);
/* A 1280 x 800 window, shown, its device open and its state Ready. */
TlWindow *tl_gui_new_window(void);
/* A ring scanner of `rings` x `sides` x `per_side` crystals (4 mm pitch, one module ring)
 * saved as DIR/NAME.scanner; the path, to free. */
char *tl_gui_write_ring(const char *dir, const char *name, guint rings, guint sides,
                        guint per_side, double radius_mm);
