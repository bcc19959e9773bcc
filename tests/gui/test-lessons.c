/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Help → Lessons (app/gui/tl-lessons.c): the six lesson files parse and their settings are
 * keys the window knows with the types it reads; bad lesson texts are refused naming the key;
 * the Lessons window shows a page and a button per lesson; each button sets its run up in the
 * window and the run steps (simulated lessons on a tiny ring scanner instead of the DMI, so the
 * suite stays short; the tooth lesson on ../shared/data's tooth.h5: the workdir is the source
 * root), with the algorithm, prior and data the lesson names; and the regularisation lesson
 * keeps its promise: the background's coefficient of variation at least 20 % lower than the
 * same run with beta 0. */
#include "tl-gui-test.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <adwaita.h>
#include "tl-lessons.h"
#include "tl-side-panel.h"
#include "tl-job.h"
#include "image/tl-roi.h"
#include "pet/scanner/tl-scanner.h"

static char *tmpdir, *scanner_path;

static void test_registry(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) lessons = tl_lessons_load(&error);
  g_assert_no_error(error);
  g_assert_cmpuint(lessons->len, ==, 6);
  static const char *ids[] = {"01-projection", "02-subsets", "03-regularisation", "04-tof",
                              "05-attenuation", "06-ct-tooth"};
  for (guint i = 0; i < lessons->len; i++) {
    const TlLesson *l = lessons->pdata[i];
    g_assert_cmpstr(l->id, ==, ids[i]);
    g_assert_true(*l->title && *l->todo && *l->look && *l->figure);
    const char *algo = NULL;
    g_assert_true(g_variant_lookup(l->settings, "algo", "&s", &algo));
    if (l->file) g_assert_true(g_file_test(l->file, G_FILE_TEST_IS_REGULAR));
    else g_assert_true(l->phantom && l->scanner && l->events >= 1e5);
  }
  /* bad lessons: the message names the lesson, the key and what was expected */
  static const char *bad[][2] = {
      {"[Lesson]\nTitle=t\nSummary=s\nDo=d\nLook=l\nFigure=f\n[Data]\nPhantom=nema\nScanner=dmi\n"
       "[Run]\nSettings={'algo': <'osem'>, 'speed': <1.0>}\n", "unknown key 'speed'"},
      {"[Lesson]\nTitle=t\nSummary=s\nDo=d\nLook=l\nFigure=f\n[Data]\nPhantom=nema\nScanner=dmi\n"
       "[Run]\nSettings={'subsets': <10>}\n", "'subsets' is of type i; expected u"},
      {"[Lesson]\nTitle=t\nSummary=s\nDo=d\nLook=l\nFigure=f\n[Run]\nSettings={}\n", "no File"},
      {"[Lesson]\nTitle=t\nSummary=s\nLook=l\nFigure=f\n[Data]\nFile=x\n", "[Lesson] Do"},
      {"[Lesson]\nTitle=t\nSummary=s\nDo=d\nLook=l\nFigure=f\n[Data]\nFile=x\n[Run]\nSettings={'algo'\n",
       "[Run] Settings"},
      {"[Lesson]\nTitle=t\nSummary=s\nDo=d\nLook=l\nFigure=f\n[Data]\nPhantom=nema\nScanner=dmi\n"
       "Events=-5\n", "Events -5"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) e = NULL;
    g_assert_null(tl_lesson_parse("bad", bad[i][0], strlen(bad[i][0]), &e));
    g_assert_nonnull(e);
    g_test_message("refused: %s", e->message);
    g_assert_nonnull(strstr(e->message, "lesson bad"));
    g_assert_nonnull(strstr(e->message, bad[i][1]));
  }
}

static GtkWidget *find_named(GtkWidget *w, const char *name) {
  if (g_strcmp0(gtk_widget_get_name(w), name) == 0) return w;
  for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
    GtkWidget *f = find_named(c, name);
    if (f) return f;
  }
  return NULL;
}

static TlWindow *ready_window(void) {
  TlWindow *win = tl_window_new(NULL, NULL);
  gtk_window_set_default_size(GTK_WINDOW(win), 1280, 800);
  gtk_window_present(GTK_WINDOW(win));
  g_assert_true(tl_gui_wait_for(win, tl_gui_is_ready, NULL));
  g_assert_cmpint(tl_window_get_state(win), ==, TL_WINDOW_READY);
  return win;
}

/* Clicks the lesson's button in the Lessons window and waits for `steps` sub-iterations of
 * the run it set up. */
static void click_lesson(TlWindow *win, GtkWindow *lw, const char *id, guint steps) {
  GtkWidget *button = find_named(GTK_WIDGET(lw), id);
  g_assert_nonnull(button);
  g_assert_true(GTK_IS_BUTTON(button));
  const char *before = tl_window_get_dataset_name(win);
  g_signal_emit_by_name(button, "clicked");
  g_assert_cmpstr(tl_window_get_last_error(win), ==, NULL);
  for (int i = 0; i < 20 && tl_window_get_dataset_name(win) == before; i++)
    g_assert_true(tl_gui_wait_for(win, tl_gui_is_idle, NULL));
  g_assert_true(tl_window_get_dataset_name(win) != before);
  /* the tooth's FDK after its centre search: minutes on a busy lavapipe */
  gboolean reached = FALSE;
  for (int i = 0; i < 5 && !reached; i++)
    reached = tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(steps));
  g_assert_true(reached);
  g_assert_cmpstr(tl_window_get_last_error(win), ==, NULL);
}

static GtkWindow *open_lessons(TlWindow *win) {
  tl_gui_activate(win, "lessons", NULL);
  GtkWindow *lw = tl_lessons_window(win);
  g_assert_nonnull(lw);
  g_assert_true(gtk_widget_get_visible(GTK_WIDGET(lw)));
  GtkStack *stack = g_object_get_data(G_OBJECT(lw), "tl-lessons-stack");
  g_assert_cmpuint(g_list_model_get_n_items(G_LIST_MODEL(gtk_stack_get_pages(stack))), ==, 6);
  return lw;
}

/* The simulated lessons on the tiny ring: each button's run steps with its lesson's settings. */
static void test_simulated(void) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", "cylinder");
  g_variant_dict_insert(&d, "scanner", "s", scanner_path);
  g_variant_dict_insert(&d, "events", "d", 3e4);
  g_variant_dict_insert(&d, "coarsen", "u", 2);
  tl_lessons_set_data_override(g_variant_dict_end(&d));
  TlWindow *win = ready_window();
  GtkWindow *lw = open_lessons(win);
  GPtrArray *lessons = g_object_get_data(G_OBJECT(lw), "tl-lessons");
  TlSidePanel *panel = tl_window_get_side_panel(win);
  for (guint i = 0; i < lessons->len; i++) {
    const TlLesson *l = lessons->pdata[i];
    if (l->file) continue;
    click_lesson(win, lw, l->id, 2);
    TlPetJobOptions o;
    tl_side_panel_get_options(panel, &o);
    const char *algo = NULL;
    guint subsets = 0;
    g_variant_lookup(l->settings, "algo", "&s", &algo);
    g_variant_lookup(l->settings, "subsets", "u", &subsets);
    g_test_message("%s: %s, %u subsets, %u sub-iterations", l->id, o.algorithm, o.subsets,
                   tl_window_get_sub_iterations(win));
    g_assert_cmpstr(o.algorithm, ==, algo);
    g_assert_cmpuint(o.subsets, ==, subsets);
    g_assert_cmpint(o.tof, ==, l->tof);
    /* the attenuation lesson: corrected with the phantom's mu-map, SSS in the model, and the
     * simulated events carried Compton scatter */
    g_assert_cmpint(o.mu, ==, l->attenuation ? TL_PET_MU_PHANTOM : TL_PET_MU_NONE);
    const char *scatter = NULL;
    if (g_variant_lookup(l->settings, "scatter", "&s", &scatter))
      g_assert_cmpint(o.scatter, ==, TL_PET_SCATTER_SSS);
    if (l->compton)
      g_assert_nonnull(strstr(tl_window_get_dataset_name(win), "scattered"));
    tl_pet_job_options_clear(&o);
    const char *prior = NULL;
    if (g_variant_lookup(l->settings, "prior", "&s", &prior)) {
      char name[16];
      double beta, gamma;
      tl_side_panel_get_prior(panel, name, &beta, &gamma);
      g_assert_cmpstr(name, ==, prior);
    }
    /* the projection lesson opens the data view beside the window */
    if (l->actions[0] && g_str_equal(l->actions[0], "show-data")) {
      for (int k = 0; k < 100 && !tl_window_get_data_view(win); k++) tl_gui_spin(0.1);
      g_assert_nonnull(tl_window_get_data_view(win));
    }
  }
  tl_lessons_set_data_override(NULL);
  tl_gui_destroy_window(win);
}

/* The background CoV of a sphere in the cylinder's middle after `steps` sub-iterations. */
static double run_cov(TlWindow *win, GtkWindow *lw, double beta, guint steps) {
  click_lesson(win, lw, "03-regularisation", 1);
  TlSidePanel *panel = tl_window_get_side_panel(win);
  /* the same run with beta set before its second sub-iteration: the lesson's "change beta" */
  tl_gui_activate(win, "pause", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  tl_side_panel_set_prior(panel, beta > 0 ? "rdp" : NULL, beta, 2.0);
  TlRoi roi = {.kind = TL_ROI_SPHERE, .centre_mm = {0, 0, 0}, .radius_mm = 12};
  tl_window_add_roi(win, &roi);
  tl_gui_activate(win, "run", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_reached, GUINT_TO_POINTER(steps)));
  tl_gui_activate(win, "pause", NULL);
  g_assert_true(tl_gui_wait_for(win, tl_gui_in_state, GINT_TO_POINTER(TL_RUN_PAUSED)));
  TlRoiStats st;
  for (int k = 0; k < 100 && !tl_window_get_roi_stats(win, 0, &st); k++) tl_gui_spin(0.1);
  g_assert_true(tl_window_get_roi_stats(win, 0, &st));
  g_assert_cmpuint(st.n, >, 20);
  return st.sd / st.mean;
}

static void test_regularisation(void) {
  GVariantDict d;
  g_variant_dict_init(&d, NULL);
  g_variant_dict_insert(&d, "phantom", "s", "cylinder");
  g_variant_dict_insert(&d, "scanner", "s", scanner_path);
  g_variant_dict_insert(&d, "events", "d", 3e4);
  g_variant_dict_insert(&d, "coarsen", "u", 2);
  tl_lessons_set_data_override(g_variant_dict_end(&d));
  TlWindow *win = ready_window();
  GtkWindow *lw = open_lessons(win);
  double with = run_cov(win, lw, 0.03, 10), without = run_cov(win, lw, 0, 10);
  g_test_message("regularisation lesson: background CoV %.4f with the prior (beta 0.03), %.4f "
                 "without (beta 0): %.0f %% lower", with, without, 100 * (1 - with / without));
  g_assert_cmpfloat(with, <=, 0.8 * without);
  tl_lessons_set_data_override(NULL);
  tl_gui_destroy_window(win);
}

/* The tooth lesson: tooth.h5 opened (its centre searched), FDK in one step. */
static void test_tooth(void) {
  TlWindow *win = ready_window();
  GtkWindow *lw = open_lessons(win);
  click_lesson(win, lw, "06-ct-tooth", 1);
  TlSidePanel *panel = tl_window_get_side_panel(win);
  g_assert_true(tl_side_panel_get_ct(panel));
  TlCtJobOptions o;
  tl_side_panel_get_ct_options(panel, &o);
  g_assert_cmpstr(o.algo, ==, "fdk");
  g_assert_cmpfloat(fabs(tl_side_panel_get_centre(panel) - 295.5), <, 2);
  tl_gui_destroy_window(win);
}

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
  g_autoptr(TlScanner) s = tl_scanner_new_from_layout("lesson-test-ring", &l, NULL, &error);
  g_assert_no_error(error);
  s->tof_bins = 9; /* TOF bins too, for the TOF lesson: 9 x 15 mm over the 60 mm ring */
  s->tof_bin_mm = 15;
  s->tof_fwhm_ps = 200;
  g_assert_true(tl_scanner_validate(s, &error));
  scanner_path = g_build_filename(tmpdir, "ring.scanner", NULL);
  g_assert_true(tl_scanner_save(s, scanner_path, &error));
}

int main(int argc, char **argv) {
  if (!tl_gui_test_init(&argc, &argv)) return 0;
  tmpdir = g_dir_make_tmp("tomolab-lessons-XXXXXX", NULL);
  g_assert_nonnull(tmpdir);
  write_scanner();
  g_test_add_func("/gui/lessons/registry", test_registry);
  g_test_add_func("/gui/lessons/simulated", test_simulated);
  g_test_add_func("/gui/lessons/regularisation", test_regularisation);
  g_test_add_func("/gui/lessons/tooth", test_tooth);
  int status = g_test_run();
  tl_gui_remove_dir(tmpdir);
  g_free(scanner_path);
  g_free(tmpdir);
  return status;
}
