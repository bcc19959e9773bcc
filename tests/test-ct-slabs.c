/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT volumes in z-slabs (issue 31 item 3, tl-ct-slabs.h), the split forced small by
 * TOMOLAB_CT_SLAB_BYTES so it runs on small data: for Joseph, Siddon and ray casting, cone and
 * parallel beams (rays along x, y and z, so Joseph interpolates across slab boundaries and walks
 * planes of one slab), the split forward projection equals the unsplit one to float rounding
 * (a ray's sum regrouped by slab), the split back projection equals the unsplit gather bit for
 * bit, and the split pair is adjoint to 1e-5; FDK into slabs equals FDK into one array bit for
 * bit, on a 512 x 512 x 160 float volume (160 MiB: beyond lavapipe's 128 MiB
 * maxStorageBufferRange, one array by its device address) split into 64 MiB slabs; what
 * cannot be held is refused, naming the grid, the bytes and the limit. */
#include <math.h>
#include <string.h>
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-slabs.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint32 rng_state = 0x9e3779b9u;
static float rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (float)(rng_state >> 8) * 0x1p-24f;
}

/* Parallel views along dirs chosen so each axis is dominant once, plus an oblique one. */
static TlCtGeometry *parallel_views(guint nu, guint nv) {
  static const double dirs[4][3] = {{1, 0.2, 0.1}, {0.3, -1, 0.45}, {0.1, 0.25, 1}, {1, -0.8, 0.9}};
  double m[12 * 4];
  for (int k = 0; k < 4; k++) {
    double d[3], n = 0, eu[3], ev[3];
    for (int i = 0; i < 3; i++) n += dirs[k][i] * dirs[k][i];
    for (int i = 0; i < 3; i++) d[i] = dirs[k][i] / sqrt(n);
    /* e_u: the axis least along d, made perpendicular; e_v = d x e_u */
    int a = fabs(d[0]) < fabs(d[1]) ? (fabs(d[0]) < fabs(d[2]) ? 0 : 2) : (fabs(d[1]) < fabs(d[2]) ? 1 : 2);
    for (int i = 0; i < 3; i++) eu[i] = (i == a) - d[a] * d[i];
    double e = sqrt(eu[0] * eu[0] + eu[1] * eu[1] + eu[2] * eu[2]);
    for (int i = 0; i < 3; i++) eu[i] /= e;
    ev[0] = d[1] * eu[2] - d[2] * eu[1], ev[1] = d[2] * eu[0] - d[0] * eu[2];
    ev[2] = d[0] * eu[1] - d[1] * eu[0];
    double *P = m + 12 * k, pitch = 0.9;
    for (int i = 0; i < 3; i++) P[i] = eu[i] / pitch, P[4 + i] = ev[i] / pitch, P[8 + i] = 0;
    P[3] = 0.5 * (nu - 1.0), P[7] = 0.5 * (nv - 1.0), P[11] = 1;
  }
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_matrices(TL_CT_PARALLEL, 4, nu, nv, m, &error);
  g_assert_no_error(error);
  return g;
}

static TlCtGeometry *cone_orbit(guint views, guint nu, guint nv) {
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, views, 120, 200, nu, nv, 1.2, 1.2);
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

static TlArray *new_float(guint64 n) {
  GError *error = NULL;
  TlArray *a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  return a;
}

static TlCtSlabs *new_slabs(const TlImageGrid *grid, guint64 slab_bytes, guint expect_slabs) {
  g_autofree char *bytes = g_strdup_printf("%" G_GUINT64_FORMAT, slab_bytes);
  g_setenv("TOMOLAB_CT_SLAB_BYTES", bytes, TRUE);
  GError *error = NULL;
  TlCtSlabs *v = tl_ct_slabs_new(ctx, grid, &error);
  g_unsetenv("TOMOLAB_CT_SLAB_BYTES");
  g_assert_no_error(error);
  g_assert_cmpuint(tl_ct_slabs_count(v), ==, expect_slabs);
  return v;
}

static void finish(TlStream *s) {
  GError *error = NULL;
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
}

static double dot(const float *a, const float *b, guint64 n) {
  double sum = 0;
  for (guint64 i = 0; i < n; i++) sum += (double)a[i] * b[i];
  return sum;
}

/* 22 x 17 x 21 voxels split by 6 planes: 4 slabs, the last of 3 planes. */
static void check_pair(const TlCtGeometry *g, TlCtMethod method) {
  TlImageGrid grid = tl_image_grid_centred(22, 17, 21, 1.0f, 1.1f, 0.9f);
  grid.origin_mm[2] += 0.37f;
  guint64 nvox = tl_image_grid_n_voxels(&grid), plane = 22 * 17;
  TlCtViews all = tl_ct_views_all(g);
  guint64 npix = tl_ct_views_n_pixels(g, &all);
  GError *error = NULL;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, method, &error);
  g_assert_no_error(error);
  g_assert_true(tl_ct_projector_set_back(p, TL_CT_BACK_GATHER, &error));
  g_autoptr(TlCtSlabs) xs = new_slabs(&grid, 4 * plane * 6 + 100, 4);
  g_autoptr(TlCtSlabs) bs = new_slabs(&grid, 4 * plane * 6 + 100, 4);
  g_autofree float *x = g_new(float, nvox), *y = g_new(float, npix);
  for (guint64 i = 0; i < nvox; i++) x[i] = rnd();
  for (guint64 i = 0; i < npix; i++) y[i] = rnd() - 0.25f;
  g_autoptr(TlArray) xa = new_float(nvox), ba = new_float(nvox);
  g_autoptr(TlArray) ya = new_float(npix), fa = new_float(npix), fs = new_float(npix);
  g_assert_true(tl_array_upload(xa, x, &error) && tl_array_upload(ya, y, &error) &&
                tl_ct_slabs_upload(xs, x, &error));
  g_assert_no_error(error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_true(tl_ct_projector_forward(p, s, &all, xa, fa, FALSE, &error) &&
                tl_ct_slabs_forward(p, s, &all, xs, fs, FALSE, &error) &&
                tl_ct_projector_back(p, s, &all, ya, ba, FALSE, &error) &&
                tl_ct_slabs_back(p, s, &all, ya, bs, FALSE, &error));
  g_assert_no_error(error);
  finish(s);
  g_autofree float *f1 = g_new(float, npix), *f2 = g_new(float, npix);
  g_autofree float *b1 = g_new(float, nvox), *b2 = g_new(float, nvox);
  g_assert_true(tl_array_download(fa, f1, &error) && tl_array_download(fs, f2, &error) &&
                tl_array_download(ba, b1, &error) && tl_ct_slabs_download(bs, b2, &error));
  g_assert_no_error(error);
  /* forward: the same sums regrouped by slab */
  double fmax = 0, fdiff = 0;
  for (guint64 i = 0; i < npix; i++)
    fmax = MAX(fmax, fabs(f1[i])), fdiff = MAX(fdiff, fabs((double)f1[i] - f2[i]));
  /* back: bit for bit, and something was written in every slab */
  guint64 differ = 0;
  double bmax[4] = {0};
  for (guint64 i = 0; i < nvox; i++) {
    differ += memcmp(&b1[i], &b2[i], 4) != 0;
    bmax[MIN(i / plane / 6, 3)] = MAX(bmax[MIN(i / plane / 6, 3)], fabs(b2[i]));
  }
  double ax_y = dot(f2, y, npix), x_aty = dot(x, b2, nvox);
  double adj = fabs(ax_y - x_aty) / MAX(fabs(ax_y), fabs(x_aty));
  g_test_message("%s %s: forward max %.4g, split differs by %.3g (%.2g relative); back: %" G_GUINT64_FORMAT
                 " voxels differ; <Ax, y> %.9g, <x, A^T y> %.9g (%.2g)", g->beam == TL_CT_CONE ? "cone" : "parallel",
                 tl_ct_method_name(method), fmax, fdiff, fdiff / fmax, differ, ax_y, x_aty, adj);
  g_assert_cmpfloat(fmax, >, 1.0);
  g_assert_cmpfloat(fdiff, <=, 1e-5 * fmax);
  g_assert_cmpuint(differ, ==, 0);
  for (int k = 0; k < 4; k++) g_assert_cmpfloat(bmax[k], >, 0);
  g_assert_cmpfloat(adj, <=, 1e-5);
}

static void test_pairs(void) {
  g_autoptr(TlCtGeometry) par = parallel_views(40, 36);
  g_autoptr(TlCtGeometry) cone = cone_orbit(7, 40, 36);
  for (TlCtMethod m = TL_CT_JOSEPH; m <= TL_CT_RAYCAST; m++) {
    check_pair(par, m);
    check_pair(cone, m);
  }
}

/* FDK into one array against FDK into slabs of the same 160 MiB volume: the same bits. */
static void test_fdk_large(void) {
  TlImageGrid grid = tl_image_grid_centred(512, 512, 160, 0.25f, 0.25f, 0.3f);
  guint64 nvox = tl_image_grid_n_voxels(&grid), plane = 512 * 512;
  g_assert_cmpuint(4 * nvox, >, 128u << 20);
  g_autoptr(TlCtGeometry) g = cone_orbit(4, 48, 80);
  TlCtViews all = tl_ct_views_all(g);
  guint64 npix = tl_ct_views_n_pixels(g, &all);
  GError *error = NULL;
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new_for_slabs(ctx, g, &grid, TL_CT_FILTER_RAM_LAK,
                                                  TL_CT_RAMP_AUTO, 2, &error);
  g_assert_no_error(error);
  g_autofree float *y = g_new(float, npix);
  for (guint64 i = 0; i < npix; i++) y[i] = rnd();
  g_autoptr(TlArray) ya = new_float(npix);
  g_assert_true(tl_array_upload(ya, y, &error));
  g_autofree float *a = g_new(float, nvox), *b = g_new(float, nvox);
  double t_one, t_split; /* reported, not asserted: speed belongs to bench/ */
  {
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(TlArray) image = new_float(nvox);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_true(tl_ct_fdk_run(f, s, ya, image, &error));
    g_assert_no_error(error);
    finish(s);
    t_one = (g_get_monotonic_time() - t0) * 1e-6;
    g_assert_true(tl_array_download(image, a, &error));
  }
  {
    g_autoptr(TlCtSlabs) xs = new_slabs(&grid, 64u << 20, 3); /* 64 + 64 + 32 planes */
    guint first, planes;
    tl_ct_slabs_array(xs, 2, &first, &planes);
    g_assert_cmpuint(first, ==, 128);
    g_assert_cmpuint(planes, ==, 32);
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_true(tl_ct_slabs_fdk(f, s, ya, xs, &error));
    g_assert_no_error(error);
    finish(s);
    t_split = (g_get_monotonic_time() - t0) * 1e-6;
    g_assert_true(tl_ct_slabs_download(xs, b, &error));
  }
  g_assert_no_error(error);
  guint64 differ = 0, nonzero[3] = {0};
  for (guint64 i = 0; i < nvox; i++) {
    differ += memcmp(&a[i], &b[i], 4) != 0;
    nonzero[MIN(i / plane / 64, 2)] += b[i] != 0;
  }
  g_test_message("FDK 512 x 512 x 160 in 3 slabs: %" G_GUINT64_FORMAT " voxels differ; non-zero "
                 "per slab %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                 "; %.2f s in one array, %.2f s in slabs", differ, nonzero[0], nonzero[1],
                 nonzero[2], t_one, t_split);
  g_assert_cmpuint(differ, ==, 0);
  for (int k = 0; k < 3; k++) g_assert_cmpuint(nonzero[k], >, plane / 8);
}

/* What cannot be held: a plane beyond the slab limit, an unreadable limit, 2^32 voxels. */
static void test_refused(void) {
  TlImageGrid grid = tl_image_grid_centred(64, 32, 8, 1, 1, 1);
  GError *error = NULL;
  g_setenv("TOMOLAB_CT_SLAB_BYTES", "8000", TRUE); /* a plane is 8192 bytes */
  g_assert_null(tl_ct_slabs_new(ctx, &grid, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "CT volume 64 x 32 x 8 (65536 bytes)"));
  g_assert_nonnull(strstr(error->message, "a plane takes 8192 bytes, a slab at most 8000 bytes"));
  g_clear_error(&error);
  g_setenv("TOMOLAB_CT_SLAB_BYTES", "64k", TRUE);
  g_assert_null(tl_ct_slabs_new(ctx, &grid, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "TOMOLAB_CT_SLAB_BYTES is '64k'"));
  g_clear_error(&error);
  g_unsetenv("TOMOLAB_CT_SLAB_BYTES");
  /* the slab functions check the volume against the projector */
  g_autoptr(TlCtGeometry) g = cone_orbit(3, 16, 8);
  TlImageGrid other = tl_image_grid_centred(64, 32, 9, 1, 1, 1);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &other, TL_CT_JOSEPH, &error);
  g_autoptr(TlCtSlabs) xs = tl_ct_slabs_new(ctx, &grid, &error);
  g_assert_no_error(error);
  TlCtViews all = tl_ct_views_all(g);
  g_autoptr(TlArray) y = new_float(tl_ct_views_n_pixels(g, &all));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_false(tl_ct_slabs_forward(p, s, &all, xs, y, FALSE, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "64 x 32 x 8 voxels given to a projector of 64 x 32 x 9"));
  g_clear_error(&error);
  finish(s);
  /* 2048 x 2048 x 1024 = 2^32 voxels: beyond the kernels' 32-bit indices */
  TlImageGrid huge = tl_image_grid_centred(2048, 2048, 1024, 0.1f, 0.1f, 0.1f);
  g_autoptr(TlCtGeometry) par = parallel_views(16, 8);
  g_assert_null(tl_ct_projector_new(ctx, par, &huge, TL_CT_JOSEPH, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "CT volume 2048 x 2048 x 1024: 4294967296 voxels, an "
                                          "image of 17179869184 bytes"));
  g_assert_nonnull(strstr(error->message, "4294967295 voxels"));
  g_clear_error(&error);
  g_assert_null(tl_ct_slabs_new(ctx, &huge, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  ctx = tl_test_context();
  g_test_add_func("/ct-slabs/pairs", test_pairs);
  g_test_add_func("/ct-slabs/fdk-512x512x160", test_fdk_large);
  g_test_add_func("/ct-slabs/refused", test_refused);
  int r = g_test_run();
  tl_test_context_done(ctx);
  return r;
}
