/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Race window (Reconstruction → Race Algorithms…, win.race; issue 29 item 4): 2 to 4
 * entrants, each an algorithm of the registry with its settings (the race description's keys,
 * run/tl-run-race-spec.h), raced on the window's dataset by the race job (tl-race-job.h) on a
 * runner of its own; the objective gap and each PETRIC metric against wall-clock time or
 * epochs, the entrants' images side by side, the winner's time to target; CSV and PNG. */
#pragma once
#include "tl-window.h"
#include "tl-plot.h"
#include "run/tl-run-race-spec.h"

G_BEGIN_DECLS

/* Adds win.race (opens the Race window) to the window. */
void tl_race_view_install(TlWindow *win);
/* The window's Race window, made on first use (hidden on close). */
GtkWindow *tl_race_view_window(TlWindow *win);

/* For tests and scripts (w: the Race window). */
#define TL_RACE_VIEW_ROWS 4
/* Row i (0-based): enabled, algorithm (a registry name) and settings ("subsets=4,beta=0.1"). */
gboolean tl_race_view_set_entrant(GtkWindow *w, guint i, gboolean enabled, const char *algo,
                                  const char *settings, GError **error);
/* The reference's spec and its updates, the updates per entrant. */
void tl_race_view_set_reference(GtkWindow *w, const char *spec, guint updates);
void tl_race_view_set_updates(GtkWindow *w, guint updates);
/* The race description the rows make (what Start runs); NULL + GError for fewer than 2 or a
 * bad setting. */
TlRaceSpec *tl_race_view_spec(GtkWindow *w, GError **error);
GtkWidget *tl_race_view_start_button(GtkWindow *w);
/* Running (preparing or stepping), the rounds shown, the last error ("" none). */
gboolean tl_race_view_running(GtkWindow *w);
guint tl_race_view_rounds(GtkWindow *w);
/* Races started (Start clicked with a valid description), counted from 0. */
guint tl_race_view_starts(GtkWindow *w);
const char *tl_race_view_error(GtkWindow *w);
const char *tl_race_view_winner_text(GtkWindow *w);
/* 0: the objective gap, 1: the chosen metric. */
TlPlot *tl_race_view_plot(GtkWindow *w, guint i);
/* x against epochs (TRUE) or wall-clock seconds (FALSE). */
void tl_race_view_set_x_epochs(GtkWindow *w, gboolean epochs);
/* The race's CSV (tl_race_csv, g_free; NULL before a race) and the PNG of the plots and images. */
char *tl_race_view_csv(GtkWindow *w);
gboolean tl_race_view_save_csv(GtkWindow *w, const char *path, GError **error);
gboolean tl_race_view_save_png(GtkWindow *w, const char *path, GError **error);

G_END_DECLS
