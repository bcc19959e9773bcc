/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlOperator classes "ct" and "csr" on the device: adjointness <D A x, w> = <x, A^T D w> per
 * subset (every matched CT projector, unequal interleaved subsets, with and without D), the
 * CT data order against a host permutation, CSR forward / adjoint / sensitivity against
 * dense double products computed here from the entries, and bad inputs -> GError. */
#include <math.h>
#include <string.h>
#include "ct/tl-ct-operator.h"
#include "recon/tl-csr-operator.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint32 rng_state = 0x9e3779b9u;
static float rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (float)(rng_state >> 8) * 0x1p-24f;
}

static TlArray *upload(const float *data, guint64 n) { return tl_test_upload(ctx, data, n); }

static float *download(const TlArray *a) {
  GError *error = NULL;
  float *h = g_new(float, tl_array_length(a));
  g_assert_true(tl_array_download(a, h, &error));
  g_assert_no_error(error);
  return h;
}

static float *random_vec(guint64 n, float lo, float hi) {
  float *v = g_new(float, n);
  for (guint64 i = 0; i < n; i++) v[i] = lo + (hi - lo) * rnd();
  return v;
}

static TlArray *view(TlArray *a, guint64 first, guint64 n) {
  GError *error = NULL;
  TlArray *v = tl_array_new_view(a, first, n, &error);
  g_assert_no_error(error);
  return v;
}

static void finish(TlStream *s) {
  GError *error = NULL;
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
}

static double dotf(const float *a, const float *b, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

static void set_diag(TlOperator *op, const float *d) {
  GError *error = NULL;
  g_autoptr(TlArray) dd = d ? upload(d, tl_operator_n_data(op)) : NULL;
  g_assert_true(tl_operator_set_diag(op, dd, FALSE, &error));
  g_assert_no_error(error);
}

/* Per subset: <D_s A_s x, w> against <x, A_s^T D_s w> (x random, w random), the adjoint
 * accumulating onto a random image z that is subtracted after. */
static void check_adjoint(TlOperator *op, const char *what) {
  GError *error = NULL;
  guint64 n = tl_operator_n_voxels(op);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  for (guint b = 0; b < tl_operator_n_subsets(op); b++) {
    guint64 len = tl_operator_subset_length(op, b);
    g_autofree float *x = random_vec(n, 0, 1), *w = random_vec(len, 0, 1);
    g_autofree float *z = random_vec(n, -1, 1);
    g_autoptr(TlArray) dx = upload(x, n), dw = upload(w, len), dy = upload(NULL, len);
    g_autoptr(TlArray) dz = upload(z, n);
    g_assert_true(tl_operator_forward(op, s, b, dx, dy, &error));
    g_assert_true(tl_operator_adjoint(op, s, b, dw, dz, &error));
    g_assert_no_error(error);
    finish(s);
    g_autofree float *y = download(dy), *az = download(dz);
    double lhs = dotf(y, w, len), rhs = 0;
    for (guint64 j = 0; j < n; j++) rhs += (double)x[j] * ((double)az[j] - z[j]);
    double rel = fabs(lhs - rhs) / fabs(lhs);
    g_test_message("%s subset %u/%u: <DAx,w> = %.9g, <x,A^T D w> = %.9g, relative %.2e", what, b,
                   tl_operator_n_subsets(op), lhs, rhs, rel);
    g_assert_cmpfloat(lhs, >, 0);
    g_assert_cmpfloat(rel, <=, 1e-5);
  }
}

/* ---- CT ---- */

static TlCtGeometry *ct_geometry(guint views) {
  GError *error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, views, 60, 100, 20, 12, 1.6, 1.6);
  o.start_deg = 11;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

static TlImageGrid ct_grid(void) {
  TlImageGrid g = tl_image_grid_centred(13, 11, 7, 1.0f, 1.1f, 1.25f);
  g.origin_mm[0] += 0.2f;
  return g;
}

static TlOperator *ct_op(const TlCtGeometry *g, TlCtMethod m, guint subsets) {
  GError *error = NULL;
  TlImageGrid grid = ct_grid();
  TlOperator *op = tl_ct_operator_new(ctx, g, &grid, m, subsets, &error);
  g_assert_no_error(error);
  g_assert_nonnull(op);
  g_assert_cmpstr(tl_operator_name(op), ==, "ct");
  return op;
}

static void test_ct_adjoint(gconstpointer data) {
  TlCtMethod m = GPOINTER_TO_INT(data);
  g_autoptr(TlCtGeometry) g = ct_geometry(10);
  /* 10 views in 1, 3 (4 + 3 + 3 views) and 4 (3 + 3 + 2 + 2) subsets */
  guint subsets[] = {1, 3, 4};
  for (guint i = 0; i < G_N_ELEMENTS(subsets); i++) {
    g_autoptr(TlOperator) op = ct_op(g, m, subsets[i]);
    g_autofree char *what = g_strdup_printf("%s", tl_operator_label(op));
    check_adjoint(op, what);
    g_autofree float *d = random_vec(tl_operator_n_data(op), 0.25f, 2.0f);
    set_diag(op, d);
    g_autofree char *what_d = g_strdup_printf("%s with D", tl_operator_label(op));
    check_adjoint(op, what_d);
  }
}

/* Data order: gather = the host permutation data[first(s) + k npix + p] = proj[(s + k S) npix
 * + p]; scatter inverts it; each subset's forward equals the gathered forward of all views
 * (and D multiplies it datum by datum). */
static void test_ct_data_order(void) {
  GError *error = NULL;
  guint S = 4;
  g_autoptr(TlCtGeometry) g = ct_geometry(10);
  g_autoptr(TlOperator) op = ct_op(g, TL_CT_JOSEPH, S);
  guint64 npix = (guint64)g->det_u * g->det_v, N = tl_operator_n_data(op);
  guint64 nvox = tl_operator_n_voxels(op);
  g_assert_cmpuint(N, ==, npix * g->n_views);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);

  g_autofree float *proj = random_vec(N, 0, 1);
  g_autoptr(TlArray) dproj = upload(proj, N), ddata = upload(NULL, N), dback = upload(NULL, N);
  g_assert_true(tl_ct_operator_gather(op, s, dproj, ddata, &error));
  g_assert_true(tl_ct_operator_scatter(op, s, ddata, dback, &error));
  g_assert_no_error(error);
  finish(s);
  g_autofree float *data = download(ddata), *back = download(dback);
  for (guint b = 0; b < S; b++) {
    TlCtViews v = tl_ct_operator_views(op, b);
    g_assert_cmpuint(v.first, ==, b);
    g_assert_cmpuint(v.stride, ==, S);
    g_assert_cmpuint(tl_operator_subset_length(op, b), ==, v.count * npix);
    for (guint k = 0; k < v.count; k++)
      for (guint64 p = 0; p < npix; p++)
        g_assert_cmpfloat(data[tl_operator_subset_first(op, b) + k * npix + p], ==,
                          proj[(b + (guint64)k * S) * npix + p]);
  }
  g_assert_cmpmem(back, N * 4, proj, N * 4);

  /* per-subset forwards into views of one data vector = the gathered all-view forward */
  g_autofree float *x = random_vec(nvox, 0, 1);
  g_autofree float *d = random_vec(N, 0.5f, 1.5f);
  g_autoptr(TlArray) dx = upload(x, nvox), dall = upload(NULL, N), dsub = upload(NULL, N);
  TlCtViews all = tl_ct_views_all(g);
  g_assert_true(tl_ct_projector_forward(tl_ct_operator_projector(op), s, &all, dx, dproj, FALSE,
                                        &error));
  g_assert_true(tl_ct_operator_gather(op, s, dproj, dall, &error));
  set_diag(op, d);
  for (guint b = 0; b < S; b++) {
    g_autoptr(TlArray) vb = view(dsub, tl_operator_subset_first(op, b),
                                 tl_operator_subset_length(op, b));
    g_assert_true(tl_operator_forward(op, s, b, dx, vb, &error));
  }
  g_assert_no_error(error);
  finish(s);
  g_autofree float *yall = download(dall), *ysub = download(dsub);
  double max_err = 0, max_val = 0;
  for (guint64 i = 0; i < N; i++) {
    max_err = MAX(max_err, fabs((double)ysub[i] - (double)d[i] * yall[i]));
    max_val = MAX(max_val, fabs((double)yall[i]));
  }
  g_test_message("subset forwards vs D x gathered forward: max abs %.2e of max %.3g", max_err,
                 max_val);
  g_assert_cmpfloat(max_val, >, 0);
  g_assert_cmpfloat(max_err, <=, 1e-6 * max_val);
}

/* ---- CSR ---- */

/* A random m x n matrix as triplets in CSR order with shuffled and repeated columns, about
 * `density` of the entries set; row `empty_row` and column `empty_col` stay empty. The dense
 * double copy sums repeated entries (the reference every CSR test compares with). */
typedef struct {
  guint64 m, n, nnz;
  guint64 *row_ptr;
  guint32 *col;
  float *val;
  double *dense;
} Sparse;

static void sparse_free(Sparse *a) {
  g_free(a->row_ptr), g_free(a->col), g_free(a->val), g_free(a->dense);
}

static Sparse sparse_random(guint64 m, guint64 n, double density, guint64 empty_row,
                            guint64 empty_col) {
  Sparse a = {.m = m, .n = n, .row_ptr = g_new(guint64, m + 1), .dense = g_new0(double, m * n)};
  g_autoptr(GArray) col = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_autoptr(GArray) val = g_array_new(FALSE, FALSE, sizeof(float));
  a.row_ptr[0] = 0;
  for (guint64 i = 0; i < m; i++) {
    for (guint64 t = 0; t < n && i != empty_row; t++) {
      if (rnd() >= density) continue;
      /* reversed and sometimes repeated column order: the operator must not assume sorting */
      guint32 j = (guint32)(n - 1 - t);
      if (j == empty_col) continue;
      float v = 0.1f + rnd();
      g_array_append_val(col, j);
      g_array_append_val(val, v);
      a.dense[i * n + j] += v;
      if (rnd() < 0.1f) {
        float v2 = 0.5f * rnd();
        g_array_append_val(col, j);
        g_array_append_val(val, v2);
        a.dense[i * n + j] += v2;
      }
    }
    a.row_ptr[i + 1] = col->len;
  }
  a.nnz = col->len;
  a.col = (guint32 *)g_array_free(g_steal_pointer(&col), FALSE);
  a.val = (float *)g_array_free(g_steal_pointer(&val), FALSE);
  return a;
}

/* 30 voxels */
static TlImageGrid csr_grid(void) { return tl_image_grid_centred(5, 3, 2, 1.0f, 1.0f, 2.0f); }

static TlOperator *csr_op(const Sparse *a, guint S, const guint64 *lengths) {
  GError *error = NULL;
  TlImageGrid grid = csr_grid();
  TlOperator *op = tl_csr_operator_new(ctx, &grid, a->m, a->row_ptr, a->col, a->val, S, lengths,
                                       &error);
  g_assert_no_error(error);
  g_assert_nonnull(op);
  g_assert_cmpstr(tl_operator_name(op), ==, "csr");
  g_assert_cmpuint(tl_csr_operator_nnz(op), ==, a->nnz);
  return op;
}

/* Forward, adjoint (accumulating onto z) and sensitivity of every subset against the dense
 * products, with D when d != NULL. Tolerance: 1e-5 of the largest |value| of the product. */
static void check_products(TlOperator *op, const double *A, const float *d, const char *what) {
  GError *error = NULL;
  guint64 n = tl_operator_n_voxels(op);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  for (guint b = 0; b < tl_operator_n_subsets(op); b++) {
    guint64 r0 = tl_operator_subset_first(op, b), len = tl_operator_subset_length(op, b);
    g_autofree float *x = random_vec(n, -1, 1), *w = random_vec(len, -1, 1);
    g_autofree float *z = random_vec(n, -1, 1);
    g_autoptr(TlArray) dx = upload(x, n), dw = upload(w, len), dy = upload(NULL, len);
    g_autoptr(TlArray) dz = upload(z, n), dsens = upload(NULL, n);
    g_assert_true(tl_operator_forward(op, s, b, dx, dy, &error));
    g_assert_true(tl_operator_adjoint(op, s, b, dw, dz, &error));
    g_assert_true(tl_operator_sensitivity(op, s, b, dsens, &error));
    g_assert_no_error(error);
    finish(s);
    g_autofree float *y = download(dy), *az = download(dz), *sens = download(dsens);
    g_autofree double *ry = g_new0(double, len), *rz = g_new(double, n);
    g_autofree double *rs = g_new0(double, n);
    for (guint64 j = 0; j < n; j++) rz[j] = z[j];
    for (guint64 i = 0; i < len; i++) {
      double di = d ? d[r0 + i] : 1.0;
      for (guint64 j = 0; j < n; j++) {
        double mij = di * A[(r0 + i) * n + j];
        ry[i] += mij * x[j];
        rz[j] += mij * w[i];
        rs[j] += mij;
      }
    }
    double ey = 0, my = 0, ez = 0, mz = 0, es = 0, ms = 0;
    for (guint64 i = 0; i < len; i++) ey = MAX(ey, fabs(y[i] - ry[i])), my = MAX(my, fabs(ry[i]));
    for (guint64 j = 0; j < n; j++) {
      ez = MAX(ez, fabs(az[j] - rz[j])), mz = MAX(mz, fabs(rz[j]));
      es = MAX(es, fabs(sens[j] - rs[j])), ms = MAX(ms, fabs(rs[j]));
    }
    g_test_message("%s subset %u (rows %" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT "): forward "
                   "%.2e of %.3g, adjoint %.2e of %.3g, sensitivity %.2e of %.3g", what, b, r0,
                   len, ey, my, ez, mz, es, ms);
    g_assert_cmpfloat(my, >, 0);
    g_assert_cmpfloat(ms, >, 0);
    g_assert_cmpfloat(ey, <=, 1e-5 * my);
    g_assert_cmpfloat(ez, <=, 1e-5 * mz);
    g_assert_cmpfloat(es, <=, 1e-5 * ms);
  }
}

static void test_csr_products(void) {
  Sparse a = sparse_random(40, 30, 0.3, 17, 11);
  guint64 lengths[] = {7, 20, 13};
  struct { guint S; const guint64 *lengths; } cases[] = {{1, NULL}, {3, NULL}, {3, lengths}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autoptr(TlOperator) op = csr_op(&a, cases[c].S, cases[c].lengths);
    for (guint b = 0; b < cases[c].S; b++)
      g_assert_cmpuint(tl_operator_subset_length(op, b), ==,
                       cases[c].lengths ? cases[c].lengths[b]
                                        : (b + 1) * a.m / cases[c].S - b * a.m / cases[c].S);
    check_products(op, a.dense, NULL, tl_operator_label(op));
    check_adjoint(op, tl_operator_label(op));
    g_autofree float *d = random_vec(a.m, 0.25f, 2.0f);
    d[3] = 0; /* D may zero a datum */
    set_diag(op, d);
    g_autofree char *what = g_strdup_printf("%s with D", tl_operator_label(op));
    check_products(op, a.dense, d, what);
    check_adjoint(op, what);
  }
  sparse_free(&a);
}

/* tl_csr_operator_new_dense = the same matrix; and repeated adjoints agree to the bit. */
static void test_csr_dense(void) {
  GError *error = NULL;
  Sparse a = sparse_random(40, 30, 0.5, 0, 29);
  g_autofree float *dense = g_new(float, a.m * a.n);
  for (guint64 k = 0; k < a.m * a.n; k++) dense[k] = (float)a.dense[k];
  TlImageGrid grid = csr_grid();
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, a.m, dense, 4, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_operator_n_subsets(op), ==, 4);
  g_assert_cmpuint(tl_operator_n_data(op), ==, 40);
  guint64 nz = 0;
  for (guint64 k = 0; k < a.m * a.n; k++) nz += dense[k] != 0;
  g_assert_cmpuint(tl_csr_operator_nnz(op), ==, nz);
  check_products(op, a.dense, NULL, "dense");

  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  guint64 len = tl_operator_subset_length(op, 2);
  g_autofree float *w = random_vec(len, -1, 1);
  g_autoptr(TlArray) dw = upload(w, len), x1 = upload(NULL, a.n), x2 = upload(NULL, a.n);
  g_assert_true(tl_stream_zero(s, x1, &error) && tl_stream_zero(s, x2, &error));
  g_assert_true(tl_operator_adjoint(op, s, 2, dw, x1, &error));
  g_assert_true(tl_operator_adjoint(op, s, 2, dw, x2, &error));
  g_assert_no_error(error);
  finish(s);
  g_autofree float *h1 = download(x1), *h2 = download(x2);
  g_assert_cmpmem(h1, a.n * 4, h2, a.n * 4);
  sparse_free(&a);
}

static void expect_error(TlOperator *op, GError *error, const char *part) {
  g_assert_null(op);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("expected: %s", error->message);
  g_assert_nonnull(strstr(error->message, part));
  g_error_free(error);
}

static void test_bad_inputs(void) {
  TlImageGrid grid = csr_grid();
  Sparse a = sparse_random(12, 30, 0.4, 99, 99);
  GError *error = NULL;
  TlOperator *op;
  g_assert_cmpuint(a.row_ptr[4], <, a.row_ptr[5]);
  guint64 k = a.row_ptr[4]; /* first entry of row 4 */

  guint32 c = a.col[k];
  a.col[k] = 30;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 1, NULL, &error);
  g_autofree char *where = g_strdup_printf("entry %" G_GUINT64_FORMAT " (row 4,", k);
  expect_error(op, error, where), error = NULL;
  a.col[k] = c;

  float v = a.val[k];
  a.val[k] = NAN;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 1, NULL, &error);
  expect_error(op, error, "row 4,"), error = NULL;
  a.val[k] = INFINITY;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 1, NULL, &error);
  expect_error(op, error, "not finite"), error = NULL;
  a.val[k] = v;

  guint64 r = a.row_ptr[6];
  a.row_ptr[6] = a.row_ptr[5] - 1;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 1, NULL, &error);
  expect_error(op, error, "row 5 ends"), error = NULL;
  a.row_ptr[6] = r;
  a.row_ptr[0] = 1;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 1, NULL, &error);
  expect_error(op, error, "row_ptr[0] = 1"), error = NULL;
  a.row_ptr[0] = 0;

  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 0, NULL, &error);
  expect_error(op, error, "0 subsets"), error = NULL;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 13, NULL, &error);
  expect_error(op, error, "13 subsets"), error = NULL;
  guint64 bad_sum[] = {5, 6}, zero[] = {12, 0};
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 2, bad_sum, &error);
  expect_error(op, error, "add up to 11"), error = NULL;
  op = tl_csr_operator_new(ctx, &grid, a.m, a.row_ptr, a.col, a.val, 2, zero, &error);
  expect_error(op, error, "subset 1 has no rows"), error = NULL;

  /* the valid matrix: wrong lengths in calls fail in the base with the subset named */
  g_autoptr(TlOperator) good = csr_op(&a, 2, NULL);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) x = upload(NULL, 30), y = upload(NULL, 7);
  g_assert_false(tl_operator_forward(good, s, 1, x, y, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_operator_adjoint(good, s, 2, y, x, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  finish(s);
  sparse_free(&a);

  /* CT: no forward for voxel, subsets outside 1 .. views, wrong arrays for gather/scatter */
  g_autoptr(TlCtGeometry) g = ct_geometry(6);
  TlImageGrid cg = ct_grid();
  op = tl_ct_operator_new(ctx, g, &cg, TL_CT_VOXEL, 1, &error);
  expect_error(op, error, "voxel"), error = NULL;
  op = tl_ct_operator_new(ctx, g, &cg, TL_CT_SIDDON, 0, &error);
  expect_error(op, error, "0 subsets of 6 views"), error = NULL;
  op = tl_ct_operator_new(ctx, g, &cg, TL_CT_SIDDON, 7, &error);
  expect_error(op, error, "7 subsets of 6 views"), error = NULL;
  g_autoptr(TlOperator) ct = ct_op(g, TL_CT_SIDDON, 2);
  guint64 N = tl_operator_n_data(ct);
  g_autoptr(TlArray) big = upload(NULL, 2 * N), short_ = upload(NULL, N - 1), ok = upload(NULL, N);
  g_assert_false(tl_ct_operator_gather(ct, s, short_, ok, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "projection array"));
  g_clear_error(&error);
  g_assert_false(tl_ct_operator_scatter(ct, s, ok, short_, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "projection array"));
  g_clear_error(&error);
  g_autoptr(TlArray) v1 = view(big, 0, N), v2 = view(big, N / 2, N);
  g_assert_false(tl_ct_operator_gather(ct, s, v1, v2, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "overlap"));
  g_clear_error(&error);
  g_assert_false(tl_ct_operator_gather(good, s, ok, ok, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  finish(s);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/recon/operator/ct/adjoint/joseph", GINT_TO_POINTER(TL_CT_JOSEPH),
                       test_ct_adjoint);
  g_test_add_data_func("/recon/operator/ct/adjoint/siddon", GINT_TO_POINTER(TL_CT_SIDDON),
                       test_ct_adjoint);
  g_test_add_data_func("/recon/operator/ct/adjoint/raycast", GINT_TO_POINTER(TL_CT_RAYCAST),
                       test_ct_adjoint);
  g_test_add_func("/recon/operator/ct/data-order", test_ct_data_order);
  g_test_add_func("/recon/operator/csr/products", test_csr_products);
  g_test_add_func("/recon/operator/csr/dense", test_csr_dense);
  g_test_add_func("/recon/operator/bad-inputs", test_bad_inputs);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
