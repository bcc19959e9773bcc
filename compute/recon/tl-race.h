/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A race: 2 to 8 solvers (algorithm + settings, each on its own operator or the same one) on
 * the same data, stepped in turn one update each on the one device, so they share the device's
 * state (clocks, caches) alike. After each update it records that entrant's own wall time
 * (its steps only: the metrics, the objective and the other entrants are not counted), its
 * epoch (the data passes of its steps, tl_solver_data_passes: an EM pass or a full gradient is
 * 1, a subset's gradient 1/S, an objective 1/2, so SVRG's full gradients and its two subset
 * gradients per step count as the work they are), its objective (the solver's, computed after
 * the timed step when asked) and the PETRIC metrics against a reference (tl-metrics.h), and
 * each entrant's time to target. tl_race_reference runs one solver to a tolerance: the
 * reference image and objective the metrics and gaps are measured against. The race sets each
 * solver's callback while it steps it and clears it after (the objective a step reports). */
#pragma once
#include "tl-api.h"
#include "tl-solver.h"
#include "tl-metrics.h"

G_BEGIN_DECLS

#define TL_RACE_MAX_ENTRANTS 8

typedef struct {
  guint entrant;         /* 0-based, in the order added */
  guint update;          /* this entrant's updates so far (1-based) */
  double seconds;        /* this entrant's own wall time so far */
  double epoch;          /* data passes so far (tl_solver_data_passes of its steps) */
  double objective;      /* NAN when not computed */
  const double *metrics; /* tl_metrics_n_values() values (tl_metrics_evaluate); NULL: none */
  gboolean met;          /* the metrics meet every PETRIC threshold */
  double time_to_target; /* seconds; NAN until reached */
} TlRaceRecord;

typedef void (*TlRaceCallback)(const TlRaceRecord *record, gpointer user_data);

typedef struct _TlRace TlRace;

/* metrics borrowed (must outlive the race); NULL = no metrics (objective and time only). */
TL_API TlRace *tl_race_new(const TlMetrics *metrics);
TL_API void tl_race_free(TlRace *race);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRace, tl_race_free)

/* The solver is borrowed; its grid must be the metrics' grid. GError past
 * TL_RACE_MAX_ENTRANTS, for a label used twice or a grid that differs. */
TL_API gboolean tl_race_add(TlRace *race, const char *label, TlSolver *solver, GError **error);
/* Compute each entrant's objective after every update (untimed; may cost a projection of all
 * data). Default FALSE: the objective a step reports itself, else NAN. */
TL_API void tl_race_set_objective(TlRace *race, gboolean every_update);
TL_API void tl_race_set_callback(TlRace *race, TlRaceCallback cb, gpointer user_data);
/* Checked before each update and passed to every solver (a cancel mid-step keeps the records
 * of the updates completed; the run returns G_IO_ERROR_CANCELLED). */
TL_API void tl_race_set_cancellable(TlRace *race, GCancellable *cancellable);

/* Up to `updates` more updates per entrant, round robin; with stop_at_target an entrant that
 * reached the target takes no more turns (the run ends when all have, or at `updates`). */
TL_API gboolean tl_race_run(TlRace *race, guint updates, gboolean stop_at_target, GError **error);

TL_API guint tl_race_n_entrants(const TlRace *race);
TL_API const char *tl_race_label(const TlRace *race, guint entrant);
TL_API guint tl_race_n_records(const TlRace *race, guint entrant);
/* Record i (0-based) of an entrant; valid until the next run. */
TL_API const TlRaceRecord *tl_race_record(const TlRace *race, guint entrant, guint i);
/* Seconds (and epochs) to the PETRIC target; NAN when not reached or without metrics. */
TL_API double tl_race_time_to_target(const TlRace *race, guint entrant);
TL_API double tl_race_epoch_to_target(const TlRace *race, guint entrant);

/* Every record as CSV: label,update,seconds,epoch,objective,rmse,background_rmse,voi_NAME...,met
 * (one line per record, entrants in turn order; "nan" where not computed). g_free. */
TL_API char *tl_race_csv(const TlRace *race);
TL_API gboolean tl_race_save_csv(const TlRace *race, const char *path, GError **error);

/* The reference run: steps `solver` until the relative change of its objective over one full
 * pass of subsets is at most `tolerance` (0 = never) or `max_updates` were made; the objective
 * is evaluated after each full pass. *updates and *objective (either may be NULL) get the
 * updates made and the final objective; the reference image is tl_solver_image(solver). */
TL_API gboolean tl_race_reference(TlSolver *solver, guint max_updates, double tolerance,
                                  GCancellable *cancellable, guint *updates, double *objective,
                                  GError **error);

G_END_DECLS
