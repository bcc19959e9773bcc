/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlContext: one Vulkan instance + the chosen physical device, its compute queue,
 * the persistent pipeline cache and the recorded features/limits.
 *
 * Selection: devices are ranked discrete > integrated > virtual > CPU > other;
 * TOMOLAB_DEVICE=<index|name substring> overrides the ranking.
 * TOMOLAB_VALIDATE=1 enables VK_LAYER_KHRONOS_validation with a debug messenger:
 * every warning/error message is logged with g_warning() (fatal in tests) and counted. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "tl-error.h"

G_BEGIN_DECLS

typedef struct _TlContext TlContext;

#define TL_MAX_HEAPS 16

typedef struct {
  guint32 index;                 /* index in vkEnumeratePhysicalDevices order */
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  VkPhysicalDeviceType type;
  guint32 api_version;
  guint32 vendor_id, device_id;
  char driver_name[VK_MAX_DRIVER_NAME_SIZE];
  char driver_info[VK_MAX_DRIVER_INFO_SIZE];
  gboolean usable;               /* Vulkan 1.2, a compute queue and the features Tomolab needs */
  char unusable_reason[128];

  /* features */
  gboolean float32_atomic_add;   /* shaderBufferFloat32AtomicAdd (else kernels use a CAS loop) */
  gboolean buffer_device_address;
  gboolean timestamps;           /* compute queue has timestampValidBits > 0 */
  gboolean scalar_block_layout;   /* push blocks use the scalar layout */
  gboolean shader_int64, shader_float64;
  gboolean buffer_int64_atomics;  /* shaderBufferInt64Atomics (fixed-point sums: one atomic) */
  float timestamp_period_ns;
  guint32 timestamp_valid_bits;

  /* limits */
  guint32 subgroup_size;
  guint32 subgroup_ops;           /* VkSubgroupFeatureFlags of compute shaders (0: none) */
  guint64 max_storage_buffer_range;
  guint32 max_compute_work_group_count[3];
  guint32 max_compute_work_group_size[3];
  guint32 max_compute_work_group_invocations;
  guint32 max_compute_shared_memory;
  guint32 max_push_constants_size;
  guint64 max_memory_allocation_size;
  guint64 max_buffer_size;        /* maintenance4; 0 when unknown */
  guint32 n_heaps;
  struct { guint64 size; gboolean device_local; } heaps[TL_MAX_HEAPS];
} TlDeviceInfo;

/* Lists every physical device (usable or not) without creating a logical device. */
TL_API GArray *tl_enumerate_devices(GError **error); /* element type TlDeviceInfo */

/* Rank used by the default choice: higher is preferred. */
TL_API int tl_device_type_rank(VkPhysicalDeviceType type);
TL_API const char *tl_device_type_name(VkPhysicalDeviceType type);

/* Creates a context on the device named by `selector` (index or name substring;
 * NULL = $TOMOLAB_DEVICE, else the best ranked). */
TL_API TlContext *tl_context_new(const char *selector, GError **error);
TL_API void tl_context_free(TlContext *ctx);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlContext, tl_context_free)

TL_API const TlDeviceInfo *tl_context_info(const TlContext *ctx);
TL_API gboolean tl_context_validation_enabled(const TlContext *ctx);
/* Validation-layer warnings/errors seen so far (tests assert this is 0). */
TL_API guint tl_context_validation_messages(const TlContext *ctx);

/* Default workgroup size for 1-D kernels on this device. */
TL_API guint32 tl_context_default_local_size(const TlContext *ctx);

/* Writes the pipeline cache to $XDG_CACHE_HOME/tomolab now (also done by free). */
TL_API gboolean tl_context_save_pipeline_cache(TlContext *ctx, GError **error);
TL_API const char *tl_context_pipeline_cache_path(const TlContext *ctx);

/* Raw handles for the other compute modules. */
TL_API VkDevice tl_context_device(const TlContext *ctx);
TL_API VkPhysicalDevice tl_context_physical_device(const TlContext *ctx);
TL_API VkQueue tl_context_queue(const TlContext *ctx);
TL_API guint32 tl_context_queue_family(const TlContext *ctx);
TL_API VkPipelineCache tl_context_pipeline_cache(const TlContext *ctx);
/* Serialises queue submissions from several threads. */
TL_API void tl_context_lock_queue(TlContext *ctx);
TL_API void tl_context_unlock_queue(TlContext *ctx);

/* Index of a memory type allowed by type_bits with all `required` flags, preferring
 * one that also has `preferred`; -1 if none. */
TL_API int tl_context_memory_type(const TlContext *ctx, guint32 type_bits, VkMemoryPropertyFlags required,
                           VkMemoryPropertyFlags preferred);

/* Sets *error from a failed VkResult; returns FALSE so callers can `return tl_vk_fail(...)`. */
TL_API gboolean tl_vk_fail(GError **error, VkResult r, const char *what);

/* Per-context storage for other modules (e.g. the expression cache), freed with the context. */
TL_API gpointer tl_context_get_data(TlContext *ctx, const char *key);
TL_API void tl_context_set_data(TlContext *ctx, const char *key, gpointer data, GDestroyNotify destroy);

G_END_DECLS
