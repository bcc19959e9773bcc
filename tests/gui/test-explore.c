/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Exploring: the kernel editor and the data view, driven as a person would.
 *
 * Kernel editor ("edit kernels live"): opened on the first kernel the run's last
 * sub-iteration called; the Joseph forward projection scaled by 2 is refused (the run never
 * calls it) with the kernels it runs instead; a syntax error
 * in the EM kernel of the run is marked at its line while the run goes on with the kernel it
 * had; an edited EM kernel is timed under its own label from the next sub-iteration; revert
 * gives the built-ins back.
 *
 * Data view ("see the data"): the events histogrammed into a sinogram add up to the event
 * count; after a sub-iteration the expected plane (D A x of the current image) and the
 * residual appear, and the residual is measured - expected voxel by voxel. */
#include "tl-gui-test.h"
#include "tl-kernel-editor.h"
#include "tl-data-view.h"
#include "tl-plot.h"
#include "tl-window-private.h" /* the dataset's event count */
#include "tl-side-panel.h"
#include "tl-profile-view.h"
#include "pet/scanner/tl-scanner.h"
#include "pet/data/tl-sinogram-hist.h"
#include "ct/tl-ct-data.h"
#include <string.h>

static char *tmpdir, *scanner_path;

static void write_scanner(void) {
  TlScannerLayout l = {0};
  l.kind = TL_SCANNER_RING;
  l.n_rings = 4;
  l.n_sides = 12;
  l.crystals_per_side = 4;
  l.module_rings = 4;
  l.radius_mm = 30;
  l.crystal_pitch_mm = 4;
  l.ring_pitch_mm = 4;
  g_autoptr(GError) error = NULL;
  g_autoptr(TlScanner) s = tl_scanner_new_from_layout("editor-test-ring", &l, NULL, &error);
  g_assert_no_error(error);
  scanner_path = g_build_filename(tmpdir, "ring.scanner", NULL);
  g_assert_true(tl_scanner_save(s, scanner_path, &error));
}

static gboolean editor_idle(TlWindow *w, gpointer d) { return !tl_kernel_editor_is_busy(d); }

static void apply(TlWindow *win, TlKernelEditor *ed) {
  tl_kernel_editor_apply(ed);
  g_assert_true(tl_kernel_editor_is_busy(ed));
  g_assert_true(tl_gui_wait_for(win, editor_idle, ed));
}

static char *replace_once(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static guint line_of(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  g_assert_nonnull(at);
  guint line = 1;
  for (const char *c = text; c < at; c++) line += *c == '\n';
  return line;
}

static void step_once(TlWindow *win) {
  guint before = tl_window_get_sub_iterations(win);
  tl_gui_activate(win, "step", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(before + 1)));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_null(tl_window_get_last_error(win));
}

static TlWindow *window_with_run(guint events) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 900, 700);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  TlSidePanel *panel = tl_window_get_side_panel(win);
  tl_side_panel_set_algorithm(panel, TRUE, 3, 50);
  GObject *proj = gtk_widget_get_template_child(GTK_WIDGET(panel), TL_TYPE_SIDE_PANEL, "projector_row");
  adw_combo_row_set_selected(ADW_COMBO_ROW(proj), 1); /* Joseph */
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", "cylinder");
  g_variant_dict_insert(&d, "scanner", "s", scanner_path);
  g_variant_dict_insert(&d, "events", "d", (double)events);
  g_variant_dict_insert(&d, "coarsen", "u", 2);
  g_variant_dict_insert(&d, "seed", "t", (guint64)3);
  tl_gui_activate(win, "simulate", g_variant_dict_end(&d));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  return win;
}

static void test_edit_apply_revert(void) {
  TlWindow *win = window_with_run(20000);
  step_once(win);
  const TlProfile *p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "em joseph"));
  TlContext *ctx = tl_window_get_context(win);

  /* opened with no name: the first kernel the last sub-iteration called (Joseph's EM pass:
   * pet_em_rec of the plane path on a CPU device, this ring having no TOF; pet_em on a GPU),
   * the status says so */
  gboolean cpu = tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  tl_gui_activate(win, "edit-kernel", g_variant_new_string(""));
  TlKernelEditor *ed = tl_window_get_kernel_editor(win);
  g_assert_nonnull(ed);
  g_assert_cmpstr(tl_kernel_editor_get_kernel(ed), ==, cpu ? "pet_em_rec" : "pet_em");
  g_test_message("status: %s", tl_kernel_editor_get_status(ed));
  g_assert_nonnull(strstr(tl_kernel_editor_get_status(ed), "sub-iteration called it"));

  /* the Joseph forward projection, weights scaled by 2: this OSEM run never calls it (its EM
   * pass projects), so the edit is refused with the reason and nothing is installed */
  tl_gui_activate(win, "edit-kernel", g_variant_new_string("pet_forward"));
  g_assert_cmpstr(tl_kernel_editor_get_kernel(ed), ==, "pet_forward");
  g_assert_nonnull(strstr(tl_kernel_editor_get_status(ed), "did not call it"));
  g_autofree char *fwd = tl_kernel_editor_get_text(ed);
  g_assert_nonnull(strstr(fwd, "pet_joseph"));
  g_autofree char *twice = replace_once(fwd, "y = pet_atten(pc.tl_base + i, l) * pet_trace(",
                                        "y = 2.0 * pet_atten(pc.tl_base + i, l) * pet_trace(");
  tl_kernel_editor_set_text(ed, twice);
  apply(win, ed);
  const char *status = tl_kernel_editor_get_status(ed);
  g_test_message("status: %s", status);
  g_assert_nonnull(strstr(status, "Not installed"));
  g_assert_nonnull(strstr(status, "pet_forward is not called by this run"));
  g_assert_nonnull(strstr(status, cpu ? "pet_em_rec" : "pet_em"));
  g_assert_cmpuint(tl_kernel_editor_get_error_lines(ed)->len, ==, 0);
  g_assert_false(tl_kernels_replaced(ctx, "pet_forward"));

  /* a syntax error in the run's EM kernel: marked at its line, the run goes on */
  tl_gui_activate(win, "edit-kernel", g_variant_new_string("pet_em"));
  g_assert_cmpstr(tl_kernel_editor_get_kernel(ed), ==, "pet_em");
  g_autofree char *em = tl_kernel_editor_get_text(ed);
  g_autofree char *bad = replace_once(em, "void main() {", "void main() {\n  not_a_thing = 1;");
  guint bad_line = line_of(bad, "not_a_thing");
  tl_kernel_editor_set_text(ed, bad);
  apply(win, ed);
  GArray *lines = tl_kernel_editor_get_error_lines(ed);
  g_assert_cmpuint(lines->len, >=, 1);
  g_assert_cmpuint(g_array_index(lines, guint, 0), ==, bad_line);
  g_assert_nonnull(strstr(tl_kernel_editor_get_status(ed), "Does not compile"));
  g_assert_false(tl_kernels_replaced(ctx, "pet_em"));
  step_once(win);
  p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "em joseph"));
  g_assert_null(tl_profile_lookup(p, "em joseph (edited)"));

  /* the EM kernel as it was, applied: the next sub-iteration times it as edited, and the
   * convergence plot marks it as it marks any setting changed mid-run */
  TlPlot *conv = tl_window_get_convergence_plot(win);
  guint markers = tl_plot_n_markers(conv);
  tl_kernel_editor_set_text(ed, em);
  apply(win, ed);
  g_assert_cmpuint(tl_kernel_editor_get_error_lines(ed)->len, ==, 0);
  g_assert_true(tl_kernels_replaced(ctx, "pet_em"));
  step_once(win);
  g_assert_cmpuint(tl_plot_n_markers(conv), ==, markers + 1);
  g_assert_cmpfloat(tl_plot_get_marker(conv, markers), ==, tl_window_get_sub_iterations(win) - 0.5);
  p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "em joseph (edited)"));

  /* revert both */
  tl_kernel_editor_revert(ed);
  g_assert_true(tl_gui_wait_for(win, editor_idle, ed));
  g_assert_false(tl_kernels_replaced(ctx, "pet_em"));
  tl_gui_activate(win, "edit-kernel", g_variant_new_string("pet_forward"));
  g_autofree char *kept = tl_kernel_editor_get_text(ed);
  g_assert_cmpstr(kept, ==, twice); /* the session keeps the edited text */
  tl_kernel_editor_revert(ed);
  g_assert_true(tl_gui_wait_for(win, editor_idle, ed));
  g_assert_false(tl_kernels_replaced(ctx, "pet_forward"));
  g_autofree char *back = tl_kernel_editor_get_text(ed);
  g_assert_cmpstr(back, ==, fwd);
  step_once(win);
  p = tl_profile_view_get_profile(tl_window_get_profile_view(win));
  g_assert_nonnull(tl_profile_lookup(p, "em joseph"));

  /* save and open a kernel file */
  g_autofree char *path = g_build_filename(tmpdir, "fwd.comp", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(tl_kernel_editor_save_file(ed, path, &error));
  tl_kernel_editor_set_text(ed, "// nothing");
  g_assert_true(tl_kernel_editor_load_file(ed, path, &error));
  g_autofree char *loaded = tl_kernel_editor_get_text(ed);
  g_assert_cmpstr(loaded, ==, fwd);
  tl_gui_destroy_window(win);
}

static void test_data_view(void) {
  TlWindow *win = window_with_run(15000);
  tl_gui_activate(win, "show-data", NULL);
  TlDataView *dv = tl_window_get_data_view(win);
  g_assert_nonnull(dv);
  g_assert_true(tl_gui_wait_for(win, tl_gui_data_idle, dv));
  /* the simulation's events: every one in the sinogram (4 rings, all ring differences) */
  g_assert_nonnull(win->dataset);
  g_assert_nonnull(win->dataset->lm);
  gint64 total = tl_data_view_get_total(dv), outside = tl_data_view_get_outside(dv);
  g_assert_cmpint(outside, ==, 0);
  g_assert_cmpfloat((double)total, ==, (double)win->dataset->lm->n_events);
  /* one sub-iteration: the expected plane arrives; residual = measured - expected */
  guint before = tl_data_view_get_expected_updates(dv);
  step_once(win);
  g_assert_true(tl_gui_wait_for(win, tl_gui_expected_after, GUINT_TO_POINTER(before + 1)));
  guint nv, nt;
  const float *m = tl_data_view_get_plane(dv, 0, &nv, &nt);
  const float *e = tl_data_view_get_plane(dv, 1, NULL, NULL);
  const float *r = tl_data_view_get_plane(dv, 2, NULL, NULL);
  g_assert_nonnull(m);
  g_assert_nonnull(e);
  g_assert_nonnull(r);
  double sm = 0, se = 0;
  for (guint i = 0; i < nv * nt; i++) {
    g_assert_cmpfloat(r[i], ==, m[i] - e[i]);
    g_assert_cmpfloat(e[i], >=, 0);
    sm += m[i], se += e[i];
  }
  /* the image predicts the plane's counts to within a loose factor after one sub-iteration */
  g_assert_cmpfloat(sm, >, 0);
  g_assert_cmpfloat(se, >, 0.3 * sm);
  g_assert_cmpfloat(se, <, 3.0 * sm);
  /* another plane: the measured plane changes, the expected follows */
  before = tl_data_view_get_expected_updates(dv);
  tl_data_view_set_plane(dv, 1, 0);
  g_assert_true(tl_gui_wait_for(win, tl_gui_expected_after, GUINT_TO_POINTER(before + 1)));
  tl_gui_destroy_window(win);
}

/* CT: a view's measured projection, its re-projection after a step, residual = difference. */
static void test_data_view_ct(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "modality", "s", "ct");
  g_variant_dict_insert(&d, "beam", "s", "parallel");
  g_variant_dict_insert(&d, "size", "u", 24u);
  g_variant_dict_insert(&d, "views", "u", 20u);
  g_variant_dict_insert(&d, "detector", "u", 32u);
  tl_gui_activate(win, "simulate", g_variant_dict_end(&d));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  tl_gui_activate(win, "show-data", NULL);
  TlDataView *dv = tl_window_get_data_view(win);
  g_assert_nonnull(dv);
  g_assert_cmpint(tl_data_view_get_total(dv), ==, (gint64)tl_ct_data_n_values(win->dataset->ct));
  guint before = tl_data_view_get_expected_updates(dv);
  step_once(win);
  g_assert_true(tl_gui_wait_for(win, tl_gui_expected_after, GUINT_TO_POINTER(before + 1)));
  tl_data_view_set_plane(dv, 0, 5);
  g_assert_true(tl_gui_wait_for(win, tl_gui_expected_after, GUINT_TO_POINTER(before + 2)));
  guint nv, nu;
  const float *m = tl_data_view_get_plane(dv, 0, &nv, &nu);
  const float *e = tl_data_view_get_plane(dv, 1, NULL, NULL);
  const float *r = tl_data_view_get_plane(dv, 2, NULL, NULL);
  g_assert_cmpuint(nu, ==, 32);
  g_assert_nonnull(e);
  /* the measured plane is view 5 of the scan (row 0 = the last detector row) */
  const TlCtData *ct = win->dataset->ct;
  const float *p5 = ct->proj + (gsize)5 * nu * nv;
  double sm = 0, se = 0;
  for (guint row = 0; row < nv; row++)
    for (guint u = 0; u < nu; u++) {
      guint i = row * nu + u;
      g_assert_cmpfloat(m[i], ==, p5[(gsize)(nv - 1 - row) * nu + u]);
      g_assert_cmpfloat(r[i], ==, m[i] - e[i]);
      sm += m[i], se += e[i];
    }
  g_assert_cmpfloat(se, >, 0.2 * sm);
  g_assert_cmpfloat(se, <, 5.0 * sm);
  tl_gui_destroy_window(win);
}

/* A STIR sinogram opens by content, says so, and reconstructs binned. */
static void test_open_sinogram(void) {
  GError *error = NULL;
  g_autoptr(TlScanner) sc = tl_scanner_load(scanner_path, &error);
  g_assert_no_error(error);
  g_autoptr(TlListmode) lm = tl_listmode_new(tl_scanner_copy(sc), 4000);
  g_autoptr(GRand) r = g_rand_new_with_seed(4);
  for (guint i = 0; i < lm->n_events; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, sc->n_crystals);
      e->b = g_rand_int_range(r, 0, sc->n_crystals);
    } while (!tl_scanner_pair_allowed(sc, e->a, e->b));
  }
  g_autoptr(TlSinogram) s = tl_sinogram_new_stir(sc, 1, G_MAXUINT, &error);
  g_assert_true(tl_sinogram_add_events(s, lm, NULL, &error));
  g_autofree char *path = g_build_filename(tmpdir, "data.hs", NULL);
  g_assert_true(tl_sinogram_save(s, path, &error));
  g_assert_no_error(error);

  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  tl_window_open_file(win, path);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_null(tl_window_get_last_error(win));
  const char *format = tl_side_panel_get_dataset_format(tl_window_get_side_panel(win));
  g_assert_true(g_str_has_prefix(format, "stir:"));
  g_assert_nonnull(win->dataset->bins);
  g_assert_cmpfloat(win->dataset->bin_counts, ==, 4000);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  step_once(win);
  g_assert_cmpuint(tl_window_get_sub_iterations(win), ==, 1);
  tl_gui_destroy_window(win);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  tmpdir = g_dir_make_tmp("tomolab-editor-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  write_scanner();
  /* The kernel editor runs in a process of its own (meson test explore-editor,
   * TL_EXPLORE=editor), outside the sanitizer run: its GtkSourceView takes the process past 2048
   * quarks and GLib drops its first quark array, 16 KiB, which LeakSanitizer reports
   * (docs/reliability.md). */
  const char *only = g_getenv("TL_EXPLORE");
  if (g_strcmp0(only, "editor") == 0) {
    g_test_add_func("/gui/kernel-editor/edit-apply-revert", test_edit_apply_revert);
  } else {
    g_test_add_func("/gui/data-view/sinogram", test_data_view);
    g_test_add_func("/gui/open/sinogram", test_open_sinogram);
    g_test_add_func("/gui/data-view/ct", test_data_view_ct);
  }
  int status = g_test_run();
  tl_test_remove_tree(tmpdir);
  g_free(scanner_path);
  g_free(tmpdir);
  return status;
}
