/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GLSL generation: one compute kernel per expression.
 *
 * This is the string-generating route the thesis surveys (Petit 2020, sec. 5.3):
 * "Their implementation generates a character string using the compile-time
 * expression which is then at run-time compiled through the Nvidia Just-In-Time
 * (JIT) compiler into a kernel." Here the string is GLSL, the JIT is glslang +
 * the Vulkan driver, and the expression arrives as text instead of a C++ type.
 *
 * Arrays are reached through buffer device addresses in push constants (as in
 * shaders/core/tl_common.glsl, whose declarations are repeated below because runtime
 * sources cannot #include), so one array may exceed maxStorageBufferRange.
 * User names never reach the GLSL: arrays become a0.., scalars s0.., so no
 * name can clash with a GLSL keyword or inject code. */
#include "tl-expr-ast.h"

guint tl_expr_max_arrays(TlReduction red) {
  /* header 8 (+ partials 8) + 8 per array + n (+ block) */
  return red == TL_RED_NONE ? (TL_EXPR_PUSH_MAX - 12) / 8 : (TL_EXPR_PUSH_MAX - 24) / 8;
}

void tl_expr_kernel_free(TlExprKernel *k) {
  if (!k) return;
  g_free(k->glsl);
  g_free(k->slot);
  g_free(k);
}

/* The expression is emitted once for the element type TL_T (float, or vec2 when
 * two elements travel per 64-bit access); comparisons and select go through
 * helpers overloaded for both, so the tree text is the same either way. */
static void emit_node(GString *s, const TlExprKernel *k, const TlVarKind *kinds, const TlNode *n) {
  static const char *binop[] = { "+", "-", "*", "/" };
  static const char *cmp[] = { "tl_lt", "tl_le", "tl_gt", "tl_ge", "tl_eq", "tl_ne" };
  static const char *fn[] = { "exp", "log", "sqrt", "abs", "min", "max", "tl_sel" };
  switch (n->kind) {
  case TL_NODE_NUM: {
    /* %.9e round-trips a float and is always a valid GLSL float literal. */
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(s, "TL_T(%s)", g_ascii_formatd(buf, sizeof buf, "%.9e", n->value));
    break;
  }
  case TL_NODE_VAR:
    if (kinds[n->var] == TL_VAR_ARRAY)
      g_string_append_printf(s, "v%u", k->slot[n->var]);
    else
      g_string_append_printf(s, "TL_T(s%u)", k->slot[n->var]);
    break;
  case TL_NODE_NEG:
    g_string_append(s, "(-");
    emit_node(s, k, kinds, n->kid[0]);
    g_string_append_c(s, ')');
    break;
  case TL_NODE_BIN:
    if (n->op >= TL_OP_LT) {
      g_string_append_printf(s, "%s(", cmp[n->op - TL_OP_LT]);
      emit_node(s, k, kinds, n->kid[0]);
      g_string_append(s, ", ");
      emit_node(s, k, kinds, n->kid[1]);
    } else {
      g_string_append_c(s, '(');
      emit_node(s, k, kinds, n->kid[0]);
      g_string_append_printf(s, " %s ", binop[n->op]);
      emit_node(s, k, kinds, n->kid[1]);
    }
    g_string_append_c(s, ')');
    break;
  case TL_NODE_CALL:
    g_string_append_printf(s, "%s(", fn[n->op]);
    for (guint i = 0; i < n->n_kids; i++) {
      if (i) g_string_append(s, ", ");
      emit_node(s, k, kinds, n->kid[i]);
    }
    g_string_append_c(s, ')');
    break;
  }
}

static void mark_used(const TlNode *n, gboolean *used) {
  if (n->kind == TL_NODE_VAR) used[n->var] = TRUE;
  for (guint i = 0; i < n->n_kids; i++) mark_used(n->kid[i], used);
}

static const char tl_glsl_head[] =
  "#version 460\n"
  "#extension GL_EXT_buffer_reference : require\n"
  "#extension GL_EXT_scalar_block_layout : require\n";

static const char tl_glsl_refs[] =
  "layout(local_size_x_id = 0) in;\n"
  "layout(buffer_reference, std430, buffer_reference_align = 4) buffer TlFloats { float v[]; };\n";

/* Width 1: one float per access. Width 2: one 64-bit access carries two elements;
 * lavapipe (Mesa 22) turns every buffer-reference access into a loop over the SIMD
 * lanes, so halving the accesses nearly doubles its throughput, and on a GPU a
 * 64-bit access per invocation is as coalesced as a 32-bit one. */
static const char tl_glsl_width1[] =
  "#define TL_T float\n"
  "#define TL_WIDTH 1\n"
  "float tl_lt(float a, float b) { return float(a < b); }\n"
  "float tl_le(float a, float b) { return float(a <= b); }\n"
  "float tl_gt(float a, float b) { return float(a > b); }\n"
  "float tl_ge(float a, float b) { return float(a >= b); }\n"
  "float tl_eq(float a, float b) { return float(a == b); }\n"
  "float tl_ne(float a, float b) { return float(a != b); }\n"
  "float tl_sel(float c, float a, float b) { return c != 0.0 ? a : b; }\n";

static const char tl_glsl_width2[] =
  "#define TL_T vec2\n"
  "#define TL_WIDTH 2\n"
  "layout(buffer_reference, std430, buffer_reference_align = 8) buffer TlPairs { uint64_t v[]; };\n"
  "vec2 tl_lt(vec2 a, vec2 b) { return vec2(lessThan(a, b)); }\n"
  "vec2 tl_le(vec2 a, vec2 b) { return vec2(lessThanEqual(a, b)); }\n"
  "vec2 tl_gt(vec2 a, vec2 b) { return vec2(greaterThan(a, b)); }\n"
  "vec2 tl_ge(vec2 a, vec2 b) { return vec2(greaterThanEqual(a, b)); }\n"
  "vec2 tl_eq(vec2 a, vec2 b) { return vec2(equal(a, b)); }\n"
  "vec2 tl_ne(vec2 a, vec2 b) { return vec2(notEqual(a, b)); }\n"
  "vec2 tl_sel(vec2 c, vec2 a, vec2 b) { return mix(b, a, notEqual(c, vec2(0.0))); }\n"
  "vec2 tl_ld(TlPairs a, uint i) { return uintBitsToFloat(unpack32(a.v[i])); }\n"
  "void tl_st(TlPairs a, uint i, vec2 v) { a.v[i] = pack64(floatBitsToUint(v)); }\n";

/* Assignment: each invocation handles TL_ITEMS units (elements, or pairs), TL_WG
 * apart, of a tile of TL_WG*TL_ITEMS contiguous units per workgroup. Neighbouring
 * invocations touch neighbouring units (coalesced on a GPU, SIMD lanes on
 * lavapipe), and a long tile per workgroup amortises the per-workgroup cost of a
 * CPU driver. With pairs, invocation 0 also does the last element of an odd n. */
static const char tl_glsl_assign_main[] =
  "layout(constant_id = 1) const uint TL_ITEMS = 1u;\n"
  "void main() {\n"
  "  const uint TL_WG = gl_WorkGroupSize.x;\n"
  "  uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * TL_WG\n"
  "              + gl_LocalInvocationID.x;\n"
  "  if (item >= pc.tl_count) return;\n"
  "  tl_load_push();\n"
  "  uint units = tl_n / TL_WIDTH;\n"
  "  uint gi = pc.tl_base + item;\n"
  "  uint first = (gi / TL_WG) * (TL_WG * TL_ITEMS) + gi % TL_WG;\n"
  "  if (first + (TL_ITEMS - 1u) * TL_WG < units) {\n"
  "    for (uint k = 0u; k < TL_ITEMS; ++k) tl_elem(first + k * TL_WG);\n"
  "  } else {\n"
  "    for (uint i = first; i < units; i += TL_WG) tl_elem(i);\n"
  "  }\n"
  "#if TL_WIDTH == 2\n"
  "  if (gi == 0u && (tl_n & 1u) != 0u) tl_tail_store(tl_n - 1u);\n"
  "#endif\n"
  "}\n";

/* Sum-like reductions (Petit 2020, sec. 6.2: "It can be avoided through combining
 * expression evaluation and reduction into a single kernel."). Workgroup g owns the
 * contiguous units [g*block, (g+1)*block); each invocation strides through them by
 * TL_WG with a Kahan-compensated float sum; the workgroup then adds its (sum, error)
 * pairs in a pairwise tree using exact TwoSum steps, so the partial written per
 * workgroup is a float pair worth ~48 bits, added on the host in double. The host
 * may split the groups over several dispatches: tl_base is the first group.
 * `precise` keeps the compiler from re-associating the compensation away. */
static const char tl_glsl_sum_main[] =
  "shared float tl_hi[gl_WorkGroupSize.x];\n"
  "shared float tl_lo[gl_WorkGroupSize.x];\n"
  "void main() {\n"
  "  const uint TL_WG = gl_WorkGroupSize.x;\n"
  "  uint lane = gl_LocalInvocationID.x;\n"
  "  tl_load_push();\n"
  "  uint g = pc.tl_base + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n"
  "  uint units = tl_n / TL_WIDTH;\n"
  "  uint begin = min(g * pc.block, units);\n"
  "  uint end = min(begin + pc.block, units);\n"
  "  precise TL_T s = TL_T(0.0);\n"
  "  precise TL_T c = TL_T(0.0);\n"
  "  for (uint i = begin + lane; i < end; i += TL_WG) {\n"
  "    precise TL_T y = tl_unit(i) - c;\n"
  "    precise TL_T t = s + y;\n"
  "    c = (t - s) - y;\n"
  "    s = t;\n"
  "  }\n"
  "#if TL_WIDTH == 2\n"
  "  if (g == 0u && lane == 0u && (tl_n & 1u) != 0u) {\n"
  "    precise vec2 y = vec2(tl_tail(tl_n - 1u).x, 0.0) - c;\n"
  "    precise vec2 t = s + y;\n"
  "    c = (t - s) - y;\n"
  "    s = t;\n"
  "  }\n"
  "  precise float h = s.x + s.y;\n"  /* TwoSum of the two halves */
  "  precise float hb = h - s.x;\n"
  "  precise float he = (s.x - (h - hb)) + (s.y - hb);\n"
  "  tl_hi[lane] = h;\n"
  "  tl_lo[lane] = he - (c.x + c.y);\n"
  "#else\n"
  "  tl_hi[lane] = s;\n"
  "  tl_lo[lane] = -c;\n"
  "#endif\n"
  "  barrier();\n"
  "  for (uint h = TL_WG / 2u; h > 0u; h >>= 1) {\n"
  "    if (lane < h) {\n"
  "      precise float a = tl_hi[lane];\n"
  "      precise float b = tl_hi[lane + h];\n"
  "      precise float sum = a + b;\n"
  "      precise float bb = sum - a;\n"
  "      precise float err = (a - (sum - bb)) + (b - bb);\n"
  "      precise float lo = (tl_lo[lane] + tl_lo[lane + h]) + err;\n"
  "      precise float hi = sum + lo;\n"
  "      tl_lo[lane] = lo - (hi - sum);\n"
  "      tl_hi[lane] = hi;\n"
  "    }\n"
  "    barrier();\n"
  "  }\n"
  "  if (lane == 0u) {\n"
  "    pc.partials.v[2u * g] = tl_hi[0];\n"
  "    pc.partials.v[2u * g + 1u] = tl_lo[0];\n"
  "  }\n"
  "}\n";

/* min/max: same traversal, exact by nature; TL_RED_OP and TL_RED_INIT are defined
 * before this text. */
static const char tl_glsl_minmax_main[] =
  "shared float tl_m[gl_WorkGroupSize.x];\n"
  "void main() {\n"
  "  const uint TL_WG = gl_WorkGroupSize.x;\n"
  "  uint lane = gl_LocalInvocationID.x;\n"
  "  tl_load_push();\n"
  "  uint g = pc.tl_base + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n"
  "  uint units = tl_n / TL_WIDTH;\n"
  "  uint begin = min(g * pc.block, units);\n"
  "  uint end = min(begin + pc.block, units);\n"
  "  TL_T m = TL_T(TL_RED_INIT);\n"
  "  for (uint i = begin + lane; i < end; i += TL_WG) m = TL_RED_OP(m, tl_unit(i));\n"
  "#if TL_WIDTH == 2\n"
  "  if (g == 0u && lane == 0u && (tl_n & 1u) != 0u) m.x = TL_RED_OP(m.x, tl_tail(tl_n - 1u).x);\n"
  "  tl_m[lane] = TL_RED_OP(m.x, m.y);\n"
  "#else\n"
  "  tl_m[lane] = m;\n"
  "#endif\n"
  "  barrier();\n"
  "  for (uint h = TL_WG / 2u; h > 0u; h >>= 1) {\n"
  "    if (lane < h) tl_m[lane] = TL_RED_OP(tl_m[lane], tl_m[lane + h]);\n"
  "    barrier();\n"
  "  }\n"
  "  if (lane == 0u) {\n"
  "    pc.partials.v[2u * g] = tl_m[0];\n"
  "    pc.partials.v[2u * g + 1u] = 0.0;\n"
  "  }\n"
  "}\n";

/* Calls tl_expr with one argument per array the right-hand side reads, each
 * fetched by `fmt` (a printf pattern taking the slot twice). */
static void emit_call(GString *s, const TlExprKernel *k, const gboolean *arr_used, const char *fmt) {
  g_string_append(s, "tl_expr(");
  gboolean first = TRUE;
  for (guint a = 0; a < k->n_arrays; a++) {
    if (!arr_used[a]) continue;
    if (!first) g_string_append(s, ", ");
    g_string_append_printf(s, fmt, a, a);
    first = FALSE;
  }
  g_string_append_c(s, ')');
}

TlExprKernel *tl_expr_codegen(const TlExprParsed *p, const TlVarKind *kinds, guint width,
                              GError **error) {
  g_return_val_if_fail(width == 1 || width == 2, NULL);
  g_autoptr(TlExprKernel) k = g_new0(TlExprKernel, 1);
  k->width = width;
  guint n_vars = p->vars->len;
  k->slot = g_new0(guint, MAX(n_vars, 1));
  for (guint i = 0; i < n_vars; i++)
    k->slot[i] = kinds[i] == TL_VAR_ARRAY ? k->n_arrays++ : k->n_scalars++;

  if (p->red == TL_RED_NONE && kinds[p->target] != TL_VAR_ARRAY) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "expression '%s': '%s' is a scalar; the assignment target must be an array",
                p->text, (const char *)g_ptr_array_index(p->vars, p->target));
    return NULL;
  }
  if (p->red != TL_RED_NONE && k->n_arrays == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "expression '%s': a reduction needs at least one array to run over", p->text);
    return NULL;
  }

  gboolean red = p->red != TL_RED_NONE;
  k->off_partials = 8;
  k->off_arrays = red ? 16 : 8;
  k->off_n = k->off_arrays + 8 * k->n_arrays;
  k->off_block = k->off_n + 4;
  k->off_scalars = k->off_n + (red ? 8 : 4);
  k->push_size = k->off_scalars + 4 * k->n_scalars;
  if (k->push_size > TL_EXPR_PUSH_MAX) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "expression '%s' uses %u arrays and %u scalars: its push constants need %u bytes, "
                "more than the %u allowed (arrays take 8 bytes, scalars 4; at most %u arrays)",
                p->text, k->n_arrays, k->n_scalars, k->push_size, TL_EXPR_PUSH_MAX,
                tl_expr_max_arrays(p->red));
    return NULL;
  }

  GString *s = g_string_new(tl_glsl_head);
  if (width == 2) g_string_append(s, "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n");
  g_string_append(s, tl_glsl_refs);
  /* The text parsed, so besides tokens it holds only whitespace: flatten that to
   * keep the comment on one line. */
  g_autofree char *flat = g_strdup(p->text);
  for (char *c = flat; *c; c++)
    if (g_ascii_isspace(*c)) *c = ' ';
  g_string_append_printf(s, "// %s\n", flat);
  g_string_append(s, width == 2 ? tl_glsl_width2 : tl_glsl_width1);
  g_string_append(s, "layout(push_constant, scalar) uniform Push {\n"
                     "  layout(offset = 0) uint tl_base;\n"
                     "  layout(offset = 4) uint tl_count;\n");
  if (red) g_string_append(s, "  layout(offset = 8) TlFloats partials;\n");
  for (guint a = 0; a < k->n_arrays; a++)
    g_string_append_printf(s, "  layout(offset = %u) TlFloats a%u;\n", k->off_arrays + 8 * a, a);
  g_string_append_printf(s, "  layout(offset = %u) uint n;\n", k->off_n);
  if (red) g_string_append_printf(s, "  layout(offset = %u) uint block;\n", k->off_block);
  for (guint c = 0; c < k->n_scalars; c++)
    g_string_append_printf(s, "  layout(offset = %u) float s%u;\n", k->off_scalars + 4 * c, c);
  g_string_append(s, "} pc;\n");

  /* Private copies of the push constants, loaded once per invocation: reading
   * pc.* inside the element loop makes lavapipe re-fetch them per element (a
   * store through a buffer reference might alias them). */
  GString *load = g_string_new("void tl_load_push() {\n  tl_n = pc.n;\n");
  g_string_append(s, "uint tl_n;\n");
  for (guint a = 0; a < k->n_arrays; a++) {
    g_string_append_printf(s, "TlFloats a%u;\n", a);
    g_string_append_printf(load, "  a%u = pc.a%u;\n", a, a);
    if (width == 2) {
      g_string_append_printf(s, "TlPairs q%u;\n", a);
      g_string_append_printf(load, "  q%u = TlPairs(uint64_t(pc.a%u));\n", a, a);
    }
  }
  for (guint c = 0; c < k->n_scalars; c++) {
    g_string_append_printf(s, "float s%u;\n", c);
    g_string_append_printf(load, "  s%u = pc.s%u;\n", c, c);
  }
  g_string_append(load, "}\n");
  g_string_append(s, load->str);
  g_string_free(load, TRUE);

  /* The expression as a pure function of the array values it reads: the whole
   * tree inlined, no temporaries in memory. */
  g_autofree gboolean *used = g_new0(gboolean, MAX(n_vars, 1));
  g_autofree gboolean *arr_used = g_new0(gboolean, MAX(k->n_arrays, 1));
  for (guint i = 0; i < p->n_operands; i++) mark_used(p->operand[i], used);
  for (guint v = 0; v < n_vars; v++)
    if (used[v] && kinds[v] == TL_VAR_ARRAY) arr_used[k->slot[v]] = TRUE;
  g_string_append(s, "TL_T tl_expr(");
  gboolean first = TRUE;
  for (guint a = 0; a < k->n_arrays; a++) {
    if (!arr_used[a]) continue;
    g_string_append_printf(s, "%sTL_T v%u", first ? "" : ", ", a);
    first = FALSE;
  }
  g_string_append(s, ") {\n");
  for (guint i = 0; i < p->n_operands; i++) {
    g_string_append_printf(s, "  TL_T e%u = ", i);
    emit_node(s, k, kinds, p->operand[i]);
    g_string_append(s, ";\n");
  }
  switch (p->red) {
  case TL_RED_DOT: g_string_append(s, "  return e0 * e1;\n}\n"); break;
  case TL_RED_L2NORM: g_string_append(s, "  return e0 * e0;\n}\n"); break;
  default: g_string_append(s, "  return e0;\n}\n"); break;
  }

  /* Fetch and store around it: per unit, and (pairs) for the odd last element. */
  const char *fetch = width == 2 ? "tl_ld(q%u, i)" : "a%u.v[i]";
  if (red) {
    g_string_append(s, "TL_T tl_unit(uint i) { return ");
    emit_call(s, k, arr_used, fetch);
    g_string_append(s, "; }\n");
  } else {
    guint t = k->slot[p->target];
    if (width == 2) g_string_append_printf(s, "void tl_elem(uint i) { tl_st(q%u, i, ", t);
    else g_string_append_printf(s, "void tl_elem(uint i) { a%u.v[i] = ", t);
    emit_call(s, k, arr_used, fetch);
    g_string_append(s, width == 2 ? "); }\n" : "; }\n");
  }
  if (width == 2) {
    g_string_append(s, "vec2 tl_tail(uint i) { return ");
    emit_call(s, k, arr_used, "vec2(a%u.v[i], 0.0)");
    g_string_append(s, "; }\n");
    if (!red)
      g_string_append_printf(s, "void tl_tail_store(uint i) { a%u.v[i] = tl_tail(i).x; }\n",
                             k->slot[p->target]);
  }

  switch (p->red) {
  case TL_RED_NONE: g_string_append(s, tl_glsl_assign_main); break;
  case TL_RED_MIN:
    g_string_append(s, "#define TL_RED_OP min\n#define TL_RED_INIT uintBitsToFloat(0x7f800000u)\n");
    g_string_append(s, tl_glsl_minmax_main);
    break;
  case TL_RED_MAX:
    g_string_append(s, "#define TL_RED_OP max\n#define TL_RED_INIT uintBitsToFloat(0xff800000u)\n");
    g_string_append(s, tl_glsl_minmax_main);
    break;
  default: g_string_append(s, tl_glsl_sum_main); break;
  }
  k->glsl = g_string_free(s, FALSE);
  return g_steal_pointer(&k);
}
