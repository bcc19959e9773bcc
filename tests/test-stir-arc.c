/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Arc-corrected STIR projection data reconstructed (issue 26 item 3). A phantom of ellipsoids is
 * forward-projected here, analytically (chord lengths through each ellipsoid, no voxels, no
 * Tomolab projector), into STIR's Utah (PRT-1) geometry with arc-corrected bins laid out as
 * STIR's ProjDataInfoCylindricalArcCorr describes them; the sinogram is written and read back
 * as a STIR file, its bins become lines (pet/data/tl-sinogram-arc.h) and MLEM over the lines
 * operator (pet/tl-pet-lines.h) must give the phantom back: correlation >= 0.9 with the
 * voxelised phantom, the hot sphere where it is (not mirrored in x, y or z, nor transposed),
 * the cold sphere cold. */
#include "tl-test-common.h"
#include "pet/data/tl-sinogram-arc.h"
#include "pet/tl-pet-lines.h"
#include "recon/tl-solver.h"
#include "pet/tl-recon.h"
#include "run/tl-run-spec.h"
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static char *tmpdir;

/* PRT-1 as STIR's Scanner.cxx lists it: 16 rings of 384 detectors, inner radius 373 mm, depth
 * of interaction 7 mm, rings 6.75 mm apart, arc-corrected bins 3.1088 mm; views mashed by 2. */
#define RINGS 16
#define DETS 384
#define RADIUS (373.0 + 7.0)
#define SPACING 6.75
#define BIN 3.1088
#define VIEWS 96
#define TANG 128

typedef struct {
  double c[3], a[3], value; /* centre, semi-axes (mm), activity added inside */
} Ellipsoid;

static const Ellipsoid phantom[] = {
    {{0, 0, 0}, {90, 60, 45}, 1.0},
    {{50, 25, 13.5}, {15, 15, 15}, 3.0},   /* hot: x > 0, y > 0, z > 0 */
    {{-40, -10, -13.5}, {20, 20, 16}, -1.0}, /* cold */
};

/* length of the chord of p + t d (t in [0, 1]) inside ellipsoid e */
static double chord(const Ellipsoid *e, const double p[3], const double d[3]) {
  double A = 0, B = 0, C = -1;
  for (int k = 0; k < 3; k++) {
    double q = (p[k] - e->c[k]) / e->a[k], r = d[k] / e->a[k];
    A += r * r, B += 2 * q * r, C += q * q;
  }
  double disc = B * B - 4 * A * C;
  if (disc <= 0) return 0;
  double t1 = (-B - sqrt(disc)) / (2 * A), t2 = (-B + sqrt(disc)) / (2 * A);
  t1 = MAX(t1, 0), t2 = MIN(t2, 1);
  return t2 > t1 ? (t2 - t1) * sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) : 0;
}

static double activity(double x, double y, double z) {
  double v = 0;
  for (guint i = 0; i < G_N_ELEMENTS(phantom); i++) {
    const Ellipsoid *e = &phantom[i];
    double q = 0, p[3] = {x, y, z};
    for (int k = 0; k < 3; k++) q += pow((p[k] - e->c[k]) / e->a[k], 2);
    if (q <= 1) v += e->value;
  }
  return v;
}

/* The sinogram with segments of ring difference 0, -1, +1 (span 1), each bin the analytic line
 * integral along STIR's arc-corrected line: angle phi = pi v / views, the line at signed
 * distance s = t * bin from the axis along (cos phi, sin phi), running along (sin phi, -cos phi)
 * from ring r1 (detector 1's end) to ring r2 = r1 + difference. */
static TlSinogram *utah_sinogram(int tang) {
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->name = g_strdup("PRT-1");
  s->n_segments = 3;
  s->n_axial = g_new(guint, 3);
  s->min_ring_difference = g_new(gint, 3);
  s->max_ring_difference = g_new(gint, 3);
  const gint rd[3] = {0, -1, 1};
  for (int i = 0; i < 3; i++) {
    s->min_ring_difference[i] = s->max_ring_difference[i] = rd[i];
    s->n_axial[i] = RINGS - (guint)abs(rd[i]);
  }
  s->n_views = VIEWS, s->n_tangential = (guint)tang, s->arc_corrected = TRUE;
  s->n_rings = RINGS, s->n_detectors = DETS;
  s->inner_radius_mm = 373.0, s->doi_mm = 7.0, s->ring_spacing_mm = SPACING, s->bin_size_mm = BIN;
  s->n_bins = (guint64)(16 + 15 + 15) * VIEWS * (guint)tang;
  s->data = g_new(float, s->n_bins);
  float *v = s->data;
  for (int seg = 0; seg < 3; seg++)
    for (int view = 0; view < VIEWS; view++) {
      double phi = G_PI * view / VIEWS;
      for (int ax = 0; ax < RINGS - abs(rd[seg]); ax++) {
        int r1 = rd[seg] >= 0 ? ax : ax - rd[seg], r2 = r1 + rd[seg];
        for (int t = -tang / 2; t < tang - tang / 2; t++, v++) {
          double off = t * BIN, half = sqrt(RADIUS * RADIUS - off * off);
          double p[3] = {off * cos(phi) + half * sin(phi), off * sin(phi) - half * cos(phi),
                         (r1 - (RINGS - 1) / 2.0) * SPACING};
          double q[3] = {off * cos(phi) - half * sin(phi), off * sin(phi) + half * cos(phi),
                         (r2 - (RINGS - 1) / 2.0) * SPACING};
          double d[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]}, sum = 0;
          for (guint e = 0; e < G_N_ELEMENTS(phantom); e++) sum += phantom[e].value * chord(&phantom[e], p, d);
          *v = (float)sum;
        }
      }
    }
  return s;
}

/* mean of the image over the voxels within r mm of (x, y, z) */
static double ball_mean(const TlImage *im, double x, double y, double z, double r) {
  const TlImageGrid *g = &im->grid;
  double sum = 0;
  guint n = 0;
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double px = g->origin_mm[0] + i * g->voxel_mm[0], py = g->origin_mm[1] + j * g->voxel_mm[1],
               pz = g->origin_mm[2] + k * g->voxel_mm[2];
        if (pow(px - x, 2) + pow(py - y, 2) + pow(pz - z, 2) > r * r) continue;
        sum += im->data[i + g->dims[0] * (j + g->dims[1] * k)];
        n++;
      }
  g_assert_cmpuint(n, >, 0);
  return sum / n;
}

static void test_recon(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) made = utah_sinogram(TANG);
  g_assert_true(tl_sinogram_validate(made, "test", &error));
  g_assert_no_error(error);
  /* through a STIR file, as data arrive */
  g_autofree char *hs = g_build_filename(tmpdir, "utah_arc.hs", NULL);
  g_assert_true(tl_sinogram_save(made, hs, &error));
  g_assert_no_error(error);
  g_autoptr(TlSinogram) s = tl_sinogram_load(hs, &error);
  g_assert_no_error(error);
  g_assert_true(s->arc_corrected);
  g_assert_cmpfloat(fabs(s->bin_size_mm - BIN), <, 1e-4);
  /* the crystal-pair path still refuses them, naming why */
  g_autoptr(GArray) pairs = tl_sinogram_to_bins(s, FALSE, &error);
  g_assert_null(pairs);
  g_assert_nonnull(strstr(error->message, "arc-corrected"));
  g_clear_error(&error);

  g_autofree guint32 *view_of = NULL;
  g_autofree float *ends = tl_sinogram_arc_lines(s, 1, 1, NULL, &view_of, &error);
  g_assert_no_error(error);
  /* the first bin: segment 0, view 0 (phi = 0), ring 0, t = -64: x = -64 * bin, detector 1's
   * end at y = -sqrt(R^2 - s^2) */
  g_assert_cmpfloat(fabs(ends[0] - (-64 * BIN)), <, 1e-3);
  g_assert_cmpfloat(fabs(ends[1] + sqrt(RADIUS * RADIUS - pow(64 * BIN, 2))), <, 1e-3);
  g_assert_cmpfloat(fabs(ends[2] + 7.5 * SPACING), <, 1e-4);

  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(64, 64, RINGS, 4.0f, 4.0f, (float)SPACING);
  /* 4 subsets of interleaved views (OSEM), 4 iterations */
  g_autoptr(TlOperator) op = tl_pet_lines_operator_new(ctx, &g, "siddon", s->n_bins, ends, 1,
                                                       NULL, s->data, view_of, 4, &error);
  g_assert_no_error(error);
  /* data order: subset v mod 4 holds view v's bins, in sinogram order (a permutation) */
  g_autofree guint64 *pos = tl_pet_lines_operator_order(op);
  g_autofree gboolean *hit = g_new0(gboolean, s->n_bins);
  for (guint64 i = 0; i < s->n_bins; i++) {
    guint sub = view_of[i] % 4;
    g_assert_cmpuint(pos[i], >=, tl_operator_subset_first(op, sub));
    g_assert_cmpuint(pos[i], <, tl_operator_subset_first(op, sub) + tl_operator_subset_length(op, sub));
    g_assert_false(hit[pos[i]]);
    hit[pos[i]] = TRUE;
    if (i && view_of[i - 1] % 4 == sub) g_assert_cmpuint(pos[i], ==, pos[i - 1] + 1);
  }
  TlProblem pb = {.op = op};
  TlSolverOptions so;
  tl_solver_options_init(&so);
  so.iterations = 4;
  so.objective = TL_OBJECTIVE_NEVER;
  g_autoptr(TlSolver) sv = tl_solver_new(ctx, "osem", &pb, &so, &error);
  g_assert_no_error(error);
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(tl_solver_run(sv, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) im = tl_solver_image(sv, &error);
  g_assert_no_error(error);
  g_test_message("OSEM 4 x 4 subsets over %" G_GUINT64_FORMAT " lines: %.1f s",
                 s->n_bins, (g_get_monotonic_time() - t0) / 1e6);

  /* the phantom voxelised (4^3 samples per voxel) */
  g_autoptr(TlImage) truth = tl_image_new(&g);
  for (guint k = 0; k < g.dims[2]; k++)
    for (guint j = 0; j < g.dims[1]; j++)
      for (guint i = 0; i < g.dims[0]; i++) {
        double sum = 0;
        for (int a = 0; a < 64; a++)
          sum += activity(g.origin_mm[0] + (i + (a % 4 + 0.5) / 4 - 0.5) * g.voxel_mm[0],
                          g.origin_mm[1] + (j + (a / 4 % 4 + 0.5) / 4 - 0.5) * g.voxel_mm[1],
                          g.origin_mm[2] + (k + (a / 16 + 0.5) / 4 - 0.5) * g.voxel_mm[2]);
        truth->data[i + g.dims[0] * (j + g.dims[1] * k)] = (float)(sum / 64);
      }
  guint64 nv = tl_image_grid_n_voxels(&g);
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (guint64 i = 0; i < nv; i++) mx += im->data[i], my += truth->data[i];
  mx /= nv, my /= nv;
  for (guint64 i = 0; i < nv; i++) {
    double a = im->data[i] - mx, b = truth->data[i] - my;
    sxy += a * b, sxx += a * a, syy += b * b;
  }
  double corr = sxy / sqrt(sxx * syy);
  double hot = ball_mean(im, 50, 25, 13.5, 10), bg = ball_mean(im, 30, -35, 0, 10),
         cold = ball_mean(im, -40, -10, -13.5, 10);
  g_test_message("correlation %.4f; hot %.3f, background %.3f, cold %.3f (phantom 4, 1, 0)", corr,
                 hot, bg, cold);
  g_assert_cmpfloat(corr, >=, 0.9);
  /* orientation: the hot sphere not mirrored (x, y, z) nor transposed (x <-> y) */
  const double mirrors[][3] = {{-50, 25, 13.5}, {50, -25, 13.5}, {50, 25, -13.5}, {25, 50, 13.5}};
  for (guint m = 0; m < G_N_ELEMENTS(mirrors); m++)
    g_assert_cmpfloat(hot, >, 2 * ball_mean(im, mirrors[m][0], mirrors[m][1], mirrors[m][2], 10));
  g_assert_cmpfloat(hot, >, 2.5 * bg);
  g_assert_cmpfloat(cold, <, 0.35 * bg);
}

/* The sensitivity (column sums over every bin) of the same Utah geometry on STIR's usual voxels
 * (one bin transaxially, half a ring axially; 75 x 75 x 31, the bins within 112 mm of the axis,
 * to keep the test short), with rays_t x rays_z
 * rays per bin; per plane std / mean inside 100 mm (the worst of the central planes) and the
 * odd/even plane alternation |mean(even) - mean(odd)| / mean over the central planes. */
static void sensitivity_stats_of(gboolean pairs, guint rays_t, guint rays_z, double *spread,
                                 double *alternation) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(72); /* |s| <= 112 mm: every line through r < 100 mm */
  if (pairs) { /* not arc-corrected: 192 views of crystal pairs, |s| <= 110 mm */
    s->arc_corrected = FALSE;
    s->n_views = DETS / 2;
    s->n_bins = (guint64)(16 + 15 + 15) * s->n_views * 72;
    g_free(s->data);
    s->data = g_new(float, s->n_bins);
    for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = 1;
  }
  guint R = rays_t * rays_z;
  g_autofree float *w = g_new(float, R);
  g_autofree float *ends = pairs ? tl_sinogram_pair_lines(s, rays_t, rays_z, w, &error)
                                 : tl_sinogram_arc_lines(s, rays_t, rays_z, w, NULL, &error);
  g_assert_no_error(error);
  double wsum = 0;
  for (guint r = 0; r < R; r++) wsum += w[r];
  g_assert_cmpfloat(fabs(wsum - 1), <, 1e-6);
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(75, 75, 2 * RINGS - 1, (float)BIN, (float)BIN,
                                        (float)(SPACING / 2));
  g_autoptr(TlOperator) op = tl_pet_lines_operator_new(ctx, &g, "siddon", s->n_bins, ends, R, w,
                                                       s->data, NULL, 1, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) sens = tl_array_new_float(ctx, tl_image_grid_n_voxels(&g), &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(tl_operator_sensitivity(op, st, 0, sens, &error));
  g_assert_no_error(error);
  g_autoptr(TlImage) im = tl_image_new(&g);
  g_assert_true(tl_array_download(sens, im->data, &error));
  g_assert_no_error(error);
  double plane[2 * RINGS - 1];
  *spread = 0;
  for (guint k = 0; k < g.dims[2]; k++) {
    double sum = 0, sq = 0;
    guint n = 0;
    for (guint j = 0; j < g.dims[1]; j++)
      for (guint i = 0; i < g.dims[0]; i++) {
        double x = g.origin_mm[0] + i * g.voxel_mm[0], y = g.origin_mm[1] + j * g.voxel_mm[1];
        if (x * x + y * y > 100.0 * 100.0) continue;
        double v = im->data[i + g.dims[0] * (j + g.dims[1] * k)];
        sum += v, sq += v * v, n++;
      }
    plane[k] = sum / n;
    double sd = sqrt(MAX(sq / n - plane[k] * plane[k], 0));
    if (k >= 4 && k + 4 < g.dims[2]) *spread = MAX(*spread, sd / plane[k]);
  }
  double even = 0, odd = 0;
  guint ne = 0, no = 0;
  for (guint k = 4; k + 4 < g.dims[2]; k++) {
    if (k % 2) odd += plane[k], no++;
    else even += plane[k], ne++;
  }
  even /= ne, odd /= no;
  *alternation = fabs(even - odd) / ((even + odd) / 2);
  g_test_message("%s, %u x %u rays: sensitivity std/mean inside 100 mm %.4f (worst central "
                 "plane), odd/even planes %.4f; %.1f s", pairs ? "crystal pairs" : "arc-corrected",
                 rays_t, rays_z, *spread, *alternation, (g_get_monotonic_time() - t0) / 1e6);
}

static void sensitivity_stats(guint rays_t, guint rays_z, double *spread, double *alternation) {
  sensitivity_stats_of(FALSE, rays_t, rays_z, spread, alternation);
}

/* Issue 26 item 4 on data that are not arc-corrected: the crystal pairs of the Utah geometry
 * (192 views, 72 tangential positions, segments 0, +-1) as lines with 1 x 1 rays (each pair's
 * own line between the detectors: Tomolab's thin-line model) and 3 x 3 (moved across the
 * bin's sampling in s and a ring's width): measured, the rays smoother. The crystal-pair
 * operators of the run do not take rays yet; this measures what they would gain. */
static void test_pair_rays(void) {
  double s1, a1, s3, a3;
  sensitivity_stats_of(TRUE, 1, 1, &s1, &a1);
  sensitivity_stats_of(TRUE, 3, 3, &s3, &a3);
  g_assert_cmpfloat(a3, <, a1);
  g_assert_cmpfloat(s3, <, s1);
  /* 1 x 1 is the detectors' own line: the first bin (view 0, t = -36, ring 0 to 0) joins
   * detector (0 + floor(-36 / 2)) mod 384 = 366 to (0 - floor(-35 / 2) + 192) = 210
   * (tl-sinogram.h), at R (sin psi, -cos psi) */
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(72);
  s->arc_corrected = FALSE;
  s->n_views = DETS / 2;
  s->n_bins = (guint64)(16 + 15 + 15) * s->n_views * 72;
  g_autofree float *one = tl_sinogram_pair_lines(s, 1, 1, NULL, &error);
  g_assert_no_error(error);
  double p1 = 2 * G_PI * 366 / DETS, p2 = 2 * G_PI * 210 / DETS;
  g_assert_cmpfloat(fabs(one[0] - RADIUS * sin(p1)), <, 1e-3);
  g_assert_cmpfloat(fabs(one[1] + RADIUS * cos(p1)), <, 1e-3);
  g_assert_cmpfloat(fabs(one[3] - RADIUS * sin(p2)), <, 1e-3);
  g_assert_cmpfloat(fabs(one[4] + RADIUS * cos(p2)), <, 1e-3);
  g_assert_cmpfloat(fabs(one[2] + 7.5 * SPACING), <, 1e-4);
  /* arc-corrected bins are no crystal pairs */
  s->arc_corrected = TRUE;
  g_autofree float *bad = tl_sinogram_pair_lines(s, 1, 1, NULL, &error);
  g_assert_null(bad);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

/* Issue 26 item 4: with 3 x 3 rays the sensitivity is smooth where one thin line per bin is
 * not (the thin lines' figures are logged beside, and must be the worse). */
static void test_rays(void) {
  double s1, a1, s3, a3;
  sensitivity_stats(1, 1, &s1, &a1);
  sensitivity_stats(3, 3, &s3, &a3);
  g_assert_cmpfloat(s3, <=, 0.02);
  g_assert_cmpfloat(a3, <=, 0.005);
  g_assert_cmpfloat(a1, >, a3);
}

/* 3 x 3 rays: the adjoint is the transpose, <A x, w> = <x, A^T w> for random x and w (on
 * 3000 bins of segment 0 and a small grid, in double on the host). */
static void test_rays_adjoint(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(TANG);
  float wr[9];
  g_autofree float *ends = tl_sinogram_arc_lines(s, 3, 3, wr, NULL, &error);
  g_assert_no_error(error);
  const guint64 n = 3000;
  g_autofree float *sub = g_new(float, 6 * n * 9), *ones = g_new(float, n);
  for (guint r = 0; r < 9; r++) /* the first n bins of each ray */
    memcpy(sub + 6 * n * r, ends + 6 * s->n_bins * r, 6 * n * sizeof(float));
  for (guint64 i = 0; i < n; i++) ones[i] = 1;
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(24, 24, 8, 10.0f, 10.0f, (float)SPACING);
  g_autoptr(TlOperator) op = tl_pet_lines_operator_new(ctx, &g, "joseph", n, sub, 9, wr, ones,
                                                       NULL, 1, &error);
  g_assert_no_error(error);
  guint64 nv = tl_image_grid_n_voxels(&g);
  g_autofree float *x = g_new(float, nv), *w = g_new(float, n), *ax = g_new(float, n),
                   *atw = g_new(float, nv);
  GRand *rng = g_rand_new_with_seed(26);
  for (guint64 i = 0; i < nv; i++) x[i] = (float)g_rand_double(rng);
  for (guint64 i = 0; i < n; i++) w[i] = (float)g_rand_double(rng);
  g_rand_free(rng);
  g_autoptr(TlArray) dx = tl_array_new_float(ctx, nv, &error), dw = tl_array_new_float(ctx, n, &error),
                     dax = tl_array_new_float(ctx, n, &error), datw = tl_array_new_float(ctx, nv, &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_true(tl_array_upload(dx, x, &error) && tl_array_upload(dw, w, &error));
  g_assert_true(tl_operator_forward(op, st, 0, dx, dax, &error) &&
                tl_stream_zero(st, datw, &error) &&
                tl_operator_adjoint(op, st, 0, dw, datw, &error) && tl_stream_finish(st, &error));
  g_assert_no_error(error);
  g_assert_true(tl_array_download(dax, ax, &error) && tl_array_download(datw, atw, &error));
  double l = 0, r = 0;
  for (guint64 i = 0; i < n; i++) l += (double)ax[i] * w[i];
  for (guint64 i = 0; i < nv; i++) r += (double)x[i] * atw[i];
  g_test_message("<A x, w> = %.6g, <x, A^T w> = %.6g", l, r);
  g_assert_cmpfloat(l, >, 0);
  g_assert_cmpfloat(fabs(l - r), <, 1e-5 * fabs(l));
}

/* A tangential range reaching the detector cylinder has no line: a GError naming it. */
static void test_bad(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(TANG);
  s->bin_size_mm = 10;
  g_autofree float *e = tl_sinogram_arc_lines(s, 1, 1, NULL, NULL, &error);
  g_assert_null(e);
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "detector radius"));
  g_clear_error(&error);
  s->bin_size_mm = BIN;
  s->n_bins--; /* a geometry not matching the bins held */
  e = tl_sinogram_arc_lines(s, 1, 1, NULL, NULL, &error);
  g_assert_null(e);
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_clear_error(&error);
  s->n_bins++;
  e = tl_sinogram_arc_lines(s, 9, 9, NULL, NULL, &error); /* 81 rays: more than 64 */
  g_assert_null(e);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  s->arc_corrected = FALSE;
  e = tl_sinogram_arc_lines(s, 1, 1, NULL, NULL, &error);
  g_assert_null(e);
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
}

/* tl_recon_new_arc (every door's path for arc-corrected data): MLEM with the sensitivity it
 * computed, then again given that image (TlReconOptions.sensitivity, the run key
 * `sensitivity`): the same bits; a sensitivity on another grid, with a negative voxel, and the
 * corrections the lines cannot take yet are refused, naming what. */
static void test_recon_arc_sensitivity(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(64);
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(32, 32, RINGS, 8.0f, 8.0f, (float)SPACING);
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.iterations = 2;
  o.loglik = TL_LOGLIK_NEVER;
  o.rays_tangential = 2;
  g_autoptr(TlRecon) a = tl_recon_new_arc(ctx, s, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(a, &error));
  g_autoptr(TlImage) ia = tl_recon_image(a, &error), sens = tl_image_new(&g);
  g_assert_true(tl_array_download(tl_recon_sensitivity(a), sens->data, &error));
  g_assert_no_error(error);
  o.sensitivity = sens;
  g_autoptr(TlRecon) b = tl_recon_new_arc(ctx, s, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_run(b, &error));
  g_autoptr(TlImage) ib = tl_recon_image(b, &error);
  g_assert_no_error(error);
  guint64 nv = tl_image_grid_n_voxels(&g);
  g_assert_cmpfloat(tl_image_sum(ia), >, 0);
  g_assert_cmpint(memcmp(ia->data, ib->data, nv * sizeof(float)), ==, 0);
  /* the run's checks: another grid named with both grids and the file */
  g_autoptr(TlRunSpec) sp = tl_run_spec_new();
  g_autofree char *path = g_build_filename(tmpdir, "sens.nii", NULL);
  TlImageGrid other = tl_image_grid_centred(32, 32, RINGS, 7.0f, 7.0f, (float)SPACING);
  g_autoptr(TlImage) wrong = tl_image_new(&other);
  g_assert_true(tl_image_save(wrong, path, &error));
  g_assert_true(tl_run_spec_set(sp, "sensitivity", path, &error));
  TlImage *got = NULL;
  g_assert_false(tl_run_spec_load_sensitivity(sp, &g, &got, &error));
  g_assert_null(got);
  const char *gk = "32x32x16 voxels of 8 x 8 x 6.75 mm", *ok = "32x32x16 voxels of 7 x 7 x 6.75 mm";
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, path));
  g_assert_nonnull(strstr(error->message, gk));
  g_assert_nonnull(strstr(error->message, ok));
  g_clear_error(&error);
  g_remove(path);
  /* a negative voxel */
  sens->data[5] = -1;
  g_autoptr(TlRecon) c = tl_recon_new_arc(ctx, s, &g, &o, &error);
  g_assert_null(c);
  g_assert_nonnull(strstr(error->message, "voxel 5"));
  g_clear_error(&error);
  /* what the lines cannot take yet */
  o.sensitivity = NULL;
  o.tof = TRUE;
  g_autoptr(TlRecon) d = tl_recon_new_arc(ctx, s, &g, &o, &error);
  g_assert_null(d);
  g_assert_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "time of flight"));
  g_clear_error(&error);
  /* rays per line: keys bounded, 8 x 8 at most */
  g_assert_false(tl_run_spec_set(sp, "rays-tangential", "9", &error));
  g_clear_error(&error);
  g_assert_true(tl_run_spec_set(sp, "rays-tangential", "8", &error) &&
                tl_run_spec_set(sp, "rays-axial", "8", &error));
  g_assert_no_error(error);
  g_assert_true(tl_run_spec_set(sp, "sensitivity", "", &error));
  g_assert_true(tl_run_spec_validate(sp, &error));
  g_assert_no_error(error);
}

/* Attenuation correction of arc-corrected data: a uniform cylinder of water (mu 0.0096 / mm,
 * radius 90 mm, the full axial length) projected here with its attenuation, exp(-mu chord)
 * times the activity's chord along each of STIR's arc-corrected lines. With the mu-map
 * (tl_recon_new_arc: D = exp(-A mu)) the centre comes back at the edge's level; without, the
 * centre is depressed as attenuated data make it. */
static void test_recon_arc_attenuation(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = utah_sinogram(72);
  const double mu = 0.0096, rad = 90;
  float *v = s->data;
  for (guint seg = 0; seg < 3; seg++)
    for (guint view = 0; view < VIEWS; view++)
      for (guint ax = 0; ax < s->n_axial[seg]; ax++)
        for (gint t = -36; t < 36; t++, v++) {
          /* the lines of a ring difference of at most 1 are nearly transaxial: the chord of a
           * cylinder along the full axial length is its transaxial chord / cos(tilt) */
          double off = t * BIN, c = off * off < rad * rad ? 2 * sqrt(rad * rad - off * off) : 0;
          double tilt = s->min_ring_difference[seg] * SPACING / (2 * RADIUS);
          c *= sqrt(1 + tilt * tilt);
          *v = (float)(c * exp(-mu * c));
        }
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(48, 48, RINGS, 5.0f, 5.0f, (float)SPACING);
  g_autoptr(TlImage) map = tl_image_new(&g);
  for (guint k = 0; k < g.dims[2]; k++)
    for (guint j = 0; j < g.dims[1]; j++)
      for (guint i = 0; i < g.dims[0]; i++) {
        double x = g.origin_mm[0] + i * g.voxel_mm[0], y = g.origin_mm[1] + j * g.voxel_mm[1];
        map->data[i + g.dims[0] * (j + g.dims[1] * k)] = x * x + y * y <= rad * rad ? (float)mu : 0;
      }
  double ratio[2];
  for (int with = 0; with < 2; with++) {
    TlReconOptions o;
    tl_recon_options_init(&o);
    o.algo = TL_RECON_OSEM;
    o.subsets = 4;
    o.iterations = 4;
    o.loglik = TL_LOGLIK_NEVER;
    o.attenuation = with ? map : NULL;
    g_autoptr(TlRecon) r = tl_recon_new_arc(ctx, s, &g, &o, &error);
    g_assert_no_error(error);
    g_assert_true(tl_recon_run(r, &error));
    g_autoptr(TlImage) im = tl_recon_image(r, &error);
    g_assert_no_error(error);
    /* the centre against a ring at 55 mm, both inside the cylinder, central planes */
    double centre = ball_mean(im, 0, 0, 0, 20), edge = 0;
    for (int a = 0; a < 8; a++)
      edge += ball_mean(im, 55 * cos(a * G_PI / 4), 55 * sin(a * G_PI / 4), 0, 12) / 8;
    ratio[with] = centre / edge;
  }
  g_test_message("centre / edge of a water cylinder: %.3f without attenuation correction, %.3f "
                 "with", ratio[0], ratio[1]);
  g_assert_cmpfloat(fabs(ratio[1] - 1), <, 0.08);
  g_assert_cmpfloat(ratio[0], <, 0.85);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-stir-arc-XXXXXX", NULL);
  g_test_add_func("/stir-arc/recon", test_recon);
  g_test_add_func("/stir-arc/rays", test_rays);
  g_test_add_func("/stir-arc/rays-adjoint", test_rays_adjoint);
  g_test_add_func("/stir-arc/bad", test_bad);
  g_test_add_func("/stir-arc/recon-arc-sensitivity", test_recon_arc_sensitivity);
  g_test_add_func("/stir-arc/recon-arc-attenuation", test_recon_arc_attenuation);
  g_test_add_func("/stir-arc/pair-rays", test_pair_rays);
  int r = g_test_run();
  g_autofree char *hs = g_build_filename(tmpdir, "utah_arc.hs", NULL);
  g_autofree char *sd = g_build_filename(tmpdir, "utah_arc.s", NULL);
  g_remove(hs);
  g_remove(sd);
  g_rmdir(tmpdir);
  return r;
}
