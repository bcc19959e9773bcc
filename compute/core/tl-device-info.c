/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reading a physical device's features and limits into TlDeviceInfo, and ranking. */
#include "tl-device-info.h"
#include <string.h>

int tl_device_type_rank(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
  default: return 0;
  }
}

const char *tl_device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
  default: return "other";
  }
}

static gboolean has_extension(VkPhysicalDevice pd, const char *name) {
  guint32 n = 0;
  vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
  g_autofree VkExtensionProperties *ext = g_new0(VkExtensionProperties, MAX(n, 1));
  vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext);
  for (guint32 i = 0; i < n; i++)
    if (strcmp(ext[i].extensionName, name) == 0) return TRUE;
  return FALSE;
}

/* A family with compute; one without graphics is preferred (dedicated compute
 * queues on discrete GPUs run beside the desktop's rendering). */
int tl_device_compute_family(VkPhysicalDevice pd, guint32 *timestamp_bits) {
  guint32 n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
  g_autofree VkQueueFamilyProperties *q = g_new0(VkQueueFamilyProperties, MAX(n, 1));
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
  int best = -1;
  for (guint32 i = 0; i < n; i++) {
    if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    gboolean dedicated = !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best < 0 || (dedicated && (q[best].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
                     q[i].timestampValidBits > 0))
      best = (int)i;
  }
  if (best >= 0 && timestamp_bits) *timestamp_bits = q[best].timestampValidBits;
  return best;
}

void tl_device_info_read(VkPhysicalDevice pd, guint32 index, TlDeviceInfo *info) {
  memset(info, 0, sizeof *info);
  info->index = index;

  gboolean atomic_ext = has_extension(pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  gboolean maint4 = has_extension(pd, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);

  VkPhysicalDeviceMaintenance4Properties m4 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sg = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = &m3};
  VkPhysicalDeviceDriverProperties drv = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, .pNext = &sg};
  VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = &drv};
  if (maint4) m3.pNext = &m4;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceLimits *lim = &props.properties.limits;

  g_strlcpy(info->name, props.properties.deviceName, sizeof info->name);
  info->type = props.properties.deviceType;
  info->api_version = props.properties.apiVersion;
  info->vendor_id = props.properties.vendorID;
  info->device_id = props.properties.deviceID;
  g_strlcpy(info->driver_name, drv.driverName, sizeof info->driver_name);
  g_strlcpy(info->driver_info, drv.driverInfo, sizeof info->driver_info);

  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceVulkan12Features f12 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .pNext = atomic_ext ? &af : NULL};
  VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                     .pNext = &f12};
  gboolean v12 = props.properties.apiVersion >= VK_API_VERSION_1_2;
  if (v12) vkGetPhysicalDeviceFeatures2(pd, &feats);

  info->float32_atomic_add = atomic_ext && af.shaderBufferFloat32AtomicAdd;
  info->buffer_device_address = v12 && f12.bufferDeviceAddress;
  info->scalar_block_layout = v12 && f12.scalarBlockLayout;
  info->shader_int64 = feats.features.shaderInt64;
  info->buffer_int64_atomics = v12 && feats.features.shaderInt64 && f12.shaderBufferInt64Atomics;
  info->shader_float64 = feats.features.shaderFloat64;
  info->timestamp_period_ns = lim->timestampPeriod;

  int family = tl_device_compute_family(pd, &info->timestamp_valid_bits);
  info->timestamps = family >= 0 && info->timestamp_valid_bits > 0 &&
                     lim->timestampComputeAndGraphics;

  info->subgroup_size = sg.subgroupSize;
  info->subgroup_ops =
      (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sg.supportedOperations : 0;
  info->max_storage_buffer_range = lim->maxStorageBufferRange;
  memcpy(info->max_compute_work_group_count, lim->maxComputeWorkGroupCount,
         sizeof info->max_compute_work_group_count);
  memcpy(info->max_compute_work_group_size, lim->maxComputeWorkGroupSize,
         sizeof info->max_compute_work_group_size);
  info->max_compute_work_group_invocations = lim->maxComputeWorkGroupInvocations;
  info->max_compute_shared_memory = lim->maxComputeSharedMemorySize;
  info->max_push_constants_size = lim->maxPushConstantsSize;
  info->max_memory_allocation_size = m3.maxMemoryAllocationSize;
  info->max_buffer_size = maint4 ? m4.maxBufferSize : 0;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  info->n_heaps = MIN(mem.memoryHeapCount, TL_MAX_HEAPS);
  for (guint32 i = 0; i < info->n_heaps; i++) {
    info->heaps[i].size = mem.memoryHeaps[i].size;
    info->heaps[i].device_local = !!(mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT);
  }

  /* What every Tomolab kernel relies on. */
  const char *why = NULL;
  if (!v12) why = "Vulkan 1.2 is required";
  else if (family < 0) why = "no compute queue";
  else if (!info->buffer_device_address) why = "bufferDeviceAddress is not supported";
  else if (!info->scalar_block_layout) why = "scalarBlockLayout is not supported";
  else if (lim->maxPushConstantsSize < 128) why = "fewer than 128 bytes of push constants";
  info->usable = why == NULL;
  if (why) g_strlcpy(info->unusable_reason, why, sizeof info->unusable_reason);
}
