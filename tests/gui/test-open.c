/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Opening files from outside the window: `tomolab FILE` (G_APPLICATION_HANDLES_OPEN, also a
 * file manager's "Open with") and tl_window_open_file before the device is ready. A corrupt
 * file shows a readable error and the previous dataset stays. The tomolab binary's path is
 * the first argument (tests/gui/meson.build). */
#include "tl-gui-test.h"
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include "image/tl-image.h"
#include "pet/data/tl-sinogram.h"
#include "tl-window-private.h"

static const char *tomolab_path;
static char *tmpdir, *good, *corrupt;

static void write_files(void) {
  tmpdir = g_dir_make_tmp("tl-open-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  TlImageGrid g = tl_image_grid_centred(8, 8, 4, 2, 2, 2);
  g_autoptr(TlImage) im = tl_image_new(&g);
  for (guint i = 0; i < 256; i++) im->data[i] = (float)(i % 7);
  good = g_build_filename(tmpdir, "good.nii", NULL);
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_image_save(im, good, &e));
  /* random high bytes: once put raw into the message, which GTK then refused to show */
  corrupt = g_build_filename(tmpdir, "corrupt.tlm", NULL);
  guint8 junk[200];
  for (gsize i = 0; i < sizeof junk; i++) junk[i] = (guint8)(0x80 + (i * 37) % 128);
  g_assert_true(g_file_set_contents(corrupt, (const char *)junk, sizeof junk, NULL));
}

static gboolean not_busy(TlWindow *w, gpointer d) {
  return tl_window_get_state(w) != TL_WINDOW_LOADING && !tl_window_is_busy(w) &&
         (tl_window_get_dataset_name(w) || tl_window_get_last_error(w));
}

/* Asked for while the device is still opening: opened once it is. */
static void test_open_before_ready(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_LOADING);
  tl_window_open_file(win, good);
  g_assert_true(tl_gui_wait_for(win, not_busy, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_autofree char *name = g_strdup(tl_window_get_dataset_name(win));
  g_assert_nonnull(strstr(name, "good.nii"));
  /* the side panel says what was opened: the format found by content */
  const char *format = tl_side_panel_get_dataset_format(tl_window_get_side_panel(win));
  g_assert_true(g_str_has_prefix(format, "nifti:"));

  /* a corrupt file: a readable one-line error naming it, the dataset unchanged */
  tl_window_open_file(win, corrupt);
  if (tl_window_get_replace_dialog(win))
    tl_gui_activate(win, "confirm-replace", g_variant_new_boolean(TRUE));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  const char *shown = tl_window_get_last_error(win);
  g_assert_nonnull(shown);
  g_assert_true(g_utf8_validate(shown, -1, NULL));
  g_assert_nonnull(strstr(shown, "corrupt.tlm"));
  g_assert_nonnull(strstr(shown, "not a Tomolab list-mode file"));
  g_assert_null(strchr(shown, '\n'));
  g_assert_cmpstr(tl_window_get_dataset_name(win), ==, name);
  tl_gui_destroy_window(win);
}

/* The binary itself: `tomolab --screenshot PNG FILE` opens FILE (it said "This application
 * can not open files") and fails with the file's error when it cannot be read. */
static void run_tomolab(const char *file, const char *png, int *code, char **err) {
  const char *argv[] = {tomolab_path, "--screenshot", png, file, NULL};
  int status = 0;
  g_autoptr(GError) e = NULL;
  /* a window that never settles ends the run with its reason, well inside the test's time */
  g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "TOMOLAB_SCREENSHOT_TIMEOUT", "240", TRUE);
  g_spawn_sync(tmpdir, (char **)argv, env, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, err,
               &status, &e);
  g_assert_no_error(e);
  g_assert_true(WIFEXITED(status));
  *code = WEXITSTATUS(status);
}

static void test_command_line(void) {
  if (!tomolab_path) {
    g_test_skip("no tomolab binary given");
    return;
  }
  int code;
  g_autofree char *err = NULL, *err2 = NULL;
  g_autofree char *png = g_build_filename(tmpdir, "good.png", NULL);
  run_tomolab(good, png, &code, &err);
  if (code != 0) g_error("tomolab %s: exit %d: %s", good, code, err);
  g_assert_null(strstr(err, "can not open files"));
  g_assert_true(g_file_test(png, G_FILE_TEST_EXISTS));
  g_autofree char *png2 = g_build_filename(tmpdir, "corrupt.png", NULL);
  run_tomolab(corrupt, png2, &code, &err2);
  g_assert_cmpint(code, ==, 1);
  g_assert_nonnull(strstr(err2, "corrupt.tlm"));
  g_assert_true(g_utf8_validate(err2, -1, NULL));
}

/* --set keys that are wrong or need another: exit 1 with the reason, before any window. */
static void test_set_keys(void) {
  if (!tomolab_path) {
    g_test_skip("no tomolab binary given");
    return;
  }
  struct {
    const char *set[2], *want;
  } cases[] = {
      {{"scatter-rounds=2"}, "needs --set scatter=sss"},
      {{"scatter=off", "scatter-rounds=2"}, "needs --set scatter=sss"},
      {{"scatter-restart=1"}, "--set scatter-restart needs --set scatter=sss"},
      {{"scatter=sss", "scatter-restart=maybe"}, "--set scatter-restart=maybe: unknown key"},
      {{"isotope=F18"}, "need --set calibration=F"},
      {{"calibration=1", "isotope=Xe999"}, "--set isotope=Xe999: unknown key or bad value"},
      {{"calibration=-1"}, "--set calibration=-1: unknown key or bad value"},
      {{"calibration=2", "duration=0"}, "--set duration=0: unknown key or bad value"},
      {{"randoms="}, "--set randoms=: unknown key or bad value"},
      {{"scatter-rounds=101", "scatter=sss"}, "--set scatter-rounds=101: unknown key or bad value"},
      {{"tof=2"}, "--set tof=2: unknown key or bad value"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *argv[8] = {tomolab_path};
    int n = 1;
    for (int k = 0; k < 2 && cases[i].set[k]; k++) argv[n++] = "--set", argv[n++] = cases[i].set[k];
    int status = 0;
    g_autofree char *err = NULL;
    g_autoptr(GError) e = NULL;
    g_spawn_sync(tmpdir, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                 &status, &e);
    g_assert_no_error(e);
    g_assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 1 || !strstr(err, cases[i].want))
      g_error("--set %s: exit %d, '%s' (expected 1 and '%s')", cases[i].set[0], WEXITSTATUS(status),
              err, cases[i].want);
  }
}

/* Arc-corrected STIR projection data open in the window (issue 26): no error, the run panel
 * offers rays per line for them, and the run the window makes carries the rays set there. The
 * same for a crystal-pair sinogram (span 1, 32 views of 64 detectors: its bins can be lines). */
static void open_sinogram(gboolean arc) {
  TlSinogram *s = g_new0(TlSinogram, 1);
  s->name = g_strdup("small arc");
  s->n_segments = 1;
  s->n_axial = g_new(guint, 1);
  s->min_ring_difference = g_new0(gint, 1);
  s->max_ring_difference = g_new0(gint, 1);
  s->n_axial[0] = 4;
  s->n_views = 32, s->n_tangential = 16, s->arc_corrected = arc;
  s->n_rings = 4, s->n_detectors = 64;
  s->inner_radius_mm = 100, s->ring_spacing_mm = 4, s->bin_size_mm = 4;
  s->n_bins = 4 * 32 * 16;
  s->data = g_new(float, s->n_bins);
  for (guint64 i = 0; i < s->n_bins; i++) s->data[i] = (float)(1 + i % 5);
  g_autofree char *hs = g_build_filename(tmpdir, arc ? "arc.hs" : "pairs.hs", NULL);
  g_autoptr(GError) e = NULL;
  g_assert_true(tl_sinogram_save(s, hs, &e));
  g_assert_no_error(e);
  tl_sinogram_free(s);
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_present(GTK_WINDOW(win));
  tl_window_open_file(win, hs);
  g_assert_true(tl_gui_wait_for(win, not_busy, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_nonnull(strstr(tl_window_get_dataset_name(win), arc ? "arc.hs" : "pairs.hs"));
  GObject *row = gtk_widget_get_template_child(GTK_WIDGET(tl_window_get_side_panel(win)),
                                               TL_TYPE_SIDE_PANEL, "rays_row");
  g_assert_true(gtk_widget_get_visible(GTK_WIDGET(row)));
  tl_side_panel_set_rays(tl_window_get_side_panel(win), 3, 2);
  g_autoptr(TlRunSpec) run = tl_window_get_run(win, NULL, &e);
  g_assert_no_error(e);
  g_assert_cmpuint(run->rays_tangential, ==, 3); /* the row is shown: its values are the run's */
  g_assert_cmpuint(run->rays_axial, ==, 2);
  g_assert_nonnull(strstr(run->data, arc ? "arc.hs" : "pairs.hs"));
  tl_gui_destroy_window(win);
  g_remove(hs);
  g_autofree char *sp = g_build_filename(tmpdir, arc ? "arc.s" : "pairs.s", NULL);
  g_remove(sp);
}

static void test_open_arc(void) { open_sinogram(TRUE); }
static void test_open_pairs(void) { open_sinogram(FALSE); }

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  tomolab_path = argc > 1 ? argv[1] : NULL;
  write_files();
  g_test_add_func("/gui/open/before-ready", test_open_before_ready);
  g_test_add_func("/gui/open/command-line", test_command_line);
  g_test_add_func("/gui/open/set-keys", test_set_keys);
  g_test_add_func("/gui/open/arc-corrected", test_open_arc);
  g_test_add_func("/gui/open/crystal-pairs", test_open_pairs);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  return rc;
}
