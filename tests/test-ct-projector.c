/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT projectors on the device: adjointness of every matched forward/back pair, each back
 * projection in its three forms (gather, scatter with float atomics, scatter with CAS), cone and
 * parallel beams, rays along every dominant axis, view subsets; scatter against gather; Siddon's exact chords
 * through a uniform box and a voxelised ball, Joseph and ray casting on a uniform slab, and
 * the voxel-driven back projector against a plain C implementation of Siegl et al. 2011 eq. 1. */
#include <math.h>
#include <string.h>
#include "ct-ref.h"
#include "ct/tl-ct-phantom.h"
#include "ct/tl-ct-projector.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint32 rng_state = 0x2545f491u;
static float rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (float)(rng_state >> 8) * 0x1p-24f;
}

/* A pinhole view: source s looking along unit dir, detector sdd away with unit axes e_u,
 * e_v (perpendicular to dir), pixel pitches du, dv, centred (sdd 0: parallel beam). */
static void view_matrix(const double s[3], const double dir[3], const double eu[3],
                        const double ev[3], double sdd, double du, double dv, guint nu, guint nv,
                        double P[12]) {
  double cu = 0.5 * (nu - 1.0), cv = 0.5 * (nv - 1.0);
  for (int i = 0; i < 3; i++) {
    if (sdd > 0) {
      P[i] = sdd / du * eu[i] + cu * dir[i];
      P[4 + i] = sdd / dv * ev[i] + cv * dir[i];
      P[8 + i] = dir[i];
    } else {
      P[i] = eu[i] / du;
      P[4 + i] = ev[i] / dv;
      P[8 + i] = 0;
    }
  }
  if (sdd > 0) {
    for (int r = 0; r < 3; r++) P[4 * r + 3] = -(P[4 * r] * s[0] + P[4 * r + 1] * s[1] + P[4 * r + 2] * s[2]);
  } else {
    P[3] = cu, P[7] = cv, P[11] = 1;
  }
}

static void normalise(double v[3]) {
  double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  for (int i = 0; i < 3; i++) v[i] /= n;
}

/* Orbit views about z plus views looking along z and along an oblique diagonal, so that
 * Joseph's dominant axis is x, y and z in turn. */
static TlCtGeometry *make_geometry(TlCtBeam beam, guint nu, guint nv) {
  enum { N_ORBIT = 7 };
  double m[12 * (N_ORBIT + 2)];
  double sid = 60, sdd = beam == TL_CT_CONE ? 100 : 0;
  double du = beam == TL_CT_CONE ? 1.6 : 1.0, dv = du;
  for (int k = 0; k < N_ORBIT + 2; k++) {
    double dir[3], eu[3], ev[3] = {0, 0, 1};
    if (k < N_ORBIT) {
      double b = (7 + 360.0 * k / N_ORBIT) * G_PI / 180;
      dir[0] = -cos(b), dir[1] = -sin(b), dir[2] = 0;
      eu[0] = -sin(b), eu[1] = cos(b), eu[2] = 0;
    } else if (k == N_ORBIT) {
      dir[0] = 0.05, dir[1] = -0.03, dir[2] = -1;
      normalise(dir);
      eu[0] = 1, eu[1] = 0, eu[2] = dir[0];  /* made perpendicular below */
    } else {
      dir[0] = -1, dir[1] = -0.8, dir[2] = -0.9;
      normalise(dir);
      eu[0] = 1, eu[1] = -1, eu[2] = 0;
    }
    /* Gram-Schmidt: e_u perpendicular to dir, e_v = dir x e_u */
    double d = eu[0] * dir[0] + eu[1] * dir[1] + eu[2] * dir[2];
    for (int i = 0; i < 3; i++) eu[i] -= d * dir[i];
    normalise(eu);
    ev[0] = dir[1] * eu[2] - dir[2] * eu[1];
    ev[1] = dir[2] * eu[0] - dir[0] * eu[2];
    ev[2] = dir[0] * eu[1] - dir[1] * eu[0];
    double s[3] = {-sid * dir[0], -sid * dir[1], -sid * dir[2]};
    view_matrix(s, dir, eu, ev, sdd, du, dv, nu, nv, m + 12 * k);
  }
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_matrices(beam, N_ORBIT + 2, nu, nv, m, &error);
  g_assert_no_error(error);
  return g;
}

/* 21 x 16 x 12 voxels of 1 x 1.25 x 1.5 mm, slightly off centre (21: a partial block of
 * four voxels along x in the back projectors). */
static TlImageGrid test_grid(void) {
  TlImageGrid g = tl_image_grid_centred(21, 16, 12, 1.0f, 1.25f, 1.5f);
  g.origin_mm[0] += 0.3f, g.origin_mm[1] -= 0.2f, g.origin_mm[2] += 0.1f;
  return g;
}

static TlArray *upload(const float *data, guint64 n) { return tl_test_upload(ctx, data, n); }

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

/* The back projections a projector can run here: the scatter with float atomics only where the
 * device has them (elsewhere TL_CT_BACK_SCATTER runs the CAS kernel, tested as SCATTER_CAS); the
 * tiled scatter is Joseph's (the others run the plain scatter when asked for it); the scatter
 * summed in fixed point, with 64-bit atomics where the device has them and with two 32-bit
 * ones (tests/test-determinism.c: bit-identical reruns, and the two the same bits). */
static const TlCtBack backs[] = {TL_CT_BACK_GATHER, TL_CT_BACK_SCATTER, TL_CT_BACK_SCATTER_CAS,
                                 TL_CT_BACK_SCATTER_TILED, TL_CT_BACK_SCATTER_FIXED,
                                 TL_CT_BACK_SCATTER_FIXED32};

static TlCtProjector *new_projector(const TlCtGeometry *g, const TlImageGrid *grid,
                                    TlCtMethod method, TlCtBack back) {
  GError *error = NULL;
  TlCtProjector *p = tl_ct_projector_new(ctx, g, grid, method, &error);
  g_assert_no_error(error);
  g_assert_true(tl_ct_projector_set_back(p, back, &error));
  g_assert_no_error(error);
  gboolean fa = tl_context_info(ctx)->float32_atomic_add;
  TlCtBack want = back;
  if (want == TL_CT_BACK_SCATTER_TILED && (method != TL_CT_JOSEPH || !fa)) want = TL_CT_BACK_SCATTER;
  if (want == TL_CT_BACK_SCATTER && !fa) want = TL_CT_BACK_SCATTER_CAS;
  if (want == TL_CT_BACK_SCATTER_FIXED && !tl_context_info(ctx)->buffer_int64_atomics)
    want = TL_CT_BACK_SCATTER_FIXED32;
  g_assert_cmpint(tl_ct_projector_back_mode(p), ==, want);
  return p;
}

/* A^T y by `back`, accumulated onto `start` when given (else overwritten). */
static float *back_project(TlCtProjector *p, const TlCtViews *v, const float *y, guint64 npix,
                           const float *start) {
  GError *error = NULL;
  guint64 nvox = tl_image_grid_n_voxels(tl_ct_projector_grid(p));
  float *out = g_new(float, nvox);
  g_autoptr(TlArray) dy = upload(y, npix), dx = upload(start, nvox);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  if (!start) { /* garbage that overwriting must clear */
    for (guint64 i = 0; i < nvox; i++) out[i] = 1e3f;
    g_assert_true(tl_array_upload(dx, out, &error));
  }
  g_assert_true(tl_ct_projector_back(p, s, v, dy, dx, start != NULL, &error));
  g_assert_no_error(error);
  finish(s);
  g_assert_true(tl_array_download(dx, out, &error));
  return out;
}

static void check_adjoint(TlCtBeam beam, TlCtMethod method, TlCtBack back,
                          const TlCtViews *sel) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = make_geometry(beam, 36, 28);
  TlImageGrid grid = test_grid();
  g_autoptr(TlCtProjector) p = new_projector(g, &grid, method, back);
  TlCtViews v = sel ? *sel : tl_ct_views_all(g);
  guint64 nvox = tl_image_grid_n_voxels(&grid), npix = tl_ct_views_n_pixels(g, &v);
  g_autofree float *x = g_new(float, nvox), *y = g_new(float, npix);
  g_autofree float *ax = g_new(float, npix);
  for (guint64 i = 0; i < nvox; i++) x[i] = rnd();
  for (guint64 i = 0; i < npix; i++) y[i] = rnd();
  g_autoptr(TlArray) dx = upload(x, nvox), dax = upload(NULL, npix);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_ct_projector_forward(p, s, &v, dx, dax, FALSE, &error));
  g_assert_no_error(error);
  finish(s);
  g_assert_true(tl_array_download(dax, ax, &error));
  g_autofree float *aty = back_project(p, &v, y, npix, NULL);
  double lhs = dotf(ax, y, npix), rhs = dotf(x, aty, nvox);
  double rel = fabs(lhs - rhs) / fabs(lhs);
  g_test_message("%s %s %s views %u+%uk (%u): <Ax,y> = %.9g, <x,A^T y> = %.9g, relative %.2e",
                 beam == TL_CT_CONE ? "cone" : "parallel", tl_ct_method_name(method),
                 tl_ct_back_name(back), v.first, v.stride, v.count, lhs, rhs, rel);
  g_assert_cmpfloat(lhs, >, 0);
  g_assert_cmpfloat(rel, <=, 1e-5);

  if (back == TL_CT_BACK_GATHER) return;
  /* the same image as the gather's, voxel by voxel (relative to the largest), and accumulating
   * adds onto what is there */
  g_autoptr(TlCtProjector) pg = new_projector(g, &grid, method, TL_CT_BACK_GATHER);
  g_autofree float *ref = back_project(pg, &v, y, npix, NULL);
  g_autofree float *acc = back_project(p, &v, y, npix, x);
  double maxd = 0, maxr = 0, maxa = 0;
  for (guint64 i = 0; i < nvox; i++) {
    maxd = MAX(maxd, fabs((double)aty[i] - ref[i]));
    maxa = MAX(maxa, fabs((double)acc[i] - x[i] - ref[i]));
    maxr = MAX(maxr, fabs((double)ref[i]));
  }
  g_test_message("  scatter vs gather: max |difference| %.2e of max %.4g; accumulated %.2e",
                 maxd, maxr, maxa);
  g_assert_cmpfloat(maxr, >, 0);
  g_assert_cmpfloat(maxd, <=, 1e-5 * maxr);
  g_assert_cmpfloat(maxa, <=, 1e-5 * maxr + 1e-6);
}

static void test_adjoint(gconstpointer data) {
  TlCtMethod m = GPOINTER_TO_INT(data);
  TlCtViews sub = {.first = 1, .stride = 3, .count = 3};
  for (gsize b = 0; b < G_N_ELEMENTS(backs); b++) {
    check_adjoint(TL_CT_CONE, m, backs[b], NULL);
    check_adjoint(TL_CT_PARALLEL, m, backs[b], NULL);
    check_adjoint(TL_CT_CONE, m, backs[b], &sub);
  }
}

/* TOMOLAB_CT_BACK picks the automatic mode; a bad value is refused, naming it. */
static void test_back_env(void) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = make_geometry(TL_CT_CONE, 36, 28);
  TlImageGrid grid = test_grid();
  g_setenv("TOMOLAB_CT_BACK", "gather", TRUE);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_JOSEPH, &error);
  g_assert_no_error(error);
  g_assert_cmpint(tl_ct_projector_back_mode(p), ==, TL_CT_BACK_GATHER);
  g_setenv("TOMOLAB_CT_BACK", "scatter-cas", TRUE);
  g_assert_true(tl_ct_projector_set_back(p, TL_CT_BACK_AUTO, &error));
  g_assert_cmpint(tl_ct_projector_back_mode(p), ==, TL_CT_BACK_SCATTER_CAS);
  g_setenv("TOMOLAB_CT_BACK", "atomic", TRUE);
  g_assert_null(tl_ct_projector_new(ctx, g, &grid, TL_CT_SIDDON, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "TOMOLAB_CT_BACK"));
  g_assert_nonnull(strstr(error->message, "'atomic'"));
  g_clear_error(&error);
  g_unsetenv("TOMOLAB_CT_BACK");
  TlCtBack b;
  g_assert_false(tl_ct_back_from_name("both", &b, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_ct_projector_set_back(p, (TlCtBack)9, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

/* Siddon of a uniform image = the exact chord through the object, for every pixel's ray. */
static void check_chords(TlCtBeam beam, const TlImage *im, gboolean voxelised_ref) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = make_geometry(beam, 36, 28);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &im->grid, TL_CT_SIDDON, &error);
  g_assert_no_error(error);
  TlCtViews v = tl_ct_views_all(g);
  guint64 nvox = tl_image_grid_n_voxels(&im->grid), npix = tl_ct_views_n_pixels(g, &v);
  g_autoptr(TlArray) dx = upload(im->data, nvox), dy = upload(NULL, npix);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_ct_projector_forward(p, s, &v, dx, dy, FALSE, &error));
  finish(s);
  g_autofree float *y = g_new(float, npix);
  g_assert_true(tl_array_download(dy, y, &error));
  double lo[3], hi[3], max_rel = 0, max_abs = 0, max_len = 0, grazing_rel = 0;
  guint hits = 0;
  for (int a = 0; a < 3; a++) {
    lo[a] = im->grid.origin_mm[a] - 0.5 * im->grid.voxel_mm[a];
    hi[a] = lo[a] + im->grid.dims[a] * (double)im->grid.voxel_mm[a];
  }
  for (guint k = 0; k < g->n_views; k++)
    for (guint j = 0; j < g->det_v; j++)
      for (guint i = 0; i < g->det_u; i++) {
        double o[3], d[3];
        tl_ct_geometry_ray(g, k, i, j, o, d);
        double tmin = beam == TL_CT_CONE ? 0 : -INFINITY;
        double want = voxelised_ref ? ct_ref_line_integral(im, o, d, tmin)
                                    : ct_ref_chord_box(o, d, tmin, lo, hi);
        double got = y[(k * g->det_v + j) * g->det_u + i], err = fabs(got - want);
        max_abs = MAX(max_abs, err);
        max_len = MAX(max_len, want);
        if (want >= 2.0) {
          hits++;
          max_rel = MAX(max_rel, err / want);
        } else if (want > 0) {
          grazing_rel = MAX(grazing_rel, err / want);
        }
      }
  /* Every ray: error <= 1e-5 of the longest chord. Box: also per ray, relative error <= 1e-5
   * for chords of 2 mm (>= 1.3 voxels) or more. Shorter chords graze an edge, where a float32
   * ray's ~1e-6 mm position error is amplified by 1 / tan(incidence); a voxelised ball's
   * staircase surface has such edges inside long chords too, so it gets the first bound. */
  g_test_message("siddon %s %s: %u rays with chords >= 2 mm, max relative error %.2e; shorter "
                 "(grazing) chords %.2e; max abs %.2e mm = %.2e of the longest chord",
                 beam == TL_CT_CONE ? "cone" : "parallel", voxelised_ref ? "ball" : "box", hits,
                 max_rel, grazing_rel, max_abs, max_abs / max_len);
  g_assert_cmpuint(hits, >, npix / 4);
  if (!voxelised_ref) g_assert_cmpfloat(max_rel, <=, 1e-5);
  g_assert_cmpfloat(max_abs, <=, 1e-5 * max_len);
}

static void test_siddon_chords(void) {
  TlImageGrid grid = test_grid();
  g_autoptr(TlImage) ones = tl_image_new(&grid);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&grid); i++) ones->data[i] = 1.0f;
  check_chords(TL_CT_CONE, ones, FALSE);
  check_chords(TL_CT_PARALLEL, ones, FALSE);
}

/* A uniform ball: Siddon equals the exact chord through the voxelised ball (the object a
 * voxel grid holds) to 1e-5, and the continuous ball's chord to within the voxelisation. */
static void test_siddon_ball(void) {
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(24, 24, 24, 1, 1, 1);
  g_autoptr(TlCtPhantom) ball = tl_ct_phantom_new_preset("ball", &error);
  g_autoptr(TlImage) im = tl_ct_phantom_rasterise(ball, &grid, 1, 1.0, &error);
  g_assert_no_error(error);
  check_chords(TL_CT_CONE, im, TRUE);
  check_chords(TL_CT_PARALLEL, im, TRUE);

  g_autoptr(TlCtGeometry) g = make_geometry(TL_CT_PARALLEL, 36, 28);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_SIDDON, &error);
  TlCtViews v = tl_ct_views_all(g);
  guint64 npix = tl_ct_views_n_pixels(g, &v);
  g_autoptr(TlArray) dx = upload(im->data, tl_image_grid_n_voxels(&grid)), dy = upload(NULL, npix);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_ct_projector_forward(p, s, &v, dx, dy, FALSE, &error));
  finish(s);
  g_autofree float *y = g_new(float, npix);
  g_assert_true(tl_array_download(dy, y, &error));
  double sum_err = 0, sum_len = 0;
  for (guint64 i = 0; i < npix; i++) {
    double o[3], d[3];
    guint k = i / (g->det_u * g->det_v), j = i / g->det_u % g->det_v, u = i % g->det_u;
    tl_ct_geometry_ray(g, k, u, j, o, d);
    double want = tl_ct_phantom_line_integral(ball, &grid, 1.0, o, d, FALSE);
    sum_err += fabs(y[i] - want);
    sum_len += want;
  }
  /* a voxelised surface moves by up to half a voxel (0.5 mm) where the ray enters and
   * leaves; on average far less */
  g_test_message("continuous ball: mean |error| %.3f mm per mm of chord %.4f", sum_err / npix,
                 sum_err / sum_len);
  g_assert_cmpfloat(sum_err / npix, <, 0.5);
}

/* A uniform slab crossed along the dominant axis: Joseph's sum is the chord exactly; ray
 * casting's trilinear samples reproduce it to the sampling error of the edge ramps. */
static void test_uniform_slab(void) {
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(16, 12, 10, 1.0f, 1.5f, 1.25f);
  guint64 nvox = tl_image_grid_n_voxels(&grid);
  g_autofree float *ones = g_new(float, nvox);
  for (guint64 i = 0; i < nvox; i++) ones[i] = 1;
  double dir[3] = {-1, -0.08, 0.05}, eu[3] = {0, 1, 0}, ev[3];
  normalise(dir);
  double d = eu[0] * dir[0] + eu[1] * dir[1] + eu[2] * dir[2];
  for (int i = 0; i < 3; i++) eu[i] -= d * dir[i];
  normalise(eu);
  ev[0] = dir[1] * eu[2] - dir[2] * eu[1];
  ev[1] = dir[2] * eu[0] - dir[0] * eu[2];
  ev[2] = dir[0] * eu[1] - dir[1] * eu[0];
  double P[12], s0[3] = {0};
  view_matrix(s0, dir, eu, ev, 0, 0.7, 0.7, 16, 12, P);
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_matrices(TL_CT_PARALLEL, 1, 16, 12, P, &error);
  g_assert_no_error(error);
  TlCtViews v = tl_ct_views_all(g);
  guint64 npix = tl_ct_views_n_pixels(g, &v);
  g_autoptr(TlArray) dx = upload(ones, nvox), dy = upload(NULL, npix);
  g_autofree float *y = g_new(float, npix);
  for (TlCtMethod m = TL_CT_JOSEPH; m <= TL_CT_RAYCAST; m += 2) {
    g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, m, &error);
    g_assert_no_error(error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_true(tl_ct_projector_forward(p, s, &v, dx, dy, FALSE, &error));
    finish(s);
    g_assert_true(tl_array_download(dy, y, &error));
    double chord = grid.dims[0] * grid.voxel_mm[0] / fabs(dir[0]), max_rel = 0;
    guint n = 0;
    for (guint j = 0; j < g->det_v; j++)
      for (guint i = 0; i < g->det_u; i++) {
        double o[3], r[3], ok = TRUE;
        tl_ct_geometry_ray(g, 0, i, j, o, r);
        /* inside the transverse span of voxel centres on every x plane */
        for (guint k = 0; k < grid.dims[0] && ok; k++) {
          double x = grid.origin_mm[0] + k * grid.voxel_mm[0], t = (x - o[0]) / r[0];
          for (int a = 1; a < 3; a++) {
            double c = (o[a] + t * r[a] - grid.origin_mm[a]) / grid.voxel_mm[a];
            ok = ok && c >= 0 && c <= grid.dims[a] - 1;
          }
        }
        if (!ok) continue;
        n++;
        max_rel = MAX(max_rel, fabs(y[j * g->det_u + i] - chord) / chord);
      }
    g_test_message("%s: %u interior rays, max relative error %.2e", tl_ct_method_name(m), n,
                   max_rel);
    g_assert_cmpuint(n, >, 20);
    g_assert_cmpfloat(max_rel, <=, m == TL_CT_JOSEPH ? 1e-5 : 1e-2);
  }
}

/* The device's voxel-driven back projector against ct_ref_bp_voxel (Siegl et al. 2011 eq. 1) on
 * random projections of the views sel of g (NULL: all): within 1e-5 of the largest voxel. */
static void check_bp_voxel(const TlCtGeometry *g, const TlImageGrid *grid, const TlCtViews *sel,
                           const char *what) {
  GError *error = NULL;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, grid, TL_CT_VOXEL, &error);
  g_assert_no_error(error);
  TlCtViews v = sel ? *sel : tl_ct_views_all(g);
  guint64 nvox = tl_image_grid_n_voxels(grid), npix = tl_ct_views_n_pixels(g, &v);
  g_autofree float *y = g_new(float, npix), *f = g_new(float, nvox);
  for (guint64 i = 0; i < npix; i++) y[i] = rnd();
  g_autoptr(TlArray) dy = upload(y, npix), df = upload(NULL, nvox);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_ct_projector_back(p, s, &v, dy, df, FALSE, &error));
  finish(s);
  g_assert_true(tl_array_download(df, f, &error));
  g_autofree double *ref = g_new(double, nvox);
  /* the reference takes consecutive views: give it the selected ones in order */
  g_autoptr(TlCtGeometry) gs = tl_ct_geometry_subset(g, v.first, v.stride, v.count, &error);
  g_assert_no_error(error);
  ct_ref_bp_voxel(gs, 0, v.count, grid, y, ref);
  double max_ref = 0, max_err = 0;
  for (guint64 i = 0; i < nvox; i++) {
    max_ref = MAX(max_ref, fabs(ref[i]));
    max_err = MAX(max_err, fabs(f[i] - ref[i]));
  }
  g_test_message("voxel BP %s: max |ref| %.4g, max error %.2e (relative %.2e)", what, max_ref,
                 max_err, max_err / max_ref);
  g_assert_cmpfloat(max_ref, >, 0);
  g_assert_cmpfloat(max_err, <=, 1e-5 * max_ref);
}

static void test_bp_voxel(void) {
  GError *error = NULL;
  TlCtViews sub = {.first = 2, .stride = 2, .count = 4};
  TlImageGrid grid = test_grid();
  g_autoptr(TlCtGeometry) cone = make_geometry(TL_CT_CONE, 36, 28);
  g_autoptr(TlCtGeometry) par = make_geometry(TL_CT_PARALLEL, 36, 28);
  /* a circular orbit of 75 views, and every other view from view 1 */
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 75, 60, 100, 36, 28, 1.6, 1.6);
  g_autoptr(TlCtGeometry) orbit = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  TlCtViews odd = {.first = 1, .stride = 2, .count = 37};
  /* both builds of the kernel: four loads a sample, and two 64-bit ones (ct_bp_voxel64, where
   * the device has shaderInt64; else "2" runs the four-load build too) */
  static const char *const loads[] = {"4", "2"};
  for (gsize l = 0; l < G_N_ELEMENTS(loads); l++) {
    g_setenv("TOMOLAB_CT_BP_LOADS", loads[l], TRUE);
    g_test_message("ct_bp_voxel, %s loads a sample", loads[l]);
    check_bp_voxel(cone, &grid, NULL, "cone");
    check_bp_voxel(par, &grid, NULL, "parallel");
    check_bp_voxel(cone, &grid, &sub, "cone, views 2 + 2k");
    check_bp_voxel(orbit, &grid, NULL, "cone, 75 views");
    check_bp_voxel(orbit, &grid, &odd, "cone, views 1 + 2k of 75");
  }
  g_unsetenv("TOMOLAB_CT_BP_LOADS");

  /* no forward for the voxel-driven projector: a GError, not an abort */
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, cone, &grid, TL_CT_VOXEL, &error);
  g_assert_no_error(error);
  TlCtViews v = tl_ct_views_all(cone);
  g_autoptr(TlArray) dx = upload(NULL, tl_image_grid_n_voxels(&grid));
  g_autoptr(TlArray) dy = upload(NULL, tl_ct_views_n_pixels(cone, &v));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_false(tl_ct_projector_forward(p, s, &v, dx, dy, FALSE, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  finish(s);
}

/* Slices on the detector rows (parallel beam, one slice per row, and a volume of fewer slices
 * than rows): the kernel's two-tap sample (ct_bp_voxel's constant ROWS) against the four-tap
 * reference ct_ref_bp_voxel; and a grid shifted by a quarter row, which takes the four taps. */
static void test_bp_voxel_rows(void) {
  GError *error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, 9, 30, 4, 1.0, 1.5);
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  static const struct { guint nz; float dz; } cases[] = {{4, 0.0f}, {2, 0.0f}, {3, 0.375f}};
  for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
    TlImageGrid grid = tl_image_grid_centred(24, 22, cases[c].nz, 1.0f, 1.0f, 1.5f);
    grid.origin_mm[0] += 0.3f, grid.origin_mm[2] += cases[c].dz;
    for (int l = 2; l <= 4; l += 2) { /* both builds: one 64-bit load a sample, and two */
      g_autofree char *loads = g_strdup_printf("%d", l);
      g_setenv("TOMOLAB_CT_BP_LOADS", loads, TRUE);
      g_autofree char *what =
          g_strdup_printf("%u slices on rows%s, build for %d loads", cases[c].nz,
                          cases[c].dz != 0 ? " shifted by a quarter row" : "", l);
      check_bp_voxel(g, &grid, NULL, what);
    }
    g_unsetenv("TOMOLAB_CT_BP_LOADS");
  }
}

/* tl_ct_projector_set_disc: the voxels within the inscribed disc of each slice are the whole
 * back projection's, bit for bit; the others 0, or left as they were when accumulating. */
static void test_bp_voxel_disc(void) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = make_geometry(TL_CT_CONE, 36, 28);
  /* 56 x 16: the disc's radius is 8 voxels, and voxels lie beyond the reach (r + 16) of the
   * kernel's blocks along x (TL_CT_BP_BLOCK voxels, up to 16) */
  TlImageGrid grid = tl_image_grid_centred(56, 16, 3, 1.0f, 1.25f, 1.5f);
  grid.origin_mm[0] += 0.3f, grid.origin_mm[1] -= 0.2f;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_VOXEL, &error);
  g_assert_no_error(error);
  TlCtViews v = tl_ct_views_all(g);
  guint64 nvox = tl_image_grid_n_voxels(&grid), npix = tl_ct_views_n_pixels(g, &v);
  g_autofree float *y = g_new(float, npix), *start = g_new(float, nvox);
  g_autofree float *whole = g_new(float, nvox), *disc = g_new(float, nvox), *acc = g_new(float, nvox);
  for (guint64 i = 0; i < npix; i++) y[i] = rnd();
  for (guint64 i = 0; i < nvox; i++) start[i] = 1e3f;
  g_autoptr(TlArray) dy = upload(y, npix), dx = upload(start, nvox);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  float *out[3] = {whole, disc, acc};
  for (int c = 0; c < 3; c++) {
    tl_ct_projector_set_disc(p, c > 0);
    g_assert_true(tl_array_upload(dx, start, &error));
    g_assert_true(tl_ct_projector_back(p, s, &v, dy, dx, c == 2, &error));
    finish(s);
    g_assert_true(tl_array_download(dx, out[c], &error));
  }
  guint inside = 0, outside = 0;
  double cx = 0.5 * (grid.dims[0] - 1.0), cy = 0.5 * (grid.dims[1] - 1.0), r = 8.0;
  for (guint z = 0; z < grid.dims[2]; z++)
    for (guint yy = 0; yy < grid.dims[1]; yy++)
      for (guint x = 0; x < grid.dims[0]; x++) {
        gsize i = x + grid.dims[0] * (yy + (gsize)grid.dims[1] * z);
        double d2 = (x - cx) * (x - cx) + (yy - cy) * (yy - cy);
        if (d2 <= r * r) { /* inside: the whole projection's value */
          inside++;
          g_assert_cmpfloat(disc[i], ==, whole[i]);
          g_assert_cmpfloat(acc[i], ==, whole[i] + 1e3f);
        } else if (d2 > (r + 16) * (r + 16)) { /* beyond any block's reach: never computed */
          outside++;
          g_assert_cmpfloat(disc[i], ==, 0.0f);
          g_assert_cmpfloat(acc[i], ==, 1e3f);
        }
      }
  g_test_message("disc: %u voxels inside, %u outside checked", inside, outside);
  g_assert_cmpuint(inside, >, 0);
  g_assert_cmpuint(outside, >, 0);
}

/* Bad calls: volume behind the source, wrong array sizes, views out of range. */
static void test_bad_calls(void) {
  GError *error = NULL;
  g_autoptr(TlCtGeometry) g = make_geometry(TL_CT_CONE, 36, 28);
  TlImageGrid big = tl_image_grid_centred(100, 100, 10, 1.5f, 1.5f, 1.5f); /* holds the sources */
  g_assert_null(tl_ct_projector_new(ctx, g, &big, TL_CT_JOSEPH, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  TlImageGrid grid = test_grid();
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_SIDDON, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) small = upload(NULL, 10);
  g_autoptr(TlArray) img = upload(NULL, tl_image_grid_n_voxels(&grid));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  TlCtViews v = tl_ct_views_all(g);
  g_assert_false(tl_ct_projector_forward(p, s, &v, img, small, FALSE, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  TlCtViews bad = {.first = 5, .stride = 4, .count = 2};
  g_assert_false(tl_ct_projector_back(p, s, &bad, small, img, FALSE, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  TlCtMethod m;
  g_assert_false(tl_ct_method_from_name("fan", &m, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  finish(s);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_data_func("/ct/projector/adjoint/joseph", GINT_TO_POINTER(TL_CT_JOSEPH), test_adjoint);
  g_test_add_data_func("/ct/projector/adjoint/siddon", GINT_TO_POINTER(TL_CT_SIDDON), test_adjoint);
  g_test_add_data_func("/ct/projector/adjoint/raycast", GINT_TO_POINTER(TL_CT_RAYCAST),
                       test_adjoint);
  g_test_add_func("/ct/projector/back-env", test_back_env);
  g_test_add_func("/ct/projector/siddon/box-chords", test_siddon_chords);
  g_test_add_func("/ct/projector/siddon/ball-chords", test_siddon_ball);
  g_test_add_func("/ct/projector/uniform-slab", test_uniform_slab);
  g_test_add_func("/ct/projector/voxel-bp-vs-c", test_bp_voxel);
  g_test_add_func("/ct/projector/voxel-bp-rows", test_bp_voxel_rows);
  g_test_add_func("/ct/projector/voxel-bp-disc", test_bp_voxel_disc);
  g_test_add_func("/ct/projector/bad-calls", test_bad_calls);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
