/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Array expressions on the device: every operator and every reduction against plain
 * C loops written here (independent of the parser), the pipeline cache, errors,
 * streams and threads.
 *
 * Data are chosen so that no expression cancels catastrophically: then a float
 * kernel is within a few ulp of the double reference and "relative error <= 1e-6"
 * tests the operators, not the conditioning of the data. */
#include "tl-test-common.h"
#include <math.h>
#include <string.h>

#define TL_REL_TOL 1e-6

static TlContext *ctx;

/* Host copies and device arrays of one size. x in [2,3), y in [0.5,1), w in [1,2),
 * z in [-1,1) with exact zeros (i%11==0) and z == y where i%7==3. */
typedef struct {
  gsize n;
  float *x, *y, *z, *w;
  float a, b;
  TlArray *dx, *dy, *dz, *dw, *dr, *dt;
  TlExprArgs *args;
  float *out;
} Data;

static Data *data_new(gsize n) {
  GError *error = NULL;
  Data *d = g_new0(Data, 1);
  d->n = n;
  d->a = 3.0f;
  d->b = 0.5f;
  d->x = g_new(float, n);
  d->y = g_new(float, n);
  d->z = g_new(float, n);
  d->w = g_new(float, n);
  d->out = g_new(float, n);
  guint32 s = 0x9e3779b9u ^ (guint32)n;
  for (gsize i = 0; i < n; i++) {
    float u[4];
    for (int k = 0; k < 4; k++) {
      s ^= s << 13, s ^= s >> 17, s ^= s << 5;  /* xorshift32 */
      u[k] = (float)(s >> 8) * 0x1p-24f;
    }
    d->x[i] = 2.0f + u[0];
    d->y[i] = 0.5f + 0.5f * u[1];
    d->z[i] = i % 11 == 0 ? 0.0f : i % 7 == 3 ? d->y[i] : 2.0f * u[2] - 1.0f;
    d->w[i] = 1.0f + u[3];
  }
  TlArray **dev[] = { &d->dx, &d->dy, &d->dz, &d->dw, &d->dr, &d->dt };
  const float *host[] = { d->x, d->y, d->z, d->w, NULL, NULL };
  const char *names[] = { "x", "y", "z", "w", "r", "t" };
  d->args = tl_expr_args_new();
  for (gsize k = 0; k < G_N_ELEMENTS(dev); k++) {
    *dev[k] = tl_array_new_float(ctx, n, &error);
    g_assert_no_error(error);
    if (host[k]) g_assert_true(tl_array_upload(*dev[k], host[k], &error));
    g_assert_no_error(error);
    tl_expr_args_array(d->args, names[k], *dev[k]);
  }
  tl_expr_args_scalar(d->args, "a", d->a);
  tl_expr_args_scalar(d->args, "b", d->b);
  return d;
}

static void data_free(Data *d) {
  TlArray *dev[] = { d->dx, d->dy, d->dz, d->dw, d->dr, d->dt };
  for (gsize k = 0; k < G_N_ELEMENTS(dev); k++) tl_array_free(dev[k]);
  tl_expr_args_free(d->args);
  g_free(d->x), g_free(d->y), g_free(d->z), g_free(d->w), g_free(d->out);
  g_free(d);
}

typedef double (*RefFn)(const Data *d, gsize i);

/* Reference element i in double (REF) or, for operators that must be exact, in
 * float exactly as C computes it (EXACT). */
#define REF(name, body)                                                                \
  static double name(const Data *d, gsize i) {                                       \
    const double x = d->x[i], y = d->y[i], z = d->z[i], w = d->w[i], a = d->a, b = d->b; \
    (void)x, (void)y, (void)z, (void)w, (void)a, (void)b;                             \
    return (body);                                                                    \
  }
#define EXACT(name, body)                                                              \
  static double name(const Data *d, gsize i) {                                       \
    const float x = d->x[i], y = d->y[i], z = d->z[i], w = d->w[i];                   \
    (void)x, (void)y, (void)z, (void)w;                                               \
    return (double)(float)(body);                                                     \
  }

REF(r_copy, x)
REF(r_add, x + y)
REF(r_sub, x - y)
REF(r_mul, x * y)
REF(r_div, x / y)
REF(r_neg, -x)
REF(r_unary, x + y)
REF(r_scale, a * x)
REF(r_scalars, x / a + b)
REF(r_scalar_left, a - y)
REF(r_literals, 0.25 * x + 1000.0)
REF(r_order, x - y * w + x / w / y)
REF(r_paren, (x - y) * (w + y))
REF(r_exp, exp(z))
REF(r_log, log(x))
REF(r_sqrt, sqrt(x))
EXACT(r_abs, fabsf(z))
EXACT(r_min, z < y ? z : y)
EXACT(r_max, z > y ? z : y)
EXACT(r_min_lit, z < 0.5f ? z : 0.5f)
EXACT(r_lt, z < y)
EXACT(r_le, z <= y)
EXACT(r_gt, z > y)
EXACT(r_ge, z >= y)
EXACT(r_eq, z == y)
EXACT(r_ne, z != y)
EXACT(r_select, z != 0.0f ? x : y)
EXACT(r_select_cmp, z < 0.0f ? -z : z)
EXACT(r_const, 4.25f)
/* The thesis' expressions (Petit 2020, sec. 4.5.1) with w as its z. */
REF(r_thesis_b, x * y + y)
REF(r_thesis_c, x * y + y / w)
REF(r_thesis_d, x * y + y / w + x)
REF(r_thesis_e, x * y + y / w + x * w)
REF(r_xy_w, x * y + w)
/* Composites for the largest size: every operator, fewer passes. */
REF(r_arith, (x + y) * a + x / y + -y * b)
REF(r_transc, exp(z) + log(x) + sqrt(w))
EXACT(r_exact, z != 0.0f ? (z < 0.25f ? fminf(fabsf(z), y) : fmaxf(-z, y)) : x)
EXACT(r_cmp_bits, (z < y) + 2 * (z <= y) + 4 * (z > y) + 8 * (z >= y) + 16 * (z == y) + 32 * (z != y))

typedef struct {
  const char *expr;
  RefFn ref;
  gboolean exact;
} Op;

static const Op tl_ops[] = {
  { "r = x", r_copy, FALSE },
  { "r = x + y", r_add, FALSE },
  { "r = x - y", r_sub, FALSE },
  { "r = x * y", r_mul, FALSE },
  { "r = x / y", r_div, FALSE },
  { "r = -x", r_neg, FALSE },
  { "r = +x - -y", r_unary, FALSE },
  { "r = a * x", r_scale, FALSE },
  { "r = x / a + b", r_scalars, FALSE },
  { "r = a - y", r_scalar_left, FALSE },
  { "r = 2.5e-1*x + 1e3", r_literals, FALSE },
  { "r = x - y * w + x / w / y", r_order, FALSE },
  { "r = (x - y) * (w + y)", r_paren, FALSE },
  { "r = exp(z)", r_exp, FALSE },
  { "r = log(x)", r_log, FALSE },
  { "r = sqrt(x)", r_sqrt, FALSE },
  { "r = abs(z)", r_abs, TRUE },
  { "r = min(z, y)", r_min, TRUE },
  { "r = max(z, y)", r_max, TRUE },
  { "r = min(z, 0.5)", r_min_lit, TRUE },
  { "r = z < y", r_lt, TRUE },
  { "r = z <= y", r_le, TRUE },
  { "r = z > y", r_gt, TRUE },
  { "r = z >= y", r_ge, TRUE },
  { "r = z == y", r_eq, TRUE },
  { "r = z != y", r_ne, TRUE },
  { "r = select(z, x, y)", r_select, TRUE },
  { "r = select(z < 0, -z, z)", r_select_cmp, TRUE },
  { "r = 4.25", r_const, TRUE },
  { "r = x*y + y", r_thesis_b, FALSE },
  { "r = x*y + y/w", r_thesis_c, FALSE },
  { "r = x*y + y/w + x", r_thesis_d, FALSE },
  { "r = x*y + y/w + x*w", r_thesis_e, FALSE },
};

static const Op tl_composites[] = {
  { "r = (x + y)*a + x/y + -y*b", r_arith, FALSE },
  { "r = exp(z) + log(x) + sqrt(w)", r_transc, FALSE },
  { "r = select(z, select(z < 0.25, min(abs(z), y), max(-z, y)), x)", r_exact, TRUE },
  { "r = (z<y) + 2*(z<=y) + 4*(z>y) + 8*(z>=y) + 16*(z==y) + 32*(z!=y)", r_cmp_bits, TRUE },
};

/* Compares the device array with the reference; returns the max relative error. */
static double check(Data *d, TlArray *dev, const char *expr, RefFn ref, gboolean exact) {
  GError *error = NULL;
  g_assert_true(tl_array_download(dev, d->out, &error));
  g_assert_no_error(error);
  double worst = 0.0;
  for (gsize i = 0; i < d->n; i++) {
    double r = ref(d, i), f = d->out[i];
    if (exact) {
      if (f != r) g_error("'%s' n=%zu element %zu: %.9g, expected exactly %.9g", expr, d->n, i, f, r);
      continue;
    }
    double rel = r == 0.0 ? fabs(f) : fabs(f - r) / fabs(r);
    if (!(rel <= TL_REL_TOL))
      g_error("'%s' n=%zu element %zu: %.9g, expected %.9g (relative error %.3g)", expr, d->n, i,
              f, r, rel);
    worst = MAX(worst, rel);
  }
  return worst;
}

static void run_op(Data *d, const Op *op, double *worst) {
  GError *error = NULL;
  g_assert_true(tl_expr_assign(ctx, NULL, op->expr, d->args, &error));
  g_assert_no_error(error);
  double rel = check(d, d->dr, op->expr, op->ref, op->exact);
  *worst = MAX(*worst, rel);
}

/* In place: the target is read on the right (the thesis' x = x*y + y/z + x*z). */
static void run_in_place(Data *d) {
  GError *error = NULL;
  g_assert_true(tl_expr_assign(ctx, NULL, "t = x", d->args, &error));
  g_assert_true(tl_expr_assign(ctx, NULL, "t = t*y + y/w + t*w", d->args, &error));
  g_assert_no_error(error);
  check(d, d->dt, "t = t*y + y/w + t*w", r_thesis_e, FALSE);
}

static void test_ops_small(void) {
  static const gsize sizes[] = { 1, 63, 64, 1000007 };
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    Data *d = data_new(sizes[s]);
    double worst = 0.0;
    for (gsize k = 0; k < G_N_ELEMENTS(tl_ops); k++) run_op(d, &tl_ops[k], &worst);
    for (gsize k = 0; k < G_N_ELEMENTS(tl_composites); k++) run_op(d, &tl_composites[k], &worst);
    run_in_place(d);
    g_test_message("n=%zu: %zu expressions, max relative error %.3g", d->n,
                   G_N_ELEMENTS(tl_ops) + G_N_ELEMENTS(tl_composites) + 1, worst);
    data_free(d);
  }
}

/* ---- reductions ---- */

typedef enum { K_SUM, K_MIN, K_MAX } RedKind;

typedef struct {
  const char *expr;
  RefFn elem;   /* the element-wise value reduced (the square for l2norm, the product for dot) */
  RedKind kind;
  gboolean sqrt_of;
} Red;

REF(e_x, x)
REF(e_z, z)
REF(e_xy, x * y)
REF(e_xx, x * x)
REF(e_axy2, (a * x + y) * (a * x + y))
REF(e_dot_fused, (x - y) * w)
REF(e_pos, z > 0)
EXACT(e_zf, z)
EXACT(e_xyf, x * y)
EXACT(e_sel, z < 0 ? -z : w)

static const Red tl_reds[] = {
  { "sum(x)", e_x, K_SUM, FALSE },
  { "sum(z)", e_z, K_SUM, FALSE },
  { "sum(z > 0)", e_pos, K_SUM, FALSE },
  { "dot(x, y)", e_xy, K_SUM, FALSE },
  { "l2norm(x)", e_xx, K_SUM, TRUE },
  { "l2norm(a*x + y)", e_axy2, K_SUM, TRUE },
  { "dot(x - y, w)", e_dot_fused, K_SUM, FALSE },
  { "min(z)", e_zf, K_MIN, FALSE },
  { "max(z)", e_zf, K_MAX, FALSE },
  { "min(x*y)", e_xyf, K_MIN, FALSE },
  { "max(select(z < 0, -z, w))", e_sel, K_MAX, FALSE },
};

static void run_red(Data *d, const Red *r, double *worst) {
  GError *error = NULL;
  double got = NAN;
  g_assert_true(tl_expr_reduce(ctx, NULL, r->expr, d->args, &got, &error));
  g_assert_no_error(error);
  double want = r->kind == K_MIN ? INFINITY : r->kind == K_MAX ? -INFINITY : 0.0;
  for (gsize i = 0; i < d->n; i++) {
    double v = r->elem(d, i);
    want = r->kind == K_SUM ? want + v : r->kind == K_MIN ? MIN(want, v) : MAX(want, v);
  }
  if (r->sqrt_of) want = sqrt(want);
  if (r->kind != K_SUM) {
    if (got != want) g_error("'%s' n=%zu: %.9g, expected exactly %.9g", r->expr, d->n, got, want);
    return;
  }
  double rel = want == 0.0 ? fabs(got) : fabs(got - want) / fabs(want);
  if (!(rel <= TL_REL_TOL))
    g_error("'%s' n=%zu: %.12g, expected %.12g (relative error %.3g)", r->expr, d->n, got, want, rel);
  *worst = MAX(*worst, rel);
}

static void test_reduce(void) {
  static const gsize sizes[] = { 1, 63, 64, 1000007, 10000000 };
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    Data *d = data_new(sizes[s]);
    double worst = 0.0;
    for (gsize k = 0; k < G_N_ELEMENTS(tl_reds); k++) run_red(d, &tl_reds[k], &worst);
    g_test_message("n=%zu: max relative error of the sums %.3g", d->n, worst);
    data_free(d);
  }
}

/* 7e7 floats = 280 MB per array, beyond lavapipe's 128 MiB maxStorageBufferRange:
 * the composites (every operator, in four passes), in place, and fused reductions. */
static void test_large(void) {
  gint64 t0 = g_get_monotonic_time();
  Data *d = data_new(70000000);
  gint64 t1 = g_get_monotonic_time();
  double worst = 0.0;
  for (gsize k = 0; k < G_N_ELEMENTS(tl_composites); k++) run_op(d, &tl_composites[k], &worst);
  run_in_place(d);
  gint64 t2 = g_get_monotonic_time();
  for (gsize k = 0; k < G_N_ELEMENTS(tl_reds); k++)
    if (strstr(tl_reds[k].expr, "l2norm(a") || strstr(tl_reds[k].expr, "dot(x,") ||
        strstr(tl_reds[k].expr, "max(z"))
      run_red(d, &tl_reds[k], &worst);
  gint64 t3 = g_get_monotonic_time();
  g_test_message("n=%zu: max relative error %.3g (setup %.1f s, assignments %.1f s, "
                 "reductions %.1f s)", d->n, worst, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
                 (t3 - t2) / 1e6);
  data_free(d);
}

/* ---- cache ---- */

static void test_cache(void) {
  GError *error = NULL;
  Data *d = data_new(1000);
  guint c0, h0, c1, h1;
  tl_expr_cache_stats(ctx, &c0, &h0);
  const char *e = "r = b*x*w + y - 0.125";
  g_assert_true(tl_expr_assign(ctx, NULL, e, d->args, &error));
  tl_expr_cache_stats(ctx, &c1, &h1);
  g_assert_cmpuint(c1, ==, c0 + 1);
  g_assert_cmpuint(h1, ==, h0);
  /* the same text again: a hit, glslang not called */
  g_assert_true(tl_expr_assign(ctx, NULL, e, d->args, &error));
  tl_expr_cache_stats(ctx, &c1, &h1);
  g_assert_cmpuint(c1, ==, c0 + 1);
  g_assert_cmpuint(h1, ==, h0 + 1);
  /* a new scalar value travels in push constants: still a hit, and it is used */
  tl_expr_args_scalar(d->args, "b", 2.0f);
  g_assert_true(tl_expr_assign(ctx, NULL, e, d->args, &error));
  g_assert_no_error(error);
  tl_expr_cache_stats(ctx, &c1, &h1);
  g_assert_cmpuint(c1, ==, c0 + 1);
  g_assert_cmpuint(h1, ==, h0 + 2);
  g_assert_true(tl_array_download(d->dr, d->out, &error));
  for (gsize i = 0; i < d->n; i++) {
    double want = 2.0 * d->x[i] * d->w[i] + d->y[i] - 0.125;
    g_assert_cmpfloat(fabs(d->out[i] - want) / want, <=, TL_REL_TOL);
  }
  /* the same name bound to an array instead: different code, one more compile */
  tl_expr_args_array(d->args, "b", d->dz);
  g_assert_true(tl_expr_assign(ctx, NULL, e, d->args, &error));
  tl_expr_cache_stats(ctx, &c1, &h1);
  g_assert_cmpuint(c1, ==, c0 + 2);
  /* reductions are cached the same way */
  double v;
  g_assert_true(tl_expr_reduce(ctx, NULL, "l2norm(b*x - 1)", d->args, &v, &error));
  g_assert_true(tl_expr_reduce(ctx, NULL, "l2norm(b*x - 1)", d->args, &v, &error));
  g_assert_no_error(error);
  tl_expr_cache_stats(ctx, &c1, &h1);
  g_assert_cmpuint(c1, ==, c0 + 3);
  g_assert_cmpuint(h1, ==, h0 + 3);
  data_free(d);
}

/* ---- errors: a GError, nothing recorded, no leak ---- */

static void expect_error(Data *d, TlStream *s, const char *expr, gboolean reduce, int code,
                         const char *part) {
  GError *error = NULL;
  double v = 0;
  guint before = tl_stream_n_submissions(s);
  gboolean ok = reduce ? tl_expr_reduce(ctx, s, expr, d->args, &v, &error)
                       : tl_expr_assign(ctx, s, expr, d->args, &error);
  g_assert_false(ok);
  g_assert_error(error, TL_ERROR, code);
  if (!strstr(error->message, part)) g_error("'%s': \"%s\" lacks \"%s\"", expr, error->message, part);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_cmpuint(tl_stream_n_submissions(s), ==, before);
}

static void test_errors(void) {
  GError *error = NULL;
  Data *d = data_new(100);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) short_a = tl_array_new_float(ctx, 99, &error);
  g_autoptr(TlArray) dbl = tl_array_new(ctx, 100, sizeof(double), &error);
  g_assert_no_error(error);
  tl_expr_args_array(d->args, "short_a", short_a);
  tl_expr_args_array(d->args, "dbl", dbl);

  expect_error(d, s, "r = y +* z", FALSE, TL_ERROR_PARSE,
               "expression 'r = y +* z': column 8: expected an operand, found '*'");
  expect_error(d, s, "r = (x", FALSE, TL_ERROR_PARSE, "column 7: expected ')'");
  expect_error(d, s, "l2norm(x", TRUE, TL_ERROR_PARSE, "column 9: expected ',' or ')'");
  expect_error(d, s, "r = x + q", FALSE, TL_ERROR_INVALID_ARG, "column 9: unknown variable 'q'");
  expect_error(d, s, "sum(x*q)", TRUE, TL_ERROR_INVALID_ARG, "unknown variable 'q'");
  expect_error(d, s, "a = x", FALSE, TL_ERROR_INVALID_ARG, "'a' is a scalar");
  expect_error(d, s, "sum(a*b)", TRUE, TL_ERROR_INVALID_ARG, "needs at least one array");
  expect_error(d, s, "r = x + short_a", FALSE, TL_ERROR_INVALID_ARG,
               "arrays 'r' (100 elements) and 'short_a' (99 elements) differ in length");
  expect_error(d, s, "dot(short_a, y)", TRUE, TL_ERROR_INVALID_ARG,
               "arrays 'short_a' (99 elements) and 'y' (100 elements) differ in length");
  expect_error(d, s, "r = dbl", FALSE, TL_ERROR_INVALID_ARG, "'dbl' does not hold 4-byte floats");
  expect_error(d, s, "r = sum(x)", FALSE, TL_ERROR_PARSE, "'sum' is a reduction");
  expect_error(d, s, "r = x", TRUE, TL_ERROR_PARSE, "expected an operator or end of expression, found '='");

  /* More arrays than the 128-byte push block holds. */
  g_autoptr(GString) many = g_string_new("r = x");
  for (guint i = 0; i < 15; i++) {
    g_autofree char *name = g_strdup_printf("m%u", i);
    tl_expr_args_array(d->args, name, d->dx);  /* one array under many names is fine */
    g_string_append_printf(many, " + %s", name);
  }
  expect_error(d, s, many->str, FALSE, TL_ERROR_INVALID_ARG, "push constants need");
  data_free(d);
}

/* ---- streams: recorded without waiting, in order, labelled ---- */

static void test_stream(void) {
  GError *error = NULL;
  Data *d = data_new(100003);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_stream_set_profile(s, prof);
  g_assert_true(tl_expr_assign(ctx, s, "r = x", d->args, &error));
  g_assert_true(tl_expr_assign(ctx, s, "r = r * y", d->args, &error));
  tl_expr_args_set_label(d->args, "plus w");
  g_assert_true(tl_expr_assign(ctx, s, "r = r + w", d->args, &error));
  tl_expr_args_set_label(d->args, NULL);
  double v = 0;
  /* the reduction finishes the stream, so it sees the three assignments */
  g_assert_true(tl_expr_reduce(ctx, s, "sum(r - w)", d->args, &v, &error));
  g_assert_no_error(error);
  double want = 0;
  for (gsize i = 0; i < d->n; i++) want += (double)d->x[i] * d->y[i];
  g_assert_cmpfloat(fabs(v - want) / want, <=, TL_REL_TOL);
  check(d, d->dr, "r = x*y + w", r_xy_w, FALSE);
  g_assert_nonnull(tl_profile_lookup(prof, "r = x"));
  g_assert_nonnull(tl_profile_lookup(prof, "plus w"));
  g_assert_nonnull(tl_profile_lookup(prof, "sum(r - w)"));
  g_assert_null(tl_profile_lookup(prof, "r = r + w"));
  data_free(d);
}

/* A small submit budget splits both kinds of dispatch over many submissions. */
static void test_budget(void) {
  GError *error = NULL;
  Data *d = data_new(1000007);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  tl_stream_set_submit_budget(s, 1 << 14);
  double worst = 0.0;
  g_assert_true(tl_expr_assign(ctx, s, "r = x*y + y/w + x*w", d->args, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  guint after_assign = tl_stream_n_submissions(s);
  g_assert_cmpuint(after_assign, >=, 2);
  worst = MAX(worst, check(d, d->dr, "r = x*y + y/w + x*w", r_thesis_e, FALSE));
  tl_stream_set_submit_budget(s, 1 << 16);
  double v = 0;
  g_assert_true(tl_expr_reduce(ctx, s, "l2norm(a*x + y)", d->args, &v, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_stream_n_submissions(s), >=, after_assign + 2);
  double want = 0;
  for (gsize i = 0; i < d->n; i++) want += e_axy2(d, i);
  want = sqrt(want);
  g_assert_cmpfloat(fabs(v - want) / want, <=, TL_REL_TOL);
  g_test_message("%u submissions", tl_stream_n_submissions(s));
  data_free(d);
}

/* ---- threads: concurrent calls on one context ---- */

static gpointer thread_main(gpointer data) {
  Data *d = data;
  GError *error = NULL;
  for (int k = 0; k < 20; k++) {
    tl_expr_args_scalar(d->args, "k", k * 0.5f);
    g_assert_true(tl_expr_assign(ctx, NULL, "r = x*y + k", d->args, &error));
    g_assert_no_error(error);
    double v;
    g_assert_true(tl_expr_reduce(ctx, NULL, "sum(r - x*y)", d->args, &v, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(fabs(v - k * 0.5 * d->n), <=, 1e-3 * d->n);
  }
  return NULL;
}

static void test_threads(void) {
  Data *d[3];
  GThread *t[3];
  for (int i = 0; i < 3; i++) d[i] = data_new(10000 + i);
  for (int i = 0; i < 3; i++) t[i] = g_thread_new("expr", thread_main, d[i]);
  for (int i = 0; i < 3; i++) g_thread_join(t[i]);
  for (int i = 0; i < 3; i++) data_free(d[i]);
}

/* Devices without shaderInt64 (or unaligned arrays) take one float per access:
 * the same checks on a context forced to that path. */
static void test_width1(void) {
  TlContext *saved = ctx;
  g_setenv("TOMOLAB_EXPR_WIDTH", "1", TRUE);
  ctx = tl_test_context();
  tl_expr_cache_stats(ctx, NULL, NULL); /* the cache reads its settings now */
  g_unsetenv("TOMOLAB_EXPR_WIDTH");
  static const gsize sizes[] = { 1, 64, 1000007 };
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    Data *d = data_new(sizes[s]);
    double worst = 0.0;
    for (gsize k = 0; k < G_N_ELEMENTS(tl_ops); k++) run_op(d, &tl_ops[k], &worst);
    for (gsize k = 0; k < G_N_ELEMENTS(tl_composites); k++) run_op(d, &tl_composites[k], &worst);
    run_in_place(d);
    for (gsize k = 0; k < G_N_ELEMENTS(tl_reds); k++) run_red(d, &tl_reds[k], &worst);
    g_test_message("width 1, n=%zu: max relative error %.3g", d->n, worst);
    data_free(d);
  }
  tl_test_context_done(ctx);
  ctx = saved;
}

/* Every test ends with no validation message on the shared context. */
static void run_checked(gconstpointer test) {
  ((void (*)(void))test)();
  g_assert_cmpuint(tl_context_validation_messages(ctx), ==, 0);
}
#define ADD(path, fn) g_test_add_data_func(path, (gconstpointer)(fn), run_checked)

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  ADD("/expr/ops", test_ops_small);
  ADD("/expr/reduce", test_reduce);
  ADD("/expr/large", test_large);
  ADD("/expr/cache", test_cache);
  ADD("/expr/errors", test_errors);
  ADD("/expr/stream", test_stream);
  ADD("/expr/budget", test_budget);
  ADD("/expr/threads", test_threads);
  ADD("/expr/width1", test_width1);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
