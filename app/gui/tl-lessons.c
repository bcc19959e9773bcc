/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Help → Lessons (tl-lessons.h): the lesson files read from the resources, checked, shown as
 * pages, and set up in the window through the same door as the command line's --set and the
 * demo (tl_window_set_demo_settings, tl_window_start_demo, tl_window_open_file). */
#include "tl-lessons.h"
#include "tl-window-private.h"
#include <adwaita.h>
#include <string.h>
#include "dataset/tl-dataset.h"

#define LESSONS_PATH "/org/tomolab/Tomolab/lessons/"

/* The settings keys a lesson may use, with their types: the --set keys of tl-application.c
 * that a lesson needs, typed as tl_window_apply_settings reads them. */
static const struct {
  const char *key, *type;
} kKeys[] = {
    {"algo", "s"},        {"subsets", "u"},      {"iterations", "u"},     {"prior", "s"},
    {"beta", "d"},        {"projector", "s"},    {"tof", "b"},            {"attenuation", "b"},
    {"filter", "s"},      {"filter-every", "u"}, {"scatter", "s"},        {"scatter-rounds", "u"},
    {"randoms", "s"},     {"panel", "s"},        {"profile", "b"},        {"centre", "d"},
    {"scatter-restart", "b"},
};

static GVariant *override_params;

void tl_lessons_set_data_override(GVariant *params) {
  g_clear_pointer(&override_params, g_variant_unref);
  if (params) override_params = g_variant_ref_sink(params);
}

void tl_lesson_free(TlLesson *l) {
  if (!l) return;
  g_free(l->id);
  g_free(l->title);
  g_free(l->summary);
  g_free(l->todo);
  g_free(l->look);
  g_free(l->figure);
  g_free(l->file);
  g_free(l->phantom);
  g_free(l->scanner);
  g_clear_pointer(&l->settings, g_variant_unref);
  g_strfreev(l->actions);
  g_free(l);
}

static gboolean check_settings(const char *id, GVariant *set, GError **error) {
  GVariantIter it;
  const char *key;
  GVariant *value;
  g_variant_iter_init(&it, set);
  while (g_variant_iter_loop(&it, "{&sv}", &key, &value)) {
    const char *want = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(kKeys) && !want; i++)
      if (g_str_equal(kKeys[i].key, key)) want = kKeys[i].type;
    if (!want) {
      g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                  "lesson %s: [Run] Settings: unknown key '%s'; expected one of algo, subsets, "
                  "iterations, prior, beta, projector, tof, attenuation, filter, filter-every, "
                  "scatter, scatter-rounds, scatter-restart, randoms, panel, profile, centre", id, key);
      g_variant_unref(value);
      return FALSE;
    }
    if (!g_variant_is_of_type(value, G_VARIANT_TYPE(want))) {
      g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                  "lesson %s: [Run] Settings: '%s' is of type %s; expected %s", id, key,
                  g_variant_get_type_string(value), want);
      g_variant_unref(value);
      return FALSE;
    }
  }
  return TRUE;
}

/* A required string of [Lesson]. */
static char *text_key(GKeyFile *kf, const char *id, const char *key, GError **error) {
  char *v = g_key_file_get_locale_string(kf, "Lesson", key, NULL, NULL);
  if (v && *v) return v;
  g_free(v);
  g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
              "lesson %s: [Lesson] %s is missing or empty; expected a text", id, key);
  return NULL;
}

TlLesson *tl_lesson_parse(const char *id, const char *text, gsize length, GError **error) {
  g_autoptr(GKeyFile) kf = g_key_file_new();
  if (!g_key_file_load_from_data(kf, text, length, G_KEY_FILE_NONE, error)) {
    g_prefix_error(error, "lesson %s: ", id);
    return NULL;
  }
  g_autoptr(TlLesson) l = g_new0(TlLesson, 1);
  l->id = g_strdup(id);
  if (!(l->title = text_key(kf, id, "Title", error)) ||
      !(l->summary = text_key(kf, id, "Summary", error)) ||
      !(l->todo = text_key(kf, id, "Do", error)) || !(l->look = text_key(kf, id, "Look", error)) ||
      !(l->figure = text_key(kf, id, "Figure", error)))
    return NULL;
  l->file = g_key_file_get_string(kf, "Data", "File", NULL);
  if (!l->file) {
    l->phantom = g_key_file_get_string(kf, "Data", "Phantom", NULL);
    l->scanner = g_key_file_get_string(kf, "Data", "Scanner", NULL);
    if (!l->phantom || !l->scanner) {
      g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                  "lesson %s: [Data] has no File and no Phantom and Scanner; expected a data "
                  "file or a simulation", id);
      return NULL;
    }
    GError *e = NULL;
    l->events = g_key_file_get_double(kf, "Data", "Events", &e);
    if (e) l->events = TL_DATASET_SIM_EVENTS; /* the dataset layer's default */
    g_clear_error(&e);
    gint c = g_key_file_get_integer(kf, "Data", "Coarsen", &e);
    l->coarsen = e ? TL_DATASET_PET_COARSEN : (guint)MAX(c, 0);
    g_clear_error(&e);
    if (!(l->events >= 1 && l->events <= 1e9) || l->coarsen < 1 || l->coarsen > 8) {
      g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                  "lesson %s: [Data] Events %g, Coarsen %u; expected 1 to 1e9 events and a "
                  "coarsening of 1 to 8", id, l->events, l->coarsen);
      return NULL;
    }
    l->tof = g_key_file_get_boolean(kf, "Data", "Tof", NULL);
    l->attenuation = g_key_file_get_boolean(kf, "Data", "Attenuation", NULL);
    l->compton = g_key_file_get_boolean(kf, "Data", "Compton", NULL);
  }
  g_autofree char *set = g_key_file_get_string(kf, "Run", "Settings", NULL);
  GError *perr = NULL;
  GVariant *v = g_variant_parse(G_VARIANT_TYPE_VARDICT, set ? set : "@a{sv} {}", NULL, NULL, &perr);
  if (!v) {
    g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                "lesson %s: [Run] Settings: %s; expected an a{sv} such as {'algo': <'osem'>}",
                id, perr->message);
    g_error_free(perr);
    return NULL;
  }
  l->settings = g_variant_ref_sink(v);
  if (!check_settings(id, l->settings, error)) return NULL;
  l->actions = g_key_file_get_string_list(kf, "Run", "Actions", NULL, NULL);
  if (!l->actions) l->actions = g_new0(char *, 1);
  return g_steal_pointer(&l);
}

static int by_name(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

GPtrArray *tl_lessons_load(GError **error) {
  g_auto(GStrv) names = g_resources_enumerate_children(LESSONS_PATH, 0, error);
  if (!names) return NULL;
  qsort(names, g_strv_length(names), sizeof *names, by_name);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)tl_lesson_free);
  for (guint i = 0; names[i]; i++) {
    if (!g_str_has_suffix(names[i], ".lesson")) continue;
    g_autofree char *path = g_strconcat(LESSONS_PATH, names[i], NULL);
    g_autoptr(GBytes) b = g_resources_lookup_data(path, 0, error);
    if (!b) return NULL;
    g_autofree char *id = g_strndup(names[i], strlen(names[i]) - strlen(".lesson"));
    gsize n;
    const char *text = g_bytes_get_data(b, &n);
    TlLesson *l = tl_lesson_parse(id, text, n, error);
    if (!l) return NULL;
    g_ptr_array_add(out, l);
  }
  return g_steal_pointer(&out);
}

/* ---- Setting a lesson up -------------------------------------------------------------- */

typedef struct {
  TlWindow *win; /* weak */
  const char *before; /* the dataset name shown before: a new document has a new one */
  char **actions;
  guint polls;
} PendingActions;

static void pending_free(PendingActions *p) {
  if (p->win) g_object_remove_weak_pointer(G_OBJECT(p->win), (gpointer *)&p->win);
  g_strfreev(p->actions);
  g_free(p);
}

/* The lesson's actions once its data are in (the data view needs the new dataset). */
static gboolean run_actions(gpointer data) {
  PendingActions *p = data;
  if (!p->win || ++p->polls > 3000) return G_SOURCE_REMOVE; /* gone, or 10 min without data */
  const char *now = tl_window_get_dataset_name(p->win);
  if (!now || now == p->before || !tl_window_has_run(p->win)) return G_SOURCE_CONTINUE;
  /* all at once, once every one is enabled (a run being prepared enables "run" later) */
  for (guint i = 0; p->actions[i]; i++)
    if (g_action_group_has_action(G_ACTION_GROUP(p->win), p->actions[i]) &&
        !g_action_group_get_action_enabled(G_ACTION_GROUP(p->win), p->actions[i]))
      return G_SOURCE_CONTINUE;
  for (guint i = 0; p->actions[i]; i++)
    if (g_action_group_has_action(G_ACTION_GROUP(p->win), p->actions[i]))
      g_action_group_activate_action(G_ACTION_GROUP(p->win), p->actions[i], NULL);
  return G_SOURCE_REMOVE;
}

gboolean tl_lesson_start(TlWindow *win, const TlLesson *l, GError **error) {
  GVariantDict d;
  g_variant_dict_init(&d, l->settings);
  double events = l->events;
  guint coarsen = l->coarsen;
  if (l->file) {
    if (!g_file_test(l->file, G_FILE_TEST_IS_REGULAR)) {
      g_autofree char *cwd = g_get_current_dir();
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                  "lesson %s: data file %s not found from %s; expected it there (run Tomolab "
                  "from the source tree, next to ../shared/data)", l->id, l->file, cwd);
      g_variant_dict_clear(&d);
      return FALSE;
    }
  } else {
    const char *phantom = l->phantom, *scanner = l->scanner;
    if (override_params) {
      g_variant_lookup(override_params, "phantom", "&s", &phantom);
      g_variant_lookup(override_params, "scanner", "&s", &scanner);
      g_variant_lookup(override_params, "events", "d", &events);
      g_variant_lookup(override_params, "coarsen", "u", &coarsen);
      guint64 seed; /* tests: another noise realisation, for margins over several runs */
      if (g_variant_lookup(override_params, "seed", "t", &seed))
        g_variant_dict_insert(&d, "seed", "t", seed);
    }
    g_variant_dict_insert(&d, "phantom", "s", phantom);
    g_variant_dict_insert(&d, "scanner", "s", scanner);
    if (l->tof && !g_variant_dict_contains(&d, "tof")) g_variant_dict_insert(&d, "tof", "b", TRUE);
    if (l->attenuation && !g_variant_dict_contains(&d, "attenuation"))
      g_variant_dict_insert(&d, "attenuation", "b", TRUE);
    if (l->compton) g_variant_dict_insert(&d, "compton", "b", TRUE);
  }
  PendingActions *p = g_new0(PendingActions, 1);
  p->win = win;
  g_object_add_weak_pointer(G_OBJECT(win), (gpointer *)&p->win);
  p->before = tl_window_get_dataset_name(win);
  p->actions = g_strdupv(l->actions);
  /* the demo's door: its settings applied before the simulation and, those that depend on
   * the data, once more when the data are in (tl-window-run.c) */
  tl_window_set_demo_settings(win, g_variant_dict_end(&d));
  g_object_set_data(G_OBJECT(win), "tl-data-settings-done", NULL);
  if (l->file)
    tl_window_open_file(win, l->file);
  else
    tl_window_start_demo(win, events, coarsen);
  if (p->actions[0])
    g_timeout_add_full(G_PRIORITY_DEFAULT, 200, run_actions, p, (GDestroyNotify)pending_free);
  else
    pending_free(p);
  return TRUE;
}

/* ---- The window ------------------------------------------------------------------------ */

static GtkWidget *para(const char *text, const char *css) {
  GtkWidget *l = gtk_label_new(text);
  gtk_label_set_wrap(GTK_LABEL(l), TRUE);
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  /* not selectable: a selectable label takes the focus and shows itself all selected */
  gtk_label_set_max_width_chars(GTK_LABEL(l), 80);
  if (css) gtk_widget_add_css_class(l, css);
  return l;
}

static void on_start(GtkButton *button, TlWindow *win) {
  const TlLesson *l = g_object_get_data(G_OBJECT(button), "tl-lesson");
  g_autoptr(GError) error = NULL;
  if (!tl_lesson_start(win, l, &error)) {
    tl_window_show_error(win, "Lesson", error);
    return;
  }
  gtk_window_present(GTK_WINDOW(win));
}

static GtkWidget *lesson_page(TlWindow *win, const TlLesson *l, guint number) {
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12);
  gtk_widget_set_margin_start(box, 24);
  gtk_widget_set_margin_end(box, 24);
  gtk_widget_set_margin_top(box, 18);
  gtk_widget_set_margin_bottom(box, 18);
  g_autofree char *title = g_strdup_printf("%u. %s", number, l->title);
  gtk_box_append(GTK_BOX(box), para(title, "title-2"));
  gtk_box_append(GTK_BOX(box), para(l->summary, "dim-label"));
  gtk_box_append(GTK_BOX(box), para("What to do", "heading"));
  gtk_box_append(GTK_BOX(box), para(l->todo, NULL));
  GtkWidget *button = gtk_button_new_with_label("Set Up This Run");
  gtk_widget_add_css_class(button, "suggested-action");
  gtk_widget_add_css_class(button, "pill");
  gtk_widget_set_halign(button, GTK_ALIGN_START);
  gtk_widget_set_name(button, l->id); /* tests find the button by its lesson */
  g_autofree char *tip = l->file ? g_strdup_printf("Opens %s", l->file)
                                 : g_strdup_printf("Simulates %s on %s, %.3g events", l->phantom,
                                                   l->scanner, l->events);
  gtk_widget_set_tooltip_text(button, tip);
  g_object_set_data(G_OBJECT(button), "tl-lesson", (gpointer)l);
  g_signal_connect(button, "clicked", G_CALLBACK(on_start), win);
  gtk_box_append(GTK_BOX(box), button);
  gtk_box_append(GTK_BOX(box), para("What to look at", "heading"));
  gtk_box_append(GTK_BOX(box), para(l->look, NULL));
  g_autofree char *fig = g_strdup_printf("Expect: %s.", l->figure);
  gtk_box_append(GTK_BOX(box), para(fig, "dim-label"));
  GtkWidget *scroll = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(scroll), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), box);
  return scroll;
}

static void forget_window(TlWindow *win) {
  g_object_set_data(G_OBJECT(win), "tl-lessons-window", NULL);
}

GtkWindow *tl_lessons_window(TlWindow *win) {
  GtkWindow *w = g_object_get_data(G_OBJECT(win), "tl-lessons-window");
  if (w) return w;
  g_autoptr(GError) error = NULL;
  GPtrArray *lessons = tl_lessons_load(&error);
  if (!lessons) {
    tl_window_show_error(win, "Lessons", error);
    return NULL;
  }
  w = GTK_WINDOW(adw_window_new());
  gtk_window_set_title(w, "Lessons");
  gtk_window_set_transient_for(w, GTK_WINDOW(win));
  gtk_window_set_hide_on_close(w, TRUE);
  gtk_window_set_default_size(w, 900, 640);
  g_object_set_data_full(G_OBJECT(w), "tl-lessons", lessons, (GDestroyNotify)g_ptr_array_unref);
  GtkWidget *stack = gtk_stack_new();
  gtk_widget_set_hexpand(stack, TRUE);
  for (guint i = 0; i < lessons->len; i++) {
    const TlLesson *l = lessons->pdata[i];
    g_autofree char *t = g_strdup_printf("%u. %s", i + 1, l->title);
    gtk_stack_add_titled(GTK_STACK(stack), lesson_page(win, l, i + 1), l->id, t);
  }
  GtkWidget *side = gtk_stack_sidebar_new();
  gtk_stack_sidebar_set_stack(GTK_STACK_SIDEBAR(side), GTK_STACK(stack));
  gtk_widget_set_size_request(side, 260, -1);
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
  gtk_box_append(GTK_BOX(row), side);
  gtk_box_append(GTK_BOX(row), gtk_separator_new(GTK_ORIENTATION_VERTICAL));
  gtk_box_append(GTK_BOX(row), stack);
  GtkWidget *outer = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *header = adw_header_bar_new();
  adw_header_bar_set_title_widget(ADW_HEADER_BAR(header), adw_window_title_new("Lessons", "Six exercises on the workbench"));
  gtk_box_append(GTK_BOX(outer), header);
  gtk_widget_set_vexpand(row, TRUE);
  gtk_box_append(GTK_BOX(outer), row);
  adw_window_set_content(ADW_WINDOW(w), outer);
  g_object_set_data(G_OBJECT(w), "tl-lessons-stack", stack);
  /* goes with the workbench window; forgotten when destroyed */
  gtk_window_set_destroy_with_parent(w, TRUE);
  g_object_set_data(G_OBJECT(win), "tl-lessons-window", w);
  g_signal_connect_swapped(w, "destroy", G_CALLBACK(forget_window), win);
  return w;
}

void tl_lessons_action_show(GSimpleAction *action, GVariant *param, gpointer win) {
  (void)action, (void)param;
  GtkWindow *w = tl_lessons_window(TL_WINDOW(win));
  if (w) gtk_window_present(w);
}

void tl_lessons_action_start(GSimpleAction *action, GVariant *param, gpointer win) {
  (void)action;
  const char *id = g_variant_get_string(param, NULL);
  GtkWindow *w = tl_lessons_window(TL_WINDOW(win));
  GPtrArray *lessons = w ? g_object_get_data(G_OBJECT(w), "tl-lessons") : NULL;
  for (guint i = 0; lessons && i < lessons->len; i++) {
    const TlLesson *l = lessons->pdata[i];
    if (!g_str_equal(l->id, id)) continue;
    g_autoptr(GError) error = NULL;
    if (!tl_lesson_start(TL_WINDOW(win), l, &error)) tl_window_show_error(TL_WINDOW(win), "Lesson", error);
    return;
  }
  g_autoptr(GError) error = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                        "lesson %s: no such lesson; see Help → Lessons", id);
  tl_window_show_error(TL_WINDOW(win), "Lesson", error);
}
