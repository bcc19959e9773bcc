/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CT ramp filter by FFT (VkFFT, tl-ct-ramp.h) against the exact spatial convolution and a
 * plain C double-precision convolution with the same taps, for each window, odd and even
 * detector widths, partial batches; FDK with either filter; FBP of a parallel-beam
 * Shepp-Logan from its analytic line integrals against the phantom and the C reference FBP;
 * FBP of the real tooth scan (../shared/data/tooth/tooth.h5). */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "ct-ref.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-data.h"
#include "ct/tl-ct-simulate.h"
#include "dataset/tl-formats.h"
#include "tl-test-common.h"

static TlContext *ctx;

static double max_abs(const float *a, guint64 n) {
  double m = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, fabs(a[i]));
  return m;
}

/* rows x nu samples through one filter method; returns the filtered rows (g_free). */
static float *filter_rows(TlCtFilter w, guint nu, guint max_rows, guint rows, TlCtRampMethod m,
                          const float *x) {
  GError *error = NULL;
  g_autoptr(TlCtRamp) r = tl_ct_ramp_new(ctx, w, nu, max_rows, m, &error);
  g_assert_no_error(error);
  g_assert_cmpint(tl_ct_ramp_method(r), ==, m);
  guint64 n = (guint64)max_rows * nu;
  g_autoptr(TlArray) src = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlArray) dst = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload_range(src, 0, (guint64)rows * nu, x, &error));
  g_assert_true(tl_ct_ramp_run(r, s, src, dst, rows, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  float *y = g_new(float, (gsize)rows * nu);
  g_assert_true(tl_array_download_range(dst, 0, (guint64)rows * nu, y, &error));
  return y;
}

/* The linear convolution of one row with the taps |l| < nu (g[l + nu - 1]) at output i, in
 * double: the plain C reference of both ramp paths. */
static double conv_ref(const double *g, const float *row, guint nu, guint i) {
  double ref = 0;
  for (guint j = 0; j < nu; j++) ref += g[(long)i - (long)j + nu - 1] * row[j];
  return ref;
}

/* FFT vs spatial vs C, relative to the largest output: <= 1e-5 (the bound). */
static void test_fft_vs_spatial(void) {
  if (!tl_ct_ramp_have_fft()) {
    g_test_skip("built without VkFFT (-Dvkfft): the FFT path does not exist");
    return;
  }
  static const guint widths[] = {1, 2, 7, 64, 127, 250, 333, 640, 1031};
  GRand *rand = g_rand_new_with_seed(31);
  for (guint wi = 0; wi < G_N_ELEMENTS(widths); wi++) {
    guint nu = widths[wi], max_rows = 9, rows = wi % 2 ? 9 : 5; /* full and partial batches */
    g_autofree float *x = g_new(float, (gsize)rows * nu);
    /* rows of a positive sinogram-like profile plus noise: a mean far from 0 is the hard case
     * for an FFT (the DC term is large, the filtered output small) */
    for (guint i = 0; i < rows * nu; i++)
      x[i] = (float)(2.0 + sin(0.05 * (i % nu)) + g_rand_double_range(rand, -0.5, 0.5));
    for (TlCtFilter w = 0; w < TL_CT_FILTER_N; w++) {
      g_autofree float *fs = filter_rows(w, nu, max_rows, rows, TL_CT_RAMP_SPATIAL, x);
      g_autofree float *ff = filter_rows(w, nu, max_rows, rows, TL_CT_RAMP_FFT, x);
      g_autofree double *g = tl_ct_ramp_kernel(w, nu);
      double d_fft = 0, d_sp = 0;
      for (guint r = 0; r < rows; r++)
        for (guint i = 0; i < nu; i++) {
          double ref = conv_ref(g, x + (gsize)r * nu, nu, i);
          d_fft = MAX(d_fft, fabs(ff[r * nu + i] - ref));
          d_sp = MAX(d_sp, fabs(fs[r * nu + i] - ref));
        }
      double scale = max_abs(fs, (guint64)rows * nu), d = 0;
      for (guint i = 0; i < rows * nu; i++) d = MAX(d, fabs(ff[i] - (double)fs[i]));
      g_test_message("%-11s nu %4u (N %4u): |fft - spatial| %.2e, |fft - C| %.2e, "
                     "|spatial - C| %.2e of %.3g", tl_ct_filter_name(w), nu,
                     tl_ct_ramp_fft_size(nu), d / scale, d_fft / scale, d_sp / scale, scale);
      g_assert_cmpfloat(d, <=, 1e-5 * scale);
      g_assert_cmpfloat(d_fft, <=, 1e-5 * scale);
    }
  }
  g_rand_free(rand);
}

/* The spatial convolution (ct_fdk_filter: all taps, or Ram-Lak's odd taps only, outputs of
 * each parity in blocks of their own) against a plain C double-precision convolution with
 * tl_ct_ramp_kernel's taps, every window, widths odd and even around the block size; built
 * with or without VkFFT. Relative to the largest output: <= 1e-5. */
static void test_spatial_vs_c(void) {
  static const guint widths[] = {1, 2, 3, 4, 8, 9, 15, 16, 17, 33, 312, 641};
  GRand *rand = g_rand_new_with_seed(17);
  for (guint wi = 0; wi < G_N_ELEMENTS(widths); wi++) {
    guint nu = widths[wi], max_rows = 4, rows = wi % 2 ? 4 : 3;
    g_autofree float *x = g_new(float, (gsize)rows * nu);
    for (guint i = 0; i < rows * nu; i++)
      x[i] = (float)(1.5 + cos(0.07 * (i % nu)) + g_rand_double_range(rand, -0.5, 0.5));
    for (TlCtFilter w = 0; w < TL_CT_FILTER_N; w++) {
      g_autofree float *fs = filter_rows(w, nu, max_rows, rows, TL_CT_RAMP_SPATIAL, x);
      g_autofree double *g = tl_ct_ramp_kernel(w, nu);
      double d = 0, scale = 0;
      for (guint r = 0; r < rows; r++)
        for (guint i = 0; i < nu; i++) {
          double ref = conv_ref(g, x + (gsize)r * nu, nu, i);
          d = MAX(d, fabs(fs[r * nu + i] - ref));
          scale = MAX(scale, fabs(ref));
        }
      g_test_message("%-11s nu %4u: |spatial - C| %.2e of %.3g", tl_ct_filter_name(w), nu,
                     d / scale, scale);
      g_assert_cmpfloat(scale, >, 0);
      g_assert_cmpfloat(d, <=, 1e-5 * scale);
    }
  }
  g_rand_free(rand);
}

/* Rows beyond what one transform takes (maxStorageBufferRange; here capped at 4 rows by
 * $TOMOLAB_FFT_ROWS) go through in chunks: 9 rows = 4 + 4 + 1, as the spatial path filters them. */
static void test_fft_chunks(void) {
  if (!tl_ct_ramp_have_fft()) {
    g_test_skip("built without VkFFT (-Dvkfft): the FFT path does not exist");
    return;
  }
  guint nu = 45, rows = 9;
  float x[9 * 45];
  for (guint i = 0; i < rows * nu; i++) x[i] = (float)(1.0 + sin(0.3 * i));
  g_autofree float *ref = filter_rows(TL_CT_FILTER_SHEPP_LOGAN, nu, rows, rows, TL_CT_RAMP_SPATIAL, x);
  g_setenv("TOMOLAB_FFT_ROWS", "4", TRUE);
  g_autofree float *y = filter_rows(TL_CT_FILTER_SHEPP_LOGAN, nu, rows, rows, TL_CT_RAMP_FFT, x);
  g_unsetenv("TOMOLAB_FFT_ROWS");
  double m = max_abs(ref, rows * nu);
  for (guint i = 0; i < rows * nu; i++) g_assert_cmpfloat(fabs(y[i] - ref[i]), <=, 1e-5 * m);
}

/* The padded sizes: even, >= 2 nu - 1, 2^a m with m = 1, 3, 5 or 7, and the smallest such
 * (searched upwards here, one integer at a time). */
static gboolean pow2_times_small_odd(guint n) {
  while (n % 2 == 0) n /= 2;
  return n == 1 || n == 3 || n == 5 || n == 7;
}

static void test_fft_size(void) {
  for (guint nu = 1; nu < 3000; nu += 7) {
    guint n = tl_ct_ramp_fft_size(nu);
    g_assert_cmpuint(n % 2, ==, 0);
    g_assert_cmpuint(n, >=, 2 * nu - 1);
    g_assert_true(pow2_times_small_odd(n));
    for (guint k = MAX(2 * nu - 1, 2); k < n; k++)
      g_assert_true(k % 2 == 1 || !pow2_times_small_odd(k));
    g_assert_cmpuint(n, <=, 1.25 * (2 * nu - 1) + 2);
  }
  g_assert_cmpuint(tl_ct_ramp_fft_size(640), ==, 1280);
  g_assert_cmpuint(tl_ct_ramp_fft_size(312), ==, 640);  /* not 630 = 2 3^2 5 7 */
  g_assert_cmpuint(tl_ct_ramp_fft_size(200), ==, 448);  /* not 400 = 2^4 5^2 */
  g_assert_cmpuint(tl_ct_ramp_fft_size(1), ==, 2);
}

/* The plan cache files (vkfft-*.bin) beside the pipeline cache, as a list of paths. */
static GPtrArray *cache_files(const char *dir) {
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  for (const char *name; d && (name = g_dir_read_name(d));)
    if (g_str_has_prefix(name, "vkfft-")) g_ptr_array_add(files, g_build_filename(dir, name, NULL));
  return files;
}

/* VkFFT's compiled kernels are cached beside the pipeline cache (tl-ct-vkfft.cpp): one file per
 * plan, written on the first plan; a file damaged in its payload or cut short is ignored and
 * rewritten, and the filter stays right. */
static void test_fft_cache(void) {
  if (!tl_ct_ramp_have_fft()) {
    g_test_skip("built without VkFFT (-Dvkfft): the FFT path does not exist");
    return;
  }
  guint nu = 97, rows = 3;
  float x[3 * 97];
  for (guint i = 0; i < rows * nu; i++) x[i] = (float)(1.0 + 0.01 * i + (i % 7 == 0));
  g_autofree char *dir = g_path_get_dirname(tl_context_pipeline_cache_path(ctx));
  g_autoptr(GPtrArray) old = cache_files(dir);
  for (guint i = 0; i < old->len; i++) g_assert_cmpint(g_unlink(old->pdata[i]), ==, 0);
  g_autofree float *ref = filter_rows(TL_CT_FILTER_HANN, nu, rows, rows, TL_CT_RAMP_SPATIAL, x);
  g_autofree float *a = filter_rows(TL_CT_FILTER_HANN, nu, rows, rows, TL_CT_RAMP_FFT, x);
  double m = max_abs(ref, rows * nu);
  for (int damage = 0; damage < 2; damage++) {
    g_autoptr(GPtrArray) files = cache_files(dir);
    g_assert_cmpuint(files->len, ==, 1); /* written by the plan just made */
    g_autofree char *data = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(files->pdata[0], &data, &len, NULL));
    g_assert_cmpuint(len, >, 200);
    if (damage == 0) data[len - 5] ^= 0x5a; /* payload no longer matches its SHA-256 */
    g_assert_true(g_file_set_contents(files->pdata[0], data, damage == 0 ? (gssize)len : 100, NULL));
    g_autofree float *b = filter_rows(TL_CT_FILTER_HANN, nu, rows, rows, TL_CT_RAMP_FFT, x);
    for (guint i = 0; i < rows * nu; i++) {
      g_assert_cmpfloat(fabs(b[i] - a[i]), <=, 1e-7 * m);
      g_assert_cmpfloat(fabs(b[i] - ref[i]), <=, 1e-5 * m);
    }
  }
  /* rewritten whole after the last damage */
  g_autoptr(GPtrArray) files = cache_files(dir);
  g_assert_cmpuint(files->len, ==, 1);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(files->pdata[0], &data, &len, NULL));
  g_assert_cmpuint(len, >, 200);
}

static void test_bad(void) {
  GError *error = NULL;
  g_assert_null(tl_ct_ramp_new(ctx, TL_CT_FILTER_N, 8, 1, TL_CT_RAMP_AUTO, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_null(tl_ct_ramp_new(ctx, TL_CT_FILTER_HANN, 0, 1, TL_CT_RAMP_AUTO, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  TlCtFilter f;
  g_assert_true(tl_ct_filter_from_name("cosine", &f, &error) && f == TL_CT_FILTER_COSINE);
  g_assert_false(tl_ct_filter_from_name("hamming", &f, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "'hamming'"));
  g_clear_error(&error);
  /* rows wider than the FFT path takes: refused when asked for, spatial when automatic */
  if (tl_ct_ramp_have_fft()) {
    g_assert_null(tl_ct_ramp_new(ctx, TL_CT_FILTER_HANN, 20000, 1, TL_CT_RAMP_FFT, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED);
    g_assert_nonnull(strstr(error->message, "20000"));
    g_clear_error(&error);
    g_autoptr(TlCtRamp) wide = tl_ct_ramp_new(ctx, TL_CT_FILTER_HANN, 20000, 1, TL_CT_RAMP_AUTO,
                                              &error);
    g_assert_no_error(error);
    g_assert_cmpint(tl_ct_ramp_method(wide), ==, TL_CT_RAMP_SPATIAL);
  }
  /* more rows than the filter was made for */
  g_autoptr(TlCtRamp) r = tl_ct_ramp_new(ctx, TL_CT_FILTER_RAM_LAK, 8, 2, TL_CT_RAMP_AUTO, &error);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, 64, &error);
  g_autoptr(TlArray) b = tl_array_new_float(ctx, 64, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_false(tl_ct_ramp_run(r, s, a, b, 3, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

/* A parallel-beam orbit over 180 deg of n_views, a detector of nu x nv pixels of `pixel` mm,
 * and the modified Shepp-Logan's exact line integrals. */
typedef struct {
  TlCtGeometry *g;
  TlImageGrid grid;
  TlImage *truth;
  float *proj;
  TlArray *dproj;
} Case;

static Case *parallel_case(guint n, guint views, guint nu, guint nv, double pixel) {
  GError *error = NULL;
  Case *c = g_new0(Case, 1);
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, views, nu, nv, pixel, pixel);
  c->g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  c->grid = tl_image_grid_centred(n, n, nv, 1.0f, 1.0f, (float)pixel);
  g_autoptr(TlCtPhantom) ph = tl_ct_phantom_new_preset("modified-shepp-logan", &error);
  g_assert_no_error(error);
  c->truth = tl_ct_phantom_rasterise(ph, &c->grid, 1, 1.0, &error);
  g_assert_no_error(error);
  c->proj = ct_ref_project_phantom(c->g, &c->grid, ph, 1.0);
  TlCtViews all = tl_ct_views_all(c->g);
  c->dproj = tl_array_new_float(ctx, tl_ct_views_n_pixels(c->g, &all), &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(c->dproj, c->proj, &error));
  return c;
}

static void case_free(Case *c) {
  tl_ct_geometry_free(c->g);
  tl_image_free(c->truth);
  g_free(c->proj);
  tl_array_free(c->dproj);
  g_free(c);
}

static float *run(TlCtFdk *f, const Case *c) {
  GError *error = NULL;
  guint64 nvox = tl_image_grid_n_voxels(&c->grid);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nvox, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_ct_fdk_run(f, s, c->dproj, img, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  float *out = g_new(float, nvox);
  g_assert_true(tl_array_download(img, out, &error));
  return out;
}

/* FBP of the analytic sinogram (128 x 128 pixels of 1 mm, 180 views of 192 pixels, 3 slices
 * through the phantom's middle). Bounds: the C reference FBP's own RMSE against the phantom
 * is what FBP can reach here (edges of the piecewise-constant phantom, voxelisation); the
 * device must reach it to within 0.1 %, match the reference to 1e-4 of the phantom's range,
 * and its FFT and spatial filters must give the same image to 1e-5 of that range. */
static void test_fbp_shepp_logan(void) {
  GError *error = NULL;
  Case *c = parallel_case(128, 180, 192, 3, 1.0);
  guint64 nvox = tl_image_grid_n_voxels(&c->grid);
  g_autofree double *ref = g_new(double, nvox);
  ct_ref_fdk(c->g, &c->grid, c->proj, ref);
  /* the FFT path where built, whatever the device (CPU devices choose the spatial one at
   * this width: tl-ct-ramp.c) */
  if (tl_ct_ramp_have_fft()) g_setenv("TOMOLAB_CT_RAMP", "fft", TRUE);
  g_autoptr(TlCtFdk) f = tl_ct_fbp_new(ctx, c->g, &c->grid, TL_CT_FILTER_RAM_LAK, 0, &error);
  g_unsetenv("TOMOLAB_CT_RAMP");
  g_assert_no_error(error);
  g_autofree float *img = run(f, c);
  double rmse_ref = ct_ref_rmse(c->truth->data, ref, nvox);
  double rmse_dev = ct_ref_rmse_f(img, c->truth->data, nvox);
  double diff = ct_ref_rmse(img, ref, nvox);
  g_test_message("FBP 128^2 x 3, 180 views: RMSE device %.5f, C reference %.5f, device vs "
                 "reference %.2e (ramp by %s)", rmse_dev, rmse_ref, diff,
                 tl_ct_ramp_have_fft() ? "FFT" : "spatial convolution");
  g_assert_cmpfloat(rmse_ref, <, 0.1);
  g_assert_cmpfloat(rmse_dev, <=, 1.001 * rmse_ref);
  g_assert_cmpfloat(diff, <=, 1e-4);
  /* the soft-tissue plateau: mean over the central 16 x 16 of the middle slice */
  double m_dev = 0, m_truth = 0;
  for (guint j = 56; j < 72; j++)
    for (guint i = 56; i < 72; i++) {
      m_dev += img[i + 128 * (j + 128)] / 256.0;
      m_truth += c->truth->data[i + 128 * (j + 128)] / 256.0;
    }
  g_test_message("central mean: FBP %.5f, phantom %.5f", m_dev, m_truth);
  g_assert_cmpfloat(fabs(m_dev - m_truth), <, 0.01 * m_truth);

  g_autoptr(TlCtFdk) fs = tl_ct_fdk_new_full(ctx, c->g, &c->grid, TL_CT_FILTER_RAM_LAK,
                                             TL_CT_RAMP_SPATIAL, 7, &error);
  g_assert_no_error(error);
  g_autofree float *img_s = run(fs, c);
  double d = 0;
  for (guint64 i = 0; i < nvox; i++) d = MAX(d, fabs(img[i] - (double)img_s[i]));
  g_test_message("FBP, automatic ramp (%s) vs spatial (batches of 7 views): max difference %.2e",
                 tl_ct_ramp_have_fft() ? "FFT" : "spatial", d);
  g_assert_cmpfloat(d, <=, 1e-5);

  /* the windows on noise-free data stay close to Ram-Lak's accuracy */
  for (TlCtFilter w = TL_CT_FILTER_SHEPP_LOGAN; w < TL_CT_FILTER_N; w++) {
    g_autoptr(TlCtFdk) fw = tl_ct_fbp_new(ctx, c->g, &c->grid, w, 0, &error);
    g_assert_no_error(error);
    g_autofree float *iw = run(fw, c);
    double r = ct_ref_rmse_f(iw, c->truth->data, nvox);
    g_test_message("FBP %s window: RMSE %.5f", tl_ct_filter_name(w), r);
    g_assert_cmpfloat(r, <, 1.5 * rmse_ref);
  }
  case_free(c);
}

/* FBP refuses a cone-beam scan, naming FDK. */
static void test_fbp_cone_refused(void) {
  GError *error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, 8, 200, 300, 16, 16, 1, 1);
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  TlImageGrid grid = tl_image_grid_centred(8, 8, 8, 1, 1, 1);
  g_assert_null(tl_ct_fbp_new(ctx, g, &grid, TL_CT_FILTER_RAM_LAK, 0, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "FDK"));
  g_clear_error(&error);
}

/* FBP of the real tooth (181 views of 2 x 640 over 180 deg) runs: finite, and the tooth (dense)
 * inside reconstructs above the air outside. FFT and spatial filters agree on it too. */
static void test_fbp_tooth(void) {
  GError *error = NULL;
  g_autoptr(TlCtData) d = tl_format_load_kind("../shared/data/tooth/tooth.h5", TL_DATA_CT, &error);
  g_assert_no_error(error);
  g_assert_true(d->has_grid);
  const TlCtGeometry *g = d->geometry;
  g_autoptr(TlArray) proj = tl_ct_data_upload(ctx, d, &error);
  g_assert_no_error(error);
  guint64 nvox = tl_image_grid_n_voxels(&d->grid);
  float *img[2] = {NULL, NULL};
  for (int m = 0; m < 2; m++) {
    g_autoptr(TlCtFdk) f = tl_ct_fdk_new_full(ctx, g, &d->grid, TL_CT_FILTER_SHEPP_LOGAN,
                                              m ? TL_CT_RAMP_SPATIAL : TL_CT_RAMP_AUTO, 0, &error);
    g_assert_no_error(error);
    g_autoptr(TlArray) x = tl_array_new_float(ctx, nvox, &error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_no_error(error);
    g_assert_true(tl_ct_fdk_run(f, s, proj, x, &error));
    g_assert_true(tl_stream_finish(s, &error));
    img[m] = g_new(float, nvox);
    g_assert_true(tl_array_download(x, img[m], &error));
    g_assert_no_error(error);
  }
  double mx = max_abs(img[1], nvox), dmax = 0;
  for (guint64 i = 0; i < nvox; i++) {
    g_assert_true(isfinite(img[0][i]));
    dmax = MAX(dmax, fabs(img[0][i] - (double)img[1][i]));
  }
  /* centre region vs the grid's corners */
  guint nx = d->grid.dims[0], ny = d->grid.dims[1];
  double centre = 0, corner = 0;
  guint nc = 0, nk = 0;
  for (guint j = 0; j < ny; j++)
    for (guint i = 0; i < nx; i++) {
      double dx = i - nx / 2.0, dy = j - ny / 2.0;
      if (dx * dx + dy * dy < (nx / 8.0) * (nx / 8.0)) centre += img[0][i + nx * j], nc++;
      else if (dx * dx + dy * dy > (nx / 2.0) * (nx / 2.0)) corner += img[0][i + nx * j], nk++;
    }
  centre /= nc, corner /= MAX(nk, 1u);
  g_test_message("tooth FBP %ux%ux%u: centre mean %.4g, corner mean %.4g, max %.4g; FFT vs "
                 "spatial %.2e of the max", nx, ny, d->grid.dims[2], centre, corner, mx, dmax / mx);
  g_assert_cmpfloat(dmax, <=, 1e-5 * mx);
  g_assert_cmpfloat(centre, >, corner);
  g_free(img[0]);
  g_free(img[1]);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/ct/fft/sizes", test_fft_size);
  g_test_add_func("/ct/ramp/spatial-vs-c", test_spatial_vs_c);
  g_test_add_func("/ct/fft/vs-spatial", test_fft_vs_spatial);
  g_test_add_func("/ct/fft/chunks", test_fft_chunks);
  g_test_add_func("/ct/fft/cache", test_fft_cache);
  g_test_add_func("/ct/fft/bad", test_bad);
  g_test_add_func("/ct/fbp/shepp-logan-parallel", test_fbp_shepp_logan);
  g_test_add_func("/ct/fbp/cone-refused", test_fbp_cone_refused);
  g_test_add_func("/ct/fbp/tooth", test_fbp_tooth);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
