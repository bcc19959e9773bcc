/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Every algorithm x operator pair the registry offers (compute/tl-registry.h), on a tiny
 * instance of each operator class, against the double-precision references of recon-ref.c on
 * that operator's explicit matrix: the matrix is read off the device operator column by
 * column (forward projection of each unit image, per subset), the device solver runs 5
 * iterations on the operator itself, recon-ref 5 iterations on the matrix, and the images
 * must agree within 1e-5 relative (max abs difference / max abs value).
 *
 * PET data are the operator's own counts; its sensitivity (every detectable pair of a subset,
 * not only the recorded ones) is the operator's, given to the reference as its column sums
 * (its correctness is test-pet-operator's). CT and CSR data are M x_true. Emission
 * algorithms start from 1, least squares from 0; osl / bsrem use the quadratic prior
 * (beta 0.05). A pair the registry does not offer (tl_algorithm_applies, list mode with an
 * algorithm needing a data vector) must be refused by tl_solver_new. */
#include <math.h>
#include <string.h>
#include "ct/tl-ct-operator.h"
#include "pet-fixture.h"
#include "pet/tl-pet-operator.h"
#include "pet/srm/tl-srm-operator.h"
#include "recon-ref.h"
#include "recon/tl-csr-operator.h"
#include "tl-registry.h"
#include "tl-test-common.h"

static TlContext *ctx;
/* pet-srm: the matrix outlives its operators; freed at the end */
static TlScanner *srm_scanner;
static TlSrm *srm_matrix;
enum { ITERATIONS = 5 };
#define BETA 0.05

typedef struct {
  const char *klass;
  guint subsets;
  TlOperator *op;
  TlListmode *lm;      /* PET */
  TlCtGeometry *geom;  /* CT */
  TlArray *data;       /* CT / CSR: y in data order; PET: NULL (the operator's counts) */
  double *M, *y;       /* explicit matrix (m x n) and data, for the reference */
  guint64 m, n;
} Instance;

static guint32 rng = 0x2545f491u;
static double rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
  return (rng >> 8) * 0x1p-24;
}

static TlListmode *pet_events(void) {
  TlScanner *s = fx_ring_scanner(2, 6, 3, 4.0f, 20.0f, 4.0f, 1);
  guint nc = s->n_crystals;
  TlListmode *lm = tl_listmode_new(s, 300);
  for (guint64 e = 0; e < lm->n_events;) {
    guint a = (guint)(rnd() * nc) % nc, b = (guint)(rnd() * nc) % nc;
    if (a == b || !fx_pair_allowed(s, a, b)) continue;
    lm->events[e++] = (TlEvent){a, b, 0};
  }
  return lm;
}

static TlImageGrid pet_grid(void) { return tl_image_grid_centred(5, 5, 2, 4.0f, 4.0f, 4.0f); }
static TlImageGrid ct_grid(void) { return tl_image_grid_centred(6, 5, 3, 1.5f, 1.6f, 1.8f); }

/* The operator's explicit matrix, rows in data order: forward of each unit image. */
static void read_matrix(Instance *in) {
  GError *error = NULL;
  in->m = tl_operator_n_data(in->op);
  in->n = tl_operator_n_voxels(in->op);
  in->M = g_new0(double, in->m * in->n);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, in->n, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, in->m, &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_autofree float *e = g_new0(float, in->n), *col = g_new(float, in->m);
  for (guint64 j = 0; j < in->n; j++) {
    e[j] = 1;
    g_assert_true(tl_array_upload(x, e, &error));
    e[j] = 0;
    for (guint s = 0; s < in->subsets; s++) {
      g_autoptr(TlArray) v = tl_array_new_view(y, tl_operator_subset_first(in->op, s),
                                               tl_operator_subset_length(in->op, s), &error);
      g_assert_true(tl_operator_forward(in->op, st, s, x, v, &error));
    }
    g_assert_true(tl_stream_finish(st, &error) && tl_array_download(y, col, &error));
    g_assert_no_error(error);
    for (guint64 i = 0; i < in->m; i++) in->M[i * in->n + j] = col[i];
  }
}

static Instance *instance_new(const char *klass, guint subsets) {
  GError *error = NULL;
  Instance *in = g_new0(Instance, 1);
  in->klass = klass;
  in->subsets = subsets;
  if (g_str_equal(klass, "pet-srm")) {
    /* 3 x 2 crystals per head; data like CT / CSR below (M x_true) */
    if (!srm_matrix) {
      TlScannerLayout l = {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {3, 2},
                           .head_pitch_mm = {2.4, 2.4}, .head_distance_mm = 12.0};
      srm_scanner = tl_scanner_new_from_layout("tiny", &l, NULL, &error);
      g_assert_no_error(error);
      TlImageGrid g = tl_image_grid_centred(3, 3, 2, 3.0f, 2.4f, 2.4f); /* 36 x 18 */
      srm_matrix = tl_srm_new(srm_scanner, &g, NULL, &error);
      g_assert_no_error(error);
    }
    in->op = tl_srm_operator_new(ctx, srm_matrix, srm_scanner, NULL, 0, subsets, &error);
    g_assert_no_error(error);
    /* detection probabilities are ~1e-3: a factor D = 1000 (a normalisation) brings the
     * matrix to the other instances' scale, where beta = 0.05 is a mild prior (at D = 100 the
     * OSL denominators come near 0 and float / double differ by 1e-4) */
    guint64 nd = tl_operator_n_data(in->op);
    g_autofree float *d = g_new(float, nd);
    for (guint64 i = 0; i < nd; i++) d[i] = 1000.0f;
    g_autoptr(TlArray) da = tl_array_new_float(ctx, nd, &error);
    g_assert_true(da && tl_array_upload(da, d, &error));
    g_assert_true(tl_operator_set_diag(in->op, da, FALSE, &error));
  } else if (g_str_has_prefix(klass, "pet-")) {
    in->lm = pet_events();
    TlImageGrid g = pet_grid();
    TlPetOperatorOptions o;
    tl_pet_operator_options_init(&o);
    o.subsets = subsets;
    o.use_cache = FALSE;
    if (g_str_equal(klass, "pet-listmode")) {
      in->op = tl_pet_operator_new_listmode(ctx, in->lm, &g, &o, &error);
    } else {
      g_autoptr(GArray) bins = tl_listmode_histogram(in->lm);
      in->op = tl_pet_operator_new_binned(ctx, in->lm->scanner, (TlBin *)bins->data, bins->len,
                                          &g, &o, &error);
    }
  } else if (g_str_equal(klass, "ct")) {
    TlCtOrbit o;
    tl_ct_orbit_init_cone(&o, 6, 60, 100, 12, 8, 1.6, 1.6);
    o.start_deg = 7;
    in->geom = tl_ct_geometry_new_orbit(&o, &error);
    g_assert_no_error(error);
    TlImageGrid g = ct_grid();
    in->op = tl_ct_operator_new(ctx, in->geom, &g, TL_CT_JOSEPH, subsets, &error);
  } else if (g_str_equal(klass, "csr")) {
    enum { M = 36, N = 24 };
    float A[M * N];
    for (int i = 0; i < M * N; i++) A[i] = rnd() < 0.4 ? (float)(0.2 + rnd()) : 0.0f;
    /* every row and column hit; one strong entry per row keeps float CGLS near the double
     * reference (as in test-recon-algorithms) */
    for (int i = 0; i < M; i++) A[i * N + i % N] += 8.0f;
    TlImageGrid g = tl_image_grid_centred(4, 3, 2, 1, 1, 1);
    in->op = tl_csr_operator_new_dense(ctx, &g, M, A, subsets, &error);
  } else {
    g_error("test-recon-registry: no tiny instance of operator class '%s': add one", klass);
  }
  g_assert_no_error(error);
  g_assert_nonnull(in->op);
  read_matrix(in);
  in->y = g_new(double, in->m);
  if (in->lm) {
    g_autoptr(TlArray) c = tl_array_new_float(ctx, in->m, &error);
    g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
    g_autofree float *h = g_new(float, in->m);
    g_assert_true(tl_operator_counts(in->op, st, c, &error) && tl_stream_finish(st, &error) &&
                  tl_array_download(c, h, &error));
    for (guint64 i = 0; i < in->m; i++) in->y[i] = h[i];
  } else {
    g_autofree double *xt = g_new(double, in->n);
    g_autofree float *h = g_new(float, in->m);
    for (guint64 j = 0; j < in->n; j++) xt[j] = 0.5 + 2 * rnd();
    for (guint64 i = 0; i < in->m; i++) {
      double v = 0;
      for (guint64 j = 0; j < in->n; j++) v += in->M[i * in->n + j] * xt[j];
      h[i] = (float)(v * (0.9 + 0.2 * rnd()) + 0.05); /* inconsistent, positive data */
      in->y[i] = h[i];
    }
    in->data = tl_array_new_float(ctx, in->m, &error);
    g_assert_true(tl_array_upload(in->data, h, &error));
  }
  g_assert_no_error(error);
  return in;
}

static void instance_free(Instance *in) {
  tl_operator_free(in->op);
  tl_array_free(in->data);
  tl_listmode_free(in->lm);
  tl_ct_geometry_free(in->geom);
  g_free(in->M);
  g_free(in->y);
  g_free(in);
}

static double *download_d(const TlArray *a, guint64 n) {
  GError *error = NULL;
  g_autofree float *h = g_new(float, n);
  g_assert_true(tl_array_download(a, h, &error));
  double *d = g_new(double, n);
  for (guint64 i = 0; i < n; i++) d[i] = h[i];
  return d;
}

typedef struct {
  const char *klass, *algorithm;
} Pair;

static void run_pair(gconstpointer data) {
  const Pair *pair = data;
  GError *error = NULL;
  const TlAlgorithmClass *k = tl_registry_algorithm(pair->algorithm, &error);
  g_assert_no_error(error);
  guint flags = tl_algorithm_flags(k);
  guint S = (flags & TL_ALGO_SUBSETS) ? 2 : 1;
  Instance *in = instance_new(pair->klass, S);
  gboolean emission = (flags & TL_ALGO_EMISSION) != 0;
  TlSolverOptions o;
  tl_solver_options_init(&o);
  o.iterations = ITERATIONS;
  o.objective = TL_OBJECTIVE_NEVER;
  if (flags & TL_ALGO_PRIOR) {
    o.prior = "quadratic";
    o.beta = BETA;
    o.beta_absolute = TRUE; /* the references take beta as it is */
  }
  TlProblem pb = {.op = in->op, .data = in->data};
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, pair->algorithm, &pb, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) x0 = tl_image_new(tl_operator_grid(in->op));
  for (guint64 j = 0; j < in->n; j++) x0->data[j] = emission ? 1.0f : 0.0f;
  g_assert_true(tl_solver_set_image(sv, x0, &error));
  g_assert_true(tl_solver_run(sv, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) got = tl_solver_image(sv, &error);

  g_autofree guint64 *first = g_new(guint64, S + 1);
  for (guint s = 0; s <= S; s++)
    first[s] = s < S ? tl_operator_subset_first(in->op, s) : in->m;
  /* PET: the operator's own column sums over every detectable pair */
  double **sens = NULL;
  if (emission && in->lm) {
    sens = g_new0(double *, S);
    for (guint s = 0; s < S; s++) sens[s] = download_d(tl_solver_sensitivity(sv, s), in->n);
  }
  ReconRefProblem p = {.m = in->m, .n = in->n, .A = in->M, .S = S, .first = first,
                       .y = in->y, .sens = (const double *const *)sens};
  const TlImageGrid *g = tl_operator_grid(in->op);
  ReconRefGrid rg = {.dims = {g->dims[0], g->dims[1], g->dims[2]},
                     .voxel = {g->voxel_mm[0], g->voxel_mm[1], g->voxel_mm[2]}};
  g_autofree double *x = g_new(double, in->n);
  for (guint64 j = 0; j < in->n; j++) x[j] = emission ? 1.0 : 0.0;
  ReconRefPrior qp = {.beta = BETA, .grad = recon_ref_quadratic_grad,
                      .hess = recon_ref_quadratic_hess, .value = recon_ref_quadratic_value_cb,
                      .user = &rg};
  const char *a = tl_algorithm_name(k);
  if (g_str_equal(a, "mlem") || g_str_equal(a, "osem")) recon_ref_osem(&p, ITERATIONS, x);
  else if (g_str_equal(a, "osl"))
    recon_ref_osl(&p, BETA, recon_ref_quadratic_grad, &rg, ITERATIONS, x);
  else if (g_str_equal(a, "bsrem"))
    recon_ref_bsrem(&p, 1.0, BETA, recon_ref_quadratic_grad, &rg, 1e-6, 1e30, ITERATIONS, x);
  else if (g_str_equal(a, "sirt") || g_str_equal(a, "os-sart"))
    recon_ref_sart(&p, 1.0, FALSE, ITERATIONS, x);
  else if (g_str_equal(a, "cgls")) recon_ref_cgls(&p, FALSE, ITERATIONS, x);
  else if (g_str_equal(a, "svrg")) recon_ref_svrg(&p, &qp, 1.0, 1, ITERATIONS, x);
  else if (g_str_equal(a, "saga")) recon_ref_saga(&p, &qp, 1.0, 1, ITERATIONS, x);
  else if (g_str_equal(a, "pkma")) recon_ref_pkma(&p, &qp, 1.0, ITERATIONS, x);
  else if (g_str_equal(a, "lbfgsb")) recon_ref_lbfgsb(&p, &qp, ITERATIONS, x);
  else if (g_str_equal(a, "ab-emml")) recon_ref_abemml(&p, ITERATIONS, x);
  else g_error("test-recon-registry: no reference for algorithm '%s': add one", a);
  double dmax = 0, xmax = 0;
  for (guint64 j = 0; j < in->n; j++) {
    dmax = MAX(dmax, fabs(got->data[j] - x[j]));
    xmax = MAX(xmax, fabs(x[j]));
  }
  g_test_message("%s x %s, %u subsets, %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                 ": max difference %.3g of %.4g (%.3g)", pair->algorithm, pair->klass, S, in->m,
                 in->n, dmax, xmax, dmax / xmax);
  g_assert_cmpfloat(xmax, >, 0);
  g_assert_cmpfloat(dmax / xmax, <=, 1e-5);
  for (guint s = 0; sens && s < S; s++) g_free(sens[s]);
  g_free(sens);
  instance_free(in);
}

/* List mode has no data vector: the least-squares algorithms are not offered and refused. */
static void test_refused(gconstpointer data) {
  const Pair *pair = data;
  GError *error = NULL;
  Instance *in = instance_new(pair->klass, 1);
  TlProblem pb = {.op = in->op};
  g_assert_null(tl_solver_new(ctx, pair->algorithm, &pb, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  instance_free(in);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  const TlOperatorClass *const *ops = tl_registry_operators();
  const TlAlgorithmClass *const *algs = tl_registry_algorithms();
  GPtrArray *pairs = g_ptr_array_new_with_free_func(g_free);
  guint offered = 0;
  for (guint i = 0; ops[i]; i++)
    for (guint j = 0; algs[j]; j++) {
      Pair *p = g_new(Pair, 1);
      *p = (Pair){ops[i]->name, tl_algorithm_name(algs[j])};
      g_ptr_array_add(pairs, p);
      gboolean lm = (ops[i]->flags & TL_OPERATOR_LISTMODE) != 0;
      gboolean ok = !(lm && (tl_algorithm_flags(algs[j]) & TL_ALGO_NEEDS_DATA));
      g_autofree char *path = g_strdup_printf("/recon/registry/%s/%s%s", p->klass, p->algorithm,
                                              ok ? "" : "-refused");
      g_test_add_data_func(path, p, ok ? run_pair : test_refused);
      offered += ok;
    }
  /* every class and every algorithm has a case: a registry line without one fails here */
  g_assert_cmpuint(pairs->len, >=, 4 * 7);
  g_assert_cmpuint(offered, >, 0);
  int rc = g_test_run();
  g_ptr_array_unref(pairs);
  tl_srm_free(srm_matrix);
  tl_scanner_free(srm_scanner);
  tl_test_context_done(ctx);
  return rc;
}
