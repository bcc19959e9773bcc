/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Expression parser, GLSL generator and runtime glslang: everything of the expr
 * module that needs no Vulkan device. */
#include "tl-expr-ast.h"
#include "tl-glsl.h"
#include <string.h>

typedef struct {
  const char *text;
  const char *printed;
} RoundTrip;

/* Precedence and associativity as in C; literals print as %.9g of the float. */
static void test_precedence(void) {
  static const RoundTrip assign[] = {
    { "x = a*x + y", "x = ((a * x) + y)" },
    { "x = x*y + y/z + x*z", "x = (((x * y) + (y / z)) + (x * z))" },
    { "x = a - b - c", "x = ((a - b) - c)" },
    { "x = a / b / c", "x = ((a / b) / c)" },
    { "x = a - (b - c)", "x = (a - (b - c))" },
    { "x = -a*b", "x = ((-a) * b)" },
    { "x = - -a", "x = (-(-a))" },
    { "x = +a", "x = a" },
    { "x = a*-b", "x = (a * (-b))" },
    { "x = a < b + c", "x = (a < (b + c))" },
    { "x = a < b == c >= d", "x = ((a < b) == (c >= d))" },
    { "x = a != b == c", "x = ((a != b) == c)" },
    { "x = 1e-3*a + .5 + 2. + 1.5E+2", "x = ((((0.00100000005 * a) + 0.5) + 2) + 150)" },
    { "x=exp(a)+log(b)*sqrt(c)-abs(d)", "x = ((exp(a) + (log(b) * sqrt(c))) - abs(d))" },
    { "x = min(a, b) + max(a, 2)", "x = (min(a, b) + max(a, 2))" },
    { "x = select(a > 0, a, -a)", "x = select((a > 0), a, (-a))" },
    { "  y\t=\n((y))  ", "y = y" },
    { "x = 7", "x = 7" },
  };
  static const RoundTrip reduce[] = {
    { "sum(x)", "sum(x)" },
    { "l2norm(a*x + y)", "l2norm(((a * x) + y))" },
    { "dot(x, y - 1)", "dot(x, (y - 1))" },
    { "min(x*y)", "min((x * y))" },
    { "max(min(x, y))", "max(min(x, y))" },
    { " sum ( select(x<y, x, y) ) ", "sum(select((x < y), x, y))" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(assign) + G_N_ELEMENTS(reduce); i++) {
    gboolean is_assign = i < G_N_ELEMENTS(assign);
    const RoundTrip *rt = is_assign ? &assign[i] : &reduce[i - G_N_ELEMENTS(assign)];
    g_autoptr(GError) error = NULL;
    g_autoptr(TlExprParsed) p =
      tl_expr_parse(rt->text, is_assign ? TL_PARSE_ASSIGN : TL_PARSE_REDUCE, &error);
    g_assert_no_error(error);
    g_autofree char *s = tl_expr_to_string(p);
    g_assert_cmpstr(s, ==, rt->printed);
  }
}

static void test_variables(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlExprParsed) p = tl_expr_parse("x = a*y + x*y + b", TL_PARSE_ASSIGN, &error);
  g_assert_no_error(error);
  /* Target first, then in order of first appearance, each once. */
  g_assert_cmpuint(p->vars->len, ==, 4);
  const char *want[] = { "x", "a", "y", "b" };
  const guint col[] = { 1, 5, 7, 17 };
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpstr(g_ptr_array_index(p->vars, i), ==, want[i]);
    g_assert_cmpuint(g_array_index(p->var_column, guint, i), ==, col[i]);
  }
  g_assert_cmpint(p->target, ==, 0);
  g_assert_cmpint(p->red, ==, TL_RED_NONE);

  g_autoptr(TlExprParsed) r = tl_expr_parse("dot(a*x, y)", TL_PARSE_REDUCE, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->red, ==, TL_RED_DOT);
  g_assert_cmpuint(r->n_operands, ==, 2);
  g_assert_cmpint(r->target, ==, -1);
  /* Function names are not reserved as variables. */
  g_autoptr(TlExprParsed) q = tl_expr_parse("exp = exp(exp) + sum", TL_PARSE_ASSIGN, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(q->vars->len, ==, 2);
}

typedef struct {
  const char *text;
  TlParseMode mode;
  const char *message; /* expected substring */
} BadCase;

static void test_errors(void) {
  static const BadCase bad[] = {
    { "x = y +* z", TL_PARSE_ASSIGN, "expression 'x = y +* z': column 8: expected an operand, found '*'" },
    { "x = ", TL_PARSE_ASSIGN, "column 5: expected an operand, found end of expression" },
    { "", TL_PARSE_ASSIGN, "column 1: expected the name of the target array, found end of expression" },
    { "x + y", TL_PARSE_ASSIGN, "column 3: expected '=', found '+'" },
    { "x == y", TL_PARSE_ASSIGN, "column 3: expected '=', found '=='" },
    { "2 = y", TL_PARSE_ASSIGN, "column 1: expected the name of the target array, found '2'" },
    { "x = (y + z", TL_PARSE_ASSIGN, "column 11: expected ')', found end of expression" },
    { "x = y + z)", TL_PARSE_ASSIGN, "column 10: expected end of expression (unbalanced ')'), found ')'" },
    { "x = y z", TL_PARSE_ASSIGN, "column 7: expected an operator or end of expression, found 'z'" },
    { "x = y = z", TL_PARSE_ASSIGN, "column 7: expected an operator or end of expression, found '='" },
    { "x = y # z", TL_PARSE_ASSIGN, "column 7: unexpected character '#'" },
    { "x = y ! z", TL_PARSE_ASSIGN, "column 7: unexpected character '!'" },
    { "x = y \xc3\xa9", TL_PARSE_ASSIGN, "column 7: unexpected character '\xc3\xa9'" },
    { "x = 1e", TL_PARSE_ASSIGN, "column 5: malformed number '1e'" },
    { "x = 2x", TL_PARSE_ASSIGN, "column 5: malformed number '2x'" },
    { "x = 1e39", TL_PARSE_ASSIGN, "column 5: number 1e39 is out of range for float" },
    { "x = foo(y)", TL_PARSE_ASSIGN, "column 5: unknown function 'foo'" },
    { "x = exp(y, z)", TL_PARSE_ASSIGN, "column 5: 'exp' takes 1 argument, got 2" },
    { "x = select(y, z)", TL_PARSE_ASSIGN, "column 5: 'select' takes 3 arguments, got 2" },
    { "x = min()", TL_PARSE_ASSIGN, "column 5: 'min' takes 1 argument (reduction) or 2 (element-wise), got 0" },
    { "x = max(a, b, c, d)", TL_PARSE_ASSIGN, "column 5: too many arguments to 'max'" },
    { "x = exp(y,)", TL_PARSE_ASSIGN, "column 11: expected an operand, found ')'" },
    { "x = exp(y z)", TL_PARSE_ASSIGN, "column 11: expected ',' or ')', found 'z'" },
    { "x = sum(y)", TL_PARSE_ASSIGN, "column 5: 'sum' is a reduction: evaluate it with tl_expr_reduce()" },
    { "x = y + min(y)", TL_PARSE_ASSIGN, "column 9: 'min' is a reduction" },
    { "x + y", TL_PARSE_REDUCE, "column 1: expected a reduction sum(), dot(), l2norm(), min() or max()" },
    { "min(x, y)", TL_PARSE_REDUCE, "column 1: expected a reduction" },
    { "sum(x) + 1", TL_PARSE_REDUCE, "column 1: the reduction 'sum' must enclose the whole expression" },
    { "2 * l2norm(x)", TL_PARSE_REDUCE, "column 5: the reduction 'l2norm' must enclose" },
    { "sum(sum(x))", TL_PARSE_REDUCE, "column 5: the reduction 'sum' must enclose" },
    { "x = sum(y)", TL_PARSE_REDUCE, "column 3: expected an operator or end of expression, found '='" },
    { "dot(x)", TL_PARSE_REDUCE, "column 1: 'dot' takes 2 arguments, got 1" },
    { "l2norm(x, y)", TL_PARSE_REDUCE, "column 1: 'l2norm' takes 1 argument, got 2" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) error = NULL;
    TlExprParsed *p = tl_expr_parse(bad[i].text, bad[i].mode, &error);
    g_assert_null(p);
    g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
    if (!strstr(error->message, bad[i].message))
      g_error("'%s': got \"%s\", want \"%s\"", bad[i].text, error->message, bad[i].message);
  }
}

static void test_deep_nesting(void) {
  g_autoptr(GString) s = g_string_new("x = ");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, '(');
  g_autoptr(GError) error = NULL;
  g_assert_null(tl_expr_parse(s->str, TL_PARSE_ASSIGN, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "nested more than"));
  g_clear_error(&error);
  g_string_assign(s, "x = ");
  for (int i = 0; i < 100000; i++) g_string_append_c(s, '-');
  g_assert_null(tl_expr_parse(s->str, TL_PARSE_ASSIGN, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
  g_clear_error(&error);
  /* A long flat chain is fine (left-associative loops, not recursion)... */
  g_string_assign(s, "x = a");
  for (int i = 0; i < 490; i++) g_string_append(s, " + a");
  g_autoptr(TlExprParsed) p = tl_expr_parse(s->str, TL_PARSE_ASSIGN, &error);
  g_assert_no_error(error);
  /* ...up to a bound: the tree of a 600 000-term sum is 600 000 deep, and printing, code
   * generation and freeing walk it recursively (it overflowed the stack) */
  g_string_assign(s, "x = a");
  for (int i = 0; i < 600000; i++) g_string_append(s, " + a");
  g_assert_null(tl_expr_parse(s->str, TL_PARSE_ASSIGN, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "longer than 1000"));
  g_assert_cmpuint(strlen(error->message), <, 300); /* the text is cut, not quoted whole */
  g_clear_error(&error);
  /* sign chains print as "(-(-...a))", which must parse back (beyond 200 signs they did not);
   * also after a binary minus, "b - - - a" (found by tests/fuzz/fuzz-expr) */
  for (int n = 1; n < 1100; n += n < 300 ? 1 : 37) {
    g_string_assign(s, n % 2 ? "x = " : "x = b - ");
    for (int i = 0; i < n; i++) g_string_append(s, "- ");
    g_string_append_c(s, 'a');
    g_autoptr(TlExprParsed) q = tl_expr_parse(s->str, TL_PARSE_ASSIGN, &error);
    if (!q) {
      g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
      g_clear_error(&error);
      g_assert_cmpint(n, >=, 490); /* only chains past the limits are refused */
      continue;
    }
    g_autofree char *printed = tl_expr_to_string(q);
    g_autoptr(TlExprParsed) again = tl_expr_parse(printed, TL_PARSE_ASSIGN, &error);
    g_assert_no_error(error);
    g_autofree char *printed2 = tl_expr_to_string(again);
    g_assert_cmpstr(printed, ==, printed2);
  }
}

/* Random token soup: every outcome is a tree or a PARSE error, never a crash or
 * a leak (the suite runs under ASan). */
static void test_fuzz(void) {
  static const char *toks[] = { "x", "y", "a", "1", "2.5e-3", "+", "-", "*", "/", "(", ")", ",",
                                "=", "==", "!=", "<", "<=", ">", ">=", "exp", "min", "max",
                                "select", "sum", "dot", "l2norm", "#", "1e", " " };
  GRand *rand = g_rand_new_with_seed(42);
  guint ok = 0;
  for (int iter = 0; iter < 20000; iter++) {
    g_autoptr(GString) s = g_string_new(iter % 2 ? "x = " : "");
    int n = g_rand_int_range(rand, 0, 12);
    for (int t = 0; t < n; t++) g_string_append(s, toks[g_rand_int_range(rand, 0, G_N_ELEMENTS(toks))]);
    g_autoptr(GError) error = NULL;
    g_autoptr(TlExprParsed) p = tl_expr_parse(s->str, iter % 4 < 2 ? TL_PARSE_ASSIGN : TL_PARSE_REDUCE, &error);
    g_assert_true((p == NULL) == (error != NULL));
    if (p) {
      ok++;
      g_autofree char *printed = tl_expr_to_string(p);
      /* The printed form parses to itself. */
      g_autoptr(TlExprParsed) again = tl_expr_parse(printed, p->red == TL_RED_NONE ? TL_PARSE_ASSIGN
                                                                                   : TL_PARSE_REDUCE, &error);
      g_assert_no_error(error);
      g_autofree char *printed2 = tl_expr_to_string(again);
      g_assert_cmpstr(printed, ==, printed2);
    } else {
      g_assert_error(error, TL_ERROR, TL_ERROR_PARSE);
      g_assert_nonnull(strstr(error->message, "column "));
    }
  }
  g_test_message("fuzz: %u of 20000 parsed", ok);
  g_assert_cmpuint(ok, >, 100);
  g_rand_free(rand);
}

static TlExprKernel *gen_w(const char *text, TlParseMode mode, const TlVarKind *kinds, guint width,
                           GError **error) {
  g_autoptr(TlExprParsed) p = tl_expr_parse(text, mode, error);
  g_assert_nonnull(p);
  return tl_expr_codegen(p, kinds, width, error);
}

static TlExprKernel *gen(const char *text, TlParseMode mode, const TlVarKind *kinds, GError **error) {
  return gen_w(text, mode, kinds, 1, error);
}

static void test_codegen_layout(void) {
  g_autoptr(GError) error = NULL;
  const TlVarKind k1[] = { TL_VAR_ARRAY, TL_VAR_SCALAR, TL_VAR_ARRAY, TL_VAR_SCALAR };
  g_autoptr(TlExprKernel) k = gen("y = a*x + y*b", TL_PARSE_ASSIGN, k1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(k->n_arrays, ==, 2);
  g_assert_cmpuint(k->n_scalars, ==, 2);
  g_assert_cmpuint(k->slot[0], ==, 0); /* y */
  g_assert_cmpuint(k->slot[1], ==, 0); /* a */
  g_assert_cmpuint(k->slot[2], ==, 1); /* x */
  g_assert_cmpuint(k->slot[3], ==, 1); /* b */
  g_assert_cmpuint(k->off_arrays, ==, 8);
  g_assert_cmpuint(k->off_n, ==, 24);
  g_assert_cmpuint(k->off_scalars, ==, 28);
  g_assert_cmpuint(k->push_size, ==, 36);
  g_assert_nonnull(strstr(k->glsl, "TL_T e0 = ((TL_T(s0) * v1) + (v0 * TL_T(s1)));"));
  g_assert_nonnull(strstr(k->glsl, "void tl_elem(uint i) { a0.v[i] = tl_expr(a0.v[i], a1.v[i]); }"));
  g_assert_null(strstr(k->glsl, "uint64_t"));
  /* width 2: the same tree on vec2, 64-bit accesses, a scalar path for the odd tail */
  g_autoptr(TlExprKernel) k2w = gen_w("y = a*x + y*b", TL_PARSE_ASSIGN, k1, 2, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(k2w->width, ==, 2);
  g_assert_nonnull(strstr(k2w->glsl, "#define TL_T vec2"));
  g_assert_nonnull(strstr(k2w->glsl, "void tl_elem(uint i) { tl_st(q0, i, tl_expr(tl_ld(q0, i), tl_ld(q1, i))); }"));
  g_assert_nonnull(strstr(k2w->glsl, "void tl_tail_store(uint i) { a0.v[i] = tl_tail(i).x; }"));

  /* The target is not loaded when the right side does not read it. */
  const TlVarKind k2[] = { TL_VAR_ARRAY, TL_VAR_ARRAY };
  g_autoptr(TlExprKernel) k3 = gen("y = 2*x", TL_PARSE_ASSIGN, k2, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(k3->glsl, "TL_T tl_expr(TL_T v1) {"));
  g_assert_nonnull(strstr(k3->glsl, "{ a0.v[i] = tl_expr(a1.v[i]); }"));

  g_autoptr(TlExprKernel) r = gen("dot(x, y)", TL_PARSE_REDUCE, k2, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->off_partials, ==, 8);
  g_assert_cmpuint(r->off_arrays, ==, 16);
  g_assert_cmpuint(r->off_n, ==, 32);
  g_assert_cmpuint(r->off_block, ==, 36);
  g_assert_cmpuint(r->push_size, ==, 40);
}

static void test_codegen_errors(void) {
  g_autoptr(GError) error = NULL;
  const TlVarKind sc[] = { TL_VAR_SCALAR, TL_VAR_ARRAY };
  g_assert_null(gen("a = x + 1", TL_PARSE_ASSIGN, sc, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "'a' is a scalar; the assignment target must be an array"));
  g_clear_error(&error);

  const TlVarKind only_sc[] = { TL_VAR_SCALAR };
  g_assert_null(gen("sum(a)", TL_PARSE_REDUCE, only_sc, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);

  /* The most arrays that fit, then one more. */
  for (int red = 0; red < 2; red++) {
    guint max = tl_expr_max_arrays(red ? TL_RED_SUM : TL_RED_NONE);
    for (guint n = max; n <= max + 1; n++) {
      g_autoptr(GString) s = g_string_new(red ? "sum(a0" : "a0 = a0");
      for (guint i = 1; i < n; i++) g_string_append_printf(s, " + a%u", i);
      if (red) g_string_append_c(s, ')');
      g_autofree TlVarKind *kinds = g_new(TlVarKind, n);
      for (guint i = 0; i < n; i++) kinds[i] = TL_VAR_ARRAY;
      g_autoptr(TlExprKernel) k = gen(s->str, red ? TL_PARSE_REDUCE : TL_PARSE_ASSIGN, kinds, &error);
      if (n == max) {
        g_assert_no_error(error);
        g_assert_cmpuint(k->push_size, <=, TL_EXPR_PUSH_MAX);
      } else {
        g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
        g_assert_nonnull(strstr(error->message, "push constants need"));
        g_clear_error(&error);
      }
    }
  }
}

static void assert_compiles_w(const char *text, TlParseMode mode, const TlVarKind *kinds, guint width) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlExprKernel) k = gen_w(text, mode, kinds, width, &error);
  g_assert_no_error(error);
  g_autofree guint32 *spirv = NULL;
  gsize size = 0;
  if (!tl_glsl_compile(k->glsl, text, &spirv, &size, &error))
    g_error("%s\n%s", error->message, k->glsl);
  g_assert_cmpuint(size, >, 20);
  g_assert_cmpuint(size % 4, ==, 0);
  g_assert_cmphex(spirv[0], ==, 0x07230203);  /* SPIR-V magic */
  g_assert_cmphex(spirv[1], ==, 0x00010500);  /* version 1.5 */
}

static void assert_compiles(const char *text, TlParseMode mode, const TlVarKind *kinds) {
  assert_compiles_w(text, mode, kinds, 1);
  assert_compiles_w(text, mode, kinds, 2);
}

/* Every operator and every reduction generates GLSL that glslang accepts, for
 * both access widths. */
static void test_glslang(void) {
  const TlVarKind aaa[] = { TL_VAR_ARRAY, TL_VAR_ARRAY, TL_VAR_ARRAY, TL_VAR_ARRAY };
  const TlVarKind asa[] = { TL_VAR_ARRAY, TL_VAR_SCALAR, TL_VAR_ARRAY, TL_VAR_ARRAY };
  assert_compiles("x = a*x + y", TL_PARSE_ASSIGN, asa);
  assert_compiles("x = x*y + y/z + x*z", TL_PARSE_ASSIGN, aaa);
  assert_compiles("x = -a - y + exp(z) + log(x) + sqrt(y) + abs(z)", TL_PARSE_ASSIGN, asa);
  assert_compiles("x = min(a, y) * max(y, 1) + select(y < z, y, z)", TL_PARSE_ASSIGN, asa);
  assert_compiles("x = (a < y) + (a <= y) + (a > y) + (a >= y) + (a == y) + (a != y)", TL_PARSE_ASSIGN, asa);
  assert_compiles("x = 3.5", TL_PARSE_ASSIGN, aaa);
  assert_compiles("sum(x)", TL_PARSE_REDUCE, aaa);
  assert_compiles("dot(x, a*y)", TL_PARSE_REDUCE, asa);
  assert_compiles("l2norm(x*a + y)", TL_PARSE_REDUCE, asa);
  assert_compiles("min(x - a)", TL_PARSE_REDUCE, asa);
  assert_compiles("max(abs(x))", TL_PARSE_REDUCE, aaa);
}

static void test_glslang_error(void) {
  g_autoptr(GError) error = NULL;
  guint32 *spirv = NULL;
  gsize size = 0;
  g_assert_false(tl_glsl_compile("#version 460\nvoid main() { undefined_thing(); }\n", "bad",
                                 &spirv, &size, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_SHADER);
  g_assert_nonnull(strstr(error->message, "bad: GLSL compile failed"));
  g_assert_null(spirv);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/expr-parse/precedence", test_precedence);
  g_test_add_func("/expr-parse/variables", test_variables);
  g_test_add_func("/expr-parse/errors", test_errors);
  g_test_add_func("/expr-parse/deep-nesting", test_deep_nesting);
  g_test_add_func("/expr-parse/fuzz", test_fuzz);
  g_test_add_func("/expr-parse/codegen-layout", test_codegen_layout);
  g_test_add_func("/expr-parse/codegen-errors", test_codegen_errors);
  g_test_add_func("/expr-parse/glslang", test_glslang);
  g_test_add_func("/expr-parse/glslang-error", test_glslang_error);
  return g_test_run();
}
