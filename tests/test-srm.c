/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The dual-head system response matrix stored by symmetry (pet/tl-srm.h) and its operator
 * (pet/tl-srm-operator.h):
 *  - every element of the full matrix, built here pair by pair and voxel by voxel from the
 *    crystal table in absolute coordinates (no symmetry), equals the element the symmetric
 *    index mapping finds, on reduced scanners with and without the y-z interchange;
 *  - the device forward equals the full matrix times an image, and forward/back are adjoint;
 *  - the response summed over all LORs is the detection probability of a point: with
 *    opaque crystals against the Monte-Carlo simulator (photons detected on the faces), with
 *    LYSO against a plain Monte-Carlo of the two slabs written here;
 *  - the cache file round-trips and damaged files are refused. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "tl-test-common.h"
#include "pet/srm/tl-srm.h"
#include "pet/srm/tl-srm-operator.h"
#include "pet/simulate/tl-simulate.h"
#include "pet/project/tl-projector.h"

static TlScanner *reduced(guint nu, guint nv, double py, double pz, double gap) {
  TlScannerLayout l = {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {nu, nv},
                       .head_pitch_mm = {py, pz}, .head_distance_mm = gap};
  GError *error = NULL;
  TlScanner *s = tl_scanner_new_from_layout("reduced", &l, NULL, &error);
  g_assert_no_error(error);
  return s;
}

typedef struct {
  guint nu, nv, D, nx;
  double py, pz;
} Case;

/* Dense full matrix, rows = (a, b) for a in head 0, b in head 1 (a * per + b - per). */
static double *full_matrix(const TlScanner *s, const TlImageGrid *g, const TlSrmParams *prm) {
  guint per = s->n_crystals / 2;
  guint64 nvox = tl_image_grid_n_voxels(g);
  double *h = g_new0(double, (guint64)per * per * nvox);
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++)
      for (guint64 v = 0; v < nvox; v++) {
        double p[3];
        tl_image_grid_voxel_centre(g, v % g->dims[0], v / g->dims[0] % g->dims[1],
                                   v / ((guint64)g->dims[0] * g->dims[1]), p);
        h[((guint64)a * per + b - per) * nvox + v] = tl_srm_point_response(s, prm, a, b, p);
      }
  return h;
}

static void check_case(const Case *c) {
  g_autoptr(TlScanner) s = reduced(c->nu, c->nv, c->py, c->pz, 16.0);
  TlImageGrid g = tl_image_grid_centred(c->nx, c->nu * c->D + 2, c->nv * c->D + 2, 1.8f,
                                        (float)(c->py / c->D), (float)(c->pz / c->D));
  TlSrmParams prm;
  tl_srm_params_init(&prm);
  prm.samples = 4;
  prm.threshold = 0; /* every nonzero kept, so "equal" means every element */
  GError *error = NULL;
  g_autoptr(TlSrm) m = tl_srm_new(s, &g, &prm, &error);
  g_assert_no_error(error);
  g_autofree double *h = full_matrix(s, &g, &prm);
  guint per = s->n_crystals / 2;
  guint64 nvox = tl_image_grid_n_voxels(&g), nnz = 0, n = (guint64)per * per * nvox;
  double hmax = 0, worst = 0;
  for (guint64 i = 0; i < n; i++) hmax = MAX(hmax, h[i]);
  g_assert_cmpfloat(hmax, >, 0);
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++)
      for (guint64 v = 0; v < nvox; v++) {
        double ref = h[((guint64)a * per + b - per) * nvox + v];
        double got = tl_srm_element(m, a, b, v);
        g_assert_cmpfloat(tl_srm_element(m, b, a, v), ==, got); /* either order */
        if (ref > 1e-6 * hmax) nnz++;
        double err = fabs(got - ref) / hmax;
        worst = MAX(worst, err);
        if (err > 1e-5)
          g_error("pair (%u, %u) voxel %" G_GUINT64_FORMAT ": stored %.9g, full %.9g", a, b, v,
                  got, ref);
      }
  TlSrmSizes sz;
  tl_srm_sizes(m, TRUE, &sz);
  TlSrmTables t;
  tl_srm_tables(m, &t);
  g_test_message("%u x %u heads, D %u, %u planes: %u classes (interchange %d), %" G_GUINT64_FORMAT
                 " stored of %" G_GUINT64_FORMAT " full nonzeros, worst difference %.2g of the "
                 "largest", c->nu, c->nv, c->D, c->nx, sz.n_classes, t.interchange, sz.stored,
                 nnz, worst);
  /* the symmetric form is much smaller than the full matrix it reproduces */
  g_assert_cmpuint(sz.stored * 4, <, sz.full_nnz);
  g_assert_cmpint(t.interchange, ==, c->py == c->pz);
  g_assert_cmpuint(sz.full_nnz, >=, nnz);
}

static void test_symmetric_equals_full(void) {
  /* interchange (equal pitch), more crystals along y; along z (classes v > du_max kept
   * unswapped); no interchange (pitch differs); odd and even plane counts */
  /* (the interchange flag is asserted through the class counts below) */
  static const Case cases[] = {
      {6, 4, 2, 7, 2.4, 2.4}, {3, 5, 2, 6, 2.4, 2.4}, {5, 3, 1, 5, 2.4, 2.0}};
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) check_case(&cases[i]);
}

/* The device operator: forward = full matrix x image (every datum, in its data order), and
 * <A x, w> = <x, A^T w> per subset. */
static void test_operator(void) {
  TlContext *ctx = tl_test_context();
  g_autoptr(TlScanner) s = reduced(5, 4, 2.4, 2.4, 16.0);
  TlImageGrid g = tl_image_grid_centred(7, 11, 9, 1.8f, 1.2f, 1.2f); /* y-z interchange on */
  TlSrmParams prm;
  tl_srm_params_init(&prm);
  prm.samples = 4;
  prm.threshold = 0;
  GError *error = NULL;
  g_autoptr(TlSrm) m = tl_srm_new(s, &g, &prm, &error);
  g_assert_no_error(error);
  TlSrmTables tab;
  tl_srm_tables(m, &tab);
  g_assert_true(tab.interchange && tab.xsym); /* the kernels' swap and mirror paths run */
  g_autofree double *h = full_matrix(s, &g, &prm);
  guint per = s->n_crystals / 2, S = 3;
  TlBin bin = {0, per, 5.0f};
  g_autoptr(TlOperator) op = tl_srm_operator_new(ctx, m, s, &bin, 1, S, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tl_operator_n_data(op), ==, (guint64)per * per);
  guint64 nvox = tl_image_grid_n_voxels(&g), nd = tl_operator_n_data(op);
  g_autofree float *x = g_new(float, nvox);
  g_autofree float *w = g_new(float, nd);
  GRand *r = g_rand_new_with_seed(7);
  for (guint64 i = 0; i < nvox; i++) x[i] = (float)g_rand_double(r);
  for (guint64 i = 0; i < nd; i++) w[i] = (float)g_rand_double(r);
  g_rand_free(r);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) dx = tl_array_new(ctx, nvox, 4, &error);
  g_autoptr(TlArray) dy = tl_array_new(ctx, nd, 4, &error);
  g_autoptr(TlArray) dw = tl_array_new(ctx, nd, 4, &error);
  g_autoptr(TlArray) bx = tl_array_new(ctx, nvox, 4, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(dx, x, &error));
  g_assert_true(tl_array_upload(dw, w, &error));
  g_autofree float *y = g_new(float, nd);
  g_autofree float *bt = g_new(float, nvox);
  double hmax = 0;
  for (guint64 i = 0; i < (guint64)per * per * nvox; i++) hmax = MAX(hmax, h[i]);
  for (guint k = 0; k < S; k++) {
    guint64 f = tl_operator_subset_first(op, k), len = tl_operator_subset_length(op, k);
    g_autoptr(TlArray) yv = tl_array_new_view(dy, f, len, &error);
    g_autoptr(TlArray) wv = tl_array_new_view(dw, f, len, &error);
    g_assert_no_error(error);
    g_assert_true(tl_stream_zero(st, bx, &error));
    g_assert_true(tl_operator_forward(op, st, k, dx, yv, &error));
    g_assert_true(tl_operator_adjoint(op, st, k, wv, bx, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    g_assert_true(tl_array_download(dy, y, &error));
    g_assert_true(tl_array_download(bx, bt, &error));
    double ax_w = 0, x_atw = 0, worst = 0;
    for (guint64 i = f; i < f + len; i++) {
      guint a, b;
      tl_srm_operator_pair(op, i, &a, &b);
      g_assert_cmpuint(tl_pair_index(s->n_crystals, a, b) % S, ==, k);
      double ref = 0;
      for (guint64 v = 0; v < nvox; v++) ref += h[((guint64)a * per + b - per) * nvox + v] * x[v];
      worst = MAX(worst, fabs(y[i] - ref) / (hmax * nvox));
      ax_w += (double)y[i] * w[i];
    }
    for (guint64 v = 0; v < nvox; v++) x_atw += (double)x[v] * bt[v];
    double rel = fabs(ax_w - x_atw) / fabs(ax_w);
    g_test_message("subset %u: forward vs full matrix %.2g (of hmax x voxels), adjointness %.2g",
                   k, worst, rel);
    g_assert_cmpfloat(worst, <, 1e-6);
    g_assert_cmpfloat(rel, <=, 1e-5);
    /* the adjoint sums in fixed point by default (srm_back_fixed): a second run gives the same
     * bits (issue 32) */
    g_autofree float *bt2 = g_new(float, nvox);
    g_assert_true(tl_stream_zero(st, bx, &error));
    g_assert_true(tl_operator_adjoint(op, st, k, wv, bx, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_true(tl_array_download(bx, bt2, &error));
    g_assert_no_error(error);
    g_assert_cmpint(memcmp(bt, bt2, nvox * sizeof(float)), ==, 0);
  }
  /* the counts: the one bin given, zeros elsewhere */
  g_autoptr(TlArray) cm = tl_array_new(ctx, nd, 4, &error);
  g_assert_true(tl_operator_counts(op, st, cm, &error) && tl_stream_finish(st, &error));
  g_assert_true(tl_array_download(cm, y, &error));
  double total = 0;
  for (guint64 i = 0; i < nd; i++) total += y[i];
  g_assert_cmpfloat(total, ==, 5.0);
  /* bad bins are refused */
  TlBin bad = {0, 1, 1.0f};
  g_assert_null(tl_srm_operator_new(ctx, m, s, &bad, 1, S, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_clear_pointer(&op, tl_operator_free);
  TlArray *arrays[] = {dx, dy, dw, bx, cm};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) tl_array_free(arrays[i]);
  dx = dy = dw = bx = cm = NULL;
  g_clear_pointer(&st, tl_stream_free);
  tl_test_context_done(ctx);
}

/* Sum of h over every pair for a point. */
static double total_response(const TlScanner *s, const TlSrmParams *prm, const double p[3]) {
  guint per = s->n_crystals / 2;
  double sum = 0;
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++) sum += tl_srm_point_response(s, prm, a, b, p);
  return sum;
}

/* Independent reference: isotropic directions, each photon's path through its head (a slab
 * of the heads' lateral extent, `depth` deep), both absorbed with 1 - exp(-mu L) terms
 * restricted to the part of the path inside the head's columns. */
static double slab_mc(const TlScanner *s, double mu, double depth, const double p[3], guint n,
                      double *sigma) {
  const TlScannerLayout *l = s->layout;
  double hy = 0.5 * l->head_crystals[0] * l->head_pitch_mm[0];
  double hz = 0.5 * l->head_crystals[1] * l->head_pitch_mm[1];
  double hx = 0.5 * l->head_distance_mm;
  GRand *r = g_rand_new_with_seed(11);
  double sum = 0, sum2 = 0;
  for (guint i = 0; i < n; i++) {
    double cz = 2 * g_rand_double(r) - 1, ph = 2 * G_PI * g_rand_double(r), st = sqrt(1 - cz * cz);
    double d[3] = {st * cos(ph), st * sin(ph), cz};
    double f = 1;
    for (int sgn = -1; sgn <= 1 && f > 0; sgn += 2) {
      double e[3] = {sgn * d[0], sgn * d[1], sgn * d[2]};
      double x0 = e[0] > 0 ? hx : -hx;
      if (e[0] == 0) { f = 0; break; }
      /* parameter range along the ray inside the slab and inside the lateral box */
      double t0 = (x0 - p[0]) / e[0], t1 = (x0 + (e[0] > 0 ? depth : -depth) - p[0]) / e[0];
      double lo = MIN(t0, t1), hi = MAX(t0, t1);
      const double lim[2] = {hy, hz};
      for (int k = 1; k < 3; k++) {
        if (e[k] == 0) {
          if (fabs(p[k]) > lim[k - 1]) hi = -1;
          continue;
        }
        double a = (-lim[k - 1] - p[k]) / e[k], b = (lim[k - 1] - p[k]) / e[k];
        lo = MAX(lo, MIN(a, b));
        hi = MIN(hi, MAX(a, b));
      }
      double entry = MIN(t0, t1);
      if (hi <= lo) { f = 0; break; }
      f *= exp(-mu * (lo - entry)) - exp(-mu * (hi - entry));
    }
    sum += f;
    sum2 += f * f;
  }
  g_rand_free(r);
  double mean = sum / n;
  *sigma = sqrt(MAX(sum2 / n - mean * mean, 0) / n);
  return mean;
}

static void test_detection_probability(void) {
  g_autoptr(TlScanner) s = reduced(8, 6, 2.4, 2.4, 20.0);
  const double p[3] = {-2.3, 1.1, -0.7};
  TlSrmParams prm;
  tl_srm_params_init(&prm);
  prm.samples = 24;
  /* LYSO slabs against the plain Monte-Carlo above (4 sigma) */
  double sig;
  double ref = slab_mc(s, prm.mu_per_mm, s->crystal_size[2], p, 400000, &sig);
  double got = total_response(s, &prm, p);
  g_test_message("LYSO: sum of h %.6f, Monte-Carlo %.6f +- %.6f", got, ref, sig);
  g_assert_cmpfloat(fabs(got - ref), <, 4 * sig + 2e-3 * ref);
  /* opaque crystals (detection on the faces) against the simulator */
  /* the opaque integrand is a box indicator: the midpoint rule converges only as 1 / samples
   * (8: +4%, 32: -0.5%, 64: 0.05%), so this check takes 64 */
  prm.mu_per_mm = 1e4;
  prm.samples = 64;
  double faces = total_response(s, &prm, p);
  TlImageGrid g = tl_image_grid_centred(1, 1, 1, 0.01f, 0.01f, 0.01f);
  for (int d = 0; d < 3; d++) g.origin_mm[d] = (float)p[d];
  g_autoptr(TlImage) act = tl_image_new(&g);
  act->data[0] = 1.0f;
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.decays = 1e6;
  sp.exact_count = TRUE;
  sp.seed = 5;
  TlSimulateStats st;
  GError *error = NULL;
  g_autoptr(TlListmode) lm = tl_simulate(s, act, NULL, &sp, NULL, NULL, NULL, &st, &error);
  g_assert_no_error(error);
  double frac = st.geometric / st.decays;
  double fsig = sqrt(frac * (1 - frac) / st.sampled) / st.cone_cos;
  g_test_message("faces: sum of h %.6f, simulator %.6f +- %.6f (%" G_GUINT64_FORMAT " sampled)",
                 faces, frac, fsig, st.sampled);
  g_assert_cmpfloat(fabs(faces - frac), <, 4 * fsig + 2e-3 * frac);
  /* the crystal depth matters: LYSO detects fewer pairs than opaque faces */
  g_assert_cmpfloat(got, <, 0.9 * faces);
}

static void test_cache_file(void) {
  g_autoptr(TlScanner) s = reduced(4, 3, 2.4, 2.4, 12.0);
  TlImageGrid g = tl_image_grid_centred(5, 8, 6, 2.0f, 1.2f, 1.2f);
  GError *error = NULL;
  g_autoptr(TlSrm) m = tl_srm_new(s, &g, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_dir_make_tmp("srm-XXXXXX", &error);
  g_autofree char *path = g_build_filename(dir, "m.srm", NULL);
  g_assert_true(tl_srm_save(m, path, &error));
  g_autoptr(TlSrm) back = tl_srm_load(path, s, &g, NULL, &error);
  g_assert_no_error(error);
  guint per = s->n_crystals / 2;
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++)
      for (guint64 v = 0; v < tl_image_grid_n_voxels(&g); v++)
        g_assert_cmpfloat(tl_srm_element(back, a, b, v), ==, tl_srm_element(m, a, b, v));
  /* another grid: refused by the key */
  TlImageGrid g2 = tl_image_grid_centred(7, 8, 6, 2.0f, 1.2f, 1.2f);
  g_assert_null(tl_srm_load(path, s, &g2, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  /* truncated, and a huge element count: refused before allocating */
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(path, &data, &len, &error));
  g_assert_true(g_file_set_contents(path, data, (gssize)len - 3, &error));
  g_assert_null(tl_srm_load(path, s, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  guint32 hlen;
  memcpy(&hlen, data + 8, 4);
  guint64 huge = G_MAXUINT64 / 4;
  memcpy(data + 12 + hlen, &huge, 8);
  g_assert_true(g_file_set_contents(path, data, (gssize)len, &error));
  g_assert_null(tl_srm_load(path, s, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  /* a damaged value (NaN) */
  TlSrmSizes sz;
  tl_srm_sizes(m, FALSE, &sz);
  memcpy(data + 12 + hlen, &sz.stored, 8);
  float nan = NAN;
  memcpy(data + len - 4, &nan, 4);
  g_assert_true(g_file_set_contents(path, data, (gssize)len, &error));
  g_assert_null(tl_srm_load(path, s, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  g_assert_cmpint(g_remove(path), ==, 0);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
  /* a scanner that is not dual-head */
  g_autoptr(TlScanner) ring = tl_scanner_new_preset("small-animal", &error);
  g_assert_null(tl_srm_new(ring, &g, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* voxels that do not divide the pitch */
  TlImageGrid g3 = tl_image_grid_centred(5, 8, 6, 2.0f, 1.0f, 1.0f);
  g_assert_null(tl_srm_new(s, &g3, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_test_add_func("/srm/symmetric-equals-full", test_symmetric_equals_full);
  g_test_add_func("/srm/operator", test_operator);
  g_test_add_func("/srm/detection-probability", test_detection_probability);
  g_test_add_func("/srm/cache-file", test_cache_file);
  return g_test_run();
}
