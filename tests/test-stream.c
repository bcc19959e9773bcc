/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Dispatch: 1-D beyond 65535 workgroups, splitting into submissions, cancellation,
 * and the profiler's per-label timings. */
#include "tl-test-common.h"
#include <string.h>

static TlContext *ctx;

static void check_all(TlArray *a, float value) {
  guint64 n = tl_array_length(a);
  g_autofree float *out = g_new(float, n);
  GError *error = NULL;
  g_assert_true(tl_array_download(a, out, &error));
  g_assert_no_error(error);
  for (guint64 i = 0; i < n; i++)
    if (out[i] != value) g_error("element %" G_GUINT64_FORMAT ": %g, expected %g", i, out[i], value);
}

static void test_sizes(void) {
  static const guint64 sizes[] = {1, 63, 64, 1000007};
  GError *error = NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  for (gsize k = 0; k < G_N_ELEMENTS(sizes); k++) {
    g_autoptr(TlArray) a = tl_array_new_float(ctx, sizes[k] + 1, &error);
    g_assert_no_error(error);
    g_assert_true(tl_array_zero(a, &error));
    /* fill only the first sizes[k] elements: a 1-element view of a bigger array would
     * hide an overrun, so the guard element must stay 0 */
    struct { TlPush1D h; guint64 a; float v; guint32 pad; } push = {
        .a = tl_array_address(a), .v = 7.0f};
    g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", sizeof push, NULL, 0, &error);
    g_assert_true(tl_stream_dispatch_1d(s, p, NULL, sizes[k], &push, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_no_error(error);
    g_autofree float *out = g_new(float, sizes[k] + 1);
    g_assert_true(tl_array_download(a, out, &error));
    for (guint64 i = 0; i < sizes[k]; i++) g_assert_cmpfloat(out[i], ==, 7.0f);
    g_assert_cmpfloat(out[sizes[k]], ==, 0.0f);
  }
}

/* More workgroups than one grid dimension holds: the 1-D helper folds them into 2-D. */
static void test_many_groups(void) {
  GError *error = NULL;
  const TlDeviceInfo *info = tl_context_info(ctx);
  guint32 local = tl_context_default_local_size(ctx);
  guint64 n = (guint64)MIN(info->max_compute_work_group_count[0], 65535u) * local * 2 + 5;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_stream_set_submit_budget(s, G_MAXUINT64); /* one chunk, one dispatch */
  tl_test_fill(ctx, s, a, 1.25f, NULL);
  g_assert_cmpuint(tl_stream_n_submissions(s), ==, 1);
  check_all(a, 1.25f);
}

static void test_split_submissions(void) {
  GError *error = NULL;
  const guint64 n = 1000007, budget = 1 << 16;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_stream_set_submit_budget(s, budget);
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_stream_set_profile(s, prof);
  tl_test_fill(ctx, s, a, -4.0f, "split fill");
  g_assert_cmpuint(tl_stream_n_submissions(s), >=, n / budget);
  check_all(a, -4.0f);
  /* many chunks, one logical dispatch */
  const TlProfileEntry *e = tl_profile_lookup(prof, "split fill");
  g_assert_nonnull(e);
  g_assert_cmpuint(e->calls, ==, 1);
  g_assert_cmpfloat(e->gpu_ms, >, 0.0);
}

static void test_cancel(void) {
  GError *error = NULL;
  const guint64 n = 100000;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlArray) b = tl_array_new_float(ctx, n, &error);
  g_assert_true(tl_array_zero(a, &error) && tl_array_zero(b, &error));
  g_autoptr(GCancellable) c = g_cancellable_new();
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_stream_set_cancellable(s, c);
  tl_stream_set_submit_budget(s, n); /* each fill is its own submission */
  struct { TlPush1D h; guint64 a; float v; guint32 pad; } pa = {.a = tl_array_address(a), .v = 1},
                                                           pb = {.a = tl_array_address(b), .v = 2};
  g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", sizeof pa, NULL, 0, &error);
  g_assert_true(tl_stream_dispatch_1d(s, p, NULL, n, &pa, &error));
  g_cancellable_cancel(c);
  g_assert_false(tl_stream_dispatch_1d(s, p, NULL, n, &pb, &error));
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_true(tl_stream_cancelled(s));
  g_assert_false(tl_stream_finish(s, &error));
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  /* work recorded before the cancel is complete; the later work never ran */
  check_all(a, 1.0f);
  check_all(b, 0.0f);

  /* reusable once the cancellable is reset */
  g_cancellable_reset(c);
  g_assert_true(tl_stream_dispatch_1d(s, p, NULL, n, &pb, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  check_all(b, 2.0f);
}

/* tl_stream_dispatch_1d_range covers exactly items [first, first + n), over several chunks
 * (a small budget), and refuses items beyond 2^32. */
static void test_range(void) {
  GError *error = NULL;
  const guint64 len = 100000, first = 12345, n = 54321;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, len, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_stream_zero(s, a, &error));
  tl_stream_set_submit_budget(s, 4096);
  struct { TlPush1D h; guint64 a; float v; guint32 pad; } push = {.a = tl_array_address(a), .v = 3};
  g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", sizeof push, NULL, 0, &error);
  g_assert_true(tl_stream_dispatch_1d_range(s, p, NULL, first, n, &push, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_stream_n_submissions(s), >, 2);
  g_autofree float *h = g_new(float, len);
  g_assert_true(tl_array_download(a, h, &error));
  for (guint64 i = 0; i < len; i++)
    if (h[i] != (i >= first && i < first + n ? 3.0f : 0.0f))
      g_error("item %" G_GUINT64_FORMAT " holds %g", i, h[i]);
  g_assert_false(tl_stream_dispatch_1d_range(s, p, NULL, G_MAXUINT32, 2, &push, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

static void test_profiler(void) {
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, 1 << 20, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_stream_set_profile(s, prof);
  struct { TlPush1D h; guint64 a; float v; guint32 pad; } push = {.a = tl_array_address(a), .v = 1};
  g_autoptr(TlPipeline) p = tl_pipeline_new_builtin(ctx, "fill_f32", sizeof push, NULL, 0, &error);
  const char *labels[] = {"alpha", "beta", NULL, "alpha", "gamma", "alpha"};
  for (gsize i = 0; i < G_N_ELEMENTS(labels); i++)
    g_assert_true(tl_stream_dispatch_1d(s, p, labels[i], tl_array_length(a), &push, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_profile_n_entries(prof), ==, 3); /* unlabelled dispatches are not timed */
  const char *names[] = {"alpha", "beta", "gamma"};
  const guint calls[] = {3, 1, 1};
  for (int i = 0; i < 3; i++) {
    const TlProfileEntry *e = tl_profile_entry(prof, i);
    g_assert_cmpstr(e->label, ==, names[i]); /* first-seen order */
    g_assert_cmpuint(e->calls, ==, calls[i]);
    g_assert_cmpfloat(e->gpu_ms, >, 0.0);
  }
  g_autofree char *table = tl_profile_format(prof);
  g_assert_nonnull(strstr(table, "gamma"));
  g_assert_cmpfloat(tl_profile_total_ms(prof), >, 0.0);
  /* merge adds calls and times */
  g_autoptr(TlProfile) sum = tl_profile_new();
  tl_profile_merge(sum, prof);
  tl_profile_merge(sum, prof);
  g_assert_cmpuint(tl_profile_lookup(sum, "alpha")->calls, ==, 6);
  /* the difference to a snapshot is what was added after it */
  g_autoptr(TlProfile) since = tl_profile_new_since(sum, prof);
  g_assert_cmpuint(tl_profile_n_entries(since), ==, 3);
  g_assert_cmpuint(tl_profile_lookup(since, "alpha")->calls, ==, 3);
  g_assert_cmpfloat_with_epsilon(tl_profile_lookup(since, "beta")->gpu_ms,
                                 tl_profile_lookup(prof, "beta")->gpu_ms, 1e-9);
  g_autoptr(TlProfile) none = tl_profile_new_since(prof, prof);
  g_assert_cmpuint(tl_profile_n_entries(none), ==, 0);
  tl_profile_clear(prof);
  g_assert_cmpuint(tl_profile_n_entries(prof), ==, 0);
}

static void test_copy(void) {
  GError *error = NULL;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, 1000, &error);
  g_autoptr(TlArray) b = tl_array_new_float(ctx, 1000, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_test_fill(ctx, s, a, 9.0f, NULL);
  g_assert_true(tl_array_zero(b, &error));
  g_assert_true(tl_stream_copy(s, a, 400, b, 0, 2400, &error));
  g_assert_false(tl_stream_copy(s, a, 400, b, 2000, 2400, &error)); /* past b's end */
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(s, &error));
  float out[1000];
  g_assert_true(tl_array_download(b, out, &error));
  for (int i = 0; i < 1000; i++) g_assert_cmpfloat(out[i], ==, i < 600 ? 9.0f : 0.0f);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/stream/sizes", test_sizes);
  g_test_add_func("/stream/many-workgroups", test_many_groups);
  g_test_add_func("/stream/split-submissions", test_split_submissions);
  g_test_add_func("/stream/cancel", test_cancel);
  g_test_add_func("/stream/profiler", test_profiler);
  g_test_add_func("/stream/copy", test_copy);
  g_test_add_func("/stream/range", test_range);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
