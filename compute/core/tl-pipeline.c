/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlPipeline: compute pipelines from SPIR-V with push constants only. */
#include "tl-pipeline.h"
#include "tl-shader-table.h"
#include "tl-kernels.h"
#include <string.h>

struct _TlPipeline {
  TlContext *ctx;
  char *name;
  VkShaderModule module;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  guint32 local_size, push_size, item_cost;
};

const guint32 *tl_shader_spirv(const char *name, gsize *size_bytes) {
  for (gsize i = 0; i < G_N_ELEMENTS(tl_shader_table); i++)
    if (strcmp(tl_shader_table[i].name, name) == 0) {
      if (size_bytes) *size_bytes = tl_shader_table[i].size;
      return tl_shader_table[i].words;
    }
  return NULL;
}

TlPipeline *tl_pipeline_new(TlContext *ctx, const TlPipelineDesc *d, GError **error) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  const char *name = d->name ? d->name : "kernel";
  guint32 local = d->local_size ? d->local_size : tl_context_default_local_size(ctx);
  if (!d->spirv || d->spirv_size < 20 || d->spirv_size % 4 || d->spirv[0] != 0x07230203u) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "kernel %s: not a SPIR-V module", name);
    return NULL;
  }
  guint32 local_max = MIN(info->max_compute_work_group_invocations,
                         info->max_compute_work_group_size[0]);
  if (local > local_max) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "kernel %s: workgroup size %u exceeds the device limit %u", name, local, local_max);
    return NULL;
  }
  if (d->push_size % 4 || d->push_size > info->max_push_constants_size ||
      d->n_spec > TL_PIPELINE_MAX_SPEC) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "kernel %s: %u bytes of push constants / %u specialization constants "
                "(expected a multiple of 4 up to %u bytes, at most %u constants)",
                name, d->push_size, d->n_spec, info->max_push_constants_size,
                TL_PIPELINE_MAX_SPEC);
    return NULL;
  }

  VkDevice dev = tl_context_device(ctx);
  g_autoptr(TlPipeline) p = g_new0(TlPipeline, 1);
  p->ctx = ctx;
  p->name = g_strdup(name);
  p->local_size = local;
  p->push_size = d->push_size;
  p->item_cost = 1;

  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                 .codeSize = d->spirv_size,
                                 .pCode = d->spirv};
  VkResult r = vkCreateShaderModule(dev, &mi, NULL, &p->module);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkCreateShaderModule");
    return NULL;
  }
  VkPushConstantRange range = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = d->push_size};
  VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                   .pushConstantRangeCount = d->push_size ? 1 : 0,
                                   .pPushConstantRanges = &range};
  r = vkCreatePipelineLayout(dev, &li, NULL, &p->layout);
  if (r != VK_SUCCESS) {
    tl_vk_fail(error, r, "vkCreatePipelineLayout");
    return NULL;
  }

  /* Constant 0 is the workgroup size; 1..n come from the caller. */
  guint32 values[TL_PIPELINE_MAX_SPEC + 1];
  VkSpecializationMapEntry map[TL_PIPELINE_MAX_SPEC + 1];
  values[0] = local;
  for (guint32 i = 0; i <= d->n_spec; i++) {
    if (i > 0) values[i] = d->spec[i - 1];
    map[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
  }
  VkSpecializationInfo si = {.mapEntryCount = d->n_spec + 1, .pMapEntries = map,
                             .dataSize = 4 * (d->n_spec + 1), .pData = values};
  VkComputePipelineCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = p->module,
                .pName = "main",
                .pSpecializationInfo = &si},
      .layout = p->layout};
  r = vkCreateComputePipelines(dev, tl_context_pipeline_cache(ctx), 1, &ci, NULL, &p->pipeline);
  if (r != VK_SUCCESS) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "kernel %s: vkCreateComputePipelines: %s", name,
                tl_vk_result_name(r));
    return NULL;
  }
  return g_steal_pointer(&p);
}

TlPipeline *tl_pipeline_new_builtin(TlContext *ctx, const char *shader, guint32 push_size,
                                    const guint32 *spec, guint32 n_spec, GError **error) {
  return tl_pipeline_new_builtin_local(ctx, shader, 0, push_size, spec, n_spec, error);
}

TlPipeline *tl_pipeline_new_builtin_local(TlContext *ctx, const char *shader, guint32 local_size,
                                          guint32 push_size, const guint32 *spec,
                                          guint32 n_spec, GError **error) {
  gsize size = 0;
  const char *label = shader;
  /* a replacement made at run time (tl-kernels.h) wins over the embedded SPIR-V */
  const guint32 *words = tl_kernels_spirv(ctx, shader, &size, &label);
  if (!words) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no embedded kernel named '%s'", shader);
    return NULL;
  }
  TlPipelineDesc d = {.spirv = words, .spirv_size = size, .name = label,
                      .local_size = local_size, .push_size = push_size, .spec = spec,
                      .n_spec = n_spec};
  return tl_pipeline_new(ctx, &d, error);
}

void tl_pipeline_free(TlPipeline *p) {
  if (!p) return;
  VkDevice dev = tl_context_device(p->ctx);
  if (p->pipeline) vkDestroyPipeline(dev, p->pipeline, NULL);
  if (p->layout) vkDestroyPipelineLayout(dev, p->layout, NULL);
  if (p->module) vkDestroyShaderModule(dev, p->module, NULL);
  g_free(p->name);
  g_free(p);
}

const char *tl_pipeline_name(const TlPipeline *p) { return p->name; }
guint32 tl_pipeline_local_size(const TlPipeline *p) { return p->local_size; }
guint32 tl_pipeline_push_size(const TlPipeline *p) { return p->push_size; }
VkPipeline tl_pipeline_handle(const TlPipeline *p) { return p->pipeline; }
VkPipelineLayout tl_pipeline_layout(const TlPipeline *p) { return p->layout; }
void tl_pipeline_set_item_cost(TlPipeline *p, guint32 cost) { p->item_cost = MAX(cost, 1u); }
guint32 tl_pipeline_item_cost(const TlPipeline *p) { return p->item_cost; }
