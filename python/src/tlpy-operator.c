/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.Operator: a TlOperator (recon/tl-operator.h) as a linear map between numpy arrays
 *
 *   A.forward(x) = D A x          (x: n_voxels values, any shape; result: n_data values)
 *   A.adjoint(y) = A^T D y        (result: an image of the grid, shape (nz, ny, nx))
 *
 * in the operator's data order, per subset (subset=s) or over the whole data vector. numpy
 * arguments are copied to the device and results back (the only copies: the host-device
 * boundary, through two staging arrays kept by the operator); tomolab.Array arguments stay on
 * the device and the result is a tomolab.Array (or written into out=). */
#include "tlpy.h"

static void operator_dealloc(TlPyOperator *self) {
  if (self->stream) tl_stream_free(self->stream);
  if (self->xbuf) tl_array_free(self->xbuf);
  if (self->ybuf) tl_array_free(self->ybuf);
  if (self->op) tl_operator_free(self->op);
  if (self->cancel) g_object_unref(self->cancel);
  Py_XDECREF(self->keep);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *tlpy_operator_wrap(TlPyContext *context, TlOperator *op, GError **error) {
  TlStream *s = tl_stream_new(context->ctx, error);
  if (!s) {
    tl_operator_free(op);
    return NULL;
  }
  TlPyOperator *o = PyObject_New(TlPyOperator, &TlPyOperatorType);
  if (!o) {
    tl_stream_free(s);
    tl_operator_free(op);
    return NULL;
  }
  Py_INCREF(context);
  o->context = context;
  o->op = op;
  o->stream = s;
  o->cancel = g_cancellable_new();
  tl_stream_set_cancellable(s, o->cancel);
  o->xbuf = o->ybuf = NULL;
  o->busy = FALSE;
  o->keep = NULL;
  o->last_us = 0;
  return (PyObject *)o;
}

int tlpy_operator_enter(TlPyOperator *o) {
  if (o->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "this operator is in use by another call (one thread at a time)");
    return -1;
  }
  o->busy = TRUE;
  return 0;
}
void tlpy_operator_leave(TlPyOperator *o) { o->busy = FALSE; }

static int parse_subset(TlPyOperator *o, PyObject *subset, guint *first, guint *last) {
  guint S = tl_operator_n_subsets(o->op);
  if (subset == Py_None) {
    *first = 0;
    *last = S;
    return 0;
  }
  long s = PyLong_AsLong(subset);
  if (s == -1 && PyErr_Occurred()) return -1;
  if (s < 0 || s >= (long)S) {
    PyErr_Format(PyExc_IndexError, "subset %ld: the operator has %u subsets (0 .. %u)", s, S,
                 S - 1);
    return -1;
  }
  *first = (guint)s;
  *last = (guint)s + 1;
  return 0;
}

/* the data range [first subset, last subset) */
static void data_range(TlOperator *op, guint first, guint last, guint64 *start, guint64 *n) {
  *start = tl_operator_subset_first(op, first);
  *n = (last == tl_operator_n_subsets(op) ? tl_operator_n_data(op)
                                           : tl_operator_subset_first(op, last)) -
       *start;
}

typedef struct {
  TlPyOperator *o;
  gboolean adjoint;
  guint first, last;
  TlArray *x, *y;     /* image side, data side (whole vectors or the subset's range) */
  guint64 y_offset;   /* data index of y's element 0 */
  const void *src;    /* host input (NULL: device input) */
  void *dst;          /* host output (NULL: device output) */
} ApplyJob;

static gboolean do_apply_work(ApplyJob *j, GError **error);

/* The library's part of a call, timed where it runs (bench/python compares the Python call's
 * wall time with it: the difference is the binding's overhead, unaffected by other load). */
static gboolean do_apply(gpointer d, GError **error) {
  ApplyJob *j = d;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = do_apply_work(j, error);
  j->o->last_us = g_get_monotonic_time() - t0;
  return ok;
}

static gboolean do_apply_work(ApplyJob *j, GError **error) {
  TlOperator *op = j->o->op;
  TlStream *s = j->o->stream;
  if (j->src && !tl_array_upload(j->adjoint ? j->y : j->x, j->src, error)) return FALSE;
  if (j->adjoint && !tl_stream_zero(s, j->x, error)) return FALSE;
  for (guint k = j->first; k < j->last; k++) {
    g_autoptr(TlArray) v = tl_array_new_view(j->y, tl_operator_subset_first(op, k) - j->y_offset,
                                             tl_operator_subset_length(op, k), error);
    if (!v) return FALSE;
    gboolean ok = j->adjoint ? tl_operator_adjoint(op, s, k, v, j->x, error)
                             : tl_operator_forward(op, s, k, j->x, v, error);
    /* the view must outlive the recorded work */
    if (!ok || !tl_stream_finish(s, error)) return FALSE;
  }
  if (j->last == j->first && !tl_stream_finish(s, error)) return FALSE;
  if (j->dst) return tl_array_download(j->adjoint ? j->x : j->y, j->dst, error);
  return TRUE;
}

static gboolean ensure_buffers(TlPyOperator *o, GError **error) {
  if (!o->xbuf && !(o->xbuf = tl_array_new_float(o->context->ctx, tl_operator_n_voxels(o->op), error)))
    return FALSE;
  if (!o->ybuf && !(o->ybuf = tl_array_new_float(o->context->ctx, MAX(tl_operator_n_data(o->op), 1), error)))
    return FALSE;
  return TRUE;
}

static TlArray *device_arg(TlPyOperator *o, PyObject *obj, guint64 n, const char *what) {
  TlPyArray *a = (TlPyArray *)obj;
  if (!a->array) {
    PyErr_Format(PyExc_RuntimeError, "%s: Array not initialised", what);
    return NULL;
  }
  if (a->context->ctx != o->context->ctx) {
    PyErr_Format(PyExc_ValueError, "%s: an Array of another Context than the operator's", what);
    return NULL;
  }
  if (tl_array_length(a->array) != n) {
    PyErr_Format(PyExc_ValueError, "%s has %llu elements; expected %llu", what,
                 (unsigned long long)tl_array_length(a->array), (unsigned long long)n);
    return NULL;
  }
  return a->array;
}

static PyObject *apply(TlPyOperator *self, PyObject *args, PyObject *kw, gboolean adjoint) {
  static char *kwlist[] = {"x", "subset", "out", NULL};
  PyObject *in, *subset = Py_None, *out = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, adjoint ? "O|OO:adjoint" : "O|OO:forward", kwlist,
                                   &in, &subset, &out))
    return NULL;
  ApplyJob j = {.o = self, .adjoint = adjoint};
  if (parse_subset(self, subset, &j.first, &j.last) < 0) return NULL;
  guint64 start, n_data, n_vox = tl_operator_n_voxels(self->op);
  data_range(self->op, j.first, j.last, &start, &n_data);
  j.y_offset = start;
  const char *in_name = adjoint ? "y (data)" : "x (image)";
  guint64 n_in = adjoint ? n_data : n_vox, n_out = adjoint ? n_vox : n_data;
  if (tlpy_operator_enter(self) < 0) return NULL;
  PyObject *result = NULL;
  PyArrayObject *host = NULL;
  TlArray *yv = NULL;
  GError *error = NULL;
  if (PyObject_TypeCheck(in, &TlPyArrayType)) {
    /* device path: no host copies */
    TlArray *din = device_arg(self, in, n_in, in_name), *dout;
    if (!din) goto done;
    if (out != Py_None) {
      if (!PyObject_TypeCheck(out, &TlPyArrayType)) {
        PyErr_SetString(PyExc_TypeError, "out: expected a tomolab.Array");
        goto done;
      }
      if (!(dout = device_arg(self, out, n_out, "out"))) goto done;
      result = Py_NewRef(out);
    } else {
      dout = tl_array_new_float(self->context->ctx, n_out, &error);
      if (!dout) {
        tlpy_raise(error);
        goto done;
      }
      if (!(result = tlpy_array_wrap(self->context, dout))) goto done;
    }
    if (din == dout) {
      PyErr_SetString(PyExc_ValueError, "out: must not be the input array");
      Py_CLEAR(result);
      goto done;
    }
    j.x = adjoint ? dout : din;
    j.y = adjoint ? din : dout;
    if (tlpy_run_or_raise(do_apply, &j, self->cancel) < 0) Py_CLEAR(result);
    goto done;
  }
  if (out != Py_None) {
    PyErr_SetString(PyExc_TypeError, "out: only with a tomolab.Array input");
    goto done;
  }
  if (!(host = tlpy_float_array(in, (npy_intp)n_in, in_name))) goto done;
  if (!ensure_buffers(self, &error)) {
    tlpy_raise(error);
    goto done;
  }
  PyArrayObject *res;
  if (adjoint) {
    res = tlpy_image_array_new(tl_operator_grid(self->op));
  } else {
    npy_intp dim = (npy_intp)n_data;
    res = (PyArrayObject *)PyArray_SimpleNew(1, &dim, NPY_FLOAT32);
  }
  if (!res) goto done;
  yv = tl_array_new_view(self->ybuf, start, n_data, &error);
  if (!yv) {
    Py_DECREF(res);
    tlpy_raise(error);
    goto done;
  }
  j.x = self->xbuf;
  j.y = yv;
  j.src = PyArray_DATA(host);
  j.dst = PyArray_DATA(res);
  if (tlpy_run_or_raise(do_apply, &j, self->cancel) < 0)
    Py_DECREF(res);
  else
    result = (PyObject *)res;
done:
  if (yv) tl_array_free(yv);
  Py_XDECREF(host);
  tlpy_operator_leave(self);
  return result;
}

static PyObject *op_forward(TlPyOperator *self, PyObject *args, PyObject *kw) {
  return apply(self, args, kw, FALSE);
}
static PyObject *op_adjoint(TlPyOperator *self, PyObject *args, PyObject *kw) {
  return apply(self, args, kw, TRUE);
}

typedef struct {
  TlPyOperator *o;
  guint first, last;
  float *dst;
  gboolean counts;
} SensJob;

static gboolean do_sens(gpointer d, GError **error) {
  SensJob *j = d;
  TlOperator *op = j->o->op;
  guint64 n = tl_operator_n_voxels(op);
  if (j->counts) {
    g_autoptr(TlArray) v = tl_array_new_view(j->o->ybuf, 0, tl_operator_n_data(op), error);
    return v && tl_operator_counts(op, j->o->stream, v, error) &&
           tl_stream_finish(j->o->stream, error) && tl_array_download(v, j->dst, error);
  }
  g_autofree float *h = g_new(float, n);
  memset(j->dst, 0, n * sizeof(float));
  /* the subsets' column sums added in double on the host */
  for (guint k = j->first; k < j->last; k++) {
    if (!tl_operator_sensitivity(op, j->o->stream, k, j->o->xbuf, error) ||
        !tl_stream_finish(j->o->stream, error) || !tl_array_download(j->o->xbuf, h, error))
      return FALSE;
    if (j->last - j->first == 1) {
      memcpy(j->dst, h, n * sizeof(float));
    } else {
      for (guint64 i = 0; i < n; i++) j->dst[i] = (float)((double)j->dst[i] + h[i]);
    }
  }
  return TRUE;
}

static PyObject *op_sensitivity(TlPyOperator *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"subset", "progress", NULL};
  PyObject *subset = Py_None, *progress = Py_None, *saved;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$O:sensitivity", kwlist, &subset, &progress))
    return NULL;
  SensJob j = {.o = self};
  if (parse_subset(self, subset, &j.first, &j.last) < 0) return NULL;
  if (tlpy_progress_enter(progress, &saved) < 0) return NULL;
  if (tlpy_operator_enter(self) < 0) {
    tlpy_progress_leave(saved);
    return NULL;
  }
  GError *error = NULL;
  PyArrayObject *res = NULL;
  if (!ensure_buffers(self, &error)) {
    tlpy_raise(error);
  } else if ((res = tlpy_image_array_new(tl_operator_grid(self->op)))) {
    j.dst = PyArray_DATA(res);
    if (tlpy_run_or_raise(do_sens, &j, self->cancel) < 0) Py_CLEAR(res);
  }
  tlpy_operator_leave(self);
  tlpy_progress_leave(saved);
  return (PyObject *)res;
}

static PyObject *op_counts(TlPyOperator *self, PyObject *unused) {
  if (!tl_operator_has_counts(self->op)) {
    PyErr_Format(PyExc_NotImplementedError, "operator %s holds no measured counts",
                 tl_operator_name(self->op));
    return NULL;
  }
  if (tlpy_operator_enter(self) < 0) return NULL;
  GError *error = NULL;
  PyArrayObject *res = NULL;
  npy_intp n = (npy_intp)tl_operator_n_data(self->op);
  if (!ensure_buffers(self, &error)) {
    tlpy_raise(error);
  } else if ((res = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT32))) {
    SensJob j = {.o = self, .dst = PyArray_DATA(res), .counts = TRUE};
    if (tlpy_run_or_raise(do_sens, &j, self->cancel) < 0) Py_CLEAR(res);
  }
  tlpy_operator_leave(self);
  return (PyObject *)res;
}

static PyObject *op_subset_range(TlPyOperator *self, PyObject *arg) {
  guint a, b;
  if (parse_subset(self, arg, &a, &b) < 0) return NULL;
  return Py_BuildValue("KK", (unsigned long long)tl_operator_subset_first(self->op, a),
                       (unsigned long long)tl_operator_subset_length(self->op, a));
}

/* CT: projections in geometry order (n_views, det_v, det_u) <-> the data order. */
typedef struct {
  TlPyOperator *o;
  gboolean scatter;
  TlArray *proj;
  const float *src;
  float *dst;
} PermJob;

static gboolean do_perm(gpointer d, GError **error) {
  PermJob *j = d;
  TlPyOperator *o = j->o;
  g_autoptr(TlArray) yv = tl_array_new_view(o->ybuf, 0, tl_operator_n_data(o->op), error);
  if (!yv || !tl_array_upload(j->scatter ? yv : j->proj, j->src, error)) return FALSE;
  gboolean ok = j->scatter ? tl_ct_operator_scatter(o->op, o->stream, yv, j->proj, error)
                           : tl_ct_operator_gather(o->op, o->stream, j->proj, yv, error);
  return ok && tl_stream_finish(o->stream, error) &&
         tl_array_download(j->scatter ? j->proj : yv, j->dst, error);
}

static PyObject *permute(TlPyOperator *self, PyObject *arg, gboolean scatter) {
  TlCtProjector *p = tl_ct_operator_projector(self->op);
  if (!p) {
    PyErr_Format(PyExc_TypeError, "%s: only CT operators have a geometry order",
                 scatter ? "scatter" : "gather");
    return NULL;
  }
  const TlCtGeometry *g = tl_ct_projector_geometry(p);
  guint64 n = tl_operator_n_data(self->op);
  PyArrayObject *host = tlpy_float_array(arg, (npy_intp)n, scatter ? "data" : "projections");
  if (!host) return NULL;
  if (tlpy_operator_enter(self) < 0) {
    Py_DECREF(host);
    return NULL;
  }
  GError *error = NULL;
  PyArrayObject *res = NULL;
  PermJob j = {.o = self, .scatter = scatter, .src = PyArray_DATA(host)};
  if (!ensure_buffers(self, &error) || !(j.proj = tl_array_new_float(self->context->ctx, n, &error))) {
    tlpy_raise(error);
  } else {
    npy_intp shape[3] = {g->n_views, g->det_v, g->det_u};
    npy_intp flat = (npy_intp)n;
    res = scatter ? (PyArrayObject *)PyArray_SimpleNew(3, shape, NPY_FLOAT32)
                  : (PyArrayObject *)PyArray_SimpleNew(1, &flat, NPY_FLOAT32);
    if (res) {
      j.dst = PyArray_DATA(res);
      if (tlpy_run_or_raise(do_perm, &j, self->cancel) < 0) Py_CLEAR(res);
    }
  }
  if (j.proj) tl_array_free(j.proj);
  Py_DECREF(host);
  tlpy_operator_leave(self);
  return (PyObject *)res;
}
static PyObject *op_gather(TlPyOperator *self, PyObject *arg) { return permute(self, arg, FALSE); }
static PyObject *op_scatter(TlPyOperator *self, PyObject *arg) { return permute(self, arg, TRUE); }

static PyObject *op_shape(TlPyOperator *self, void *c) {
  return Py_BuildValue("KK", (unsigned long long)tl_operator_n_data(self->op),
                       (unsigned long long)tl_operator_n_voxels(self->op));
}
static PyObject *op_n_subsets(TlPyOperator *self, void *c) {
  return PyLong_FromUnsignedLong(tl_operator_n_subsets(self->op));
}
static PyObject *op_grid(TlPyOperator *self, void *c) {
  return tlpy_grid_to(tl_operator_grid(self->op));
}
static PyObject *op_name(TlPyOperator *self, void *c) {
  return PyUnicode_FromString(tl_operator_name(self->op));
}
static PyObject *op_label(TlPyOperator *self, void *c) {
  return PyUnicode_FromString(tl_operator_label(self->op));
}
static PyObject *op_modality(TlPyOperator *self, void *c) {
  return PyUnicode_FromString(self->op->klass->modality);
}
static PyObject *op_is_listmode(TlPyOperator *self, void *c) {
  return PyBool_FromLong(tl_operator_is_listmode(self->op));
}
static PyObject *op_has_diag(TlPyOperator *self, void *c) {
  return PyBool_FromLong(tl_operator_diag(self->op) != NULL);
}
static PyObject *op_last_seconds(TlPyOperator *self, void *c) {
  return PyFloat_FromDouble(self->last_us * 1e-6);
}
static PyObject *op_ctx(TlPyOperator *self, void *c) {
  return Py_NewRef((PyObject *)self->context);
}
static PyObject *op_repr(TlPyOperator *self) {
  return PyUnicode_FromFormat("<tomolab.Operator %s: %llu data x %llu voxels>",
                              tl_operator_label(self->op),
                              (unsigned long long)tl_operator_n_data(self->op),
                              (unsigned long long)tl_operator_n_voxels(self->op));
}

static PyMethodDef op_methods[] = {
    {"forward", (PyCFunction)(void (*)(void))op_forward, METH_VARARGS | METH_KEYWORDS,
     "forward(x, subset=None, out=None) -> D A x (subset s: the subset's data only). x: an "
     "array of n_voxels values (numpy result) or a tomolab.Array (device result)"},
    {"adjoint", (PyCFunction)(void (*)(void))op_adjoint, METH_VARARGS | METH_KEYWORDS,
     "adjoint(y, subset=None, out=None) -> A^T D y as an image (nz, ny, nx); y: the data "
     "vector (or the subset's part)"},
    {"sensitivity", (PyCFunction)(void (*)(void))op_sensitivity, METH_VARARGS | METH_KEYWORDS,
     "sensitivity(subset=None, *, progress=None) -> column sums of D A over every datum the "
     "system could measure (list mode: every detectable pair), summed over the subsets; "
     "progress: callable(fraction, message) (tomolab.set_progress)"},
    {"counts", (PyCFunction)op_counts, METH_NOARGS,
     "counts() -> the operator's own measured counts in data order (PET)"},
    {"subset_range", (PyCFunction)op_subset_range, METH_O,
     "subset_range(s) -> (first, length) of subset s in the data vector"},
    {"gather", (PyCFunction)op_gather, METH_O,
     "CT: gather(projections) -> data vector (projections in geometry order, view-major)"},
    {"scatter", (PyCFunction)op_scatter, METH_O,
     "CT: scatter(data) -> projections (n_views, det_v, det_u)"},
    {NULL}};

static PyGetSetDef op_getset[] = {
    {"shape", (getter)op_shape, NULL, "(n_data, n_voxels)"},
    {"n_subsets", (getter)op_n_subsets, NULL, "number of subsets"},
    {"grid", (getter)op_grid, NULL, "the image grid"},
    {"name", (getter)op_name, NULL, "the class name (registry)"},
    {"label", (getter)op_label, NULL, "class and settings"},
    {"modality", (getter)op_modality, NULL, "pet, ct or any"},
    {"is_listmode", (getter)op_is_listmode, NULL, "whether each datum is one event"},
    {"has_diag", (getter)op_has_diag, NULL, "whether D (attenuation factors) is set"},
    {"ctx", (getter)op_ctx, NULL, "the Context"},
    {"last_seconds", (getter)op_last_seconds, NULL,
     "wall seconds the last forward/adjoint spent in the library (upload, kernels, download)"},
    {NULL}};

PyTypeObject TlPyOperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Operator",
    .tp_basicsize = sizeof(TlPyOperator),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A linear operator y = D A x (recon/tl-operator.h); made by pet_operator() or "
              "ct_operator().",
    .tp_dealloc = (destructor)operator_dealloc,
    .tp_methods = op_methods,
    .tp_getset = op_getset,
    .tp_repr = (reprfunc)op_repr,
};

int tlpy_operator_init(PyObject *m) {
  tlpy_algebra_prepare(&TlPyOperatorType); /* tlpy-algebra.c: A @ x, A.T, A + B, ... */
  if (PyType_Ready(&TlPyOperatorType) < 0 || tlpy_algebra_init(&TlPyOperatorType) < 0)
    return -1;
  if (PyModule_AddFunctions(m, tlpy_lines_functions) < 0) return -1; /* tlpy-lines.c */
  Py_INCREF(&TlPyOperatorType);
  return PyModule_AddObject(m, "Operator", (PyObject *)&TlPyOperatorType);
}
