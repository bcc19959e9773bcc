/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Deterministic back projections (issue 32: "a re-run from the sidecar is bit-identical"): the
 * PET EM pass and back projection and the CT scatter back projection sum in 64-bit fixed point
 * (compute/core/tl-fixed.h), so two runs give the same bits whatever the order lavapipe's
 * threads add in. Run with lavapipe's default threads (meson's environment leaves
 * LP_NUM_THREADS alone): the float-atomic modes, run twice on the same data, are reported for
 * comparison (on 2 threads they differed in every run tried). Then against references in
 * double of the kernels' own float weights (each column of A is the forward projection of a
 * unit image), so the comparison sees only the summation: <= 1e-6 of the largest voxel. */
#include "ct/tl-ct-projector.h"
#include "pet/project/tl-projector.h"
#include "pet-fixture.h"
#include "tl-test-common.h"
#include <math.h>
#include <string.h>

static TlContext *ctx;

typedef struct {
  float p0[3], p1[3];
} Lor;

/* n LORs between random points of a sphere of radius r about the origin (some miss the grid). */
static TlArray *sphere_lors(guint n, double r, guint32 seed) {
  g_autoptr(GRand) rnd = g_rand_new_with_seed(seed);
  g_autofree Lor *l = g_new(Lor, n);
  for (guint i = 0; i < n; i++) {
    double u[3], v[3];
    fx_random_unit(rnd, u);
    fx_random_unit(rnd, v);
    for (int k = 0; k < 3; k++) {
      l[i].p0[k] = (float)(r * u[k]);
      l[i].p1[k] = (float)(r * v[k]);
    }
  }
  return fx_upload(ctx, l, n, sizeof(Lor));
}

/* One back projection of weights w (em FALSE) or EM pass at image x (em TRUE), downloaded. */
static float *pet_run(TlProjector *p, TlScatter mode, const TlLors *l, const TlArray *w,
                      const TlArray *x, gboolean em) {
  GError *error = NULL;
  tl_projector_set_scatter(p, mode);
  g_autoptr(TlArray) out = tl_array_new_float(ctx, fx_voxels(tl_projector_grid(p)), &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_zero(out, &error));
  if (em)
    g_assert_true(tl_projector_em(p, s, l, x, out, &error));
  else
    g_assert_true(tl_projector_back(p, s, l, w, out, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(out);
}

static guint64 n_differ(const float *a, const float *b, guint64 n) {
  guint64 d = 0;
  for (guint64 i = 0; i < n; i++) d += memcmp(a + i, b + i, sizeof(float)) != 0;
  return d;
}

static double max_rel(const float *a, const float *b, guint64 n) {
  double m = 0, d = 0;
  for (guint64 i = 0; i < n; i++) {
    m = MAX(m, fabs((double)b[i]));
    d = MAX(d, fabs((double)a[i] - b[i]));
  }
  return m > 0 ? d / m : d;
}

static void pet_case(const char *name, TlScatter fixed, gboolean em, gboolean tof) {
  GError *error = NULL;
  TlImageGrid g = fx_grid(20, 16, 12, 2.0f, 2.0f, 2.5f);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  guint n = 200000;
  g_autoptr(TlArray) rec = NULL;
  TlLors l;
  TlScanner *sc = NULL;
  g_autoptr(TlArray) cry = NULL;
  TlTof t = {.sigma_mm = 12.0f, .bin_mm = 8.0f, .n_sigma = 3.0f};
  if (tof) { /* list-mode events of a ring with TOF bins */
    sc = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
    cry = fx_upload_crystals(ctx, sc);
    g_autoptr(GRand) r = g_rand_new_with_seed(7);
    g_autofree TlEvent *ev = g_new0(TlEvent, n);
    for (guint i = 0; i < n; i++) {
      ev[i].a = g_rand_int_range(r, 0, sc->n_crystals);
      ev[i].b = g_rand_int_range(r, 0, sc->n_crystals);
      ev[i].tof_bin = g_rand_int_range(r, -4, 5);
    }
    rec = fx_upload(ctx, ev, n, sizeof(TlEvent));
    l = (TlLors){.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = n, .tof = &t};
  } else {
    rec = sphere_lors(n, 45.0, 3);
    l = (TlLors){.kind = TL_LORS_END_POINTS, .records = rec, .count = n};
  }
  /* signed weights for the back projection: two's complement sums */
  g_autofree float *w = fx_random_floats(n, 5, -0.5, 1), *x = fx_random_floats(nv, 6, 0.1, 1);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, n, 4), dx = fx_upload(ctx, x, nv, 4);

  g_autofree float *a = pet_run(p, fixed, &l, dw, dx, em);
  g_autofree float *b = pet_run(p, fixed, &l, dw, dx, em);
  g_autofree float *fa = pet_run(p, TL_SCATTER_FLOAT_ATOMIC, &l, dw, dx, em);
  g_autofree float *fb = pet_run(p, TL_SCATTER_FLOAT_ATOMIC, &l, dw, dx, em);
  guint64 nd = n_differ(a, b, nv), nfd = n_differ(fa, fb, nv);
  g_test_message("%s %s%s, %u LORs: fixed point: %" G_GUINT64_FORMAT " voxels differ between "
                 "two runs; float atomics: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                 " (max %.2e relative); fixed vs float %.2e",
                 name, em ? "em" : "back", tof ? " tof" : "", n, nd, nfd, nv,
                 max_rel(fa, fb, nv), max_rel(a, fa, nv));
  g_assert_cmpuint(nd, ==, 0);
  g_assert_cmpfloat(max_rel(a, fa, nv), <=, 1e-5);
  if (sc) fx_scanner_free(sc);
}

static void test_pet_em(gconstpointer name) {
  /* Joseph's AUTO EM on a CPU device is the plane path (deterministic by construction): the
   * fixed-point pass is asked for by name */
  pet_case(name, g_str_equal(name, "joseph") ? TL_SCATTER_FIXED : TL_SCATTER_AUTO, TRUE, FALSE);
}
static void test_pet_back(gconstpointer name) { pet_case(name, TL_SCATTER_AUTO, FALSE, FALSE); }
static void test_pet_tof(void) { pet_case("siddon", TL_SCATTER_AUTO, TRUE, TRUE); }

/* Column n of the projector's float matrix for every LOR: its forward projection of e_n. */
static float *pet_matrix(TlProjector *p, const TlLors *l) {
  GError *error = NULL;
  guint64 nv = fx_voxels(tl_projector_grid(p)), n = l->count;
  float *A = g_new(float, n * nv);
  g_autofree float *e = g_new0(float, nv);
  g_autoptr(TlArray) de = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autofree float *y = g_new(float, n);
  for (guint64 v = 0; v < nv; v++) {
    e[v] = 1;
    if (v) e[v - 1] = 0;
    g_assert_true(tl_array_upload(de, e, &error));
    g_assert_true(tl_projector_forward(p, s, l, de, dy, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_true(tl_array_download(dy, y, &error));
    g_assert_no_error(error);
    for (guint64 j = 0; j < n; j++) A[j * nv + v] = y[j];
  }
  return A;
}

/* The fixed-point EM pass and back projection against sums in double of the same float terms:
 * corr_n = sum_j A_jn / y_j with the device's own forward values y_j = (A x)_j, and
 * back_n = sum_j A_jn w_j. */
static void test_pet_reference(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = fx_grid(8, 8, 6, 4.0f, 4.0f, 5.0f);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  guint n = 6000;
  g_autoptr(TlArray) rec = sphere_lors(n, 45.0, 9);
  TlLors l = {.kind = TL_LORS_END_POINTS, .records = rec, .count = n};
  g_autofree float *w = fx_random_floats(n, 10, -0.5, 1), *x = fx_random_floats(nv, 11, 0.1, 1);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, n, 4), dx = fx_upload(ctx, x, nv, 4);
  g_autofree float *A = pet_matrix(p, &l);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_projector_forward(p, s, &l, dx, dy, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  g_autofree float *y = fx_download(dy);
  g_autofree double *rb = g_new0(double, nv), *re = g_new0(double, nv);
  for (guint j = 0; j < n; j++)
    for (guint64 v = 0; v < nv; v++) {
      double a = A[(guint64)j * nv + v];
      rb[v] += a * w[j];
      if (y[j] > 0) re[v] += a * (double)(1.0f / y[j]);
    }
  g_autofree float *rbf = g_new(float, nv), *ref = g_new(float, nv);
  for (guint64 v = 0; v < nv; v++) rbf[v] = (float)rb[v], ref[v] = (float)re[v];
  TlScatter mode = g_str_equal(name, "joseph") ? TL_SCATTER_FIXED : TL_SCATTER_AUTO;
  g_autofree float *back = pet_run(p, TL_SCATTER_AUTO, &l, dw, dx, FALSE);
  g_autofree float *em = pet_run(p, mode, &l, dw, dx, TRUE);
  double db = max_rel(back, rbf, nv), de = max_rel(em, ref, nv);
  g_test_message("%s: fixed point vs double sums of the same terms: back %.2e, em %.2e of the "
                 "largest voxel", (char *)name, db, de);
  g_assert_cmpfloat(db, <=, 1e-6);
  g_assert_cmpfloat(de, <=, 1e-6);
}

/* CT: a cone and a parallel orbit around a small grid. */
static TlCtGeometry *ct_geometry(TlCtBeam beam, guint views, guint nu, guint nv) {
  GError *error = NULL;
  TlCtOrbit o;
  if (beam == TL_CT_CONE)
    tl_ct_orbit_init_cone(&o, views, 60, 100, nu, nv, 1.6, 1.6);
  else
    tl_ct_orbit_init_parallel(&o, views, nu, nv, 1.0, 1.0);
  o.start_deg = 7;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

static float *ct_back(TlCtProjector *p, TlCtBack mode, const TlArray *dy) {
  GError *error = NULL;
  g_assert_true(tl_ct_projector_set_back(p, mode, &error));
  guint64 nvox = tl_image_grid_n_voxels(tl_ct_projector_grid(p));
  g_autoptr(TlArray) dx = tl_array_new_float(ctx, nvox, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  TlCtViews v = tl_ct_views_all(tl_ct_projector_geometry(p));
  g_assert_true(tl_ct_projector_back(p, s, &v, dy, dx, FALSE, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(dx);
}

/* Two fixed-point scatters bit-identical (signed data), and the same bits with 64-bit atomics
 * (where the device has them) as with two 32-bit ones; the float scatter reported. */
static void test_ct_repeat(gconstpointer data) {
  GError *error = NULL;
  TlCtMethod m = GPOINTER_TO_INT(data);
  TlImageGrid grid = tl_image_grid_centred(24, 24, 16, 1.0f, 1.0f, 1.25f);
  g_autoptr(TlCtGeometry) g = ct_geometry(TL_CT_CONE, 60, 40, 28);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, m, &error);
  g_assert_no_error(error);
  /* AUTO: the fixed-point scatter on CPU devices and for Joseph; elsewhere the gather, which
   * has no atomics */
  gboolean cpu = tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  TlCtBack fixed = tl_context_info(ctx)->buffer_int64_atomics ? TL_CT_BACK_SCATTER_FIXED
                                                               : TL_CT_BACK_SCATTER_FIXED32;
  g_assert_cmpint(tl_ct_projector_back_mode(p), ==,
                  cpu || m == TL_CT_JOSEPH ? fixed : TL_CT_BACK_GATHER);
  TlCtViews v = tl_ct_views_all(g);
  guint64 npix = tl_ct_views_n_pixels(g, &v), nvox = tl_image_grid_n_voxels(&grid);
  g_autofree float *y = fx_random_floats(npix, 12, -0.5, 1);
  g_autoptr(TlArray) dy = fx_upload(ctx, y, npix, 4);
  g_autofree float *a = ct_back(p, TL_CT_BACK_AUTO, dy), *b = ct_back(p, TL_CT_BACK_AUTO, dy);
  g_autofree float *fa = ct_back(p, TL_CT_BACK_SCATTER, dy);
  g_autofree float *fb = ct_back(p, TL_CT_BACK_SCATTER, dy);
  guint64 nd = n_differ(a, b, nvox), nfd = n_differ(fa, fb, nvox);
  g_test_message("ct %s, %" G_GUINT64_FORMAT " rays: fixed point: %" G_GUINT64_FORMAT
                 " voxels differ between two runs; float atomics: %" G_GUINT64_FORMAT " of %"
                 G_GUINT64_FORMAT " (max %.2e relative); fixed vs float %.2e",
                 tl_ct_method_name(m), npix, nd, nfd, nvox, max_rel(fa, fb, nvox),
                 max_rel(a, fa, nvox));
  g_assert_cmpuint(nd, ==, 0);
  g_assert_cmpfloat(max_rel(a, fa, nvox), <=, 1e-5);
  g_autofree float *f64 = ct_back(p, TL_CT_BACK_SCATTER_FIXED, dy);
  g_autofree float *f32 = ct_back(p, TL_CT_BACK_SCATTER_FIXED32, dy);
  g_test_message("  64-bit atomics (%s) vs two 32-bit ones: %" G_GUINT64_FORMAT " voxels differ",
                 fixed == TL_CT_BACK_SCATTER_FIXED ? "on" : "not on this device",
                 n_differ(f64, f32, nvox));
  g_assert_cmpuint(n_differ(f64, f32, nvox), ==, 0);
  if (cpu || m == TL_CT_JOSEPH) g_assert_cmpuint(n_differ(a, f64, nvox), ==, 0);
}

/* The fixed-point scatter against sums in double of the projector's own float weights. */
static void test_ct_reference(gconstpointer data) {
  GError *error = NULL;
  TlCtMethod m = GPOINTER_TO_INT(data);
  for (int beam = 0; beam < 2; beam++) {
    TlImageGrid grid = tl_image_grid_centred(8, 7, 6, 2.0f, 2.0f, 2.5f);
    g_autoptr(TlCtGeometry) g = ct_geometry(beam ? TL_CT_PARALLEL : TL_CT_CONE, 12, 16, 12);
    g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, m, &error);
    g_assert_no_error(error);
    TlCtViews v = tl_ct_views_all(g);
    guint64 npix = tl_ct_views_n_pixels(g, &v), nvox = tl_image_grid_n_voxels(&grid);
    g_autofree float *y = fx_random_floats(npix, 13, -0.5, 1);
    g_autoptr(TlArray) dy = fx_upload(ctx, y, npix, 4);
    g_autofree float *got = ct_back(p, TL_CT_BACK_SCATTER_FIXED, dy);
    g_autofree double *r = g_new0(double, nvox);
    g_autofree float *e = g_new0(float, nvox), *col = g_new(float, npix);
    g_autoptr(TlArray) de = tl_array_new_float(ctx, nvox, &error);
    g_autoptr(TlArray) dc = tl_array_new_float(ctx, npix, &error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    for (guint64 n = 0; n < nvox; n++) {
      e[n] = 1;
      if (n) e[n - 1] = 0;
      g_assert_true(tl_array_upload(de, e, &error));
      g_assert_true(tl_ct_projector_forward(p, s, &v, de, dc, FALSE, &error));
      g_assert_true(tl_stream_finish(s, &error));
      g_assert_true(tl_array_download(dc, col, &error));
      g_assert_no_error(error);
      for (guint64 j = 0; j < npix; j++) r[n] += (double)col[j] * y[j];
    }
    g_autofree float *rf = g_new(float, nvox);
    for (guint64 n = 0; n < nvox; n++) rf[n] = (float)r[n];
    double d = max_rel(got, rf, nvox);
    g_test_message("ct %s %s: fixed point vs double sums of the same terms %.2e of the largest "
                   "voxel", tl_ct_method_name(m), beam ? "parallel" : "cone", d);
    g_assert_cmpfloat(d, <=, 1e-6);
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  static const char *const pet[] = {"siddon", "joseph", "tor"};
  for (gsize i = 0; i < G_N_ELEMENTS(pet); i++) {
    g_autofree char *a = g_strdup_printf("/determinism/pet/em/%s", pet[i]);
    g_autofree char *b = g_strdup_printf("/determinism/pet/back/%s", pet[i]);
    g_autofree char *c = g_strdup_printf("/determinism/pet/reference/%s", pet[i]);
    g_test_add_data_func(a, pet[i], test_pet_em);
    g_test_add_data_func(b, pet[i], test_pet_back);
    g_test_add_data_func(c, pet[i], test_pet_reference);
  }
  g_test_add_func("/determinism/pet/em-tof", test_pet_tof);
  static const TlCtMethod ct[] = {TL_CT_JOSEPH, TL_CT_SIDDON, TL_CT_RAYCAST};
  for (gsize i = 0; i < G_N_ELEMENTS(ct); i++) {
    g_autofree char *a = g_strdup_printf("/determinism/ct/repeat/%s", tl_ct_method_name(ct[i]));
    g_autofree char *b = g_strdup_printf("/determinism/ct/reference/%s", tl_ct_method_name(ct[i]));
    g_test_add_data_func(a, GINT_TO_POINTER(ct[i]), test_ct_repeat);
    g_test_add_data_func(b, GINT_TO_POINTER(ct[i]), test_ct_reference);
  }
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
