/* SPDX-License-Identifier: GPL-3.0-or-later */
/* glslang behind a small C function: the expression module's kernels exist only at
 * run time, so they cannot go through the build-time glslangValidator step. */
#include "tl-glsl.h"
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <string.h>

/* glslang_initialize_process() sets up process-wide tables; it must run once
 * before any compile, whichever thread gets there first. */
static gpointer tl_glsl_init(gpointer unused) {
  glslang_initialize_process();
  return GINT_TO_POINTER(1);
}

gboolean tl_glsl_compile(const char *source, const char *name, guint32 **spirv, gsize *size_bytes,
                         GError **error) {
  static GOnce once = G_ONCE_INIT;
  g_once(&once, tl_glsl_init, NULL);

  const glslang_input_t input = {
    .language = GLSLANG_SOURCE_GLSL,
    .stage = GLSLANG_STAGE_COMPUTE,
    .client = GLSLANG_CLIENT_VULKAN,
    .client_version = GLSLANG_TARGET_VULKAN_1_2,
    .target_language = GLSLANG_TARGET_SPV,
    .target_language_version = GLSLANG_TARGET_SPV_1_5,
    .code = source,
    .default_version = 460,
    .default_profile = GLSLANG_NO_PROFILE,
    .force_default_version_and_profile = 0,
    .forward_compatible = 0,
    .messages = GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
    .resource = glslang_default_resource(),
  };
  gboolean ok = FALSE;
  glslang_program_t *program = NULL;
  glslang_shader_t *shader = glslang_shader_create(&input);
  if (!shader) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "%s: glslang could not create a shader", name);
    return FALSE;
  }
  if (!glslang_shader_preprocess(shader, &input) || !glslang_shader_parse(shader, &input)) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "%s: GLSL compile failed:\n%s", name,
                glslang_shader_get_info_log(shader));
    goto out;
  }
  program = glslang_program_create();
  glslang_program_add_shader(program, shader);
  if (!glslang_program_link(program, input.messages)) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "%s: GLSL link failed:\n%s", name,
                glslang_program_get_info_log(program));
    goto out;
  }
  /* The driver optimises anyway; skipping spirv-opt keeps compiles short. */
  glslang_spv_options_t options = { .disable_optimizer = true, .validate = false };
  glslang_program_SPIRV_generate_with_options(program, GLSLANG_STAGE_COMPUTE, &options);
  const char *msg = glslang_program_SPIRV_get_messages(program);
  gsize words = glslang_program_SPIRV_get_size(program);
  if (words == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_SHADER, "%s: no SPIR-V generated%s%s", name,
                msg ? ": " : "", msg ? msg : "");
    goto out;
  }
  *size_bytes = words * sizeof(guint32);
  *spirv = g_memdup2(glslang_program_SPIRV_get_ptr(program), *size_bytes);
  ok = TRUE;
out:
  if (program) glslang_program_delete(program);
  glslang_shader_delete(shader);
  return ok;
}
