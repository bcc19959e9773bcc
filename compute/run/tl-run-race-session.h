/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRaceSession: a race description (tl-run-race-spec.h) made into a race and run: the data
 * opened (or the caller's), the reference read or made, the PETRIC regions, the entrants
 * (tl-run-race.h) in a TlRace (recon/tl-race.h). The CLI's `race`, the window's Race dialog and
 * `tomolab --race` all go through here, so the same description runs the same race, update for
 * update. Slow calls (new, run): on a worker. */
#pragma once
#include "tl-api.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-race.h"
#include "run/tl-run-race-spec.h"

G_BEGIN_DECLS

typedef struct _TlRaceSession TlRaceSession;

/* Validates the spec; ds (borrowed, must outlive the session) or NULL: the spec's data file.
 * The reference is made here when the spec names reference-algo (and written to the spec's
 * reference when it names one), else read from reference. GError naming the key. */
TL_API TlRaceSession *tl_race_session_new(TlContext *ctx, const TlRaceSpec *spec,
                                          const TlDataset *ds, GCancellable *cancellable,
                                          GError **error);
TL_API void tl_race_session_free(TlRaceSession *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRaceSession, tl_race_session_free)

TL_API const TlRaceSpec *tl_race_session_spec(const TlRaceSession *s);
TL_API TlRace *tl_race_session_race(TlRaceSession *s);
TL_API const TlMetrics *tl_race_session_metrics(const TlRaceSession *s);
TL_API const TlImageGrid *tl_race_session_grid(const TlRaceSession *s);
/* The reference image, and when it was made here the updates, seconds and objective of its
 * run (NAN objective when read from a file). */
TL_API const TlImage *tl_race_session_reference(const TlRaceSession *s);
TL_API void tl_race_session_reference_run(const TlRaceSession *s, guint *updates, double *seconds,
                                          double *objective);
/* The reference image's objective, for the gap: its run's when made here, else (with the spec's
 * objective) computed under the first entrant's model; NAN otherwise. */
TL_API double tl_race_session_reference_objective(const TlRaceSession *s);

/* Up to `rounds` more rounds (one update per entrant each, tl_race_run with the spec's
 * until-target), never past the spec's updates. */
TL_API gboolean tl_race_session_run(TlRaceSession *s, guint rounds, GError **error);
/* The spec's updates are done, or (until-target) every entrant reached the target. */
TL_API gboolean tl_race_session_done(const TlRaceSession *s);
/* Rounds made so far. */
TL_API guint tl_race_session_rounds(const TlRaceSession *s);
TL_API TlSolver *tl_race_session_solver(TlRaceSession *s, guint entrant);

G_END_DECLS
