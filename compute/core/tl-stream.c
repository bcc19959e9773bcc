/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlStream: recording, budgeted submission, cancellation and timestamp profiling. */
#include "tl-stream.h"
#include "tl-kernels.h"
#include "tl-progress.h"
#include <stdlib.h>
#include <string.h>

#define TL_SLOTS 3           /* one recording + up to two in flight */
#define TL_MAX_TIMED 256     /* timed dispatches per submission (2 queries each) */
#define TL_DEFAULT_BUDGET ((guint64)1 << 26)

typedef struct {
  VkCommandBuffer cb;
  VkFence fence;
  VkQueryPool queries;
  guint n_timed;
  char *labels[TL_MAX_TIMED];
  guint8 counts[TL_MAX_TIMED]; /* 1 for the first chunk of a logical dispatch */
  const char *kernels[TL_MAX_TIMED]; /* built-in kernel names (static) or NULL */
  gboolean in_flight;
  guint64 cost; /* of the submission: reported to the thread's progress when it completes */
} Slot;

struct _TlStream {
  TlContext *ctx;
  VkCommandPool pool;
  Slot slots[TL_SLOTS];
  int cur;       /* slot being recorded, -1 if none */
  int next;      /* slot to record into next */
  guint64 cost;  /* cost recorded into the current slot */
  guint n_cmds;  /* commands recorded into the current slot */
  guint64 budget;
  GCancellable *cancellable;
  gboolean cancelled;
  TlProfile *profile;
  guint n_submissions;
  gboolean timestamps;
  double period_ns;
  guint64 ts_mask;
};

TlStream *tl_stream_new(TlContext *ctx, GError **error) {
  VkDevice dev = tl_context_device(ctx);
  const TlDeviceInfo *info = tl_context_info(ctx);
  g_autoptr(TlStream) s = g_new0(TlStream, 1);
  s->ctx = ctx;
  s->cur = -1;
  s->budget = TL_DEFAULT_BUDGET;
  const char *env = g_getenv("TOMOLAB_SUBMIT_BUDGET");
  if (env && g_ascii_strtoull(env, NULL, 10) > 0) s->budget = g_ascii_strtoull(env, NULL, 10);
  s->timestamps = info->timestamps;
  s->period_ns = info->timestamp_period_ns;
  s->ts_mask = info->timestamp_valid_bits >= 64 ? G_MAXUINT64
                                                : (((guint64)1 << info->timestamp_valid_bits) - 1);

  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                .queueFamilyIndex = tl_context_queue_family(ctx)};
  VkResult r = vkCreateCommandPool(dev, &pi, NULL, &s->pool);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkCreateCommandPool");
    return NULL;
  }
  for (int i = 0; i < TL_SLOTS; i++) {
    Slot *sl = &s->slots[i];
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = s->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vkAllocateCommandBuffers(dev, &ai, &sl->cb)) != VK_SUCCESS ||
        (r = vkCreateFence(dev, &fi, NULL, &sl->fence)) != VK_SUCCESS) {
      tl_vk_fail(error, r, "stream setup");
      return NULL;
    }
    if (s->timestamps) {
      VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                  .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                  .queryCount = 2 * TL_MAX_TIMED};
      if ((r = vkCreateQueryPool(dev, &qi, NULL, &sl->queries)) != VK_SUCCESS) {
        tl_vk_fail(error, r, "vkCreateQueryPool");
        return NULL;
      }
    }
  }
  return g_steal_pointer(&s);
}

static void clear_labels(Slot *sl) {
  for (guint i = 0; i < sl->n_timed; i++) g_clear_pointer(&sl->labels[i], g_free);
  sl->n_timed = 0;
}

/* Waits for a submitted slot and hands its timings to the profile. */
static gboolean retire(TlStream *s, Slot *sl, GError **error) {
  if (!sl->in_flight) return TRUE;
  VkDevice dev = tl_context_device(s->ctx);
  VkResult r = vkWaitForFences(dev, 1, &sl->fence, VK_TRUE, UINT64_MAX);
  sl->in_flight = FALSE;
  if (r != VK_SUCCESS) {
    clear_labels(sl);
    return tl_vk_fail(error, r, "waiting for the GPU");
  }
  vkResetFences(dev, 1, &sl->fence);
  tl_progress_device_work((double)sl->cost);
  if (sl->n_timed && s->profile) {
    guint64 ts[2 * TL_MAX_TIMED];
    r = vkGetQueryPoolResults(dev, sl->queries, 0, 2 * sl->n_timed, sizeof ts, ts, sizeof(guint64),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
      clear_labels(sl);
      return tl_vk_fail(error, r, "reading timestamps");
    }
    for (guint i = 0; i < sl->n_timed; i++) {
      guint64 dt = ((ts[2 * i + 1] & s->ts_mask) - (ts[2 * i] & s->ts_mask)) & s->ts_mask;
      tl_profile_add_kernel(s->profile, sl->labels[i], sl->kernels[i], sl->counts[i],
                            dt * s->period_ns * 1e-6);
    }
  }
  clear_labels(sl);
  return TRUE;
}

static gboolean retire_all(TlStream *s, GError **error) {
  gboolean ok = TRUE;
  /* oldest first, so profile entries keep submission order */
  for (int k = 0; k < TL_SLOTS; k++) {
    GError *e = NULL;
    if (!retire(s, &s->slots[(s->next + k) % TL_SLOTS], &e)) {
      if (ok) g_propagate_error(error, e);
      else g_error_free(e);
      ok = FALSE;
    }
  }
  return ok;
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                        .dstAccessMask = dst_access};
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Makes sure a slot is open for recording. */
static gboolean begin(TlStream *s, GError **error) {
  if (s->cur >= 0) return TRUE;
  Slot *sl = &s->slots[s->next];
  if (!retire(s, sl, error)) return FALSE;
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  VkResult r = vkBeginCommandBuffer(sl->cb, &bi);
  if (r != VK_SUCCESS) return tl_vk_fail(error, r, "vkBeginCommandBuffer");
  if (s->timestamps) vkCmdResetQueryPool(sl->cb, sl->queries, 0, 2 * TL_MAX_TIMED);
  s->cur = s->next;
  s->next = (s->next + 1) % TL_SLOTS;
  s->cost = 0;
  s->n_cmds = 0;
  return TRUE;
}

static gboolean check_cancel(TlStream *s, GError **error) {
  /* the thread's progress has a Cancel too (a sensitivity image made inside a job's creation) */
  if (!s->cancelled && ((s->cancellable && g_cancellable_is_cancelled(s->cancellable)) ||
                        tl_progress_cancelled()))
    s->cancelled = TRUE;
  if (s->cancelled) {
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled");
    return FALSE;
  }
  return TRUE;
}

gboolean tl_stream_flush(TlStream *s, GError **error) {
  if (s->cur < 0) return TRUE;
  Slot *sl = &s->slots[s->cur];
  s->cur = -1;
  sl->cost = s->cost;
  /* make results visible to host reads after the fence */
  barrier(sl->cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  VkResult r = vkEndCommandBuffer(sl->cb);
  if (r != VK_SUCCESS) {
    clear_labels(sl);
    return tl_vk_fail(error, r, "vkEndCommandBuffer");
  }
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                     .commandBufferCount = 1,
                     .pCommandBuffers = &sl->cb};
  tl_context_lock_queue(s->ctx);
  r = vkQueueSubmit(tl_context_queue(s->ctx), 1, &si, sl->fence);
  tl_context_unlock_queue(s->ctx);
  if (r != VK_SUCCESS) {
    clear_labels(sl);
    return tl_vk_fail(error, r, "vkQueueSubmit");
  }
  sl->in_flight = TRUE;
  s->n_submissions++;
  return TRUE;
}

/* Opens a slot for a command of the given cost, submitting first when the budget is spent. */
static gboolean prepare(TlStream *s, guint64 cost, gboolean timed, GError **error) {
  if (!check_cancel(s, error)) return FALSE;
  if (s->cur >= 0 && s->n_cmds > 0 &&
      (s->cost + cost > s->budget ||
       (timed && s->slots[s->cur].n_timed == TL_MAX_TIMED))) {
    if (!tl_stream_flush(s, error)) return FALSE;
    if (!check_cancel(s, error)) return FALSE; /* between submissions */
  }
  if (!begin(s, error)) return FALSE;
  s->cost += cost;
  s->n_cmds++;
  barrier(s->slots[s->cur].cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
              VK_ACCESS_TRANSFER_WRITE_BIT);
  return TRUE;
}

/* The built-in kernel a pipeline is made from ("NAME" or "NAME (edited)"), as the static
 * name of tl_kernels_names(); NULL for generated kernels. */
static const char *builtin_name(const char *pipeline) {
  const char *const *names = tl_kernels_names();
  gsize n = strlen(pipeline);
  if (g_str_has_suffix(pipeline, " (edited)")) n -= strlen(" (edited)");
  for (guint i = 0; names[i]; i++)
    if (strlen(names[i]) == n && strncmp(names[i], pipeline, n) == 0) return names[i];
  return NULL;
}

static gboolean record(TlStream *s, TlPipeline *p, const char *label, guint count, guint32 gx,
                       guint32 gy, guint32 gz, const void *push, guint64 work_items,
                       GError **error) {
  const TlDeviceInfo *info = tl_context_info(s->ctx);
  if (gx > info->max_compute_work_group_count[0] || gy > info->max_compute_work_group_count[1] ||
      gz > info->max_compute_work_group_count[2]) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "kernel %s: grid %ux%ux%u exceeds maxComputeWorkGroupCount %ux%ux%u",
                tl_pipeline_name(p), gx, gy, gz, info->max_compute_work_group_count[0],
                info->max_compute_work_group_count[1], info->max_compute_work_group_count[2]);
    return FALSE;
  }
  gboolean timed = label && s->timestamps && s->profile;
  if (!prepare(s, work_items * tl_pipeline_item_cost(p), timed, error)) return FALSE;
  Slot *sl = &s->slots[s->cur];
  if (timed)
    vkCmdWriteTimestamp(sl->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, sl->queries, 2 * sl->n_timed);
  vkCmdBindPipeline(sl->cb, VK_PIPELINE_BIND_POINT_COMPUTE, tl_pipeline_handle(p));
  if (tl_pipeline_push_size(p))
    vkCmdPushConstants(sl->cb, tl_pipeline_layout(p), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       tl_pipeline_push_size(p), push);
  if (gx && gy && gz) vkCmdDispatch(sl->cb, gx, gy, gz);
  if (timed) {
    vkCmdWriteTimestamp(sl->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, sl->queries,
                        2 * sl->n_timed + 1);
    /* a kernel replaced at run time (tl-kernels.h) is timed under its own label */
    sl->labels[sl->n_timed] = g_str_has_suffix(tl_pipeline_name(p), " (edited)") &&
                                      !g_str_has_suffix(label, " (edited)")
                                  ? g_strconcat(label, " (edited)", NULL)
                                  : g_strdup(label);
    sl->counts[sl->n_timed] = (guint8)count;
    sl->kernels[sl->n_timed] = builtin_name(tl_pipeline_name(p));
    sl->n_timed++;
  }
  return TRUE;
}

gboolean tl_stream_dispatch(TlStream *s, TlPipeline *p, const char *label, guint32 gx, guint32 gy,
                            guint32 gz, const void *push, guint64 work_items, GError **error) {
  return record(s, p, label, 1, gx, gy, gz, push, work_items, error);
}

gboolean tl_stream_dispatch_1d(TlStream *s, TlPipeline *p, const char *label, guint64 n, void *push,
                               GError **error) {
  return tl_stream_dispatch_1d_range(s, p, label, 0, n, push, error);
}

gboolean tl_stream_dispatch_1d_range(TlStream *s, TlPipeline *p, const char *label, guint64 first,
                                     guint64 n, void *push, GError **error) {
  const TlDeviceInfo *info = tl_context_info(s->ctx);
  guint32 local = tl_pipeline_local_size(p);
  if (tl_pipeline_push_size(p) < sizeof(TlPush1D)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "kernel %s: a 1-D kernel's push block must start with base and count",
                tl_pipeline_name(p));
    return FALSE;
  }
  if (first + n > G_MAXUINT32 || first > G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "kernel %s: items up to %" G_GUINT64_FORMAT " exceed the 2^32 a 1-D kernel indexes",
                tl_pipeline_name(p), first + n);
    return FALSE;
  }
  /* Chunk so that one chunk fits the submit budget (whole workgroups, at least one). */
  guint64 chunk = MIN((guint64)TL_CHUNK_MAX, s->budget / tl_pipeline_item_cost(p));
  chunk = MAX(chunk / local, 1) * local;
  guint32 gx_max = MIN(info->max_compute_work_group_count[0], 65535u);
  guint8 pushbuf[256];
  memcpy(pushbuf, push, tl_pipeline_push_size(p));
  TlPush1D *hdr = (TlPush1D *)pushbuf;
  for (guint64 base = 0; base < n; base += chunk) {
    guint64 count = MIN(chunk, n - base);
    guint64 groups = (count + local - 1) / local;
    guint32 gx = (guint32)MIN(groups, (guint64)gx_max);
    guint32 gy = (guint32)((groups + gx - 1) / gx);
    hdr->base = (guint32)(first + base);
    hdr->count = (guint32)count;
    /* the label counts one call per logical dispatch, however many chunks it took */
    if (!record(s, p, label, base == 0, gx, gy, 1, pushbuf, count, error)) return FALSE;
  }
  memcpy(push, pushbuf, tl_pipeline_push_size(p));
  return TRUE;
}

gboolean tl_stream_record_external(TlStream *s, const char *label, guint64 work_items,
                                   TlStreamRecordFunc fn, gpointer data, GError **error) {
  gboolean timed = label && s->timestamps && s->profile;
  if (!prepare(s, work_items, timed, error)) return FALSE;
  Slot *sl = &s->slots[s->cur];
  if (timed)
    vkCmdWriteTimestamp(sl->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, sl->queries, 2 * sl->n_timed);
  fn(sl->cb, data);
  if (timed) {
    vkCmdWriteTimestamp(sl->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, sl->queries,
                        2 * sl->n_timed + 1);
    sl->labels[sl->n_timed] = g_strdup(label);
    sl->counts[sl->n_timed] = 1;
    sl->n_timed++;
  }
  return TRUE;
}

gboolean tl_stream_copy(TlStream *s, const TlArray *src, guint64 src_byte, TlArray *dst,
                        guint64 dst_byte, guint64 bytes, GError **error) {
  if (src_byte + bytes > tl_array_size_bytes(src) || dst_byte + bytes > tl_array_size_bytes(dst) ||
      src_byte + bytes < src_byte || dst_byte + bytes < dst_byte) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "copy of %" G_GUINT64_FORMAT " bytes is outside the source (%" G_GUINT64_FORMAT
                ") or destination (%" G_GUINT64_FORMAT ") array",
                bytes, tl_array_size_bytes(src), tl_array_size_bytes(dst));
    return FALSE;
  }
  if (bytes == 0) return TRUE;
  if (!prepare(s, bytes / 4, FALSE, error)) return FALSE;
  VkBufferCopy c = {.srcOffset = tl_array_buffer_offset(src) + src_byte,
                   .dstOffset = tl_array_buffer_offset(dst) + dst_byte, .size = bytes};
  vkCmdCopyBuffer(s->slots[s->cur].cb, tl_array_buffer(src), tl_array_buffer(dst), 1, &c);
  return TRUE;
}

gboolean tl_stream_zero(TlStream *s, TlArray *a, GError **error) {
  if (!prepare(s, tl_array_size_bytes(a) / 4, FALSE, error)) return FALSE;
  /* a view fills only its own bytes; an empty array's 4-byte buffer is filled whole */
  VkDeviceSize size = tl_array_buffer_offset(a) || tl_array_size_bytes(a) ? tl_array_size_bytes(a)
                                                                         : VK_WHOLE_SIZE;
  if (size == 0) return TRUE;
  vkCmdFillBuffer(s->slots[s->cur].cb, tl_array_buffer(a), tl_array_buffer_offset(a), size, 0);
  return TRUE;
}

gboolean tl_stream_finish(TlStream *s, GError **error) {
  GError *e = NULL;
  gboolean ok = tl_stream_flush(s, &e);
  /* always wait: nothing may still write into buffers the caller is about to read or free */
  ok = retire_all(s, ok ? &e : NULL) && ok;
  if (ok && s->cancelled) {
    g_set_error_literal(&e, G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled");
    ok = FALSE;
  }
  s->cancelled = FALSE;
  if (!ok) g_propagate_error(error, e);
  return ok;
}

void tl_stream_free(TlStream *s) {
  if (!s) return;
  VkDevice dev = tl_context_device(s->ctx);
  if (s->cur >= 0) { /* recorded but never submitted: discard */
    vkEndCommandBuffer(s->slots[s->cur].cb);
    clear_labels(&s->slots[s->cur]);
  }
  retire_all(s, NULL);
  for (int i = 0; i < TL_SLOTS; i++) {
    if (s->slots[i].fence) vkDestroyFence(dev, s->slots[i].fence, NULL);
    if (s->slots[i].queries) vkDestroyQueryPool(dev, s->slots[i].queries, NULL);
  }
  if (s->pool) vkDestroyCommandPool(dev, s->pool, NULL);
  g_clear_object(&s->cancellable);
  g_free(s);
}

void tl_stream_set_cancellable(TlStream *s, GCancellable *c) {
  g_set_object(&s->cancellable, c);
}
void tl_stream_set_profile(TlStream *s, TlProfile *profile) { s->profile = profile; }
void tl_stream_set_submit_budget(TlStream *s, guint64 budget) { s->budget = MAX(budget, 1); }
guint64 tl_stream_submit_budget(const TlStream *s) { return s->budget; }
guint tl_stream_n_submissions(const TlStream *s) { return s->n_submissions; }
gboolean tl_stream_cancelled(const TlStream *s) {
  return s->cancelled || (s->cancellable && g_cancellable_is_cancelled(s->cancellable));
}
