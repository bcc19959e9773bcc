/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Array expressions: element-wise arithmetic on device float arrays, evaluated in
 * ONE fused dispatch per expression with no temporaries, and reductions fused with
 * an element-wise expression (l2norm(a*x + y) in one pass).
 *
 * C has no expression templates, so the expression text is parsed at run time,
 * turned into GLSL, compiled to SPIR-V with glslang and the pipeline is cached per
 * TlContext (keyed by the generated code, which is fixed by the text and by which
 * names are arrays and which are scalars; scalar VALUES travel in push constants
 * and never cause a recompile). Grammar and semantics: docs/expressions.md.
 *
 *   g_autoptr(TlExprArgs) args = tl_expr_args_new();
 *   tl_expr_args_array(args, "x", x);
 *   tl_expr_args_array(args, "y", y);
 *   tl_expr_args_scalar(args, "a", 2.0f);
 *   tl_expr_assign(ctx, NULL, "y = a*x + y", args, &error);
 *   double norm;
 *   tl_expr_reduce(ctx, NULL, "l2norm(a*x + y)", args, &norm, &error);
 *
 * Errors: syntax errors -> TL_ERROR_PARSE ("expression 'x = y +* z': column 8:
 * expected an operand, found '*'"); unknown variables, a scalar as assignment
 * target, arrays of different lengths, non-float arrays, too many arrays/scalars
 * for the push-constant block -> TL_ERROR_INVALID_ARG; glslang failures ->
 * TL_ERROR_SHADER. Nothing is recorded when a call fails.
 *
 * Thread safety: calls on different streams may run concurrently on one context
 * (the cache is locked); a TlStream itself is not thread-safe. */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"

G_BEGIN_DECLS

/* Name -> array/scalar bindings for one or more calls. Arrays are borrowed: they
 * must stay alive until the stream that used them has finished. */
typedef struct _TlExprArgs TlExprArgs;

TL_API TlExprArgs *tl_expr_args_new(void);
TL_API void tl_expr_args_free(TlExprArgs *args);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlExprArgs, tl_expr_args_free)

/* (Re)binds `name` (an identifier: [A-Za-z_][A-Za-z0-9_]*). Rebinding replaces
 * the previous binding, whatever its kind. */
TL_API void tl_expr_args_array(TlExprArgs *args, const char *name, TlArray *array);
TL_API void tl_expr_args_scalar(TlExprArgs *args, const char *name, float value);
/* Label for the profiler (TlStream's profile); NULL = the expression text. */
TL_API void tl_expr_args_set_label(TlExprArgs *args, const char *label);

/* "target = expression": records one dispatch on `stream`; with stream NULL an
 * internal stream is used and the call waits for the result. The target may
 * appear on the right-hand side (every element is read before it is written). */
TL_API gboolean tl_expr_assign(TlContext *ctx, TlStream *stream, const char *expr, const TlExprArgs *args,
                        GError **error);

/* "sum(e)", "dot(e1, e2)", "l2norm(e)", "min(e)", "max(e)" where e, e1, e2 are
 * element-wise expressions over arrays of one length: one fused dispatch, then
 * the stream is finished (all work recorded on it runs) and the per-workgroup
 * partials are added on the host in double. Empty arrays give 0, +inf (min) or
 * -inf (max). */
TL_API gboolean tl_expr_reduce(TlContext *ctx, TlStream *stream, const char *expr, const TlExprArgs *args,
                        double *out, GError **error);

/* Pipelines compiled (glslang runs) and cache hits on this context so far. */
TL_API void tl_expr_cache_stats(TlContext *ctx, guint *compiles, guint *hits);

G_END_DECLS
