/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Image grids, NIfTI-1 (checked against nifticlib's own matrices) and the raw fallback. */
#include "tl-test-common.h"
#include "image/tl-image.h"
#include <glib/gstdio.h>
#include <nifti1_io.h>
#include <string.h>

static char *tmpdir;

static char *tmp_path(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static TlImage *test_image(void) {
  TlImageGrid g = {{7, 5, 3}, {1.5f, 2.0f, 2.5f}, {-10.0f, 3.0f, 7.25f}};
  TlImage *im = tl_image_new(&g);
  for (guint i = 0; i < 7 * 5 * 3; i++) im->data[i] = (float)(i * 0.37 - 4.0);
  return im;
}

static void assert_same_image(const TlImage *a, const TlImage *b) {
  g_assert_true(tl_image_grid_equal(&a->grid, &b->grid));
  g_assert_true(memcmp(a->data, b->data, sizeof(float) * tl_image_grid_n_voxels(&a->grid)) == 0);
}

/* The affine another reader computes (nifticlib's qto_xyz and sto_xyz from the header)
 * must put voxel (i,j,k) at origin + (i*vx, j*vy, k*vz). */
static void check_affine(const char *path, const TlImageGrid *g) {
  nifti_image *nim = nifti_image_read(path, 0);
  g_assert_nonnull(nim);
  g_assert_cmpint(nim->qform_code, ==, NIFTI_XFORM_SCANNER_ANAT);
  g_assert_cmpint(nim->sform_code, ==, NIFTI_XFORM_SCANNER_ANAT);
  g_assert_cmpint(nim->xyz_units, ==, NIFTI_UNITS_MM);
  const mat44 *ms[2] = {&nim->qto_xyz, &nim->sto_xyz};
  for (int w = 0; w < 2; w++)
    for (int c = 0; c < 8; c++) {
      double ijk[3] = {(c & 1) ? g->dims[0] - 1 : 0, (c & 2) ? g->dims[1] - 1 : 0,
                       (c & 4) ? g->dims[2] - 1 : 0};
      for (int r = 0; r < 3; r++) {
        const float *row = ms[w]->m[r];
        double mm = row[0] * ijk[0] + row[1] * ijk[1] + row[2] * ijk[2] + row[3];
        g_assert_cmpfloat_with_epsilon(mm, g->origin_mm[r] + ijk[r] * g->voxel_mm[r], 1e-4);
      }
    }
  nifti_image_free(nim);
}

static void test_nifti_roundtrip(void) {
  g_autoptr(TlImage) im = test_image();
  const char *names[] = {"a.nii", "a.nii.gz"};
  for (int i = 0; i < 2; i++) {
    GError *error = NULL;
    g_autofree char *path = tmp_path(names[i]);
    g_assert_true(tl_image_save(im, path, &error));
    g_assert_no_error(error);
    check_affine(path, &im->grid);
    g_autoptr(TlImage) back = tl_image_load(path, &error);
    g_assert_no_error(error);
    assert_same_image(im, back);
    /* written over: still atomic, no temp file left */
    g_assert_true(tl_image_save(im, path, &error));
    g_remove(path);
  }
  g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
  g_assert_null(g_dir_read_name(d));
}

/* A foreign file written with nifticlib: int16, scaled, with the given sform. */
static char *write_foreign(const char *name, int nt, const float m[3][4], int code) {
  int dims[8] = {nt > 1 ? 4 : 3, 4, 3, 2, nt, 1, 1, 1};
  nifti_image *nim = nifti_make_new_nim(dims, DT_INT16, 1);
  gint16 *v = nim->data;
  for (int i = 0; i < 4 * 3 * 2 * nt; i++) v[i] = (gint16)(i % 24 + 100 * (i / 24));
  nim->scl_slope = 0.5f;
  nim->scl_inter = 1.0f;
  nim->qform_code = 0;
  nim->sform_code = code;
  memset(&nim->sto_xyz, 0, sizeof nim->sto_xyz);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) nim->sto_xyz.m[r][c] = m[r][c];
  nim->sto_xyz.m[3][3] = 1;
  char *path = tmp_path(name);
  g_assert_cmpint(nifti_set_filenames(nim, path, 0, 1), ==, 0);
  nifti_image_write(nim);
  nifti_image_free(nim);
  return path;
}

static float raw_value(int i, int j, int k) { return 0.5f * (i + 4 * j + 12 * k) + 1.0f; }

static void test_nifti_foreign(void) {
  GError *error = NULL;
  /* x runs backwards: voxel i at x = 10 - 2 i; y, z forward */
  const float flip[3][4] = {{-2, 0, 0, 10}, {0, 1, 0, -1}, {0, 0, 3, 5}};
  g_autofree char *p1 = write_foreign("flip.nii", 1, flip, NIFTI_XFORM_SCANNER_ANAT);
  g_autoptr(TlImage) a = tl_image_load(p1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->grid.dims[0], ==, 4);
  g_assert_cmpfloat(a->grid.voxel_mm[0], ==, 2.0f);
  g_assert_cmpfloat(a->grid.origin_mm[0], ==, 4.0f);
  g_assert_cmpfloat(a->grid.origin_mm[2], ==, 5.0f);
  for (int k = 0; k < 2; k++)
    for (int j = 0; j < 3; j++)
      for (int x = 0; x < 4; x++) g_assert_cmpfloat(a->data[x + 4 * (j + 3 * k)], ==, raw_value(3 - x, j, k));
  /* axes swapped: voxel i runs along y, j along x */
  const float swap[3][4] = {{0, 1.5f, 0, 0}, {2, 0, 0, 0}, {0, 0, 1, 0}};
  g_autofree char *p2 = write_foreign("swap.nii", 1, swap, NIFTI_XFORM_ALIGNED_ANAT);
  g_autoptr(TlImage) b = tl_image_load(p2, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(b->grid.dims[0], ==, 3);
  g_assert_cmpuint(b->grid.dims[1], ==, 4);
  g_assert_cmpfloat(b->grid.voxel_mm[0], ==, 1.5f);
  g_assert_cmpfloat(b->grid.voxel_mm[1], ==, 2.0f);
  for (int k = 0; k < 2; k++)
    for (int y = 0; y < 4; y++)
      for (int x = 0; x < 3; x++) g_assert_cmpfloat(b->data[x + 3 * (y + 4 * k)], ==, raw_value(y, x, k));
  /* oblique: rejected, naming the problem */
  const float obl[3][4] = {{1.8f, 0.5f, 0, 0}, {-0.5f, 1.8f, 0, 0}, {0, 0, 1, 0}};
  g_autofree char *p3 = write_foreign("oblique.nii", 1, obl, NIFTI_XFORM_SCANNER_ANAT);
  g_autoptr(TlImage) c = tl_image_load(p3, &error);
  g_assert_null(c);
  g_assert_error(error, TL_ERROR, TL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "oblique"));
  g_clear_error(&error);
  /* 4-D with two frames: rejected; with one frame it would be a volume */
  g_autofree char *p4 = write_foreign("4d.nii", 2, flip, NIFTI_XFORM_SCANNER_ANAT);
  g_autoptr(TlImage) d = tl_image_load(p4, &error);
  g_assert_null(d);
  g_assert_nonnull(strstr(error->message, "4-D"));
  g_clear_error(&error);
  /* not NIfTI at all */
  g_autofree char *p5 = tmp_path("junk.nii");
  g_assert_true(g_file_set_contents(p5, "not an image", -1, NULL));
  g_autoptr(TlImage) f = tl_image_load(p5, &error);
  g_assert_null(f);
  g_assert_nonnull(strstr(error->message, "junk.nii"));
  g_clear_error(&error);
  const char *all[] = {p1, p2, p3, p4, p5};
  for (gsize i = 0; i < G_N_ELEMENTS(all); i++) g_remove(all[i]);
}

static void test_raw(void) {
  GError *error = NULL;
  g_autoptr(TlImage) im = test_image();
  g_autofree char *path = tmp_path("b.raw");
  g_autofree char *sidecar = tmp_path("b.raw.txt");
  g_assert_true(tl_image_save(im, path, &error));
  g_assert_no_error(error);
  g_assert_true(g_file_test(sidecar, G_FILE_TEST_IS_REGULAR));
  g_autoptr(TlImage) back = tl_image_load(path, &error);
  g_assert_no_error(error);
  assert_same_image(im, back);
  /* a truncated data file and a missing sidecar are named */
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  g_assert_true(g_file_set_contents(path, bytes, len - 4, NULL));
  g_autoptr(TlImage) t = tl_image_load(path, &error);
  g_assert_null(t);
  g_assert_nonnull(strstr(error->message, "truncated"));
  g_clear_error(&error);
  g_remove(sidecar);
  g_autoptr(TlImage) u = tl_image_load(path, &error);
  g_assert_null(u);
  g_assert_nonnull(strstr(error->message, "sidecar"));
  g_clear_error(&error);
  g_remove(path);
  g_autoptr(TlImage) v = tl_image_load("x.png", &error);
  g_assert_null(v);
  g_assert_nonnull(strstr(error->message, "x.png"));
  g_clear_error(&error);
}

static void test_grid(void) {
  GError *error = NULL;
  TlImageGrid g = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  g_assert_cmpfloat_with_epsilon(g.origin_mm[0], -107 * 2.78, 1e-3);
  g_assert_cmpuint(tl_image_grid_n_voxels(&g), ==, 215ull * 215 * 71);
  g_assert_true(tl_image_grid_validate(&g, &error));
  g_autofree char *k1 = tl_image_grid_key(&g);
  TlImageGrid h = g;
  h.voxel_mm[2] = 2.0f;
  g_autofree char *k2 = tl_image_grid_key(&h);
  g_assert_cmpstr(k1, !=, k2);
  TlImageGrid z = tl_image_grid_centred(10, 0, 10, 1, 1, 1);
  g_assert_false(tl_image_grid_validate(&z, &error));
  g_assert_nonnull(strstr(error->message, "along y is 0"));
  g_clear_error(&error);
  g_autoptr(TlImage) im = tl_image_new(&z);
  g_autofree char *path = tmp_path("zero.nii");
  g_assert_false(tl_image_save(im, path, &error));
  g_assert_nonnull(strstr(error->message, "along y is 0"));
  g_clear_error(&error);
  TlImageGrid n = tl_image_grid_centred(2, 2, 2, 1, -1, 1);
  g_assert_false(tl_image_grid_validate(&n, &error));
  g_assert_nonnull(strstr(error->message, "voxel size along y"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  tmpdir = g_dir_make_tmp("tl-pet-image-XXXXXX", NULL);
  g_test_add_func("/pet/image/nifti-roundtrip", test_nifti_roundtrip);
  g_test_add_func("/pet/image/nifti-foreign", test_nifti_foreign);
  g_test_add_func("/pet/image/raw", test_raw);
  g_test_add_func("/pet/image/grid", test_grid);
  int rc = g_test_run();
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return rc;
}
