/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The window's corrections (issue 13 item 7): the side panel's Corrections group and the data
 * view's estimate-vs-data profiles, driven as a person or a script (--set) would. Each case is
 * its own process (meson tests corrections-rows, -model, -units, -profiles: `-p PATH`), and
 * each checks the window against references computed here from the data and the library's
 * estimators, in double:
 *
 *  rows      which choices each row offers for data with / without delayeds and with /
 *            without attenuation, the tooltips saying why not, the normalisation's switch, a
 *            normalisation of another scanner failing the run with a message naming it;
 *  model     a simulated scan with delayeds, scatter and crystal efficiencies reconstructed
 *            with the normalisation, randoms from the delayeds and SSS (one round) set through
 *            --set's keys: the job's randoms equal the fan-sum fit of the delayeds made here,
 *            its tail-fit scale equals k = sum_tail (y - r) / sum_tail e S computed here pair by
 *            pair (e_ab = eps_a eps_b: the scatter term takes the crystal efficiencies, not the
 *            geometric factors), and the additive term the solver divides by sums to
 *            sum over events of (s_a s_b + e_ab k S_ab), before and after the scatter round;
 *  units     calibrated, the image shown and saved is the iterate times DC / (T F beta) written
 *            here from the decay law, the colour bars say Bq/mL (a.u. before), a saved NIfTI
 *            keeps the unit and opened again shows it; a bad factor fails with its value;
 *  profiles  the data view's plane profiles: measured = the events of the plane counted here,
 *            randoms = sum of s_a s_b over the plane's pairs, scatter = sum of e_ab S_ab, and
 *            expected - randoms - scatter = sum of n_ab exp(-int mu) int x (CPU ray integrals);
 *            the CSV export holds the same series. */
#include "tl-gui-test.h"
#include "tl-data-view.h"
#include "tl-plot.h"
#include "tl-side-panel.h"
#include "tl-window-private.h" /* the runner and the dataset */
#include "image/tl-phantom.h"
#include "image/tl-ray-integral.h"
#include "pet/correct/tl-norm.h"
#include "pet/correct/tl-randoms.h"
#include "pet/simulate/tl-simulate.h"
#include "pet/correct/tl-sss.h"
#include "pet/correct/tl-units.h"
#include <math.h>
#include <string.h>

static char *tmpdir;

/* The data: a water cylinder in a 4-ring scanner, with scatter, randoms from singles (and so
 * delayeds) and crystal efficiencies; its mu-map, the true normalisation (the efficiencies). */
typedef struct {
  TlScanner *scanner;
  TlImageGrid grid;     /* the window's grid for a file (tl-dataset.c: voxels x 2) */
  TlImage *activity, *mu;
  TlListmode *lm;
  TlNorm *norm;
  char *scan_path, *mu_path, *norm_path, *scanner_path;
} Data;

static Data data;

static TlScanner *ring_scanner(guint rings, GError **error) {
  TlScannerLayout l = {0};
  l.kind = TL_SCANNER_RING;
  l.n_rings = rings;
  l.n_sides = 12;
  l.crystals_per_side = 8;
  l.module_rings = rings;
  l.radius_mm = 70;
  l.crystal_pitch_mm = 4;
  l.ring_pitch_mm = 4;
  return tl_scanner_new_from_layout(rings == 4 ? "corrections-ring" : "other-ring", &l, NULL, error);
}

static void make_data(void) {
  GError *error = NULL;
  data.scanner = ring_scanner(4, &error);
  g_assert_no_error(error);
  data.scanner_path = g_build_filename(tmpdir, "ring.scanner", NULL);
  g_assert_true(tl_scanner_save(data.scanner, data.scanner_path, &error));
  /* the grid the window opens a file on: the dataset's (compute/dataset/tl-dataset.h) */
  data.grid = tl_dataset_pet_grid(data.scanner);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  po.radius_mm = 35; /* half the ring: lines missing it make the scatter's tail */
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("cylinder", &po, &data.grid, &error);
  g_assert_no_error(error);
  g_assert_true(tl_phantom_rasterise(ph, &data.grid, 0, &data.activity, &data.mu, &error));
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.seed = 11;
  sp.events = 0; /* the decays are activity x duration */
  sp.scatter = TRUE;
  sp.activity_bq = 2e7;
  sp.duration_s = 0.15;
  sp.efficiency_spread = 0.15;
  sp.n_threads = 2;
  g_autofree float *eff = g_new(float, data.scanner->n_crystals);
  sp.efficiencies_out = eff;
  TlSimulateStats st;
  data.lm = tl_simulate(data.scanner, data.activity, data.mu, &sp, NULL, NULL, NULL, &st, &error);
  g_assert_no_error(error);
  g_test_message("data: %" G_GUINT64_FORMAT " prompts (%" G_GUINT64_FORMAT " trues, %"
                 G_GUINT64_FORMAT " scattered, %" G_GUINT64_FORMAT " randoms), %" G_GUINT64_FORMAT
                 " delayeds, %g s", data.lm->n_events, st.trues, st.scattered, st.randoms,
                 data.lm->n_delayed, data.lm->duration_s);
  g_assert_cmpuint(data.lm->n_delayed, >, 500);
  g_assert_cmpuint(st.scattered, >, 1000);
  data.scan_path = g_build_filename(tmpdir, "scan.tlm", NULL);
  g_assert_true(tl_listmode_save(data.lm, data.scan_path, &error));
  /* MetaImage: the window reads a mu-map of any image format (tl_image_load, the table's) */
  data.mu_path = g_build_filename(tmpdir, "mu.mha", NULL);
  g_assert_true(tl_image_save(data.mu, data.mu_path, &error));
  /* the true normalisation: the drawn efficiencies, no geometric classes */
  data.norm = tl_norm_new(data.scanner, FALSE, FALSE, &error);
  g_assert_no_error(error);
  memcpy(data.norm->efficiency, eff, sizeof(float) * data.scanner->n_crystals);
  g_assert_true(tl_norm_update(data.norm, "test", &error));
  data.norm_path = g_build_filename(tmpdir, "ring.tln", NULL);
  g_assert_true(tl_norm_save(data.norm, data.norm_path, &error));
  g_assert_no_error(error);
}

static void free_data(void) {
  tl_scanner_free(data.scanner);
  tl_image_free(data.activity);
  tl_image_free(data.mu);
  tl_listmode_free(data.lm);
  tl_norm_free(data.norm);
  g_free(data.scan_path);
  g_free(data.mu_path);
  g_free(data.norm_path);
  g_free(data.scanner_path);
}

/* ---- window helpers ---- */

static GObject *panel_child(TlWindow *win, const char *name) {
  return gtk_widget_get_template_child(GTK_WIDGET(tl_window_get_side_panel(win)), TL_TYPE_SIDE_PANEL, name);
}

static TlWindow *new_window(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 1000, 800);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  return win;
}

/* Settings changed before the first sub-iteration prepare the run again: wait for it. */
static void wait_prepared(TlWindow *win) {
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_null(tl_window_get_last_error(win));
}

static gboolean showing(TlWindow *win, gpointer name) {
  return g_strcmp0(tl_window_get_dataset_name(win), name) == 0;
}

/* Opens a file as the new dataset (answering "Replace the current reconstruction?"). */
static void open_file(TlWindow *win, const char *path) {
  tl_window_open_file(win, path);
  if (tl_window_get_replace_dialog(win))
    tl_gui_activate(win, "confirm-replace", g_variant_new_boolean(TRUE));
  g_autofree char *base = g_path_get_basename(path);
  g_assert_true(tl_gui_wait_for(win, showing, base));
}

static void open_scan(TlWindow *win, const char *path) {
  open_file(win, path);
  wait_prepared(win);
}

static void step_once(TlWindow *win) {
  guint before = tl_window_get_sub_iterations(win);
  tl_gui_activate(win, "step", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(before + 1)));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_null(tl_window_get_last_error(win));
}

static void simulate_in_window(TlWindow *win, gboolean attenuation) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", "cylinder");
  g_variant_dict_insert(&d, "scanner", "s", data.scanner_path);
  g_variant_dict_insert(&d, "events", "d", 5000.0);
  g_variant_dict_insert(&d, "coarsen", "u", 2);
  g_variant_dict_insert(&d, "attenuation", "b", attenuation);
  tl_gui_activate(win, "simulate", g_variant_dict_end(&d));
  if (tl_window_get_replace_dialog(win))
    tl_gui_activate(win, "confirm-replace", g_variant_new_boolean(TRUE));
  wait_prepared(win);
}

/* --set's keys as tl-application.c puts them into the a{sv}. */
static void apply_set(TlWindow *win, const char *first_key, ...) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  va_list ap;
  va_start(ap, first_key);
  for (const char *k = first_key; k; k = va_arg(ap, const char *)) {
    if (g_str_equal(k, "scatter-rounds"))
      g_variant_dict_insert(&d, k, "u", va_arg(ap, guint));
    else if (g_str_equal(k, "calibration") || g_str_equal(k, "duration") || g_str_equal(k, "frame-start"))
      g_variant_dict_insert(&d, k, "d", va_arg(ap, double));
    else
      g_variant_dict_insert(&d, k, "s", va_arg(ap, const char *));
  }
  va_end(ap);
  g_autoptr(GVariant) set = g_variant_ref_sink(g_variant_dict_end(&d));
  tl_window_apply_settings(win, set);
}

static gboolean read_model(TlWindow *win, TlJobModel *m) {
  g_autoptr(GError) error = NULL;
  gboolean ok = tl_runner_read_model(win->runner, m, &error);
  g_assert_no_error(error);
  return ok;
}

/* ---- references written here ---- */

/* sum over the events of the additive term the model should have: s_a s_b + e_ab k S_ab */
static double additive_reference(const TlRandoms *r, const TlScatterEstimate *s, const TlNorm *n) {
  double sum = 0;
  for (guint64 i = 0; i < data.lm->n_events; i++) {
    guint a = data.lm->events[i].a, b = data.lm->events[i].b;
    sum += r->factor[a] * r->factor[b];
    if (s) sum += (double)n->efficiency[a] * n->efficiency[b] * tl_scatter_estimate_pair(s, a, b);
  }
  return sum;
}

/* ---- rows ---- */

static void test_rows(void) {
  TlWindow *win = new_window();
  TlSidePanel *panel = tl_window_get_side_panel(win);
  GtkWidget *randoms_row = GTK_WIDGET(panel_child(win, "randoms_row"));
  GtkWidget *scatter_row = GTK_WIDGET(panel_child(win, "scatter_row"));
  GtkWidget *norm_switch = GTK_WIDGET(panel_child(win, "norm_switch"));
  GtkWidget *rounds_row = GTK_WIDGET(panel_child(win, "scatter_rounds_row"));
  GtkWidget *restart_row = GTK_WIDGET(panel_child(win, "scatter_restart_row"));
  GtkSwitch *restart_switch = GTK_SWITCH(panel_child(win, "scatter_restart_switch"));
  /* simulated in the window: no delayeds; not attenuated, so no attenuation correction */
  simulate_in_window(win, FALSE);
  g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(panel_child(win, "pet_group"))));
  g_assert_false(tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_DELAYEDS));
  g_assert_false(tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_SINGLES)); /* no singles */
  g_assert_nonnull(gtk_widget_get_tooltip_text(randoms_row));
  g_assert_false(tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, 2, FALSE));
  g_assert_nonnull(strstr(gtk_widget_get_tooltip_text(scatter_row), "needs attenuation"));
  g_assert_false(gtk_widget_get_visible(rounds_row));
  g_assert_false(gtk_widget_get_visible(restart_row));
  g_assert_false(gtk_widget_get_sensitive(norm_switch)); /* no file chosen */
  g_assert_false(tl_side_panel_set_norm(panel, TRUE));
  TlPetJobOptions o;
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.randoms, ==, TL_PET_RANDOMS_OFF);
  g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_OFF);
  g_assert_null(o.norm_path);
  g_assert_false(o.quant);
  tl_pet_job_options_clear(&o);

  /* attenuated: the phantom's map by default, and SSS offered with its rounds */
  simulate_in_window(win, TRUE);
  g_assert_null(strstr(gtk_widget_get_tooltip_text(scatter_row), "needs attenuation"));
  g_assert_true(tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, 3, FALSE));
  wait_prepared(win);
  g_assert_true(gtk_widget_get_visible(rounds_row));
  g_assert_true(gtk_widget_get_visible(restart_row));
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.mu, ==, TL_PET_MU_PHANTOM);
  g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_SSS);
  g_assert_cmpuint(o.scatter_rounds, ==, 3);
  g_assert_false(o.scatter_restart);
  tl_pet_job_options_clear(&o);
  /* the restart switch reaches the options and the run */
  gtk_switch_set_active(restart_switch, TRUE);
  wait_prepared(win);
  tl_side_panel_get_options(panel, &o);
  g_assert_true(o.scatter_restart);
  tl_pet_job_options_clear(&o);
  {
    g_autoptr(GError) e = NULL;
    g_autoptr(TlRunSpec) run = tl_window_get_run(win, NULL, &e);
    g_assert_no_error(e);
    g_assert_true(run->scatter_restart);
    g_assert_cmpuint(tl_run_spec_total_iterations(run), ==, 4 * tl_run_spec_iterations(run));
  }
  gtk_switch_set_active(restart_switch, FALSE);
  wait_prepared(win);
  /* attenuation correction off: SSS is no longer offered, the scatter falls back to off */
  adw_combo_row_set_selected(ADW_COMBO_ROW(panel_child(win, "mu_row")), 0);
  wait_prepared(win);
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.mu, ==, TL_PET_MU_NONE);
  g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_OFF);
  tl_pet_job_options_clear(&o);
  g_assert_false(tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, 0, FALSE));

  /* a scan with delayeds (a file): randoms from them offered; a mu-map file brings SSS back */
  open_scan(win, data.scan_path);
  g_assert_null(gtk_widget_get_tooltip_text(randoms_row));
  /* simulated with randoms from singles: the file carries its singles rates too */
  g_assert_true(tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_SINGLES));
  wait_prepared(win);
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.randoms, ==, TL_PET_RANDOMS_SINGLES);
  tl_pet_job_options_clear(&o);
  g_assert_true(tl_side_panel_set_randoms(panel, TL_PET_RANDOMS_DELAYEDS));
  wait_prepared(win);
  g_assert_false(tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, 0, FALSE));
  tl_gui_activate(win, "attenuation-file", g_variant_new_string(data.mu_path));
  wait_prepared(win);
  g_assert_true(tl_side_panel_set_scatter(panel, TL_PET_SCATTER_SSS, 1, FALSE));
  wait_prepared(win);
  /* the normalisation: its switch once a file is chosen, on */
  tl_gui_activate(win, "norm-file", g_variant_new_string(data.norm_path));
  wait_prepared(win);
  g_assert_true(gtk_widget_get_sensitive(norm_switch));
  g_assert_true(gtk_switch_get_active(GTK_SWITCH(norm_switch)));
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.randoms, ==, TL_PET_RANDOMS_DELAYEDS);
  g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_SSS);
  g_assert_cmpint(o.mu, ==, TL_PET_MU_FILE);
  g_assert_cmpstr(o.norm_path, ==, data.norm_path);
  /* the frame's default from the data */
  g_assert_cmpfloat(o.duration_s, ==, data.lm->duration_s);
  tl_pet_job_options_clear(&o);
  g_assert_true(tl_side_panel_set_norm(panel, FALSE));
  wait_prepared(win);
  tl_side_panel_get_options(panel, &o);
  g_assert_null(o.norm_path);
  tl_pet_job_options_clear(&o);

  /* a normalisation of another scanner: the run fails, the message names the file */
  g_autoptr(GError) error = NULL;
  g_autoptr(TlScanner) other = ring_scanner(5, &error);
  g_autoptr(TlNorm) wrong = tl_norm_new(other, TRUE, TRUE, &error);
  g_assert_no_error(error);
  g_autofree char *wrong_path = g_build_filename(tmpdir, "other.tln", NULL);
  g_assert_true(tl_norm_save(wrong, wrong_path, &error));
  tl_gui_activate(win, "norm-file", g_variant_new_string(wrong_path));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_FAILED)));
  const char *msg = tl_window_get_last_error(win);
  g_test_message("%s", msg);
  g_assert_nonnull(msg);
  g_assert_nonnull(strstr(msg, "other.tln"));
  g_assert_nonnull(strstr(msg, "Normalisation"));
  tl_gui_destroy_window(win);
}

/* ---- the model the job really uses ---- */

static void test_model(void) {
  TlWindow *win = new_window();
  TlSidePanel *panel = tl_window_get_side_panel(win);
  open_scan(win, data.scan_path);
  tl_side_panel_set_algorithm(panel, TRUE, 2, 2);
  /* as `tomolab --set attenuation=mu.nii --set norm=ring.tln --set randoms=delayeds --set
   * scatter=sss --set scatter-rounds=1 scan.tlm` gives them: the run's schedule, the CLI's, is
   * 2 iterations, the estimate, 2 more (tl_run_spec_scatter_due) */
  apply_set(win, "mu", data.mu_path, "norm", data.norm_path, "randoms", "delayeds",
            "scatter", "sss", "scatter-rounds", 1u, NULL);
  wait_prepared(win);
  TlPetJobOptions o;
  tl_side_panel_get_options(panel, &o);
  g_assert_cmpint(o.randoms, ==, TL_PET_RANDOMS_DELAYEDS);
  g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_SSS);
  g_assert_cmpuint(o.scatter_rounds, ==, 1);
  g_assert_cmpstr(o.norm_path, ==, data.norm_path);
  g_assert_cmpstr(o.mu_path, ==, data.mu_path);
  tl_pet_job_options_clear(&o);

  /* the references: the fan-sum randoms of the delayeds, the counts per pair */
  g_autoptr(GError) error = NULL;
  g_autoptr(TlRandoms) randoms = tl_randoms_from_delayeds(data.scanner, data.lm->delayed,
                                                          data.lm->n_delayed, &error);
  g_assert_no_error(error);

  /* iteration 1: randoms only (the first reconstruction is SSS's activity) */
  step_once(win);
  step_once(win);
  TlJobModel m;
  g_assert_true(read_model(win, &m));
  g_assert_nonnull(m.randoms);
  g_assert_nonnull(m.norm);
  g_assert_nonnull(m.mu);
  g_assert_null(m.scatter);
  g_assert_cmpuint(m.scatter_rounds, ==, 0);
  g_assert_cmpstr(m.norm->sha256, ==, data.norm->sha256);
  g_assert_cmpuint(m.randoms->n_crystals, ==, randoms->n_crystals);
  for (guint i = 0; i < randoms->n_crystals; i++)
    g_assert_cmpfloat(m.randoms->factor[i], ==, randoms->factor[i]);
  g_assert_cmpuint(m.n_data, ==, data.lm->n_events);
  double ref = additive_reference(randoms, NULL, data.norm);
  g_test_message("iteration 1: additive term %.6g, reference %.6g (relative %.1e; randoms total "
                 "%.6g)", m.additive_sum, ref, fabs(m.additive_sum / ref - 1), randoms->total);
  g_assert_cmpfloat(fabs(m.additive_sum - ref), <=, 1e-5 * ref);
  tl_job_model_clear(&m);

  /* iteration 2 has no estimate before it either; the step after it starts with the round */
  TlPlot *conv = tl_window_get_convergence_plot(win);
  guint markers = tl_plot_n_markers(conv);
  step_once(win);
  step_once(win);
  g_assert_cmpuint(tl_plot_n_markers(conv), ==, markers);
  g_assert_true(read_model(win, &m));
  g_assert_null(m.scatter);
  tl_job_model_clear(&m);
  step_once(win);
  g_assert_cmpuint(tl_plot_n_markers(conv), ==, markers + 1);
  g_assert_cmpfloat(tl_plot_get_marker(conv, markers), ==, 4.5);
  g_assert_true(read_model(win, &m));
  g_assert_cmpuint(m.scatter_rounds, ==, 1);
  g_assert_nonnull(m.scatter);
  /* k = sum_tail (y - r) / sum_tail n S (Watson's tail fit with Poisson weights), pair by pair */
  g_autoptr(TlScatterTail) tail = tl_scatter_tail_new(data.scanner, data.mu, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) counts = tl_listmode_histogram(data.lm);
  GHashTable *y = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autofree gint64 *keys = g_new(gint64, counts->len);
  for (guint i = 0; i < counts->len; i++) {
    TlBin *b = &g_array_index(counts, TlBin, i);
    keys[i] = (gint64)MIN(b->a, b->b) << 32 | MAX(b->a, b->b);
    g_hash_table_insert(y, &keys[i], b);
  }
  double num = 0, den = 0, total = 0;
  guint64 tail_pairs = 0;
  const TlScatterEstimate *e = m.scatter;
  for (guint a = 0; a < data.scanner->n_crystals; a++)
    for (guint b = a + 1; b < data.scanner->n_crystals; b++) {
      if (!tl_scanner_pair_allowed(data.scanner, a, b)) continue;
      double nS = (double)data.norm->efficiency[a] * data.norm->efficiency[b] *
                  tl_scatter_estimate_pair(e, a, b) / e->scale;
      total += nS;
      if (!tl_scatter_tail_has(tail, a, b)) continue;
      gint64 key = (gint64)a << 32 | b;
      const TlBin *bin = g_hash_table_lookup(y, &key);
      num += (bin ? bin->count : 0) - randoms->factor[a] * randoms->factor[b];
      den += nS;
      tail_pairs++;
    }
  g_hash_table_unref(y);
  double k = num / den;
  g_test_message("scatter round: k %.9g (job %.9g, relative %.1e) on %" G_GUINT64_FORMAT
                 " tail pairs, scatter total %.1f of %" G_GUINT64_FORMAT " prompts", k, e->scale,
                 fabs(e->scale / k - 1), tail_pairs, k * total, data.lm->n_events);
  g_assert_cmpuint(m.fit.tail_pairs, ==, tail_pairs);
  g_assert_cmpfloat(fabs(e->scale - k), <=, 1e-9 * fabs(k));
  g_assert_cmpfloat(k * total, >, 0.02 * data.lm->n_events); /* a scatter worth correcting */
  /* and the term the solver divides by: randoms + n S per event */
  double ref2 = additive_reference(randoms, e, data.norm);
  g_test_message("after the round: additive term %.6g, reference %.6g (relative %.1e)",
                 m.additive_sum, ref2, fabs(m.additive_sum / ref2 - 1));
  g_assert_cmpfloat(fabs(m.additive_sum - ref2), <=, 1e-5 * ref2);
  g_assert_cmpfloat(fabs(m.additive_sum - ref), >, 1e-3 * ref); /* the scatter is in it */
  tl_job_model_clear(&m);

  /* one round asked for: none after iteration 3 (the run's 8th and last step would finish it) */
  step_once(win);
  step_once(win);
  g_assert_true(read_model(win, &m));
  g_assert_cmpuint(m.scatter_rounds, ==, 1);
  tl_job_model_clear(&m);
  g_assert_cmpuint(tl_plot_n_markers(conv), ==, markers + 1);
  tl_gui_destroy_window(win);
}

/* ---- units ---- */

static gboolean saved(TlWindow *win, gpointer path) { return g_file_test(path, G_FILE_TEST_EXISTS); }

static void test_units(void) {
  TlWindow *win = new_window();
  TlSidePanel *panel = tl_window_get_side_panel(win);
  TlSliceView *axial = tl_window_get_slice_view(win, TL_VIEW_AXIAL);
  open_scan(win, data.scan_path);
  step_once(win);
  g_assert_cmpstr(tl_slice_view_get_unit(axial), ==, "counts / sensitivity (a.u.)");
  /* F-18 seen 30 min after the reference, the data's 0.15 s frame */
  const double F = 2.5e-3, start = 1800;
  g_assert_true(tl_side_panel_set_quant(panel, TRUE, F, "F18", start, NAN));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  step_once(win);
  g_assert_cmpstr(tl_slice_view_get_unit(axial), ==, "Bq/mL");
  for (int v = 0; v < TL_N_VIEWS; v++)
    g_assert_cmpstr(tl_slice_view_get_unit(tl_window_get_slice_view(win, v)), ==, "Bq/mL");
  /* the scale written here: A_0 = x DC / (T F beta), DC = e^(lambda t_s) lambda T / (1 - e^-lambda T) */
  const TlIsotope *f18 = tl_isotope_find("F18", NULL);
  double T = data.lm->duration_s, lambda = G_LN2 / f18->half_life_s;
  double dc = exp(lambda * start) * lambda * T / -expm1(-lambda * T);
  double scale = dc / (T * F * f18->positron_fraction);
  g_test_message("Bq/mL: DC %.9g, scale %.9g per count/sensitivity", dc, scale);
  TlJobModel m;
  g_assert_true(read_model(win, &m));
  const TlSlice *s = tl_slice_view_get_slice(axial);
  guint z = win->pos[2], nx = m.image->grid.dims[0], ny = m.image->grid.dims[1];
  g_assert_cmpuint(s->width, ==, nx);
  double worst = 0, peak = 0;
  for (guint i = 0; i < nx * ny; i++) {
    double want = scale * m.image->data[(gsize)z * nx * ny + i];
    worst = MAX(worst, fabs(s->data[i] - want));
    peak = MAX(peak, fabs(want));
  }
  g_test_message("shown against iterate x scale: worst %.3g of %.3g", worst, peak);
  g_assert_cmpfloat(peak, >, 0);
  g_assert_cmpfloat(worst, <=, 1e-6 * peak);
  /* saved: the unit travels in NIfTI's descrip; opened again, the colour bars show it */
  g_autofree char *out = g_build_filename(tmpdir, "bq.nii", NULL);
  tl_gui_activate(win, "save-image-to", g_variant_new_string(out));
  g_assert_true(tl_gui_wait_for(win, saved, out));
  tl_gui_spin(0.2);
  g_autoptr(GError) error = NULL;
  g_autoptr(TlImage) back = tl_image_load(out, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(back->unit, ==, "Bq/mL");
  double bworst = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&back->grid); i++)
    bworst = MAX(bworst, fabs(back->data[i] - scale * m.image->data[i]));
  g_assert_cmpfloat(bworst, <=, 1e-6 * peak);
  tl_job_model_clear(&m);
  open_file(win, out);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  g_assert_false(gtk_widget_get_sensitive(GTK_WIDGET(panel_child(win, "pet_group"))));
  g_assert_cmpstr(tl_slice_view_get_unit(axial), ==, "Bq/mL");
  /* a factor that is no number: the run says which value is wrong */
  open_scan(win, data.scan_path);
  GObject *cal = panel_child(win, "calibration_row");
  gtk_editable_set_text(GTK_EDITABLE(cal), "abc");
  g_signal_emit_by_name(cal, "apply");
  g_assert_true(gtk_widget_has_css_class(GTK_WIDGET(cal), "error"));
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_FAILED)));
  g_test_message("%s", tl_window_get_last_error(win));
  g_assert_nonnull(strstr(tl_window_get_last_error(win), "calibration factor nan"));
  tl_gui_destroy_window(win);
}

/* ---- the data view's profiles ---- */

static double series_sum(TlPlot *p, const char *name, guint *n) {
  for (guint s = 0; s < tl_plot_n_series(p); s++)
    if (g_str_equal(tl_plot_get_series_name(p, s), name)) {
      const double *x, *y;
      *n = tl_plot_get_series(p, s, &x, &y);
      double sum = 0;
      for (guint i = 0; i < *n; i++) sum += y[i];
      return sum;
    }
  g_assert_not_reached();
}

static void test_profiles(void) {
  /* a scatter estimate file: SSS of the true activity, at a known scale */
  g_autoptr(GError) error = NULL;
  TlSssParams sp;
  tl_sss_params_init(&sp);
  sp.detector_mm = 20;
  sp.n_threads = 2;
  g_autoptr(TlScatterEstimate) est = tl_sss_estimate(data.scanner, data.activity, data.mu, &sp,
                                                     NULL, NULL, &error);
  g_assert_no_error(error);
  /* scaled to 8 % of the prompts (the simulation's scatter fraction) */
  double unscaled = 0;
  for (guint a = 0; a < data.scanner->n_crystals; a++)
    for (guint b = a + 1; b < data.scanner->n_crystals; b++)
      if (tl_scanner_pair_allowed(data.scanner, a, b)) unscaled += tl_scatter_estimate_pair(est, a, b);
  est->scale = 0.08 * data.lm->n_events / unscaled;
  g_autofree char *est_path = g_build_filename(tmpdir, "scatter.tlsc", NULL);
  g_assert_true(tl_scatter_estimate_save(est, est_path, &error));
  g_autoptr(TlScatterEstimate) est_back = tl_scatter_estimate_load(est_path, &error);
  g_assert_no_error(error);

  TlWindow *win = new_window();
  open_scan(win, data.scan_path);
  apply_set(win, "mu", data.mu_path, "norm", data.norm_path, "randoms", "delayeds",
            "scatter", est_path, NULL);
  wait_prepared(win);
  tl_gui_activate(win, "show-data", NULL);
  TlDataView *dv = tl_window_get_data_view(win);
  g_assert_nonnull(dv);
  g_assert_true(tl_gui_wait_for(win, tl_gui_data_idle, dv));
  const guint ax = 1; /* ring 1 with itself */
  tl_data_view_set_plane(dv, 0, ax);
  guint before = tl_data_view_get_expected_updates(dv);
  step_once(win);
  g_assert_true(tl_gui_wait_for(win, tl_gui_expected_after, GUINT_TO_POINTER(before + 1)));
  TlPlot *p = tl_data_view_get_profile_plot(dv);
  g_assert_cmpuint(tl_plot_n_series(p), ==, 4);
  guint n, nt;
  tl_data_view_get_plane(dv, 0, NULL, &nt);
  double measured = series_sum(p, "measured", &n);
  g_assert_cmpuint(n, ==, nt);
  double expected = series_sum(p, "expected (D·A·x + randoms + scatter)", &n);
  double rnd = series_sum(p, "randoms", &n);
  double sct = series_sum(p, "scatter", &n);

  /* the references: the events of ring 1 with ring 1; the plane's pairs' randoms and scatter */
  g_autoptr(TlRandoms) randoms = tl_randoms_from_delayeds(data.scanner, data.lm->delayed,
                                                          data.lm->n_delayed, &error);
  guint C = data.scanner->crystals_per_ring;
  double m_ref = 0;
  for (guint64 i = 0; i < data.lm->n_events; i++)
    m_ref += data.lm->events[i].a / C == ax && data.lm->events[i].b / C == ax;
  TlJobModel m;
  g_assert_true(read_model(win, &m));
  double r_ref = 0, s_ref = 0, dax_ref = 0;
  for (guint a = ax * C; a < (ax + 1) * C; a++)
    for (guint b = a + 1; b < (ax + 1) * C; b++) {
      if (!tl_scanner_pair_allowed(data.scanner, a, b)) continue;
      double nab = tl_norm_pair(data.norm, a, b);
      r_ref += randoms->factor[a] * randoms->factor[b];
      s_ref += nab * tl_scatter_estimate_pair(est_back, a, b);
      /* D A x of the pair: n_ab exp(-int mu) int x, Siddon's chords between the crystal
       * centres (the run's projector), on the CPU */
      double pa[3], pb[3];
      for (int c = 0; c < 3; c++)
        pa[c] = data.scanner->crystals[a].centre[c], pb[c] = data.scanner->crystals[b].centre[c];
      dax_ref += nab * exp(-tl_ray_integral(data.mu, pa, pb, G_MAXDOUBLE)) *
                 tl_ray_integral(m.image, pa, pb, G_MAXDOUBLE);
    }
  tl_job_model_clear(&m);
  g_test_message("plane (0, %u): measured %.0f (ref %.0f), expected %.6g, randoms %.6g (ref %.6g, "
                 "%.1e), scatter %.6g (ref %.6g, %.1e), D A x %.6g (ref %.6g, %.1e)", ax, measured,
                 m_ref, expected, rnd, r_ref, fabs(rnd / r_ref - 1), sct, s_ref,
                 fabs(sct / s_ref - 1), expected - rnd - sct, dax_ref,
                 fabs((expected - rnd - sct) / dax_ref - 1));
  g_assert_cmpfloat(measured, ==, m_ref);
  g_assert_cmpfloat(fabs(rnd - r_ref), <=, 1e-5 * r_ref);
  g_assert_cmpfloat(fabs(sct - s_ref), <=, 1e-5 * s_ref);
  g_assert_cmpfloat(fabs(expected - rnd - sct - dax_ref), <=, 1e-3 * dax_ref);
  /* the additive parts matter here: leaving either out would miss the bound by far */
  g_assert_cmpfloat(rnd, >, 0.02 * expected);
  g_assert_cmpfloat(sct, >, 0.02 * expected);
  /* the residual is against all of it */
  const float *res = tl_data_view_get_plane(dv, 2, NULL, NULL);
  double rsum = 0;
  for (guint i = 0; i < nt * (C / 2); i++) rsum += res[i];
  g_assert_cmpfloat(fabs(rsum - (measured - expected)), <=, 1e-3 * measured);

  /* exported with the window's plots: the same series as CSV */
  g_autofree char *prefix = g_build_filename(tmpdir, "plots", NULL);
  tl_gui_activate(win, "export-plots-to", g_variant_new_string(prefix));
  g_autofree char *csv_path = g_strdup_printf("%s-sinogram-profile.csv", prefix);
  g_autofree char *png_path = g_strdup_printf("%s-sinogram-profile.png", prefix);
  g_assert_true(g_file_test(png_path, G_FILE_TEST_EXISTS));
  g_autofree char *csv = NULL;
  g_assert_true(g_file_get_contents(csv_path, &csv, NULL, &error));
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  g_assert_true(g_str_has_prefix(lines[0], "tangential position (bin),measured,"));
  double csv_measured = 0;
  guint rows = 0;
  for (guint i = 1; lines[i] && lines[i][0]; i++, rows++) {
    g_auto(GStrv) cells = g_strsplit(lines[i], ",", -1);
    g_assert_cmpuint(g_strv_length(cells), ==, 5);
    csv_measured += g_ascii_strtod(cells[1], NULL);
  }
  g_assert_cmpuint(rows, ==, nt);
  g_assert_cmpfloat(csv_measured, ==, m_ref);
  tl_gui_destroy_window(win);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv))
    return 0;
  tmpdir = g_dir_make_tmp("tomolab-corrections-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  make_data();
  g_test_add_func("/gui/corrections/rows", test_rows);
  g_test_add_func("/gui/corrections/model", test_model);
  g_test_add_func("/gui/corrections/units", test_units);
  g_test_add_func("/gui/corrections/profiles", test_profiles);
  int status = g_test_run();
  free_data();
  tl_test_remove_tree(tmpdir);
  g_free(tmpdir);
  return status;
}
