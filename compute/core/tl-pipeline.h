/* TlPipeline: a compute pipeline from SPIR-V. No descriptor sets: kernels reach
 * arrays through buffer device addresses passed in push constants.
 * Specialization constant id 0 is the workgroup size (local_size_x_id = 0);
 * further constants start at id 1. */
#pragma once
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

TlPipeline *tl_pipeline_new(TlContext *ctx, const TlPipelineDesc *desc, GError **error);
/* Builds from a kernel embedded at build time (shaders/NAME.comp). */
TlPipeline *tl_pipeline_new_builtin(TlContext *ctx, const char *shader, guint32 push_size,
                                    const guint32 *spec, guint32 n_spec, GError **error);
/* ... with a workgroup size of `local_size` (0 = the default). */
TlPipeline *tl_pipeline_new_builtin_local(TlContext *ctx, const char *shader, guint32 local_size,
                                          guint32 push_size, const guint32 *spec,
                                          guint32 n_spec, GError **error);
void tl_pipeline_free(TlPipeline *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlPipeline, tl_pipeline_free)

const char *tl_pipeline_name(const TlPipeline *p);
guint32 tl_pipeline_local_size(const TlPipeline *p);
guint32 tl_pipeline_push_size(const TlPipeline *p);
VkPipeline tl_pipeline_handle(const TlPipeline *p);
VkPipelineLayout tl_pipeline_layout(const TlPipeline *p);

/* Embedded SPIR-V by shader name; NULL if unknown. */
const guint32 *tl_shader_spirv(const char *name, gsize *size_bytes);

G_END_DECLS
