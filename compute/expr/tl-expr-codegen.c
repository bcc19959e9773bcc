/* GLSL generation: one compute kernel per expression.
 *
 * This is the string-generating route the thesis surveys (Petit 2020, sec. 5.3):
 * "Their implementation generates a character string using the compile-time
 * expression which is then at run-time compiled through the Nvidia Just-In-Time
 * (JIT) compiler into a kernel." Here the string is GLSL, the JIT is glslang +
 * the Vulkan driver, and the expression arrives as text instead of a C++ type.
 *
 * Arrays are reached through buffer device addresses in push constants (as in
 * shaders/tl_common.glsl, whose declarations are repeated below because runtime
 * sources cannot #include), so one array may exceed maxStorageBufferRange.
 * User names never reach the GLSL: arrays become a0.., scalars pc.s0.., so no
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

static void emit_node(GString *s, const TlExprKernel *k, const TlVarKind *kinds, const TlNode *n) {
  static const char *binop[] = { "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=" };
  static const char *fn[] = { "exp", "log", "sqrt", "abs", "min", "max" };
  switch (n->kind) {
  case TL_NODE_NUM: {
    /* %.9e round-trips a float and is always a valid GLSL float literal. */
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.9e", n->value));
    break;
  }
  case TL_NODE_VAR:
    if (kinds[n->var] == TL_VAR_ARRAY)
      g_string_append_printf(s, "v%u", k->slot[n->var]);
    else
      g_string_append_printf(s, "pc.s%u", k->slot[n->var]);
    break;
  case TL_NODE_NEG:
    g_string_append(s, "(-");
    emit_node(s, k, kinds, n->kid[0]);
    g_string_append_c(s, ')');
    break;
  case TL_NODE_BIN:
    /* Comparisons yield 1.0/0.0 so they compose with arithmetic. */
    g_string_append(s, n->op >= TL_OP_LT ? "float(" : "(");
    emit_node(s, k, kinds, n->kid[0]);
    g_string_append_printf(s, " %s ", binop[n->op]);
    emit_node(s, k, kinds, n->kid[1]);
    g_string_append_c(s, ')');
    break;
  case TL_NODE_CALL:
    if (n->op == TL_FN_SELECT) {
      g_string_append(s, "((");
      emit_node(s, k, kinds, n->kid[0]);
      g_string_append(s, ") != 0.0 ? (");
      emit_node(s, k, kinds, n->kid[1]);
      g_string_append(s, ") : (");
      emit_node(s, k, kinds, n->kid[2]);
      g_string_append(s, "))");
      break;
    }
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
  "#extension GL_EXT_scalar_block_layout : require\n"
  "layout(local_size_x_id = 0) in;\n"
  "layout(buffer_reference, std430, buffer_reference_align = 4) buffer TlFloats { float v[]; };\n";

/* Assignment: each invocation handles TL_ITEMS elements, TL_WG apart, of a tile of
 * TL_WG*TL_ITEMS contiguous elements per workgroup. Neighbouring invocations touch
 * neighbouring elements (coalesced on a GPU, SIMD lanes on lavapipe), and a long
 * tile per workgroup amortises the per-workgroup cost of a CPU driver. */
static const char tl_glsl_assign_main[] =
  "layout(constant_id = 1) const uint TL_ITEMS = 1u;\n"
  "void main() {\n"
  "  const uint TL_WG = gl_WorkGroupSize.x;\n"
  "  uint item = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * TL_WG\n"
  "              + gl_LocalInvocationID.x;\n"
  "  if (item >= pc.tl_count) return;\n"
  "  uint gi = pc.tl_base + item;\n"
  "  uint first = (gi / TL_WG) * (TL_WG * TL_ITEMS) + gi % TL_WG;\n"
  "  if (first + (TL_ITEMS - 1u) * TL_WG < pc.n) {\n"
  "    for (uint k = 0u; k < TL_ITEMS; ++k) tl_elem(first + k * TL_WG);\n"
  "  } else {\n"
  "    for (uint i = first; i < pc.n; i += TL_WG) tl_elem(i);\n"
  "  }\n"
  "}\n";

/* Sum-like reductions (Petit 2020, sec. 6.2: "It can be avoided through combining
 * expression evaluation and reduction into a single kernel."). Workgroup g owns the
 * contiguous range [g*block, (g+1)*block); each invocation strides through it by
 * TL_WG with a Kahan-compensated float sum; the workgroup then adds its (sum, error)
 * pairs in a pairwise tree using exact TwoSum steps, so the partial written per
 * workgroup is a float pair worth ~48 bits, added on the host in double.
 * `precise` keeps the compiler from re-associating the compensation away. */
static const char tl_glsl_sum_main[] =
  "shared float tl_hi[gl_WorkGroupSize.x];\n"
  "shared float tl_lo[gl_WorkGroupSize.x];\n"
  "void main() {\n"
  "  const uint TL_WG = gl_WorkGroupSize.x;\n"
  "  uint lane = gl_LocalInvocationID.x;\n"
  "  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n"
  "  uint begin = min(g * pc.block, pc.n);\n"
  "  uint end = min(begin + pc.block, pc.n);\n"
  "  precise float s = 0.0;\n"
  "  precise float c = 0.0;\n"
  "  for (uint i = begin + lane; i < end; i += TL_WG) {\n"
  "    precise float y = tl_elem(i) - c;\n"
  "    precise float t = s + y;\n"
  "    c = (t - s) - y;\n"
  "    s = t;\n"
  "  }\n"
  "  tl_hi[lane] = s;\n"
  "  tl_lo[lane] = -c;\n"
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
  "  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n"
  "  uint begin = min(g * pc.block, pc.n);\n"
  "  uint end = min(begin + pc.block, pc.n);\n"
  "  float m = TL_RED_INIT;\n"
  "  for (uint i = begin + lane; i < end; i += TL_WG) m = TL_RED_OP(m, tl_elem(i));\n"
  "  tl_m[lane] = m;\n"
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

TlExprKernel *tl_expr_codegen(const TlExprParsed *p, const TlVarKind *kinds, GError **error) {
  g_autoptr(TlExprKernel) k = g_new0(TlExprKernel, 1);
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
  /* The text parsed, so besides tokens it holds only whitespace: flatten that to
   * keep the comment on one line. */
  g_autofree char *flat = g_strdup(p->text);
  for (char *c = flat; *c; c++)
    if (g_ascii_isspace(*c)) *c = ' ';
  g_string_append_printf(s, "// %s\n", flat);
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

  /* Element function: load each array the right-hand side uses once, then the
   * whole expression tree, inlined — no temporaries in memory. */
  g_autofree gboolean *used = g_new0(gboolean, MAX(n_vars, 1));
  for (guint i = 0; i < p->n_operands; i++) mark_used(p->operand[i], used);
  g_string_append_printf(s, "%s tl_elem(uint i) {\n", red ? "float" : "void");
  for (guint v = 0; v < n_vars; v++)
    if (used[v] && kinds[v] == TL_VAR_ARRAY)
      g_string_append_printf(s, "  float v%u = pc.a%u.v[i];\n", k->slot[v], k->slot[v]);
  for (guint i = 0; i < p->n_operands; i++) {
    g_string_append_printf(s, "  float e%u = ", i);
    emit_node(s, k, kinds, p->operand[i]);
    g_string_append(s, ";\n");
  }
  switch (p->red) {
  case TL_RED_NONE: g_string_append_printf(s, "  pc.a%u.v[i] = e0;\n", k->slot[p->target]); break;
  case TL_RED_DOT: g_string_append(s, "  return e0 * e1;\n"); break;
  case TL_RED_L2NORM: g_string_append(s, "  return e0 * e0;\n"); break;
  default: g_string_append(s, "  return e0;\n"); break;
  }
  g_string_append(s, "}\n");

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
