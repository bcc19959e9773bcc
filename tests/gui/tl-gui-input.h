/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Real input events for GUI tests: the X server's XTEST extension (what xdotool uses) moves
 * the pointer, presses buttons and keys on the screen, so the events go through the X server,
 * GDK and GTK's gestures as a person's do - popover menus included, which are windows of their
 * own. libXtst is opened at run time (its development files are not a build dependency). */
#pragma once
#include <gtk/gtk.h>

/* Whether the display is X11 with XTEST (under xvfb-run it is). */
gboolean tl_gui_input_init(void);
/* The pointer to (x, y) in `widget`'s coordinates (its native's surface located on the screen). */
void tl_gui_input_move(GtkWidget *widget, double x, double y);
/* A click of `button` (1 left, 3 right) at the widget's centre, then the events handled. */
void tl_gui_input_click(GtkWidget *widget, guint button);
/* A drag with `button` from (x0, y0) to (x1, y1) in the widget's coordinates, in `steps`
 * motions, holding the modifier keys (GDK_KEY_Control_L, ...; 0-terminated, may be NULL). */
void tl_gui_input_drag(GtkWidget *widget, guint button, double x0, double y0, double x1,
                       double y1, guint steps, const guint *modifiers);
/* A wheel step up (dir < 0) or down at the widget's centre, with modifiers as above. */
void tl_gui_input_scroll(GtkWidget *widget, int dir, const guint *modifiers);
/* Key `keyval` (GDK_KEY_space, ...) pressed and released with the modifiers held. */
void tl_gui_input_key(guint keyval, const guint *modifiers);
/* Handles what arrived (the server's events reach GDK through the main loop). */
void tl_gui_input_sync(void);
