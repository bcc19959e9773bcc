/* Start of every in-process GUI test. */
#pragma once
#include <glib.h>

/* Creates $XDG_RUNTIME_DIR, then gtk_test_init + adw_init and pins the Vulkan modules.
 * Without a display it prints a TAP skip and returns FALSE (the test script always runs the
 * GUI tests under xvfb-run, so there they never skip). */
gboolean tl_gui_test_init(int *argc, char ***argv);
