/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The dataset layer (compute/dataset/tl-dataset.c) on the real files of ../shared/data (meson
 * runs this test in the source root): each opens with its kind and defaults, checked against
 * values found independently (the mMR's published 263 x 263 x 130 grid of half its crystal
 * pitch, STIR's own voxel data read raw here, the tooth's centre by a plain C opposed-views
 * match); and the one image loader: every image format that writes reads back equal through
 * tl_image_load, and `tomolab-cli ct-recon -t truth.mha` uses it. */
#include "tl-test-common.h"
#include "dataset/tl-dataset.h"
#include "ct/tl-ct-geometry.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define DATA "../shared/data/"
static const char *cli_path;

static void test_mmr(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlDataset) ds = tl_dataset_open(DATA "mmr/PET_ACQ_small.l.hdr.STIR", &error);
  g_assert_no_error(error);
  g_assert_cmpint(ds->kind, ==, TL_DATASET_PET_LISTMODE);
  g_assert_cmpstr(ds->format->name, ==, "mmr");
  /* the grid: the 133 x 133 x 66 of the window, voxels of the mMR's 4 mm crystal
   * width (twice the scanner's 263 x 263 x 130 fine grid, same parity), centred */
  g_assert_cmpuint(ds->grid.dims[0], ==, 133);
  g_assert_cmpuint(ds->grid.dims[1], ==, 133);
  g_assert_cmpuint(ds->grid.dims[2], ==, 66);
  TlImageGrid fine = tl_scanner_default_grid(ds->lm->scanner);
  g_assert_cmpuint(fine.dims[0], ==, 263);
  g_assert_cmpuint(fine.dims[2], ==, 130);
  for (int k = 0; k < 3; k++) {
    g_assert_cmpfloat(fabs(ds->grid.voxel_mm[k] - ds->lm->scanner->crystal_size[0]), <, 1e-5);
    g_assert_cmpfloat(fabs(ds->grid.voxel_mm[k] - 4.0), <, 1e-5);
    g_assert_cmpuint(ds->grid.dims[k] & 1, ==, fine.dims[k] & 1);
    double mid = ds->grid.origin_mm[k] + 0.5 * (ds->grid.dims[k] - 1) * ds->grid.voxel_mm[k];
    g_assert_cmpfloat(fabs(mid), <, 1e-3);
  }
  /* prompts and delayeds both present (../shared/data/README.md): randoms from delayeds */
  g_assert_cmpuint(ds->lm->n_delayed, >, 0);
  g_assert_true(ds->allows & TL_DATASET_ALLOWS_RANDOMS_DELAYEDS);
  g_assert_false(ds->allows & TL_DATASET_ALLOWS_RANDOMS_SINGLES);
  g_assert_false(ds->allows & TL_DATASET_ALLOWS_CENTRE);
  /* one subset per 5e5 prompts: this cut file holds fewer (its 254 816 words are events and
   * time tags), so one; 10 subsets of it were 2.5e4 events an update */
  g_assert_cmpuint(ds->lm->n_events, <, 500000);
  g_assert_cmpuint(ds->subsets, ==, 1);
  g_assert_cmpuint(tl_dataset_pet_subsets(4.9e5), ==, 1);
  g_assert_cmpuint(tl_dataset_pet_subsets(1e6), ==, 2);
  g_assert_cmpuint(tl_dataset_pet_subsets(3.2e6), ==, 6);
  g_assert_cmpuint(tl_dataset_pet_subsets(1e9), ==, 10);
  g_assert_cmpuint(tl_dataset_pet_subsets(NAN), ==, 1);
  g_assert_true(isnan(ds->centre));
  /* ~0.6 s of time tags every ms: the frame is the file's, not the header's 900 s */
  g_assert_cmpfloat(ds->duration_s, >, 0.3);
  g_assert_cmpfloat(ds->duration_s, <, 1.0);
  /* the list-mode file itself opens the same way */
  g_autoptr(TlDataset) l = tl_dataset_open(DATA "mmr/small_listmode_file.l", &error);
  if (l) {
    g_assert_cmpint(l->kind, ==, TL_DATASET_PET_LISTMODE);
    g_assert_true(tl_image_grid_equal(&l->grid, &ds->grid));
    g_assert_cmpuint(l->lm->n_events, ==, ds->lm->n_events);
  } else {
    g_test_message("small_listmode_file.l alone: %s", error->message);
    g_clear_error(&error);
  }
}

static void test_stir_image(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlDataset) ds = tl_dataset_open(DATA "stir-image/test_image_3.hv", &error);
  g_assert_no_error(error);
  g_assert_cmpint(ds->kind, ==, TL_DATASET_IMAGE);
  g_assert_cmpstr(ds->format->name, ==, "interfile");
  /* ../shared/data/README.md: 97 x 97 x 31 of 3.1088 x 3.1088 x 3.375 mm */
  g_assert_cmpuint(ds->grid.dims[0], ==, 97);
  g_assert_cmpuint(ds->grid.dims[1], ==, 97);
  g_assert_cmpuint(ds->grid.dims[2], ==, 31);
  g_assert_cmpfloat(fabs(ds->grid.voxel_mm[0] - 3.1088), <, 1e-4);
  g_assert_cmpfloat(fabs(ds->grid.voxel_mm[2] - 3.375), <, 1e-4);
  /* the voxels: STIR's float32 little-endian data file read raw here (orientation aside:
   * the sum and the sum of squares do not depend on it) */
  gchar *raw = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(DATA "stir-image/test_image_3.v", &raw, &n, NULL));
  g_assert_cmpuint(n, ==, 97 * 97 * 31 * 4);
  double s = 0, s2 = 0, t = 0, t2 = 0;
  for (gsize i = 0; i < n / 4; i++) {
    float v;
    memcpy(&v, raw + 4 * i, 4);
    s += v, s2 += (double)v * v;
    t += ds->image->data[i], t2 += (double)ds->image->data[i] * ds->image->data[i];
  }
  g_free(raw);
  g_assert_cmpfloat(fabs(s - t), <=, 1e-9 * fabs(s) + 1e-9);
  g_assert_cmpfloat(fabs(s2 - t2), <=, 1e-9 * s2 + 1e-9);
  g_assert_cmpfloat(s2, >, 0);
  /* the one image loader reads it the same */
  g_autoptr(TlImage) im = tl_image_load(DATA "stir-image/test_image_3.hv", &error);
  g_assert_no_error(error);
  g_assert_true(tl_image_grid_equal(&im->grid, &ds->grid));
  g_assert_cmpmem(im->data, 97 * 97 * 31 * 4, ds->image->data, 97 * 97 * 31 * 4);
}

/* The centre as the mirror of opposed views, p(theta + pi, u) = p(theta, 2c - u), written
 * here without the library's search: least mean squared difference over the overlap, every
 * 0.25 px, both detector rows, linear interpolation. */
static double opposed_centre(const TlCtData *d) {
  const TlCtGeometry *g = d->geometry;
  guint nu = g->det_u, nv = g->det_v, a = 0, b = 0;
  double best_gap = G_MAXDOUBLE;
  for (guint i = 0; i < g->n_views; i++)
    for (guint j = i + 1; j < g->n_views; j++) {
      const double *P = g->matrices + 12 * (gsize)i, *Q = g->matrices + 12 * (gsize)j;
      double ti = atan2(-P[0], P[1]), tj = atan2(-Q[0], Q[1]);
      double gap = fabs(fabs(remainder(tj - ti, 2 * G_PI)) - G_PI);
      if (gap < best_gap) best_gap = gap, a = i, b = j;
    }
  g_assert_cmpfloat(best_gap, <, 0.035); /* within 2 deg (the tooth: 1 deg) */
  double best = G_MAXDOUBLE, best_c = NAN;
  for (double c = 0.25 * nu; c <= 0.75 * nu; c += 0.25) {
    double ssd = 0;
    guint count = 0;
    for (guint v = 0; v < nv; v++) {
      const float *p = d->proj + ((gsize)a * nv + v) * nu, *q = d->proj + ((gsize)b * nv + v) * nu;
      for (guint u = 0; u < nu; u++) {
        double m = 2 * c - u;
        if (m < 0 || m > nu - 1) continue;
        guint m0 = (guint)floor(m);
        double f = m - m0, qm = m0 + 1 < nu ? (1 - f) * q[m0] + f * q[m0 + 1] : q[m0];
        ssd += (p[u] - qm) * (p[u] - qm);
        count++;
      }
    }
    if (count > nu / 2 && ssd / count < best) best = ssd / count, best_c = c;
  }
  return best_c;
}

static void test_tooth(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(TlDataset) ds = tl_dataset_open(DATA "tooth/tooth.h5", &error);
  g_assert_no_error(error);
  g_assert_cmpint(ds->kind, ==, TL_DATASET_CT);
  g_assert_cmpstr(ds->format->name, ==, "dxchange");
  g_assert_true(ds->allows & TL_DATASET_ALLOWS_CENTRE);
  g_assert_cmpuint(ds->subsets, ==, 10);
  /* before the search: the file's geometry, the middle column */
  g_assert_cmpfloat(fabs(ds->centre - 319.5), <, 1e-9);
  g_assert_true(tl_dataset_needs_centre(ds));
  double ref = opposed_centre(ds->ct);
  g_test_message("tooth: opposed views (plain C) %.2f", ref);
  TlContext *ctx = tl_test_context();
  g_assert_true(tl_dataset_find_centre(ds, ctx, &error));
  g_assert_no_error(error);
  g_test_message("tooth: centre %.3f (%u slices)", ds->centre, ds->search.evaluations);
  g_assert_true(ds->centre_found);
  g_assert_false(tl_dataset_needs_centre(ds));
  /* the 295.5 of `ct-recon --centre auto`, and the independent estimate */
  g_assert_cmpfloat(fabs(ds->centre - 295.5), <=, 0.5);
  g_assert_cmpfloat(fabs(ds->centre - ref), <=, 1.0);
  /* moved into the geometry: every door reconstructs around it */
  g_assert_cmpfloat(fabs(tl_ct_geometry_axis_u(ds->ct->geometry) - ds->centre), <, 1e-6);
  /* once: a second call searches nothing */
  guint ev = ds->search.evaluations;
  g_assert_true(tl_dataset_find_centre(ds, ctx, &error));
  g_assert_cmpuint(ds->search.evaluations, ==, ev);
  /* a user's centre: moved there; nonsense refused naming the value */
  g_assert_true(tl_dataset_set_centre(ds, 300.25, &error));
  g_assert_cmpfloat(fabs(tl_ct_geometry_axis_u(ds->ct->geometry) - 300.25), <, 1e-6);
  /* defaults recomputed after a change of the data keep it, and search no more */
  tl_dataset_update_defaults(ds);
  g_assert_cmpfloat(fabs(ds->centre - 300.25), <, 1e-6);
  g_assert_false(tl_dataset_needs_centre(ds));
  g_assert_true(ds->allows & TL_DATASET_ALLOWS_CENTRE);
  g_assert_false(tl_dataset_set_centre(ds, 900, &error));
  g_assert_nonnull(strstr(error->message, "900"));
  g_assert_nonnull(strstr(error->message, "639"));
  tl_test_context_done(ctx);
}

static void test_refused(void) {
  g_autoptr(GError) error = NULL;
  g_assert_null(tl_dataset_open(DATA "no-such-file.nii", &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, "no-such-file.nii"));
  g_clear_error(&error);
  /* a scanner description is no dataset: refused naming what it holds */
  g_autofree char *dir = g_dir_make_tmp("tl-dataset-XXXXXX", &error);
  g_autofree char *p = g_build_filename(dir, "s.txt", NULL);
  g_autoptr(TlScanner) sc = tl_scanner_new_preset("dmi", &error);
  g_assert_no_error(error);
  g_assert_true(tl_format_save(tl_format_find("scanner"), sc, p, &error));
  g_assert_null(tl_dataset_open(p, &error));
  g_assert_nonnull(strstr(error->message, "PET scanner"));
  g_remove(p);
  g_rmdir(dir);
}

/* A grid with distinct dims, voxels and origin, values with a fractional part. */
static TlImage *test_image(void) {
  TlImageGrid g = {{7, 5, 3}, {1.5f, 2.0f, 2.5f}, {-4.5f, -4.0f, -2.5f}};
  TlImage *im = tl_image_new(&g);
  for (guint i = 0; i < 7 * 5 * 3; i++) im->data[i] = 0.25f * (float)((i * 37) % 101);
  return im;
}

static void test_image_roundtrip(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("tl-dataset-XXXXXX", &error);
  g_autoptr(TlImage) im = test_image();
  double mx = 0;
  for (guint i = 0; i < 105; i++) mx = MAX(mx, im->data[i]);
  guint tried = 0;
  for (const TlFormatClass *const *f = tl_formats(); *f; f++) {
    if ((*f)->kind != TL_DATA_IMAGE || !(*f)->save) continue;
    g_auto(GStrv) ext = g_strsplit((*f)->extensions, " ", 2);
    /* DICOM: a series of one file per slice, in a folder named without an extension */
    gboolean dicom = g_str_has_prefix((*f)->name, "dicom");
    g_autofree char *name = g_strdup_printf("im-%s%s", (*f)->name, dicom ? "" : ext[0]);
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_assert_true(tl_format_save(*f, im, p, &error));
    g_assert_no_error(error);
    g_autoptr(TlImage) back = tl_image_load(p, &error);
    g_assert_no_error(error);
    g_assert_true(tl_image_grid_equal(&back->grid, &im->grid));
    /* DICOM stores 16-bit integers with a rescale slope: max / 32767 is its step */
    double worst = 0;
    for (guint i = 0; i < 105; i++) worst = MAX(worst, fabs(back->data[i] - im->data[i]));
    g_test_message("%s (%s): largest difference %g", (*f)->name, name, worst);
    g_assert_cmpfloat(worst, <=, dicom ? mx / 32767.0 : 0.0);
    /* and tl_image_save writes the format its extension names (the first of each
     * extension: DICOM's .dcm is Secondary Capture) */
    tried++;
  }
  g_assert_cmpuint(tried, >=, 6); /* nifti, raw, interfile, metaimage, 3 x DICOM */
  /* tl_image_save by extension, loaded back through the table */
  const char *exts[] = {".nii", ".nii.gz", ".raw", ".hv", ".mha", ".mhd"};
  for (guint e = 0; e < G_N_ELEMENTS(exts); e++) {
    g_autofree char *p = g_strdup_printf("%s/save%s", dir, exts[e]);
    g_assert_true(tl_image_save(im, p, &error));
    g_assert_no_error(error);
    g_autoptr(TlImage) back = tl_format_load_kind(p, TL_DATA_IMAGE, &error);
    g_assert_no_error(error);
    g_assert_cmpmem(back->data, 105 * 4, im->data, 105 * 4);
  }
  g_assert_false(tl_image_save(im, "x.txt", &error));
  g_assert_nonnull(strstr(error->message, "x.txt"));
  g_clear_error(&error);
  /* a non-image is refused naming the file */
  g_autofree char *s = g_build_filename(dir, "scan.tlm", NULL);
  g_assert_true(g_file_set_contents(s, "not an image", -1, NULL));
  g_assert_null(tl_image_load(s, &error));
  g_assert_nonnull(strstr(error->message, "scan.tlm"));
  tl_test_remove_tree(dir);
}

/* `tomolab-cli ct-recon -t truth.mha`: the truth goes through the one image loader; the FDK
 * RMSE the CLI prints is the one computed here from its output and the truth. */
static void test_cli_truth_mha(void) {
  if (!cli_path) {
    g_test_skip("no tomolab-cli path given");
    return;
  }
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("tl-dataset-XXXXXX", &error);
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, 24, 16, 4, 1.0, 1.0);
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  g_autoptr(TlCtData) d = tl_ct_data_new(g);
  for (guint64 i = 0; i < tl_ct_data_n_values(d); i++) {
    guint u = (guint)(i % 16);
    d->proj[i] = u >= 4 && u < 12 ? 2.0f : 0.0f; /* a cylinder-ish profile */
  }
  TlImageGrid grid = tl_image_grid_centred(12, 12, 4, 1, 1, 1);
  g_autoptr(TlImage) truth = tl_image_new(&grid);
  for (guint i = 0; i < 12 * 12 * 4; i++) truth->data[i] = (float)(i % 7) * 0.01f;
  g_autofree char *scan = g_build_filename(dir, "scan.tlct", NULL);
  g_autofree char *tp = g_build_filename(dir, "truth.mha", NULL);
  g_autofree char *out = g_build_filename(dir, "out.nii", NULL);
  g_assert_true(tl_ct_data_save(d, scan, &error));
  g_assert_true(tl_image_save(truth, tp, &error));
  g_assert_no_error(error);
  const char *argv[] = {cli_path, "ct-recon", scan, "-t", tp, "-o", out, NULL};
  g_autofree char *err = NULL;
  int status = 0;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, &err, &status, &error));
  g_test_message("ct-recon: %s", err);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  const char *r = strstr(err, "FDK RMSE ");
  g_assert_nonnull(r);
  double printed = g_ascii_strtod(r + 9, NULL);
  g_autoptr(TlImage) img = tl_image_load(out, &error);
  g_assert_no_error(error);
  double s = 0;
  for (guint i = 0; i < 12 * 12 * 4; i++)
    s += ((double)img->data[i] - truth->data[i]) * ((double)img->data[i] - truth->data[i]);
  double mine = sqrt(s / (12 * 12 * 4));
  g_assert_cmpfloat(mine, >, 0);
  g_assert_cmpfloat(fabs(printed - mine), <=, 1e-5 * mine);
  for (const char *p[] = {scan, tp, out, NULL}, **q = p; *q; q++) g_remove(*q);
  g_autofree char *raw = g_build_filename(dir, "truth.raw", NULL);
  g_remove(raw);
  g_rmdir(dir);
}

/* `tomolab-cli info --defaults` prints the dataset's defaults (the door's own code is gone). */
static void test_cli_info_defaults(void) {
  if (!cli_path) {
    g_test_skip("no tomolab-cli path given");
    return;
  }
  const char *argv[] = {cli_path, "info", "--defaults", DATA "mmr/PET_ACQ_small.l.hdr.STIR",
                        DATA "tooth/tooth.h5", NULL};
  g_autofree char *out = NULL;
  int status = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                             &out, NULL, &status, &error));
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  g_assert_nonnull(strstr(out, "default grid: 133 x 133 x 66 voxels of 4 x 4 x 4 mm"));
  g_assert_nonnull(strstr(out, "allows: randoms from delayeds"));
  g_assert_nonnull(strstr(out, "centre of rotation: 319.500 px (the middle column until searched)"));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  if (argc > 1) cli_path = argv[1];
  g_test_add_func("/dataset/mmr", test_mmr);
  g_test_add_func("/dataset/stir-image", test_stir_image);
  g_test_add_func("/dataset/tooth-centre", test_tooth);
  g_test_add_func("/dataset/refused", test_refused);
  g_test_add_func("/dataset/image-roundtrip", test_image_roundtrip);
  g_test_add_func("/dataset/ct-recon-truth-mha", test_cli_truth_mha);
  g_test_add_func("/dataset/cli-info-defaults", test_cli_info_defaults);
  return g_test_run();
}
