/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Races of solvers (tl-race.h): round robin, one update per turn, each timed alone. */
#include "tl-race.h"
#include "tl-error.h"
#include <math.h>

typedef struct {
  char *label;
  TlSolver *solver;
  GArray *records; /* TlRaceRecord */
  GArray *values;  /* n_values doubles per record */
  double seconds;
  double passes; /* data passes of its own steps (tl_solver_data_passes) */
  TlTarget target;
  double epoch_to_target;
} Entrant;

struct _TlRace {
  const TlMetrics *metrics;
  GPtrArray *entrants; /* Entrant * */
  gboolean objective;
  TlRaceCallback cb;
  gpointer cb_data;
  GCancellable *cancel;
};

static void entrant_free(gpointer p) {
  Entrant *e = p;
  g_free(e->label);
  g_array_unref(e->records);
  g_array_unref(e->values);
  g_free(e);
}

TlRace *tl_race_new(const TlMetrics *metrics) {
  TlRace *race = g_new0(TlRace, 1);
  race->metrics = metrics;
  race->entrants = g_ptr_array_new_with_free_func(entrant_free);
  return race;
}

void tl_race_free(TlRace *race) {
  if (!race) return;
  g_ptr_array_unref(race->entrants);
  g_clear_object(&race->cancel);
  g_free(race);
}

static guint n_values(const TlRace *race) {
  return race->metrics ? tl_metrics_n_values(race->metrics) : 0;
}

gboolean tl_race_add(TlRace *race, const char *label, TlSolver *solver, GError **error) {
  if (!label || !*label || !solver) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race: an entrant needs a label and a solver");
    return FALSE;
  }
  if (race->entrants->len >= TL_RACE_MAX_ENTRANTS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race: entrant '%s' would be number %u: at most %d race", label,
                race->entrants->len + 1, TL_RACE_MAX_ENTRANTS);
    return FALSE;
  }
  for (guint i = 0; i < race->entrants->len; i++)
    if (g_str_equal(((Entrant *)race->entrants->pdata[i])->label, label)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "race: label '%s' given twice (expected one label per entrant)", label);
      return FALSE;
    }
  if (race->metrics && !tl_image_grid_equal(tl_solver_grid(solver), tl_metrics_grid(race->metrics))) {
    g_autofree char *got = tl_image_grid_key(tl_solver_grid(solver));
    g_autofree char *want = tl_image_grid_key(tl_metrics_grid(race->metrics));
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race: entrant '%s' reconstructs on grid %s: expected the reference's %s", label,
                got, want);
    return FALSE;
  }
  Entrant *e = g_new0(Entrant, 1);
  e->label = g_strdup(label);
  e->solver = solver;
  e->records = g_array_new(FALSE, FALSE, sizeof(TlRaceRecord));
  e->values = g_array_new(FALSE, FALSE, sizeof(double));
  tl_target_init(&e->target, TL_METRICS_CONSECUTIVE);
  e->epoch_to_target = NAN;
  g_ptr_array_add(race->entrants, e);
  return TRUE;
}

void tl_race_set_objective(TlRace *race, gboolean every_update) { race->objective = every_update; }

void tl_race_set_callback(TlRace *race, TlRaceCallback cb, gpointer user_data) {
  race->cb = cb;
  race->cb_data = user_data;
}

void tl_race_set_cancellable(TlRace *race, GCancellable *cancellable) {
  g_set_object(&race->cancel, cancellable);
}

/* The record with its metrics pointer into the (possibly reallocated) values array. */
static TlRaceRecord *record_at(const TlRace *race, Entrant *e, guint i) {
  TlRaceRecord *r = &g_array_index(e->records, TlRaceRecord, i);
  guint nv = n_values(race);
  r->metrics = nv ? &g_array_index(e->values, double, (gsize)i * nv) : NULL;
  return r;
}

/* Captures the objective a step reports itself (the solver's callback is the race's while
 * the step runs; the caller's is put back after). */
typedef struct {
  double objective;
} StepCapture;

static void capture(const TlSolverProgress *p, gpointer data) {
  ((StepCapture *)data)->objective = p->objective;
}

static gboolean one_update(TlRace *race, guint index, GError **error) {
  Entrant *e = race->entrants->pdata[index];
  StepCapture cap = {NAN};
  tl_solver_set_callback(e->solver, capture, &cap);
  double p0 = tl_solver_data_passes(e->solver);
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = tl_solver_step(e->solver, error);
  e->seconds += (g_get_monotonic_time() - t0) * 1e-6;
  guint subsets = MAX(tl_operator_n_subsets(tl_solver_operator(e->solver)), 1);
  /* the step's own data passes (not the race's untimed objective); an algorithm that counts
   * none (least squares) is taken as one subset's share per step */
  double dp = tl_solver_data_passes(e->solver) - p0;
  e->passes += dp > 0 ? dp : 1.0 / subsets;
  tl_solver_set_callback(e->solver, NULL, NULL);
  if (!ok) {
    g_prefix_error(error, "race entrant '%s': ", e->label);
    return FALSE;
  }
  TlRaceRecord r = {.entrant = index, .update = e->records->len + 1, .seconds = e->seconds,
                    .objective = cap.objective, .time_to_target = NAN};
  r.epoch = e->passes;
  if (race->objective && !tl_solver_objective(e->solver, &r.objective, error)) {
    g_prefix_error(error, "race entrant '%s', objective: ", e->label);
    return FALSE;
  }
  guint nv = n_values(race);
  if (nv) {
    g_autoptr(TlImage) im = tl_solver_image(e->solver, error);
    if (!im) return FALSE;
    double v[nv];
    if (!tl_metrics_evaluate(race->metrics, im->data, tl_image_grid_n_voxels(&im->grid), v, error))
      return FALSE;
    g_array_append_vals(e->values, v, nv);
    r.met = tl_metrics_met(race->metrics, v);
    gboolean before = !isnan(e->target.reached);
    if (tl_target_push(&e->target, r.seconds, r.met) && !before) {
      /* the epoch of the record that began the run of met evaluations */
      guint first = e->records->len + 1 - e->target.consecutive;
      e->epoch_to_target = first < e->records->len
                               ? g_array_index(e->records, TlRaceRecord, first).epoch
                               : r.epoch;
    }
    r.time_to_target = e->target.reached;
  }
  g_array_append_val(e->records, r);
  if (race->cb) race->cb(record_at(race, e, e->records->len - 1), race->cb_data);
  return TRUE;
}

gboolean tl_race_run(TlRace *race, guint updates, gboolean stop_at_target, GError **error) {
  if (race->entrants->len == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race: no entrants (expected 1 to %d)",
                TL_RACE_MAX_ENTRANTS);
    return FALSE;
  }
  for (guint i = 0; i < race->entrants->len; i++)
    tl_solver_set_cancellable(((Entrant *)race->entrants->pdata[i])->solver, race->cancel);
  for (guint u = 0; u < updates; u++) {
    gboolean any = FALSE;
    for (guint i = 0; i < race->entrants->len; i++) {
      Entrant *e = race->entrants->pdata[i];
      if (stop_at_target && race->metrics && !isnan(e->target.reached)) continue;
      if (g_cancellable_set_error_if_cancelled(race->cancel, error)) return FALSE;
      if (!one_update(race, i, error)) return FALSE;
      any = TRUE;
    }
    if (!any) break;
  }
  return TRUE;
}

guint tl_race_n_entrants(const TlRace *race) { return race->entrants->len; }

static Entrant *entrant(const TlRace *race, guint i) {
  return i < race->entrants->len ? race->entrants->pdata[i] : NULL;
}

const char *tl_race_label(const TlRace *race, guint i) {
  Entrant *e = entrant(race, i);
  return e ? e->label : NULL;
}

guint tl_race_n_records(const TlRace *race, guint i) {
  Entrant *e = entrant(race, i);
  return e ? e->records->len : 0;
}

const TlRaceRecord *tl_race_record(const TlRace *race, guint i, guint k) {
  Entrant *e = entrant(race, i);
  return e && k < e->records->len ? record_at(race, e, k) : NULL;
}

double tl_race_time_to_target(const TlRace *race, guint i) {
  Entrant *e = entrant(race, i);
  return e ? e->target.reached : NAN;
}

double tl_race_epoch_to_target(const TlRace *race, guint i) {
  Entrant *e = entrant(race, i);
  return e ? e->epoch_to_target : NAN;
}

/* Labels may hold commas (algorithm settings): quoted as RFC 4180 asks. */
static void csv_text(GString *s, const char *t) {
  if (!strpbrk(t, ",\"\n")) {
    g_string_append(s, t);
    return;
  }
  g_string_append_c(s, '"');
  for (const char *p = t; *p; p++) {
    if (*p == '"') g_string_append_c(s, '"');
    g_string_append_c(s, *p);
  }
  g_string_append_c(s, '"');
}

static void csv_number(GString *s, double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append_c(s, ',');
  g_string_append(s, isnan(v) ? "nan" : g_ascii_formatd(buf, sizeof buf, "%.9g", v));
}

char *tl_race_csv(const TlRace *race) {
  GString *s = g_string_new("label,update,seconds,epoch,objective");
  guint nv = n_values(race);
  if (nv) {
    g_string_append(s, ",rmse,background_rmse");
    for (guint v = 0; v < tl_metrics_n_voi(race->metrics); v++) {
      g_string_append_c(s, ',');
      g_autofree char *col = g_strconcat("voi_", tl_metrics_voi_name(race->metrics, v), NULL);
      csv_text(s, col);
    }
    g_string_append(s, ",met");
  }
  g_string_append_c(s, '\n');
  /* turn order: update u of every entrant before update u + 1 */
  guint most = 0;
  for (guint i = 0; i < race->entrants->len; i++) most = MAX(most, tl_race_n_records(race, i));
  for (guint u = 0; u < most; u++)
    for (guint i = 0; i < race->entrants->len; i++) {
      Entrant *e = race->entrants->pdata[i];
      if (u >= e->records->len) continue;
      const TlRaceRecord *r = record_at(race, e, u);
      csv_text(s, e->label);
      g_string_append_printf(s, ",%u", r->update);
      csv_number(s, r->seconds);
      csv_number(s, r->epoch);
      csv_number(s, r->objective);
      for (guint v = 0; v < nv; v++) csv_number(s, r->metrics[v]);
      if (nv) g_string_append(s, r->met ? ",1" : ",0");
      g_string_append_c(s, '\n');
    }
  return g_string_free(s, FALSE);
}

gboolean tl_race_save_csv(const TlRace *race, const char *path, GError **error) {
  g_autofree char *text = tl_race_csv(race);
  g_autoptr(GError) e = NULL;
  if (!g_file_set_contents(path, text, -1, &e)) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "race: cannot write %s: %s", path, e->message);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_race_reference(TlSolver *solver, guint max_updates, double tolerance,
                           GCancellable *cancellable, guint *updates, double *objective,
                           GError **error) {
  if (!(tolerance >= 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race reference: tolerance %g: expected >= 0", tolerance);
    return FALSE;
  }
  tl_solver_set_cancellable(solver, cancellable);
  guint subsets = MAX(tl_operator_n_subsets(tl_solver_operator(solver)), 1);
  double last = NAN, now = NAN;
  guint u = 0;
  while (u < max_updates) {
    if (!tl_solver_step(solver, error)) return FALSE;
    u++;
    if (tl_solver_sub_iterations(solver) % subsets != 0 && u < max_updates) continue;
    if (!tl_solver_objective(solver, &now, error)) return FALSE;
    gboolean converged = tolerance > 0 && !isnan(last) &&
                         fabs(now - last) <= tolerance * MAX(fabs(now), G_MINDOUBLE);
    last = now;
    if (converged) break;
  }
  if (isnan(now) && !tl_solver_objective(solver, &now, error)) return FALSE;
  if (updates) *updates = u;
  if (objective) *objective = now;
  return TRUE;
}
