/* SPDX-License-Identifier: GPL-3.0-or-later */
/* XTEST through dlopen: the four calls below are its whole use. */
#include "tl-gui-input.h"
#include "tl-gui-test.h"
#include <dlfcn.h>
#include <gdk/x11/gdkx.h>

typedef int (*FakeMotion)(Display *, int, int, int, unsigned long);
typedef int (*FakeButton)(Display *, unsigned int, Bool, unsigned long);
typedef int (*FakeKey)(Display *, unsigned int, Bool, unsigned long);
typedef Bool (*QueryExtension)(Display *, int *, int *, int *, int *);

static FakeMotion fake_motion;
static FakeButton fake_button;
static FakeKey fake_key;
static Display *xdpy;

gboolean tl_gui_input_init(void) {
  GdkDisplay *d = gdk_display_get_default();
  if (!d || !GDK_IS_X11_DISPLAY(d)) return FALSE;
  void *lib = dlopen("libXtst.so.6", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return FALSE;
  QueryExtension query = (QueryExtension)dlsym(lib, "XTestQueryExtension");
  fake_motion = (FakeMotion)dlsym(lib, "XTestFakeMotionEvent");
  fake_button = (FakeButton)dlsym(lib, "XTestFakeButtonEvent");
  fake_key = (FakeKey)dlsym(lib, "XTestFakeKeyEvent");
  xdpy = gdk_x11_display_get_xdisplay(d);
  int a, b, c, e;
  return query && fake_motion && fake_button && fake_key && query(xdpy, &a, &b, &c, &e);
}

void tl_gui_input_sync(void) {
  XSync(xdpy, False);
  tl_gui_spin(0.05);
  while (g_main_context_iteration(NULL, FALSE)) {}
}

/* Screen coordinates of (x, y) in the widget: the native's surface origin on the root window
 * plus the surface transform (client-side decorations' margin) plus the widget's offset. */
static void screen_point(GtkWidget *widget, double x, double y, int *sx, int *sy) {
  GtkNative *native = gtk_widget_get_native(widget);
  g_assert_nonnull(native);
  graphene_point_t in = GRAPHENE_POINT_INIT((float)x, (float)y), out;
  g_assert_true(gtk_widget_compute_point(widget, GTK_WIDGET(native), &in, &out));
  double tx, ty;
  gtk_native_get_surface_transform(native, &tx, &ty);
  Window xid = gdk_x11_surface_get_xid(gtk_native_get_surface(native)), child;
  int rx, ry;
  XTranslateCoordinates(xdpy, xid, DefaultRootWindow(xdpy), 0, 0, &rx, &ry, &child);
  *sx = rx + (int)(tx + out.x);
  *sy = ry + (int)(ty + out.y);
}

void tl_gui_input_move(GtkWidget *widget, double x, double y) {
  int sx, sy;
  screen_point(widget, x, y, &sx, &sy);
  fake_motion(xdpy, -1, sx, sy, 0);
  tl_gui_input_sync();
}

/* Why a press needs more than a motion before it. GTK 4.8 sends a press or a wheel step to the
 * window's pointer focus, the widget its last pointer motion was picked on (gtkmain.c,
 * handle_pointing_event), not to the widget under the press. And GTK synthesizes motions of its
 * own: after a relayout of the window it asks for one on the surface of the pointer focus
 * (gtk_window_native_layout, gdk_surface_request_motion), delivered on a later frame. When a
 * menu item closes its popover the focus is still the popover, the relayout the item caused
 * (a view shown, the stack switched, a plot cleared) asks for a motion on the popover's hidden
 * surface, and that motion, picked on nothing, puts the focus back on the popover - also a
 * frame after the test's real motion had moved it to the menu button. The press then went to
 * the hidden popover and did nothing: measured with the events traced, 7 lost clicks in 70
 * (3 runs of views-and-menu, 2026-11-28), each with the focus re-entering the popover between
 * the motion and the press, and no click lost without that. So the pointer is moved onto the
 * widget from outside it (a motion inside it would not be a crossing), GTK's focus must be in
 * the widget (a motion controller's contains-pointer), and still be there after two frames
 * have delivered what was pending; if a synthesized motion took it away, the pointer moves
 * out and in again (the focus is then the widget's, so no motion goes to the old surface). */
static void on_flush(GdkFrameClock *clock, gpointer data) {
  (*(guint *)data)++;
}

/* Runs `frames` flush-events phases of the widget's frame clock (shared by its window and the
 * window's popovers: GDK delivers the requested motions there, gdk_surface_ensure_motion). */
static void run_frames(GtkWidget *widget, guint frames) {
  GdkFrameClock *clock = gtk_widget_get_frame_clock(widget);
  g_assert_nonnull(clock);
  guint seen = 0;
  gulong h = g_signal_connect(clock, "flush-events", G_CALLBACK(on_flush), &seen);
  gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
  for (guint want = 1; want <= frames; want++) {
    gdk_frame_clock_request_phase(clock, GDK_FRAME_CLOCK_PHASE_FLUSH_EVENTS);
    while (seen < want && g_get_monotonic_time() < end) tl_gui_spin(0.01);
  }
  g_signal_handler_disconnect(clock, h);
  g_assert_cmpuint(seen, >=, frames);
}

/* The pointer at (x, y) in the widget with GTK's pointer focus in the widget (see above). A
 * motion controller counts a focus in any descendant as inside, and a GtkMenuButton's popover
 * is its child: there the controller goes on the button's toggle (its first child), the press's
 * target, or the focus caught in the hidden popover would pass. */
static void point_into(GtkWidget *widget, double x, double y) {
  GtkWidget *target = GTK_IS_MENU_BUTTON(widget) ? gtk_widget_get_first_child(widget) : widget;
  GtkEventController *motion = gtk_event_controller_motion_new();
  gtk_widget_add_controller(target, motion); /* the widget holds it */
  GtkEventControllerMotion *m = GTK_EVENT_CONTROLLER_MOTION(motion);
  gboolean held = FALSE;
  for (int attempt = 0; attempt < 5 && !held; attempt++) {
    if (attempt > 0)
      g_test_message("pointer focus left %s for another surface after the motion onto it: moved "
                     "out and in again", G_OBJECT_TYPE_NAME(widget));
    tl_gui_input_move(widget, x - gtk_widget_get_width(widget) - 2, y); /* left of it */
    tl_gui_input_move(widget, x, y);
    for (int i = 0; i < 250 && !gtk_event_controller_motion_contains_pointer(m); i++)
      tl_gui_spin(0.02);
    run_frames(widget, 2);
    held = gtk_event_controller_motion_contains_pointer(m);
  }
  gtk_widget_remove_controller(target, motion);
  if (!held) g_error("the pointer focus never stayed in %s", G_OBJECT_TYPE_NAME(widget));
}

static void modifiers_set(const guint *mods, Bool press) {
  for (guint i = 0; mods && mods[i]; i++)
    fake_key(xdpy, XKeysymToKeycode(xdpy, mods[i]), press, 0);
}

void tl_gui_input_click(GtkWidget *widget, guint button) {
  point_into(widget, gtk_widget_get_width(widget) / 2.0, gtk_widget_get_height(widget) / 2.0);
  fake_button(xdpy, button, True, 0);
  tl_gui_input_sync();
  fake_button(xdpy, button, False, 0);
  tl_gui_input_sync();
}

void tl_gui_input_drag(GtkWidget *widget, guint button, double x0, double y0, double x1,
                       double y1, guint steps, const guint *modifiers) {
  point_into(widget, x0, y0);
  modifiers_set(modifiers, True);
  fake_button(xdpy, button, True, 0);
  tl_gui_input_sync();
  for (guint i = 1; i <= MAX(steps, 1); i++) {
    double t = (double)i / MAX(steps, 1);
    tl_gui_input_move(widget, x0 + t * (x1 - x0), y0 + t * (y1 - y0));
  }
  fake_button(xdpy, button, False, 0);
  tl_gui_input_sync();
  modifiers_set(modifiers, False);
  tl_gui_input_sync();
}

void tl_gui_input_scroll(GtkWidget *widget, int dir, const guint *modifiers) {
  point_into(widget, gtk_widget_get_width(widget) / 2.0, gtk_widget_get_height(widget) / 2.0);
  modifiers_set(modifiers, True);
  guint button = dir < 0 ? 4 : 5; /* the core protocol's wheel buttons */
  fake_button(xdpy, button, True, 0);
  fake_button(xdpy, button, False, 0);
  tl_gui_input_sync();
  modifiers_set(modifiers, False);
  tl_gui_input_sync();
}

void tl_gui_input_key(guint keyval, const guint *modifiers) {
  modifiers_set(modifiers, True);
  KeyCode code = XKeysymToKeycode(xdpy, keyval);
  g_assert_cmpuint(code, !=, 0);
  fake_key(xdpy, code, True, 0);
  fake_key(xdpy, code, False, 0);
  tl_gui_input_sync();
  modifiers_set(modifiers, False);
  tl_gui_input_sync();
}

GtkWidget *tl_gui_find_mapped(GtkWidget *root, GType type) {
  if (G_TYPE_CHECK_INSTANCE_TYPE(root, type) && gtk_widget_get_mapped(root)) return root;
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *w = tl_gui_find_mapped(c, type);
    if (w) return w;
  }
  return NULL;
}

static gboolean popover_shown(TlWindow *w, gpointer d) {
  (void)w;
  return gtk_widget_get_mapped(GTK_WIDGET(d));
}
/* Closed: unmapped, and the menu button's toggle (its first child) inactive again, so that the
 * next click opens the menu rather than toggling it shut. */
static gboolean menu_closed(TlWindow *w, gpointer d) {
  GtkWidget *button = tl_gui_find_mapped(GTK_WIDGET(w), GTK_TYPE_MENU_BUTTON);
  return !gtk_widget_get_mapped(GTK_WIDGET(d)) && button &&
         !gtk_toggle_button_get_active(GTK_TOGGLE_BUTTON(gtk_widget_get_first_child(button)));
}

GtkPopover *tl_gui_menu_open(TlWindow *win) {
  GtkWidget *button = tl_gui_find_mapped(GTK_WIDGET(win), GTK_TYPE_MENU_BUTTON);
  g_assert_nonnull(button);
  GtkPopover *pop = gtk_menu_button_get_popover(GTK_MENU_BUTTON(button));
  g_assert_true(tl_gui_wait_for(win, menu_closed, pop));
  /* one click: the press reaches the button (tl_gui_input_click), so the menu opens; popup()
   * makes the popover visible at once, it maps a frame or more later */
  tl_gui_input_click(button, 1);
  g_assert_true(tl_gui_wait_for(win, popover_shown, pop));
  tl_gui_spin(0.2); /* laid out */
  return pop;
}

/* The menu item (a GtkModelButton, whose action GTK keeps to itself) labelled `label` as the
 * menu model spells it, mnemonic included (the item's text has it removed). */
static GtkWidget *find_item(GtkWidget *root, const char *label) {
  if (g_str_equal(G_OBJECT_TYPE_NAME(root), "GtkModelButton")) {
    g_autofree char *text = NULL;
    g_object_get(root, "text", &text, NULL);
    g_autoptr(GString) bare = g_string_new(NULL);
    for (const char *c = label; *c; c++)
      if (*c != '_') g_string_append_c(bare, *c);
    if (g_strcmp0(text, bare->str) == 0) return root;
  }
  for (GtkWidget *c = gtk_widget_get_first_child(root); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *w = find_item(c, label);
    if (w) return w;
  }
  return NULL;
}

static void dump(GtkWidget *w, int depth) {
  g_autofree char *text = NULL;
  if (g_str_equal(G_OBJECT_TYPE_NAME(w), "GtkModelButton")) g_object_get(w, "text", &text, NULL);
  if (text) g_printerr("%*sitem \"%s\"\n", 2 * depth, "", text);
  for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c))
    dump(c, depth + 1);
}

void tl_gui_menu_activate(TlWindow *win, GtkPopover *pop, const char *label) {
  GtkWidget *item = find_item(GTK_WIDGET(pop), label);
  if (!item) {
    dump(GTK_WIDGET(pop), 0);
    g_error("menu item %s not found", label);
  }
  g_assert_true(gtk_widget_is_sensitive(item));
  GtkWidget *scroll = gtk_widget_get_ancestor(item, GTK_TYPE_SCROLLED_WINDOW);
  if (scroll) { /* a long menu on a short screen scrolls */
    graphene_rect_t b;
    g_assert_true(gtk_widget_compute_bounds(item, scroll, &b));
    GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(scroll));
    double h = gtk_widget_get_height(scroll);
    if (b.origin.y < 0 || b.origin.y + b.size.height > h)
      gtk_adjustment_set_value(adj, gtk_adjustment_get_value(adj) + b.origin.y - h / 2);
    tl_gui_spin(0.1);
  }
  tl_gui_input_click(item, 1);
  g_assert_true(tl_gui_wait_for(win, menu_closed, pop));
}
