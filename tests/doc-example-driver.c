/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The worked examples of docs/architecture.md ("Adding an operator or an algorithm"), compiled
 * as the doc shows them (tests/doc-example-extract.py writes each block to a file of the build
 * folder) and run:
 *   algorithm: the Landweber step on a small dense CSR operator lowers ||y - A x|| at every
 *              step (lambda = 1 / ||A||_F^2 < 2 / sigma_max^2: the iteration contracts), and its
 *              first step equals x1 = lambda A^T y computed here in double;
 *   projector: the Siddon-with-float-sensitivity class projects like Siddon, to the bit, on a
 *              few LORs (same kernels, same tracer constant), its back projection is the
 *              adjoint of its forward (<A x, w> = <x, A^T w> in double), and it never walks
 *              the sensitivity in double;
 *   registries: each doc block repeats its library's list (tl_recon_algorithms,
 *              tl_projector_classes) in order and appends the example's class, so the doc's
 *              "one line" is the line the code has.
 * No registry takes a class at run time: the driver hands the classes over itself. */
#include <math.h>
#include <string.h>
#include "pet/project/tl-projector-ray.h"
#include "recon/tl-csr-operator.h"
#include "recon/tl-recon-registry.h"
#include "recon/tl-solver-private.h"
#include "tl-test-common.h"

/* The doc's registry blocks (their classes[] / algorithms[] arrays). */
extern const TlAlgorithmClass tl_algo_landweber;
#include "doc-example-algorithm-registry.h"
#include "doc-example-projector-registry.h"

static TlContext *ctx;

static guint32 rng_state = 0x2545f491u;
static double rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (rng_state >> 8) * 0x1p-24;
}

static TlArray *upload(const void *v, guint64 n, gsize size) {
  GError *error = NULL;
  TlArray *a = tl_array_new(ctx, n, size, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(a, v, &error));
  g_assert_no_error(error);
  return a;
}

enum { M = 24, NX = 4, NY = 3, NZ = 2, N = NX * NY * NZ, STEPS = 6 };

static double residual(const float *A, const float *y, const float *x) {
  double r2 = 0;
  for (int i = 0; i < M; i++) {
    double ax = 0;
    for (int j = 0; j < N; j++) ax += (double)A[i * N + j] * x[j];
    r2 += (y[i] - ax) * (y[i] - ax);
  }
  return sqrt(r2);
}

static void test_algorithm(void) {
  GError *error = NULL;
  static float A[M * N], y[M];
  double fro2 = 0;
  for (int i = 0; i < M * N; i++) {
    A[i] = rnd() < 0.4 ? (float)(0.1 + rnd()) : 0.0f;
    fro2 += (double)A[i] * A[i];
  }
  for (int i = 0; i < M; i++) y[i] = (float)(1 + 4 * rnd());

  /* found through the doc's registry block, by name, as tl_recon_find_algorithm does */
  const TlAlgorithmClass *klass = NULL;
  for (const TlAlgorithmClass *const *k = algorithms; *k; k++)
    if (!strcmp((*k)->name, "landweber")) klass = *k;
  g_assert_true(klass == &tl_algo_landweber);

  TlImageGrid grid = tl_image_grid_centred(NX, NY, NZ, 1.0f, 1.0f, 1.0f);
  g_autoptr(TlOperator) op = tl_csr_operator_new_dense(ctx, &grid, M, A, 1, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) dy = upload(y, M, sizeof(float));
  TlProblem problem = {.op = op, .data = dy};
  TlSolverOptions opt;
  tl_solver_options_init(&opt);
  opt.objective = TL_OBJECTIVE_NEVER;
  opt.relaxation = (float)(1.0 / fro2);
  g_autoptr(TlSolver) sv = tl_solver_new_class(ctx, klass, &problem, &opt, &error);
  g_assert_no_error(error);

  float x[N] = {0};
  double before = residual(A, y, x);
  for (int s = 0; s < STEPS; s++) {
    g_assert_true(tl_solver_step(sv, &error));
    g_assert_no_error(error);
    g_assert_true(tl_array_download(tl_solver_image_array(sv), x, &error));
    g_assert_no_error(error);
    if (s == 0) { /* from x0 = 0: x1 = lambda A^T y */
      for (int j = 0; j < N; j++) {
        double ref = 0;
        for (int i = 0; i < M; i++) ref += (double)A[i * N + j] * y[i];
        ref *= opt.relaxation;
        g_assert_cmpfloat(fabs(x[j] - ref), <=, 1e-5 * fabs(ref) + 1e-7);
      }
    }
    double after = residual(A, y, x);
    g_test_message("Landweber step %d: ||y - A x|| %.6g -> %.6g", s + 1, before, after);
    g_assert_cmpfloat(after, <, before);
    before = after;
  }
}

/* Each library list is its doc block's list without the block's last entry, the example. */
static void test_registries(void) {
  const TlAlgorithmClass *const *lib_a = tl_recon_algorithms();
  gsize n = 0;
  for (; lib_a[n]; n++) { /* names first: a failure says which line differs */
    g_assert_cmpstr(algorithms[n] ? algorithms[n]->name : "(end)", ==, lib_a[n]->name);
    g_assert_true(algorithms[n] == lib_a[n]);
  }
  g_assert_true(algorithms[n] == &tl_algo_landweber && algorithms[n + 1] == NULL);

  const TlProjectorClass *const *lib_p = tl_projector_classes();
  for (n = 0; lib_p[n]; n++) {
    g_assert_cmpuint(n, <, G_N_ELEMENTS(classes));
    g_assert_cmpstr(classes[n]->name, ==, lib_p[n]->name);
    g_assert_true(classes[n] == lib_p[n]);
  }
  g_assert_cmpuint(n + 1, ==, G_N_ELEMENTS(classes));
  g_assert_true(classes[n] == &tl_siddon_float_class);
}

/* What tl_projector_new_with does once it has found the class. */
static TlProjector *projector_of_class(const TlProjectorClass *klass, const TlImageGrid *grid) {
  GError *error = NULL;
  TlProjector *p = g_new0(TlProjector, 1);
  p->klass = klass;
  p->ctx = ctx;
  p->grid = *grid;
  p->scatter = TL_SCATTER_AUTO;
  p->params = (TlProjectorParams){.tor_fwhm_mm = TL_TOR_FWHM_DEFAULT};
  g_assert_true(klass->init(p, &error));
  g_assert_no_error(error);
  return p;
}

enum { LORS = 12 };

/* y = A x and z = A^T w. */
static void project(TlProjector *p, TlArray *records, const float *x, const float *w, float *y,
                    float *z) {
  GError *error = NULL;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(p));
  TlLors lors = {.kind = TL_LORS_END_POINTS, .records = records, .count = LORS};
  g_autoptr(TlArray) dx = upload(x, nv, sizeof(float));
  g_autoptr(TlArray) dw = upload(w, LORS, sizeof(float));
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, LORS, &error);
  g_autoptr(TlArray) dz = tl_array_new_float(ctx, nv, &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_stream_zero(s, dz, &error) &&
                tl_projector_forward(p, s, &lors, dx, dy, &error) &&
                tl_projector_back(p, s, &lors, dw, dz, &error) && tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_assert_true(tl_array_download(dy, y, &error) && tl_array_download(dz, z, &error));
  g_assert_no_error(error);
}

static void test_projector(void) {
  const TlProjectorClass *klass = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(classes); i++)
    if (!strcmp(classes[i]->name, "siddon-float")) klass = classes[i];
  g_assert_nonnull(klass);

  enum { GX = 8, GY = 7, GZ = 5, NV = GX * GY * GZ };
  TlImageGrid grid = tl_image_grid_centred(GX, GY, GZ, 2.0f, 2.0f, 3.0f);
  /* LORs through the grid: end points on a sphere of radius 40 mm around it, random
   * directions, offset up to 4 mm from the centre */
  float ends[LORS][6];
  for (int l = 0; l < LORS; l++) {
    double u[3], c[3], norm = 0;
    for (int k = 0; k < 3; k++) u[k] = rnd() - 0.5, norm += u[k] * u[k], c[k] = 8 * (rnd() - 0.5);
    for (int k = 0; k < 3; k++) {
      ends[l][k] = (float)(c[k] - 40 * u[k] / sqrt(norm));
      ends[l][3 + k] = (float)(c[k] + 40 * u[k] / sqrt(norm));
    }
  }
  static float x[NV], w[LORS];
  for (int j = 0; j < NV; j++) x[j] = (float)rnd();
  for (int l = 0; l < LORS; l++) w[l] = (float)(0.5 + rnd());
  g_autoptr(TlArray) records = upload(ends, LORS, 24);

  GError *error = NULL;
  g_autoptr(TlProjector) mine = projector_of_class(klass, &grid);
  g_autoptr(TlProjector) siddon = tl_projector_new(ctx, "siddon", &grid, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(tl_projector_name(mine), ==, "siddon-float");
  g_assert_false(tl_projector_sensitivity_in_double(mine));

  static float y1[LORS], y2[LORS], z1[NV], z2[NV];
  project(mine, records, x, w, y1, z1);
  project(siddon, records, x, w, y2, z2);
  double yw = 0, xz = 0, total = 0;
  for (int l = 0; l < LORS; l++) {
    g_assert_cmpfloat(y1[l], ==, y2[l]);
    yw += (double)y1[l] * w[l];
    total += y1[l];
  }
  /* every LOR crosses the grid: the test is not about zeros */
  for (int l = 0; l < LORS; l++) g_assert_cmpfloat(y1[l], >, 0);
  for (int j = 0; j < NV; j++) {
    g_assert_cmpfloat(z1[j], ==, z2[j]);
    xz += (double)x[j] * z1[j];
  }
  g_test_message("siddon-float: sum of A x %.6g, <Ax, w> %.9g, <x, A^T w> %.9g", total, yw, xz);
  g_assert_cmpfloat(fabs(yw - xz), <=, 1e-5 * fabs(yw));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/doc-example/registries", test_registries);
  g_test_add_func("/doc-example/algorithm", test_algorithm);
  g_test_add_func("/doc-example/projector", test_projector);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
