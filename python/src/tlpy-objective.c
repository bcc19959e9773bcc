/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.Solver's objective calls (recon/tl-solver.h, compute/recon/tl-objective.c): the
 * penalised Poisson objective, its gradient (all data or one subset), the log-likelihood's
 * gradient, the prior's value, gradient and Hessian diagonal, kappa, at any image given as
 * numpy, so an algorithm can be written in numpy over Tomolab's operators and priors
 * (examples/python/petric_gradient.py). Each call uploads the image, runs the library call
 * with the GIL released and downloads the result. */
#include "tlpy.h"

typedef enum { OBJ_VALUE, OBJ_GRAD, OBJ_DATA_GRAD, PRIOR_GRAD, PRIOR_HESS, KAPPA } ObjWhat;

typedef struct {
  TlSolver *sv;
  ObjWhat what;
  guint subset;
  TlImage *x;
  float *out; /* n voxels (gradients, diagonals, kappa) */
  double v[3];
} ObjJob;

static gboolean do_obj(gpointer d, GError **error) {
  ObjJob *j = d;
  TlSolver *sv = j->sv;
  TlContext *ctx = tl_operator_context(tl_solver_operator(sv));
  guint64 n = tl_image_grid_n_voxels(&j->x->grid);
  if (j->what == KAPPA) {
    g_autoptr(TlImage) k = tl_solver_compute_kappa(sv, j->x, error);
    if (!k) return FALSE;
    memcpy(j->out, k->data, n * sizeof(float));
    return TRUE;
  }
  g_autoptr(TlArray) x = tl_array_new_float(ctx, n, error);
  g_autoptr(TlArray) g = x ? tl_array_new_float(ctx, n, error) : NULL;
  if (!g || !tl_array_upload(x, j->x->data, error)) return FALSE;
  TlStream *s = tl_solver_stream(sv);
  TlPrior *p = tl_solver_prior(sv);
  if (j->what >= PRIOR_GRAD && !p) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "the solver has no prior (set_prior)");
    return FALSE;
  }
  gboolean ok;
  switch (j->what) {
    case OBJ_VALUE: return tl_solver_objective_at(sv, x, &j->v[0], &j->v[1], &j->v[2], error);
    case OBJ_GRAD: ok = tl_solver_objective_gradient(sv, j->subset, x, g, error); break;
    case OBJ_DATA_GRAD: ok = tl_solver_data_gradient(sv, j->subset, x, g, error); break;
    case PRIOR_GRAD: ok = tl_prior_gradient(p, s, x, g, error); break;
    default: ok = tl_prior_hessian_diag(p, s, x, g, error); break;
  }
  if (!ok || !tl_stream_finish(s, error) || !tl_array_download(g, j->out, error)) return FALSE;
  /* the prior that beta multiplies is the normalised one, scale * R (tl_solver_prior_scale) */
  if (j->what >= PRIOR_GRAD) {
    float scale = (float)tl_solver_prior_scale(sv);
    for (guint64 i = 0; i < n; i++) j->out[i] *= scale;
  }
  return TRUE;
}

/* Runs `what` at image x (array-like of the grid); NULL with an exception on failure. */
static PyObject *call(TlSolver *sv, TlPyOperator *op, ObjWhat what, PyObject *xo, long subset) {
  if (!sv) {
    PyErr_SetString(PyExc_RuntimeError, "Solver not initialised");
    return NULL;
  }
  const TlImageGrid *grid = tl_solver_grid(sv);
  g_autoptr(TlImage) x = tlpy_image_from(xo, grid, "image");
  if (!x) return NULL;
  if (subset < -1) {
    PyErr_Format(PyExc_ValueError, "subset %ld: expected >= 0 or None", subset);
    return NULL;
  }
  PyArrayObject *out = what == OBJ_VALUE ? NULL : tlpy_image_array_new(grid);
  if (what != OBJ_VALUE && !out) return NULL;
  ObjJob j = {.sv = sv, .what = what, .subset = subset < 0 ? G_MAXUINT : (guint)subset, .x = x,
              .out = out ? PyArray_DATA(out) : NULL};
  if (tlpy_operator_enter(op) < 0) {
    Py_XDECREF(out);
    return NULL;
  }
  int r = tlpy_run_or_raise(do_obj, &j, NULL);
  tlpy_operator_leave(op);
  if (r < 0) {
    Py_XDECREF(out);
    return NULL;
  }
  if (what == OBJ_VALUE) return Py_BuildValue("(ddd)", j.v[0], j.v[1], j.v[2]);
  return (PyObject *)out;
}

static long subset_arg(PyObject *o) {
  if (o == Py_None) return -1;
  long v = PyLong_AsLong(o);
  return v == -1 && PyErr_Occurred() ? -2 : v;
}

PyObject *tlpy_solver_objective_at(TlSolver *sv, TlPyOperator *op, PyObject *x) {
  return call(sv, op, OBJ_VALUE, x, -1);
}
PyObject *tlpy_solver_gradient(TlSolver *sv, TlPyOperator *op, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"x", "subset", "data_only", NULL};
  PyObject *x, *subset = Py_None;
  int data_only = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$p:gradient", kwlist, &x, &subset, &data_only))
    return NULL;
  long s = subset_arg(subset);
  if (s == -2 && PyErr_Occurred()) return NULL;
  return call(sv, op, data_only ? OBJ_DATA_GRAD : OBJ_GRAD, x, s);
}
PyObject *tlpy_solver_prior_gradient(TlSolver *sv, TlPyOperator *op, PyObject *x) {
  return call(sv, op, PRIOR_GRAD, x, -1);
}
PyObject *tlpy_solver_prior_hessian_diag(TlSolver *sv, TlPyOperator *op, PyObject *x) {
  return call(sv, op, PRIOR_HESS, x, -1);
}
PyObject *tlpy_solver_compute_kappa(TlSolver *sv, TlPyOperator *op, PyObject *x) {
  return call(sv, op, KAPPA, x, -1);
}
PyObject *tlpy_solver_set_kappa(TlSolver *sv, PyObject *k) {
  g_autoptr(TlImage) im = NULL;
  if (k != Py_None && !(im = tlpy_image_from(k, tl_solver_grid(sv), "kappa"))) return NULL;
  GError *error = NULL;
  if (!tl_solver_set_kappa(sv, im, &error)) return tlpy_raise(error);
  Py_RETURN_NONE;
}
