/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The window's race (issue 29): a race description (run/tl-run-race-spec.h) run as a TlJob on
 * the runner's worker (tl-runner.h: progress, Cancel, frames on the main context), one round
 * per sub-iteration (every entrant one update, in turn: tl-run-race-session.h, the session the
 * CLI's `race` runs). What the Race window shows is copied after each round into a TlRaceBoard
 * under its own lock, so the main thread never reads the race the worker is stepping. */
#pragma once
#include "tl-job.h"
#include "dataset/tl-dataset.h"
#include "run/tl-run-race-spec.h"

G_BEGIN_DECLS

typedef struct _TlRaceBoard TlRaceBoard;

/* One update of one entrant as the board keeps it. */
typedef struct {
  guint update;
  double seconds, epoch, objective;
  gboolean met;
} TlRaceBoardRecord;

TlRaceBoard *tl_race_board_new(void);
TlRaceBoard *tl_race_board_ref(TlRaceBoard *b);
void tl_race_board_unref(TlRaceBoard *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRaceBoard, tl_race_board_unref)

/* All reads copy (main thread). n_values: the metrics per record (rmse, background rmse, each
 * VOI: tl_metrics_evaluate's order); value_name(v) g_free. */
guint tl_race_board_n_entrants(TlRaceBoard *b);
char *tl_race_board_label(TlRaceBoard *b, guint entrant);
guint tl_race_board_n_values(TlRaceBoard *b);
char *tl_race_board_value_name(TlRaceBoard *b, guint v);
/* Records of an entrant (g_free) and its metrics (n records x n_values, g_free). */
guint tl_race_board_records(TlRaceBoard *b, guint entrant, TlRaceBoardRecord **records,
                            double **values);
double tl_race_board_time_to_target(TlRaceBoard *b, guint entrant, double *epoch);
/* The reference's objective (NAN: unknown): the gap is reference - objective (the race's
 * objectives are maximised). */
double tl_race_board_reference_objective(TlRaceBoard *b);
/* The entrant's image's middle axial slice after its last update (width x height floats,
 * row 0 at the top; g_free), NULL before. */
float *tl_race_board_slice(TlRaceBoard *b, guint entrant, guint *width, guint *height);
/* tl_race_csv of the race so far (g_free); NULL before the race exists. */
char *tl_race_board_csv(TlRaceBoard *b);
/* Counts the board's changes (a new round, the race made). */
guint tl_race_board_serial(TlRaceBoard *b);

/* The job (on the worker): the session of `spec` on ds (borrowed: must outlive the job), its
 * reference made or read there; each step one round. `board` is filled as the race goes. */
TlJob *tl_race_job_new(TlContext *ctx, const TlRaceSpec *spec, const TlDataset *ds,
                       TlRaceBoard *board, GError **error);

G_END_DECLS
