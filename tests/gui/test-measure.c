/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The exploring workbench's measuring, comparing and steering (issue 16 items 2, 3, 6), driven
 * through the window's actions: ROI statistics against a plain C computation on the saved
 * image, the NEMA analysis of the phantom's own truth opened as an image (CR = 1 for every
 * sphere), snapshots and their difference image against the voxel difference of the saved
 * images, new subsets while paused (marked on the convergence plot), and the frame clock
 * with a ROI and a comparison open. Same tiny ring scanner as test-workbench. */
#include "tl-gui-test.h"
#include "tl-kernel-editor.h"
#include "tl-data-view.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include "image/tl-phantom.h"
#include "pet/scanner/tl-scanner.h"
#include "tl-window.h"
#include <adwaita.h>

static char *tmpdir, *scanner_path;

static void write_scanner(void) {
  TlScannerLayout l = {0};
  l.kind = TL_SCANNER_RING;
  l.n_rings = 8;
  l.n_sides = 12;
  l.crystals_per_side = 4;
  l.module_rings = 8;
  l.radius_mm = 30;
  l.crystal_pitch_mm = 4;
  l.ring_pitch_mm = 4;
  g_autoptr(GError) error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_from_layout("gui-test-ring", &l, NULL, &error);
  g_assert_no_error(error);
  scanner_path = g_build_filename(tmpdir, "ring.scanner", NULL);
  g_assert_true(tl_scanner_save(s, scanner_path, &error));
}

static TlWindow *window_with_events(guint subsets, guint iterations, double events) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 900, 700);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  tl_side_panel_set_algorithm(tl_window_get_side_panel(win), TRUE, subsets, iterations);
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", "cylinder");
  g_variant_dict_insert(&d, "scanner", "s", scanner_path);
  g_variant_dict_insert(&d, "events", "d", events);
  g_variant_dict_insert(&d, "seed", "t", (guint64)7);
  g_variant_dict_insert(&d, "coarsen", "u", 2);
  tl_gui_activate(win, "simulate", g_variant_dict_end(&d));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  return win;
}

static gboolean file_exists(TlWindow *w, gpointer path) { return g_file_test(path, G_FILE_TEST_EXISTS); }

static TlImage *save_and_load(TlWindow *win, const char *name) {
  g_autofree char *path = g_build_filename(tmpdir, name, NULL);
  tl_gui_activate(win, "save-image-to", g_variant_new_string(path));
  g_assert_true(tl_gui_wait_for(win, file_exists, path));
  g_autoptr(GError) error = NULL;
  TlImage *im = tl_image_load(path, &error);
  g_assert_no_error(error);
  return im;
}

/* The plain computation: every voxel, its centre from the grid, a sphere (or an axial circle
 * on the slice nearest the centre); mean and sample SD in double. */
static void plain_stats(const TlImage *im, const double c[3], double r, gboolean circle, guint64 *n, double *mean,
                        double *sd) {
  const TlImageGrid *g = &im->grid;
  double sum = 0, ss = 0;
  *n = 0;
  for (int pass = 0; pass < 1; pass++)
    for (guint k = 0; k < g->dims[2]; k++)
      for (guint j = 0; j < g->dims[1]; j++)
        for (guint i = 0; i < g->dims[0]; i++) {
          double x = g->origin_mm[0] + i * (double)g->voxel_mm[0] - c[0];
          double y = g->origin_mm[1] + j * (double)g->voxel_mm[1] - c[1];
          double z = g->origin_mm[2] + k * (double)g->voxel_mm[2] - c[2];
          if (circle ? (round((c[2] - g->origin_mm[2]) / g->voxel_mm[2]) != k || x * x + y * y > r * r)
                     : x * x + y * y + z * z > r * r)
            continue;
          double v = im->data[i + g->dims[0] * (j + (gsize)g->dims[1] * k)];
          if (pass == 0) { sum += v; (*n)++; }
          else ss += (v - *mean) * (v - *mean);
        }
  *mean = sum / *n;
  ss = 0;
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double x = g->origin_mm[0] + i * (double)g->voxel_mm[0] - c[0];
        double y = g->origin_mm[1] + j * (double)g->voxel_mm[1] - c[1];
        double z = g->origin_mm[2] + k * (double)g->voxel_mm[2] - c[2];
        if (circle ? (round((c[2] - g->origin_mm[2]) / g->voxel_mm[2]) != k || x * x + y * y > r * r)
                   : x * x + y * y + z * z > r * r)
          continue;
        double v = im->data[i + g->dims[0] * (j + (gsize)g->dims[1] * k)];
        ss += (v - *mean) * (v - *mean);
      }
  *sd = *n > 1 ? sqrt(ss / (*n - 1)) : 0;
}

typedef struct {
  guint i;
  guint sub_iterations;  /* wait for stats of at least this sub-iteration's frame */
} RoiWait;

static gboolean has_roi_stats(TlWindow *w, gpointer data) {
  TlRoiStats st;
  return tl_window_get_roi_stats(w, GPOINTER_TO_UINT(data), &st) && st.n > 0;
}

static gboolean roi_has_n(TlWindow *w, gpointer data) {
  TlRoiStats st;
  return tl_window_get_roi_stats(w, 0, &st) && st.n == *(guint64 *)data;
}

static void test_roi(void) {
  TlWindow *win = window_with_events(3, 1, 3e4);
  /* A ROI before the run: its statistics follow every sub-iteration (CSV rows below). */
  tl_gui_activate(win, "roi-add", g_variant_new("(dddd)", 0.0, 0.0, 0.0, 9.0));
  tl_gui_activate(win, "run", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  g_autoptr(TlImage) im = save_and_load(win, "roi.nii");
  /* An axial circle off centre, added after the run: measured on the image shown. */
  double vz = im->grid.voxel_mm[2];
  tl_gui_activate(win, "roi-add-circle", g_variant_new("(ddddu)", 3.0, -2.0, 1.7 * vz, 10.0, 2u));
  g_assert_true(tl_gui_wait_for(win, has_roi_stats, GUINT_TO_POINTER(1)));
  const struct { double c[3], r; gboolean circle; } rois[] = {{{0, 0, 0}, 9.0, FALSE}, {{3, -2, 1.7 * vz}, 10.0, TRUE}};
  for (guint i = 0; i < 2; i++) {
    TlRoiStats st;
    g_assert_true(tl_window_get_roi_stats(win, i, &st));
    guint64 n;
    double mean, sd;
    plain_stats(im, rois[i].c, rois[i].r, rois[i].circle, &n, &mean, &sd);
    g_test_message("ROI %u: %" G_GUINT64_FORMAT " voxels, mean %g (plain %g), SD %g (plain %g)", i + 1, st.n,
                   st.mean, mean, st.sd, sd);
    g_assert_cmpuint(n, >, 5);
    g_assert_cmpuint(st.n, ==, n);
    g_assert_cmpfloat_with_epsilon(st.mean, mean, 1e-9 * fabs(mean));
    g_assert_cmpfloat_with_epsilon(st.sd, sd, 1e-9 * fabs(sd) + 1e-12);
    g_assert_cmpfloat(sd, >, 0);
  }
  /* CSV: ROI 1 at each of the 3 sub-iterations, with the last row's mean the one above. */
  g_autofree char *csv = g_build_filename(tmpdir, "roi.csv", NULL);
  tl_gui_activate(win, "export-roi-csv", g_variant_new_string(csv));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(csv, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_assert_cmpstr(lines[0], ==, "run,sub-iteration,roi,kind,x_mm,y_mm,z_mm,radius_mm,axis,voxels,mean,sd");
  g_assert_cmpuint(g_strv_length(lines), ==, 5);  /* header, 3 rows, "" */
  for (int i = 1; i <= 3; i++) {
    g_autofree char *prefix = g_strdup_printf("1,%d,1,sphere,0,0,0,9,", i);
    g_assert_true(g_str_has_prefix(lines[i], prefix));
  }
  TlRoiStats st;
  tl_window_get_roi_stats(win, 0, &st);
  g_auto(GStrv) cells = g_strsplit(lines[3], ",", -1);
  g_assert_cmpfloat_with_epsilon(g_ascii_strtod(cells[10], NULL), st.mean, 1e-6 * fabs(st.mean));
  tl_gui_activate(win, "roi-clear", NULL);
  g_assert_false(tl_window_get_roi_stats(win, 0, &st));

  /* Drawn on the axial view (what its Ctrl+drag emits): a new sphere, then moved. */
  TlSliceView *axial = tl_window_get_slice_view(win, TL_VIEW_AXIAL);
  g_signal_emit_by_name(axial, "roi", -1, (int)TL_ROI_SPHERE, 2, 0.0, 0.0, 0.0, 9.0);
  g_assert_true(tl_gui_wait_for(win, has_roi_stats, GUINT_TO_POINTER(0)));
  g_signal_emit_by_name(axial, "roi", 0, (int)TL_ROI_SPHERE, 2, 4.0, -3.0, 0.0, 7.0);
  guint64 n;
  double mean, sd;
  plain_stats(im, (double[3]){4, -3, 0}, 7.0, FALSE, &n, &mean, &sd);
  g_assert_true(tl_gui_wait_for(win, roi_has_n, &n));
  g_assert_false(tl_window_get_roi_stats(win, 1, &st) && st.n);
  tl_window_get_roi_stats(win, 0, &st);
  g_assert_cmpuint(st.n, ==, n);
  g_assert_cmpfloat_with_epsilon(st.mean, mean, 1e-9 * fabs(mean));
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
}

static gboolean has_nema(TlWindow *w, gpointer data) {
  TlNemaResult r;
  return tl_window_get_nema(w, &r);
}

/* The noiseless "reconstruction": the phantom's truth itself, opened as an image. */
static void test_nema_truth(void) {
  TlImageGrid g = {{150, 116, 30}, {2.0f, 2.0f, 2.0f}, {-149.0f, -115.0f, -9.0f}};
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(GError) error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, &g, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) truth = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 4, &truth, NULL, &error));
  g_autofree char *path = g_build_filename(tmpdir, "nema-truth.nii", NULL);
  g_assert_true(tl_image_save(truth, path, &error));
  g_assert_no_error(error);

  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 900, 700);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  tl_gui_activate(win, "open-file", g_variant_new_string(path));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_activate(win, "nema-analysis", NULL);
  g_assert_true(tl_gui_wait_for(win, has_nema, NULL));
  TlNemaResult r;
  g_assert_true(tl_window_get_nema(win, &r));
  const TlNemaLayout *l = tl_window_get_nema_layout(win);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    g_test_message("%.0f mm sphere: CR %.6f over %" G_GUINT64_FORMAT " voxels, N %.6f", l->diameter_mm[j],
                   r.contrast_recovery[j], r.hot[j].n, r.variability[j]);
    g_assert_cmpuint(r.hot[j].n, >, 0);
    g_assert_cmpfloat_with_epsilon(r.contrast_recovery[j], 1.0, 1e-5);
    g_assert_cmpfloat_with_epsilon(r.variability[j], 0.0, 1e-6);
  }
  g_assert_cmpfloat_with_epsilon(r.lung_residual, 0.0, 1e-6);
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
}

static gboolean has_snapshots(TlWindow *w, gpointer n) {
  return tl_window_get_n_snapshots(w) >= GPOINTER_TO_UINT(n);
}

static void step_to(TlWindow *win, guint n) {
  tl_gui_activate(win, "step", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(n)));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
}

static void test_compare(void) {
  TlWindow *win = window_with_events(4, 2, 3e4);
  step_to(win, 1);
  tl_gui_activate(win, "snapshot-keep", g_variant_new_string("early"));
  g_autoptr(TlImage) a = save_and_load(win, "early.nii");
  g_assert_true(tl_gui_wait_for(win, has_snapshots, GUINT_TO_POINTER(1)));
  step_to(win, 2);
  step_to(win, 3);
  tl_gui_activate(win, "snapshot-keep", g_variant_new_string("late"));
  g_autoptr(TlImage) b = save_and_load(win, "late.nii");
  g_assert_true(tl_gui_wait_for(win, has_snapshots, GUINT_TO_POINTER(2)));
  g_assert_cmpuint(tl_window_get_snapshot(win, "late")->sub_iterations, ==, 3);
  g_assert_cmpuint(tl_window_get_snapshot(win, "late")->objective_x->len, ==, 3);

  tl_gui_activate(win, "compare", g_variant_new("(ss)", "early", "late"));
  TlCompareView *cv = tl_window_get_compare_view(win);
  g_assert_nonnull(cv);
  const TlImage *d = tl_compare_view_get_difference(cv);
  g_assert_nonnull(d);
  g_assert_true(tl_image_grid_equal(&d->grid, &a->grid));
  double max_abs = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&a->grid); i++) {
    g_assert_cmpfloat(d->data[i], ==, a->data[i] - b->data[i]);
    max_abs = MAX(max_abs, fabs(d->data[i]));
  }
  g_assert_cmpfloat(max_abs, >, 0);  /* the two runs differ */
  /* The views: A, B and A - B through one crosshair; a new slice moves all three. */
  guint nx = a->grid.dims[0], ny = a->grid.dims[1], k = a->grid.dims[2] - 1;
  g_signal_emit_by_name(tl_compare_view_get_slice_view(cv, 0), "position-changed", 1u, 2u, k);
  const TlImage *ims[3] = {a, b, d};
  for (int v = 0; v < 3; v++) {
    const TlSlice *s = tl_slice_view_get_slice(tl_compare_view_get_slice_view(cv, v));
    g_assert_cmpuint(s->width, ==, nx);
    g_assert_cmpuint(s->height, ==, ny);
    g_assert_cmpint(memcmp(s->data, ims[v]->data + (gsize)k * nx * ny, (gsize)nx * ny * sizeof(float)), ==, 0);
  }
  /* Window/level of A goes to B. */
  g_signal_emit_by_name(tl_compare_view_get_slice_view(cv, 0), "levels-changed", 0.0, 1.0);
  TlPlot *conv = tl_compare_view_get_convergence_plot(cv);
  g_assert_cmpuint(tl_plot_n_series(conv), >=, 2);
  g_assert_cmpuint(tl_plot_n_points(conv, 0), ==, 1);
  g_assert_cmpuint(tl_plot_n_points(conv, 1), ==, 3);

  /* Restart from "early" with other settings: the new run starts from its image. */
  tl_side_panel_set_algorithm(tl_window_get_side_panel(win), TRUE, 2, 2);
  tl_gui_activate(win, "snapshot-restart", g_variant_new_string("early"));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_autoptr(TlImage) start = save_and_load(win, "restart.nii");
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&a->grid); i++)
    g_assert_cmpfloat(start->data[i], ==, a->data[i]);
  step_to(win, 1);
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
}

/* New subsets while paused: the next sub-iteration runs with them from the current image;
 * the convergence plot marks the change between sub-iterations 2 and 3. */
static void test_steer(void) {
  TlWindow *win = window_with_events(4, 3, 3e4);
  step_to(win, 1);
  step_to(win, 2);
  g_autoptr(TlImage) before = save_and_load(win, "before.nii");
  GtkSpinButton *subsets = GTK_SPIN_BUTTON(gtk_widget_get_template_child(
      GTK_WIDGET(tl_window_get_side_panel(win)), TL_TYPE_SIDE_PANEL, "subsets_spin"));
  g_assert_nonnull(subsets);
  gtk_spin_button_set_value(subsets, 2);
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 2);  /* not restarted */
  g_assert_cmpint(tl_window_get_run_state(win), ==, TL_RUN_PAUSED);
  step_to(win, 3);
  /* The status line tells the step's subset of how many: the new job's first, of 2. */
  GtkLabel *status = GTK_LABEL(gtk_widget_get_template_child(GTK_WIDGET(win), TL_TYPE_WINDOW, "status_label"));
  g_test_message("status: %s", gtk_label_get_text(status));
  g_assert_nonnull(strstr(gtk_label_get_text(status), "subset 1/2"));
  TlPlot *plot = tl_window_get_convergence_plot(win);
  g_assert_cmpuint(tl_plot_n_markers(plot), ==, 1);
  g_assert_cmpfloat(tl_plot_get_marker(plot, 0), ==, 2.5);
  g_assert_cmpuint(tl_plot_n_points(plot, 0), ==, 3);
  /* It went on from the image of sub-iteration 2 (a fresh start would be the uniform image
   * updated once: compare the change from `before` with a full restart's distance). */
  g_autoptr(TlImage) after = save_and_load(win, "after.nii");
  double moved = 0, norm = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&before->grid); i++) {
    moved += fabs(after->data[i] - before->data[i]);
    norm += fabs(before->data[i]);
  }
  g_test_message("relative change over the steered sub-iteration: %.3g", moved / norm);
  g_assert_cmpfloat(moved, >, 0);
  g_assert_cmpfloat(moved / norm, <, 0.5);
  /* Projector and filter while paused: the next sub-iteration's kernels are Joseph's and the
   * median's; a second marker. */
  GtkWidget *panel = GTK_WIDGET(tl_window_get_side_panel(win));
  adw_combo_row_set_selected(ADW_COMBO_ROW(gtk_widget_get_template_child(panel, TL_TYPE_SIDE_PANEL, "projector_row")), 1);
  adw_combo_row_set_selected(ADW_COMBO_ROW(gtk_widget_get_template_child(panel, TL_TYPE_SIDE_PANEL, "filter_row")), 1);
  step_to(win, 4);
  const TlProfile *p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "em joseph"));
  g_assert_null(tl_profile_lookup(p, "em siddon"));
  g_assert_nonnull(tl_profile_lookup(p, "median3"));
  g_assert_cmpuint(tl_plot_n_markers(plot), ==, 2);
  g_assert_cmpfloat(tl_plot_get_marker(plot, 1), ==, 3.5);
  /* 3 iterations x 2 subsets now: it finishes at 6. */
  tl_gui_activate(win, "run", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_FINISHED)));
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 6);
  g_assert_null(tl_window_get_last_error(win));
  tl_gui_destroy_window(win);
}

typedef struct {
  gint64 last, max_gap;
  guint ticks;
  gboolean measuring;
} Ticks;

static gboolean on_tick(GtkWidget *widget, GdkFrameClock *clock, gpointer data) {
  Ticks *t = data;
  gint64 now = g_get_monotonic_time();
  if (t->measuring && t->last && now - t->last > t->max_gap)
    t->max_gap = now - t->last;
  t->last = now;
  t->ticks++;
  return G_SOURCE_CONTINUE;
}

static gboolean editor_done(TlWindow *w, gpointer d) { return !tl_kernel_editor_is_busy(d); }

/* As test-workbench's frame-clock test, with two ROIs measured every sub-iteration and a
 * comparison window open: the statistics are computed on the worker, so the main thread's
 * longest gap between frames stays well under a sub-iteration. */
static void test_frame_clock(void) {
  TlWindow *win = window_with_events(1, 8, 6e5);
  tl_gui_activate(win, "roi-add", g_variant_new("(dddd)", 0.0, 0.0, 0.0, 12.0));
  tl_gui_activate(win, "roi-add-circle", g_variant_new("(ddddu)", 4.0, 0.0, 0.0, 8.0, 2u));
  step_to(win, 1);
  tl_gui_activate(win, "snapshot-keep", g_variant_new_string("one"));
  g_assert_true(tl_gui_wait_for(win, has_snapshots, GUINT_TO_POINTER(1)));
  tl_gui_activate(win, "compare", g_variant_new("(ss)", "one", "one"));
  /* and the kernel editor and the data view open: the editor applies a kernel mid-run (its
   * compile and install on a worker), the data view recomputes its plane after each step.
   * Not the editor under LeakSanitizer (its GtkSourceView takes the process past 2048 quarks
   * and GLib drops its first quark array, 16 KiB: docs/reliability.md). */
#if defined(__SANITIZE_ADDRESS__)
  TlKernelEditor *ed = NULL;
#else
  tl_gui_activate(win, "edit-kernel", g_variant_new_string("pet_em"));
  TlKernelEditor *ed = tl_window_get_kernel_editor(win);
  g_assert_nonnull(ed);
#endif
  tl_gui_activate(win, "show-data", NULL);
  g_assert_nonnull(tl_window_get_data_view(win));
  Ticks t = {0};
  guint id = gtk_widget_add_tick_callback(GTK_WIDGET(win), on_tick, &t, NULL);
  tl_gui_spin(0.2);
  t.measuring = TRUE;
  t.last = 0;
  gint64 t0 = g_get_monotonic_time();
  tl_gui_activate(win, "run", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(2)));
  if (ed) tl_kernel_editor_apply(ed);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(5)));
  double mean_step = (g_get_monotonic_time() - t0) / 4.0;
  t.measuring = FALSE;
  TlRoiStats st;
  g_assert_true(tl_window_get_roi_stats(win, 1, &st));
  g_test_message("%u ticks, longest gap %.1f ms; mean sub-iteration %.1f ms", t.ticks, t.max_gap / 1000.0,
                 mean_step / 1000.0);
  g_assert_cmpuint(t.ticks, >, 10);
#if defined(__SANITIZE_ADDRESS__)
  g_test_message("frame gap not asserted under AddressSanitizer");
#else
  g_assert_cmpfloat(t.max_gap, <, 0.5 * mean_step);
#endif
  gtk_widget_remove_tick_callback(GTK_WIDGET(win), id);
  if (ed) {
    g_assert_true(tl_gui_wait_for(win, editor_done, ed));
    g_assert_nonnull(strstr(tl_kernel_editor_get_status(ed), "Installed"));
  }
  g_assert_cmpuint(tl_data_view_get_expected_updates(tl_window_get_data_view(win)), >=, 1);
  /* the run's 8 sub-iterations may all be done while the editor installed its kernel (a quiet
   * machine: ~120 ms each): stop is offered only while it runs */
  if (tl_window_get_run_state(win) < TL_RUN_FINISHED) tl_gui_activate(win, "stop", NULL);
  tl_gui_destroy_window(win);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  tmpdir = g_dir_make_tmp("tomolab-gui-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  write_scanner();
  g_test_add_func("/gui/measure/roi", test_roi);
  g_test_add_func("/gui/measure/nema-truth", test_nema_truth);
  g_test_add_func("/gui/measure/compare", test_compare);
  g_test_add_func("/gui/measure/steer", test_steer);
  g_test_add_func("/gui/measure/frame-clock", test_frame_clock);
  int status = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(scanner_path);
  g_free(tmpdir);
  return status;
}
