/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Upload/download round trips, ranges, and kernels on arrays beyond maxStorageBufferRange. */
#include "tl-test-common.h"
#include <string.h>

static TlContext *ctx;

/* A pattern where every element differs from its neighbours and from zero. */
static void pattern(guint32 *p, guint64 n, guint32 seed) {
  for (guint64 i = 0; i < n; i++) p[i] = (guint32)(i * 2654435761u) ^ seed;
}

static void roundtrip(gconstpointer data) {
  guint64 n = GPOINTER_TO_SIZE(data);
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_array_new(ctx, n, 4, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_array_length(a), ==, n);
  g_assert_cmpuint(tl_array_size_bytes(a), ==, 4 * n);
  g_autofree guint32 *in = g_new(guint32, n), *out = g_new0(guint32, n);
  pattern(in, n, 0xabcdef);
  g_assert_true(tl_array_upload(a, in, &error));
  g_assert_no_error(error);
  g_assert_true(tl_array_download(a, out, &error));
  g_assert_no_error(error);
  g_assert_true(memcmp(in, out, 4 * n) == 0);

  /* a sub-range written and read back; the rest untouched */
  guint64 first = n / 3, count = n - n / 3 - n / 5;
  g_autofree guint32 *part = g_new(guint32, MAX(count, 1));
  pattern(part, count, 0x1234);
  g_assert_true(tl_array_upload_range(a, first, count, part, &error));
  g_assert_no_error(error);
  g_assert_true(tl_array_download(a, out, &error));
  memcpy(in + first, part, 4 * count);
  g_assert_true(memcmp(in, out, 4 * n) == 0);
  g_assert_true(tl_array_download_range(a, first, count, out, &error));
  g_assert_true(memcmp(part, out, 4 * count) == 0);

  g_assert_true(tl_array_zero(a, &error));
  g_assert_true(tl_array_download(a, out, &error));
  for (guint64 i = 0; i < n; i++) g_assert_cmpuint(out[i], ==, 0);
}

/* An array larger than the device's maxStorageBufferRange (lavapipe: 128 MiB, so 300 MiB
 * here): the round trip plus a kernel writing every element shows kernels reach the whole
 * array. Sized from the device, never from lavapipe's figure: on NVIDIA the range is 4 GiB and
 * maxMemoryAllocationSize just under it, so no single array can exceed the range there and the
 * case does not apply (skipped with the two limits named). */
static void test_large(void) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  guint64 bytes = MAX((guint64)300 << 20, info->max_storage_buffer_range + ((guint64)16 << 20));
  guint64 cap = info->max_memory_allocation_size;
  if (info->max_buffer_size) cap = MIN(cap, info->max_buffer_size);
  if (cap && bytes > cap) {
    g_autofree char *why = g_strdup_printf(
        "maxStorageBufferRange %" G_GUINT64_FORMAT " B: an array beyond it (%" G_GUINT64_FORMAT
        " B) exceeds this device's largest buffer (maxMemoryAllocationSize / maxBufferSize) %"
        G_GUINT64_FORMAT " B", info->max_storage_buffer_range, bytes, cap);
    g_test_skip(why);
    return;
  }
  const guint64 n = bytes / 4;
  GError *error = NULL;
  g_assert_cmpuint(4 * n, >, info->max_storage_buffer_range);
  roundtrip(GSIZE_TO_POINTER(n));
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_test_fill(ctx, s, a, 3.5f, NULL);
  g_autofree float *out = g_new(float, n);
  g_assert_true(tl_array_download(a, out, &error));
  g_assert_no_error(error);
  for (guint64 i = 0; i < n; i++)
    if (out[i] != 3.5f) g_error("element %" G_GUINT64_FORMAT " is %g", i, out[i]);
}

static void test_bad_ranges(void) {
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, 10, &error);
  float buf[16] = {0};
  g_assert_false(tl_array_upload_range(a, 5, 6, buf, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_array_download_range(a, G_MAXUINT64, 2, buf, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_null(tl_array_new(ctx, 10, 3, &error)); /* element size not a multiple of 4 */
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_null(tl_array_new(ctx, G_MAXUINT64 / 2, 4, &error)); /* beyond any allocation */
  g_assert_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_clear_error(&error);
  g_autoptr(TlArray) empty = tl_array_new_float(ctx, 0, &error); /* empty arrays are legal */
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(empty, buf, &error));
  g_assert_true(tl_array_download(empty, buf, &error));
  g_assert_no_error(error);
}

static void test_host_array(void) {
  GError *error = NULL;
  g_autoptr(TlArray) h = tl_array_new_host(ctx, 1000, 4, TRUE, &error);
  g_assert_no_error(error);
  float *p = tl_array_map(h);
  g_assert_nonnull(p);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_test_fill(ctx, s, h, -2.0f, NULL);
  for (int i = 0; i < 1000; i++) g_assert_cmpfloat(p[i], ==, -2.0f);
}

/* A view is its parent's elements [first, first + count): kernels (tl_test_fill), zeroing,
 * copies and transfers through it touch exactly those, and the parent sees the writes. */
static void test_view(void) {
  GError *error = NULL;
  enum { N = 1000, FIRST = 300, COUNT = 200 };
  g_autoptr(TlArray) a = tl_array_new_float(ctx, N, &error);
  g_assert_no_error(error);
  float host[N], back[N];
  for (int i = 0; i < N; i++) host[i] = (float)i;
  g_assert_true(tl_array_upload(a, host, &error));
  g_autoptr(TlArray) v = tl_array_new_view(a, FIRST, COUNT, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_array_length(v), ==, COUNT);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_test_fill(ctx, s, v, -1.0f, NULL);
  g_assert_true(tl_array_download(a, back, &error));
  for (int i = 0; i < N; i++)
    g_assert_cmpfloat(back[i], ==, i >= FIRST && i < FIRST + COUNT ? -1.0f : (float)i);
  /* transfers address the view's own elements */
  g_assert_true(tl_array_download_range(v, 10, 1, back, &error));
  g_assert_cmpfloat(back[0], ==, -1.0f);
  float seven = 7.0f;
  g_assert_true(tl_array_upload_range(v, COUNT - 1, 1, &seven, &error));
  /* zeroing a view leaves the rest, copies read and write at the view's offset */
  g_autoptr(TlArray) w = tl_array_new_view(a, 0, 10, &error);
  g_assert_true(tl_stream_copy(s, v, 4 * (COUNT - 1), w, 0, 4, &error));
  g_assert_true(tl_stream_zero(s, v, &error) && tl_stream_finish(s, &error));
  g_assert_true(tl_array_download(a, back, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(back[0], ==, 7.0f);
  for (int i = 1; i < N; i++)
    g_assert_cmpfloat(back[i], ==, i >= FIRST && i < FIRST + COUNT ? 0.0f : (float)i);
  g_assert_null(tl_array_new_view(a, N - 5, 6, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  static const guint64 sizes[] = {1, 63, 64, 1000007};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autofree char *path = g_strdup_printf("/array/roundtrip/%" G_GUINT64_FORMAT, sizes[i]);
    g_test_add_data_func(path, GSIZE_TO_POINTER(sizes[i]), roundtrip);
  }
  g_test_add_func("/array/roundtrip/beyond-range-and-kernel", test_large);
  g_test_add_func("/array/bad-ranges", test_bad_ranges);
  g_test_add_func("/array/host", test_host_array);
  g_test_add_func("/array/view", test_view);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
