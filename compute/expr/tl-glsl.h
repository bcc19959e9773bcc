/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Runtime GLSL -> SPIR-V through glslang's C API (Vulkan 1.2 / SPIR-V 1.5). */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* Compiles one compute shader. On success *spirv (g_free) holds *size_bytes bytes
 * of SPIR-V words. Failure: TL_ERROR_SHADER with glslang's log. Thread-safe. */
TL_API gboolean tl_glsl_compile(const char *source, const char *name, guint32 **spirv, gsize *size_bytes,
                         GError **error);

G_END_DECLS
