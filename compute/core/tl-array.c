/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlArray: device buffers reached by buffer device address; staged transfers. */
#include "tl-array.h"
#include "tl-stream.h"
#include <string.h>

/* Staging chunk: bounds the host-visible memory a transfer needs, whatever the array size. */
#define TL_STAGING_CHUNK ((guint64)64 << 20)

struct _TlArray {
  TlContext *ctx;
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceAddress address;
  guint64 n;
  gsize elem_size;
  guint64 bytes;
  void *mapped; /* host arrays only */
  guint64 offset;  /* views: byte offset into the parent's buffer */
  gboolean view;   /* views own neither buffer nor memory */
};

static TlArray *array_new(TlContext *ctx, guint64 n, gsize elem_size, gboolean host,
                          gboolean readback, GError **error) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  if (elem_size == 0 || elem_size % 4 != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "array element size %" G_GSIZE_FORMAT " bytes: expected a non-zero multiple of 4",
                elem_size);
    return NULL;
  }
  guint64 bytes = n * elem_size;
  if (n != 0 && bytes / n != elem_size) bytes = G_MAXUINT64;
  guint64 alloc_bytes = MAX(bytes, 4); /* Vulkan forbids empty buffers; empty arrays are legal */
  guint64 limit = info->max_memory_allocation_size ? info->max_memory_allocation_size : G_MAXUINT64;
  if (info->max_buffer_size) limit = MIN(limit, info->max_buffer_size);
  if (alloc_bytes > limit) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "array of %" G_GUINT64_FORMAT " elements (%" G_GUINT64_FORMAT
                " bytes) exceeds this device's largest allocation (%" G_GUINT64_FORMAT " bytes)",
                n, bytes, limit);
    return NULL;
  }

  VkDevice dev = tl_context_device(ctx);
  g_autoptr(TlArray) a = g_new0(TlArray, 1);
  a->ctx = ctx;
  a->n = n;
  a->elem_size = elem_size;
  a->bytes = bytes;
  VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                           .size = alloc_bytes,
                           .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                    VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkResult r = vkCreateBuffer(dev, &bi, NULL, &a->buffer);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkCreateBuffer");
    return NULL;
  }
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, a->buffer, &req);
  VkMemoryPropertyFlags need = host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                    : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  VkMemoryPropertyFlags want = readback ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0;
  int type = tl_context_memory_type(ctx, req.memoryTypeBits, need, want);
  if (type < 0 && !host) type = tl_context_memory_type(ctx, req.memoryTypeBits, 0, 0);
  if (type < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "no suitable memory type for a %s array",
                host ? "host-visible" : "device");
    return NULL;
  }
  VkMemoryAllocateFlagsInfo fi = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                  .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                             .pNext = &fi,
                             .allocationSize = req.size,
                             .memoryTypeIndex = (guint32)type};
  r = vkAllocateMemory(dev, &ai, NULL, &a->memory);
  if (r != VK_SUCCESS) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "cannot allocate %" G_GUINT64_FORMAT " bytes of %s memory: %s", (guint64)req.size,
                host ? "host-visible" : "device", tl_vk_result_name(r));
    return NULL;
  }
  r = vkBindBufferMemory(dev, a->buffer, a->memory, 0);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkBindBufferMemory");
    return NULL;
  }
  if (host) {
    r = vkMapMemory(dev, a->memory, 0, VK_WHOLE_SIZE, 0, &a->mapped);
    if (r != VK_SUCCESS) {
      tl_vk_fail(error, r, "vkMapMemory");
      return NULL;
    }
  }
  VkBufferDeviceAddressInfo addr = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = a->buffer};
  a->address = vkGetBufferDeviceAddress(dev, &addr);
  return g_steal_pointer(&a);
}

TlArray *tl_array_new(TlContext *ctx, guint64 n, gsize elem_size, GError **error) {
  return array_new(ctx, n, elem_size, FALSE, FALSE, error);
}

TlArray *tl_array_new_host(TlContext *ctx, guint64 n, gsize elem_size, gboolean readback,
                           GError **error) {
  return array_new(ctx, n, elem_size, TRUE, readback, error);
}

TlArray *tl_array_new_view(TlArray *parent, guint64 first, guint64 count, GError **error) {
  if (first > parent->n || count > parent->n - first) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "view of elements [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                ") is outside an array of %" G_GUINT64_FORMAT,
                first, first + count, parent->n);
    return NULL;
  }
  TlArray *v = g_new0(TlArray, 1);
  *v = *parent;
  v->view = TRUE;
  v->memory = VK_NULL_HANDLE;
  v->n = count;
  v->bytes = count * parent->elem_size;
  v->offset = parent->offset + first * parent->elem_size;
  v->address = parent->address + first * parent->elem_size;
  if (parent->mapped) v->mapped = (char *)parent->mapped + first * parent->elem_size;
  return v;
}

void tl_array_free(TlArray *a) {
  if (!a) return;
  if (a->view) {
    g_free(a);
    return;
  }
  VkDevice dev = tl_context_device(a->ctx);
  if (a->mapped) vkUnmapMemory(dev, a->memory);
  if (a->buffer) vkDestroyBuffer(dev, a->buffer, NULL);
  if (a->memory) vkFreeMemory(dev, a->memory, NULL);
  g_free(a);
}

guint64 tl_array_length(const TlArray *a) { return a->n; }
gsize tl_array_elem_size(const TlArray *a) { return a->elem_size; }
guint64 tl_array_size_bytes(const TlArray *a) { return a->bytes; }
VkDeviceAddress tl_array_address(const TlArray *a) { return a->address; }
VkBuffer tl_array_buffer(const TlArray *a) { return a->buffer; }
guint64 tl_array_buffer_offset(const TlArray *a) { return a->offset; }
TlContext *tl_array_context(const TlArray *a) { return a->ctx; }
void *tl_array_map(TlArray *a) { return a->mapped; }

static gboolean check_range(const TlArray *a, guint64 first, guint64 count, GError **error) {
  if (first > a->n || count > a->n - first) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "elements [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                ") are outside an array of %" G_GUINT64_FORMAT,
                first, first + count, a->n);
    return FALSE;
  }
  return TRUE;
}

/* Moves bytes between host memory and the array through a staging chunk. */
static gboolean transfer(TlArray *a, guint64 first, guint64 count, void *host, gboolean up,
                         GError **error) {
  if (!check_range(a, first, count, error)) return FALSE;
  guint64 bytes = count * a->elem_size, off = first * a->elem_size;
  if (bytes == 0) return TRUE;
  if (a->mapped) { /* host arrays need no staging */
    if (up) memcpy((char *)a->mapped + off, host, bytes);
    else memcpy(host, (char *)a->mapped + off, bytes);
    return TRUE;
  }
  guint64 chunk = MIN(bytes, TL_STAGING_CHUNK);
  g_autoptr(TlArray) stage = array_new(a->ctx, chunk / 4, 4, TRUE, !up, error);
  if (!stage) return FALSE;
  g_autoptr(TlStream) s = tl_stream_new(a->ctx, error);
  if (!s) return FALSE;
  for (guint64 done = 0; done < bytes; done += chunk) {
    guint64 n = MIN(chunk, bytes - done);
    if (up) {
      memcpy(stage->mapped, (const char *)host + done, n);
      if (!tl_stream_copy(s, stage, 0, a, off + done, n, error) || !tl_stream_finish(s, error))
        return FALSE;
    } else {
      if (!tl_stream_copy(s, a, off + done, stage, 0, n, error) || !tl_stream_finish(s, error))
        return FALSE;
      memcpy((char *)host + done, stage->mapped, n);
    }
  }
  return TRUE;
}

gboolean tl_array_upload_range(TlArray *a, guint64 first, guint64 count, const void *src,
                               GError **error) {
  return transfer(a, first, count, (void *)src, TRUE, error);
}

gboolean tl_array_download_range(const TlArray *a, guint64 first, guint64 count, void *dst,
                                 GError **error) {
  return transfer((TlArray *)a, first, count, dst, FALSE, error);
}

gboolean tl_array_upload(TlArray *a, const void *src, GError **error) {
  return tl_array_upload_range(a, 0, a->n, src, error);
}

gboolean tl_array_download(const TlArray *a, void *dst, GError **error) {
  return tl_array_download_range(a, 0, a->n, dst, error);
}

gboolean tl_array_zero(TlArray *a, GError **error) {
  g_autoptr(TlStream) s = tl_stream_new(a->ctx, error);
  return s && tl_stream_zero(s, a, error) && tl_stream_finish(s, error);
}
