/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Operators from plain arrays (docs/python.md, "Operators from arrays"):
 *
 *   line_operator(start, end, grid, ...)    the PET projector along given lines (parallelproj's
 *                                           basic case), optionally with TOF bins
 *   _csr_operator(indptr, indices, data, grid, ...)   an explicit sparse matrix (class "csr")
 *   _operator_records(op)                   a PET operator's records in its data order
 *
 * The line operator is the library's (pet/tl-pet-lines.h: one ray per line, no counts, with
 * TOF the list-mode TOF kernel); here only the arrays are checked and interleaved. Data order =
 * the order of the given lines; subsets are contiguous blocks of lines. */
#include "tlpy.h"
#include "pet/tl-pet-lines.h"
#include <math.h>

/* An (n, cols) float32 array; NULL + ValueError naming `what`. */
static PyArrayObject *rows_of(PyObject *obj, int cols, const char *what) {
  PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT32,
                                                       NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
  if (!a) return NULL;
  if (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 1) != cols) {
    PyErr_Format(PyExc_ValueError, "%s: an array of shape (n, %d) expected; got %d dimensions",
                 what, cols, PyArray_NDIM(a));
    Py_DECREF(a);
    return NULL;
  }
  const float *v = PyArray_DATA(a);
  for (npy_intp i = 0; i < PyArray_SIZE(a); i++)
    if (!isfinite(v[i])) {
      PyErr_Format(PyExc_ValueError, "%s: row %zd holds a value that is not finite", what,
                   (Py_ssize_t)(i / cols));
      Py_DECREF(a);
      return NULL;
    }
  return a;
}

typedef struct {
  TlContext *ctx;
  const TlImageGrid *grid;
  const char *projector;
  guint64 n;
  const float *start, *end;
  const gint32 *tof_bin;
  const TlTof *tof;
  guint subsets;
} LinesArgs;

static TlOperator *lines_new(const LinesArgs *a, GError **error) {
  g_autofree float *ends = g_new(float, 6 * a->n);
  for (guint64 i = 0; i < a->n; i++) {
    memcpy(ends + 6 * i, a->start + 3 * i, 3 * sizeof(float));
    memcpy(ends + 6 * i + 3, a->end + 3 * i, 3 * sizeof(float));
  }
  return tl_pet_lines_operator_new_tof(a->ctx, a->grid, a->projector, a->n, ends, 1, NULL,
                                       a->tof_bin, a->tof, NULL, NULL, a->subsets, error);
}

static PyObject *py_line_operator(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"start", "end", "grid", "projector", "tof_bin", "tof_sigma_mm",
                           "tof_bin_mm", "tof_n_sigma", "subsets", "ctx", NULL};
  PyObject *so, *eo, *gridobj, *tofo = Py_None, *ctxo = Py_None;
  const char *projector = "joseph";
  double sigma = 0, bin = 0, nsig = TL_TOF_N_SIGMA;
  unsigned subsets = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$sOdddIO:line_operator", kwlist, &so, &eo,
                                   &gridobj, &projector, &tofo, &sigma, &bin, &nsig, &subsets,
                                   &ctxo))
    return NULL;
  TlImageGrid grid;
  if (!tlpy_grid_from(gridobj, &grid)) return NULL;
  PyArrayObject *s = NULL, *e = NULL, *t = NULL;
  PyObject *res = NULL;
  TlPyContext *c = NULL;
  if (!(s = rows_of(so, 3, "start")) || !(e = rows_of(eo, 3, "end"))) goto done;
  npy_intp n = PyArray_DIM(s, 0);
  if (PyArray_DIM(e, 0) != n) {
    PyErr_Format(PyExc_ValueError, "end has %zd lines; expected %zd (as start)",
                 (Py_ssize_t)PyArray_DIM(e, 0), (Py_ssize_t)n);
    goto done;
  }
  if (n == 0) {
    PyErr_SetString(PyExc_ValueError, "start: no lines (shape (0, 3)); expected at least one");
    goto done;
  }
  TlTof tof = {.sigma_mm = (float)sigma, .bin_mm = (float)bin, .n_sigma = (float)nsig};
  if (tofo != Py_None) {
    t = (PyArrayObject *)PyArray_FROM_OTF(tofo, NPY_INT32, NPY_ARRAY_IN_ARRAY);
    if (!t) goto done;
    if (PyArray_SIZE(t) != n) {
      PyErr_Format(PyExc_ValueError, "tof_bin has %zd elements; expected %zd (one per line)",
                   (Py_ssize_t)PyArray_SIZE(t), (Py_ssize_t)n);
      goto done;
    }
    /* checked here, since the kernel of these events cannot say which argument it was */
    if (!(sigma > 0) || !isfinite(sigma) || !(bin > 0) || !isfinite(bin) || !(nsig > 0) ||
        nsig > 10) {
      g_autofree char *msg = g_strdup_printf(
          "TOF: tof_sigma_mm %g, tof_bin_mm %g, tof_n_sigma %g; expected positive finite "
          "widths and a truncation in (0, 10]", sigma, bin, nsig);
      PyErr_SetString(PyExc_ValueError, msg);
      goto done;
    }
  } else if (sigma != 0 || bin != 0) {
    PyErr_SetString(PyExc_ValueError, "tof_sigma_mm / tof_bin_mm given without tof_bin");
    goto done;
  }
  if (!(c = tlpy_context_get(ctxo))) goto done;
  GError *error = NULL;
  TlOperator *op;
  LinesArgs la = {.ctx = c->ctx, .grid = &grid, .projector = projector, .n = (guint64)n,
                  .start = PyArray_DATA(s), .end = PyArray_DATA(e),
                  .tof_bin = t ? PyArray_DATA(t) : NULL, .tof = t ? &tof : NULL,
                  .subsets = subsets};
  Py_BEGIN_ALLOW_THREADS
  op = lines_new(&la, &error);
  Py_END_ALLOW_THREADS
  if (!op)
    tlpy_raise(error);
  else if (!(res = tlpy_operator_wrap(c, op, &error)) && error)
    tlpy_raise(error);
done:
  Py_XDECREF(c);
  Py_XDECREF(s);
  Py_XDECREF(e);
  Py_XDECREF(t);
  return res;
}

/* _csr_operator(indptr, indices, data, grid, subsets, ctx): the arrays of scipy.sparse's
 * csr_matrix (row i's entries k in [indptr[i], indptr[i+1])); the library checks the rest. */
static PyObject *py_csr_operator(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"indptr", "indices", "data", "grid", "subsets", "ctx", NULL};
  PyObject *po, *io, *dobj, *gridobj, *ctxo = Py_None;
  unsigned subsets = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|IO:_csr_operator", kwlist, &po, &io, &dobj,
                                   &gridobj, &subsets, &ctxo))
    return NULL;
  TlImageGrid grid;
  if (!tlpy_grid_from(gridobj, &grid)) return NULL;
  PyArrayObject *p = NULL, *ix = NULL, *d = NULL;
  PyObject *res = NULL;
  TlPyContext *c = NULL;
  guint64 *row_ptr = NULL;
  guint32 *col = NULL;
  if (!(p = (PyArrayObject *)PyArray_FROM_OTF(po, NPY_INT64, NPY_ARRAY_IN_ARRAY)) ||
      !(ix = (PyArrayObject *)PyArray_FROM_OTF(io, NPY_INT64, NPY_ARRAY_IN_ARRAY)) ||
      !(d = (PyArrayObject *)PyArray_FROM_OTF(dobj, NPY_FLOAT32,
                                              NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST)))
    goto done;
  npy_intp np1 = PyArray_SIZE(p), nnz = PyArray_SIZE(ix);
  if (np1 < 2) {
    PyErr_Format(PyExc_ValueError, "indptr has %zd elements; expected rows + 1 >= 2",
                 (Py_ssize_t)np1);
    goto done;
  }
  if (PyArray_SIZE(d) != nnz) {
    PyErr_Format(PyExc_ValueError, "data has %zd elements; expected %zd (as indices)",
                 (Py_ssize_t)PyArray_SIZE(d), (Py_ssize_t)nnz);
    goto done;
  }
  const gint64 *pv = PyArray_DATA(p), *iv = PyArray_DATA(ix);
  if (pv[np1 - 1] != nnz) {
    PyErr_Format(PyExc_ValueError, "indptr[-1] = %lld; expected %zd (the number of indices)",
                 (long long)pv[np1 - 1], (Py_ssize_t)nnz);
    goto done;
  }
  row_ptr = g_new(guint64, np1);
  col = g_new(guint32, MAX(nnz, 1));
  for (npy_intp i = 0; i < np1; i++) {
    if (pv[i] < 0) {
      PyErr_Format(PyExc_ValueError, "indptr[%zd] = %lld; expected >= 0", (Py_ssize_t)i,
                   (long long)pv[i]);
      goto done;
    }
    row_ptr[i] = (guint64)pv[i];
  }
  for (npy_intp k = 0; k < nnz; k++) {
    if (iv[k] < 0 || iv[k] >= (gint64)tl_image_grid_n_voxels(&grid)) {
      PyErr_Format(PyExc_ValueError, "indices[%zd] = %lld; expected a column in 0 .. %llu "
                   "(the grid's voxels)", (Py_ssize_t)k, (long long)iv[k],
                   (unsigned long long)tl_image_grid_n_voxels(&grid) - 1);
      goto done;
    }
    col[k] = (guint32)iv[k];
  }
  if (!(c = tlpy_context_get(ctxo))) goto done;
  GError *error = NULL;
  TlOperator *op;
  const float *dv = PyArray_DATA(d);
  Py_BEGIN_ALLOW_THREADS
  op = tl_csr_operator_new(c->ctx, &grid, (guint64)(np1 - 1), row_ptr, col, dv, subsets, NULL,
                           &error);
  Py_END_ALLOW_THREADS
  if (!op)
    tlpy_raise(error);
  else if (!(res = tlpy_operator_wrap(c, op, &error)) && error)
    tlpy_raise(error);
done:
  g_free(row_ptr);
  g_free(col);
  Py_XDECREF(c);
  Py_XDECREF(p);
  Py_XDECREF(ix);
  Py_XDECREF(d);
  return res;
}

/* A PET operator's records in data order as (kind, uint32 array (n, 3)): kind 'events'
 * (a, b, tof bin as int32 bits) or 'bins' (a, b, count as float32 bits). */
static gboolean do_records(gpointer d, GError **error) {
  gpointer *a = d;
  TlLors *l = a[0];
  g_autoptr(TlArray) v = tl_array_new_view(l->records, l->first, l->count, error);
  return v && tl_array_download(v, a[1], error);
}

static PyObject *py_operator_records(PyObject *self, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, &TlPyOperatorType)) {
    PyErr_SetString(PyExc_TypeError, "records: expected a tomolab.Operator");
    return NULL;
  }
  TlPyOperator *o = (TlPyOperator *)arg;
  if (!tl_is_pet_operator(o->op)) {
    PyErr_Format(PyExc_TypeError, "records: operator %s is not a PET list-mode or binned "
                 "operator", tl_operator_name(o->op));
    return NULL;
  }
  TlLors l = tl_pet_operator_lors(o->op, G_MAXUINT);
  npy_intp shape[2] = {(npy_intp)l.count, 3};
  PyArrayObject *res = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_UINT32);
  if (!res) return NULL;
  if (tlpy_operator_enter(o) < 0) {
    Py_DECREF(res);
    return NULL;
  }
  gpointer job[2] = {&l, PyArray_DATA(res)};
  int r = l.count ? tlpy_run_or_raise(do_records, job, o->cancel) : 0;
  tlpy_operator_leave(o);
  if (r < 0) {
    Py_DECREF(res);
    return NULL;
  }
  return Py_BuildValue("sN", l.kind == TL_LORS_BINS ? "bins" : "events", res);
}

PyMethodDef tlpy_lines_functions[] = {
    {"line_operator", (PyCFunction)(void (*)(void))py_line_operator, METH_VARARGS | METH_KEYWORDS,
     "line_operator(start, end, grid, *, projector='joseph', tof_bin=None, tof_sigma_mm=0, "
     "tof_bin_mm=0, tof_n_sigma=3, subsets=1, ctx=None) -> Operator: the PET projector along "
     "the lines start[i] -> end[i] (arrays (n, 3), mm); with tof_bin (n integers: bin 0 "
     "centred on the midpoint, positive towards end) the TOF kernel of list mode"},
    {"_csr_operator", (PyCFunction)(void (*)(void))py_csr_operator, METH_VARARGS | METH_KEYWORDS,
     "_csr_operator(indptr, indices, data, grid, subsets=1, ctx=None) -> Operator (class csr)"},
    {"_operator_records", (PyCFunction)py_operator_records, METH_O,
     "_operator_records(op) -> (kind, uint32 array (n, 3)): a PET operator's records in data "
     "order"},
    {NULL}};
