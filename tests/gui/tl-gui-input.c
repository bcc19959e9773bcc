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

static void modifiers_set(const guint *mods, Bool press) {
  for (guint i = 0; mods && mods[i]; i++)
    fake_key(xdpy, XKeysymToKeycode(xdpy, mods[i]), press, 0);
}

void tl_gui_input_click(GtkWidget *widget, guint button) {
  tl_gui_input_move(widget, gtk_widget_get_width(widget) / 2.0, gtk_widget_get_height(widget) / 2.0);
  fake_button(xdpy, button, True, 0);
  tl_gui_input_sync();
  fake_button(xdpy, button, False, 0);
  tl_gui_input_sync();
}

void tl_gui_input_drag(GtkWidget *widget, guint button, double x0, double y0, double x1,
                       double y1, guint steps, const guint *modifiers) {
  modifiers_set(modifiers, True);
  tl_gui_input_move(widget, x0, y0);
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
  tl_gui_input_move(widget, gtk_widget_get_width(widget) / 2.0, gtk_widget_get_height(widget) / 2.0);
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
