/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GUI smoke test: the window opens a device on its worker thread and shows what
 * tl_context_info() says; a missing device ends on the error page, not in a crash. */
#include "tl-gui-test.h"
#include <string.h>
#include <adwaita.h>
#include "tl-window.h"

#define WAIT_TIMEOUT_S 120

static gboolean wake(gpointer data) { return G_SOURCE_CONTINUE; }

/* Runs the main loop until the worker has answered; the timer makes sure the
 * blocking iteration wakes up to look at the clock. */
static TlWindowState wait_loaded(TlWindow *win) {
  gint64 end = g_get_monotonic_time() + WAIT_TIMEOUT_S * G_USEC_PER_SEC;
  guint timer = g_timeout_add(50, wake, NULL);
  while (tl_window_get_state(win) == TL_WINDOW_LOADING && g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
  g_source_remove(timer);
  return tl_window_get_state(win);
}

static void test_shows_device(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_LOADING);

  TlWindowState state = wait_loaded(win);
  if (state == TL_WINDOW_FAILED)
    g_test_message("error page: %s", tl_window_get_error_text(win));
  g_assert_cmpint(state, ==, TL_WINDOW_READY);

  TlContext *ctx = tl_window_get_context(win);
  g_assert_nonnull(ctx);
  const TlDeviceInfo *info = tl_context_info(ctx);
  TlDevicePanel *panel = tl_window_get_device_panel(win);
  g_assert_cmpstr(tl_device_panel_get_value(panel, "name"), ==, info->name);

  g_autofree char *range = g_strdup_printf("%" G_GUINT64_FORMAT, info->max_storage_buffer_range);
  const char *shown = tl_device_panel_get_value(panel, "max-storage-buffer-range");
  g_assert_nonnull(shown);
  g_assert_nonnull(strstr(shown, range));

  g_autofree char *api = tl_format_api_version(info->api_version);
  g_assert_cmpstr(tl_device_panel_get_value(panel, "api-version"), ==, api);
  g_assert_cmpint(tl_device_panel_get_marked_index(panel), ==, (int)info->index);
  const char *validation = tl_device_panel_get_value(panel, "validation");
  g_assert_true(g_str_has_prefix(validation, tl_context_validation_enabled(ctx) ? "On" : "Off"));
  g_assert_cmpuint(tl_context_validation_messages(ctx), ==, 0);

  tl_gui_destroy_window(win);
}

static void test_missing_device(void) {
  TlWindow *win = tl_window_new(NULL, "no-such-device-tomolab-test");
  gtk_window_present(GTK_WINDOW(win));
  g_assert_cmpint(wait_loaded(win), ==, TL_WINDOW_FAILED);
  g_assert_null(tl_window_get_context(win));
  const GError *error = tl_window_get_error(win);
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(tl_window_get_error_text(win), error->message));
  tl_gui_destroy_window(win);
}

/* Closing the window while the worker runs must not touch the disposed widgets. */
static void test_close_while_loading(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  g_object_add_weak_pointer(G_OBJECT(win), (gpointer *)&win);
  gtk_window_present(GTK_WINDOW(win));
  gtk_window_destroy(GTK_WINDOW(win));
  gint64 end = g_get_monotonic_time() + WAIT_TIMEOUT_S * G_USEC_PER_SEC;
  guint timer = g_timeout_add(50, wake, NULL);
  while (win && g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
  g_source_remove(timer);
  g_assert_null(win); /* the GTask let go of it once the worker returned */
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  g_test_add_func("/gui/window/shows-device", test_shows_device);
  g_test_add_func("/gui/window/missing-device", test_missing_device);
  g_test_add_func("/gui/window/close-while-loading", test_close_while_loading);
  return g_test_run();
}
