/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.race's C half: a race description (run/tl-run-race-spec.h) from a race file and/or
 * `key = value` pairs through the spec's own setter (so keys, defaults and errors are the run
 * layer's), run by run/tl-run-race-session.h as `tomolab-cli race` and the window run it, with
 * the GIL released for the set-up and for each round; its records as numpy arrays.
 * tomolab/__init__.py turns the keyword arguments into the pairs (arrays into image files). */
#include "tlpy.h"
#include "recon/tl-race.h"
#include "run/tl-run-race-session.h"
#include <math.h>

typedef struct {
  TlContext *ctx;        /* borrowed: the Python context's, or own_ctx */
  TlContext *own_ctx;    /* the spec's device when no context= was given */
  TlRaceSpec *spec;
  GCancellable *cancel;
  TlRaceSession *session;
  GPtrArray *images;     /* TlImage *: each entrant's last image */
} Job;

static gboolean work_new(gpointer data, GError **error) {
  Job *j = data;
  if (!j->ctx && !(j->ctx = j->own_ctx = tl_context_new(j->spec->device, error))) return FALSE;
  return (j->session = tl_race_session_new(j->ctx, j->spec, NULL, j->cancel, error)) != NULL;
}

static gboolean work_round(gpointer data, GError **error) {
  return tl_race_session_run(((Job *)data)->session, 1, error);
}

/* the last images, and the CSV where the spec names one (as the CLI writes it) */
static gboolean work_finish(gpointer data, GError **error) {
  Job *j = data;
  TlRace *race = tl_race_session_race(j->session);
  for (guint e = 0; e < tl_race_n_entrants(race); e++) {
    TlImage *im = tl_solver_image(tl_race_session_solver(j->session, e), error);
    if (!im) return FALSE;
    g_ptr_array_add(j->images, im);
  }
  if (j->spec->csv && !tl_race_save_csv(race, j->spec->csv, error)) {
    g_prefix_error(error, "race key 'csv' = %s: ", j->spec->csv);
    return FALSE;
  }
  return TRUE;
}

enum { COL_UPDATE, COL_SECONDS, COL_EPOCH, COL_OBJECTIVE, COL_METRIC, COL_MET };

static PyObject *column(const TlRace *race, guint e, int which, guint v) {
  guint n = tl_race_n_records(race, e);
  npy_intp dims[1] = {n};
  int type = which == COL_MET ? NPY_BOOL : which == COL_UPDATE ? NPY_UINT32 : NPY_FLOAT64;
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(1, dims, type);
  if (!a) return NULL;
  for (guint k = 0; k < n; k++) {
    const TlRaceRecord *r = tl_race_record(race, e, k);
    double *d = (double *)PyArray_DATA(a) + k;
    switch (which) {
    case COL_UPDATE: ((guint32 *)PyArray_DATA(a))[k] = r->update; break;
    case COL_SECONDS: *d = r->seconds; break;
    case COL_EPOCH: *d = r->epoch; break;
    case COL_OBJECTIVE: *d = r->objective; break;
    case COL_METRIC: *d = r->metrics ? r->metrics[v] : NAN; break;
    case COL_MET: ((npy_bool *)PyArray_DATA(a))[k] = (npy_bool)r->met; break;
    }
  }
  return (PyObject *)a;
}

static int set_item(PyObject *d, const char *key, PyObject *value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc;
}

static PyObject *entrant(Job *j, guint e) {
  const TlRace *race = tl_race_session_race(j->session);
  const TlMetrics *m = tl_race_session_metrics(j->session);
  PyObject *d = PyDict_New(), *vois = PyDict_New();
  if (!d || !vois) {
    Py_XDECREF(vois);
    goto fail;
  }
  for (guint v = 0; v < tl_metrics_n_voi(m); v++)
    if (set_item(vois, tl_metrics_voi_name(m, v), column(race, e, COL_METRIC, 2 + v)) < 0) {
      Py_DECREF(vois);
      goto fail;
    }
  if (set_item(d, "voi", vois) < 0 || /* takes vois either way */
      set_item(d, "update", column(race, e, COL_UPDATE, 0)) < 0 ||
      set_item(d, "seconds", column(race, e, COL_SECONDS, 0)) < 0 ||
      set_item(d, "epoch", column(race, e, COL_EPOCH, 0)) < 0 ||
      set_item(d, "objective", column(race, e, COL_OBJECTIVE, 0)) < 0 ||
      set_item(d, "rmse", column(race, e, COL_METRIC, 0)) < 0 ||
      set_item(d, "background_rmse", column(race, e, COL_METRIC, 1)) < 0 ||
      set_item(d, "met", column(race, e, COL_MET, 0)) < 0 ||
      set_item(d, "time_to_target", PyFloat_FromDouble(tl_race_time_to_target(race, e))) < 0 ||
      set_item(d, "epoch_to_target", PyFloat_FromDouble(tl_race_epoch_to_target(race, e))) < 0 ||
      set_item(d, "image", tlpy_image_to(j->images->pdata[e])) < 0)
    goto fail;
  return d;
fail:
  Py_XDECREF(d);
  return NULL;
}

static PyObject *results(Job *j) {
  TlRace *race = tl_race_session_race(j->session);
  guint made;
  double seconds;
  tl_race_session_reference_run(j->session, &made, &seconds, NULL);
  g_autofree char *csv = tl_race_csv(race);
  PyObject *out = PyDict_New(), *entrants = PyDict_New();
  if (!out || !entrants) goto fail;
  for (guint e = 0; e < tl_race_n_entrants(race); e++)
    if (set_item(entrants, tl_race_label(race, e), entrant(j, e)) < 0) goto fail;
  int rc = set_item(out, "entrants", entrants);
  entrants = NULL;
  if (rc < 0 || set_item(out, "csv", PyUnicode_FromString(csv)) < 0 ||
      set_item(out, "norm",
               PyFloat_FromDouble(tl_metrics_norm(tl_race_session_metrics(j->session)))) < 0 ||
      set_item(out, "reference", tlpy_image_to(tl_race_session_reference(j->session))) < 0 ||
      set_item(out, "reference_objective",
               PyFloat_FromDouble(tl_race_session_reference_objective(j->session))) < 0 ||
      set_item(out, "reference_updates", PyLong_FromUnsignedLong(made)) < 0 ||
      set_item(out, "reference_seconds", PyFloat_FromDouble(seconds)) < 0 ||
      set_item(out, "rounds", PyLong_FromUnsignedLong(tl_race_session_rounds(j->session))) < 0)
    goto fail;
  return out;
fail:
  Py_XDECREF(entrants);
  Py_XDECREF(out);
  return NULL;
}

/* The spec: the race file's keys (if any), then the pairs over them, as the CLI's options go
 * over its --race file. NULL with a Python exception. */
static TlRaceSpec *spec_from(const char *race_file, PyObject *pairs) {
  GError *error = NULL;
  TlRaceSpec *spec = race_file ? tl_race_spec_load(race_file, &error) : tl_race_spec_new();
  if (!spec) return tlpy_raise(error), NULL;
  PyObject *seq = PySequence_Fast(pairs, "keys: expected a list of (key, value) pairs");
  if (!seq) goto fail;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const char *key, *value;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss;keys: expected (key, value) "
                          "pairs of str", &key, &value))
      goto fail;
    if (!tl_race_spec_set(spec, key, value, &error)) {
      tlpy_raise(error);
      goto fail;
    }
  }
  Py_DECREF(seq);
  return spec;
fail:
  Py_XDECREF(seq);
  tl_race_spec_free(spec);
  return NULL;
}

/* progress(fraction, message) after round k of total; 1: go on, 0: stop, -1: raised */
static int round_report(PyObject *progress, guint k, guint total) {
  g_autofree char *msg = g_strdup_printf("race: round %u of %u", k, total);
  PyObject *r = PyObject_CallFunction(progress, "ds", total ? (double)k / total : 1.0, msg);
  if (!r) return -1;
  int go = r != Py_False;
  Py_DECREF(r);
  return go;
}

/* _race(keys, race_file=None, context=None, progress=None) */
static PyObject *py_race(PyObject *mod, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"keys", "race_file", "context", "progress", NULL};
  PyObject *pairs, *context = Py_None, *progress = Py_None, *out = NULL, *saved, *rep = NULL;
  const char *race_file = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|zOO:race", kwlist, &pairs, &race_file, &context,
                                   &progress))
    return NULL;
  Job j = {.cancel = g_cancellable_new(),
           .images = g_ptr_array_new_with_free_func((GDestroyNotify)tl_image_free)};
  TlPyContext *c = NULL;
  GError *error = NULL;
  int r = -1;
  if (!(j.spec = spec_from(race_file, pairs))) goto done;
  /* the spec's checks before a device is made; the session repeats them */
  if (!tl_race_spec_validate(j.spec, &error)) {
    tlpy_raise(error);
    goto done;
  }
  /* context= wins over the spec's device key; without either, the module's context */
  if (context != Py_None || !j.spec->device) {
    if (!(c = tlpy_context_get(context))) goto done;
    j.ctx = c->ctx;
  }
  /* the set-up (data, reference, entrants) reports its long steps to progress or the hook */
  if (tlpy_progress_enter(progress, &saved) < 0) goto done;
  r = tlpy_run_or_raise(work_new, &j, j.cancel);
  tlpy_progress_leave(saved);
  if (r < 0) goto done;
  /* the rounds report themselves, the steps inside silenced so the fractions only rise; a
   * progress that returns False ends the race there, with the records so far */
  rep = Py_XNewRef(progress != Py_None ? progress : tlpy_progress_callable());
  if (tlpy_progress_enter(rep ? Py_False : Py_None, &saved) < 0) goto done;
  guint total = j.spec->updates;
  while (!tl_race_session_done(j.session)) {
    if ((r = tlpy_run_or_raise(work_round, &j, j.cancel)) < 0) break;
    int go = rep ? round_report(rep, tl_race_session_rounds(j.session), total) : 1;
    if (go <= 0) {
      r = go;
      break;
    }
  }
  if (r >= 0) r = tlpy_run_or_raise(work_finish, &j, j.cancel);
  tlpy_progress_leave(saved);
  if (r >= 0) out = results(&j);
done:
  Py_XDECREF(rep);
  Py_XDECREF(c);
  g_ptr_array_unref(j.images);
  tl_race_session_free(j.session);
  if (j.own_ctx) tl_context_free(j.own_ctx);
  tl_race_spec_free(j.spec);
  g_object_unref(j.cancel);
  return out;
}

PyMethodDef tlpy_race_functions[] = {
    {"_race", (PyCFunction)(void (*)(void))py_race, METH_VARARGS | METH_KEYWORDS,
     "_race(keys, race_file=None, context=None, progress=None) -> dict: the race of a race "
     "file and/or [(key, value)] over it (tomolab.race)"},
    {NULL}};
