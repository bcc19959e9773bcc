/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The run panel's sensitivity rows (issue 26 item 6: the run keys `sensitivity` and
 * `sensitivity-out`, which run files, the CLI and Python took and the window had no row for).
 * A list-mode file is opened in the window, a sensitivity image chosen for it through the
 * row's action (what its file chooser calls) and a file to write the run's sensitivity to; the
 * window's run then carries both keys, and two MLEM iterations give the same bits as
 * `tomolab-cli recon --sensitivity` with the same file - not the image of the computed
 * sensitivity, so a row the job ignored would fail. The image written is the one given. A
 * screenshot of the window with the rows in view goes to $TL_SHOT_DIR when set (to look at).
 * Arguments: tomolab-cli's path (tests/gui/meson.build). */
#include "tl-gui-test.h"
#include "tl-side-panel.h"
#include "tl-screenshot.h"
#include "tl-window-private.h"
#include "image/tl-phantom.h"
#include "pet/simulate/tl-simulate.h"
#include <string.h>

static const char *cli_path;
static char *tmpdir, *scan_path, *sens_path;
static TlImageGrid grid;

/* A 4-ring scanner of 12 sides x 8 crystals (radius 70 mm) and 2e4 events of a cylinder; the
 * sensitivity file: 1 on one half of the grid (x < 0), 2 on the other - no scanner's, so the
 * image it gives is not the computed sensitivity's. */
static void make_data(void) {
  GError *error = NULL;
  TlScannerLayout l = {0};
  l.kind = TL_SCANNER_RING;
  l.n_rings = 4, l.n_sides = 12, l.crystals_per_side = 8, l.module_rings = 4;
  l.radius_mm = 70, l.crystal_pitch_mm = 4, l.ring_pitch_mm = 4;
  g_autoptr(TlScanner) sc = tl_scanner_new_from_layout("sens-ring", &l, NULL, &error);
  g_assert_no_error(error);
  grid = tl_dataset_pet_grid(sc); /* the window's and the CLI's grid for the file */
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  po.radius_mm = 35;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("cylinder", &po, &grid, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &grid, 0, &act, &mu, &error));
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.seed = 5;
  sp.events = 20000;
  sp.n_threads = 2;
  g_autoptr(TlListmode) lm = tl_simulate(sc, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  scan_path = g_build_filename(tmpdir, "scan.tlm", NULL);
  g_assert_true(tl_listmode_save(lm, scan_path, &error));
  g_autoptr(TlImage) s = tl_image_new(&grid);
  for (guint k = 0; k < grid.dims[2]; k++)
    for (guint j = 0; j < grid.dims[1]; j++)
      for (guint i = 0; i < grid.dims[0]; i++)
        s->data[i + grid.dims[0] * (j + grid.dims[1] * k)] = 2 * i < grid.dims[0] ? 1.0f : 2.0f;
  sens_path = g_build_filename(tmpdir, "sens.nii", NULL);
  g_assert_true(tl_image_save(s, sens_path, &error));
  g_assert_no_error(error);
}

/* tomolab-cli recon of the scan, MLEM 2 iterations, `extra` options; the image. */
static TlImage *cli_recon(const char *out, const char *extra1, const char *extra2) {
  const char *argv[] = {cli_path, "recon", scan_path, "--algo", "mlem", "--iterations", "2",
                        "-o", out, "-q", extra1, extra2, NULL};
  int status = 0;
  g_autofree char *err = NULL;
  GError *error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, &err, &status, &error));
  g_assert_no_error(error);
  if (!g_spawn_check_wait_status(status, NULL)) g_error("tomolab-cli recon: %s", err);
  TlImage *im = tl_image_load(out, &error);
  g_assert_no_error(error);
  return im;
}

static gboolean saved(TlWindow *win, gpointer path) { return g_file_test(path, G_FILE_TEST_EXISTS); }

static void wait_prepared(TlWindow *win) {
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_null(tl_window_get_last_error(win));
}

static GtkWidget *panel_child(TlWindow *win, const char *name) {
  return GTK_WIDGET(gtk_widget_get_template_child(GTK_WIDGET(tl_window_get_side_panel(win)),
                                                  TL_TYPE_SIDE_PANEL, name));
}

/* The side panel scrolled so `row` is in view, the window written as a PNG. */
static void screenshot(TlWindow *win, GtkWidget *row, const char *name) {
  GtkWidget *scroller = adw_bin_get_child(ADW_BIN(tl_window_get_side_panel(win)));
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment(GTK_SCROLLED_WINDOW(scroller));
  graphene_point_t p;
  g_assert_true(gtk_widget_compute_point(row, gtk_scrolled_window_get_child(GTK_SCROLLED_WINDOW(scroller)),
                                         &GRAPHENE_POINT_INIT(0, 0), &p));
  gtk_adjustment_set_value(adj, MAX(p.y - 200, 0));
  tl_gui_spin(0.5);
  const char *dir = g_getenv("TL_SHOT_DIR");
  g_autofree char *path = g_build_filename(dir ? dir : tmpdir, name, NULL);
  GError *error = NULL;
  g_assert_true(tl_widget_save_png(GTK_WIDGET(win), path, &error));
  g_assert_no_error(error);
  g_test_message("screenshot: %s", path);
}

static void test_rows(void) {
  g_autofree char *cli_out = g_build_filename(tmpdir, "cli.nii", NULL),
                  *plain_out = g_build_filename(tmpdir, "plain.nii", NULL),
                  *win_out = g_build_filename(tmpdir, "window.nii", NULL),
                  *written = g_build_filename(tmpdir, "written.nii", NULL);
  g_autofree char *opt = g_strdup_printf("--sensitivity=%s", sens_path);
  g_autoptr(TlImage) cli = cli_recon(cli_out, opt, NULL);
  g_autoptr(TlImage) plain = cli_recon(plain_out, NULL, NULL);
  guint64 nv = tl_image_grid_n_voxels(&grid);
  g_assert_true(tl_image_grid_equal(&cli->grid, &grid));
  g_assert_cmpint(memcmp(cli->data, plain->data, nv * sizeof(float)), !=, 0);

  TlWindow *win = tl_gui_new_window();
  TlSidePanel *panel = tl_window_get_side_panel(win);
  tl_side_panel_set_pet_algorithm(panel, "mlem", 1, 2);
  tl_window_open_file(win, scan_path);
  wait_prepared(win);
  GtkWidget *sw = panel_child(win, "sens_switch"), *out_sw = panel_child(win, "sens_out_switch");
  g_assert_false(gtk_widget_get_sensitive(sw)); /* no file yet: nothing to switch on */
  g_assert_false(gtk_switch_get_active(GTK_SWITCH(sw)));
  /* the rows' file choosers end in these actions */
  tl_gui_activate(win, "sensitivity-file", g_variant_new_string(sens_path));
  wait_prepared(win);
  tl_gui_activate(win, "sensitivity-out-file", g_variant_new_string(written));
  wait_prepared(win);
  g_assert_true(gtk_widget_get_sensitive(sw) && gtk_switch_get_active(GTK_SWITCH(sw)));
  g_assert_true(gtk_switch_get_active(GTK_SWITCH(out_sw)));
  g_assert_cmpstr(adw_action_row_get_subtitle(ADW_ACTION_ROW(panel_child(win, "sens_row"))), ==,
                  "sens.nii");
  GError *error = NULL;
  g_autoptr(TlRunSpec) run = tl_window_get_run(win, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(run->sensitivity, ==, sens_path);
  g_assert_cmpstr(run->sensitivity_out, ==, written);
  /* the run written when the job was made: the given image */
  g_assert_true(g_file_test(written, G_FILE_TEST_EXISTS));
  g_autoptr(TlImage) w = tl_image_load(written, &error), given = tl_image_load(sens_path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(memcmp(w->data, given->data, nv * sizeof(float)), ==, 0);
  for (guint i = 0; i < 2; i++) { /* the second step ends the run: Finished, not Paused */
    guint before = tl_window_get_sub_iterations(win);
    tl_gui_activate(win, "step", NULL);
    g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(before + 1)));
    g_assert_true(tl_gui_wait_for(win, tl_gui_in_state,
                                  GINT_TO_POINTER(i ? TL_RUN_FINISHED : TL_RUN_PAUSED)));
    g_assert_null(tl_window_get_last_error(win));
  }
  tl_gui_activate(win, "save-image-to", g_variant_new_string(win_out));
  g_assert_true(tl_gui_wait_for(win, saved, win_out));
  tl_gui_spin(0.2);
  g_autoptr(TlImage) shown = tl_image_load(win_out, &error);
  g_assert_no_error(error);
  g_assert_true(tl_image_grid_equal(&shown->grid, &grid));
  g_assert_cmpfloat(tl_image_sum(shown), >, 0);
  g_assert_cmpint(memcmp(shown->data, cli->data, nv * sizeof(float)), ==, 0);
  screenshot(win, panel_child(win, "sens_row"), "sensitivity-rows.png");
  /* switched off: the run names no file */
  gtk_switch_set_active(GTK_SWITCH(sw), FALSE);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_autoptr(TlRunSpec) off = tl_window_get_run(win, NULL, &error);
  g_assert_no_error(error);
  g_assert_null(off->sensitivity);
  tl_gui_destroy_window(win);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv)) return 0;
  cli_path = argc > 1 ? argv[1] : NULL;
  g_assert_nonnull(cli_path);
  tmpdir = g_dir_make_tmp("tl-sens-row-XXXXXX", NULL);
  make_data();
  g_test_add_func("/gui/sensitivity-row/rows", test_rows);
  int rc = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  g_free(scan_path);
  g_free(sens_path);
  return rc;
}
