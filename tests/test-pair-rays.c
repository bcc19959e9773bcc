/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Several rays per crystal pair as a run path (issue 26 item 4): a sinogram that is not
 * arc-corrected, in STIR's Utah (PRT-1) geometry, is written as a STIR file and reconstructed
 * by `tomolab-cli recon --run` (run keys -> dataset -> tl_dataset_lines -> tl_recon_new_lines,
 * the path the window and Python share: python/tests/test_cross_door.py), its sensitivity
 * written by the run's sensitivity-out. The check on that path: with 3 x 3 rays the sensitivity varies <= 2 %
 * (std/mean) inside 100 mm and its odd/even plane alternation is <= 0.5 %, where the same run
 * with one ray per pair (the crystal-pair operator, Tomolab's thin-line model) alternates
 * visibly. Also: block gaps give no line (the bins' detectors decoded here from tl-sinogram.h's
 * published formula), and data that cannot take rays refuse them naming the data. */
#include "tl-test-common.h"
#include "dataset/tl-dataset.h"
#include "pet/data/tl-sinogram-arc.h"
#include "pet/tl-pet-lines.h"
#include "pet/tl-recon.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *tmpdir;
static const char *cli_path; /* tomolab-cli: the run path of the CLI (tests/meson.build) */

/* PRT-1 as STIR's Scanner.cxx lists it: 16 rings of 384 detectors, inner radius 373 mm, depth
 * of interaction 7 mm, rings 6.75 mm apart. */
#define RINGS 16
#define DETS 384
#define SPACING 6.75
#define BIN 3.1088

/* A crystal-pair sinogram (span 1: segments of ring difference 0, -1, +1; DETS / 2 views, no
 * mashing) of `tang` tangential positions, every bin 1 (the sensitivity does not read them). */
static TlSinogram *pair_sinogram(guint dets, guint rings, guint tang, const gint *rd, guint n_seg) {
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->name = g_strdup("PRT-1");
  s->n_segments = n_seg;
  s->n_axial = g_new(guint, n_seg);
  s->min_ring_difference = g_new(gint, n_seg);
  s->max_ring_difference = g_new(gint, n_seg);
  guint sinos = 0;
  for (guint i = 0; i < n_seg; i++) {
    s->min_ring_difference[i] = s->max_ring_difference[i] = rd[i];
    s->n_axial[i] = rings - (guint)abs(rd[i]);
    sinos += s->n_axial[i];
  }
  s->n_views = dets / 2, s->n_tangential = tang, s->arc_corrected = FALSE;
  s->n_rings = rings, s->n_detectors = dets;
  s->inner_radius_mm = 373.0, s->doi_mm = 7.0, s->ring_spacing_mm = SPACING, s->bin_size_mm = BIN;
  s->n_bins = (guint64)sinos * s->n_views * tang;
  s->data = g_new(float, s->n_bins);
  for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = 1;
  return s;
}

static const gint span1[] = {0, -1, 1};

/* Per central plane (4 planes from either end left out) std / mean inside 100 mm, the worst,
 * and |mean(even) - mean(odd)| / mean over those planes. */
static void stats(const TlImage *im, double *spread, double *alternation) {
  const TlImageGrid *g = &im->grid;
  double plane[64];
  g_assert_cmpuint(g->dims[2], <=, G_N_ELEMENTS(plane));
  *spread = 0;
  for (guint k = 0; k < g->dims[2]; k++) {
    double sum = 0, sq = 0;
    guint n = 0;
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double x = g->origin_mm[0] + i * g->voxel_mm[0], y = g->origin_mm[1] + j * g->voxel_mm[1];
        if (x * x + y * y > 100.0 * 100.0) continue;
        double v = im->data[i + g->dims[0] * (j + g->dims[1] * k)];
        sum += v, sq += v * v, n++;
      }
    plane[k] = sum / n;
    double sd = sqrt(MAX(sq / n - plane[k] * plane[k], 0));
    if (k >= 4 && k + 4 < g->dims[2]) *spread = MAX(*spread, sd / plane[k]);
  }
  double even = 0, odd = 0;
  guint ne = 0, no = 0;
  for (guint k = 4; k + 4 < g->dims[2]; k++) {
    if (k % 2) odd += plane[k], no++;
    else even += plane[k], ne++;
  }
  even /= ne, odd /= no;
  *alternation = fabs(even - odd) / ((even + odd) / 2);
}

/* The run through `tomolab-cli recon --run FILE` (run-file text + data, output and
 * sensitivity-out): the sensitivity image the run used, as it wrote it. */
static TlImage *run_sensitivity(const char *path, const char *run_text, const char *name) {
  GError *error = NULL;
  g_autofree char *run = g_build_filename(tmpdir, name, NULL);
  g_autofree char *out = g_strconcat(run, ".nii", NULL), *sens = g_strconcat(run, "-sens.nii", NULL);
  g_autofree char *text = g_strdup_printf("%sdata = %s\noutput = %s\nsensitivity-out = %s\n",
                                          run_text, path, out, sens);
  g_assert_true(g_file_set_contents(run, text, -1, &error));
  const char *argv[] = {cli_path, "recon", "--run", run, "-q", NULL};
  int status = 0;
  g_autofree char *err = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, &err, &status, &error));
  g_assert_no_error(error);
  if (!g_spawn_check_wait_status(status, NULL)) g_error("tomolab-cli recon --run %s: %s", run, err);
  g_test_message("%s: %.1f s", name, (g_get_monotonic_time() - t0) / 1e6);
  TlImage *im = tl_image_load(sens, &error);
  g_assert_no_error(error);
  g_remove(run), g_remove(out), g_remove(sens);
  g_autofree char *json = g_strconcat(run, ".json", NULL);
  g_remove(json);
  return im;
}

/* The done-when check through the run path: the Utah crystal pairs (192 views, 72
 * tangential positions: every pair through r < 100 mm) on STIR's usual voxels (one bin
 * transaxially, half a ring axially). */
static void test_run_sensitivity(void) {
  GError *error = NULL;
  g_autoptr(TlSinogram) s = pair_sinogram(DETS, RINGS, 72, span1, 3);
  g_autofree char *path = g_build_filename(tmpdir, "utah_pairs.hs", NULL);
  g_assert_true(tl_sinogram_save(s, path, &error));
  g_assert_no_error(error);
  const char *base = "algorithm = mlem\niterations = 1\ncache = false\n"
                     "grid = 75x75x31@3.1088,3.1088,3.375\n";
  g_autofree char *rays = g_strconcat(base, "rays-tangential = 3\nrays-axial = 3\n", NULL);
  g_autoptr(TlImage) s3 = run_sensitivity(path, rays, "rays3x3");
  double spread3, alt3, spread1, alt1;
  stats(s3, &spread3, &alt3);
  /* one ray per pair: the crystal-pair operator, as before */
  g_autoptr(TlImage) s1 = run_sensitivity(path, base, "rays1x1");
  stats(s1, &spread1, &alt1);
  g_test_message("Utah crystal pairs through the run: sensitivity std/mean inside 100 mm %.4f, "
                 "odd/even planes %.4f with 3 x 3 rays; %.4f, %.4f with one ray per pair",
                 spread3, alt3, spread1, alt1);
  g_assert_cmpfloat(spread3, <=, 0.02);
  g_assert_cmpfloat(alt3, <=, 0.005);
  g_assert_cmpfloat(alt1, >, 4 * alt3); /* the rays are used, not dropped on the way */
  g_remove(path);
  g_autofree char *data = g_build_filename(tmpdir, "utah_pairs.s", NULL);
  g_remove(data);
}

/* Block gaps (the mMR's 9th positions): a bin with a gap at either end has no line. 32
 * detectors in blocks of 4, the first of each a gap: the forward projection of a uniform image
 * is 0 exactly on the bins whose detectors (d1, d2 of tl-sinogram.h, decoded here) include a
 * gap, positive on the others. */
static void test_gaps(void) {
  GError *error = NULL;
  const gint seg0[] = {0};
  g_autoptr(TlSinogram) s = pair_sinogram(32, 2, 12, seg0, 1);
  s->block_positions = 4;
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(40, 40, 4, 10.0f, 10.0f, (float)(SPACING / 2));
  g_autoptr(TlOperator) op =
      tl_pet_lines_operator_new_sinogram(ctx, &g, "siddon", s, 2, 1, 1, NULL, &error);
  g_assert_no_error(error);
  guint64 nv = tl_image_grid_n_voxels(&g), n = s->n_bins;
  g_autofree float *ones = g_new(float, nv), *y = g_new(float, n);
  for (guint64 i = 0; i < nv; i++) ones[i] = 1;
  g_autoptr(TlArray) x = tl_array_new_float(ctx, nv, &error), dy = tl_array_new_float(ctx, n, &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(x, ones, &error) && tl_operator_forward(op, st, 0, x, dy, &error) &&
                tl_stream_finish(st, &error) && tl_array_download(dy, y, &error));
  g_assert_no_error(error);
  g_autofree guint64 *pos = tl_pet_lines_operator_order(op);
  guint64 j = 0, gaps = 0;
  for (guint v = 0; v < s->n_views; v++)
    for (guint ax = 0; ax < s->n_axial[0]; ax++)
      for (gint t = -6; t < 6; t++, j++) {
        /* d1 = (v + floor(t / 2)) mod N, d2 = (v - floor((t + 1) / 2) + N / 2) mod N */
        gint d1 = ((gint)v + (gint)floor(t / 2.0) + 64) % 32,
             d2 = ((gint)v - (gint)floor((t + 1) / 2.0) + 16 + 64) % 32;
        gboolean gap = d1 % 4 == 0 || d2 % 4 == 0;
        gaps += gap;
        if (gap) g_assert_cmpfloat(y[pos[j]], ==, 0);
        else g_assert_cmpfloat(y[pos[j]], >, 0);
      }
  g_assert_cmpuint(j, ==, n);
  g_test_message("%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bins touch a gap", gaps, n);
  g_assert_cmpuint(gaps, >, 0);
  g_assert_cmpuint(gaps, <, n);
}

/* Data that cannot take rays refuse them with a GError naming the data, never silently. */
static void test_refused(void) {
  GError *error = NULL;
  TlContext *ctx = tl_test_context();
  TlImageGrid g = tl_image_grid_centred(16, 16, 4, 12.0f, 12.0f, (float)SPACING);
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.iterations = 1;
  o.rays_tangential = 3;
  /* list mode (its own projector over crystal pairs) */
  const gint seg0[] = {0};
  g_autoptr(TlSinogram) s = pair_sinogram(64, 4, 16, seg0, 1);
  TlScanner *sc = tl_sinogram_scanner(s, &error);
  g_assert_no_error(error);
  g_autoptr(TlListmode) lm = tl_listmode_new(sc, 1);
  lm->events[0].a = 0, lm->events[0].b = 32;
  g_autoptr(TlRecon) a = tl_recon_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_null(a);
  g_assert_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "3 x 1 rays per line: not with PET list mode"));
  g_clear_error(&error);
  /* and the dataset of list mode gives no sinogram of lines */
  g_autoptr(TlDataset) ds = tl_dataset_new_take(TL_DATA_PET_LISTMODE, g_steal_pointer(&lm), NULL,
                                                &error);
  g_assert_no_error(error);
  g_assert_null(tl_dataset_lines(ds, 3, 3));
  /* a segment of several ring differences (span 3): no one line per bin */
  g_autoptr(TlSinogram) span3 = pair_sinogram(64, 4, 16, seg0, 1);
  span3->min_ring_difference[0] = -1, span3->max_ring_difference[0] = 1;
  g_assert_true(tl_sinogram_pairs_are_lines(s, NULL));
  g_assert_false(tl_sinogram_pairs_are_lines(span3, NULL)); /* the window hides its Rays row */
  g_autoptr(TlRecon) b = tl_recon_new_lines(ctx, span3, &g, &o, &error);
  g_assert_null(b);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "several ring differences"));
  g_clear_error(&error);
  /* what the lines take no more than arc-corrected data: time of flight, named */
  o.tof = TRUE;
  g_autoptr(TlRecon) c = tl_recon_new_lines(ctx, s, &g, &o, &error);
  g_assert_null(c);
  g_assert_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "time of flight: not with several rays per crystal pair"));
  g_clear_error(&error);
  /* tl_recon_new_arc keeps refusing crystal pairs */
  o.tof = FALSE;
  g_autoptr(TlRecon) d = tl_recon_new_arc(ctx, s, &g, &o, &error);
  g_assert_null(d);
  g_assert_nonnull(strstr(error->message, "not arc-corrected"));
  g_clear_error(&error);
  /* and with 1 x 1 the crystal-pair sinogram stays crystal pairs: no lines */
  g_autofree char *path = g_build_filename(tmpdir, "small.hs", NULL);
  g_assert_true(tl_sinogram_save(s, path, &error));
  g_autoptr(TlDataset) sd = tl_dataset_open(path, &error);
  g_assert_no_error(error);
  g_assert_null(tl_dataset_lines(sd, 1, 1));
  g_assert_true(tl_dataset_lines(sd, 1, 2) == sd->pair_sinogram && sd->pair_sinogram);
  g_remove(path);
  g_autofree char *data = g_build_filename(tmpdir, "small.s", NULL);
  g_remove(data);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  cli_path = argc > 1 ? argv[1] : NULL;
  g_assert_nonnull(cli_path);
  tmpdir = g_dir_make_tmp("tl-pair-rays-XXXXXX", NULL);
  g_test_add_func("/pair-rays/gaps", test_gaps);
  g_test_add_func("/pair-rays/refused", test_refused);
  g_test_add_func("/pair-rays/run-sensitivity", test_run_sensitivity);
  int r = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return r;
}
