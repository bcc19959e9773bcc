/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "tl-test-common.h"
#include <dlfcn.h>
#include <glib/gstdio.h>

/* The loader unloads the driver and layers when an instance goes away; a one-time
 * allocation of theirs then shows in LeakSanitizer as "<unknown module>", which no
 * suppression can name. Keeping them mapped lets tests/lsan.supp name them. */
void tl_test_pin_vulkan_modules(void) {
  static const char *libs[] = {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so",
                               "libvulkan_radeon.so", "libvulkan_intel.so",
                               "libvulkan_intel_hasvk.so", "libVkLayer_MESA_device_select.so"};
  for (gsize i = 0; i < G_N_ELEMENTS(libs); i++) dlopen(libs[i], RTLD_NOW | RTLD_NODELETE);
}

void tl_test_init(int *argc, char ***argv) {
  g_test_init(argc, argv, NULL);
  tl_test_pin_vulkan_modules();
}

TlContext *tl_test_context(void) {
  GError *error = NULL;
  TlContext *ctx = tl_context_new(NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(ctx);
  /* the suite must run with the validation layer (meson sets TOMOLAB_VALIDATE=1) */
  g_assert_true(tl_context_validation_enabled(ctx));
  return ctx;
}

void tl_test_context_done(TlContext *ctx) {
  g_assert_cmpuint(tl_context_validation_messages(ctx), ==, 0);
  tl_context_free(ctx);
}

TlArray *tl_test_upload(TlContext *ctx, const float *data, guint64 n) {
  GError *error = NULL;
  TlArray *a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  if (data) g_assert_true(tl_array_upload(a, data, &error));
  g_assert_no_error(error);
  return a;
}

void tl_test_fill(TlContext *ctx, TlStream *s, TlArray *a, float value, const char *label) {
  struct {
    TlPush1D h;
    guint64 a;
    float value;
    guint32 pad;
  } push = {.a = tl_array_address(a), .value = value};
  GError *error = NULL;
  g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", sizeof push, NULL, 0, &error);
  g_assert_no_error(error);
  g_assert_true(tl_stream_dispatch_1d(s, p, label, tl_array_length(a), &push, &error));
  g_assert_no_error(error);
  /* the pipeline may be freed once recorded work has run */
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
}

void tl_test_remove_tree(const char *path) {
  if (!path) return;
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    for (const char *n; d && (n = g_dir_read_name(d));) {
      g_autofree char *p = g_build_filename(path, n, NULL);
      tl_test_remove_tree(p);
    }
  }
  g_remove(path);
}
