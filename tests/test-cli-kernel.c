/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `tomolab-cli recon --kernel NAME=FILE` (issue 32): an edit of a kernel the run calls changes
 * the image, an edit of one it never calls is refused before the run with the kernels it runs
 * instead. The runs: MLEM, one iteration, on the examples' 768-crystal ring
 * (examples/python/common.py) with Siddon (the one-kernel EM pass, pet_em) and Joseph (no TOF:
 * on a CPU device the plane path, pet_em_rec + pet_back_slabs + pet_pairs; elsewhere pet_em).
 * An edit
 * that doubles the EM ratio a m / y doubles the image after one MLEM iteration from the same
 * start (x1 = x0 / s * A^T (2 m / A x0)): the test's independent expectation. */
#include "tl-context.h"
#include "tl-kernels.h"
#include "image/tl-image.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

static const char *cli; /* argv[1]: the tomolab-cli under test */
static char *dir;       /* the scan and the kernels, made once */

static const char scanner_text[] = "name = example-ring\n"
                                   "kind = ring\n"
                                   "rings = 8\n"
                                   "sides = 12\n"
                                   "crystals_per_side = 8\n"
                                   "crystal_pitch_mm = 4\n"
                                   "radius_mm = 70\n"
                                   "ring_pitch_mm = 4\n"
                                   "crystal_size_mm = 4 4 10\n";

static int run_cli(const char *const *args, char **err) {
  GError *error = NULL;
  int status = 0;
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)cli);
  for (guint i = 0; args[i]; i++) g_ptr_array_add(argv, (char *)args[i]);
  g_ptr_array_add(argv, NULL);
  g_assert_true(g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                             NULL, NULL, err, &status, &error));
  g_assert_no_error(error);
  g_assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* The built-in kernel `name` with `from` replaced by `to` (exactly once), written to NAME.comp
 * in the test's folder; returns the "NAME=FILE" argument. */
static char *edited_kernel(const char *name, const char *from, const char *to) {
  GError *error = NULL;
  g_autofree char *src = tl_kernels_source(name, &error);
  g_assert_no_error(error);
  const char *at = strstr(src, from);
  g_assert_nonnull(at);
  g_assert_null(strstr(at + 1, from));
  g_autofree char *text = g_strdup_printf("%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
  g_autofree char *file = g_strdup_printf("%s/%s.comp", dir, name);
  g_assert_true(g_file_set_contents(file, text, -1, &error));
  g_assert_no_error(error);
  return g_strdup_printf("%s=%s", name, file);
}

static TlImage *recon(const char *projector, const char *kernel, const char *out, int expect,
                      char **err) {
  g_autofree char *path = g_build_filename(dir, out, NULL);
  const char *args[] = {"recon", "scan.tlm", "-o", path, "-g", "16x16x8@4", "--iterations", "1",
                        "--projector", projector, kernel ? "--kernel" : NULL, kernel, NULL};
  g_assert_cmpint(run_cli(args, err), ==, expect);
  if (expect != 0) return NULL;
  GError *error = NULL;
  TlImage *img = tl_image_load(path, &error);
  g_assert_no_error(error);
  return img;
}

/* max |b - 2 a| / max |a| */
static double doubled(const TlImage *a, const TlImage *b) {
  guint64 n = tl_image_grid_n_voxels(&a->grid);
  double d = 0, m = 0;
  for (guint64 i = 0; i < n; i++) {
    d = MAX(d, fabs(b->data[i] - 2.0 * a->data[i]));
    m = MAX(m, fabs(a->data[i]));
  }
  g_assert_cmpfloat(m, >, 0);
  return d / m;
}

static void check_projector(const char *projector, const char *edit) {
  g_autofree char *err = NULL, *err2 = NULL, *err3 = NULL, *err4 = NULL;
  g_autoptr(TlImage) a = recon(projector, NULL, "a.nii", 0, &err);
  /* the EM ratio a m / y, doubled in the kernel the run calls */
  g_autofree char *k = g_str_equal(edit, "pet_em")
                           ? edited_kernel("pet_em", "a * l.m / y, pc.dst", "2.0 * a * l.m / y, pc.dst")
                           : edited_kernel("pet_em_rec", "rec[6] = a * l.m / y;",
                                           "rec[6] = 2.0 * a * l.m / y;");
  g_autoptr(TlImage) b = recon(projector, k, "b.nii", 0, &err2);
  double e = doubled(a, b);
  g_test_message("%s, %s edited: the image doubled to %.2g", projector, edit, e);
  g_assert_cmpfloat(e, <=, 1e-5);
  /* pet_back: never called by an MLEM run (its EM pass back projects) */
  g_autofree char *back = edited_kernel("pet_back", "void main() {", "void main() {\n");
  recon(projector, back, "c.nii", 1, &err3);
  g_test_message("%s", err3);
  g_assert_nonnull(strstr(err3, "pet_back is not called by this run"));
  g_assert_nonnull(strstr(err3, edit));
  g_autofree char *c = g_build_filename(dir, "c.nii", NULL);
  g_assert_false(g_file_test(c, G_FILE_TEST_EXISTS));
  /* an unknown name: the compile step names it, as before */
  recon(projector, "no_such_kernel=x.comp", "d.nii", 1, &err4);
}

/* Siddon: the one-kernel EM pass on every device */
static void test_siddon(void) { check_projector("siddon", "pet_em"); }

/* Joseph: the plane path's first kernel on a CPU device; pet_em elsewhere */
static void test_joseph(void) {
  GError *error = NULL;
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  g_assert_no_error(error);
  gboolean cpu = tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  g_clear_pointer(&ctx, tl_context_free);
  check_projector("joseph", cpu ? "pet_em_rec" : "pet_em");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  if (argc < 2) g_error("usage: test-cli-kernel [--tap] TOMOLAB-CLI");
  cli = argv[1];
  GError *error = NULL;
  dir = g_dir_make_tmp("tl-cli-kernel-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *sc = g_build_filename(dir, "ring.txt", NULL);
  g_assert_true(g_file_set_contents(sc, scanner_text, -1, &error));
  g_autofree char *err = NULL;
  g_assert_cmpint(run_cli((const char *[]){"simulate", "-s", "ring.txt", "-n", "20000", "-g",
                                           "16x16x8@4", "-o", "scan.tlm", "-q", NULL},
                          &err),
                  ==, 0);
  g_test_add_func("/cli-kernel/siddon", test_siddon);
  g_test_add_func("/cli-kernel/joseph", test_joseph);
  int rc = g_test_run();
  const char *files[] = {"ring.txt", "scan.tlm", "a.nii", "b.nii", "pet_em.comp",
                         "pet_em_rec.comp", "pet_back.comp"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *f = g_build_filename(dir, files[i], NULL);
    g_remove(f);
  }
  g_rmdir(dir);
  g_free(dir);
  return rc;
}
