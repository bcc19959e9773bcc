/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlContext: instance, device choice, logical device, queue and pipeline cache. */
#define _GNU_SOURCE /* dl_iterate_phdr (sanitizer builds) */
#include "tl-context.h"
#include "tl-device-info.h"
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define TL_ASAN 1
#include <dlfcn.h>
#include <link.h>
#endif

#define TL_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

struct _TlContext {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  gboolean validation;
  gint validation_messages; /* atomic */
  VkPhysicalDevice pd;
  TlDeviceInfo info;
  VkPhysicalDeviceMemoryProperties mem;
  VkDevice device;
  VkQueue queue;
  guint32 family;
  GMutex queue_lock;
  VkPipelineCache cache;
  char *cache_path;
  GData *data;
};

gboolean tl_vk_fail(GError **error, VkResult r, const char *what) {
  GQuark d = TL_ERROR;
  int code = (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
                 ? TL_ERROR_OUT_OF_MEMORY
                 : TL_ERROR_VULKAN;
  g_set_error(error, d, code, "%s failed: %s (%d)", what, tl_vk_result_name(r), (int)r);
  return FALSE;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  gint *counter = user;
  g_atomic_int_inc(counter);
  /* g_warning is fatal under g_test: a validation message fails the test that caused it. */
  g_warning("Vulkan validation (%s): %s",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

static gboolean env_flag(const char *name) {
  const char *v = g_getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static gboolean layer_present(const char *name) {
  guint32 n = 0;
  vkEnumerateInstanceLayerProperties(&n, NULL);
  g_autofree VkLayerProperties *l = g_new0(VkLayerProperties, MAX(n, 1));
  vkEnumerateInstanceLayerProperties(&n, l);
  for (guint32 i = 0; i < n; i++)
    if (strcmp(l[i].layerName, name) == 0) return TRUE;
  return FALSE;
}

static void messenger_info(VkDebugUtilsMessengerCreateInfoEXT *ci, gint *counter) {
  *ci = (VkDebugUtilsMessengerCreateInfoEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_debug_message,
      .pUserData = counter};
}

#ifdef TL_ASAN
/* Collects the names only: dlopen inside dl_iterate_phdr's callback takes the loader lock while
 * dl_iterate_phdr holds the loader's write lock, the opposite order of a dlopen on another
 * thread (the window loads the Vulkan context on one while GTK loads its pixbuf modules on
 * another): the two deadlocked gui tests under ASan in CI (900 s timeouts). */
static int collect_one(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
  base = base ? base + 1 : info->dlpi_name;
  if (base && (g_str_has_prefix(base, "libvulkan_") || g_str_has_prefix(base, "libVkLayer_")))
    g_ptr_array_add(data, g_strdup(info->dlpi_name));
  return 0;
}
#endif

/* Sanitizer builds only (the tests, CI's second suite, the fuzzers): the loader unloads the
 * driver and the layers when the last instance goes, and a one-time allocation of theirs then
 * shows in LeakSanitizer's report as "<unknown module>" — no suppression can name it, and
 * whether it is reported varies between machines (here: 128 bytes in test-pet-randoms and in
 * tomolab-cli run by the hostile and formats tests, on a tree whose CI run had passed). Kept
 * mapped (RTLD_NODELETE), the driver and layer modules stay nameable, and tests/lsan.supp
 * names them. Elsewhere this does nothing. */
static void pin_driver_modules(void) {
#ifdef TL_ASAN
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  dl_iterate_phdr(collect_one, names);
  for (guint i = 0; i < names->len; i++)
    dlopen(g_ptr_array_index(names, i), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#endif
}

static VkInstance create_instance(gboolean validation, gint *counter, GError **error) {
  if (validation && !layer_present(TL_VALIDATION_LAYER)) {
    g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                "TOMOLAB_VALIDATE is set but the layer %s is not installed "
                "(Debian: apt-get install vulkan-validationlayers)",
                TL_VALIDATION_LAYER);
    return VK_NULL_HANDLE;
  }
  const char *layers[] = {TL_VALIDATION_LAYER};
  const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "Tomolab",
                           .applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0),
                           .pEngineName = "tomolab-compute",
                           .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                             .pApplicationInfo = &app};
  VkDebugUtilsMessengerCreateInfoEXT mi;
  messenger_info(&mi, counter);
  if (validation) {
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = layers;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = exts;
    ci.pNext = &mi; /* also catches messages of vkCreateInstance itself */
  }
  VkInstance inst = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&ci, NULL, &inst);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                "no Vulkan driver is installed; for a CPU fallback install "
                "mesa-vulkan-drivers (lavapipe)");
    return VK_NULL_HANDLE;
  }
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkCreateInstance");
    return VK_NULL_HANDLE;
  }
  pin_driver_modules();
  return inst;
}

static GArray *list_devices(VkInstance inst, GPtrArray *handles, GError **error) {
  guint32 n = 0;
  VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkEnumeratePhysicalDevices");
    return NULL;
  }
  g_autofree VkPhysicalDevice *pds = g_new0(VkPhysicalDevice, MAX(n, 1));
  vkEnumeratePhysicalDevices(inst, &n, pds);
  pin_driver_modules(); /* the drivers are loaded by now */
  GArray *out = g_array_sized_new(FALSE, TRUE, sizeof(TlDeviceInfo), n);
  for (guint32 i = 0; i < n; i++) {
    TlDeviceInfo info;
    tl_device_info_read(pds[i], i, &info);
    g_array_append_val(out, info);
    if (handles) g_ptr_array_add(handles, pds[i]);
  }
  return out;
}

GArray *tl_enumerate_devices(GError **error) {
  gint dummy = 0;
  VkInstance inst = create_instance(FALSE, &dummy, error);
  if (!inst) return NULL;
  GArray *out = list_devices(inst, NULL, error);
  vkDestroyInstance(inst, NULL);
  return out;
}

static char *describe_devices(GArray *devs) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    g_string_append_printf(s, "%s%u: %s (%s)", i ? "; " : "", d->index, d->name,
                           tl_device_type_name(d->type));
  }
  return g_string_free(s, FALSE);
}

/* Index into devs of the device to use, or -1 with *error set. */
static int choose_device(GArray *devs, const char *selector, gboolean from_env, GError **error) {
  if (devs->len == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                "no Vulkan device found; for a CPU fallback install mesa-vulkan-drivers "
                "(lavapipe)");
    return -1;
  }
  g_autofree char *list = describe_devices(devs);
  int pick = -1;
  if (selector && *selector) {
    g_autofree char *what = from_env ? g_strdup_printf("TOMOLAB_DEVICE=%s", selector)
                                     : g_strdup_printf("device selector '%s'", selector);
    char *end = NULL;
    guint64 idx = g_ascii_strtoull(selector, &end, 10);
    if (end && *end == '\0' && end != selector) {
      if (idx >= devs->len) {
        g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                    "%s: no device with that index (devices: %s)", what, list);
        return -1;
      }
      pick = (int)idx;
    } else {
      g_autofree char *want = g_utf8_casefold(selector, -1);
      for (guint i = 0; i < devs->len && pick < 0; i++) {
        g_autofree char *name = g_utf8_casefold(g_array_index(devs, TlDeviceInfo, i).name, -1);
        if (strstr(name, want)) pick = (int)i;
      }
      if (pick < 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                    "%s matches no device name (devices: %s)", what, list);
        return -1;
      }
    }
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, pick);
    if (!d->usable) {
      g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE, "device %u (%s) cannot run Tomolab: %s",
                  d->index, d->name, d->unusable_reason);
      return -1;
    }
    return pick;
  }
  int best_rank = -1;
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    int rank = tl_device_type_rank(d->type);
    if (d->usable && rank > best_rank) {
      best_rank = rank;
      pick = (int)i;
    }
  }
  if (pick < 0)
    g_set_error(error, TL_ERROR, TL_ERROR_NO_DEVICE,
                "no usable Vulkan device (%s): Tomolab needs Vulkan 1.2 with "
                "bufferDeviceAddress; for a CPU fallback install mesa-vulkan-drivers",
                list);
  return pick;
}

static gboolean create_device(TlContext *ctx, GError **error) {
  float prio = 1.0f;
  VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                               .queueFamilyIndex = ctx->family,
                               .queueCount = 1,
                               .pQueuePriorities = &prio};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
      .shaderBufferFloat32AtomicAdd = VK_TRUE};
  VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = ctx->info.float32_atomic_add ? &af : NULL,
      .bufferDeviceAddress = VK_TRUE,
      .scalarBlockLayout = VK_TRUE,
      .shaderBufferInt64Atomics = ctx->info.buffer_int64_atomics}; /* ct_back_scatter_fixed64 */
  VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &f12};
  f.features.shaderInt64 = ctx->info.shader_int64;
  f.features.shaderFloat64 = ctx->info.shader_float64; /* pet_sens_f64 */
  const char *exts[1];
  guint32 n_ext = 0;
  if (ctx->info.float32_atomic_add) exts[n_ext++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
  VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                           .pNext = &f,
                           .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &q,
                           .enabledExtensionCount = n_ext,
                           .ppEnabledExtensionNames = exts};
  VkResult r = vkCreateDevice(ctx->pd, &ci, NULL, &ctx->device);
  if (r != VK_SUCCESS) return tl_vk_fail(error, r, "vkCreateDevice");
  vkGetDeviceQueue(ctx->device, ctx->family, 0, &ctx->queue);
  return TRUE;
}

/* A cache file from another device or driver is ignored, not an error: it is only a speed-up. */
static void open_pipeline_cache(TlContext *ctx) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(ctx->pd, &p);
  g_autofree char *dir = g_build_filename(g_get_user_cache_dir(), "tomolab", NULL);
  g_autofree char *file = g_strdup_printf("pipelines-%04x-%04x-%08x.bin", p.vendorID, p.deviceID,
                                          p.driverVersion);
  ctx->cache_path = g_build_filename(dir, file, NULL);

  g_autofree char *data = NULL;
  gsize len = 0;
  gboolean ok = g_file_get_contents(ctx->cache_path, &data, &len, NULL);
  /* Header (Vulkan spec): length, version, vendorID, deviceID, pipelineCacheUUID. */
  if (ok && len >= 16 + VK_UUID_SIZE) {
    guint32 h[4];
    memcpy(h, data, sizeof h);
    ok = h[0] >= 16 + VK_UUID_SIZE && h[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         h[2] == p.vendorID && h[3] == p.deviceID &&
         memcmp(data + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
  } else {
    ok = FALSE;
  }
  VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                  .initialDataSize = ok ? len : 0,
                                  .pInitialData = ok ? data : NULL};
  if (vkCreatePipelineCache(ctx->device, &ci, NULL, &ctx->cache) != VK_SUCCESS)
    ctx->cache = VK_NULL_HANDLE;
}

gboolean tl_context_save_pipeline_cache(TlContext *ctx, GError **error) {
  if (!ctx->cache) return TRUE;
  size_t len = 0;
  VkResult r = vkGetPipelineCacheData(ctx->device, ctx->cache, &len, NULL);
  if (r != VK_SUCCESS) return tl_vk_fail(error, r, "vkGetPipelineCacheData");
  g_autofree char *buf = g_malloc(MAX(len, 1));
  r = vkGetPipelineCacheData(ctx->device, ctx->cache, &len, buf);
  if (r != VK_SUCCESS) return tl_vk_fail(error, r, "vkGetPipelineCacheData");
  g_autofree char *dir = g_path_get_dirname(ctx->cache_path);
  if (g_mkdir_with_parents(dir, 0700) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot create %s: %s", dir, g_strerror(errno));
    return FALSE;
  }
  GError *e = NULL;
  /* g_file_set_contents writes a temp file and renames: a crash never leaves half a cache. */
  if (!g_file_set_contents(ctx->cache_path, buf, (gssize)len, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  return TRUE;
}

TlContext *tl_context_new(const char *selector, GError **error) {
  g_autoptr(TlContext) ctx = g_new0(TlContext, 1);
  g_mutex_init(&ctx->queue_lock);
  g_datalist_init(&ctx->data);
  ctx->validation = env_flag("TOMOLAB_VALIDATE");
  ctx->instance = create_instance(ctx->validation, &ctx->validation_messages, error);
  if (!ctx->instance) return NULL;
  if (ctx->validation) {
    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
        vkGetInstanceProcAddr(ctx->instance, "vkCreateDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mi;
    messenger_info(&mi, &ctx->validation_messages);
    if (create) create(ctx->instance, &mi, NULL, &ctx->messenger);
  }

  g_autoptr(GPtrArray) handles = g_ptr_array_new();
  g_autoptr(GArray) devs = list_devices(ctx->instance, handles, error);
  if (!devs) return NULL;
  gboolean from_env = selector == NULL;
  if (from_env) selector = g_getenv("TOMOLAB_DEVICE");
  int pick = choose_device(devs, selector, from_env, error);
  if (pick < 0) return NULL;
  ctx->pd = g_ptr_array_index(handles, pick);
  ctx->info = g_array_index(devs, TlDeviceInfo, pick);
  ctx->family = (guint32)tl_device_compute_family(ctx->pd, NULL);
  vkGetPhysicalDeviceMemoryProperties(ctx->pd, &ctx->mem);
  if (!create_device(ctx, error)) return NULL;
  open_pipeline_cache(ctx);
  return g_steal_pointer(&ctx);
}

void tl_context_free(TlContext *ctx) {
  if (!ctx) return;
  if (ctx->device) vkDeviceWaitIdle(ctx->device);
  /* Other modules' data (pipelines...) needs the device: drop it first. */
  g_datalist_clear(&ctx->data);
  if (ctx->cache) {
    g_autoptr(GError) e = NULL;
    if (!tl_context_save_pipeline_cache(ctx, &e))
      g_message("pipeline cache not saved: %s", e->message); /* a speed-up only */
    vkDestroyPipelineCache(ctx->device, ctx->cache, NULL);
  }
  if (ctx->device) vkDestroyDevice(ctx->device, NULL);
  if (ctx->messenger) {
    PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
        vkGetInstanceProcAddr(ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
  }
  if (ctx->instance) vkDestroyInstance(ctx->instance, NULL);
  g_mutex_clear(&ctx->queue_lock);
  g_free(ctx->cache_path);
  g_free(ctx);
}

const TlDeviceInfo *tl_context_info(const TlContext *ctx) { return &ctx->info; }
gboolean tl_context_validation_enabled(const TlContext *ctx) { return ctx->validation; }
guint tl_context_validation_messages(const TlContext *ctx) {
  return (guint)g_atomic_int_get(&ctx->validation_messages);
}
guint32 tl_context_default_local_size(const TlContext *ctx) {
  return MIN(256u, MIN(ctx->info.max_compute_work_group_invocations,
                       ctx->info.max_compute_work_group_size[0]));
}
const char *tl_context_pipeline_cache_path(const TlContext *ctx) { return ctx->cache_path; }
VkDevice tl_context_device(const TlContext *ctx) { return ctx->device; }
VkPhysicalDevice tl_context_physical_device(const TlContext *ctx) { return ctx->pd; }
VkQueue tl_context_queue(const TlContext *ctx) { return ctx->queue; }
guint32 tl_context_queue_family(const TlContext *ctx) { return ctx->family; }
VkPipelineCache tl_context_pipeline_cache(const TlContext *ctx) { return ctx->cache; }
void tl_context_lock_queue(TlContext *ctx) { g_mutex_lock(&ctx->queue_lock); }
void tl_context_unlock_queue(TlContext *ctx) { g_mutex_unlock(&ctx->queue_lock); }

int tl_context_memory_type(const TlContext *ctx, guint32 type_bits, VkMemoryPropertyFlags required,
                           VkMemoryPropertyFlags preferred) {
  int fallback = -1;
  for (guint32 i = 0; i < ctx->mem.memoryTypeCount; i++) {
    VkMemoryPropertyFlags f = ctx->mem.memoryTypes[i].propertyFlags;
    if (!(type_bits & (1u << i)) || (f & required) != required) continue;
    if ((f & preferred) == preferred) return (int)i;
    if (fallback < 0) fallback = (int)i;
  }
  return fallback;
}

gpointer tl_context_get_data(TlContext *ctx, const char *key) {
  return g_datalist_get_data(&ctx->data, key);
}
void tl_context_set_data(TlContext *ctx, const char *key, gpointer data, GDestroyNotify destroy) {
  g_datalist_set_data_full(&ctx->data, key, data, destroy);
}
