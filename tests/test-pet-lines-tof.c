/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The lines operator's time of flight (pet/tl-pet-lines.h, issue 30): built from the crystal
 * centres and TOF bins of list-mode events, it must equal the list-mode TOF operator on the
 * same events (forward to 1e-6 of the maximum, back projection to 1e-6 relative L2: the same
 * kernels, only the float atomics' order differs), the bins must matter (mirrored bins give
 * another projection), forward and adjoint must be adjoint per subset with several rays, an
 * operator without counts must say so, and a bad TOF kernel is a GError. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet/project/tl-projector.h"
#include "pet/tl-pet-lines.h"
#include "pet/tl-pet-operator.h"

static TlContext *ctx;

#define C_MM_PER_PS 0.299792458

/* 3 rings of an octagon (4 crystals of 4 mm a side, apothem 40 mm), 25 TOF bins of 8 mm,
 * sigma 8 mm along the LOR: bins cover every LOR with 3 sigma to spare. */
static TlScanner *tof_scanner(void) {
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  TlScanner *s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  s->tof_bins = 25;
  s->tof_bin_mm = 8.0f;
  s->tof_fwhm_ps = (float)(8.0 * 2 * sqrt(2 * G_LN2) * 2 / C_MM_PER_PS);
  return s;
}

/* 20 x 16 x 12 voxels of 2 x 2 x 2.5 mm (anisotropic on purpose). */
static TlImageGrid grid_small(void) { return fx_grid(20, 16, 12, 2.0f, 2.0f, 2.5f); }

/* n events on random allowed pairs (the list-mode kernels skip the others, the lines operator
 * would not), bins mostly within +-5 of the midpoint, every fifth anywhere in +-12. */
static TlListmode *random_listmode(TlScanner *sc_owned, guint n, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  TlListmode *lm = tl_listmode_new(sc_owned, n);
  lm->has_tof = TRUE;
  for (guint i = 0; i < n; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, sc_owned->n_crystals);
      e->b = g_rand_int_range(r, 0, sc_owned->n_crystals);
    } while (!fx_pair_allowed(sc_owned, e->a, e->b));
    gint32 lim = i % 5 == 0 ? 12 : 5;
    e->tof_bin = g_rand_int_range(r, -lim, lim + 1);
  }
  return lm;
}

/* The records of a list-mode operator (its data order) as line end points and bins. */
static void records_as_lines(TlOperator *lmop, const TlScanner *sc, float **ends,
                             gint32 **bins) {
  TlLors l = tl_pet_operator_lors(lmop, G_MAXUINT);
  GError *error = NULL;
  g_autofree TlEvent *ev = g_new(TlEvent, tl_array_length(l.records));
  g_assert_true(tl_array_download(l.records, ev, &error));
  g_assert_no_error(error);
  *ends = g_new(float, 6 * l.count);
  *bins = g_new(gint32, l.count);
  for (guint64 i = 0; i < l.count; i++) {
    memcpy(*ends + 6 * i, sc->crystals[ev[l.first + i].a].centre, 3 * sizeof(float));
    memcpy(*ends + 6 * i + 3, sc->crystals[ev[l.first + i].b].centre, 3 * sizeof(float));
    (*bins)[i] = ev[l.first + i].tof_bin;
  }
}

/* y = A_s x and z = A_s^T w of one subset, downloaded (z accumulates from zero). */
static void apply(TlOperator *op, guint s, const float *x, const float *w, float **y,
                  float **z) {
  GError *error = NULL;
  guint64 nv = fx_voxels(tl_operator_grid(op)), ns = tl_operator_subset_length(op, s);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, ns, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, ns, &error);
  g_autoptr(TlArray) dz = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_zero(dz, &error));
  g_assert_true(tl_operator_forward(op, st, s, dx, dy, &error));
  g_assert_true(tl_operator_adjoint(op, st, s, dw, dz, &error));
  g_assert_true(tl_stream_finish(st, &error));
  g_assert_no_error(error);
  *y = fx_download(dy);
  *z = fx_download(dz);
}

static double max_abs_f(const float *a, guint64 n) {
  double m = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, fabs(a[i]));
  return m;
}

/* The lines operator of the list-mode operator's own records equals it, with TOF. */
static void test_equals_listmode(gconstpointer projector) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  TlScanner *sc = tof_scanner();
  guint ne = 20000;
  g_autoptr(TlListmode) lm = random_listmode(sc, ne, 1);
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = projector;
  o.tof = TRUE;
  g_autoptr(TlOperator) A = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  g_autofree float *ends = NULL;
  g_autofree gint32 *bins = NULL;
  records_as_lines(A, sc, &ends, &bins);
  guint64 n = tl_operator_n_data(A);
  g_assert_cmpuint(n, ==, ne);
  g_autoptr(TlOperator) L = tl_pet_lines_operator_new_tof(ctx, &g, projector, n, ends, 1, NULL,
                                                          bins, &tof, NULL, NULL, 1, &error);
  g_assert_no_error(error);
  g_assert_false(tl_operator_has_counts(L));
  g_assert_nonnull(strstr(tl_operator_label(L), "tof"));
  guint64 nv = fx_voxels(&g);
  g_autofree float *x = fx_random_floats(nv, 2, 0, 1), *w = fx_random_floats(n, 3, 0, 1);
  g_autofree float *ya = NULL, *za = NULL, *yl = NULL, *zl = NULL;
  apply(A, 0, x, w, &ya, &za);
  apply(L, 0, x, w, &yl, &zl);
  double ymax = max_abs_f(ya, n), dy = 0, num = 0, den = 0;
  g_assert_cmpfloat(ymax, >, 0);
  for (guint64 i = 0; i < n; i++) dy = MAX(dy, fabs((double)yl[i] - ya[i]));
  for (guint64 v = 0; v < nv; v++)
    num += ((double)zl[v] - za[v]) * ((double)zl[v] - za[v]), den += (double)za[v] * za[v];
  g_test_message("%s: forward max |diff| %.3g of max %.4g, back relative L2 %.3g",
                 (const char *)projector, dy, ymax, sqrt(num / den));
  g_assert_cmpfloat(dy, <=, 1e-6 * ymax);
  g_assert_cmpfloat(sqrt(num / den), <=, 1e-6);
  /* the bins matter: the same lines with mirrored bins project elsewhere along each line */
  for (guint64 i = 0; i < n; i++) bins[i] = -bins[i];
  g_autoptr(TlOperator) M = tl_pet_lines_operator_new_tof(ctx, &g, projector, n, ends, 1, NULL,
                                                          bins, &tof, NULL, NULL, 1, &error);
  g_assert_no_error(error);
  g_autofree float *ym = NULL, *zm = NULL;
  apply(M, 0, x, w, &ym, &zm);
  double dm = 0;
  for (guint64 i = 0; i < n; i++) dm = MAX(dm, fabs((double)ym[i] - ya[i]));
  g_assert_cmpfloat(dm, >, 0.05 * ymax);
}

/* <A_s x, w> = <x, A_s^T w> per subset, TOF with 2 weighted rays per line and 3 subsets by
 * group; with counts the operator has them. */
static void test_adjoint_rays(void) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  TlScanner *sc = tof_scanner();
  guint n = 6000;
  g_autoptr(TlListmode) lm = random_listmode(sc, n, 4);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 2.5, &error));
  /* ray 1: ray 0 shifted 1.5 mm axially at both ends (a second ray across the bin) */
  g_autofree float *ends = g_new(float, 12 * n), *counts = g_new(float, n);
  g_autofree gint32 *bins = g_new(gint32, n);
  g_autofree guint32 *group = g_new(guint32, n);
  for (guint i = 0; i < n; i++) {
    const TlEvent *e = &lm->events[i];
    memcpy(ends + 6 * i, sc->crystals[e->a].centre, 3 * sizeof(float));
    memcpy(ends + 6 * i + 3, sc->crystals[e->b].centre, 3 * sizeof(float));
    memcpy(ends + 6 * (n + i), ends + 6 * i, 6 * sizeof(float));
    ends[6 * (n + i) + 2] += 1.5f, ends[6 * (n + i) + 5] += 1.5f;
    bins[i] = e->tof_bin;
    group[i] = i % 7;
    counts[i] = (float)(i % 3);
  }
  const float wr[2] = {0.25f, 0.75f};
  g_autoptr(TlOperator) L = tl_pet_lines_operator_new_tof(ctx, &g, "joseph", n, ends, 2, wr, bins,
                                                          &tof, counts, group, 3, &error);
  g_assert_no_error(error);
  g_assert_true(tl_operator_has_counts(L));
  g_assert_cmpuint(tl_operator_n_subsets(L), ==, 3);
  guint64 nv = fx_voxels(&g);
  for (guint s = 0; s < 3; s++) {
    guint64 ns = tl_operator_subset_length(L, s);
    g_autofree float *x = fx_random_floats(nv, 10 + s, 0, 1),
                     *w = fx_random_floats(ns, 20 + s, 0, 1);
    g_autofree float *y = NULL, *z = NULL;
    apply(L, s, x, w, &y, &z);
    double lhs = fx_dot(y, w, ns), rhs = fx_dot(x, z, nv);
    g_test_message("subset %u (%" G_GUINT64_FORMAT " lines): <Ax,w> %.9g <x,A^T w> %.9g", s, ns,
                   lhs, rhs);
    g_assert_cmpfloat(lhs, >, 0);
    g_assert_cmpfloat(fabs(lhs - rhs), <=, 1e-5 * lhs);
  }
}

/* A bad TOF kernel, or a kernel without bins, is a GError naming the values. */
static void test_bad_tof(void) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  const float ends[6] = {-40, 0, 0, 40, 0, 0};
  const gint32 bin = 0;
  const TlTof bad[] = {{0, 8, 3}, {8, NAN, 3}, {8, 8, 11}, {8, -1, 3}};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    TlOperator *op = tl_pet_lines_operator_new_tof(ctx, &g, "siddon", 1, ends, 1, NULL, &bin,
                                                   &bad[i], NULL, NULL, 1, &error);
    g_assert_null(op);
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_assert_nonnull(strstr(error->message, "sigma_mm"));
    g_clear_error(&error);
  }
  const TlTof good = {8, 8, 3};
  g_assert_null(tl_pet_lines_operator_new_tof(ctx, &g, "siddon", 1, ends, 1, NULL, NULL, &good,
                                              NULL, NULL, 1, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "tof_bin"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/pet-lines/tof/equals-listmode/siddon", "siddon", test_equals_listmode);
  g_test_add_data_func("/pet-lines/tof/equals-listmode/joseph", "joseph", test_equals_listmode);
  g_test_add_func("/pet-lines/tof/adjoint-rays-subsets", test_adjoint_rays);
  g_test_add_func("/pet-lines/tof/bad-kernel", test_bad_tof);
  int r = g_test_run();
  tl_test_context_done(ctx);
  return r;
}
