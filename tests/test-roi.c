/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ROI statistics and the NEMA NU 2 analysis, against plain C references written here from
 * the definitions (every voxel visited, no bounding boxes), the phantom's own truth (CR = 1,
 * N = 0, lung residual 0) and an image whose spheres are made half as hot (CR = 0.5). */
#include "tl-test-common.h"
#include "image/tl-nema.h"
#include "image/tl-phantom.h"
#include "image/tl-rng.h"
#include <math.h>
#include <string.h>

/* The definition: voxel centre origin + index * size; sphere: 3-D distance; circle: the
 * slice nearest the centre along the axis and the in-plane distance. */
static void ref_stats(const TlRoi *roi, const TlImage *im, guint64 *n, double *mean, double *sd) {
  const TlImageGrid *g = &im->grid;
  double sum = 0, sum2 = 0;
  GArray *v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double c[3] = {g->origin_mm[0] + i * (double)g->voxel_mm[0], g->origin_mm[1] + j * (double)g->voxel_mm[1],
                       g->origin_mm[2] + k * (double)g->voxel_mm[2]};
        guint idx[3] = {i, j, k};
        double d2 = 0;
        gboolean in = TRUE;
        for (int a = 0; a < 3; a++) {
          if (roi->kind == TL_ROI_CIRCLE && (guint)a == roi->axis) {
            double nearest = round((roi->centre_mm[a] - g->origin_mm[a]) / g->voxel_mm[a]);
            in = in && nearest == idx[a];
          } else {
            d2 += (c[a] - roi->centre_mm[a]) * (c[a] - roi->centre_mm[a]);
          }
        }
        if (in && d2 <= roi->radius_mm * roi->radius_mm) {
          double x = im->data[i + g->dims[0] * (j + g->dims[1] * k)];
          g_array_append_val(v, x);
          sum += x;
        }
      }
  *n = v->len;
  *mean = v->len ? sum / v->len : NAN;
  for (guint q = 0; q < v->len; q++)
    sum2 += (g_array_index(v, double, q) - *mean) * (g_array_index(v, double, q) - *mean);
  *sd = v->len > 1 ? sqrt(sum2 / (v->len - 1)) : v->len ? 0 : NAN;
  g_array_unref(v);
}

static void test_roi_stats(void) {
  TlImageGrid g = {{23, 19, 11}, {2.0f, 2.5f, 3.0f}, {-20.0f, -21.0f, -14.0f}};
  g_autoptr(TlImage) im = tl_image_new(&g);
  TlRng rng;
  tl_rng_init(&rng, 11, 0);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&g); i++)
    im->data[i] = (float)(10.0 * tl_rng_uniform(&rng));
  const TlRoi rois[] = {
    {TL_ROI_SPHERE, {0, 0, 0}, 7.3, 2},
    {TL_ROI_SPHERE, {-18.2, 20.1, 14.9}, 9.0, 0},   /* partly outside */
    {TL_ROI_SPHERE, {3.1, -4.4, 2.2}, 0.9, 0},      /* no voxel centre (n = 0) or one */
    {TL_ROI_CIRCLE, {1.2, 3.3, 4.4}, 8.0, 2},
    {TL_ROI_CIRCLE, {-5.0, 2.6, 0.1}, 6.0, 0},
    {TL_ROI_CIRCLE, {5.0, -0.4, 3.0}, 11.0, 1},
    {TL_ROI_SPHERE, {500, 0, 0}, 10, 2},            /* outside */
  };
  for (gsize r = 0; r < G_N_ELEMENTS(rois); r++) {
    TlRoiStats st;
    tl_roi_stats(&rois[r], im, &st);
    guint64 n;
    double mean, sd;
    ref_stats(&rois[r], im, &n, &mean, &sd);
    g_test_message("roi %zu: n %" G_GUINT64_FORMAT " mean %g sd %g", r, n, mean, sd);
    g_assert_cmpuint(st.n, ==, n);
    if (n == 0) {
      g_assert_true(isnan(st.mean));
      continue;
    }
    g_assert_cmpfloat_with_epsilon(st.mean, mean, 1e-9 * fabs(mean) + 1e-12);
    g_assert_cmpfloat_with_epsilon(st.sd, sd, 1e-9 * fabs(sd) + 1e-12);
  }
  /* The ROIs of the first kind that hold voxels really hold several (the test is not empty). */
  TlRoiStats st;
  tl_roi_stats(&rois[0], im, &st);
  g_assert_cmpuint(st.n, >, 20);
  tl_roi_stats(&rois[3], im, &st);
  g_assert_cmpuint(st.n, >, 20);
}

/* The truth of the NEMA phantom on a 2 mm grid covering the five background slices. */
static TlImage *nema_truth(const TlImageGrid *g) {
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(GError) error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, g, &error);
  g_assert_no_error(error);
  TlImage *act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, g, 4, &act, NULL, &error));
  g_assert_no_error(error);
  return act;
}

static const TlImageGrid kGrid = {{150, 116, 30}, {2.0f, 2.0f, 2.0f}, {-149.0f, -115.0f, -9.0f}};

static void layout(TlNemaLayout *l, gboolean full) {
  TlNemaOptions o;
  tl_nema_options_init(&o);
  o.full_diameter = full;
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_nema_layout_init(l, &kGrid, &o, &error));
  g_assert_no_error(error);
}

static void test_nema_truth(void) {
  g_autoptr(TlImage) truth = nema_truth(&kGrid);
  TlNemaLayout *l = g_new(TlNemaLayout, 1);
  layout(l, FALSE);
  g_assert_cmpuint(l->n_background, ==, 60);
  TlNemaResult r;
  tl_nema_analyse(l, truth, &r);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    g_test_message("%.0f mm: CR %.6f (%" G_GUINT64_FORMAT " voxels) N %.6f C_B %.6f", l->diameter_mm[j],
                   r.contrast_recovery[j], r.hot[j].n, r.variability[j], r.background_mean[j]);
    g_assert_cmpuint(r.hot[j].n, >=, 1);
    g_assert_cmpfloat_with_epsilon(r.contrast_recovery[j], 1.0, 1e-6);
    g_assert_cmpfloat_with_epsilon(r.background_mean[j], 1.0, 1e-6);
    g_assert_cmpfloat_with_epsilon(r.variability[j], 0.0, 1e-6);
  }
  g_assert_cmpfloat_with_epsilon(r.lung_residual, 0.0, 1e-6);
  g_assert_cmpfloat_with_epsilon(r.mean_cr, 1.0, 1e-6);

  /* Every background ROI lies in the uniform background: each of its voxels is exactly 1
   * (so no ROI touches an insert, the lung or the edge, even partly). */
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
    for (guint b = 0; b < l->n_background; b++) {
      guint64 n;
      double mean, sd;
      ref_stats(&l->background[j][b], truth, &n, &mean, &sd);
      g_assert_cmpuint(n, >, 0);
      g_assert_cmpfloat(mean, ==, 1.0);
      g_assert_cmpfloat(sd, ==, 0.0);
    }

  /* NEMA's full-diameter circles take partial-volume voxels at the rim: CR < 1 on the truth. */
  TlNemaLayout *full = g_new(TlNemaLayout, 1);
  layout(full, TRUE);
  tl_nema_analyse(full, truth, &r);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
    g_assert_cmpfloat(r.contrast_recovery[j], <, 0.999);
  g_free(full);

  /* Spheres half as hot above the background: CR 0.5 for each. */
  g_autoptr(TlImage) half = tl_image_copy(truth);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&kGrid); i++)
    if (half->data[i] > 1)
      half->data[i] = 1 + 0.5f * (half->data[i] - 1);
  tl_nema_analyse(l, half, &r);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
    g_assert_cmpfloat_with_epsilon(r.contrast_recovery[j], 0.5, 1e-6);
  g_free(l);
}

/* Background variability: SD of the 60 ROI means over their mean, recomputed here with the
 * reference statistics on a noisy image. */
static void test_nema_noise(void) {
  g_autoptr(TlImage) im = nema_truth(&kGrid);
  TlRng rng;
  tl_rng_init(&rng, 5, 0);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&kGrid); i++)
    im->data[i] *= (float)(0.5 + tl_rng_uniform(&rng));
  TlNemaLayout *l = g_new(TlNemaLayout, 1);
  layout(l, FALSE);
  TlNemaResult r;
  tl_nema_analyse(l, im, &r);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    double sum = 0, ss = 0, means[60];
    for (guint b = 0; b < l->n_background; b++) {
      guint64 n;
      double sd;
      ref_stats(&l->background[j][b], im, &n, &means[b], &sd);
      sum += means[b];
    }
    double cb = sum / l->n_background;
    for (guint b = 0; b < l->n_background; b++)
      ss += (means[b] - cb) * (means[b] - cb);
    double n_ref = sqrt(ss / (l->n_background - 1)) / cb;
    guint64 n;
    double ch, sd;
    ref_stats(&l->hot[j], im, &n, &ch, &sd);
    double cr_ref = (ch / cb - 1) / (4.0 - 1);
    g_test_message("%.0f mm: N %.5f (ref %.5f) CR %.5f (ref %.5f)", l->diameter_mm[j], r.variability[j], n_ref,
                   r.contrast_recovery[j], cr_ref);
    g_assert_cmpfloat(r.variability[j], >, 0.001);
    g_assert_cmpfloat_with_epsilon(r.variability[j], n_ref, 1e-9);
    g_assert_cmpfloat_with_epsilon(r.contrast_recovery[j], cr_ref, 1e-9);
  }
  g_free(l);
}

/* The demo's coarse voxels (5.56 mm): no voxel lies wholly inside the 10 and 13 mm spheres,
 * so their ROI is the voxel holding the centre; every sphere still gets a finite CR, at most
 * 1 on the truth (partial volume only lowers it). */
static void test_nema_coarse(void) {
  const TlImageGrid g = {{54, 42, 12}, {5.56f, 5.56f, 5.56f}, {-147.4f, -114.0f, -10.6f}};
  g_autoptr(TlImage) truth = nema_truth(&g);
  TlNemaOptions o;
  tl_nema_options_init(&o);
  TlNemaLayout *l = g_new(TlNemaLayout, 1);
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_nema_layout_init(l, &g, &o, &error));
  TlNemaResult r;
  tl_nema_analyse(l, truth, &r);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    g_test_message("%.0f mm: CR %.4f over %" G_GUINT64_FORMAT " voxels", l->diameter_mm[j], r.contrast_recovery[j],
                   r.hot[j].n);
    g_assert_cmpuint(r.hot[j].n, >=, 1);
    g_assert_true(isfinite(r.contrast_recovery[j]));
    g_assert_cmpfloat(r.contrast_recovery[j], >, 0.2);
    g_assert_cmpfloat(r.contrast_recovery[j], <=, 1.0 + 1e-6);
  }
  g_assert_cmpfloat_with_epsilon(r.contrast_recovery[0], 1.0, 1e-6);  /* 37 mm: interior voxels */
  g_free(l);
}

static void test_nema_off_grid(void) {
  TlImageGrid g = {{20, 20, 5}, {4, 4, 4}, {-38, -38, 100}};
  TlNemaOptions o;
  tl_nema_options_init(&o);
  TlNemaLayout *l = g_new(TlNemaLayout, 1);
  g_autoptr(GError) error = NULL;
  g_assert_false(tl_nema_layout_init(l, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "z = 20.0 mm"));
  g_free(l);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/roi/stats", test_roi_stats);
  g_test_add_func("/nema/truth", test_nema_truth);
  g_test_add_func("/nema/noise", test_nema_noise);
  g_test_add_func("/nema/coarse", test_nema_coarse);
  g_test_add_func("/nema/off-grid", test_nema_off_grid);
  return g_test_run();
}
