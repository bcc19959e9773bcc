/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlPipeline: a compute pipeline from SPIR-V. No descriptor sets: kernels reach
 * arrays through buffer device addresses passed in push constants.
 * Specialization constant id 0 is the workgroup size (local_size_x_id = 0);
 * further constants start at id 1. */
#pragma once
#include "tl-api.h"
#include "tl-context.h"

G_BEGIN_DECLS

typedef struct _TlPipeline TlPipeline;

/* The most specialization constants a kernel takes besides its workgroup size (id 0). */
#define TL_PIPELINE_MAX_SPEC 31

typedef struct {
  const guint32 *spirv;   /* SPIR-V words */
  gsize spirv_size;       /* in bytes */
  const char *name;       /* for messages and the profiler's default label */
  guint32 local_size;     /* 0 = tl_context_default_local_size() */
  guint32 push_size;      /* bytes of push constants the kernel declares (multiple of 4, <= 128) */
  const guint32 *spec;    /* values for constant ids 1..n_spec (32-bit each) */
  guint32 n_spec;
} TlPipelineDesc;

TL_API TlPipeline *tl_pipeline_new(TlContext *ctx, const TlPipelineDesc *desc, GError **error);
/* Builds from a kernel embedded at build time (shaders/NAME.comp). */
TL_API TlPipeline *tl_pipeline_new_builtin(TlContext *ctx, const char *shader, guint32 push_size,
                                    const guint32 *spec, guint32 n_spec, GError **error);
/* ... with a workgroup size of `local_size` (0 = the default). */
TL_API TlPipeline *tl_pipeline_new_builtin_local(TlContext *ctx, const char *shader, guint32 local_size,
                                          guint32 push_size, const guint32 *spec,
                                          guint32 n_spec, GError **error);
TL_API void tl_pipeline_free(TlPipeline *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlPipeline, tl_pipeline_free)

TL_API const char *tl_pipeline_name(const TlPipeline *p);
TL_API guint32 tl_pipeline_local_size(const TlPipeline *p);
TL_API guint32 tl_pipeline_push_size(const TlPipeline *p);
TL_API VkPipeline tl_pipeline_handle(const TlPipeline *p);
TL_API VkPipelineLayout tl_pipeline_layout(const TlPipeline *p);

/* Embedded SPIR-V by shader name; NULL if unknown. */
TL_API const guint32 *tl_shader_spirv(const char *name, gsize *size_bytes);

/* Relative cost of one work item of this pipeline (default 1): a dispatch costs work_items *
 * item_cost against a stream's submit budget (tl-stream.h). */
TL_API void tl_pipeline_set_item_cost(TlPipeline *p, guint32 cost);
TL_API guint32 tl_pipeline_item_cost(const TlPipeline *p);

G_END_DECLS
