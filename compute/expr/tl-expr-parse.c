/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Expression parser: recursive descent over a small C-like grammar (see
 * docs/expressions.md), building the tree that the thesis builds at compile time.
 *
 * elsa/Quickvec (Petit 2020, sec. 4.3) encode the tree in a C++ type: "The idea of
 * ETs is to save the computations to be done as a type of a lightweight Expression
 * object at compile-time. This object can then be evaluated in a single pass and
 * only when needed." C has no templates, so the same tree is built here at run
 * time from text, and tl-expr-codegen.c turns it into one kernel. */
#include "tl-expr-ast.h"
#include <math.h>
#include <string.h>

/* Terms and operators per expression (tokens other than parentheses and commas): each makes
 * at most one node, so no tree is deeper than this and the recursive walks (printing, code
 * generation, freeing) stay far from the stack's end; a 600 000-term sum overflowed it. */
#define TL_EXPR_MAX_TOKENS 1000
/* Parentheses and signs nested in the text. Above TL_EXPR_MAX_TOKENS + 1 on purpose: the
 * fully parenthesised printed form nests one level per node of the tree, and must parse back
 * (a long "- - - x" or "a - - - x" chain printed deeper than the old limit of 200). */
#define TL_EXPR_MAX_DEPTH 1024

typedef enum {
  TOK_END, TOK_NUM, TOK_IDENT, TOK_LPAREN, TOK_RPAREN, TOK_COMMA, TOK_ASSIGN,
  TOK_PLUS, TOK_MINUS, TOK_STAR, TOK_SLASH,
  TOK_LT, TOK_LE, TOK_GT, TOK_GE, TOK_EQ, TOK_NE,
} TokType;

typedef struct {
  TokType type;
  const char *start;
  gsize len;
  guint column;
  float value;
} Tok;

typedef struct {
  const char *text;
  const char *pos;
  Tok tok;
  guint depth;
  guint n_tokens;
  gboolean after_paren; /* the current token follows '(' directly */
  TlExprParsed *out;
  GError **error;
} Parser;

/* Internal node kind: a reduction call; only legal as the root (moved out of the tree). */
#define TL_NODE_REDUCE ((TlNodeKind)100)

static void node_free(TlNode *n) {
  if (!n) return;
  for (guint i = 0; i < n->n_kids; i++) node_free(n->kid[i]);
  g_free(n);
}

static TlNode *node_new(TlNodeKind kind, int op, guint column) {
  TlNode *n = g_new0(TlNode, 1);
  n->kind = kind;
  n->op = op;
  n->column = column;
  return n;
}

static char *tok_text(const Tok *t) {
  if (t->type == TOK_END) return g_strdup("end of expression");
  return g_strdup_printf("'%.*s'", (int)t->len, t->start);
}

G_GNUC_PRINTF(3, 4)
static gboolean fail_at(Parser *ps, guint column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  /* one readable line: a long text is cut, invalid UTF-8 replaced (GTK refuses it) */
  gsize len = strlen(ps->text);
  g_autofree char *msg =
      g_strdup_printf("expression '%.*s%s': column %u: %s", (int)MIN(len, 100), ps->text,
                      len > 100 ? "..." : "", column, what);
  g_autofree char *valid = g_utf8_make_valid(msg, -1);
  g_set_error_literal(ps->error, TL_ERROR, TL_ERROR_PARSE, valid);
  return FALSE;
}

static gboolean fail_expected(Parser *ps, const char *expected) {
  g_autofree char *found = tok_text(&ps->tok);
  return fail_at(ps, ps->tok.column, "expected %s, found %s", expected, found);
}

static gboolean is_ident_start(char c) { return g_ascii_isalpha(c) || c == '_'; }
static gboolean is_ident_char(char c) { return g_ascii_isalnum(c) || c == '_'; }

/* Reads the next token into ps->tok. */
static gboolean lex(Parser *ps) {
  const char *p = ps->pos;
  while (g_ascii_isspace(*p)) p++;
  Tok *t = &ps->tok;
  t->start = p;
  t->column = (guint)(p - ps->text) + 1;
  if (*p != '(' && *p != ')' && *p != ',' && ++ps->n_tokens > TL_EXPR_MAX_TOKENS)
    return fail_at(ps, t->column, "expression longer than %d terms and operators",
                   TL_EXPR_MAX_TOKENS);
  t->len = 1;
  char c = *p;
  if (c == '\0') {
    t->type = TOK_END;
    t->len = 0;
  } else if (g_ascii_isdigit(c) || (c == '.' && g_ascii_isdigit(p[1]))) {
    const char *q = p;
    while (g_ascii_isdigit(*q)) q++;
    if (*q == '.') q++;
    while (g_ascii_isdigit(*q)) q++;
    if (*q == 'e' || *q == 'E') {
      q++;
      if (*q == '+' || *q == '-') q++;
      if (!g_ascii_isdigit(*q)) {
        t->len = (gsize)(q - p);
        g_autofree char *s = tok_text(t);
        return fail_at(ps, t->column, "malformed number %s", s);
      }
      while (g_ascii_isdigit(*q)) q++;
    }
    t->type = TOK_NUM;
    t->len = (gsize)(q - p);
    g_autofree char *num = g_strndup(p, t->len);
    double d = g_ascii_strtod(num, NULL);
    t->value = (float)d;
    if (!isfinite(t->value))
      return fail_at(ps, t->column, "number %s is out of range for float", num);
    if (is_ident_char(*q)) {  /* "2x": say so rather than "expected end" */
      t->len++;
      g_autofree char *s = tok_text(t);
      return fail_at(ps, t->column, "malformed number %s", s);
    }
  } else if (is_ident_start(c)) {
    const char *q = p;
    while (is_ident_char(*q)) q++;
    t->type = TOK_IDENT;
    t->len = (gsize)(q - p);
  } else {
    switch (c) {
    case '(': t->type = TOK_LPAREN; break;
    case ')': t->type = TOK_RPAREN; break;
    case ',': t->type = TOK_COMMA; break;
    case '+': t->type = TOK_PLUS; break;
    case '-': t->type = TOK_MINUS; break;
    case '*': t->type = TOK_STAR; break;
    case '/': t->type = TOK_SLASH; break;
    case '<': t->type = p[1] == '=' ? TOK_LE : TOK_LT; break;
    case '>': t->type = p[1] == '=' ? TOK_GE : TOK_GT; break;
    case '=': t->type = p[1] == '=' ? TOK_EQ : TOK_ASSIGN; break;
    case '!':
      if (p[1] == '=') { t->type = TOK_NE; break; }
      /* fall through */
    default: {
      /* Show the whole UTF-8 character, not a lone byte. */
      const char *next = g_utf8_validate(p, -1, NULL) ? g_utf8_next_char(p) : p + 1;
      t->len = (gsize)(next - p);
      g_autofree char *s = tok_text(t);
      return fail_at(ps, t->column, "unexpected character %s", s);
    }
    }
    if (t->type == TOK_LE || t->type == TOK_GE || t->type == TOK_EQ || t->type == TOK_NE) t->len = 2;
  }
  ps->pos = p + t->len;
  return TRUE;
}

static gboolean tok_is(const Tok *t, const char *word) {
  return t->type == TOK_IDENT && strlen(word) == t->len && memcmp(t->start, word, t->len) == 0;
}

static guint var_index(Parser *ps, const Tok *t) {
  GPtrArray *vars = ps->out->vars;
  for (guint i = 0; i < vars->len; i++) {
    const char *name = g_ptr_array_index(vars, i);
    if (strlen(name) == t->len && memcmp(name, t->start, t->len) == 0) return i;
  }
  g_ptr_array_add(vars, g_strndup(t->start, t->len));
  g_array_append_val(ps->out->var_column, t->column);
  return vars->len - 1;
}

static TlNode *parse_expr(Parser *ps);

typedef struct {
  const char *name;
  TlNodeKind kind;  /* TL_NODE_CALL or TL_NODE_REDUCE */
  int op;
  guint n_args;
} FuncInfo;

static const FuncInfo tl_funcs[] = {
  { "exp", TL_NODE_CALL, TL_FN_EXP, 1 },
  { "log", TL_NODE_CALL, TL_FN_LOG, 1 },
  { "sqrt", TL_NODE_CALL, TL_FN_SQRT, 1 },
  { "abs", TL_NODE_CALL, TL_FN_ABS, 1 },
  { "min", TL_NODE_CALL, TL_FN_MIN, 2 },
  { "max", TL_NODE_CALL, TL_FN_MAX, 2 },
  { "select", TL_NODE_CALL, TL_FN_SELECT, 3 },
  { "min", TL_NODE_REDUCE, TL_RED_MIN, 1 },  /* one argument: the reduction */
  { "max", TL_NODE_REDUCE, TL_RED_MAX, 1 },
  { "sum", TL_NODE_REDUCE, TL_RED_SUM, 1 },
  { "dot", TL_NODE_REDUCE, TL_RED_DOT, 2 },
  { "l2norm", TL_NODE_REDUCE, TL_RED_L2NORM, 1 },
};

/* name '(' args ')': the current token is the '('. */
static TlNode *parse_call(Parser *ps, const Tok *name) {
  gboolean known = FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS(tl_funcs); i++) known |= tok_is(name, tl_funcs[i].name);
  if (!known) {
    fail_at(ps, name->column, "unknown function '%.*s'", (int)name->len, name->start);
    return NULL;
  }
  if (!lex(ps)) return NULL;
  TlNode *args[3] = { NULL, NULL, NULL };
  guint n = 0;
  if (ps->tok.type != TOK_RPAREN) {
    for (;;) {
      TlNode *a = parse_expr(ps);
      if (!a) goto fail;
      if (n == G_N_ELEMENTS(args)) {  /* more than any function takes */
        node_free(a);
        fail_at(ps, name->column, "too many arguments to '%.*s'", (int)name->len, name->start);
        goto fail;
      }
      args[n++] = a;
      if (ps->tok.type == TOK_RPAREN) break;
      if (ps->tok.type != TOK_COMMA) {
        fail_expected(ps, "',' or ')'");
        goto fail;
      }
      if (!lex(ps)) goto fail;
    }
  }
  const FuncInfo *f = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(tl_funcs); i++)
    if (tok_is(name, tl_funcs[i].name) && tl_funcs[i].n_args == n) f = &tl_funcs[i];
  if (!f) {
    if (tok_is(name, "min") || tok_is(name, "max"))
      fail_at(ps, name->column, "'%.*s' takes 1 argument (reduction) or 2 (element-wise), got %u",
              (int)name->len, name->start, n);
    else
      for (gsize i = 0; i < G_N_ELEMENTS(tl_funcs); i++)
        if (tok_is(name, tl_funcs[i].name))
          fail_at(ps, name->column, "'%s' takes %u argument%s, got %u", tl_funcs[i].name,
                  tl_funcs[i].n_args, tl_funcs[i].n_args == 1 ? "" : "s", n);
    goto fail;
  }
  if (!lex(ps)) goto fail;  /* past ')' */
  TlNode *call = node_new(f->kind, f->op, name->column);
  call->n_kids = n;
  memcpy(call->kid, args, sizeof args);
  return call;
fail:
  for (guint i = 0; i < n; i++) node_free(args[i]);
  return NULL;
}

static TlNode *parse_primary(Parser *ps) {
  Tok t = ps->tok;
  switch (t.type) {
  case TOK_NUM: {
    TlNode *n = node_new(TL_NODE_NUM, 0, t.column);
    n->value = t.value;
    if (!lex(ps)) {
      node_free(n);
      return NULL;
    }
    return n;
  }
  case TOK_IDENT:
    if (!lex(ps)) return NULL;
    if (ps->tok.type == TOK_LPAREN) return parse_call(ps, &t);
    TlNode *n = node_new(TL_NODE_VAR, 0, t.column);
    n->var = var_index(ps, &t);
    return n;
  case TOK_LPAREN: {
    if (!lex(ps)) return NULL;
    ps->after_paren = TRUE;
    TlNode *inner = parse_expr(ps);
    if (!inner) return NULL;
    if (ps->tok.type != TOK_RPAREN || !lex(ps)) {
      if (ps->tok.type != TOK_RPAREN) fail_expected(ps, "')'");
      node_free(inner);
      return NULL;
    }
    return inner;
  }
  default:
    fail_expected(ps, "an operand");
    return NULL;
  }
}

/* Signs are read in a loop (a chain of them is no recursion) and each counts one nesting
 * level, except one right after '(': the printed form "(-(-a))" then nests exactly as deep
 * as the text "- -a" it came from, and parses back. */
static TlNode *parse_unary(Parser *ps) {
  guint n_minus = 0, depth0 = ps->depth;
  gboolean free_sign = ps->after_paren;
  ps->after_paren = FALSE;
  GArray *cols = g_array_new(FALSE, FALSE, sizeof(guint));
  while (ps->tok.type == TOK_MINUS || ps->tok.type == TOK_PLUS) {
    Tok t = ps->tok;
    if (!free_sign && ++ps->depth > TL_EXPR_MAX_DEPTH) {
      fail_at(ps, t.column, "expression nested more than %d levels deep", TL_EXPR_MAX_DEPTH);
      g_array_free(cols, TRUE);
      ps->depth = depth0;
      return NULL;
    }
    free_sign = FALSE;
    if (t.type == TOK_MINUS) g_array_append_val(cols, t.column), n_minus++;
    if (!lex(ps)) {
      g_array_free(cols, TRUE);
      ps->depth = depth0;
      return NULL;
    }
  }
  TlNode *n = parse_primary(ps);
  ps->depth = depth0;
  for (guint i = n_minus; n && i-- > 0;) {
    TlNode *neg = node_new(TL_NODE_NEG, 0, g_array_index(cols, guint, i));
    neg->n_kids = 1;
    neg->kid[0] = n;
    n = neg;
  }
  g_array_free(cols, TRUE);
  return n;
}

/* One precedence level of left-associative binary operators. */
typedef TlNode *(*ParseFn)(Parser *);

static TlNode *parse_binary(Parser *ps, ParseFn next, const TokType *toks, const TlBinOp *ops,
                            guint n_ops) {
  TlNode *left = next(ps);
  while (left) {
    guint k = 0;
    while (k < n_ops && ps->tok.type != toks[k]) k++;
    if (k == n_ops) break;
    guint column = ps->tok.column;
    TlNode *right = lex(ps) ? next(ps) : NULL;
    if (!right) {
      node_free(left);
      return NULL;
    }
    TlNode *n = node_new(TL_NODE_BIN, ops[k], column);
    n->n_kids = 2;
    n->kid[0] = left;
    n->kid[1] = right;
    left = n;
  }
  return left;
}

static TlNode *parse_term(Parser *ps) {
  static const TokType t[] = { TOK_STAR, TOK_SLASH };
  static const TlBinOp o[] = { TL_OP_MUL, TL_OP_DIV };
  return parse_binary(ps, parse_unary, t, o, 2);
}
static TlNode *parse_additive(Parser *ps) {
  static const TokType t[] = { TOK_PLUS, TOK_MINUS };
  static const TlBinOp o[] = { TL_OP_ADD, TL_OP_SUB };
  return parse_binary(ps, parse_term, t, o, 2);
}
static TlNode *parse_relational(Parser *ps) {
  static const TokType t[] = { TOK_LT, TOK_LE, TOK_GT, TOK_GE };
  static const TlBinOp o[] = { TL_OP_LT, TL_OP_LE, TL_OP_GT, TL_OP_GE };
  return parse_binary(ps, parse_additive, t, o, 4);
}
static TlNode *parse_equality(Parser *ps) {
  static const TokType t[] = { TOK_EQ, TOK_NE };
  static const TlBinOp o[] = { TL_OP_EQ, TL_OP_NE };
  return parse_binary(ps, parse_relational, t, o, 2);
}

static TlNode *parse_expr(Parser *ps) {
  if (++ps->depth > TL_EXPR_MAX_DEPTH) {
    fail_at(ps, ps->tok.column, "expression nested more than %d levels deep", TL_EXPR_MAX_DEPTH);
    return NULL;
  }
  TlNode *n = parse_equality(ps);
  ps->depth--;
  return n;
}

static const char *red_name(int red) {
  static const char *names[] = { "", "sum", "dot", "l2norm", "min", "max" };
  return names[red];
}

/* Any reduction left inside the tree is misplaced. */
static const TlNode *find_reduce(const TlNode *n) {
  if (n->kind == TL_NODE_REDUCE) return n;
  for (guint i = 0; i < n->n_kids; i++) {
    const TlNode *r = find_reduce(n->kid[i]);
    if (r) return r;
  }
  return NULL;
}

void tl_expr_parsed_free(TlExprParsed *p) {
  if (!p) return;
  for (guint i = 0; i < p->n_operands; i++) node_free(p->operand[i]);
  g_ptr_array_unref(p->vars);
  g_array_unref(p->var_column);
  g_free(p->text);
  g_free(p);
}

TlExprParsed *tl_expr_parse(const char *text, TlParseMode mode, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(TlExprParsed) out = g_new0(TlExprParsed, 1);
  out->text = g_strdup(text);
  out->target = -1;
  out->vars = g_ptr_array_new_with_free_func(g_free);
  out->var_column = g_array_new(FALSE, FALSE, sizeof(guint));
  Parser ps = { .text = text, .pos = text, .out = out, .error = error };
  if (!lex(&ps)) return NULL;

  if (mode == TL_PARSE_ASSIGN) {
    Tok target = ps.tok;
    if (target.type != TOK_IDENT) {
      fail_expected(&ps, "the name of the target array");
      return NULL;
    }
    if (!lex(&ps)) return NULL;
    if (ps.tok.type != TOK_ASSIGN) {
      fail_expected(&ps, "'='");
      return NULL;
    }
    if (!lex(&ps)) return NULL;
    /* The target is variable 0, so it always takes array slot 0. */
    out->target = (int)var_index(&ps, &target);
  }

  TlNode *root = parse_expr(&ps);
  if (!root) return NULL;
  if (ps.tok.type != TOK_END) {
    node_free(root);
    fail_expected(&ps, ps.tok.type == TOK_RPAREN ? "end of expression (unbalanced ')')"
                                                 : "an operator or end of expression");
    return NULL;
  }

  if (mode == TL_PARSE_REDUCE && root->kind == TL_NODE_REDUCE) {
    out->red = (TlReduction)root->op;
    out->n_operands = root->n_kids;
    memcpy(out->operand, root->kid, sizeof out->operand);
    root->n_kids = 0;
    node_free(root);
  } else {
    out->red = TL_RED_NONE;
    out->n_operands = 1;
    out->operand[0] = root;
    if (mode == TL_PARSE_REDUCE && !find_reduce(root)) {
      fail_at(&ps, 1, "expected a reduction sum(), dot(), l2norm(), min() or max() around the "
                      "whole expression");
      return NULL;
    }
  }
  for (guint i = 0; i < out->n_operands; i++) {
    const TlNode *r = find_reduce(out->operand[i]);
    if (r) {
      if (mode == TL_PARSE_ASSIGN)
        fail_at(&ps, r->column, "'%s' is a reduction: evaluate it with tl_expr_reduce(), not in an "
                                "assignment", red_name(r->op));
      else
        fail_at(&ps, r->column, "the reduction '%s' must enclose the whole expression",
                red_name(r->op));
      return NULL;
    }
  }
  return g_steal_pointer(&out);
}

/* ---- printing ---- */

static void print_node(GString *s, const TlExprParsed *p, const TlNode *n) {
  static const char *binop[] = { "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=" };
  static const char *fn[] = { "exp", "log", "sqrt", "abs", "min", "max", "select" };
  switch (n->kind) {
  case TL_NODE_NUM: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.9g", n->value));
    break;
  }
  case TL_NODE_VAR:
    g_string_append(s, g_ptr_array_index(p->vars, n->var));
    break;
  case TL_NODE_NEG:
    g_string_append(s, "(-");
    print_node(s, p, n->kid[0]);
    g_string_append_c(s, ')');
    break;
  case TL_NODE_BIN:
    g_string_append_c(s, '(');
    print_node(s, p, n->kid[0]);
    g_string_append_printf(s, " %s ", binop[n->op]);
    print_node(s, p, n->kid[1]);
    g_string_append_c(s, ')');
    break;
  default:
    g_string_append_printf(s, "%s(", fn[n->op]);
    for (guint i = 0; i < n->n_kids; i++) {
      if (i) g_string_append(s, ", ");
      print_node(s, p, n->kid[i]);
    }
    g_string_append_c(s, ')');
    break;
  }
}

char *tl_expr_to_string(const TlExprParsed *p) {
  GString *s = g_string_new(NULL);
  if (p->red == TL_RED_NONE) {
    g_string_append_printf(s, "%s = ", (const char *)g_ptr_array_index(p->vars, p->target));
    print_node(s, p, p->operand[0]);
  } else {
    g_string_append_printf(s, "%s(", red_name(p->red));
    for (guint i = 0; i < p->n_operands; i++) {
      if (i) g_string_append(s, ", ");
      print_node(s, p, p->operand[i]);
    }
    g_string_append_c(s, ')');
  }
  return g_string_free(s, FALSE);
}
