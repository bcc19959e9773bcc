/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Race window (issue 29 item 4) used through real input (XTEST, tl-gui-input.h): the menu
 * item opens it, a click on Start races three registry algorithms on the window's simulated
 * data, interleaved on the runner's worker; the plots hold one point per update against time
 * and against epochs, the images sit side by side, the CSV and PNG export; what the window ran
 * is checked against the same race description run by the library's session in this process
 * (the CLI's code: same metrics and objectives per update, tl-run-race-session.h), and a click
 * on Cancel keeps the updates made (TL_RACE_PNG=FILE.png keeps the exported PNG).
 * TL_RACE_SCREENSHOT=FILE.png saves the window at 1280x800
 * (docs/workbench.md), after a longer race of the default entrants on the NEMA phantom. */
#include "tl-gui-input.h"
#include "tl-gui-test.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include "tl-plot.h"
#include "tl-race-view.h"
#include "tl-screenshot.h"
#include "tl-window-private.h"
#include "run/tl-run-race-session.h"

static char *tmpdir, *scanner_path;

static gboolean mapped(TlWindow *w, gpointer d) { return gtk_widget_get_mapped(GTK_WIDGET(d)); }

static void menu_click(TlWindow *win, const char *label) {
  tl_gui_menu_activate(win, tl_gui_menu_open(win), label);
}

static guint starts_before;
static gboolean race_started(TlWindow *win, gpointer d) {
  GtkWindow *w = d;
  return tl_race_view_starts(w) > starts_before || tl_race_view_error(w)[0];
}

/* One click on Start the Race, once the race window is mapped (the press reaches the button:
 * tl_gui_input_click waits for GTK's pointer focus in it). */
static void click_start(TlWindow *win, GtkWindow *w) {
  g_assert_true(tl_gui_wait_for(win, mapped, w));
  starts_before = tl_race_view_starts(w);
  tl_gui_input_click(tl_race_view_start_button(w), 1);
  g_assert_true(tl_gui_wait_for(win, race_started, w));
}

static gboolean race_over(TlWindow *win, gpointer d) {
  GtkWindow *w = d;
  return !tl_race_view_running(w) && (tl_race_view_rounds(w) > 0 || tl_race_view_error(w)[0]);
}
static gboolean race_rounds(TlWindow *win, gpointer d) {
  return tl_race_view_rounds(tl_race_view_window(win)) >= GPOINTER_TO_UINT(d);
}

/* The rows of a CSV, each split at its commas (labels here hold none outside quotes: the
 * test's entrants quote theirs as RFC 4180 does, so a quoted field is taken whole). */
static GPtrArray *csv_rows(const char *text) {
  GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i]) continue;
    GPtrArray *f = g_ptr_array_new();
    GString *cur = g_string_new(NULL);
    gboolean quoted = FALSE;
    for (const char *c = lines[i]; *c; c++) {
      if (*c == '"') quoted = !quoted;
      else if (*c == ',' && !quoted) {
        g_ptr_array_add(f, g_string_free(cur, FALSE));
        cur = g_string_new(NULL);
      } else g_string_append_c(cur, *c);
    }
    g_ptr_array_add(f, g_string_free(cur, FALSE));
    g_ptr_array_add(f, NULL);
    g_ptr_array_add(rows, g_ptr_array_free(f, FALSE));
  }
  return rows;
}

static void test_race_window(void) {
  TlWindow *win = tl_gui_new_window();
  tl_gui_simulate(win, "cylinder", scanner_path, 2e4, 2);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  menu_click(win, "R_ace Algorithms…");
  GtkWindow *w = tl_race_view_window(win);
  g_assert_true(tl_gui_wait_for(win, mapped, w));
  /* fewer than 2 entrants: refused with the reason, nothing runs */
  g_autoptr(GError) error = NULL;
  for (guint i = 0; i < TL_RACE_VIEW_ROWS; i++)
    g_assert_true(tl_race_view_set_entrant(w, i, i == 0, "mlem", "", &error));
  g_assert_null(tl_race_view_spec(w, &error));
  g_assert_nonnull(strstr(error->message, "1 entrants ticked"));
  g_clear_error(&error);
  g_assert_false(tl_race_view_set_entrant(w, 0, TRUE, "nosuch", "", &error));
  g_clear_error(&error);
  /* three algorithms of the registry with their settings */
  g_assert_true(tl_race_view_set_entrant(w, 0, TRUE, "mlem", "", NULL));
  g_assert_true(tl_race_view_set_entrant(w, 1, TRUE, "osem", "subsets=2", NULL));
  g_assert_true(tl_race_view_set_entrant(w, 2, TRUE, "bsrem", "subsets=2,prior=rdp,beta=0.1", NULL));
  tl_race_view_set_reference(w, "osem:subsets=2", 8);
  tl_race_view_set_updates(w, 5);
  g_autoptr(TlRaceSpec) spec = tl_race_view_spec(w, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(spec->algos[2], ==, "bsrem:subsets=2,prior=rdp,beta=0.1");
  g_assert_true(spec->objective);
  click_start(win, w);
  g_assert_true(tl_gui_wait_for(win, race_over, w));
  g_assert_cmpstr(tl_race_view_error(w), ==, "");
  g_assert_cmpuint(tl_race_view_rounds(w), ==, 5);

  /* the plots: a point per update of each entrant; the metric plot's dashed target line */
  TlPlot *gap = tl_race_view_plot(w, 0), *metric = tl_race_view_plot(w, 1);
  g_assert_cmpuint(tl_plot_n_series(gap), ==, 3);
  g_assert_cmpuint(tl_plot_n_series(metric), ==, 4);
  g_autofree char *csv = tl_race_view_csv(w);
  g_autoptr(GPtrArray) rows = csv_rows(csv);
  g_assert_cmpuint(rows->len, ==, 1 + 15);
  char **head = rows->pdata[0];
  g_assert_cmpstr(head[3], ==, "epoch");
  g_assert_cmpstr(head[5], ==, "rmse");
  for (guint s = 0; s < 3; s++) {
    const double *x, *y, *mx, *my;
    g_assert_cmpuint(tl_plot_get_series(gap, s, &x, &y), ==, 5);
    g_assert_cmpuint(tl_plot_get_series(metric, s, &mx, &my), ==, 5);
    for (guint k = 0; k < 5; k++) {
      char **row = rows->pdata[1 + k * 3 + s]; /* turn order: update k of every entrant */
      g_assert_cmpstr(row[0], ==, spec->algos[s]);
      g_assert_cmpfloat_with_epsilon(x[k], g_ascii_strtod(row[2], NULL), 1e-6 * (1 + x[k]));
      g_assert_cmpfloat_with_epsilon(my[k], log10(100 * g_ascii_strtod(row[5], NULL)), 1e-9);
      g_assert_true(isfinite(y[k])); /* every update has its objective, so its gap */
    }
  }
  /* against epochs: MLEM's update k is epoch k + 1, OSEM's with 2 subsets (k + 1) / 2 */
  tl_race_view_set_x_epochs(w, TRUE);
  tl_gui_spin(0.1);
  for (guint s = 0; s < 2; s++) {
    const double *x, *y;
    tl_plot_get_series(gap, s, &x, &y);
    for (guint k = 0; k < 5; k++) g_assert_cmpfloat(fabs(x[k] - (k + 1.0) / (s + 1)), <, 1e-9);
  }
  g_assert_nonnull(strstr(tl_race_view_winner_text(w), "PETRIC target"));

  /* the same description through the library's session (the CLI's code) on the same data: the
   * same metrics and objectives per update, bit for bit (deterministic sums) */
  g_autoptr(TlRaceSession) session =
      tl_race_session_new(tl_window_get_context(win), spec, win->dataset->ds, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(tl_race_session_run(session, spec->updates, &error));
  g_autofree char *lib_csv = tl_race_csv(tl_race_session_race(session));
  g_autoptr(GPtrArray) lib_rows = csv_rows(lib_csv);
  g_assert_cmpuint(lib_rows->len, ==, rows->len);
  for (guint r = 0; r < rows->len; r++) {
    char **a = rows->pdata[r], **b = lib_rows->pdata[r];
    g_assert_cmpuint(g_strv_length(a), ==, g_strv_length(b));
    for (guint c = 0; a[c]; c++)
      if (c != 2 || r == 0) g_assert_cmpstr(a[c], ==, b[c]); /* all but the seconds */
  }
  g_clear_pointer(&session, tl_race_session_free); /* it uses the window's context */

  /* exports */
  g_autofree char *csv_path = g_build_filename(tmpdir, "race.csv", NULL);
  /* TL_RACE_PNG=FILE.png: the export kept there, to look at */
  g_autofree char *png_path = g_getenv("TL_RACE_PNG") ? g_strdup(g_getenv("TL_RACE_PNG"))
                                                      : g_build_filename(tmpdir, "race.png", NULL);
  g_assert_true(tl_race_view_save_csv(w, csv_path, &error));
  g_assert_no_error(error);
  g_autofree char *saved = NULL;
  g_assert_true(g_file_get_contents(csv_path, &saved, NULL, NULL));
  g_assert_cmpstr(saved, ==, csv);
  g_assert_true(tl_race_view_save_png(w, png_path, &error));
  g_assert_no_error(error);
  g_autoptr(GdkTexture) png = gdk_texture_new_from_filename(png_path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(gdk_texture_get_width(png), ==, 1280);

  /* a long race, cancelled by a click: the rounds made stay */
  tl_race_view_set_updates(w, 100000);
  click_start(win, w);
  g_assert_true(tl_gui_wait_for(win, race_rounds, GUINT_TO_POINTER(2)));
  GtkWidget *cancel = gtk_widget_get_next_sibling(tl_race_view_start_button(w));
  tl_gui_input_click(cancel, 1);
  g_assert_true(tl_gui_wait_for(win, race_over, w));
  guint made = tl_race_view_rounds(w);
  g_assert_cmpuint(made, >=, 2);
  g_assert_cmpuint(made, <, 100000);
  g_autofree char *after = tl_race_view_csv(w);
  g_autoptr(GPtrArray) after_rows = csv_rows(after);
  g_assert_cmpuint(after_rows->len, >=, 1 + 3 * made);
  gtk_window_close(w);
  tl_gui_destroy_window(win);
}

/* The documentation's screenshot: the default entrants (BSREM, SVRG, L-BFGS-B after one OSEM
 * epoch) on a NEMA phantom, then the window saved at 1280x800. */
static void test_screenshot(void) {
  const char *out = g_getenv("TL_RACE_SCREENSHOT");
  if (!out) {
    g_test_skip("TL_RACE_SCREENSHOT not set");
    return;
  }
  TlWindow *win = tl_gui_new_window();
  g_autofree char *ring = tl_gui_write_ring(tmpdir, "race-ring", 16, 32, 8, 170);
  tl_gui_simulate(win, "nema", ring, 3e5, 2);
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  GtkWindow *w = tl_race_view_window(win);
  gtk_window_set_default_size(w, 1280, 800);
  gtk_window_present(w);
  tl_race_view_set_reference(w, "bsrem:subsets=8,prior=rdp,beta=0.1,osem-epochs=1", 240);
  tl_race_view_set_updates(w, 40);
  click_start(win, w);
  /* minutes on lavapipe: the reference's updates, then the race's */
  for (guint i = 0; i < 20 && !race_over(win, w); i++) {
    tl_gui_wait_for(win, race_over, w);
    g_test_message("%u rounds", tl_race_view_rounds(w));
  }
  g_assert_true(race_over(win, w));
  g_assert_cmpstr(tl_race_view_error(w), ==, "");
  /* a frame between the last paint and the shot leaves nothing to save ("The widget drew
   * nothing", as test-input meets it): after another paint, again */
  gboolean saved = FALSE;
  for (int tries = 0; tries < 5 && !saved; tries++) {
    g_autoptr(GError) error = NULL;
    tl_gui_spin(0.5);
    saved = tl_widget_save_png(GTK_WIDGET(w), out, &error);
    if (!saved) g_test_message("%s: %s", out, error->message);
  }
  g_assert_true(saved);
  gtk_window_close(w);
  tl_gui_destroy_window(win);
}

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *n;
    while ((n = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, n, NULL);
      remove_tree(p);
    }
    g_dir_close(d);
  }
  g_remove(path);
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv)) return 0;
  if (!tl_gui_input_init()) {
    g_print("1..0 # SKIP no X11 display with XTEST (run under xvfb-run)\n");
    return 0;
  }
  tmpdir = g_dir_make_tmp("tomolab-race-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  scanner_path = tl_gui_write_ring(tmpdir, "race-small", 8, 12, 4, 30);
  g_test_add_func("/gui/race/window", test_race_window);
  g_test_add_func("/gui/race/screenshot", test_screenshot);
  int rc = g_test_run();
  remove_tree(tmpdir);
  return rc;
}
