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
