/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Priors (compute/recon/tl-prior.h) on the device against the plain C references of
 * prior-ref.c, on an anisotropic grid (9 x 7 x 5, voxels 1 x 1.5 x 2 mm): value within 1e-5
 * relative and gradient within 1e-5 of its largest entry; each gradient against central finite
 * differences of the reference value (every voxel, in double) and of the device value (along a
 * direction, in float); closed forms (constant image, one hot voxel on a flat background, RDP's
 * gamma); parameters changed with tl_prior_set_params; value partials split over chunks; bad
 * parameters, names and arrays. */
#include <math.h>
#include <string.h>
#include "tl-test-common.h"
#include "recon/tl-prior.h"
#include "recon/tl-recon-registry.h"
#include "prior-ref.h"

static TlContext *ctx;
static const char *names[] = {"quadratic", "rdp", "tv"};

static TlImageGrid test_grid(void) { return tl_image_grid_centred(9, 7, 5, 1.0f, 1.5f, 2.0f); }

static TlRefPrior ref_for(const char *name, const TlImageGrid *g, const TlPriorParams *pp) {
  TlRefPrior r = {.gamma = pp->gamma, .epsilon = pp->epsilon};
  g_assert_true(tl_ref_prior_kind(name, &r.kind));
  for (int a = 0; a < 3; a++) {
    r.dims[a] = g->dims[a];
    r.voxel_mm[a] = g->voxel_mm[a];
  }
  return r;
}

static TlPrior *new_prior(const char *name, const TlImageGrid *g, const TlPriorParams *pp) {
  GError *error = NULL;
  TlPrior *p = tl_prior_new(ctx, name, g, pp, &error);
  g_assert_no_error(error);
  g_assert_nonnull(p);
  g_assert_cmpstr(tl_prior_name(p), ==, name);
  return p;
}

/* Uploads x, then R(x) and (if grad) dR/dx from the device. */
static double device_eval(TlPrior *p, const float *x, float *grad) {
  GError *error = NULL;
  guint64 n = tl_image_grid_n_voxels(&p->grid);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) b = tl_array_new_float(ctx, n, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(a, x, &error));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  double v = NAN;
  g_assert_true(tl_prior_value(p, s, a, &v, &error));
  g_assert_no_error(error);
  if (grad) {
    g_assert_true(tl_prior_gradient(p, s, a, b, &error));
    g_assert_no_error(error);
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_true(tl_array_download(b, grad, &error));
    g_assert_no_error(error);
  }
  return v;
}

static float *random_image(guint64 n, guint32 seed, double lo, double hi) {
  float *v = g_new(float, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  for (guint64 i = 0; i < n; i++) v[i] = (float)g_rand_double_range(r, lo, hi);
  return v;
}

static double *to_double(const float *x, guint64 n) {
  double *d = g_new(double, n);
  for (guint64 i = 0; i < n; i++) d[i] = x[i];
  return d;
}

static double max_abs(const double *g, guint64 n) {
  double m = 0;
  for (guint64 i = 0; i < n; i++) m = fmax(m, fabs(g[i]));
  return m;
}

/* Device value and gradient against the reference, for each prior and two parameter sets
 * (defaults; gamma 0.5 with a larger eps, where eps matters in every term), the second on a
 * grid whose smallest edge is not 1 mm and lies along z (weights in units of that edge, not
 * mm; axes not mixed up). */
static void test_reference(void) {
  TlPriorParams sets[2];
  tl_prior_params_init(&sets[0]);
  sets[1] = (TlPriorParams){.gamma = 0.5, .epsilon = 0.3};
  for (int k = 0; k < 3; k++)
    for (int ps = 0; ps < 2; ps++) {
      TlImageGrid g = ps == 0 ? test_grid() : tl_image_grid_centred(9, 7, 5, 2.5f, 2.0f, 1.25f);
      guint64 n = tl_image_grid_n_voxels(&g);
      g_autofree float *xf = random_image(n, 11 + k + 3 * ps, 0.1, 3.0);
      g_autofree double *x = to_double(xf, n);
      g_autoptr(TlPrior) p = new_prior(names[k], &g, &sets[ps]);
      TlRefPrior ref = ref_for(names[k], &g, &sets[ps]);
      g_autofree float *gd = g_new(float, n);
      g_autofree double *gr = g_new(double, n);
      double vd = device_eval(p, xf, gd);
      double vr = tl_ref_prior_value(&ref, x);
      tl_ref_prior_gradient(x, gr, &ref);
      double gmax = max_abs(gr, n), diff = 0;
      for (guint64 i = 0; i < n; i++) diff = fmax(diff, fabs(gd[i] - gr[i]));
      g_test_message("%s, %g x %g x %g mm, gamma %g eps %g: R device %.9g ref %.9g (rel %.2e); "
                     "gradient max diff %.2e of max %.3g (%.2e)", names[k], g.voxel_mm[0],
                     g.voxel_mm[1], g.voxel_mm[2], sets[ps].gamma, sets[ps].epsilon, vd, vr,
                     fabs(vd - vr) / vr, diff, gmax, diff / gmax);
      g_assert_cmpfloat(vr, >, 0);
      g_assert_cmpfloat(fabs(vd - vr), <=, 1e-5 * vr);
      g_assert_cmpfloat(diff, <=, 1e-5 * gmax);
    }
}

/* The reference gradient against central differences of the reference value, every voxel:
 * step 1e-5 (truncation ~h^2 R''' and rounding ~1e-16 R / h both far below 1e-3). Then the
 * device gradient against central differences of the float device value along
 * u = g_ref / |g_ref|_inf + a random part: along u, R changes by t |g|^2 / |g|_inf, large
 * against the float rounding of R (~1e-7 R), so the 1e-3 check means something. */
static void test_finite_differences(void) {
  TlImageGrid g = test_grid();
  guint64 n = tl_image_grid_n_voxels(&g);
  TlPriorParams pp;
  tl_prior_params_init(&pp);
  for (int k = 0; k < 3; k++) {
    g_autofree float *xf = random_image(n, 101 + k, 0.5, 2.5);
    g_autofree double *x = to_double(xf, n);
    TlRefPrior ref = ref_for(names[k], &g, &pp);
    g_autofree double *gr = g_new(double, n);
    tl_ref_prior_gradient(x, gr, &ref);
    double gmax = max_abs(gr, n), diff = 0;
    const double h = 1e-5;
    for (guint64 i = 0; i < n; i++) {
      double xi = x[i];
      x[i] = xi + h;
      double rp = tl_ref_prior_value(&ref, x);
      x[i] = xi - h;
      double rm = tl_ref_prior_value(&ref, x);
      x[i] = xi;
      diff = fmax(diff, fabs((rp - rm) / (2 * h) - gr[i]));
    }
    g_test_message("%s: reference gradient vs differences of the reference value: max diff "
                   "%.2e of max %.3g (%.2e)", names[k], diff, gmax, diff / gmax);
    g_assert_cmpfloat(diff, <=, 1e-3 * gmax);

    /* along a direction, on the device */
    g_autoptr(TlPrior) p = new_prior(names[k], &g, &pp);
    g_autofree float *gd = g_new(float, n);
    device_eval(p, xf, gd);
    g_autoptr(GRand) r = g_rand_new_with_seed(7 + k);
    g_autofree double *u = g_new(double, n);
    double dir = 0;
    for (guint64 i = 0; i < n; i++) {
      u[i] = gr[i] / gmax + g_rand_double_range(r, -0.3, 0.3);
      dir += gd[i] * u[i];
    }
    const double t = 0.01;
    g_autofree float *xp = g_new(float, n), *xm = g_new(float, n);
    for (guint64 i = 0; i < n; i++) {
      xp[i] = (float)(x[i] + t * u[i]);
      xm[i] = (float)(x[i] - t * u[i]);
    }
    double vp = device_eval(p, xp, NULL), vm = device_eval(p, xm, NULL);
    /* the step actually taken, after rounding to float, projected on u */
    double uu = 0, step = 0;
    for (guint64 i = 0; i < n; i++) {
      uu += u[i] * u[i];
      step += ((double)xp[i] - xm[i]) * u[i];
    }
    step /= uu;
    double fd = (vp - vm) / step;
    g_test_message("%s: device gradient . u %.7g, differences of the device value %.7g (%.2e)",
                   names[k], dir, fd, fabs(fd - dir) / fabs(dir));
    g_assert_cmpfloat(fabs(fd - dir), <=, 1e-3 * fabs(dir));
  }
}

/* A constant image: R = 0 and dR/dx = 0 exactly, for every prior. */
static void test_constant(void) {
  TlImageGrid g = test_grid();
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *x = g_new(float, n), *gd = g_new(float, n);
  for (guint64 i = 0; i < n; i++) x[i] = 1.7f;
  for (int k = 0; k < 3; k++) {
    g_autoptr(TlPrior) p = new_prior(names[k], &g, NULL);
    g_assert_cmpfloat(device_eval(p, x, gd), ==, 0.0);
    for (guint64 i = 0; i < n; i++) g_assert_cmpfloat(gd[i], ==, 0.0f);
  }
}

/* One hot voxel b + h at an interior voxel m of a flat background b, in closed form.
 * W = sum of the 26 weights for 1 x 1.5 x 2 mm voxels (smallest edge 1): 2 (1 + 1/1.5 + 1/2)
 * over the faces, 4 (1/sqrt(1 + 1.5^2) + 1/sqrt(1 + 2^2) + 1/sqrt(1.5^2 + 2^2)) over the edges,
 * 8 / sqrt(1 + 1.5^2 + 2^2) over the corners.
 *   quadratic: R = W h^2 / 2, dR/dx_m = W h, dR/dx_k = -w_k h
 *   rdp (b = 0): R = W h^2 / D, D = (1 + gamma) h + eps;
 *        dR/dx_m = W h ((1 + gamma) h + 2 eps) / D^2,
 *        dR/dx_k = -w_k h ((3 + gamma) h + 2 eps) / D^2
 *   tv: the forward differences are non-zero at m (-h / v_a on each axis) and at m - e_a (h / v_a
 *        on axis a); with S_m = sqrt(h^2 sum 1/v_a^2 + eps^2), S_a = sqrt(h^2 / v_a^2 + eps^2):
 *        R = S_m - eps + sum_a (S_a - eps), dR/dx_m = h sum_a 1/v_a^2 (1/S_m + 1/S_a) */
static void test_hot_voxel(void) {
  TlImageGrid g = test_grid();
  guint64 n = tl_image_grid_n_voxels(&g);
  const double W = 2 * (1 + 1 / 1.5 + 0.5) +
                   4 * (1 / sqrt(1 + 2.25) + 1 / sqrt(1 + 4.0) + 1 / sqrt(2.25 + 4)) +
                   8 / sqrt(1 + 2.25 + 4);
  const double v[3] = {1.0, 1.5, 2.0};
  const guint nx = 9, ny = 7;
  guint64 m = 4 + nx * (3 + ny * 2);
  guint64 kx = m + 1, kxyz = m + 1 + nx + nx * ny; /* a face and a corner neighbour */
  const double wx = 1.0, wxyz = 1 / sqrt(1 + 2.25 + 4);
  const double h = 2.5;
  TlPriorParams pp = {.gamma = 1.5, .epsilon = 0.01};
  g_autofree float *x = g_new(float, n), *gd = g_new(float, n);
  for (int k = 0; k < 3; k++) {
    double b = k == 1 ? 0.0 : 0.75;
    for (guint64 i = 0; i < n; i++) x[i] = (float)b;
    x[m] = (float)(b + h);
    double R, gm, gx, gxyz;
    if (k == 0) {
      R = W * h * h / 2;
      gm = W * h;
      gx = -wx * h;
      gxyz = -wxyz * h;
    } else if (k == 1) {
      double D = (1 + pp.gamma) * h + pp.epsilon;
      R = W * h * h / D;
      gm = W * h * ((1 + pp.gamma) * h + 2 * pp.epsilon) / (D * D);
      double gk = -h * ((3 + pp.gamma) * h + 2 * pp.epsilon) / (D * D);
      gx = wx * gk;
      gxyz = wxyz * gk;
    } else {
      double e = pp.epsilon, inv2 = 0;
      for (int a = 0; a < 3; a++) inv2 += 1 / (v[a] * v[a]);
      double sm = sqrt(h * h * inv2 + e * e);
      R = sm - e;
      gm = 0;
      for (int a = 0; a < 3; a++) {
        double sa = sqrt(h * h / (v[a] * v[a]) + e * e);
        R += sa - e;
        gm += h / (v[a] * v[a]) * (1 / sm + 1 / sa);
      }
      gx = -(h / v[0]) / (v[0] * sm); /* x_{m+e_x} only enters g_m's x difference */
      gxyz = 0;
    }
    g_autoptr(TlPrior) p = new_prior(names[k], &g, &pp);
    double vd = device_eval(p, x, gd);
    g_test_message("%s hot voxel: R %.8g (closed form %.8g), dR/dx_m %.8g (%.8g)", names[k], vd,
                   R, gd[m], gm);
    g_assert_cmpfloat(fabs(vd - R), <=, 1e-6 * R);
    g_assert_cmpfloat(fabs(gd[m] - gm), <=, 1e-6 * fabs(gm));
    g_assert_cmpfloat(fabs(gd[kx] - gx), <=, 1e-6 * fabs(gm));
    g_assert_cmpfloat(fabs(gd[kxyz] - gxyz), <=, 1e-6 * fabs(gm));
    /* far from m nothing changes */
    g_assert_cmpfloat(gd[0], ==, 0.0f);
  }
}

/* RDP's gamma: the hot-voxel value W h^2 / ((1 + gamma) h + eps) for gamma 0, 2, 8, set on one
 * prior with tl_prior_set_params (so the call is seen to take effect), then epsilon changed too;
 * and on a random image the device follows the reference's value for each gamma. */
static void test_gamma_set_params(void) {
  TlImageGrid g = test_grid();
  guint64 n = tl_image_grid_n_voxels(&g);
  const double W = 2 * (1 + 1 / 1.5 + 0.5) +
                   4 * (1 / sqrt(1 + 2.25) + 1 / sqrt(1 + 4.0) + 1 / sqrt(2.25 + 4)) +
                   8 / sqrt(1 + 2.25 + 4);
  const double h = 2.0;
  g_autofree float *hot = g_new0(float, n);
  hot[4 + 9 * (3 + 7 * 2)] = (float)h;
  g_autofree float *xf = random_image(n, 5, 0.1, 3.0);
  g_autofree double *x = to_double(xf, n);
  TlPriorParams pp = {.gamma = 0.0, .epsilon = 1e-3};
  g_autoptr(TlPrior) p = new_prior("rdp", &g, &pp);
  const double gammas[] = {0.0, 2.0, 8.0};
  double prev = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS(gammas); i++) {
    GError *error = NULL;
    pp.gamma = gammas[i];
    g_assert_true(tl_prior_set_params(p, &pp, &error));
    g_assert_no_error(error);
    double v = device_eval(p, hot, NULL);
    double R = W * h * h / ((1 + pp.gamma) * h + pp.epsilon);
    g_test_message("rdp gamma %g: hot voxel R %.8g (closed form %.8g)", pp.gamma, v, R);
    g_assert_cmpfloat(fabs(v - R), <=, 1e-6 * R);
    g_assert_cmpfloat(v, <, prev);
    prev = v;
    TlRefPrior ref = ref_for("rdp", &g, &pp);
    double vr = tl_ref_prior_value(&ref, x), vd = device_eval(p, xf, NULL);
    g_assert_cmpfloat(fabs(vd - vr), <=, 1e-5 * vr);
  }
  /* epsilon: R = W h^2 / ((1 + gamma) h + eps) with eps = h moves the value by a third */
  GError *error = NULL;
  pp = (TlPriorParams){.gamma = 2.0, .epsilon = h};
  g_assert_true(tl_prior_set_params(p, &pp, &error));
  g_assert_no_error(error);
  double v = device_eval(p, hot, NULL), R = W * h * h / (4 * h);
  g_assert_cmpfloat(fabs(v - R), <=, 1e-6 * R);
  /* a refused set leaves the parameters as they were */
  TlPriorParams bad = {.gamma = -1, .epsilon = 1};
  g_assert_false(tl_prior_set_params(p, &bad, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_cmpfloat(p->params.gamma, ==, 2.0);
  g_assert_cmpfloat(fabs(device_eval(p, hot, NULL) - R), <=, 1e-6 * R);
}

/* The value's partials when the dispatch is split into chunks of one workgroup each (submit
 * budget 1): the same sum as in one dispatch, and more than one submission. */
static void test_chunks(void) {
  TlImageGrid g = tl_image_grid_centred(23, 17, 11, 2.0f, 3.0f, 2.5f);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autofree float *xf = random_image(n, 3, 0.1, 3.0);
  g_autofree double *x = to_double(xf, n);
  GError *error = NULL;
  for (int k = 0; k < 3; k++) {
    g_autoptr(TlPrior) p = new_prior(names[k], &g, NULL);
    TlRefPrior ref = ref_for(names[k], &g, &p->params);
    double vr = tl_ref_prior_value(&ref, x);
    g_autoptr(TlArray) a = tl_array_new_float(ctx, n, &error);
    g_assert_no_error(error);
    g_assert_true(tl_array_upload(a, xf, &error));
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_no_error(error);
    tl_stream_set_submit_budget(s, 1);
    double v = NAN;
    g_assert_true(tl_prior_value(p, s, a, &v, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(tl_stream_n_submissions(s), >, 1);
    g_test_message("%s on 23 x 17 x 11 (2 x 3 x 2.5 mm) in chunks: R %.9g, reference %.9g "
                   "(rel %.2e)", names[k], v, vr, fabs(v - vr) / vr);
    g_assert_cmpfloat(fabs(v - vr), <=, 1e-5 * vr);
  }
}

static void expect_error(TlPrior *p, const GError *error, const char *needle) {
  g_assert_null(p);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  if (!strstr(error->message, needle))
    g_error("message \"%s\" does not name \"%s\"", error->message, needle);
}

static void test_bad_input(void) {
  TlImageGrid g = test_grid();
  GError *error = NULL;
  struct {
    const char *name;
    double gamma, epsilon;
    const char *needle;
  } bad[] = {
      {"rdp", NAN, 1e-3, "gamma nan"},      {"rdp", -0.5, 1e-3, "gamma -0.5"},
      {"rdp", INFINITY, 1e-3, "gamma inf"}, {"rdp", 2, 0.0, "epsilon 0"},
      {"tv", 2, -1.0, "epsilon -1"},        {"tv", 2, NAN, "epsilon nan"},
      {"quadratic", 2, INFINITY, "epsilon inf"}, {"rdp", 2, 1e-60, "epsilon 1e-60"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    TlPriorParams pp = {.gamma = bad[i].gamma, .epsilon = bad[i].epsilon};
    TlPrior *p = tl_prior_new(ctx, bad[i].name, &g, &pp, &error);
    expect_error(p, error, bad[i].needle);
    g_clear_error(&error);
  }
  /* unknown name: the message names it and the known ones */
  TlPrior *p = tl_prior_new(ctx, "huber", &g, NULL, &error);
  expect_error(p, error, "'huber'");
  g_assert_nonnull(strstr(error->message, "quadratic, rdp, tv"));
  g_clear_error(&error);
  /* a bad grid */
  TlImageGrid zero = g;
  zero.voxel_mm[1] = 0;
  p = tl_prior_new(ctx, "tv", &zero, NULL, &error);
  g_assert_null(p);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);

  /* arrays of the wrong length, and the gradient written over the image */
  g_autoptr(TlPrior) q = new_prior("quadratic", &g, NULL);
  guint64 n = tl_image_grid_n_voxels(&g);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlArray) shorter = tl_array_new_float(ctx, n - 1, &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  double v;
  g_assert_false(tl_prior_value(q, s, shorter, &v, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "314"));
  g_clear_error(&error);
  g_assert_false(tl_prior_gradient(q, s, x, shorter, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_prior_gradient(q, s, x, x, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
}

/* The registry lists exactly the three classes, with their kinds 0, 1, 2. */
static void test_registry(void) {
  const TlPriorClass *const *list = tl_recon_priors();
  gsize i = 0;
  for (; list[i]; i++) {
    g_assert_cmpuint(i, <, 3);
    g_assert_cmpstr(list[i]->name, ==, names[i]);
    g_assert_cmpuint(list[i]->kind, ==, i);
    g_assert_nonnull(list[i]->summary);
  }
  g_assert_cmpuint(i, ==, 3);
  TlPriorParams pp;
  tl_prior_params_init(&pp);
  g_assert_cmpfloat(pp.gamma, ==, 2.0);
  g_assert_cmpfloat(pp.epsilon, ==, 1e-3);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/recon-prior/registry", test_registry);
  g_test_add_func("/recon-prior/reference", test_reference);
  g_test_add_func("/recon-prior/finite-differences", test_finite_differences);
  g_test_add_func("/recon-prior/constant", test_constant);
  g_test_add_func("/recon-prior/hot-voxel", test_hot_voxel);
  g_test_add_func("/recon-prior/gamma-set-params", test_gamma_set_params);
  g_test_add_func("/recon-prior/chunks", test_chunks);
  g_test_add_func("/recon-prior/bad-input", test_bad_input);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
