/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.Operator as Python users expect a linear operator (docs/python.md, "Operator
 * algebra"): A(x), A @ x, A @ B, A.T, A.H, A + B, A - B, 2 * A, -A, A / 2,
 * A.aslinearoperator(), A.records(), A.data_shape.
 *
 * The algebra itself is pure Python (tomolab/linop.py: lazy sums, scalings, products and
 * adjoints evaluated on the device where the operands live there); this file only gives the C
 * type the slots and attributes that hand over to it, so that the operators the library makes
 * take part without a Python wrapper class. The shapes users see come from here: data_shape is
 * (n_views, det_v, det_u) for CT, (n_data,) otherwise. */
#include "tlpy.h"

/* tomolab.linop.<name>(*args) */
static PyObject *linop_call(const char *name, PyObject *args, PyObject *kw) {
  PyObject *m = PyImport_ImportModule("tomolab.linop");
  if (!m) return NULL;
  PyObject *f = PyObject_GetAttrString(m, name);
  Py_DECREF(m);
  if (!f) return NULL;
  PyObject *r = PyObject_Call(f, args, kw);
  Py_DECREF(f);
  return r;
}

static PyObject *binary(const char *what, PyObject *a, PyObject *b) {
  PyObject *args = Py_BuildValue("(sOO)", what, a, b);
  if (!args) return NULL;
  PyObject *r = linop_call("_binary", args, NULL);
  Py_DECREF(args);
  return r;
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary("add", a, b); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary("sub", a, b); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary("mul", a, b); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binary("div", a, b); }
static PyObject *nb_matmul(PyObject *a, PyObject *b) { return binary("matmul", a, b); }
static PyObject *nb_neg(PyObject *a) {
  PyObject *m1 = PyLong_FromLong(-1);
  PyObject *r = m1 ? binary("mul", m1, a) : NULL;
  Py_XDECREF(m1);
  return r;
}

static PyNumberMethods op_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_matrix_multiply = nb_matmul,
    .nb_negative = nb_neg,
};

static PyObject *op_call(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *full = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
  if (!full) return NULL;
  PyTuple_SET_ITEM(full, 0, Py_NewRef(self));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
    PyTuple_SET_ITEM(full, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
  PyObject *r = linop_call("_call", full, kw);
  Py_DECREF(full);
  return r;
}

/* one-argument hand-overs: A.T, A.aslinearoperator(), ... -> linop._<name>(A) */
#define HAND_OVER(fn, name)                                 \
  static PyObject *fn(PyObject *self, void *unused) {       \
    PyObject *args = PyTuple_Pack(1, self);                 \
    if (!args) return NULL;                                 \
    PyObject *r = linop_call(name, args, NULL);             \
    Py_DECREF(args);                                        \
    return r;                                               \
  }
HAND_OVER(op_T, "_adjoint")
HAND_OVER(op_aslinop, "_aslinearoperator")
HAND_OVER(op_records, "_records")

static PyObject *op_data_shape(PyObject *self, void *unused) {
  TlOperator *op = ((TlPyOperator *)self)->op;
  /* only the CT class has a projector to ask (the accessor refuses other classes) */
  TlCtProjector *p = g_strcmp0(tl_operator_name(op), "ct") == 0 ? tl_ct_operator_projector(op)
                                                                  : NULL;
  if (p) {
    const TlCtGeometry *g = tl_ct_projector_geometry(p);
    return Py_BuildValue("(III)", g->n_views, g->det_v, g->det_u);
  }
  return Py_BuildValue("(K)", (unsigned long long)tl_operator_n_data(op));
}

static PyGetSetDef algebra_getset[] = {
    {"T", (getter)op_T, NULL, "the adjoint A^T D as a lazy operator (tomolab.linop)"},
    {"H", (getter)op_T, NULL, "the adjoint (conjugate transpose; the operators are real: = T)"},
    {"data_shape", (getter)op_data_shape, NULL,
     "the data as A @ x returns it: (n_views, det_v, det_u) for CT, (n_data,) otherwise"},
    {NULL}};

static PyMethodDef algebra_methods[] = {
    {"aslinearoperator", (PyCFunction)op_aslinop, METH_NOARGS,
     "aslinearoperator() -> scipy.sparse.linalg.LinearOperator (float64 vectors in data order, "
     "float32 on the device)"},
    {"records", (PyCFunction)op_records, METH_NOARGS,
     "PET: records() -> the events (a, b, tof_bin) or bins (a, b, count) as a numpy structured "
     "array in the operator's data order"},
    {NULL}};

void tlpy_algebra_prepare(PyTypeObject *t) {
  t->tp_as_number = &op_number;
  t->tp_call = op_call;
}

int tlpy_algebra_init(PyTypeObject *t) {
  PyObject *dict = t->tp_dict;
  for (PyGetSetDef *g = algebra_getset; g->name; g++) {
    PyObject *d = PyDescr_NewGetSet(t, g);
    if (!d || PyDict_SetItemString(dict, g->name, d) < 0) return -1;
    Py_DECREF(d);
  }
  for (PyMethodDef *m = algebra_methods; m->ml_name; m++) {
    PyObject *d = PyDescr_NewMethod(t, m);
    if (!d || PyDict_SetItemString(dict, m->ml_name, d) < 0) return -1;
    Py_DECREF(d);
  }
  /* numpy scalars and arrays defer to our slots (2.0 * A, np.float32(2) * A) instead of
   * treating the operator as an object element */
  if (PyDict_SetItemString(dict, "__array_ufunc__", Py_None) < 0) return -1;
  PyType_Modified(t);
  return 0;
}
