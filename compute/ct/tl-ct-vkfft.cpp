/* SPDX-License-Identifier: GPL-3.0-or-later */
// VkFFT behind C calls (see tl-ct-vkfft.h).
#include "tl-ct-vkfft.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

// Debian 12's VkFFT 1.2.26 spells glslang's resource limits as a literal of the older glslang
// layout (93 ints, then the 9 limits), which glslang 12's glslang_resource_t no longer has
// (the EXT mesh fields came in between): C++ refuses the literal. Inside vkFFT.h only, the
// name stands for this aggregate of the older layout, and taking its address (what VkFFT does
// with it: glslang_input_t.resource) gives glslang's own defaults in the current layout.
// VkFFT's literal is those same defaults, and compute shaders use none of the graphics limits.
struct TlVkfftResource {
  int old_fields[93];
  glslang_limits_t limits;
  const glslang_resource_t *operator&() const { return glslang_default_resource(); }
};
#define glslang_resource_t TlVkfftResource
#define VKFFT_BACKEND 0
#include <vkFFT.h>
#include <locale.h>
#undef glslang_resource_t

struct _TlCtVkfft {
  TlContext *ctx;
  TlArray *buffer;
  guint n, rows;
  VkFFTApplication app;
  gboolean app_ok;
  // VkFFT keeps pointers to these (its configuration holds VkDevice *, VkBuffer *, ...)
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  VkCommandPool pool;
  VkFence fence;
  VkBuffer buf;
  uint64_t size;
};

// VkFFT compiles its kernels with glslang's C API, as tl-glsl does; glslang's process tables
// are reference-counted, so one more initialisation here, never finalised, keeps them alive
// whatever order the two users come in (VkFFT is told they exist: isCompilerInitialized).
static gpointer glslang_init(gpointer) { return GINT_TO_POINTER(glslang_initialize_process()); }

static gboolean vkfft_fail(GError **error, VkFFTResult r, const char *what, guint n, guint rows) {
  g_set_error(error, TL_ERROR, TL_ERROR_VULKAN,
              "VkFFT %s failed for %u rows of %u samples (VkFFTResult %d)", what, rows, n, (int)r);
  return FALSE;
}

void tl_ct_vkfft_free(TlCtVkfft *p) {
  if (!p) return;
  VkDevice dev = tl_context_device(p->ctx);
  if (p->app_ok) deleteVkFFT(&p->app);
  if (p->fence) vkDestroyFence(dev, p->fence, NULL);
  if (p->pool) vkDestroyCommandPool(dev, p->pool, NULL);
  g_free(p);
}

// VkFFT's kernels, compiled by glslang, cost 0.15-0.5 s per plan on lavapipe; loaded back from
// VkFFT's own binary (saveApplicationToString) they cost 0.04 s. The binary lives beside the
// pipeline cache (tl-context.c), one file per plan, named by a hash of everything the
// generated code depends on: VkFFT's version, the sizes, the device and driver (VkFFT reads the
// device's limits). File: magic, SHA-256 of the payload (hex), payload; a file that fails the
// check is ignored (it is only a speed-up), as is a cache that cannot be written.
#define TL_VKFFT_MAGIC "TLVKFFT1"

static char *cache_file(TlContext *ctx, guint n, guint rows) {
  const char *pc = tl_context_pipeline_cache_path(ctx);
  if (!pc) return NULL;
  VkPhysicalDeviceProperties pr;
  vkGetPhysicalDeviceProperties(tl_context_physical_device(ctx), &pr);
  g_autoptr(GString) key = g_string_new(NULL);
  g_string_printf(key, "vkfft %d r2c lut n %u rows %u device %04x:%04x driver %08x %s uuid ",
                  VkFFTGetVersion(), n, rows, pr.vendorID, pr.deviceID, pr.driverVersion,
                  pr.deviceName);
  for (guint i = 0; i < VK_UUID_SIZE; i++)
    g_string_append_printf(key, "%02x", pr.pipelineCacheUUID[i]);
  g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key->str, -1);
  g_autofree char *dir = g_path_get_dirname(pc);
  g_autofree char *name = g_strdup_printf("vkfft-%.32s.bin", sum);
  return g_build_filename(dir, name, NULL);
}

// The payload of a valid cache file (g_free), else NULL.
static guint32 *cache_load(const char *path, gsize *len) {
  g_autofree char *data = NULL;
  gsize n = 0, head = strlen(TL_VKFFT_MAGIC) + 64;
  if (!path || !g_file_get_contents(path, &data, &n, NULL) || n <= head ||
      memcmp(data, TL_VKFFT_MAGIC, strlen(TL_VKFFT_MAGIC)) != 0 || (n - head) % 4 != 0)
    return NULL;
  g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data + head,
                                                     n - head);
  if (memcmp(sum, data + strlen(TL_VKFFT_MAGIC), 64) != 0) return NULL;
  *len = n - head;
  return (guint32 *)g_memdup2(data + head, n - head);
}

static void cache_save(const char *path, const void *payload, gsize len) {
  if (!path || !payload || !len) return;
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_mkdir_with_parents(dir, 0700) != 0) return;
  g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)payload, len);
  g_autoptr(GString) file = g_string_new(TL_VKFFT_MAGIC);
  g_string_append(file, sum);
  g_string_append_len(file, (const char *)payload, (gssize)len);
  // written to a temporary file and renamed: a crash never leaves half a file
  g_file_set_contents(path, file->str, (gssize)file->len, NULL);
}

// The LUT of twiddles (computed in double on the host) rather than sin/cos in float on the
// device keeps the transform's error near float rounding on every driver.
TlCtVkfft *tl_ct_vkfft_new(TlContext *ctx, TlArray *buffer, guint n, guint rows, GError **error) {
  static GOnce once = G_ONCE_INIT;
  g_once(&once, glslang_init, NULL);
  if (!GPOINTER_TO_INT(once.retval)) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "glslang could not be initialised for VkFFT");
    return NULL;
  }
  if (n % 2 || n == 0 || rows == 0 ||
      tl_array_size_bytes(buffer) < 8 * (guint64)(n / 2 + 1) * rows) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "VkFFT plan: %u rows of %u reals (expected an even length) in a buffer of %"
                G_GUINT64_FORMAT " bytes", rows, n, tl_array_size_bytes(buffer));
    return NULL;
  }
  TlCtVkfft *p = g_new0(TlCtVkfft, 1);
  p->ctx = ctx;
  p->buffer = buffer;
  p->n = n;
  p->rows = rows;
  VkDevice dev = tl_context_device(ctx);
  VkCommandPoolCreateInfo pi = {};
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.queueFamilyIndex = tl_context_queue_family(ctx);
  VkFenceCreateInfo fi = {};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkResult vr;
  if ((vr = vkCreateCommandPool(dev, &pi, NULL, &p->pool)) != VK_SUCCESS ||
      (vr = vkCreateFence(dev, &fi, NULL, &p->fence)) != VK_SUCCESS) {
    tl_vk_fail(error, vr, "VkFFT setup");
    tl_ct_vkfft_free(p);
    return NULL;
  }
  p->phys = tl_context_physical_device(ctx);
  p->dev = dev;
  p->queue = tl_context_queue(ctx);
  p->buf = tl_array_buffer(buffer);
  p->size = tl_array_size_bytes(buffer);
  VkFFTConfiguration c = {};
  c.FFTdim = 1;
  c.size[0] = n;
  c.size[1] = rows;
  c.performR2C = 1;
  c.useLUT = 1;
  c.physicalDevice = &p->phys;
  c.device = &p->dev;
  c.queue = &p->queue;
  c.commandPool = &p->pool;
  c.fence = &p->fence;
  c.isCompilerInitialized = 1;
  c.buffer = &p->buf;
  c.bufferSize = &p->size;
  c.bufferOffset = tl_array_buffer_offset(buffer);
  g_autofree char *path = cache_file(ctx, n, rows);
  gsize len = 0;
  g_autofree guint32 *binary = cache_load(path, &len);
  VkFFTResult res = VKFFT_ERROR_PLAN_NOT_INITIALIZED;
  // the LUT upload submits on the shared queue; VkFFT compiles and uploads in one call, so the
  // lock is held for the whole plan (0.05 s from the cache, up to 0.5 s compiling)
  tl_context_lock_queue(ctx);
  // VkFFT 1.2.26's shader generator keeps the pointer setlocale(LC_ALL, NULL) returns, sets
  // "C", and restores from that pointer, which the "C" call has freed whenever the locale is
  // composite (GLib programs set LC_ALL from the environment): a use after free (ASan). With
  // every category "C" first, the pointer is glibc's static "C"; the process's locale is
  // restored from a copy of our own afterwards. Serialised: setlocale is process-wide.
  static GMutex locale_lock;
  g_mutex_lock(&locale_lock);
  const char *cur = setlocale(LC_ALL, NULL);
  char *saved = g_strdup(cur ? cur : "C");
  setlocale(LC_ALL, "C");
  if (binary) {
    c.loadApplicationFromString = 1;
    c.loadApplicationString = binary;
    res = initializeVkFFT(&p->app, c);
    if (res != VKFFT_SUCCESS) p->app = VkFFTApplication{}; // VkFFT cleaned up; compile instead
  }
  if (res != VKFFT_SUCCESS) {
    c.loadApplicationFromString = 0;
    c.loadApplicationString = NULL;
    c.saveApplicationToString = path != NULL;
    res = initializeVkFFT(&p->app, c);
    if (res == VKFFT_SUCCESS && path)
      cache_save(path, p->app.saveApplicationString, p->app.applicationStringSize);
  }
  setlocale(LC_ALL, saved);
  g_free(saved);
  g_mutex_unlock(&locale_lock);
  tl_context_unlock_queue(ctx);
  if (res != VKFFT_SUCCESS) {
    vkfft_fail(error, res, "plan", n, rows);
    tl_ct_vkfft_free(p);
    return NULL;
  }
  p->app_ok = TRUE;
  return p;
}

gboolean tl_ct_vkfft_append(TlCtVkfft *p, VkCommandBuffer cb, gboolean inverse, GError **error) {
  VkFFTLaunchParams lp = {};
  lp.commandBuffer = &cb;
  lp.buffer = &p->buf;
  // VkFFT's direction: -1 forward, 1 inverse
  VkFFTResult res = VkFFTAppend(&p->app, inverse ? 1 : -1, &lp);
  if (res != VKFFT_SUCCESS)
    return vkfft_fail(error, res, inverse ? "inverse" : "forward", p->n, p->rows);
  return TRUE;
}
