/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The run layer's FDK / FBP path (run/tl-run-ct-direct.h, issue 31 item 3) that the CLI, the
 * window and Python share: in z-slabs forced small (TOMOLAB_CT_SLAB_BYTES) it equals the
 * library's one-array FDK (tl_ct_fdk_run, an independent path) bit for bit, cone and parallel
 * beam (FBP); the NIfTI written plane by plane has NIfTI-1's published layout (348-byte header,
 * dims, datatype 16, vox_offset 352, "n+1") and the voxels' bytes at 352; grids beyond what
 * memory or the kernels allow are refused before any allocation, naming the grid, its bytes
 * and the limit; the run description takes a grid beyond 2^28 voxels for fdk only. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "ct/tl-ct-fdk.h"
#include "run/tl-run-ct-direct.h"
#include "run/tl-run-spec.h"
#include "tl-test-common.h"

static TlContext *ctx;

static TlCtGeometry *cone_orbit(guint views, guint nu, guint nv) {
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, views, 120, 200, nu, nv, 1.2, 1.2);
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

static TlCtGeometry *parallel_orbit(guint views, guint nu, guint nv) {
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, views, nu, nv, 1.0, 1.0);
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

/* Smooth positive projections (a blob's), the same on every run. */
static TlArray *projections(const TlCtGeometry *g) {
  guint64 n = (guint64)g->n_views * g->det_u * g->det_v;
  g_autofree float *p = g_new(float, n);
  for (guint64 i = 0; i < n; i++) {
    guint u = i % g->det_u, v = (i / g->det_u) % g->det_v, k = (guint)(i / g->det_u / g->det_v);
    double du = (u - 0.5 * g->det_u) / g->det_u, dv = (v - 0.5 * g->det_v) / g->det_v;
    p[i] = (float)(exp(-8 * (du * du + dv * dv)) * (1 + 0.1 * (k % 3)));
  }
  GError *error = NULL;
  TlArray *a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(a, p, &error));
  return a;
}

/* The library's one-array FDK / FBP: the reference. */
static float *one_array(const TlCtGeometry *g, const TlImageGrid *grid, gboolean fbp,
                        const TlArray *proj) {
  GError *error = NULL;
  g_autoptr(TlCtFdk) f = fbp ? tl_ct_fbp_new(ctx, g, grid, TL_CT_FILTER_HANN, 0, &error)
                             : tl_ct_fdk_new(ctx, g, grid, TL_CT_FILTER_HANN, 0, &error);
  g_assert_no_error(error);
  guint64 n = tl_image_grid_n_voxels(grid);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  float *out = g_new(float, n);
  g_assert_true(tl_ct_fdk_run(f, s, proj, x, &error) && tl_stream_finish(s, &error) &&
                tl_array_download(x, out, &error));
  g_assert_no_error(error);
  return out;
}

static TlCtSlabs *direct(const TlCtGeometry *g, const TlImageGrid *grid, gboolean fbp,
                         const TlArray *proj, const char *slab_bytes, guint expect_slabs) {
  if (slab_bytes) g_setenv("TOMOLAB_CT_SLAB_BYTES", slab_bytes, TRUE);
  GError *error = NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  TlCtSlabs *v = tl_run_ct_direct(ctx, s, g, grid, fbp, TL_CT_FILTER_HANN, 0, proj, &error);
  g_unsetenv("TOMOLAB_CT_SLAB_BYTES");
  g_assert_no_error(error);
  g_assert_cmpuint(tl_ct_slabs_count(v), ==, expect_slabs);
  return v;
}

static void check_equal(const TlCtGeometry *g, gboolean fbp) {
  TlImageGrid grid = tl_image_grid_centred(21, 18, 13, 1.1f, 1.1f, 1.3f);
  guint64 n = tl_image_grid_n_voxels(&grid), plane = 21 * 18;
  g_autoptr(TlArray) proj = projections(g);
  g_autofree float *ref = one_array(g, &grid, fbp, proj);
  g_autofree char *four = g_strdup_printf("%" G_GUINT64_FORMAT, 4 * plane * 4 + 3);
  g_autoptr(TlCtSlabs) whole = direct(g, &grid, fbp, proj, NULL, 1);
  g_autoptr(TlCtSlabs) split = direct(g, &grid, fbp, proj, four, 4); /* 4+4+4+1 planes */
  g_autofree float *a = g_new(float, n), *b = g_new(float, n);
  GError *error = NULL;
  g_assert_true(tl_ct_slabs_download(whole, a, &error) && tl_ct_slabs_download(split, b, &error));
  g_assert_no_error(error);
  double peak = 0;
  for (guint64 i = 0; i < n; i++) peak = MAX(peak, fabs(ref[i]));
  g_assert_cmpfloat(peak, >, 0);
  g_assert_cmpmem(a, n * 4, ref, n * 4);
  g_assert_cmpmem(b, n * 4, ref, n * 4);
  /* the image from the slabs (the window's and a truth's RMSE way) */
  g_autoptr(TlImage) im = tl_run_ct_slabs_image(split, &error);
  g_assert_no_error(error);
  g_assert_cmpmem(im->data, n * 4, ref, n * 4);
}

static void test_equal(void) {
  g_autoptr(TlCtGeometry) cone = cone_orbit(24, 32, 28);
  check_equal(cone, FALSE);
  g_autoptr(TlCtGeometry) par = parallel_orbit(30, 32, 13);
  check_equal(par, TRUE);
  /* FBP refuses a cone beam on this path too */
  g_autoptr(TlArray) proj = projections(cone);
  TlImageGrid grid = tl_image_grid_centred(8, 8, 8, 1, 1, 1);
  GError *error = NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_null(tl_run_ct_direct(ctx, s, cone, &grid, TRUE, TL_CT_FILTER_RAM_LAK, 0, proj, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "cone beam"));
  g_clear_error(&error);
}

static guint32 le32(const guint8 *p) { return p[0] | p[1] << 8 | p[2] << 16 | (guint32)p[3] << 24; }
static guint16 le16(const guint8 *p) { return (guint16)(p[0] | p[1] << 8); }

/* NIfTI-1 (nifti1.h, the published layout) written plane by plane from slabs of 4 planes. */
static void test_nifti(void) {
  g_autoptr(TlCtGeometry) g = cone_orbit(24, 32, 28);
  TlImageGrid grid = tl_image_grid_centred(21, 18, 13, 1.1f, 1.1f, 1.3f);
  guint64 n = tl_image_grid_n_voxels(&grid), plane = 21 * 18;
  g_autoptr(TlArray) proj = projections(g);
  g_autofree char *four = g_strdup_printf("%" G_GUINT64_FORMAT, 4 * plane * 4);
  g_autoptr(TlCtSlabs) v = direct(g, &grid, FALSE, proj, four, 4);
  g_autofree float *x = g_new(float, n);
  GError *error = NULL;
  g_assert_true(tl_ct_slabs_download(v, x, &error));
  g_autofree char *dir = g_dir_make_tmp("tl-run-ct-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "v.nii", NULL);
  g_autofree char *gz = g_build_filename(dir, "v.nii.gz", NULL);
  g_autofree char *raw = g_build_filename(dir, "v.raw", NULL);
  g_assert_true(tl_run_ct_slabs_save(v, "mm^-1", path, &error));
  g_assert_true(tl_run_ct_slabs_save(v, "", gz, &error));
  g_assert_true(tl_run_ct_slabs_save(v, "", raw, &error)); /* through one TlImage */
  g_assert_no_error(error);
  g_autofree guint8 *buf = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, (char **)&buf, &len, &error));
  g_assert_cmpuint(len, ==, 352 + 4 * n);
  g_assert_cmpuint(le32(buf), ==, 348);                  /* sizeof_hdr */
  g_assert_cmpuint(le16(buf + 40), ==, 3);               /* dim[0] */
  g_assert_cmpuint(le16(buf + 42), ==, 21);
  g_assert_cmpuint(le16(buf + 44), ==, 18);
  g_assert_cmpuint(le16(buf + 46), ==, 13);
  g_assert_cmpuint(le16(buf + 70), ==, 16);              /* DT_FLOAT32 */
  g_assert_cmpuint(le16(buf + 72), ==, 32);              /* bitpix */
  float off;
  memcpy(&off, buf + 108, 4);
  g_assert_cmpfloat(off, ==, 352);                       /* vox_offset */
  g_assert_cmpmem(buf + 344, 4, "n+1", 4);               /* magic */
  g_assert_nonnull(strstr((const char *)buf + 148, "unit=mm^-1")); /* descrip */
  g_assert_cmpmem(buf + 352, 4 * n, x, 4 * n);           /* little-endian host */
  for (int k = 0; k < 3; k++) {
    const char *p = k == 0 ? path : k == 1 ? gz : raw;
    g_autoptr(TlImage) im = tl_image_load(p, &error);
    g_assert_no_error(error);
    g_assert_true(tl_image_grid_equal(&im->grid, &grid));
    g_assert_cmpmem(im->data, 4 * n, x, 4 * n);
  }
  tl_test_remove_tree(dir);
}

static void expect(GError *error, const char *a, const char *b, const char *c) {
  g_assert_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  for (const char *w[] = {a, b, c}, **p = w; p < w + 3; p++)
    if (*p && !strstr(error->message, *p)) g_error("'%s' not in: %s", *p, error->message);
}

static void test_refused(void) {
  GError *error = NULL;
  /* beyond the kernels' 2^32 - 1 voxels */
  TlImageGrid big = tl_image_grid_centred(2048, 2048, 1024, 0.1f, 0.1f, 0.1f);
  g_assert_false(tl_run_ct_direct_check(ctx, &big, 0, &error));
  expect(error, "2048 x 2048 x 1024", "17179869184 bytes", "2^32 - 1");
  g_clear_error(&error);
  /* the host's memory for a whole volume (Python's array): the limit named */
  TlImageGrid g = tl_image_grid_centred(1024, 1024, 1024, 0.1f, 0.1f, 0.1f);
  g_assert_false(tl_run_ct_direct_check(ctx, &g, G_MAXUINT64 / 2, &error));
  expect(error, "1024 x 1024 x 1024", "4294967296 bytes", "MemAvailable");
  g_clear_error(&error);
  /* a slab limit below one plane */
  g_setenv("TOMOLAB_CT_SLAB_BYTES", "1000", TRUE);
  TlImageGrid small = tl_image_grid_centred(24, 20, 17, 1, 1, 1);
  g_assert_false(tl_run_ct_direct_check(ctx, &small, 0, &error));
  g_unsetenv("TOMOLAB_CT_SLAB_BYTES");
  expect(error, "24 x 20 x 17", "32640 bytes", "1000 bytes");
  g_clear_error(&error);
  /* the run description: a grid beyond 2^28 voxels for fdk, not for an iterative run */
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  g_assert_true(tl_run_spec_set(s, "modality", "ct", &error) &&
                tl_run_spec_set(s, "data", "scan.tlct", &error) &&
                tl_run_spec_set(s, "grid", "1024x1024x1024@0.25", &error));
  g_assert_no_error(error);
  g_assert_true(tl_run_spec_validate(s, &error));
  g_assert_no_error(error);
  g_assert_true(tl_run_spec_set(s, "algorithm", "cgls", &error));
  g_assert_false(tl_run_spec_validate(s, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "1073741824 voxels"));
  g_assert_nonnull(strstr(error->message, "2^28"));
  g_clear_error(&error);
  TlImageGrid pg;
  g_assert_false(tl_run_parse_grid("1024x1024x1024@0.25", &pg, &error)); /* one TlImage's */
  g_clear_error(&error);
  g_assert_true(tl_run_parse_grid_any("1024x1024x1024@0.25", &pg, &error));
  g_assert_no_error(error);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  ctx = tl_test_context();
  g_test_add_func("/run-ct-direct/slabs-equal-one-array", test_equal);
  g_test_add_func("/run-ct-direct/nifti-plane-by-plane", test_nifti);
  g_test_add_func("/run-ct-direct/refused", test_refused);
  int r = g_test_run();
  tl_test_context_done(ctx);
  return r;
}
