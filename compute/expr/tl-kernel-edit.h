/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Compiling an edited built-in kernel at run time (glslang's C API) and installing it in a
 * context (core/tl-kernels.h): the workbench's kernel editor and `recon --kernel`. */
#pragma once
#include "tl-api.h"
#include "tl-kernels.h"

G_BEGIN_DECLS

/* One compile message at a line of the edited text (1-based; 0 when glslang gave none). */
typedef struct {
  guint line;
  gboolean error; /* else a warning */
  char *message;
} TlKernelDiagnostic;

/* `source` replaces built-in kernel `name` (its #include lines of built-in includes are
 * expanded first; the text tl_kernels_source gives has none). Compiled to SPIR-V and, when it
 * compiles, installed with tl_kernels_replace: pipelines made from now on use it. On a
 * compile error: FALSE, the GError (TL_ERROR_SHADER) carries glslang's log, and the context
 * keeps the kernel it had. *diagnostics (optional, free with tl_kernel_diagnostics_free)
 * gets every message with its line. ctx NULL: compile only (a check). Thread-safe: the
 * window compiles on a worker. */
TL_API gboolean tl_kernel_compile(TlContext *ctx, const char *name, const char *source,
                           GPtrArray **diagnostics, GError **error);
/* The compile step alone: SPIR-V (g_free) for tl_kernels_replace, e.g. compiled on a worker and
 * installed by the run's own thread between two sub-iterations. */
TL_API gboolean tl_kernel_compile_spirv(const char *name, const char *source, guint32 **spirv,
                                 gsize *size_bytes, GPtrArray **diagnostics, GError **error);
/* glslang's "ERROR: 0:LINE: text" / "WARNING: ..." lines as TlKernelDiagnostic (GPtrArray
 * that frees them). */
TL_API GPtrArray *tl_kernel_parse_log(const char *log);

G_END_DECLS
