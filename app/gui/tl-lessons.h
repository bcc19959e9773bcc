/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Help → Lessons: short lessons a teacher can hand out, each a page with what to do, a button
 * that sets the run up and what to look at in the plots (docs/workbench.md, "Lessons").
 *
 * A lesson is a data file, app/gui/lessons/NN-name.lesson (a GKeyFile), compiled into the
 * resources; the registry is its line in ui/tomolab.gresource.xml, and the lessons come in the
 * order of their file names:
 *
 *   [Lesson] Title, Summary, Do (what to do), Look (what to look at), Figure (what the lesson
 *            promises to show, the number its test checks)
 *   [Data]   Phantom, Scanner, Events, Coarsen, Tof, Attenuation, Compton (simulated, as the
 *            Simulate dialog takes them) — or File (a data file, relative to the working
 *            directory: the source tree's ../shared/data for the real tooth)
 *   [Run]    Settings: the side panel's settings as the command line's --set gives them, an
 *            a{sv} in GVariant text ({'algo': <'bsrem'>, 'beta': <1.0>, ...}); Actions: window
 *            actions activated once the run is set up and they are enabled (show-data; run for
 *            an opened file, which the window prepares paused)
 *
 * A new lesson is one file and one resource line. */
#pragma once
#include "tl-window.h"

G_BEGIN_DECLS

typedef struct {
  char *id; /* the file name without .lesson: "03-regularisation" */
  char *title, *summary, *todo, *look, *figure;
  char *file; /* data file, or NULL: simulated from the fields below */
  char *phantom, *scanner;
  double events;
  guint coarsen;
  gboolean tof, attenuation, compton;
  GVariant *settings; /* a{sv}, owned */
  char **actions;     /* NULL-terminated, never NULL */
} TlLesson;

/* One lesson from its text; GError names the lesson, the key, the value found and what was
 * expected (an unknown settings key, a value of the wrong type, no data). */
TlLesson *tl_lesson_parse(const char *id, const char *text, gsize length, GError **error);
void tl_lesson_free(TlLesson *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlLesson, tl_lesson_free)
/* Every lesson of the registry, in order (TlLesson, owned by the array). */
GPtrArray *tl_lessons_load(GError **error);

/* Sets the lesson's run up in the window and starts it: simulated data with its settings, or
 * its file opened and its settings applied once the data are in. */
gboolean tl_lesson_start(TlWindow *win, const TlLesson *l, GError **error);
/* Tests: simulated lessons take these simulation parameters instead of their own (a{sv}:
 * phantom, scanner, events, coarsen, seed (t); NULL: none). Consumed reference. */
void tl_lessons_set_data_override(GVariant *params);

/* The Lessons window of `win` (made on first use, then presented again). */
GtkWindow *tl_lessons_window(TlWindow *win);
/* Actions of the window: win.lessons (opens the window), win.lesson s (starts a lesson by
 * id). */
void tl_lessons_action_show(GSimpleAction *action, GVariant *param, gpointer win);
void tl_lessons_action_start(GSimpleAction *action, GVariant *param, gpointer win);

G_END_DECLS
