/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The race as a runner job, and the board the Race window reads (tl-race-job.h). */
#include <math.h>
#include <string.h>
#include "tl-race-job.h"
#include "run/tl-run-race-session.h"
#include "tl-progress.h"

typedef struct {
  char *label;
  GArray *records; /* TlRaceBoardRecord */
  GArray *values;  /* n_values doubles per record */
  double time_to_target, epoch_to_target;
  float *slice;
  guint width, height;
} BoardEntrant;

struct _TlRaceBoard {
  gint refs;
  GMutex lock;
  GPtrArray *entrants; /* BoardEntrant */
  GPtrArray *value_names;
  double reference_objective;
  char *csv;
  guint serial;
};

static void entrant_free(gpointer p) {
  BoardEntrant *e = p;
  g_free(e->label);
  g_array_unref(e->records);
  g_array_unref(e->values);
  g_free(e->slice);
  g_free(e);
}

TlRaceBoard *tl_race_board_new(void) {
  TlRaceBoard *b = g_new0(TlRaceBoard, 1);
  b->refs = 1;
  g_mutex_init(&b->lock);
  b->entrants = g_ptr_array_new_with_free_func(entrant_free);
  b->value_names = g_ptr_array_new_with_free_func(g_free);
  b->reference_objective = NAN;
  return b;
}

TlRaceBoard *tl_race_board_ref(TlRaceBoard *b) {
  g_atomic_int_inc(&b->refs);
  return b;
}

void tl_race_board_unref(TlRaceBoard *b) {
  if (!b || !g_atomic_int_dec_and_test(&b->refs)) return;
  g_ptr_array_unref(b->entrants);
  g_ptr_array_unref(b->value_names);
  g_free(b->csv);
  g_mutex_clear(&b->lock);
  g_free(b);
}

#define LOCKED(b, type, expr)     \
  g_mutex_lock(&(b)->lock);       \
  type result_ = (expr);          \
  g_mutex_unlock(&(b)->lock);     \
  return result_

static BoardEntrant *entrant_at(TlRaceBoard *b, guint i) {
  return i < b->entrants->len ? b->entrants->pdata[i] : NULL;
}

guint tl_race_board_n_entrants(TlRaceBoard *b) { LOCKED(b, guint, b->entrants->len); }
guint tl_race_board_serial(TlRaceBoard *b) { LOCKED(b, guint, b->serial); }
guint tl_race_board_n_values(TlRaceBoard *b) { LOCKED(b, guint, b->value_names->len); }
double tl_race_board_reference_objective(TlRaceBoard *b) {
  LOCKED(b, double, b->reference_objective);
}
char *tl_race_board_csv(TlRaceBoard *b) { LOCKED(b, char *, g_strdup(b->csv)); }

char *tl_race_board_label(TlRaceBoard *b, guint i) {
  LOCKED(b, char *, entrant_at(b, i) ? g_strdup(entrant_at(b, i)->label) : NULL);
}

char *tl_race_board_value_name(TlRaceBoard *b, guint v) {
  LOCKED(b, char *, v < b->value_names->len ? g_strdup(b->value_names->pdata[v]) : NULL);
}

guint tl_race_board_records(TlRaceBoard *b, guint i, TlRaceBoardRecord **records,
                            double **values) {
  g_mutex_lock(&b->lock);
  BoardEntrant *e = entrant_at(b, i);
  guint n = e ? e->records->len : 0;
  if (records) *records = e ? g_memdup2(e->records->data, n * sizeof(TlRaceBoardRecord)) : NULL;
  if (values)
    *values = e ? g_memdup2(e->values->data, (gsize)e->values->len * sizeof(double)) : NULL;
  g_mutex_unlock(&b->lock);
  return n;
}

double tl_race_board_time_to_target(TlRaceBoard *b, guint i, double *epoch) {
  g_mutex_lock(&b->lock);
  BoardEntrant *e = entrant_at(b, i);
  double t = e ? e->time_to_target : NAN;
  if (epoch) *epoch = e ? e->epoch_to_target : NAN;
  g_mutex_unlock(&b->lock);
  return t;
}

float *tl_race_board_slice(TlRaceBoard *b, guint i, guint *width, guint *height) {
  g_mutex_lock(&b->lock);
  BoardEntrant *e = entrant_at(b, i);
  float *s = e && e->slice ? g_memdup2(e->slice, (gsize)e->width * e->height * sizeof(float)) : NULL;
  *width = e ? e->width : 0;
  *height = e ? e->height : 0;
  g_mutex_unlock(&b->lock);
  return s;
}

/* ---- the job ---- */

typedef struct {
  TlJob parent;
  TlRaceSession *session;
  TlRaceBoard *board;
  guint published;  /* records copied per entrant so far: the same for all but the last round */
} TlRaceJob;

/* The race's new records, the entrants' middle slices and the CSV onto the board (worker). */
static gboolean publish(TlRaceJob *self, GError **error) {
  TlRace *race = tl_race_session_race(self->session);
  const TlMetrics *m = tl_race_session_metrics(self->session);
  guint nv = tl_metrics_n_values(m), n = tl_race_n_entrants(race);
  const TlImageGrid *g = tl_race_session_grid(self->session);
  guint nx = g->dims[0], ny = g->dims[1], z = g->dims[2] / 2;
  float *slices[TL_RACE_MAX_ENTRANTS] = {0};
  for (guint i = 0; i < n; i++) {
    slices[i] = g_new(float, (gsize)nx * ny);
    if (!tl_array_download_range(tl_solver_image_array(tl_race_session_solver(self->session, i)),
                                 (guint64)z * nx * ny, (guint64)nx * ny, slices[i], error)) {
      for (guint k = 0; k <= i; k++) g_free(slices[k]);
      return FALSE;
    }
  }
  g_autofree char *csv = tl_race_csv(race);
  g_mutex_lock(&self->board->lock);
  for (guint i = 0; i < n; i++) {
    BoardEntrant *e = entrant_at(self->board, i);
    for (guint k = e->records->len; k < tl_race_n_records(race, i); k++) {
      const TlRaceRecord *r = tl_race_record(race, i, k);
      TlRaceBoardRecord br = {r->update, r->seconds, r->epoch, r->objective, r->met};
      g_array_append_val(e->records, br);
      if (nv) g_array_append_vals(e->values, r->metrics, nv);
    }
    e->time_to_target = tl_race_time_to_target(race, i);
    e->epoch_to_target = tl_race_epoch_to_target(race, i);
    g_free(e->slice);
    e->slice = slices[i];
    e->width = nx;
    e->height = ny;
  }
  g_free(self->board->csv);
  self->board->csv = g_steal_pointer(&csv);
  self->board->serial++;
  g_mutex_unlock(&self->board->lock);
  return TRUE;
}

static gboolean race_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlRaceJob *self = (TlRaceJob *)job;
  TlRace *race = tl_race_session_race(self->session);
  tl_race_set_cancellable(race, cancel);
  gint64 t0 = g_get_monotonic_time();
  guint before = tl_race_session_rounds(self->session);
  if (!tl_race_session_run(self->session, 1, error) || !publish(self, error)) return FALSE;
  guint rounds = tl_race_session_rounds(self->session);
  *out = (TlJobStep){.sub_iterations = rounds, .iteration = rounds, .subset = 0, .n_subsets = 1,
                     .loglik = NAN, .rmse = NAN,
                     .seconds = (g_get_monotonic_time() - t0) * 1e-6};
  if (rounds == before) out->note = g_strdup("every entrant reached the target");
  return TRUE;
}

static const TlArray *race_image(TlJob *job) {
  TlRaceJob *self = (TlRaceJob *)job;
  return tl_solver_image_array(tl_race_session_solver(self->session, 0));
}

static void race_free(TlJob *job) {
  TlRaceJob *self = (TlRaceJob *)job;
  tl_race_session_free(self->session);
  tl_race_board_unref(self->board);
  g_free(self);
}

static const TlJobVTable race_vt = {.step = race_step, .image = race_image, .free = race_free};

TlJob *tl_race_job_new(TlContext *ctx, const TlRaceSpec *spec, const TlDataset *ds,
                       TlRaceBoard *board, GError **error) {
  /* the reference run is the long part: the runner's Cancel (its progress's) stops it */
  TlRaceSession *s = tl_race_session_new(ctx, spec, ds, tl_progress_cancellable(), error);
  if (!s) return NULL;
  TlRaceJob *self = g_new0(TlRaceJob, 1);
  self->session = s;
  self->board = tl_race_board_ref(board);
  self->parent.vt = &race_vt;
  self->parent.grid = *tl_race_session_grid(s);
  self->parent.sub_iterations_per_iteration = 1;
  self->parent.events = ds ? tl_dataset_measurements(ds) : 0;
  TlRace *race = tl_race_session_race(s);
  const TlMetrics *m = tl_race_session_metrics(s);
  g_mutex_lock(&board->lock);
  g_ptr_array_set_size(board->entrants, 0);
  g_ptr_array_set_size(board->value_names, 0);
  for (guint i = 0; i < tl_race_n_entrants(race); i++) {
    BoardEntrant *e = g_new0(BoardEntrant, 1);
    e->label = g_strdup(tl_race_label(race, i));
    e->records = g_array_new(FALSE, FALSE, sizeof(TlRaceBoardRecord));
    e->values = g_array_new(FALSE, FALSE, sizeof(double));
    e->time_to_target = e->epoch_to_target = NAN;
    g_ptr_array_add(board->entrants, e);
  }
  g_ptr_array_add(board->value_names, g_strdup("RMSE"));
  g_ptr_array_add(board->value_names, g_strdup("background RMSE"));
  for (guint v = 0; v < tl_metrics_n_voi(m); v++)
    g_ptr_array_add(board->value_names, g_strdup_printf("VOI %s", tl_metrics_voi_name(m, v)));
  board->reference_objective = tl_race_session_reference_objective(s);
  board->serial++;
  g_mutex_unlock(&board->lock);
  return &self->parent;
}
