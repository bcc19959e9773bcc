/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Built-in kernels as text, and run-time replacements of them (the workbench's kernel editor,
 * `tomolab-cli recon --kernel NAME=FILE.comp`; Petit 2020's kernels made at run time).
 *
 * Every built-in kernel's GLSL and every include are embedded at build time. A kernel's source
 * as the editor shows it is self-contained: its #include lines replaced by the included text
 * (each file once, between "// ---- begin FILE" / "// ---- end FILE" lines), so a compile
 * error's line is a line of the text the user edits.
 *
 * A replacement is SPIR-V for one built-in name, held by the context: every pipeline made
 * from that name after tl_kernels_replace (tl_pipeline_new_builtin) uses it, labelled
 * "NAME (edited)" in the profiler. Modules that keep pipelines compare
 * tl_kernels_generation() with the one they were built at and rebuild them before their next
 * dispatch, so a replacement takes effect at the next sub-iteration. Compiling GLSL is expr/'s
 * job (tl_kernel_compile in expr/tl-kernel-edit.h). */
#pragma once
#include "tl-api.h"
#include "tl-context.h"

G_BEGIN_DECLS

/* Names of the built-in kernels (NULL-terminated): "pet_forward", "prior", ... */
TL_API const char *const *tl_kernels_names(void);
/* The module folder of a built-in kernel ("pet"), NULL if unknown. */
TL_API const char *tl_kernels_module(const char *name);
/* The embedded text of a file under shaders/ ("pet/pet_joseph.glsl"), NULL if unknown. */
TL_API const char *tl_kernels_file(const char *path);
/* A built-in kernel's self-contained source (g_free); GError for an unknown name. */
TL_API char *tl_kernels_source(const char *name, GError **error);
/* Replaces the #include lines of `text` by the embedded files (resolved in `module`'s folder,
 * then core/), each once; GError names an include that is not embedded. */
TL_API char *tl_kernels_expand(const char *text, const char *module, GError **error);

/* Replacement SPIR-V for a built-in kernel (copied); GError for an unknown name or words that
 * are not SPIR-V. */
TL_API gboolean tl_kernels_replace(TlContext *ctx, const char *name, const guint32 *spirv,
                            gsize size_bytes, GError **error);
/* Back to the built-in (no-op if not replaced). */
TL_API void tl_kernels_revert(TlContext *ctx, const char *name);
TL_API gboolean tl_kernels_replaced(TlContext *ctx, const char *name);
/* Bumped by every replace / revert: pipelines built at an older generation are stale. */
TL_API guint tl_kernels_generation(TlContext *ctx);
/* The SPIR-V a pipeline named `name` is made from now (replacement or built-in) and its
 * profiler label; NULL for an unknown name. The words stay valid while the context lives. */
TL_API const guint32 *tl_kernels_spirv(TlContext *ctx, const char *name, gsize *size_bytes,
                                const char **label);

G_END_DECLS
