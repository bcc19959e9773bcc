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
/* A click of `button` (1 left, 3 right) at the widget's centre, then the events handled. The
 * press waits until GTK's pointer focus is in the widget (GTK sends a press there, not to the
 * widget under it: tl-gui-input.c); clicks, drags and wheel steps all start that way. */
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

/* The window's main menu through real clicks (tl-window.h's TlWindow; tl-gui-test.h's wait). */
typedef struct _TlWindow TlWindow;
/* The first mapped widget of `type` under root (depth first), or NULL. */
GtkWidget *tl_gui_find_mapped(GtkWidget *root, GType type);
/* Opens the main menu with one click on its button, once the menu is closed and the button
 * inactive, and returns its popover, mapped. */
GtkPopover *tl_gui_menu_open(TlWindow *win);
/* Clicks the item labelled `label` (mnemonic as the menu model spells it; scrolled into view
 * on a short screen) of the open menu `pop` and waits until the menu closed (popover unmapped,
 * button inactive). */
void tl_gui_menu_activate(TlWindow *win, GtkPopover *pop, const char *label);
