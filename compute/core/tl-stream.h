/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlStream: records dispatches into command buffers and submits them to the
 * compute queue. A global compute->compute barrier precedes every dispatch, so
 * recorded work runs in order. Recorded work is flushed into a new submission
 * whenever its cost exceeds the submit budget, so no single submission runs long
 * enough to trip a desktop GPU watchdog; at most two submissions are in flight.
 * Between submissions the stream checks its GCancellable: once cancelled it
 * records nothing more and tl_stream_finish() fails with G_IO_ERROR_CANCELLED
 * after the in-flight work has completed (so buffers are never left mid-write
 * by a half-executed dispatch).
 *
 * 1-D kernels: the first 8 bytes of the push block are `uint base; uint count;`
 * (see shaders/core/tl_common.glsl). tl_stream_dispatch_1d() splits n items into
 * chunks of at most TL_CHUNK_MAX items, each a 2-D grid of workgroups so no
 * dimension exceeds maxComputeWorkGroupCount, and rewrites base/count per chunk. */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "tl-array.h"
#include "tl-pipeline.h"
#include "tl-profiler.h"

G_BEGIN_DECLS

typedef struct _TlStream TlStream;

/* Push-constant header every 1-D kernel starts with. */
typedef struct {
  guint32 base;
  guint32 count;
} TlPush1D;

#define TL_CHUNK_MAX (1u << 30)

TL_API TlStream *tl_stream_new(TlContext *ctx, GError **error);
/* Waits for in-flight work, then frees. */
TL_API void tl_stream_free(TlStream *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlStream, tl_stream_free)

TL_API void tl_stream_set_cancellable(TlStream *s, GCancellable *cancellable);
/* Timings of labelled dispatches are added here when their submission completes
 * (borrowed; NULL = don't time). */
TL_API void tl_stream_set_profile(TlStream *s, TlProfile *profile);
/* Cost units per submission; a dispatch costs work_items * item_cost.
 * Default 2^26, or $TOMOLAB_SUBMIT_BUDGET. */
TL_API void tl_stream_set_submit_budget(TlStream *s, guint64 budget);
TL_API guint64 tl_stream_submit_budget(const TlStream *s);
/* Submissions made so far (tests use it to see that long work was split). */
TL_API guint tl_stream_n_submissions(const TlStream *s);

/* One dispatch of gx*gy*gz workgroups. `push` is the whole push block
 * (tl_pipeline_push_size bytes). `label` NULL = not timed. `work_items` is the
 * cost estimate (in item_cost units of the pipeline). */
TL_API gboolean tl_stream_dispatch(TlStream *s, TlPipeline *p, const char *label, guint32 gx, guint32 gy,
                            guint32 gz, const void *push, guint64 work_items, GError **error);
/* Covers items [0, n): see header comment. `push` is modified (base/count). */
TL_API gboolean tl_stream_dispatch_1d(TlStream *s, TlPipeline *p, const char *label, guint64 n, void *push,
                               GError **error);
/* Covers items [first, first + n) (first + n <= 2^32): a kernel that derives its work from the
 * item number does only that part of it (a CT slab's voxels, tl-ct-slabs.h). */
TL_API gboolean tl_stream_dispatch_1d_range(TlStream *s, TlPipeline *p, const char *label,
                                            guint64 first, guint64 n, void *push, GError **error);
/* Commands recorded by someone else's code (a library such as VkFFT that records into a
 * command buffer it is given): fn(cb, data) is called once with the stream's current command
 * buffer, after the usual barrier, between timestamps when `label` is timed. fn may bind its
 * own pipelines and descriptor sets and record its own barriers; the next dispatch binds its
 * pipeline again. `work_items` is the cost estimate (item cost 1). */
typedef void (*TlStreamRecordFunc)(VkCommandBuffer cb, gpointer data);
TL_API gboolean tl_stream_record_external(TlStream *s, const char *label, guint64 work_items,
                                   TlStreamRecordFunc fn, gpointer data, GError **error);
/* Device-side copy and zero fill, ordered with the dispatches. */
TL_API gboolean tl_stream_copy(TlStream *s, const TlArray *src, guint64 src_byte, TlArray *dst,
                        guint64 dst_byte, guint64 bytes, GError **error);
TL_API gboolean tl_stream_zero(TlStream *s, TlArray *a, GError **error);

/* Submits what is recorded without waiting. */
TL_API gboolean tl_stream_flush(TlStream *s, GError **error);
/* Submits and waits for everything; collects timings. FALSE + G_IO_ERROR_CANCELLED
 * when cancelled (all submitted work has finished by then). The stream can be reused. */
TL_API gboolean tl_stream_finish(TlStream *s, GError **error);
TL_API gboolean tl_stream_cancelled(const TlStream *s);

G_END_DECLS
