/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Context (one Vulkan device), Array (a float array on the device, so an algorithm loop can
 * stay there) and the array expressions of compute/expr/tl-expr.h. */
#include "tlpy.h"
#include "expr/tl-kernel-edit.h"

static TlPyContext *default_context;

/* ---- Context ---- */

static int context_init(TlPyContext *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"device", NULL};
  PyObject *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Context", kwlist, &device)) return -1;
  g_autofree char *sel = NULL;
  if (PyLong_Check(device)) {
    long i = PyLong_AsLong(device);
    if (i < 0) {
      PyErr_Format(PyExc_ValueError, "device index %ld: expected >= 0", i);
      return -1;
    }
    sel = g_strdup_printf("%ld", i);
  } else if (PyUnicode_Check(device)) {
    sel = g_strdup(PyUnicode_AsUTF8(device));
  } else if (device != Py_None) {
    PyErr_SetString(PyExc_TypeError, "device: expected an index, a name substring or None");
    return -1;
  }
  if (self->ctx) {
    PyErr_SetString(PyExc_RuntimeError, "Context already initialised");
    return -1;
  }
  GError *error = NULL;
  TlContext *ctx;
  Py_BEGIN_ALLOW_THREADS
  ctx = tl_context_new(sel, &error);
  Py_END_ALLOW_THREADS
  if (!ctx) return tlpy_raise_int(error);
  self->ctx = ctx;
  return 0;
}

static void context_dealloc(TlPyContext *self) {
  if (self->ctx) {
    Py_BEGIN_ALLOW_THREADS
    tl_context_free(self->ctx);
    Py_END_ALLOW_THREADS
  }
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int context_ok(TlPyContext *self) {
  if (self->ctx) return 1;
  PyErr_SetString(PyExc_RuntimeError, "Context not initialised");
  return 0;
}

static PyObject *context_info(TlPyContext *self, void *c) {
  if (!context_ok(self)) return NULL;
  return tlpy_device_dict(tl_context_info(self->ctx));
}
static PyObject *context_name(TlPyContext *self, void *c) {
  if (!context_ok(self)) return NULL;
  return PyUnicode_FromString(tl_context_info(self->ctx)->name);
}
static PyObject *context_validation(TlPyContext *self, void *c) {
  if (!context_ok(self)) return NULL;
  return PyBool_FromLong(tl_context_validation_enabled(self->ctx));
}
static PyObject *context_messages(TlPyContext *self, void *c) {
  if (!context_ok(self)) return NULL;
  return PyLong_FromUnsignedLong(tl_context_validation_messages(self->ctx));
}
static PyObject *context_repr(TlPyContext *self) {
  if (!self->ctx) return PyUnicode_FromString("<tomolab.Context (not initialised)>");
  return PyUnicode_FromFormat("<tomolab.Context on %s>", tl_context_info(self->ctx)->name);
}

/* Edited built-in kernels (core/tl-kernels.h, expr/tl-kernel-edit.h): the Python side of the
 * window's kernel editor and `recon --kernel`. */
typedef struct {
  TlContext *ctx;
  const char *name, *source;
} KernelJob;

static gboolean do_set_kernel(gpointer d, GError **error) {
  KernelJob *j = d;
  return tl_kernel_compile(j->ctx, j->name, j->source, NULL, error);
}

static PyObject *context_set_kernel(TlPyContext *self, PyObject *args) {
  const char *name, *source;
  if (!context_ok(self) || !PyArg_ParseTuple(args, "ss:set_kernel", &name, &source)) return NULL;
  KernelJob j = {self->ctx, name, source};
  if (tlpy_run_or_raise(do_set_kernel, &j, NULL) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *context_revert_kernel(TlPyContext *self, PyObject *args) {
  const char *name;
  if (!context_ok(self) || !PyArg_ParseTuple(args, "s:revert_kernel", &name)) return NULL;
  tl_kernels_revert(self->ctx, name);
  Py_RETURN_NONE;
}

static PyObject *context_kernel_replaced(TlPyContext *self, PyObject *args) {
  const char *name;
  if (!context_ok(self) || !PyArg_ParseTuple(args, "s:kernel_replaced", &name)) return NULL;
  return PyBool_FromLong(tl_kernels_replaced(self->ctx, name));
}

static PyMethodDef context_methods[] = {
    {"set_kernel", (PyCFunction)context_set_kernel, METH_VARARGS,
     "set_kernel(name, source): compile GLSL as the replacement of built-in kernel `name` "
     "(tomolab.kernel_source(name) gives the built-in's text); operators made or used from now "
     "on run it, timed as '... (edited)'; a compile error raises with glslang's log by line"},
    {"revert_kernel", (PyCFunction)context_revert_kernel, METH_VARARGS,
     "revert_kernel(name): the built-in kernel again"},
    {"kernel_replaced", (PyCFunction)context_kernel_replaced, METH_VARARGS,
     "kernel_replaced(name) -> whether an edited kernel replaces the built-in"},
    {NULL}};

static PyGetSetDef context_getset[] = {
    {"info", (getter)context_info, NULL, "the device's properties (dict)"},
    {"name", (getter)context_name, NULL, "the device's name"},
    {"validation_enabled", (getter)context_validation, NULL,
     "whether the Vulkan validation layer is on (TOMOLAB_VALIDATE=1)"},
    {"validation_messages", (getter)context_messages, NULL,
     "validation-layer warnings and errors seen so far"},
    {NULL}};

PyTypeObject TlPyContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Context",
    .tp_basicsize = sizeof(TlPyContext),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Context(device=None): a Vulkan device (index, name substring, or None = "
              "$TOMOLAB_DEVICE else the best ranked).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)context_init,
    .tp_dealloc = (destructor)context_dealloc,
    .tp_getset = context_getset,
    .tp_methods = context_methods,
    .tp_repr = (reprfunc)context_repr,
};

TlPyContext *tlpy_context_get(PyObject *obj) {
  if (obj && obj != Py_None) {
    if (!PyObject_TypeCheck(obj, &TlPyContextType)) {
      PyErr_SetString(PyExc_TypeError, "ctx: expected a tomolab.Context or None");
      return NULL;
    }
    if (!context_ok((TlPyContext *)obj)) return NULL;
    Py_INCREF(obj);
    return (TlPyContext *)obj;
  }
  if (!default_context) {
    PyObject *c = PyObject_CallNoArgs((PyObject *)&TlPyContextType);
    if (!c) return NULL;
    default_context = (TlPyContext *)c;
  }
  Py_INCREF(default_context);
  return default_context;
}

static PyObject *py_default_context(PyObject *self, PyObject *unused) {
  return (PyObject *)tlpy_context_get(NULL);
}

/* ---- Array ---- */

PyObject *tlpy_array_wrap(TlPyContext *context, TlArray *array) {
  TlPyArray *a = PyObject_New(TlPyArray, &TlPyArrayType);
  if (!a) {
    tl_array_free(array);
    return NULL;
  }
  Py_INCREF(context);
  a->context = context;
  a->array = array;
  return (PyObject *)a;
}

typedef struct {
  TlArray *a;
  const void *src;
  void *dst;
} Transfer;

static gboolean do_upload(gpointer d, GError **error) {
  Transfer *t = d;
  return tl_array_upload(t->a, t->src, error);
}
static gboolean do_download(gpointer d, GError **error) {
  Transfer *t = d;
  return tl_array_download(t->a, t->dst, error);
}

static int array_init(TlPyArray *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"data", "ctx", NULL};
  PyObject *data, *ctxo = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:Array", kwlist, &data, &ctxo)) return -1;
  if (self->array) {
    PyErr_SetString(PyExc_RuntimeError, "Array already initialised");
    return -1;
  }
  TlPyContext *c = tlpy_context_get(ctxo);
  if (!c) return -1;
  self->context = c;
  PyArrayObject *host = NULL;
  npy_intp n;
  if (PyLong_Check(data)) {
    long long v = PyLong_AsLongLong(data);
    if (v < 1 || v > (1LL << 40)) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "Array length %lld: expected 1 .. 2^40", v);
      return -1;
    }
    n = (npy_intp)v;
  } else {
    if (!(host = tlpy_float_array(data, -1, "data"))) return -1;
    n = PyArray_SIZE(host);
    if (n == 0) {
      Py_DECREF(host);
      PyErr_SetString(PyExc_ValueError, "Array data: empty (expected at least one element)");
      return -1;
    }
  }
  GError *error = NULL;
  self->array = tl_array_new_float(c->ctx, (guint64)n, &error);
  if (!self->array) {
    Py_XDECREF(host);
    return tlpy_raise_int(error);
  }
  Transfer t = {self->array, host ? PyArray_DATA(host) : NULL, NULL};
  int r = host ? tlpy_run_or_raise(do_upload, &t, NULL)
               : tlpy_run_or_raise((TlPyWork)tl_array_zero, self->array, NULL);
  Py_XDECREF(host);
  return r;
}

static void array_dealloc(TlPyArray *self) {
  if (self->array) tl_array_free(self->array);
  Py_XDECREF(self->context);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int array_ok(TlPyArray *self) {
  if (self->array) return 1;
  PyErr_SetString(PyExc_RuntimeError, "Array not initialised");
  return 0;
}

static PyObject *array_numpy(TlPyArray *self, PyObject *unused) {
  if (!array_ok(self)) return NULL;
  npy_intp n = (npy_intp)tl_array_length(self->array);
  PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT32);
  if (!out) return NULL;
  Transfer t = {self->array, NULL, PyArray_DATA(out)};
  if (tlpy_run_or_raise(do_download, &t, NULL) < 0) {
    Py_DECREF(out);
    return NULL;
  }
  return (PyObject *)out;
}

static PyObject *array_upload(TlPyArray *self, PyObject *arg) {
  if (!array_ok(self)) return NULL;
  PyArrayObject *host = tlpy_float_array(arg, (npy_intp)tl_array_length(self->array), "data");
  if (!host) return NULL;
  Transfer t = {self->array, PyArray_DATA(host), NULL};
  int r = tlpy_run_or_raise(do_upload, &t, NULL);
  Py_DECREF(host);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *array_zero(TlPyArray *self, PyObject *unused) {
  if (!array_ok(self)) return NULL;
  if (tlpy_run_or_raise((TlPyWork)tl_array_zero, self->array, NULL) < 0) return NULL;
  Py_RETURN_NONE;
}

static Py_ssize_t array_len(TlPyArray *self) {
  return self->array ? (Py_ssize_t)tl_array_length(self->array) : 0;
}

static PyObject *array_context(TlPyArray *self, void *c) {
  if (!array_ok(self)) return NULL;
  Py_INCREF(self->context);
  return (PyObject *)self->context;
}

static PyObject *array_repr(TlPyArray *self) {
  if (!self->array) return PyUnicode_FromString("<tomolab.Array (not initialised)>");
  return PyUnicode_FromFormat("<tomolab.Array of %llu float32 on %s>",
                              (unsigned long long)tl_array_length(self->array),
                              tl_context_info(self->context->ctx)->name);
}

static PyMethodDef array_methods[] = {
    {"numpy", (PyCFunction)array_numpy, METH_NOARGS, "numpy() -> a float32 copy on the host"},
    {"upload", (PyCFunction)array_upload, METH_O, "upload(data): copies host data in (same length)"},
    {"zero", (PyCFunction)array_zero, METH_NOARGS, "zero(): sets every element to 0"},
    {NULL}};
static PyGetSetDef array_getset[] = {{"ctx", (getter)array_context, NULL, "the Context"}, {NULL}};
static PySequenceMethods array_seq = {.sq_length = (lenfunc)array_len};

PyTypeObject TlPyArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Array",
    .tp_basicsize = sizeof(TlPyArray),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Array(data, ctx=None): float32 data on the device. data: a length (zeros) or "
              "an array-like (copied, flattened).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)array_init,
    .tp_dealloc = (destructor)array_dealloc,
    .tp_methods = array_methods,
    .tp_getset = array_getset,
    .tp_as_sequence = &array_seq,
    .tp_repr = (reprfunc)array_repr,
};

/* ---- expressions ---- */

typedef struct {
  TlContext *ctx;
  const char *text;
  TlExprArgs *args;
  gboolean reduce;
  double value;
} ExprJob;

static gboolean do_expr(gpointer d, GError **error) {
  ExprJob *j = d;
  return j->reduce ? tl_expr_reduce(j->ctx, NULL, j->text, j->args, &j->value, error)
                   : tl_expr_assign(j->ctx, NULL, j->text, j->args, error);
}

static PyObject *run_expr(PyObject *args, PyObject *kw, gboolean reduce) {
  const char *text;
  if (!PyArg_ParseTuple(args, "s", &text)) return NULL;
  g_autoptr(TlExprArgs) ea = tl_expr_args_new();
  TlContext *ctx = NULL;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kw && PyDict_Next(kw, &pos, &key, &value)) {
    const char *name = PyUnicode_AsUTF8(key);
    if (PyObject_TypeCheck(value, &TlPyArrayType)) {
      TlPyArray *a = (TlPyArray *)value;
      if (!array_ok(a)) return NULL;
      if (ctx && ctx != a->context->ctx) {
        PyErr_Format(PyExc_ValueError, "%s: array of another Context", name);
        return NULL;
      }
      ctx = a->context->ctx;
      tl_expr_args_array(ea, name, a->array);
    } else if (PyFloat_Check(value) || PyLong_Check(value)) {
      double v = PyFloat_AsDouble(value);
      if (v == -1.0 && PyErr_Occurred()) return NULL;
      tl_expr_args_scalar(ea, name, (float)v);
    } else {
      PyErr_Format(PyExc_TypeError,
                   "%s: expected a tomolab.Array or a number, got %s (upload numpy arrays with "
                   "tomolab.Array(x))", name, Py_TYPE(value)->tp_name);
      return NULL;
    }
  }
  if (!ctx) {
    PyErr_SetString(PyExc_ValueError, "an expression needs at least one tomolab.Array argument");
    return NULL;
  }
  ExprJob j = {ctx, text, ea, reduce, 0};
  if (tlpy_run_or_raise(do_expr, &j, NULL) < 0) return NULL;
  if (reduce) return PyFloat_FromDouble(j.value);
  Py_RETURN_NONE;
}

static PyObject *py_expr(PyObject *self, PyObject *args, PyObject *kw) {
  return run_expr(args, kw, FALSE);
}
static PyObject *py_reduce(PyObject *self, PyObject *args, PyObject *kw) {
  return run_expr(args, kw, TRUE);
}

static PyObject *py_kernel_names(PyObject *self, PyObject *unused) {
  const char *const *names = tl_kernels_names();
  PyObject *list = PyList_New(0);
  for (guint i = 0; list && names[i]; i++) {
    PyObject *n = PyUnicode_FromString(names[i]);
    if (!n || PyList_Append(list, n) < 0) {
      Py_XDECREF(n);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(n);
  }
  return list;
}

static PyObject *py_kernel_source(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s:kernel_source", &name)) return NULL;
  GError *error = NULL;
  g_autofree char *src = tl_kernels_source(name, &error);
  if (!src) return tlpy_raise(error);
  return PyUnicode_FromString(src);
}

PyMethodDef tlpy_context_functions[] = {
    {"default_context", py_default_context, METH_NOARGS,
     "default_context() -> the Context functions use when given ctx=None (made on first use)"},
    {"expr", (PyCFunction)(void (*)(void))py_expr, METH_VARARGS | METH_KEYWORDS,
     "expr('x = x*y + y/z', x=..., y=..., z=...): one fused device dispatch "
     "(docs/expressions.md); arguments are tomolab.Array or numbers"},
    {"kernel_names", py_kernel_names, METH_NOARGS,
     "kernel_names() -> the built-in GLSL kernels (Context.set_kernel replaces one)"},
    {"kernel_source", py_kernel_source, METH_VARARGS,
     "kernel_source(name) -> a built-in kernel's GLSL, its includes expanded"},
    {"reduce", (PyCFunction)(void (*)(void))py_reduce, METH_VARARGS | METH_KEYWORDS,
     "reduce('dot(x, y)', x=..., y=...) -> float: sum, dot, l2norm, min, max of an "
     "element-wise expression"},
    {NULL}};

int tlpy_context_init(PyObject *m) {
  if (PyType_Ready(&TlPyContextType) < 0 || PyType_Ready(&TlPyArrayType) < 0) return -1;
  Py_INCREF(&TlPyContextType);
  Py_INCREF(&TlPyArrayType);
  if (PyModule_AddObject(m, "Context", (PyObject *)&TlPyContextType) < 0 ||
      PyModule_AddObject(m, "Array", (PyObject *)&TlPyArrayType) < 0)
    return -1;
  return PyModule_AddFunctions(m, tlpy_context_functions);
}
