/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli info: devices, the chosen one, features and limits; with files, what each holds
 * (format detected by content, compute/dataset/tl-formats.h) and, with --defaults, the
 * dataset's defaults every door uses (compute/dataset/tl-dataset.h). */
#include "tl-cli.h"
#include "dataset/tl-dataset.h"
#include <stdio.h>

static void print_size(const char *what, guint64 bytes) {
  printf("  %-34s %" G_GUINT64_FORMAT " (%.1f MiB)\n", what, bytes, bytes / 1048576.0);
}

static void print_device(const TlDeviceInfo *d, gboolean validation, const char *cache) {
  printf("Chosen device %u: %s\n", d->index, d->name);
  printf("  %-34s %s\n", "type", tl_device_type_name(d->type));
  printf("  %-34s %s (%s)\n", "driver", d->driver_name, d->driver_info);
  printf("  %-34s %u.%u.%u\n", "Vulkan API", VK_API_VERSION_MAJOR(d->api_version),
         VK_API_VERSION_MINOR(d->api_version), VK_API_VERSION_PATCH(d->api_version));
  printf("Features:\n");
  printf("  %-34s %s\n", "float32 atomic add",
         d->float32_atomic_add ? "yes" : "no (compare-and-swap fallback)");
  printf("  %-34s %s\n", "buffer device address", d->buffer_device_address ? "yes" : "no");
  printf("  %-34s %s, period %.3f ns, %u valid bits\n", "timestamps",
         d->timestamps ? "yes" : "no", d->timestamp_period_ns, d->timestamp_valid_bits);
  printf("  %-34s %s / %s\n", "shaderInt64 / shaderFloat64", d->shader_int64 ? "yes" : "no",
         d->shader_float64 ? "yes" : "no");
  printf("  %-34s %s\n", "validation layer", validation ? "on" : "off");
  printf("Limits:\n");
  printf("  %-34s %u\n", "subgroup size", d->subgroup_size);
  print_size("maxStorageBufferRange", d->max_storage_buffer_range);
  printf("  %-34s %u x %u x %u\n", "maxComputeWorkGroupCount", d->max_compute_work_group_count[0],
         d->max_compute_work_group_count[1], d->max_compute_work_group_count[2]);
  printf("  %-34s %u x %u x %u\n", "maxComputeWorkGroupSize", d->max_compute_work_group_size[0],
         d->max_compute_work_group_size[1], d->max_compute_work_group_size[2]);
  printf("  %-34s %u\n", "maxComputeWorkGroupInvocations", d->max_compute_work_group_invocations);
  printf("  %-34s %u\n", "maxComputeSharedMemorySize", d->max_compute_shared_memory);
  printf("  %-34s %u\n", "maxPushConstantsSize", d->max_push_constants_size);
  print_size("maxMemoryAllocationSize", d->max_memory_allocation_size);
  if (d->max_buffer_size) print_size("maxBufferSize", d->max_buffer_size);
  printf("Memory heaps:\n");
  for (guint i = 0; i < d->n_heaps; i++)
    printf("  heap %u: %.1f GiB%s\n", i, d->heaps[i].size / 1073741824.0,
           d->heaps[i].device_local ? " (device local)" : "");
  printf("Pipeline cache: %s\n", cache);
}

int tl_cli_info(int argc, char **argv) {
  const char *device = NULL;
  GOptionEntry entries[] = {
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device,
       "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)", "SEL"},
      {NULL}};
  g_autoptr(GOptionContext) oc =
      g_option_context_new("[FILE...] - show Vulkan devices and limits, or describe data files");
  g_option_context_add_main_entries(oc, entries, NULL);
  g_option_context_set_description(
      oc, "With files: the format (detected by content), what the file holds (modality,\n"
          "scanner, counts, grid...) for every format 'tomolab-cli info --formats' lists;\n"
          "then each is loaded as a reconstruction would load it (read whole): a file the\n"
          "loader refuses exits 1 with its message.");
  gboolean list_formats = FALSE, defaults = FALSE;
  GOptionEntry more[] = {{"formats", 0, 0, G_OPTION_ARG_NONE, &list_formats,
                          "List the file formats read and written", NULL},
                         {"defaults", 0, 0, G_OPTION_ARG_NONE, &defaults,
                          "With files: also print what each allows and the defaults of "
                          "recon / ct-recon (grid, subsets, CT centre: a search still to do is said so)", NULL},
                         {NULL}};
  g_option_context_add_main_entries(oc, more, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) {
    fprintf(stderr, "tomolab-cli info: %s\n", error->message);
    return 2;
  }
  if (list_formats) {
    tl_cli_print_formats(stdout);
    return 0;
  }
  if (argc > 1) {
    int status = 0;
    for (int i = 1; i < argc; i++) {
      g_autoptr(GString) out = g_string_new(NULL);
      /* the description, then the loader a reconstruction runs: no "OK" on a file the
       * loaders refuse (tl_dataset_info) */
      if (!tl_dataset_info(argv[i], defaults, out, &error)) {
        if (out->len) printf("%s%s", i > 1 ? "\n" : "", out->str); /* what the header says */
        fprintf(stderr, "tomolab-cli info: %s\n", error->message);
        g_clear_error(&error);
        status = 1;
        continue;
      }
      printf("%s%s", i > 1 ? "\n" : "", out->str);
    }
    return status;
  }
  g_autoptr(GArray) devs = tl_enumerate_devices(&error);
  if (!devs) {
    fprintf(stderr, "tomolab-cli info: %s\n", error->message);
    return 1;
  }
  printf("Vulkan devices:\n");
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    printf("  %u: %-40s %-15s %s\n", d->index, d->name, tl_device_type_name(d->type),
           d->usable ? "usable" : d->unusable_reason);
  }
  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) {
    fprintf(stderr, "tomolab-cli info: %s\n", error->message);
    return 1;
  }
  print_device(tl_context_info(ctx), tl_context_validation_enabled(ctx),
               tl_context_pipeline_cache_path(ctx));
  printf("\n");
  tl_cli_print_registry(stdout);
  printf("\n");
  tl_cli_print_formats(stdout);
  return 0;
}
