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
  // the LUT upload submits on the shared queue
  tl_context_lock_queue(ctx);
  VkFFTResult res = initializeVkFFT(&p->app, c);
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
