/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT preprocessing on numpy arrays, the library's own code (docs/python.md "CT
 * preprocessing"): normalize (flat/dark, optionally -log: compute/ct/tl-ct-normalise.h, the
 * Data Exchange reader's arithmetic), minus_log, find_centre (tl-ct-centre.h: the CLI's
 * --centre auto) and remove_stripes (tl-ct-stripe.h: Vo et al. 2018, sorting-based, and
 * optionally their dead columns first). */
#include "tlpy.h"
#include "ct/tl-ct-centre.h"
#include "ct/tl-ct-formats.h"
#include "ct/tl-ct-normalise.h"
#include "ct/tl-ct-stripe.h"
#include <math.h>

/* A float32 C-contiguous copy-or-view of obj with at least min_dims axes (new reference). */
static PyArrayObject *float_array(PyObject *obj, int min_dims, int max_dims, const char *what) {
  PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT32,
                                                       NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
  if (!a) return NULL;
  int nd = PyArray_NDIM(a);
  if (nd < min_dims || nd > max_dims || PyArray_SIZE(a) == 0) {
    PyErr_Format(PyExc_ValueError, "%s: %d axes of %zd values, expected %d to %d axes and "
                 "at least one value", what, nd, (Py_ssize_t)PyArray_SIZE(a), min_dims,
                 max_dims);
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* Images of (rows, cols) = the last two axes; the leading axes count images. */
static npy_intp image_count(PyArrayObject *a) {
  int nd = PyArray_NDIM(a);
  return PyArray_SIZE(a) / (PyArray_DIM(a, nd - 1) * PyArray_DIM(a, nd - 2));
}

static int same_image(PyArrayObject *a, PyArrayObject *ref, const char *what) {
  int na = PyArray_NDIM(a), nr = PyArray_NDIM(ref);
  npy_intp r = PyArray_DIM(a, na - 2), c = PyArray_DIM(a, na - 1);
  if (r == PyArray_DIM(ref, nr - 2) && c == PyArray_DIM(ref, nr - 1)) return 0;
  PyErr_Format(PyExc_ValueError, "%s: images of %zd x %zd pixels, expected the projections' "
               "%zd x %zd (rows x columns)", what, (Py_ssize_t)r, (Py_ssize_t)c,
               (Py_ssize_t)PyArray_DIM(ref, nr - 2), (Py_ssize_t)PyArray_DIM(ref, nr - 1));
  return -1;
}

static PyObject *py_normalize(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"projections", "flats", "darks", "floor", "log", NULL};
  PyObject *po, *fo, *dobj = Py_None;
  double floor = TL_CT_MIN_TRANSMISSION;
  int minus_log = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$dp:normalize", kwlist, &po, &fo, &dobj,
                                   &floor, &minus_log))
    return NULL;
  PyArrayObject *p = float_array(po, 2, NPY_MAXDIMS, "normalize: projections");
  PyArrayObject *f = p ? float_array(fo, 2, 3, "normalize: flats") : NULL;
  PyArrayObject *d = f && dobj != Py_None ? float_array(dobj, 2, 3, "normalize: darks") : NULL;
  PyArrayObject *out = NULL;
  if (!f || (dobj != Py_None && !d) || same_image(f, p, "normalize: flats") < 0 ||
      (d && same_image(d, p, "normalize: darks") < 0))
    goto done;
  out = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(p), PyArray_DIMS(p), NPY_FLOAT32);
  if (!out) goto done;
  npy_intp pixels = PyArray_SIZE(f) / image_count(f);
  GError *error = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  ok = tl_ct_normalise(PyArray_DATA(p), (guint)image_count(p), (gsize)pixels, PyArray_DATA(f),
                       (guint)image_count(f), d ? PyArray_DATA(d) : NULL,
                       d ? (guint)image_count(d) : 0, floor, minus_log, PyArray_DATA(out), NULL,
                       &error);
  Py_END_ALLOW_THREADS
  if (!ok) {
    Py_CLEAR(out);
    tlpy_raise(error);
  }
done:
  Py_XDECREF(p);
  Py_XDECREF(f);
  Py_XDECREF(d);
  return (PyObject *)out;
}

static PyObject *py_minus_log(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"transmission", "floor", NULL};
  PyObject *to;
  double floor = TL_CT_MIN_TRANSMISSION;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$d:minus_log", kwlist, &to, &floor)) return NULL;
  PyArrayObject *t = float_array(to, 0, NPY_MAXDIMS, "minus_log: transmission");
  if (!t) return NULL;
  PyArrayObject *out =
      (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(t), PyArray_DIMS(t), NPY_FLOAT32);
  GError *error = NULL;
  if (out && !tl_ct_minus_log(PyArray_DATA(t), PyArray_SIZE(t), floor, PyArray_DATA(out), NULL,
                              &error)) {
    Py_CLEAR(out);
    tlpy_raise(error);
  }
  Py_DECREF(t);
  return (PyObject *)out;
}

static PyObject *py_remove_stripes(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"projections", "size", "dead", "dead_size", "dead_ratio", NULL};
  PyObject *po;
  unsigned size = TL_CT_STRIPE_SIZE, dead_size = 0; /* 0: the default, at most the width */
  int dead = 0;
  double dead_ratio = TL_CT_DEAD_RATIO;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|I$pId:remove_stripes", kwlist, &po, &size,
                                   &dead, &dead_size, &dead_ratio))
    return NULL;
  PyArrayObject *p = float_array(po, 2, 3, "remove_stripes: projections (views, [rows,] columns)");
  if (!p) return NULL;
  /* a copy: the caller's array stays as it was */
  PyArrayObject *out = (PyArrayObject *)PyArray_NewCopy(p, NPY_CORDER);
  Py_DECREF(p);
  if (!out) return NULL;
  int nd = PyArray_NDIM(out);
  guint views = (guint)PyArray_DIM(out, 0), rows = nd == 3 ? (guint)PyArray_DIM(out, 1) : 1,
        cols = (guint)PyArray_DIM(out, nd - 1);
  GError *error = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  /* Vo et al.'s order: dead columns first, so the sorting sees them repaired */
  guint dsz = dead_size ? dead_size : MIN(TL_CT_DEAD_SIZE, 2 * cols + 1);
  ok = (!dead || tl_ct_remove_dead_stripes(PyArray_DATA(out), views, rows, cols, dsz, dead_ratio,
                                           NULL, &error)) &&
       tl_ct_remove_stripes(PyArray_DATA(out), views, rows, cols, size, &error);
  Py_END_ALLOW_THREADS
  if (!ok) {
    Py_DECREF(out);
    return tlpy_raise(error);
  }
  return (PyObject *)out;
}

/* find_centre: the scan as a TlCtData, from a CtData (its geometry's matrices) or from
 * projections and angles (the Data Exchange reader's geometry: 1 mm pixels, middle column). */
static TlCtData *scan_from(PyObject *data, PyObject *theta_obj) {
  PyObject *pobj = NULL, *gobj = NULL, *mobj = NULL, *det = NULL, *beam = NULL;
  PyArrayObject *p = NULL, *m = NULL, *th = NULL;
  TlCtGeometry *g = NULL;
  TlCtData *d = NULL;
  GError *error = NULL;
  gboolean is_data = PyObject_HasAttrString(data, "geometry") &&
                     PyObject_HasAttrString(data, "projections");
  if (is_data && theta_obj != Py_None) {
    PyErr_SetString(PyExc_TypeError, "find_centre: theta is for projections given as an "
                    "array; a CtData carries its geometry");
    return NULL;
  }
  if (!(pobj = is_data ? PyObject_GetAttrString(data, "projections") : Py_NewRef(data)) ||
      !(p = float_array(pobj, 3, 3, "find_centre: projections (views, rows, columns)")))
    goto done;
  guint views = (guint)PyArray_DIM(p, 0), rows = (guint)PyArray_DIM(p, 1),
        cols = (guint)PyArray_DIM(p, 2);
  if (is_data) {
    unsigned du, dv;
    if (!(gobj = PyObject_GetAttrString(data, "geometry")) ||
        !(mobj = PyObject_GetAttrString(gobj, "matrices")) ||
        !(det = PyObject_GetAttrString(gobj, "detector")) ||
        !(beam = PyObject_GetAttrString(gobj, "beam")) || !PyArg_ParseTuple(det, "II", &du, &dv) ||
        !(m = (PyArrayObject *)PyArray_FROM_OTF(mobj, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY)))
      goto done;
    const char *b = PyUnicode_AsUTF8(beam);
    if (!b) goto done;
    g = tl_ct_geometry_new_matrices(strcmp(b, "cone") == 0 ? TL_CT_CONE : TL_CT_PARALLEL,
                                    (guint)(PyArray_SIZE(m) / 12), du, dv, PyArray_DATA(m),
                                    &error);
  } else {
    if (theta_obj == Py_None) {
      PyErr_SetString(PyExc_TypeError, "find_centre: projections given as an array need theta "
                      "(one angle per view, radians)");
      goto done;
    }
    if (!(th = (PyArrayObject *)PyArray_FROM_OTF(theta_obj, NPY_FLOAT64,
                                                 NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST)))
      goto done;
    if (PyArray_SIZE(th) != views) {
      PyErr_Format(PyExc_ValueError, "find_centre: theta has %zd angles, expected one per view "
                   "(%u)", (Py_ssize_t)PyArray_SIZE(th), views);
      goto done;
    }
    g = tl_ct_geometry_new_parallel_angles(views, PyArray_DATA(th), cols, rows, 1.0, 1.0,
                                           0.5 * (cols - 1.0), &error);
  }
  if (!g) {
    if (error) tlpy_raise(error);
    goto done;
  }
  if (g->n_views != views || g->det_v != rows || g->det_u != cols) {
    PyErr_Format(PyExc_ValueError, "find_centre: projections of %u views x %u x %u, expected "
                 "the geometry's %u x %u x %u", views, rows, cols, g->n_views, g->det_v, g->det_u);
    tl_ct_geometry_free(g);
    goto done;
  }
  d = tl_ct_data_new(g);
  memcpy(d->proj, PyArray_DATA(p), sizeof(float) * PyArray_SIZE(p));
  d->values = TL_CT_LINE_INTEGRALS;
done:
  Py_XDECREF(pobj), Py_XDECREF(gobj), Py_XDECREF(mobj), Py_XDECREF(det), Py_XDECREF(beam);
  Py_XDECREF(p), Py_XDECREF(m), Py_XDECREF(th);
  return d;
}

typedef struct {
  TlContext *ctx;
  TlCtData *d;
  guint row;
  TlCtCentre c;
} CentreJob;

static gboolean do_centre(gpointer data, GError **error) {
  CentreJob *j = data;
  return tl_ct_centre_search(j->ctx, j->d, j->row, &j->c, error);
}

static PyObject *py_find_centre(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"data", "theta", "row", "ctx", "progress", NULL};
  PyObject *data, *theta = Py_None, *rowo = Py_None, *ctxo = Py_None, *progress = Py_None;
  PyObject *saved;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOO:find_centre", kwlist, &data, &theta,
                                   &rowo, &ctxo, &progress))
    return NULL;
  if (progress != Py_None && !PyCallable_Check(progress)) {
    PyErr_SetString(PyExc_TypeError, "progress: expected a callable(fraction, message) or None");
    return NULL;
  }
  TlCtData *d = scan_from(data, theta);
  if (!d) return NULL;
  /* the middle row by default, as the dataset layer (the CLI, the window) searches */
  long row = rowo == Py_None ? (long)(d->geometry->det_v / 2) : PyLong_AsLong(rowo);
  if (row == -1 && PyErr_Occurred()) {
    tl_ct_data_free(d);
    return NULL;
  }
  if (row < 0 || row >= (long)d->geometry->det_v) {
    PyErr_Format(PyExc_ValueError, "find_centre: row %ld, expected 0 .. %u", row,
                 d->geometry->det_v - 1);
    tl_ct_data_free(d);
    return NULL;
  }
  TlPyContext *c = tlpy_context_get(ctxo);
  if (!c) {
    tl_ct_data_free(d);
    return NULL;
  }
  CentreJob j = {c->ctx, d, (guint)row, {0}};
  int r = -1;
  if (tlpy_progress_enter(progress, &saved) == 0) {
    r = tlpy_run_or_raise(do_centre, &j, NULL);
    tlpy_progress_leave(saved);
  }
  tl_ct_data_free(d);
  Py_DECREF(c);
  if (r < 0) return NULL;
  return Py_BuildValue("{s:d,s:d,s:d,s:I,s:I}", "centre", j.c.centre, "metric", j.c.metric,
                       "first_guess", j.c.first_guess, "evaluations", j.c.evaluations, "row",
                       j.row);
}

static PyMethodDef ctprep_functions[] = {
    {"normalize", (PyCFunction)(void (*)(void))py_normalize, METH_VARARGS | METH_KEYWORDS,
     "normalize(projections, flats, darks=None, *, floor=1e-6, log=False) -> float32 array of "
     "the projections' shape: t = (I - D) / (W - D) with W, D the per-pixel means of the flats "
     "and darks (images = the last two axes), clamped below at floor; log=True: -log t"},
    {"minus_log", (PyCFunction)(void (*)(void))py_minus_log, METH_VARARGS | METH_KEYWORDS,
     "minus_log(transmission, *, floor=1e-6) -> -log max(t, floor), float32"},
    {"find_centre", (PyCFunction)(void (*)(void))py_find_centre, METH_VARARGS | METH_KEYWORDS,
     "find_centre(data, theta=None, *, row=None, ctx=None, progress=None) -> dict(centre, "
     "metric, first_guess, "
     "evaluations, row): the centre of rotation (a detector column) of a parallel-beam scan, "
     "searched as tomolab-cli ct-recon --centre auto does; data a CtData, or line integrals "
     "(views, rows, columns) with theta (radians, one per view); row: the middle one"},
    {"remove_stripes", (PyCFunction)(void (*)(void))py_remove_stripes,
     METH_VARARGS | METH_KEYWORDS,
     "remove_stripes(projections, size=21, *, dead=False, dead_size=51, dead_ratio=0.1) -> a "
     "copy without stripes (ring artefacts): projections (views, rows, columns) or one "
     "sinogram (views, columns); sorting-based removal of Vo, Atwood & Drakopoulos (2018) with "
     "a median window of size columns (odd); dead: first their dead (unresponsive) columns, "
     "those varying over the views less than dead_ratio times the median of dead_size "
     "columns around them, interpolated from their neighbours"},
    {NULL}};

int tlpy_ctprep_init(PyObject *m) {
  return PyModule_AddFunctions(m, ctprep_functions);
}
