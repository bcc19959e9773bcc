/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.open (through _open): any file the CLI reads, opened by the library's dataset layer
 * (compute/dataset/tl-dataset.h) with its kind and defaults, the CT centre searched as the
 * CLI's --centre auto does; and __version__, the meson project version. */
#include "tlpy.h"
#include <math.h>

typedef struct {
  const char *path;
  TlContext *ctx; /* NULL: no centre search */
  TlDataset *ds;
} OpenJob;

static gboolean do_open(gpointer d, GError **error) {
  OpenJob *j = d;
  if (!(j->ds = tl_dataset_open(j->path, error))) return FALSE;
  return !j->ctx || tl_dataset_find_centre(j->ds, j->ctx, error);
}

static const char *const kind_keys[] = {"image", "pet-listmode", "pet-bins", "ct"};

static int set_item(PyObject *dict, const char *key, PyObject *value) {
  if (!value) return -1;
  int r = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return r;
}

/* The bins of a sinogram: pairs (n, 2) uint32 and counts (n,) float32. */
static int set_bins(PyObject *dict, const GArray *bins) {
  npy_intp n = bins->len, d2[2] = {n, 2};
  PyArrayObject *pairs = (PyArrayObject *)PyArray_SimpleNew(2, d2, NPY_UINT32);
  PyArrayObject *counts = pairs ? (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT32) : NULL;
  if (!counts) {
    Py_XDECREF(pairs);
    return -1;
  }
  guint32 *p = PyArray_DATA(pairs);
  float *c = PyArray_DATA(counts);
  for (guint i = 0; i < bins->len; i++) {
    const TlBin *b = &g_array_index(bins, TlBin, i);
    p[2 * i] = b->a, p[2 * i + 1] = b->b, c[i] = b->count;
  }
  return set_item(dict, "bin_pairs", (PyObject *)pairs) < 0 ||
                 set_item(dict, "bin_counts", (PyObject *)counts) < 0
             ? -1
             : 0;
}

static PyObject *allows_list(guint allows) {
  static const char *const names[] = {"randoms-delayeds", "randoms-singles", "tof",
                                      "attenuation", "normalisation", "quantification",
                                      "centre"};
  PyObject *l = PyList_New(0);
  for (guint i = 0; l && i < G_N_ELEMENTS(names); i++)
    if (allows & (1u << i)) {
      PyObject *s = PyUnicode_FromString(names[i]);
      if (!s || PyList_Append(l, s) < 0) {
        Py_XDECREF(s);
        Py_CLEAR(l);
        break;
      }
      Py_DECREF(s);
    }
  return l;
}

/* The dataset as a dict (tomolab.open makes its Dataset of it); takes the data out of ds. */
static PyObject *dataset_dict(TlDataset *ds) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  GString *desc = g_string_new(NULL);
  tl_dataset_describe(ds, desc);
  PyObject *data = NULL;
  switch (ds->kind) {
  case TL_DATASET_IMAGE: data = tlpy_image_to(ds->image); break;
  case TL_DATASET_CT: data = tlpy_ct_data_wrap(g_steal_pointer(&ds->ct)); break;
  default: data = tlpy_listmode_wrap(g_steal_pointer(&ds->lm)); break;
  }
  int bad =
      set_item(d, "kind", PyUnicode_FromString(kind_keys[ds->kind])) < 0 ||
      set_item(d, "path", PyUnicode_DecodeFSDefault(ds->path)) < 0 ||
      set_item(d, "format", PyUnicode_FromString(ds->format ? ds->format->name : "")) < 0 ||
      set_item(d, "data", data) < 0 || set_item(d, "grid", tlpy_grid_to(&ds->grid)) < 0 ||
      set_item(d, "subsets", PyLong_FromUnsignedLong(ds->subsets)) < 0 ||
      set_item(d, "start_s", PyFloat_FromDouble(ds->start_s)) < 0 ||
      set_item(d, "duration_s", PyFloat_FromDouble(ds->duration_s)) < 0 ||
      set_item(d, "allows", allows_list(ds->allows)) < 0 ||
      set_item(d, "tof_bins", PyLong_FromUnsignedLong(ds->tof_bins)) < 0 ||
      set_item(d, "centre", isnan(ds->centre) ? Py_NewRef(Py_None) : PyFloat_FromDouble(ds->centre)) < 0 ||
      set_item(d, "centre_found", PyBool_FromLong(ds->centre_found)) < 0 ||
      set_item(d, "description", PyUnicode_FromString(desc->str)) < 0 ||
      (ds->bins && set_bins(d, ds->bins) < 0) ||
      /* arc-corrected: the sinogram itself (tomolab.open makes it a Sinogram, the data) */
      (ds->arc && set_item(d, "sinogram", tlpy_sinogram_dict(ds->arc)) < 0) ||
      /* crystal pairs: the sinogram too, for a run's rays per pair (Run.pet_operator) */
      (ds->pair_sinogram && set_item(d, "sinogram", tlpy_sinogram_dict(ds->pair_sinogram)) < 0);
  g_string_free(desc, TRUE);
  if (bad) Py_CLEAR(d);
  return d;
}

static PyObject *py_open(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "context", "find_centre", "progress", NULL};
  PyObject *path, *ctxo = Py_None, *progress = Py_None, *saved;
  int find_centre = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|OpO:open", kwlist, PyUnicode_FSConverter, &path,
                                   &ctxo, &find_centre, &progress))
    return NULL;
  if (tlpy_progress_enter(progress, &saved) < 0) {
    Py_DECREF(path);
    return NULL;
  }
  OpenJob j = {PyBytes_AS_STRING(path), NULL, NULL};
  TlPyContext *c = NULL;
  if (find_centre && !(c = tlpy_context_get(ctxo))) {
    tlpy_progress_leave(saved);
    Py_DECREF(path);
    return NULL;
  }
  if (c) j.ctx = c->ctx;
  int r = tlpy_run_or_raise(do_open, &j, NULL);
  tlpy_progress_leave(saved);
  Py_DECREF(path);
  PyObject *res = r < 0 ? NULL : dataset_dict(j.ds);
  tl_dataset_free(j.ds);
  Py_XDECREF(c);
  return res;
}

static PyMethodDef dataset_functions[] = {
    {"_open", (PyCFunction)(void (*)(void))py_open, METH_VARARGS | METH_KEYWORDS,
     "_open(path, context=None, find_centre=True, progress=None) -> dict (tomolab.open wraps "
     "it)"},
    {NULL}};

int tlpy_dataset_init(PyObject *m) {
#ifndef TLPY_VERSION
#error "TLPY_VERSION: python/tomolab/meson.build passes the meson project version"
#endif
  if (PyModule_AddStringConstant(m, "__version__", TLPY_VERSION) < 0) return -1;
  return PyModule_AddFunctions(m, dataset_functions);
}
