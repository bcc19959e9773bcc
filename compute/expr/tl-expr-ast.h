/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to the expression module: the syntax tree, the parser and the GLSL
 * generator. No Vulkan here, so tests/test-expr-parse.c runs without a device. */
#pragma once
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

typedef enum {
  TL_NODE_NUM,   /* literal */
  TL_NODE_VAR,   /* array or scalar, by name */
  TL_NODE_NEG,   /* unary minus */
  TL_NODE_BIN,   /* binary operator */
  TL_NODE_CALL,  /* element-wise function */
} TlNodeKind;

typedef enum {
  TL_OP_ADD, TL_OP_SUB, TL_OP_MUL, TL_OP_DIV,
  TL_OP_LT, TL_OP_LE, TL_OP_GT, TL_OP_GE, TL_OP_EQ, TL_OP_NE,
} TlBinOp;

typedef enum {
  TL_FN_EXP, TL_FN_LOG, TL_FN_SQRT, TL_FN_ABS, TL_FN_MIN, TL_FN_MAX, TL_FN_SELECT,
} TlFunc;

typedef enum {
  TL_RED_NONE,   /* an assignment */
  TL_RED_SUM, TL_RED_DOT, TL_RED_L2NORM, TL_RED_MIN, TL_RED_MAX,
} TlReduction;

typedef struct _TlNode TlNode;
struct _TlNode {
  TlNodeKind kind;
  int op;          /* TlBinOp or TlFunc */
  float value;     /* TL_NODE_NUM */
  guint var;       /* TL_NODE_VAR: index into TlExprParsed.vars */
  guint column;    /* 1-based, for messages */
  guint n_kids;
  TlNode *kid[3];
};

typedef struct {
  char *text;          /* the expression as given */
  TlReduction red;
  int target;          /* assignment: index into vars; -1 for reductions */
  guint n_operands;    /* 1, or 2 for dot */
  TlNode *operand[2];  /* element-wise expression(s) */
  GPtrArray *vars;     /* variable names (char *), in order of first appearance */
  GArray *var_column;  /* guint: column of each variable's first appearance */
} TlExprParsed;

typedef enum { TL_PARSE_ASSIGN, TL_PARSE_REDUCE } TlParseMode;

/* NULL + TL_ERROR_PARSE on a syntax error (message has the column and token). */
TlExprParsed *tl_expr_parse(const char *text, TlParseMode mode, GError **error);
void tl_expr_parsed_free(TlExprParsed *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlExprParsed, tl_expr_parsed_free)

/* Fully parenthesised form, for tests and messages; caller frees. */
char *tl_expr_to_string(const TlExprParsed *p);

/* ---- code generation ---- */

typedef enum { TL_VAR_ARRAY, TL_VAR_SCALAR } TlVarKind;

/* Push-constant block of a generated kernel (bytes). Arrays are 8-byte buffer
 * device addresses; the block may not exceed TL_EXPR_PUSH_MAX. */
#define TL_EXPR_PUSH_MAX 128u

typedef struct {
  char *glsl;          /* complete compute shader source */
  guint width;         /* elements per memory access: 1 (float) or 2 (64-bit pairs) */
  guint n_arrays, n_scalars;
  guint *slot;         /* per variable: index among the arrays or among the scalars */
  guint push_size;
  guint off_partials;  /* reductions: where the partials array address goes */
  guint off_arrays;    /* array slot k at off_arrays + 8k */
  guint off_n;         /* uint: element count */
  guint off_block;     /* reductions: uint elements per workgroup */
  guint off_scalars;   /* scalar slot k at off_scalars + 4k */
} TlExprKernel;

/* `kinds` has one entry per parsed variable. `width` 2 moves two elements per
 * 64-bit access (needs shaderInt64 and 8-byte aligned arrays), 1 one float.
 * Fails (TL_ERROR_INVALID_ARG) when the target is a scalar, a reduction has no
 * array, or the push block would be too big. */
TlExprKernel *tl_expr_codegen(const TlExprParsed *p, const TlVarKind *kinds, guint width,
                              GError **error);
void tl_expr_kernel_free(TlExprKernel *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlExprKernel, tl_expr_kernel_free)

/* Most arrays an expression may use (push constants permitting, no scalars). */
guint tl_expr_max_arrays(TlReduction red);

G_END_DECLS
