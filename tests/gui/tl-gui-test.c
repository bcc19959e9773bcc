/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "tl-gui-test.h"
#include "tl-test-common.h"
#include <adwaita.h>
#include <glib/gstdio.h>
#include <gtk/gtk.h>

gboolean tl_gui_test_init(int *argc, char ***argv) {
  const char *runtime = g_getenv("XDG_RUNTIME_DIR");
  if (runtime)
    g_mkdir_with_parents(runtime, 0700);
  if (!g_getenv("DISPLAY") && !g_getenv("WAYLAND_DISPLAY")) {
    g_print("1..0 # SKIP no display: run under xvfb-run\n");
    return FALSE;
  }
  gtk_test_init(argc, argv, NULL);
  adw_init();
  tl_test_pin_vulkan_modules();
  return TRUE;
}

static gboolean wake(gpointer data) { return G_SOURCE_CONTINUE; }

gboolean tl_gui_wait_for(TlWindow *win, TlGuiCond cond, gpointer data) {
  gint64 end = g_get_monotonic_time() + TL_GUI_WAIT_TIMEOUT_S * G_USEC_PER_SEC;
  guint timer = g_timeout_add(20, wake, NULL);
  gboolean ok;
  while (!(ok = cond(win, data)) && g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
  g_source_remove(timer);
  return ok;
}

void tl_gui_spin(double seconds) {
  gint64 end = g_get_monotonic_time() + (gint64)(seconds * G_USEC_PER_SEC);
  guint timer = g_timeout_add(20, wake, NULL);
  while (g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
  g_source_remove(timer);
}

gboolean tl_gui_is_ready(TlWindow *w, gpointer d) {
  return tl_window_get_state(w) != TL_WINDOW_LOADING;
}

gboolean tl_gui_is_idle(TlWindow *w, gpointer d) { return !tl_window_is_busy(w); }

gboolean tl_gui_in_state(TlWindow *w, gpointer d) {
  return tl_window_has_run(w) && tl_window_get_run_state(w) == (TlRunState)GPOINTER_TO_INT(d);
}

gboolean tl_gui_reached(TlWindow *w, gpointer d) {
  return tl_window_get_sub_iterations(w) >= GPOINTER_TO_UINT(d);
}

gboolean tl_gui_data_idle(TlWindow *w, gpointer d) {
  return !tl_data_view_is_busy(d) && tl_data_view_get_total(d) >= 0;
}

gboolean tl_gui_expected_after(TlWindow *w, gpointer d) {
  TlDataView *dv = tl_window_get_data_view(w);
  return tl_data_view_get_expected_updates(dv) >= GPOINTER_TO_UINT(d) && !tl_data_view_is_busy(dv);
}

void tl_gui_activate(TlWindow *win, const char *name, GVariant *param) {
  g_assert_true(g_action_group_get_action_enabled(G_ACTION_GROUP(win), name));
  g_action_group_activate_action(G_ACTION_GROUP(win), name, param);
}

void tl_gui_destroy_window(TlWindow *win) {
  gtk_window_destroy(GTK_WINDOW(win));
  while (g_main_context_iteration(NULL, FALSE)) {}
}

GBytes *tl_gui_texture_bytes(GdkTexture *t) {
  g_assert_nonnull(t);
  gsize stride = gdk_texture_get_width(t) * 4;
  guchar *data = g_malloc(stride * gdk_texture_get_height(t));
  gdk_texture_download(t, data, stride);
  return g_bytes_new_take(data, stride * gdk_texture_get_height(t));
}

char *tl_gui_write_ring(const char *dir, const char *name, guint rings, guint sides,
                        guint per_side, double radius_mm) {
  TlScannerLayout l = {0};
  l.kind = TL_SCANNER_RING;
  l.n_rings = rings;
  l.n_sides = sides;
  l.crystals_per_side = per_side;
  l.module_rings = rings;
  l.radius_mm = radius_mm;
  l.crystal_pitch_mm = 4;
  l.ring_pitch_mm = 4;
  g_autoptr(GError) error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_from_layout(name, &l, NULL, &error);
  g_assert_no_error(error);
  char *path = g_strdup_printf("%s/%s.scanner", dir, name);
  g_assert_true(tl_scanner_save(s, path, &error));
  g_assert_no_error(error);
  return path;
}

void tl_gui_simulate(TlWindow *win, const char *phantom, const char *scanner, double events,
                     guint coarsen) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", phantom);
  g_variant_dict_insert(&d, "scanner", "s", scanner);
  g_variant_dict_insert(&d, "events", "d", events);
  g_variant_dict_insert(&d, "seed", "t", (guint64)7);
  g_variant_dict_insert(&d, "coarsen", "u", coarsen);
  tl_gui_activate(win, "simulate", g_variant_dict_end(&d));
}

TlWindow *tl_gui_new_window(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 1280, 800);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  tl_gui_spin(0.3);
  return win;
}
