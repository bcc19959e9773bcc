/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.Run's C half: the run description of compute/run/tl-run-spec.h, the same key table,
 * parser and checks as tomolab-cli recon --run (no Python-side copy of the rules). A run
 * crosses the boundary as a dict of key -> value text; tomolab/__init__.py gives it typed
 * attributes. */
#include "tlpy.h"
#include "run/tl-run-spec.h"

/* A spec from a dict of key -> text (every value a str); NULL + exception. */
static TlRunSpec *spec_from(PyObject *dict) {
  if (!PyDict_Check(dict)) {
    PyErr_SetString(PyExc_TypeError, "expected a dict of run keys to str values");
    return NULL;
  }
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    const char *val = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!key || !val) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "run keys and values are str");
      return NULL;
    }
    GError *error = NULL;
    if (!tl_run_spec_set(s, key, val, &error)) {
      tlpy_raise(error);
      return NULL;
    }
  }
  return g_steal_pointer(&s);
}

/* Every key's canonical text. */
static PyObject *dict_of(const TlRunSpec *s) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  for (const TlRunKeyInfo *k = tl_run_keys(); k->key; k++) {
    g_autofree char *v = tl_run_spec_get(s, k->key);
    PyObject *o = PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "surrogateescape");
    if (!o || PyDict_SetItemString(d, k->key, o) < 0) {
      Py_XDECREF(o);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(o);
  }
  return d;
}

static PyObject *py_run_keys(PyObject *m, PyObject *unused) {
  static const char *types[] = {"text", "path", "count", "number", "bool", "choice", "list"};
  PyObject *list = PyList_New(0);
  for (const TlRunKeyInfo *k = tl_run_keys(); list && k->key; k++) {
    PyObject *t = Py_BuildValue("(ssssss)", k->key, types[k->type], k->values, k->def, k->unit,
                                k->doc);
    if (!t || PyList_Append(list, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(t);
  }
  return list;
}

static PyObject *py_run_canonical(PyObject *m, PyObject *dict) {
  g_autoptr(TlRunSpec) s = spec_from(dict);
  return s ? dict_of(s) : NULL;
}

static PyObject *py_run_parse(PyObject *m, PyObject *args) {
  const char *text, *source = "run";
  if (!PyArg_ParseTuple(args, "s|s:_run_parse", &text, &source)) return NULL;
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  GError *error = NULL;
  if (!tl_run_spec_parse(s, text, source, &error)) return tlpy_raise(error);
  return dict_of(s);
}

static PyObject *py_run_load(PyObject *m, PyObject *args) {
  const char *path;
  if (!PyArg_ParseTuple(args, "s:_run_load", &path)) return NULL;
  GError *error = NULL;
  g_autoptr(TlRunSpec) s = tl_run_spec_load(path, &error);
  return s ? dict_of(s) : tlpy_raise(error);
}

static PyObject *py_run_text(PyObject *m, PyObject *dict) {
  g_autoptr(TlRunSpec) s = spec_from(dict);
  if (!s) return NULL;
  g_autofree char *t = tl_run_spec_to_text(s);
  return PyUnicode_DecodeUTF8(t, (Py_ssize_t)strlen(t), "surrogateescape");
}

static PyObject *py_run_save(PyObject *m, PyObject *args) {
  PyObject *dict;
  const char *path;
  if (!PyArg_ParseTuple(args, "Os:_run_save", &dict, &path)) return NULL;
  g_autoptr(TlRunSpec) s = spec_from(dict);
  GError *error = NULL;
  if (!s) return NULL;
  if (!tl_run_spec_save(s, path, &error)) return tlpy_raise(error);
  Py_RETURN_NONE;
}

static PyObject *py_run_validate(PyObject *m, PyObject *dict) {
  g_autoptr(TlRunSpec) s = spec_from(dict);
  GError *error = NULL;
  if (!s) return NULL;
  if (!tl_run_spec_validate(s, &error)) return tlpy_raise(error);
  /* the defaults resolved, for building a solver */
  return Py_BuildValue("{s:s,s:s,s:I,s:I}", "algorithm", tl_run_spec_algorithm(s), "projector",
                       tl_run_spec_projector(s), "iterations", tl_run_spec_iterations(s),
                       "subsets", tl_run_spec_subsets(s));
}

static PyMethodDef run_functions[] = {
    {"_run_keys", py_run_keys, METH_NOARGS,
     "_run_keys() -> [(key, type, values, default, unit, doc)]: the run file's keys"},
    {"_run_canonical", py_run_canonical, METH_O,
     "_run_canonical(dict) -> dict: every key's value text after setting the given ones"},
    {"_run_parse", py_run_parse, METH_VARARGS, "_run_parse(text, source='run') -> dict"},
    {"_run_load", py_run_load, METH_VARARGS,
     "_run_load(path) -> dict: a run file or an image's JSON sidecar"},
    {"_run_text", py_run_text, METH_O, "_run_text(dict) -> the key = value text"},
    {"_run_save", py_run_save, METH_VARARGS, "_run_save(dict, path): written atomically"},
    {"_run_validate", py_run_validate, METH_O,
     "_run_validate(dict) -> dict of resolved defaults; raises on a bad combination"},
    {NULL}};

int tlpy_run_init(PyObject *m) { return PyModule_AddFunctions(m, run_functions); }
