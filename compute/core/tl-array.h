/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlArray: a device buffer of n elements of elem_size bytes, addressed in kernels
 * through its buffer device address (so an array may exceed maxStorageBufferRange;
 * see docs/large-arrays.md). Transfers go through a host-visible staging buffer in
 * chunks, so host and device never need one contiguous mapping of the whole array. */
#pragma once
#include "tl-api.h"
#include "tl-context.h"

G_BEGIN_DECLS

typedef struct _TlArray TlArray;

TL_API TlArray *tl_array_new(TlContext *ctx, guint64 n_elems, gsize elem_size, GError **error);
static inline TlArray *tl_array_new_float(TlContext *ctx, guint64 n, GError **error) {
  return tl_array_new(ctx, n, sizeof(float), error);
}
/* A host-visible, persistently mapped array (staging, readback of small results,
 * data the CPU streams in). `readback` prefers cached memory for fast CPU reads. */
TL_API TlArray *tl_array_new_host(TlContext *ctx, guint64 n_elems, gsize elem_size, gboolean readback,
                           GError **error);
/* Elements [first, first + count) of `parent` as an array of their own (same buffer, no copy):
 * kernels, expressions, transfers and copies see just those elements. The parent must outlive
 * the view; freeing the view frees nothing of the parent. Used for the per-subset parts of a
 * data vector (recon/tl-operator.h). */
TL_API TlArray *tl_array_new_view(TlArray *parent, guint64 first, guint64 count, GError **error);
/* Host pointer of a host array; NULL for device arrays. */
TL_API void *tl_array_map(TlArray *a);
TL_API void tl_array_free(TlArray *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlArray, tl_array_free)

TL_API guint64 tl_array_length(const TlArray *a);
TL_API gsize tl_array_elem_size(const TlArray *a);
TL_API guint64 tl_array_size_bytes(const TlArray *a);
TL_API VkDeviceAddress tl_array_address(const TlArray *a);
TL_API VkBuffer tl_array_buffer(const TlArray *a);
/* Byte offset of the array's first element in tl_array_buffer() (non-zero for views). */
TL_API guint64 tl_array_buffer_offset(const TlArray *a);
TL_API TlContext *tl_array_context(const TlArray *a);

/* Host -> device / device -> host for elements [first, first+count). Blocking. */
TL_API gboolean tl_array_upload_range(TlArray *a, guint64 first, guint64 count, const void *src, GError **error);
TL_API gboolean tl_array_download_range(const TlArray *a, guint64 first, guint64 count, void *dst, GError **error);
TL_API gboolean tl_array_upload(TlArray *a, const void *src, GError **error);
TL_API gboolean tl_array_download(const TlArray *a, void *dst, GError **error);
/* Sets every byte to zero (vkCmdFillBuffer). Blocking. */
TL_API gboolean tl_array_zero(TlArray *a, GError **error);

G_END_DECLS
