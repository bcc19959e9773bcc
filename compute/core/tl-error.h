/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Error domain shared by every fallible call of the compute library. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

#define TL_ERROR (tl_error_quark())
TL_API GQuark tl_error_quark(void);

typedef enum {
  TL_ERROR_NO_DEVICE,      /* no usable Vulkan device (or the requested one is absent) */
  TL_ERROR_VULKAN,         /* a Vulkan call failed; message carries the VkResult */
  TL_ERROR_OUT_OF_MEMORY,  /* device or host allocation refused */
  TL_ERROR_INVALID_ARG,    /* caller passed a value outside the documented range */
  TL_ERROR_SHADER,         /* GLSL -> SPIR-V compilation failed */
  TL_ERROR_PARSE,          /* expression syntax error; message holds the column */
  TL_ERROR_IO,             /* file read/write */
  TL_ERROR_FORMAT,         /* file contents not as the format says */
  TL_ERROR_UNSUPPORTED,    /* an optional operation this object does not offer */
} TlError;

/* Human-readable name of a VkResult (takes int to keep vulkan.h out of this header). */
TL_API const char *tl_vk_result_name(int vk_result);

G_END_DECLS
