/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The workbench on CT data, driven through the window's actions: a tiny Shepp-Logan scan
 * (16^3 voxels, 24 views of 24 x 24 pixels) keeps each sub-iteration to milliseconds on
 * lavapipe. */
#include "run/tl-run-spec.h"
#include "tl-gui-test.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include "tl-simulate-dialog.h"
#include "tl-window.h"
#include "ct/tl-ct-simulate.h"

static char *tmpdir;
static const char *cli_path; /* tomolab-cli, for the cross-door test */

static gboolean not_running(TlWindow *w, gpointer d) {
  return tl_window_has_run(w) && tl_window_get_run_state(w) != TL_RUN_RUNNING &&
         tl_window_get_run_state(w) != TL_RUN_PREPARING;
}

static TlWindow *new_window(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 900, 700);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  return win;
}

static GVariant *ct_params(void) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "modality", "s", "ct");
  g_variant_dict_insert(&d, "phantom", "s", "modified-shepp-logan");
  g_variant_dict_insert(&d, "beam", "s", "cone");
  g_variant_dict_insert(&d, "size", "u", 16);
  g_variant_dict_insert(&d, "views", "u", 24);
  g_variant_dict_insert(&d, "detector", "u", 24);
  return g_variant_dict_end(&d);
}

typedef struct {
  GBytes *last[TL_N_VIEWS];
  guint steps, changed[TL_N_VIEWS];
} Watch;

static void on_frame(TlWindow *win, gboolean new_step, Watch *w) {
  if (!new_step)
    return;
  w->steps++;
  for (int v = 0; v < TL_N_VIEWS; v++) {
    GdkTexture *t = tl_slice_view_get_texture(tl_window_get_slice_view(win, v));
    if (!t)
      continue;
    GBytes *now = tl_gui_texture_bytes(t);
    if (!w->last[v] || !g_bytes_equal(now, w->last[v]))
      w->changed[v]++;
    g_clear_pointer(&w->last[v], g_bytes_unref);
    w->last[v] = now;
  }
}

static void watch_clear(Watch *w) {
  for (int v = 0; v < TL_N_VIEWS; v++)
    g_clear_pointer(&w->last[v], g_bytes_unref);
}

/* The plot's CSV header names its series. */
static char *plot_header(TlPlot *plot) {
  g_autofree char *csv = g_build_filename(tmpdir, "plot.csv", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_plot_save_csv(plot, csv, &error));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(csv, &text, NULL, &error));
  g_unlink(csv);
  char *nl = strchr(text, '\n');
  return g_strndup(text, nl ? (gsize)(nl - text) : strlen(text));
}

/* Steps one sub-iteration at a time until `n` are done. */
static void step_to(TlWindow *win, guint n) {
  for (guint i = tl_window_get_sub_iterations(win); i < n; i++) {
    g_assert_true(tl_gui_wait_for(win, not_running, NULL));
    tl_gui_activate(win, "step", NULL);
    g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(i + 1)));
  }
  g_assert_true(tl_gui_wait_for(win, not_running, NULL));
}

/* Whether the picture has more than one colour. */
static gboolean non_blank(GBytes *b) {
  gsize n;
  const guint32 *px = g_bytes_get_data(b, &n);
  for (gsize i = 1; i < n / 4; i++)
    if (px[i] != px[0])
      return TRUE;
  return FALSE;
}

/* CT data: the projection view replaces the MIP and changes with the view index. */
static void check_projection_view(TlWindow *win) {
  TlProjectionView *pv = tl_window_get_projection_view(win);
  g_assert_true(gtk_widget_get_visible(GTK_WIDGET(pv)));
  g_assert_false(gtk_widget_get_visible(GTK_WIDGET(tl_window_get_slice_view(win, TL_VIEW_MIP))));
  g_assert_cmpuint(tl_projection_view_get_n_views(pv), ==, 24);
  g_assert_cmpuint(tl_projection_view_get_view(pv), ==, 0);
  TlSliceView *image = tl_projection_view_get_image(pv);
  const TlSlice *s = tl_slice_view_get_slice(image);
  g_assert_cmpuint(s->width, ==, 24);
  g_assert_cmpuint(s->height, ==, 24);
  g_autoptr(GBytes) first = tl_gui_texture_bytes(tl_slice_view_get_texture(image));
  g_assert_true(non_blank(first));
  /* A quarter turn later the (asymmetric) phantom casts another shadow. */
  tl_projection_view_set_view(pv, 6);
  g_assert_cmpuint(tl_projection_view_get_view(pv), ==, 6);
  g_autoptr(GBytes) quarter = tl_gui_texture_bytes(tl_slice_view_get_texture(image));
  g_assert_true(non_blank(quarter));
  g_assert_false(g_bytes_equal(first, quarter));
  tl_projection_view_set_view(pv, 1000);  /* clamped */
  g_assert_cmpuint(tl_projection_view_get_view(pv), ==, 23);
  tl_projection_view_set_view(pv, 0);
  g_autoptr(GBytes) back = tl_gui_texture_bytes(tl_slice_view_get_texture(image));
  g_assert_true(g_bytes_equal(first, back));
}

static void test_sirt(void) {
  TlWindow *win = new_window();
  tl_side_panel_set_ct_algorithm(tl_window_get_side_panel(win), "sirt", 1, 3);
  tl_gui_activate(win, "simulate", ct_params());
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_true(tl_side_panel_get_ct(tl_window_get_side_panel(win)));
  /* TOF, attenuation and the PET filters do not apply to CT. */
  GObject *pet_group = gtk_widget_get_template_child(GTK_WIDGET(tl_window_get_side_panel(win)),
                                                     TL_TYPE_SIDE_PANEL, "pet_group");
  g_assert_false(gtk_widget_get_sensitive(GTK_WIDGET(pet_group)));

  check_projection_view(win);
  Watch w = {0};
  gulong id = g_signal_connect(win, "frame", G_CALLBACK(on_frame), &w);
  step_to(win, 3);
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_FINISHED);
  g_assert_cmpuint(w.steps, ==, 3);
  for (int v = 0; v < TL_VIEW_MIP; v++)
    g_assert_cmpuint(w.changed[v], ==, 3);
  g_signal_handler_disconnect(win, id);
  watch_clear(&w);

  /* The overlay lists the CT kernels, each with GPU time. */
  const TlProfile *p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(p);
  g_assert_nonnull(tl_profile_lookup(p, "ct forward joseph"));
  g_assert_nonnull(tl_profile_lookup(p, "ct back joseph"));
  for (guint i = 0; i < tl_profile_n_entries(p); i++) {
    g_test_message("%s: %u calls, %.3f ms", tl_profile_entry(p, i)->label, tl_profile_entry(p, i)->calls,
                   tl_profile_entry(p, i)->gpu_ms);
    g_assert_cmpfloat(tl_profile_entry(p, i)->gpu_ms, >, 0);
  }

  /* Convergence: CT's objective (falling) and the RMSE against the phantom. */
  TlPlot *plot = tl_window_get_convergence_plot(win);
  g_assert_cmpuint(tl_plot_n_series(plot), ==, 2);
  g_assert_cmpuint(tl_plot_n_points(plot, 0), ==, 3);
  g_assert_cmpuint(tl_plot_n_points(plot, 1), ==, 3);
  g_autofree char *header = plot_header(plot);
  g_assert_nonnull(strstr(header, "½‖Ax−y‖²"));
  g_assert_null(strstr(header, "log-likelihood"));

  /* win.show-mip hides and shows the fourth pane: here the projections. */
  tl_gui_activate(win, "show-mip", NULL);
  g_assert_false(gtk_widget_get_visible(GTK_WIDGET(tl_window_get_projection_view(win))));
  tl_gui_activate(win, "show-mip", NULL);
  g_assert_true(gtk_widget_get_visible(GTK_WIDGET(tl_window_get_projection_view(win))));
  g_assert_false(gtk_widget_get_visible(GTK_WIDGET(tl_window_get_slice_view(win, TL_VIEW_MIP))));
  tl_gui_destroy_window(win);
}

/* A .tlct file opens as a CT dataset (no truth: no RMSE); CGLS, then MLEM's label. */
static void test_open_tlct(void) {
  TlWindow *win = new_window();
  g_autoptr(GError) error = NULL;
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, 20, 24, 16, 1, 1);
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  g_autoptr(TlCtPhantom) ph = tl_ct_phantom_new_preset("shepp-logan", &error);
  g_assert_no_error(error);
  TlImageGrid grid = tl_image_grid_centred(16, 16, 16, 1, 1, 1);
  TlCtSimOptions so;
  tl_ct_sim_options_init(&so);
  g_autoptr(TlCtData) data = tl_ct_simulate_phantom(tl_window_get_context(win), g, ph, &grid, 0.02, &so, &error);
  g_assert_no_error(error);
  data->has_grid = TRUE;
  data->grid = grid;
  g_autofree char *path = g_build_filename(tmpdir, "scan.tlct", NULL);
  g_assert_true(tl_ct_data_save(data, path, &error));

  tl_side_panel_set_ct_algorithm(tl_window_get_side_panel(win), "cgls", 1, 2);
  tl_gui_activate(win, "open-file", g_variant_new_string(path));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_cmpstr(tl_window_get_dataset_name(win), ==, "scan.tlct");
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  step_to(win, 2);
  g_assert_null(tl_window_get_last_error(win));
  TlPlot *plot = tl_window_get_convergence_plot(win);
  g_assert_cmpuint(tl_plot_n_series(plot), ==, 1);
  g_assert_cmpuint(tl_plot_n_points(plot, 0), ==, 2);
  const TlProfile *p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "ct forward joseph"));

  /* MLEM: the plotted value is a log-likelihood. */
  tl_side_panel_set_ct_algorithm(tl_window_get_side_panel(win), "mlem", 2, 1);
  tl_gui_activate(win, "restart", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  step_to(win, 1);
  g_autofree char *header = plot_header(plot);
  g_assert_nonnull(strstr(header, "log-likelihood"));
  g_assert_null(tl_window_get_last_error(win));

  /* Open Run opens the run's data (another file than the one shown), then applies its keys to
   * the CT rows; Save Run writes them back as the run a job is made from. */
  g_autofree char *other = g_build_filename(tmpdir, "scan2.tlct", NULL);
  g_assert_true(tl_ct_data_save(data, other, &error));
  g_autofree char *run = g_build_filename(tmpdir, "ct.run", NULL);
  g_autofree char *text = g_strdup_printf("modality = ct\ndata = %s\nalgorithm = fdk\n"
                                          "fdk-filter = hann\n", other);
  g_assert_true(g_file_set_contents(run, text, -1, NULL));
  tl_gui_activate(win, "open-run-file", g_variant_new_string(run));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_cmpstr(tl_window_get_dataset_name(win), ==, "scan2.tlct");
  TlCtJobOptions co;
  tl_side_panel_get_ct_options(tl_window_get_side_panel(win), &co);
  g_assert_cmpstr(co.algo, ==, "fdk");
  g_assert_cmpint(co.fdk_filter, ==, TL_CT_FILTER_HANN);
  g_autofree char *saved = g_build_filename(tmpdir, "ct-saved.run", NULL);
  tl_gui_activate(win, "save-run-to", g_variant_new_string(saved));
  g_assert_null(tl_window_get_last_error(win));
  g_autoptr(TlRunSpec) back = tl_run_spec_load(saved, &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->modality, ==, TL_RUN_CT);
  g_assert_cmpstr(back->data, ==, other);
  g_assert_cmpstr(tl_run_spec_algorithm(back), ==, "fdk");
  g_assert_cmpint(back->fdk_filter, ==, TL_CT_FILTER_HANN);
  tl_gui_destroy_window(win);
}

/* FDK is a job of one step. */
static void test_fdk(void) {
  TlWindow *win = new_window();
  tl_side_panel_set_ct_algorithm(tl_window_get_side_panel(win), "fdk", 1, 1);
  tl_gui_activate(win, "simulate", ct_params());
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  step_to(win, 1);
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_FINISHED);
  g_assert_null(tl_window_get_last_error(win));
  const TlSlice *ax = tl_slice_view_get_slice(tl_window_get_slice_view(win, TL_VIEW_AXIAL));
  g_assert_nonnull(ax->data);
  float hi = 0;
  for (guint i = 0; i < ax->width * ax->height; i++)
    hi = MAX(hi, ax->data[i]);
  g_assert_cmpfloat(hi, >, 0.005);
  const TlProfile *p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "fdk filter"));
  tl_gui_destroy_window(win);
}

static const char *param_s(GVariant *p, const char *key) {
  const char *v = NULL;
  g_assert_true(g_variant_lookup(p, key, "&s", &v));
  return v;
}

static guint32 param_u(GVariant *p, const char *key) {
  guint32 v = 0;
  g_assert_true(g_variant_lookup(p, key, "u", &v));
  return v;
}

/* The Simulate dialog's modality switch: PET asks for a scanner, CT for an orbit. */
static void test_dialog_modality(void) {
  TlWindow *win = new_window();
  tl_gui_activate(win, "simulate-dialog", NULL);
  TlSimulateDialog *dialog = NULL;
  GListModel *tops = gtk_window_get_toplevels();
  for (guint i = 0; i < g_list_model_get_n_items(tops); i++) {
    g_autoptr(GObject) o = g_list_model_get_item(tops, i);
    if (TL_IS_SIMULATE_DIALOG(o))
      dialog = TL_SIMULATE_DIALOG(o);
  }
  g_assert_nonnull(dialog);
  g_assert_false(tl_simulate_dialog_get_ct(dialog));
  g_autoptr(GVariant) pet = g_variant_ref_sink(tl_simulate_dialog_get_params(dialog));
  g_assert_false(g_variant_lookup(pet, "modality", "&s", NULL));
  g_assert_cmpstr(param_s(pet, "scanner"), ==, "dmi");

  tl_simulate_dialog_set_ct(dialog, TRUE);
  g_autoptr(GVariant) ct = g_variant_ref_sink(tl_simulate_dialog_get_params(dialog));
  g_assert_cmpstr(param_s(ct, "modality"), ==, "ct");
  g_assert_cmpstr(param_s(ct, "phantom"), ==, "shepp-logan");
  g_assert_cmpstr(param_s(ct, "beam"), ==, "cone");
  g_assert_cmpuint(param_u(ct, "size"), ==, 64);
  g_assert_cmpuint(param_u(ct, "views"), ==, 90);
  g_assert_cmpuint(param_u(ct, "detector"), ==, 96);
  g_assert_false(g_variant_lookup(ct, "scanner", "&s", NULL));
  gtk_window_destroy(GTK_WINDOW(dialog));
  tl_gui_destroy_window(win);
}


static gboolean file_exists(TlWindow *w, gpointer path) {
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

/* tooth.h5 (../shared/data: a real parallel-beam scan whose Data Exchange file stores no
 * centre) opened with `--set algo=fdk`: the window searches the centre on open, as the CLI does
 * by default, shows it in the side panel's CT rows, and its FDK equals the CLI's
 * `ct-recon --centre auto` image (with the window's FDK window, Shepp-Logan) to 1e-6. */
static void test_tooth_fdk(void) {
  const char *tooth = "../shared/data/tooth/tooth.h5";
  if (!cli_path || !g_file_test(tooth, G_FILE_TEST_EXISTS)) {
    g_test_skip("needs tomolab-cli and ../shared/data/tooth/tooth.h5 (run from the source root)");
    return;
  }
  TlWindow *win = new_window();
  TlSidePanel *panel = tl_window_get_side_panel(win);
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "algo", "s", "fdk");
  tl_window_set_demo_settings(win, g_variant_dict_end(&d));
  tl_gui_activate(win, "open-file", g_variant_new_string(tooth));
  /* the search reconstructs ~9 slices of 640 x 640: tens of seconds on lavapipe */
  for (int i = 0; i < 4 && !tl_gui_wait_for(win, tl_gui_is_idle, NULL); i++)
    ;
  g_assert_null(tl_window_get_last_error(win));
  g_assert_cmpstr(tl_window_get_dataset_name(win), ==, "tooth.h5");
  /* CT rows, the --set algorithm honoured, the searched centre shown */
  g_assert_true(tl_side_panel_get_ct(panel));
  TlCtJobOptions co;
  tl_side_panel_get_ct_options(panel, &co);
  g_assert_cmpstr(co.algo, ==, "fdk");
  double centre = tl_side_panel_get_centre(panel);
  g_test_message("window: centre %.3f", centre);
  g_assert_cmpfloat(fabs(centre - 295.5), <=, 0.5);
  g_assert_cmpfloat(fabs(co.centre - centre), <, 1e-12);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  step_to(win, 1);
  g_assert_null(tl_window_get_last_error(win));
  g_autofree char *mine = g_build_filename(tmpdir, "tooth-window.nii", NULL);
  tl_gui_activate(win, "save-image-to", g_variant_new_string(mine));
  g_assert_true(tl_gui_wait_for(win, file_exists, mine));
  tl_gui_destroy_window(win);

  g_autofree char *theirs = g_build_filename(tmpdir, "tooth-cli.nii", NULL);
  const char *argv[] = {cli_path, "ct-recon", tooth, "--centre", "auto", "--filter",
                        "shepp-logan", "-q", "-o", theirs, NULL};
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, &err, &status, &error));
  g_test_message("cli: %s", err);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  const char *at = strstr(err, "centre of rotation ");
  g_assert_nonnull(at);
  g_assert_cmpfloat(fabs(g_ascii_strtod(at + 19, NULL) - centre), <=, 5e-4); /* printed %.3f */
  g_autoptr(TlImage) a = tl_image_load(mine, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) b = tl_image_load(theirs, &error);
  g_assert_no_error(error);
  g_assert_true(tl_image_grid_equal(&a->grid, &b->grid));
  double dd = 0, bb = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&a->grid); i++) {
    dd += ((double)a->data[i] - b->data[i]) * ((double)a->data[i] - b->data[i]);
    bb += (double)b->data[i] * b->data[i];
  }
  g_test_message("window vs CLI: relative L2 %.3g", sqrt(dd / bb));
  g_assert_cmpfloat(bb, >, 0);
  g_assert_cmpfloat(sqrt(dd / bb), <=, 1e-6);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  if (argc > 1)
    cli_path = argv[1];
  tmpdir = g_dir_make_tmp("tomolab-gui-ct-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  g_test_add_func("/gui/ct/sirt", test_sirt);
  g_test_add_func("/gui/ct/open-tlct", test_open_tlct);
  g_test_add_func("/gui/ct/fdk", test_fdk);
  g_test_add_func("/gui/ct/dialog-modality", test_dialog_modality);
  g_test_add_func("/gui/ct/tooth-fdk", test_tooth_fdk);
  int status = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
