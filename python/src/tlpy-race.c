/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.race's C half: the entrants from "ALGORITHM[:KEY=VALUE,...]" on a data file
 * (run/tl-run-race.h), an optional reference run, the race (recon/tl-race.h) with the GIL
 * released, and its records as numpy arrays. */
#include "tlpy.h"
#include "recon/tl-race.h"
#include "run/tl-run-race.h"
#include <math.h>

typedef struct {
  TlContext *ctx;
  const char *path;
  char **algos;
  guint n_algos;
  TlImageGrid grid;
  gboolean have_grid;
  TlImage *ref;                         /* NULL: made by the reference run */
  TlImage *object, *background;         /* NULL = none */
  GPtrArray *voi_names, *voi_masks;     /* char *, TlImage * */
  const char *reference_algo;
  TlRunSpec *base;                      /* the race's run keys (kappa, seed) */
  guint reference_updates;
  double tolerance;
  guint updates;
  gboolean until_target, objective;
  GCancellable *cancel;
  /* results */
  TlDataset *ds;
  GPtrArray *recons;
  TlMetrics *metrics;
  TlRace *race;
  GPtrArray *images; /* TlImage *: each entrant's last image */
  double reference_objective;
  guint reference_made;
} Job;

static gboolean race_work(gpointer data, GError **error) {
  Job *j = data;
  if (!(j->ds = tl_dataset_open(j->path, error))) return FALSE;
  if (!j->have_grid) j->grid = j->ref ? j->ref->grid : j->ds->grid;
  if (!j->ref) {
    TlRecon *r = tl_run_race_entrant(j->ctx, j->ds, &j->grid, j->base, j->reference_algo, error);
    if (!r) return FALSE;
    g_ptr_array_add(j->recons, r);
    if (!tl_race_reference(tl_recon_solver(r), j->reference_updates, j->tolerance, j->cancel,
                           &j->reference_made, &j->reference_objective, error) ||
        !(j->ref = tl_recon_image(r, error)))
      return FALSE;
  }
  if (!(j->metrics = tl_metrics_new(j->ref, error))) return FALSE;
  if (j->object && !tl_metrics_set_object(j->metrics, j->object, error)) return FALSE;
  if (j->background && !tl_metrics_set_background(j->metrics, j->background, error)) return FALSE;
  for (guint v = 0; v < j->voi_masks->len; v++)
    if (!tl_metrics_add_voi(j->metrics, j->voi_names->pdata[v], j->voi_masks->pdata[v], error))
      return FALSE;
  j->race = tl_race_new(j->metrics);
  for (guint i = 0; i < j->n_algos; i++) {
    TlRecon *r = tl_run_race_entrant(j->ctx, j->ds, &j->grid, j->base, j->algos[i], error);
    if (!r) return FALSE;
    g_ptr_array_add(j->recons, r);
    if (!tl_race_add(j->race, j->algos[i], tl_recon_solver(r), error)) return FALSE;
  }
  tl_race_set_objective(j->race, j->objective);
  tl_race_set_cancellable(j->race, j->cancel);
  if (!tl_race_run(j->race, j->updates, j->until_target, error)) return FALSE;
  for (guint i = 0; i < j->recons->len; i++) {
    TlImage *im = tl_recon_image(j->recons->pdata[i], error);
    if (!im) return FALSE;
    g_ptr_array_add(j->images, im);
  }
  return TRUE;
}

static PyObject *column(const TlRace *race, guint e, guint which, guint v) {
  guint n = tl_race_n_records(race, e);
  npy_intp dims[1] = {n};
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(1, dims, which == 9 ? NPY_BOOL : which == 0 ? NPY_UINT32 : NPY_FLOAT64);
  if (!a) return NULL;
  for (guint k = 0; k < n; k++) {
    const TlRaceRecord *r = tl_race_record(race, e, k);
    switch (which) {
      case 0: ((guint32 *)PyArray_DATA(a))[k] = r->update; break;
      case 1: ((double *)PyArray_DATA(a))[k] = r->seconds; break;
      case 2: ((double *)PyArray_DATA(a))[k] = r->epoch; break;
      case 3: ((double *)PyArray_DATA(a))[k] = r->objective; break;
      case 4: ((double *)PyArray_DATA(a))[k] = r->metrics[v]; break;
      case 9: ((npy_bool *)PyArray_DATA(a))[k] = (npy_bool)r->met; break;
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

static PyObject *results(Job *j) {
  g_autofree char *csv = NULL;
  PyObject *out = PyDict_New(), *entrants = PyDict_New();
  if (!out || !entrants) goto fail;
  const TlRace *race = j->race;
  guint nvoi = tl_metrics_n_voi(j->metrics);
  for (guint e = 0; e < tl_race_n_entrants(race); e++) {
    PyObject *d = PyDict_New();
    if (!d || PyDict_SetItemString(entrants, tl_race_label(race, e), d) < 0) {
      Py_XDECREF(d);
      goto fail;
    }
    Py_DECREF(d);
    PyObject *vois = PyDict_New();
    if (set_item(d, "update", column(race, e, 0, 0)) < 0 ||
        set_item(d, "seconds", column(race, e, 1, 0)) < 0 ||
        set_item(d, "epoch", column(race, e, 2, 0)) < 0 ||
        set_item(d, "objective", column(race, e, 3, 0)) < 0 ||
        set_item(d, "rmse", column(race, e, 4, 0)) < 0 ||
        set_item(d, "background_rmse", column(race, e, 4, 1)) < 0 ||
        set_item(d, "met", column(race, e, 9, 0)) < 0 ||
        set_item(d, "time_to_target", PyFloat_FromDouble(tl_race_time_to_target(race, e))) < 0 ||
        set_item(d, "epoch_to_target", PyFloat_FromDouble(tl_race_epoch_to_target(race, e))) < 0 ||
        !vois)
      goto fail;
    for (guint v = 0; v < nvoi; v++)
      if (set_item(vois, tl_metrics_voi_name(j->metrics, v), column(race, e, 4, 2 + v)) < 0) {
        Py_DECREF(vois);
        goto fail;
      }
    if (set_item(d, "voi", vois) < 0 ||
        set_item(d, "image", tlpy_image_to(j->images->pdata[j->images->len - tl_race_n_entrants(race) + e])) < 0)
      goto fail;
  }
  csv = tl_race_csv(race);
  if (set_item(out, "entrants", entrants) < 0) {
    entrants = NULL;
    goto fail;
  }
  entrants = NULL;
  if (set_item(out, "csv", PyUnicode_FromString(csv)) < 0 ||
      set_item(out, "norm", PyFloat_FromDouble(tl_metrics_norm(j->metrics))) < 0 ||
      set_item(out, "reference", tlpy_image_to(j->ref)) < 0 ||
      set_item(out, "reference_objective", PyFloat_FromDouble(j->reference_objective)) < 0 ||
      set_item(out, "reference_updates", PyLong_FromUnsignedLong(j->reference_made)) < 0)
    goto fail;
  return out;
fail:
  Py_XDECREF(entrants);
  Py_XDECREF(out);
  return NULL;
}

static TlImage *image_arg(PyObject *obj, const TlImageGrid *grid, const char *what) {
  if (!obj || obj == Py_None) return NULL;
  if (PyUnicode_Check(obj)) {
    GError *error = NULL;
    TlImage *im = tl_image_load(PyUnicode_AsUTF8(obj), &error);
    if (!im) tlpy_raise(error);
    return im;
  }
  return tlpy_image_from(obj, grid, what);
}

static void job_clear(Job *j) {
  g_strfreev(j->algos);
  if (j->ref) tl_image_free(j->ref);
  if (j->object) tl_image_free(j->object);
  if (j->background) tl_image_free(j->background);
  g_ptr_array_unref(j->voi_names);
  g_ptr_array_unref(j->voi_masks);
  if (j->race) tl_race_free(j->race);
  if (j->recons) g_ptr_array_unref(j->recons);
  g_ptr_array_unref(j->images);
  if (j->metrics) tl_metrics_free(j->metrics);
  if (j->ds) tl_dataset_free(j->ds);
  g_clear_object(&j->cancel);
  tl_run_spec_free(j->base);
}

static PyObject *py_race(PyObject *mod, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"data", "algos", "reference", "reference_algo", "grid", "object",
                           "background", "vois", "updates", "until_target", "objective",
                           "reference_updates", "tolerance", "context", "kappa", "seed", NULL};
  const char *path = NULL, *reference_algo = NULL, *kappa = NULL;
  unsigned long seed = 1;
  PyObject *algos = NULL, *reference = Py_None, *grid = Py_None, *object = Py_None,
           *background = Py_None, *vois = Py_None, *context = Py_None;
  unsigned int updates = 50, reference_updates = 1000;
  int until_target = 0, objective = 0;
  double tolerance = 1e-7;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|OzOOOOIppIdOzk", kwlist, &path, &algos,
                                   &reference, &reference_algo, &grid, &object, &background,
                                   &vois, &updates, &until_target, &objective,
                                   &reference_updates, &tolerance, &context, &kappa, &seed))
    return NULL;
  if (seed > G_MAXUINT32) {
    PyErr_Format(PyExc_ValueError, "race: seed=%lu; expected 0 to 4294967295", seed);
    return NULL;
  }
  Job j = {.path = path, .reference_algo = reference_algo, .updates = updates,
           .reference_updates = reference_updates, .tolerance = tolerance,
           .until_target = until_target, .objective = objective,
           .voi_names = g_ptr_array_new_with_free_func(g_free),
           .voi_masks = g_ptr_array_new_with_free_func((GDestroyNotify)tl_image_free),
           .recons = g_ptr_array_new_with_free_func((GDestroyNotify)tl_recon_free),
           .images = g_ptr_array_new_with_free_func((GDestroyNotify)tl_image_free),
           .cancel = g_cancellable_new(), .reference_objective = NAN,
           .base = tl_run_spec_new()};
  j.base->seed = (guint)seed;
  PyObject *out = NULL, *seq = NULL;
  TlPyContext *c = NULL;
  GError *kerr = NULL;
  if (kappa && !tl_run_spec_set(j.base, "kappa", kappa, &kerr)) {
    tlpy_raise(kerr);
    goto done;
  }
  seq = PySequence_Fast(algos, "algos: expected a list of 'ALGORITHM[:KEY=VALUE,...]'");
  if (!seq) goto done;
  j.n_algos = (guint)PySequence_Fast_GET_SIZE(seq);
  j.algos = g_new0(char *, j.n_algos + 1);
  for (guint i = 0; i < j.n_algos; i++) {
    const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
    if (!s) goto done;
    j.algos[i] = g_strdup(s);
  }
  if (j.n_algos < 1 || j.n_algos > TL_RACE_MAX_ENTRANTS) {
    PyErr_Format(PyExc_ValueError, "algos: %u given, expected 1 to %d", j.n_algos,
                 TL_RACE_MAX_ENTRANTS);
    goto done;
  }
  if (grid != Py_None) {
    if (!tlpy_grid_from(grid, &j.grid)) goto done;
    j.have_grid = TRUE;
  }
  if (reference == Py_None && !reference_algo) {
    PyErr_SetString(PyExc_ValueError, "race: give reference= (an image) or reference_algo= "
                    "(an entrant run to tolerance= first)");
    goto done;
  }
  const TlImageGrid *g = j.have_grid ? &j.grid : NULL;
  if (reference != Py_None) {
    if (!(j.ref = image_arg(reference, g, "reference"))) goto done;
    g = &j.ref->grid;
    if (!j.have_grid) j.grid = j.ref->grid, j.have_grid = TRUE;
  }
  if ((object != Py_None || background != Py_None || vois != Py_None) && !g) {
    PyErr_SetString(PyExc_ValueError, "race: masks need grid= or a reference image");
    goto done;
  }
  if ((object != Py_None && !(j.object = image_arg(object, g, "object"))) ||
      (background != Py_None && !(j.background = image_arg(background, g, "background"))))
    goto done;
  if (vois != Py_None) {
    if (!PyDict_Check(vois)) {
      PyErr_SetString(PyExc_TypeError, "vois: expected a dict {name: mask}");
      goto done;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(vois, &pos, &key, &value)) {
      const char *name = PyUnicode_AsUTF8(key);
      TlImage *m = name ? image_arg(value, g, "vois") : NULL;
      if (!m) goto done;
      g_ptr_array_add(j.voi_names, g_strdup(name));
      g_ptr_array_add(j.voi_masks, m);
    }
  }
  if (!(c = tlpy_context_get(context))) goto done;
  j.ctx = c->ctx;
  if (tlpy_run_or_raise(race_work, &j, j.cancel) < 0) goto done;
  out = results(&j);
done:
  Py_XDECREF(seq);
  Py_XDECREF(c);
  job_clear(&j);
  return out;
}

PyMethodDef tlpy_race_functions[] = {
    {"race", (PyCFunction)(void (*)(void))py_race, METH_VARARGS | METH_KEYWORDS,
     "race(data, algos, reference=None, reference_algo=None, grid=None, object=None, "
     "background=None, vois=None, updates=50, until_target=False, objective=False, "
     "reference_updates=1000, tolerance=1e-7, context=None) -> dict (tomolab.race)"},
    {NULL}};
