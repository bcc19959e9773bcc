/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Filters on device volumes (compute/image/tl-filter.h) against plain C references written
 * here, independent of the GLSL: the median exactly (it returns one of its inputs), the
 * Gaussian as a direct 3-D convolution in double within 1e-6 relative; replicate edges
 * (constant volumes, a hot corner voxel), total of an interior blob, profiler labels, bad
 * input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tl-test-common.h"
#include "image/tl-filter.h"

static TlContext *ctx;

static TlImageGrid grid(guint nx, guint ny, guint nz, float vx, float vy, float vz) {
  return tl_image_grid_centred(nx, ny, nz, vx, vy, vz);
}

static guint clampi(int v, guint n) { return v < 0 ? 0 : v >= (int)n ? n - 1 : (guint)v; }

static float *random_volume(const TlImageGrid *g, guint32 seed, double lo, double hi) {
  guint64 n = tl_image_grid_n_voxels(g);
  float *v = g_new(float, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  for (guint64 i = 0; i < n; i++) v[i] = (float)g_rand_double_range(r, lo, hi);
  return v;
}

/* Uploads, filters on the device (private stream and scratch), downloads. */
static float *device_filter(const char *text, const TlImageGrid *g, const float *in) {
  GError *error = NULL;
  TlFilter f;
  g_assert_true(tl_filter_parse(text, &f, &error));
  g_assert_no_error(error);
  guint64 n = tl_image_grid_n_voxels(g);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(a, in, &error));
  g_assert_true(tl_filter_apply(ctx, NULL, &f, g, a, NULL, &error));
  g_assert_no_error(error);
  float *out = g_new(float, n);
  g_assert_true(tl_array_download(a, out, &error));
  g_assert_no_error(error);
  return out;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Median of the (2R+1)^3 neighbourhood with clamped (replicated) indices, by qsort. */
static float *ref_median(const TlImageGrid *g, const float *in, int R) {
  guint nx = g->dims[0], ny = g->dims[1], nz = g->dims[2];
  int w = 2 * R + 1, nw = w * w * w;
  float *out = g_new(float, (gsize)nx * ny * nz), win[125];
  for (guint z = 0; z < nz; z++)
    for (guint y = 0; y < ny; y++)
      for (guint x = 0; x < nx; x++) {
        int k = 0;
        for (int dz = -R; dz <= R; dz++)
          for (int dy = -R; dy <= R; dy++)
            for (int dx = -R; dx <= R; dx++)
              win[k++] = in[clampi((int)x + dx, nx) +
                            nx * (clampi((int)y + dy, ny) + ny * clampi((int)z + dz, nz))];
        qsort(win, nw, sizeof(float), cmp_float);
        out[x + nx * (y + ny * z)] = win[nw / 2];
      }
  return out;
}

/* Full kernel w[0..2r] (offset t at w[t + r]) for one axis: sigma = FWHM / 2.3548 in voxels,
 * truncated at 3 sigma, normalised to sum 1. Written out again rather than calling the
 * library so a wrong radius or normalisation there shows. */
static double *ref_kernel(double fwhm, double vox, int *r_out) {
  double sigma = fwhm / (2.0 * sqrt(2.0 * log(2.0))) / vox;
  int r = (int)floor(3.0 * sigma);
  double *w = g_new(double, 2 * r + 1), sum = 0;
  for (int t = -r; t <= r; t++) sum += w[t + r] = exp(-(double)t * t / (2 * sigma * sigma));
  for (int t = -r; t <= r; t++) w[t + r] /= sum;
  *r_out = r;
  return w;
}

/* Direct (non-separable) 3-D convolution in double with the product kernel. */
static double *ref_gauss(const TlImageGrid *g, const float *in, double fwhm) {
  guint nx = g->dims[0], ny = g->dims[1], nz = g->dims[2];
  int r[3];
  g_autofree double *wx = ref_kernel(fwhm, g->voxel_mm[0], &r[0]);
  g_autofree double *wy = ref_kernel(fwhm, g->voxel_mm[1], &r[1]);
  g_autofree double *wz = ref_kernel(fwhm, g->voxel_mm[2], &r[2]);
  double *out = g_new0(double, (gsize)nx * ny * nz);
  for (guint z = 0; z < nz; z++)
    for (guint y = 0; y < ny; y++)
      for (guint x = 0; x < nx; x++) {
        double acc = 0;
        for (int c = -r[2]; c <= r[2]; c++)
          for (int b = -r[1]; b <= r[1]; b++)
            for (int a = -r[0]; a <= r[0]; a++)
              acc += wx[a + r[0]] * wy[b + r[1]] * wz[c + r[2]] *
                     in[clampi((int)x + a, nx) +
                        nx * (clampi((int)y + b, ny) + ny * clampi((int)z + c, nz))];
        out[x + nx * (y + ny * z)] = acc;
      }
  return out;
}

static void assert_close(const float *got, const double *want, guint64 n, double rel) {
  for (guint64 i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= rel * fabs(want[i]))) {
      g_test_message("voxel %" G_GUINT64_FORMAT ": %.9g, expected %.9g", i, got[i], want[i]);
      g_assert_cmpfloat(fabs(got[i] - want[i]), <=, rel * fabs(want[i]));
    }
}

/* Odd sizes, some smaller than the 5^3 window, so most voxels touch an edge. */
static const guint sizes[][3] = {{13, 11, 7}, {3, 2, 9}, {1, 5, 4}};

static void check_median(const TlImageGrid *g, const float *in, int R) {
  g_autofree float *want = ref_median(g, in, R);
  g_autofree float *got = device_filter(R == 1 ? "median3" : "median5", g, in);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(g); i++) {
    if (got[i] != want[i])
      g_test_message("%ux%ux%u median%d voxel %" G_GUINT64_FORMAT ": %.9g, expected %.9g",
                     g->dims[0], g->dims[1], g->dims[2], 2 * R + 1, i, got[i], want[i]);
    g_assert_true(got[i] == want[i]);
  }
}

static void test_median_exact(void) {
  for (gsize s = 0; s < G_N_ELEMENTS(sizes); s++) {
    TlImageGrid g = grid(sizes[s][0], sizes[s][1], sizes[s][2], 2, 2, 3);
    g_autofree float *in = random_volume(&g, 17 + (guint32)s, -50, 100);
    check_median(&g, in, 1);
    check_median(&g, in, 2);
    /* few distinct values, so most windows hold ties */
    for (guint64 i = 0; i < tl_image_grid_n_voxels(&g); i++) in[i] = floorf(in[i] / 40.0f);
    check_median(&g, in, 1);
    check_median(&g, in, 2);
  }
}

static void test_gauss_reference(void) {
  /* anisotropic voxels: radii 3, 3, 2 for 6 mm; the 40 mm z voxel gives r = 0 (skipped axis) */
  struct { guint s; float vox[3]; double fwhm; } cases[] = {
    {0, {2.0f, 2.5f, 3.27f}, 6.0}, {1, {1.0f, 1.5f, 2.0f}, 4.0}, {0, {3.0f, 2.0f, 40.0f}, 5.0},
    {2, {1.0f, 1.0f, 1.0f}, 2.0},
  };
  for (gsize c = 0; c < G_N_ELEMENTS(cases); c++) {
    const guint *d = sizes[cases[c].s];
    TlImageGrid g = grid(d[0], d[1], d[2], cases[c].vox[0], cases[c].vox[1], cases[c].vox[2]);
    g_autofree float *in = random_volume(&g, 99 + (guint32)c, 0.5, 1.5);
    g_autofree char *text = g_strdup_printf("gauss:%g", cases[c].fwhm);
    g_autofree double *want = ref_gauss(&g, in, cases[c].fwhm);
    g_autofree float *got = device_filter(text, &g, in);
    assert_close(got, want, tl_image_grid_n_voxels(&g), 1e-6);
  }
}

/* Metz (STIR's separable Cartesian filter): the response written here from its definition,
 * M = (1 - (1 - G^2)^(N+1)) / G with G the Gaussian's transfer function exp(-2 pi^2 sigma^2 f^2),
 * against the discrete-time Fourier transform of the sampled half kernel. Sampling the
 * continuous kernel periodises its response (Poisson summation): the DTFT at nu cycles per
 * voxel is sum_k M(nu + k), up to the truncation (4 sigma of the widest of its Gaussians). */
static double metz_ref(double sigma_vox, guint n, double nu) {
  double g = exp(-2 * G_PI * G_PI * sigma_vox * sigma_vox * nu * nu);
  return g < 1e-300 ? 0 : (1 - pow(1 - g * g, n + 1.0)) / g;
}

static void test_metz_response(void) {
  const double vox = 2.0;
  const guint powers[] = {0, 1, 2, 3, 5};
  const double fwhms[] = {6.0, 9.0};
  for (gsize i = 0; i < G_N_ELEMENTS(powers); i++)
    for (gsize k = 0; k < G_N_ELEMENTS(fwhms); k++) {
      guint n = powers[i];
      guint r = tl_filter_metz_radius(fwhms[k], n, vox);
      g_autofree double *w = g_new(double, r + 1);
      g_assert_cmpuint(tl_filter_metz_weights(fwhms[k], n, vox, w), ==, r);
      double sigma = fwhms[k] / (2 * sqrt(2 * log(2.0))) / vox, worst = 0, peak = 0;
      for (int q = 0; q <= 100; q++) {
        double nu = 0.5 * q / 100.0, dtft = w[0];
        for (guint t = 1; t <= r; t++) dtft += 2 * w[t] * cos(2 * G_PI * nu * t);
        double want = 0;
        for (int a = -3; a <= 3; a++) want += metz_ref(sigma, n, nu + a);
        worst = MAX(worst, fabs(dtft - want));
        peak = MAX(peak, want);
        /* the library's own response (per mm) is the same function */
        g_assert_cmpfloat(fabs(tl_filter_metz_response(fwhms[k], n, nu / vox) -
                               metz_ref(sigma, n, nu)), <=, 1e-12);
      }
      g_test_message("metz:%g:%u (voxel %g mm): r = %u, peak response %.4f, |DTFT - M| <= %.2e",
                     fwhms[k], n, vox, r, peak, worst);
      g_assert_cmpfloat(worst, <=, 1e-3);
      /* a power above 0 restores mid frequencies: its response rises above 1 somewhere only
       * when N >= 2 for these widths; it never falls below the Gaussian's */
      if (n > 0) g_assert_cmpfloat(metz_ref(sigma, n, 0.1), >, metz_ref(sigma, 0, 0.1));
    }
  /* N = 0 is the Gaussian: the same sampled weights, with the Metz truncation */
  guint r = tl_filter_metz_radius(6.0, 0, 1.5);
  g_autofree double *w = g_new(double, r + 1);
  tl_filter_metz_weights(6.0, 0, 1.5, w);
  double sigma = 6.0 / (2 * sqrt(2 * log(2.0))) / 1.5, sum = 0;
  for (guint t = 0; t <= r; t++) sum += (t ? 2 : 1) * exp(-0.5 * t * t / (sigma * sigma));
  for (guint t = 0; t <= r; t++)
    g_assert_cmpfloat(fabs(w[t] - exp(-0.5 * t * t / (sigma * sigma)) / sum), <=, 1e-15);
}

/* A point through the device is the separable product of the weights (away from the faces). */
static void test_metz_device(void) {
  TlImageGrid g = grid(41, 37, 33, 2.0f, 2.5f, 3.0f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *in = g_new0(float, n);
  guint cx = 20, cy = 18, cz = 16;
  in[cx + 41 * (cy + 37 * cz)] = 1000.0f;
  g_autofree float *got = device_filter("metz:7:3", &g, in);
  guint r[3];
  double *w[3];
  for (int a = 0; a < 3; a++) {
    r[a] = tl_filter_metz_radius(7.0, 3, g.voxel_mm[a]);
    g_assert_cmpuint(r[a], <, 16); /* inside the grid: no edge replication */
    w[a] = g_new(double, r[a] + 1);
    tl_filter_metz_weights(7.0, 3, g.voxel_mm[a], w[a]);
  }
  gboolean negative = FALSE;
  for (guint z = 0; z < 33; z++)
    for (guint y = 0; y < 37; y++)
      for (guint x = 0; x < 41; x++) {
        guint d[3] = {(guint)abs((int)x - (int)cx), (guint)abs((int)y - (int)cy),
                      (guint)abs((int)z - (int)cz)};
        double want = 1000.0;
        for (int a = 0; a < 3; a++) want *= d[a] <= r[a] ? w[a][d[a]] : 0.0;
        negative |= want < 0;
        g_assert_cmpfloat(fabs(got[x + 41 * (y + 37 * z)] - want), <=, 1e-5 * 1000.0 * w[0][0]);
      }
  g_assert_true(negative); /* a Metz kernel of power > 0 has negative lobes */
  for (int a = 0; a < 3; a++) g_free(w[a]);
}

static void test_constant(void) {
  TlImageGrid g = grid(13, 11, 7, 2.0f, 2.5f, 3.0f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *in = g_new(float, n);
  for (guint64 i = 0; i < n; i++) in[i] = 3.25f;
  const char *filters[] = {"median3", "median5", "gauss:7", "gauss:2.5"};
  for (gsize f = 0; f < G_N_ELEMENTS(filters); f++) {
    g_autofree float *got = device_filter(filters[f], &g, in);
    for (guint64 i = 0; i < n; i++) {
      if (f < 2) g_assert_true(got[i] == 3.25f); /* exact: the median is an input */
      else g_assert_cmpfloat(fabs(got[i] - 3.25), <=, 1e-6 * 3.25);
    }
  }
}

/* A unit voxel at corner (0,0,0). Along one axis, output voxel i gets the weights of every
 * offset t whose clamped source i + t is 0, i.e. t <= -i; summed over i >= 0 that is
 * sum_{t<=0} w_t (1 + |t|) = sum_{k=0}^{r} w_k (1 + k) (the replicated edge voxel counts once
 * per offset reaching past the face; needs dims > r so the far face never clamps to 0).
 * Separable, so the total is the product over the axes -- more than 1. */
static void test_hot_corner(void) {
  TlImageGrid g = grid(13, 11, 7, 2.0f, 2.5f, 3.0f);
  const double fwhm = 6.0;
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *in = g_new0(float, n);
  in[0] = 1.0f;
  double expect = 1;
  for (int a = 0; a < 3; a++) {
    int r;
    g_autofree double *w = ref_kernel(fwhm, g.voxel_mm[a], &r);
    g_assert_cmpint(r, <, (int)g.dims[a]);
    double s = 0;
    for (int k = 0; k <= r; k++) s += w[k + r] * (1 + k);
    expect *= s;
  }
  g_assert_cmpfloat(expect, >, 1.1); /* 1.243 here */
  g_autofree float *got = device_filter("gauss:6", &g, in);
  g_autofree double *want = ref_gauss(&g, in, fwhm);
  double sum = 0, ref_sum = 0;
  for (guint64 i = 0; i < n; i++) {
    sum += got[i];
    ref_sum += want[i];
    g_assert_cmpfloat(fabs(got[i] - want[i]), <=, 1e-6 * want[0]);
  }
  g_assert_cmpfloat(fabs(ref_sum - expect), <=, 1e-12);
  g_assert_cmpfloat(fabs(sum - expect), <=, 1e-6 * expect);
}

/* Activity more than r voxels from every face: the Gaussian keeps its total. */
static void test_blob_total(void) {
  TlImageGrid g = grid(21, 21, 21, 1.0f, 1.0f, 1.5f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *in = g_new0(float, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(5);
  double total = 0;
  for (guint z = 8; z <= 12; z++)
    for (guint y = 7; y <= 13; y++)
      for (guint x = 8; x <= 12; x++) total += in[x + 21 * (y + 21 * z)] = (float)g_rand_double(r);
  g_autofree float *got = device_filter("gauss:3.5", &g, in); /* r = 4, 4, 2 */
  double sum = 0;
  for (guint64 i = 0; i < n; i++) sum += got[i];
  g_assert_cmpfloat(fabs(sum - total), <=, 1e-6 * total);
  g_assert_cmpfloat(fabs(got[10 + 21 * (10 + 21 * 10)] - in[10 + 21 * (10 + 21 * 10)]), >, 0);
}

/* Caller's stream and scratch; the labelled dispatches reach the profile. */
static void test_stream_labels(void) {
  GError *error = NULL;
  TlImageGrid g = grid(13, 11, 7, 2.0f, 2.0f, 2.0f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *in = random_volume(&g, 3, 0, 1);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlArray) scratch = tl_array_new_float(ctx, n + 5, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(a, in, &error));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_stream_set_profile(s, prof);
  const char *filters[] = {"gauss:5", "median3", "median5"};
  for (gsize f = 0; f < G_N_ELEMENTS(filters); f++) {
    TlFilter flt;
    g_assert_true(tl_filter_parse(filters[f], &flt, &error));
    g_assert_true(tl_filter_apply(ctx, s, &flt, &g, a, scratch, &error));
    g_assert_no_error(error);
  }
  const char *labels[] = {"gauss x", "gauss y", "gauss z", "median3", "median5"};
  if (!tl_context_info(ctx)->timestamps) g_test_message("no timestamps: labels not checked");
  else
    for (gsize l = 0; l < G_N_ELEMENTS(labels); l++) {
      const TlProfileEntry *e = tl_profile_lookup(prof, labels[l]);
      g_assert_nonnull(e);
      g_assert_cmpuint(e->calls, ==, 1);
    }
  /* same chain with private stream and scratch gives the same image */
  g_autofree float *got = g_new(float, n);
  g_assert_true(tl_array_download(a, got, &error));
  g_autofree float *t1 = device_filter("gauss:5", &g, in);
  g_autofree float *t2 = device_filter("median3", &g, t1);
  g_autofree float *t3 = device_filter("median5", &g, t2);
  g_assert_cmpmem(got, n * sizeof(float), t3, n * sizeof(float));
}

static void test_parse(void) {
  struct { const char *text; TlFilterKind kind; double fwhm; } good[] = {
    {"median3", TL_FILTER_MEDIAN3, 0}, {"median5", TL_FILTER_MEDIAN5, 0},
    {"gauss:4", TL_FILTER_GAUSS, 4}, {"gauss:2.5", TL_FILTER_GAUSS, 2.5},
    {"metz:4:0", TL_FILTER_METZ, 4}, {"metz:6.5:3", TL_FILTER_METZ, 6.5},
    {"none", TL_FILTER_NONE, 0},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(good); i++) {
    GError *error = NULL;
    TlFilter f;
    g_assert_true(tl_filter_parse(good[i].text, &f, &error));
    g_assert_no_error(error);
    g_assert_cmpint(f.kind, ==, good[i].kind);
    g_assert_cmpfloat(f.fwhm_mm, ==, good[i].fwhm);
    g_autofree char *back = tl_filter_to_string(&f);
    g_assert_cmpstr(back, ==, good[i].text);
  }
  /* each message names the offending value */
  struct { const char *text, *names; } bad[] = {
    {"gauss:-2", "-2"}, {"gauss:0", "0"}, {"gauss:", "gauss:"}, {"gauss:abc", "abc"},
    {"gauss:4mm", "4mm"}, {"gauss:nan", "nan"}, {"gauss:inf", "inf"}, {"median7", "median7"},
    {"median3x", "median3x"}, {"", "\"\""}, {"Gauss:4", "Gauss:4"}, {"metz:4", "metz:4"},
    {"metz:4:21", "21"}, {"metz:4:-1", "-1"}, {"metz:0:2", "0"}, {"metz:4:2.5", "2.5"},
    {"metz:4:", "metz:4:"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    GError *error = NULL;
    TlFilter f = {TL_FILTER_MEDIAN3, 0};
    g_assert_false(tl_filter_parse(bad[i].text, &f, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_test_message("%s -> %s", bad[i].text, error->message);
    g_assert_nonnull(strstr(error->message, bad[i].names));
    g_assert_nonnull(strstr(error->message, "expected"));
    g_assert_cmpint(f.kind, ==, TL_FILTER_MEDIAN3); /* untouched on failure */
    g_clear_error(&error);
  }
  GError *error = NULL;
  TlFilter f;
  g_assert_false(tl_filter_parse(NULL, &f, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* radius helper: 3 sigma, floor */
  g_assert_cmpuint(tl_filter_gauss_radius(6.0, 2.0), ==, 3);
  g_assert_cmpuint(tl_filter_gauss_radius(1.0, 2.0), ==, 0);
}

static void test_apply_invalid(void) {
  GError *error = NULL;
  TlImageGrid g = grid(13, 11, 7, 2.0f, 2.0f, 2.0f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlArray) small = tl_array_new_float(ctx, n - 1, &error);
  g_assert_no_error(error);
  TlFilter med = {TL_FILTER_MEDIAN3, 0};
  /* image too small */
  g_assert_false(tl_filter_apply(ctx, NULL, &med, &g, small, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* scratch too small, scratch = image */
  g_assert_false(tl_filter_apply(ctx, NULL, &med, &g, a, small, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_filter_apply(ctx, NULL, &med, &g, a, a, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* invalid grid */
  TlImageGrid bad = g;
  bad.dims[1] = 0;
  g_assert_false(tl_filter_apply(ctx, NULL, &med, &bad, a, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  bad = g;
  bad.voxel_mm[2] = -1.0f;
  TlFilter gs = {TL_FILTER_GAUSS, 4.0};
  g_assert_false(tl_filter_apply(ctx, NULL, &gs, &bad, a, NULL, &error));
  g_assert_nonnull(error);
  g_clear_error(&error);
  /* negative / zero / NaN FWHM built by hand, not through the parser */
  double fwhms[] = {-2.0, 0.0, NAN, INFINITY};
  for (gsize i = 0; i < G_N_ELEMENTS(fwhms); i++) {
    gs.fwhm_mm = fwhms[i];
    g_assert_false(tl_filter_apply(ctx, NULL, &gs, &g, a, NULL, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_clear_error(&error);
  }
  /* a kernel wider than supported: an error, not a minutes-long run */
  gs.fwhm_mm = 1e6;
  g_assert_false(tl_filter_apply(ctx, NULL, &gs, &g, a, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "radius"));
  g_clear_error(&error);
  /* unknown kind */
  TlFilter junk = {(TlFilterKind)42, 0};
  g_assert_false(tl_filter_apply(ctx, NULL, &junk, &g, a, NULL, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  /* none: nothing happens, TRUE */
  TlFilter none = {TL_FILTER_NONE, 0};
  g_assert_true(tl_filter_apply(ctx, NULL, &none, &g, a, NULL, &error));
  g_assert_no_error(error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/pet-filter/parse", test_parse);
  g_test_add_func("/pet-filter/median-exact", test_median_exact);
  g_test_add_func("/pet-filter/gauss-reference", test_gauss_reference);
  g_test_add_func("/pet-filter/metz-response", test_metz_response);
  g_test_add_func("/pet-filter/metz-device", test_metz_device);
  g_test_add_func("/pet-filter/constant", test_constant);
  g_test_add_func("/pet-filter/hot-corner", test_hot_corner);
  g_test_add_func("/pet-filter/blob-total", test_blob_total);
  g_test_add_func("/pet-filter/stream-labels", test_stream_labels);
  g_test_add_func("/pet-filter/apply-invalid", test_apply_invalid);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
