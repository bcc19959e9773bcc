/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Device choice: ranking, TOMOLAB_DEVICE by index and by name, clear errors, pipeline cache. */
#include "tl-test-common.h"
#include <string.h>

static GArray *devices(void) {
  GError *error = NULL;
  GArray *d = tl_enumerate_devices(&error);
  g_assert_no_error(error);
  g_assert_cmpuint(d->len, >, 0);
  return d;
}

static void test_default_choice(void) {
  g_unsetenv("TOMOLAB_DEVICE");
  g_autoptr(GArray) devs = devices();
  /* independent ranking: the first usable device of the highest type class */
  static const VkPhysicalDeviceType order[] = {
      VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
      VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU,
      VK_PHYSICAL_DEVICE_TYPE_OTHER};
  int expect = -1;
  for (gsize k = 0; k < G_N_ELEMENTS(order) && expect < 0; k++)
    for (guint i = 0; i < devs->len && expect < 0; i++) {
      const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
      if (d->usable && d->type == order[k]) expect = (int)i;
    }
  g_assert_cmpint(expect, >=, 0);
  TlContext *ctx = tl_test_context();
  const TlDeviceInfo *info = tl_context_info(ctx);
  g_assert_cmpuint(info->index, ==, (guint)expect);
  g_assert_true(info->usable && info->buffer_device_address);
  g_assert_cmpuint(info->max_storage_buffer_range, >, 0);
  g_assert_cmpuint(info->max_compute_work_group_count[0], >=, 65535);
  g_assert_cmpuint(info->n_heaps, >, 0);
  g_assert_cmpuint(info->subgroup_size, >, 0);
  tl_test_context_done(ctx);
}

static void test_rank_order(void) {
  g_assert_cmpint(tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU), >,
                  tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU));
  g_assert_cmpint(tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU), >,
                  tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU));
  g_assert_cmpint(tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU), >,
                  tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_CPU));
  g_assert_cmpint(tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_CPU), >,
                  tl_device_type_rank(VK_PHYSICAL_DEVICE_TYPE_OTHER));
}

/* Every device, by index and by a case-changed name fragment, through the environment. */
static void test_env_selects(void) {
  g_autoptr(GArray) devs = devices();
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    if (!d->usable) continue;
    g_autofree char *idx = g_strdup_printf("%u", i);
    g_setenv("TOMOLAB_DEVICE", idx, TRUE);
    TlContext *ctx = tl_test_context();
    g_assert_cmpuint(tl_context_info(ctx)->index, ==, i);
    g_assert_cmpstr(tl_context_info(ctx)->name, ==, d->name);
    tl_test_context_done(ctx);

    /* the first word of the name, upper-cased: matching ignores case */
    g_auto(GStrv) words = g_strsplit(d->name, " ", 2);
    g_autofree char *frag = g_ascii_strup(words[0], -1);
    g_setenv("TOMOLAB_DEVICE", frag, TRUE);
    ctx = tl_test_context();
    g_assert_nonnull(strstr(tl_context_info(ctx)->name, words[0]));
    tl_test_context_done(ctx);
  }
  g_unsetenv("TOMOLAB_DEVICE");
}

static void test_unknown_device(void) {
  GError *error = NULL;
  g_setenv("TOMOLAB_DEVICE", "no-such-gpu-9000", TRUE);
  TlContext *ctx = tl_context_new(NULL, &error);
  g_assert_null(ctx);
  g_assert_error(error, TL_ERROR, TL_ERROR_NO_DEVICE);
  /* the message names what was asked for and what exists */
  g_assert_nonnull(strstr(error->message, "no-such-gpu-9000"));
  g_autoptr(GArray) devs = devices();
  g_assert_nonnull(strstr(error->message, g_array_index(devs, TlDeviceInfo, 0).name));
  g_clear_error(&error);

  g_setenv("TOMOLAB_DEVICE", "99", TRUE);
  ctx = tl_context_new(NULL, &error);
  g_assert_null(ctx);
  g_assert_error(error, TL_ERROR, TL_ERROR_NO_DEVICE);
  g_assert_nonnull(strstr(error->message, "99"));
  g_clear_error(&error);
  g_unsetenv("TOMOLAB_DEVICE");

  /* an explicit selector overrides the environment */
  g_setenv("TOMOLAB_DEVICE", "no-such-gpu-9000", TRUE);
  ctx = tl_context_new("0", &error);
  g_assert_no_error(error);
  tl_test_context_done(ctx);
  g_unsetenv("TOMOLAB_DEVICE");
}

static void test_pipeline_cache(void) {
  TlContext *ctx = tl_test_context();
  g_autofree char *path = g_strdup(tl_context_pipeline_cache_path(ctx));
  g_autofree char *dir = g_path_get_dirname(path);
  g_assert_true(g_str_has_suffix(dir, "tomolab"));
  GError *error = NULL;
  g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", 24, NULL, 0, &error);
  g_assert_no_error(error);
  g_clear_pointer(&p, tl_pipeline_free);
  tl_test_context_done(ctx); /* saves */
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &data, &len, NULL));
  g_assert_cmpuint(len, >=, 32);

  /* a corrupt cache file is ignored, not fatal */
  g_assert_true(g_file_set_contents(path, "garbage, not a pipeline cache", -1, NULL));
  ctx = tl_test_context();
  p = tl_pipeline_new_builtin(ctx, "fill_f32", 24, NULL, 0, &error);
  g_assert_no_error(error);
  g_clear_pointer(&p, tl_pipeline_free);
  tl_test_context_done(ctx);
  g_clear_pointer(&data, g_free);
  g_assert_true(g_file_get_contents(path, &data, &len, NULL));
  g_assert_cmpuint(len, >=, 32); /* rewritten as a valid cache */
  guint32 version;
  memcpy(&version, data + 4, 4);
  g_assert_cmpuint(version, ==, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
}

static void test_bad_pipeline(void) {
  TlContext *ctx = tl_test_context();
  GError *error = NULL;
  g_assert_null(tl_pipeline_new_builtin(ctx, "no_such_kernel", 0, NULL, 0, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  guint32 junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  TlPipelineDesc d = {.spirv = junk, .spirv_size = sizeof junk, .name = "junk"};
  g_assert_null(tl_pipeline_new(ctx, &d, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_SHADER);
  g_clear_error(&error);
  gsize size;
  const guint32 *words = tl_shader_spirv("fill_f32", &size);
  d = (TlPipelineDesc){.spirv = words, .spirv_size = size, .push_size = 24,
                       .local_size = tl_context_info(ctx)->max_compute_work_group_invocations + 1};
  g_assert_null(tl_pipeline_new(ctx, &d, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_test_add_func("/device/default-choice", test_default_choice);
  g_test_add_func("/device/rank-order", test_rank_order);
  g_test_add_func("/device/env-selects", test_env_selects);
  g_test_add_func("/device/unknown", test_unknown_device);
  g_test_add_func("/device/pipeline-cache", test_pipeline_cache);
  g_test_add_func("/device/bad-pipeline", test_bad_pipeline);
  return g_test_run();
}
