/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PET: tomolab.Scanner (presets and scanner files), tomolab.Listmode (list-mode files, the
 * Monte-Carlo simulator, events and bins as numpy) and pet_operator() (the "pet-listmode" and
 * "pet-binned" operators of pet/tl-pet-operator.h with subsets, TOF and attenuation). */
#include "tlpy.h"

typedef struct {
  PyObject_HEAD
  TlScanner *s;
} TlPyScanner;

typedef struct {
  PyObject_HEAD
  TlListmode *lm;
} TlPyListmode;

static PyTypeObject TlPyScannerType, TlPyListmodeType;

static PyObject *scanner_wrap(TlScanner *s) {
  TlPyScanner *o = PyObject_New(TlPyScanner, &TlPyScannerType);
  if (!o) {
    tl_scanner_free(s);
    return NULL;
  }
  o->s = s;
  return (PyObject *)o;
}

static void scanner_dealloc(TlPyScanner *self) {
  if (self->s) tl_scanner_free(self->s);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scanner_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyErr_SetString(PyExc_TypeError,
                  "use tomolab.Scanner.preset(name), .load(path) or .from_text(text)");
  return NULL;
}

static PyObject *scanner_preset(PyObject *cls, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  GError *error = NULL;
  TlScanner *s = tl_scanner_new_preset(name, &error);
  return s ? scanner_wrap(s) : tlpy_raise(error);
}

static PyObject *scanner_load(PyObject *cls, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  GError *error = NULL;
  TlScanner *s = tl_scanner_load(PyBytes_AS_STRING(path), &error);
  Py_DECREF(path);
  return s ? scanner_wrap(s) : tlpy_raise(error);
}

static PyObject *scanner_from_text(PyObject *cls, PyObject *args) {
  const char *text;
  if (!PyArg_ParseTuple(args, "s", &text)) return NULL;
  GError *error = NULL;
  TlScanner *s = tl_scanner_from_text(text, "<python>", 1, &error);
  return s ? scanner_wrap(s) : tlpy_raise(error);
}

static PyObject *scanner_presets(PyObject *cls, PyObject *unused) {
  PyObject *l = PyList_New(0);
  for (const char *const *n = tl_scanner_preset_names(); *n; n++) {
    PyObject *s = PyUnicode_FromString(*n);
    PyList_Append(l, s);
    Py_DECREF(s);
  }
  return l;
}

static PyObject *scanner_save(TlPyScanner *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  GError *error = NULL;
  gboolean ok = tl_scanner_save(self->s, PyBytes_AS_STRING(path), &error);
  Py_DECREF(path);
  if (!ok) return tlpy_raise(error);
  Py_RETURN_NONE;
}

static PyObject *scanner_to_text(TlPyScanner *self, PyObject *unused) {
  g_autofree char *t = tl_scanner_to_text(self->s);
  return PyUnicode_FromString(t);
}

static PyObject *scanner_default_grid(TlPyScanner *self, PyObject *unused) {
  TlImageGrid g = tl_scanner_default_grid(self->s);
  return tlpy_grid_to(&g);
}

static PyObject *scanner_crystals(TlPyScanner *self, void *c) {
  /* (n, 8): centre x y z, group, normal x y z, ring */
  npy_intp shape[2] = {self->s->n_crystals, 8};
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_FLOAT64);
  if (!a) return NULL;
  double *d = PyArray_DATA(a);
  for (guint i = 0; i < self->s->n_crystals; i++) {
    const TlCrystal *k = &self->s->crystals[i];
    double row[8] = {k->centre[0], k->centre[1], k->centre[2], k->group,
                     k->normal[0], k->normal[1], k->normal[2], k->ring};
    memcpy(d + 8 * i, row, sizeof row);
  }
  return (PyObject *)a;
}

#define SCANNER_GET(field, conv)                                  \
  static PyObject *scanner_##field(TlPyScanner *self, void *c) { \
    return conv(self->s->field);                                 \
  }
SCANNER_GET(name, PyUnicode_FromString)
SCANNER_GET(n_crystals, PyLong_FromUnsignedLong)
SCANNER_GET(n_rings, PyLong_FromUnsignedLong)
SCANNER_GET(crystals_per_ring, PyLong_FromUnsignedLong)
SCANNER_GET(max_ring_difference, PyLong_FromUnsignedLong)
SCANNER_GET(tof_bins, PyLong_FromUnsignedLong)
SCANNER_GET(tof_bin_mm, PyFloat_FromDouble)
SCANNER_GET(tof_fwhm_ps, PyFloat_FromDouble)

static PyObject *scanner_repr(TlPyScanner *self) {
  return PyUnicode_FromFormat("<tomolab.Scanner '%s': %u crystals, %u rings>", self->s->name,
                              self->s->n_crystals, self->s->n_rings);
}

static PyMethodDef scanner_methods[] = {
    {"preset", scanner_preset, METH_VARARGS | METH_CLASS,
     "Scanner.preset(name): 'dmi', 'small-animal', 'dual-head' (Scanner.presets())"},
    {"presets", scanner_presets, METH_NOARGS | METH_CLASS, "the preset names"},
    {"load", scanner_load, METH_VARARGS | METH_CLASS, "Scanner.load(path): a scanner file"},
    {"from_text", scanner_from_text, METH_VARARGS | METH_CLASS,
     "Scanner.from_text(text): the scanner text format (docs/formats.md)"},
    {"save", (PyCFunction)scanner_save, METH_VARARGS, "save(path)"},
    {"to_text", (PyCFunction)scanner_to_text, METH_NOARGS, "the text description"},
    {"default_grid", (PyCFunction)scanner_default_grid, METH_NOARGS,
     "a grid suited to the scanner (the presets' reference grids)"},
    {NULL}};

static PyGetSetDef scanner_getset[] = {
    {"name", (getter)scanner_name, NULL, NULL},
    {"n_crystals", (getter)scanner_n_crystals, NULL, NULL},
    {"n_rings", (getter)scanner_n_rings, NULL, NULL},
    {"crystals_per_ring", (getter)scanner_crystals_per_ring, NULL, NULL},
    {"max_ring_difference", (getter)scanner_max_ring_difference, NULL, NULL},
    {"tof_bins", (getter)scanner_tof_bins, NULL, NULL},
    {"tof_bin_mm", (getter)scanner_tof_bin_mm, NULL, NULL},
    {"tof_fwhm_ps", (getter)scanner_tof_fwhm_ps, NULL, NULL},
    {"crystals", (getter)scanner_crystals, NULL,
     "(n, 8) float64: centre xyz (mm), group, inward normal xyz, ring"},
    {NULL}};

static PyTypeObject TlPyScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Scanner",
    .tp_basicsize = sizeof(TlPyScanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A PET scanner (crystal table): Scanner.preset(name), Scanner.load(path).",
    .tp_new = scanner_new,
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_methods = scanner_methods,
    .tp_getset = scanner_getset,
    .tp_repr = (reprfunc)scanner_repr,
};

/* ---- Listmode ---- */

PyObject *tlpy_listmode_wrap(TlListmode *lm) {
  TlPyListmode *o = PyObject_New(TlPyListmode, &TlPyListmodeType);
  if (!o) {
    tl_listmode_free(lm);
    return NULL;
  }
  o->lm = lm;
  return (PyObject *)o;
}

static void listmode_dealloc(TlPyListmode *self) {
  if (self->lm) tl_listmode_free(self->lm);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

typedef struct {
  const char *path;
  TlListmode *lm;
} LmJob;
static gboolean do_lm_load(gpointer d, GError **error) {
  LmJob *j = d;
  /* any list-mode format of the table (.tlm, the mMR's .l and its header, CASToR) */
  return (j->lm = tl_format_load_kind(j->path, TL_DATA_PET_LISTMODE, error)) != NULL;
}
static gboolean do_lm_save(gpointer d, GError **error) {
  LmJob *j = d;
  return tl_listmode_save(j->lm, j->path, error);
}

static PyObject *listmode_load(PyObject *cls, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  LmJob j = {PyBytes_AS_STRING(path), NULL};
  int r = tlpy_run_or_raise(do_lm_load, &j, NULL);
  Py_DECREF(path);
  return r < 0 ? NULL : tlpy_listmode_wrap(j.lm);
}

static PyObject *listmode_save(TlPyListmode *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  LmJob j = {PyBytes_AS_STRING(path), self->lm};
  int r = tlpy_run_or_raise(do_lm_save, &j, NULL);
  Py_DECREF(path);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

typedef struct {
  const TlScanner *scanner;
  TlImage *act, *mu;
  TlSimulateParams p;
  GCancellable *cancel;
  TlSimulateStats stats;
  TlListmode *lm;
} SimJob;

static gboolean do_simulate(gpointer d, GError **error) {
  SimJob *j = d;
  j->lm = tl_simulate(j->scanner, j->act, j->mu, &j->p, NULL, NULL, j->cancel, &j->stats, error);
  return j->lm != NULL;
}

static PyObject *listmode_simulate(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"scanner", "activity", "mu", "events", "decays", "seed", "tof",
                           "randoms_fraction", "exact_count", "threads", "description", NULL};
  PyObject *sc, *act, *mu = Py_None;
  SimJob j = {0};
  tl_simulate_params_init(&j.p);
  unsigned long long seed = j.p.seed;
  int tof = j.p.tof, exact = j.p.exact_count;
  unsigned threads = j.p.n_threads;
  const char *desc = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O$ddKpdpIz:simulate", kwlist,
                                   &TlPyScannerType, &sc, &act, &mu, &j.p.events, &j.p.decays,
                                   &seed, &tof, &j.p.randoms_fraction, &exact, &threads, &desc))
    return NULL;
  j.p.seed = seed;
  j.p.tof = tof;
  j.p.exact_count = exact;
  j.p.n_threads = threads;
  j.p.description = desc;
  j.scanner = ((TlPyScanner *)sc)->s;
  if (!(j.act = tlpy_image_from(act, NULL, "activity"))) return NULL;
  if (mu != Py_None && !(j.mu = tlpy_image_from(mu, NULL, "mu"))) {
    tl_image_free(j.act);
    return NULL;
  }
  j.cancel = g_cancellable_new();
  int r = tlpy_run_or_raise(do_simulate, &j, j.cancel);
  g_object_unref(j.cancel);
  tl_image_free(j.act);
  if (j.mu) tl_image_free(j.mu);
  if (r < 0) return NULL;
  return tlpy_listmode_wrap(j.lm);
}

static PyObject *listmode_events(TlPyListmode *self, void *c) {
  PyObject *descr = Py_BuildValue("[(ss)(ss)(ss)]", "a", "<u4", "b", "<u4", "tof_bin", "<i4");
  PyArray_Descr *dt;
  if (!descr || !PyArray_DescrConverter(descr, &dt)) {
    Py_XDECREF(descr);
    return NULL;
  }
  Py_DECREF(descr);
  npy_intp n = (npy_intp)self->lm->n_events;
  PyArrayObject *a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, dt, 1, &n, NULL, NULL, 0, NULL);
  if (!a) return NULL;
  memcpy(PyArray_DATA(a), self->lm->events, n * sizeof(TlEvent));
  return (PyObject *)a;
}

static PyObject *listmode_histogram(TlPyListmode *self, PyObject *unused) {
  g_autoptr(GArray) bins = tl_listmode_histogram(self->lm);
  PyObject *descr = Py_BuildValue("[(ss)(ss)(ss)]", "a", "<u4", "b", "<u4", "count", "<f4");
  PyArray_Descr *dt;
  if (!descr || !PyArray_DescrConverter(descr, &dt)) {
    Py_XDECREF(descr);
    return NULL;
  }
  Py_DECREF(descr);
  npy_intp n = bins->len;
  PyArrayObject *a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, dt, 1, &n, NULL, NULL, 0, NULL);
  if (!a) return NULL;
  memcpy(PyArray_DATA(a), bins->data, n * sizeof(TlBin));
  return (PyObject *)a;
}

static PyObject *listmode_scanner(TlPyListmode *self, void *c) {
  return scanner_wrap(tl_scanner_copy(self->lm->scanner));
}
static PyObject *listmode_n_events(TlPyListmode *self, void *c) {
  return PyLong_FromUnsignedLongLong(self->lm->n_events);
}
static Py_ssize_t listmode_len(TlPyListmode *self) { return (Py_ssize_t)self->lm->n_events; }
static PyObject *listmode_has_tof(TlPyListmode *self, void *c) {
  return PyBool_FromLong(self->lm->has_tof);
}
static PyObject *listmode_description(TlPyListmode *self, void *c) {
  return PyUnicode_FromString(self->lm->description ? self->lm->description : "");
}
static PyObject *listmode_repr(TlPyListmode *self) {
  return PyUnicode_FromFormat("<tomolab.Listmode %llu events on '%s'%s>",
                              (unsigned long long)self->lm->n_events, self->lm->scanner->name,
                              self->lm->has_tof ? ", TOF" : "");
}

static PyObject *listmode_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyErr_SetString(PyExc_TypeError, "use tomolab.Listmode.load(path) or .simulate(...)");
  return NULL;
}

static PyMethodDef listmode_methods[] = {
    {"load", listmode_load, METH_VARARGS | METH_CLASS, "Listmode.load(path): a .tlm file"},
    {"simulate", (PyCFunction)(void (*)(void))listmode_simulate,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Listmode.simulate(scanner, activity, mu=None, *, events=0, decays=0, seed=1, tof=False, "
     "randoms_fraction=0, exact_count=False, threads=0, description=None): the Monte-Carlo "
     "simulator (pet/tl-simulate.h); activity and mu are tomolab.Image"},
    {"save", (PyCFunction)listmode_save, METH_VARARGS, "save(path)"},
    {"histogram", (PyCFunction)listmode_histogram, METH_NOARGS,
     "histogram() -> structured array (a, b, count) per crystal pair"},
    {NULL}};
static PyGetSetDef listmode_getset[] = {
    {"scanner", (getter)listmode_scanner, NULL, "a copy of the scanner"},
    {"n_events", (getter)listmode_n_events, NULL, NULL},
    {"has_tof", (getter)listmode_has_tof, NULL, NULL},
    {"description", (getter)listmode_description, NULL, NULL},
    {"events", (getter)listmode_events, NULL, "structured array (a, b, tof_bin), a copy"},
    {NULL}};
static PySequenceMethods listmode_seq = {.sq_length = (lenfunc)listmode_len};

static PyTypeObject TlPyListmodeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Listmode",
    .tp_basicsize = sizeof(TlPyListmode),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "PET list-mode data: Listmode.load(path), Listmode.simulate(...).",
    .tp_new = listmode_new,
    .tp_dealloc = (destructor)listmode_dealloc,
    .tp_methods = listmode_methods,
    .tp_getset = listmode_getset,
    .tp_as_sequence = &listmode_seq,
    .tp_repr = (reprfunc)listmode_repr,
};

/* ---- pet_operator ---- */

typedef struct {
  TlContext *ctx;
  TlListmode *lm;
  const TlImageGrid *grid;
  TlPetOperatorOptions o;
  gboolean binned;
  TlOperator *op;
} PetOpJob;

static gboolean do_pet_op(gpointer d, GError **error) {
  PetOpJob *j = d;
  if (j->binned) {
    g_autoptr(GArray) bins = tl_listmode_histogram(j->lm);
    j->op = tl_pet_operator_new_binned(j->ctx, j->lm->scanner, (const TlBin *)bins->data,
                                       bins->len, j->grid, &j->o, error);
  } else {
    j->op = tl_pet_operator_new_listmode(j->ctx, j->lm, j->grid, &j->o, error);
  }
  return j->op != NULL;
}

static PyObject *py_pet_operator(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"listmode", "grid", "projector", "subsets", "tof", "tof_n_sigma",
                           "attenuation", "binned", "use_cache", "tor_fwhm_mm", "ctx", NULL};
  PyObject *lmo, *gobj = Py_None, *atten = Py_None, *ctxo = Py_None;
  PetOpJob j = {0};
  tl_pet_operator_options_init(&j.o);
  int tof = 0, binned = 0, use_cache = j.o.use_cache;
  unsigned subsets = j.o.subsets;
  const char *projector = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O$zIpdOppdO:pet_operator", kwlist,
                                   &TlPyListmodeType, &lmo, &gobj, &projector, &subsets, &tof,
                                   &j.o.tof_n_sigma, &atten, &binned, &use_cache,
                                   &j.o.params.tor_fwhm_mm, &ctxo))
    return NULL;
  j.lm = ((TlPyListmode *)lmo)->lm;
  /* grid None: the dataset's PET grid, the CLI's and the window's (dataset/tl-dataset.h) */
  TlImageGrid grid = tl_dataset_pet_grid(j.lm->scanner);
  if (gobj != Py_None && !tlpy_grid_from(gobj, &grid)) return NULL;
  j.grid = &grid;
  j.o.projector = projector;
  j.o.subsets = subsets;
  j.o.tof = tof;
  j.o.use_cache = use_cache;
  j.binned = binned;
  g_autoptr(TlImage) mu = NULL;
  if (atten != Py_None && !(mu = tlpy_image_from(atten, &grid, "attenuation"))) return NULL;
  j.o.attenuation = mu;
  TlPyContext *c = tlpy_context_get(ctxo);
  if (!c) return NULL;
  j.ctx = c->ctx;
  PyObject *res = NULL;
  GCancellable *cancel = g_cancellable_new();
  if (tlpy_run_or_raise(do_pet_op, &j, cancel) == 0) {
    GError *error = NULL;
    res = tlpy_operator_wrap(c, j.op, &error);
    if (!res && error) tlpy_raise(error);
  }
  g_object_unref(cancel);
  Py_DECREF(c);
  return res;
}

PyMethodDef tlpy_pet_functions[] = {
    {"pet_operator", (PyCFunction)(void (*)(void))py_pet_operator, METH_VARARGS | METH_KEYWORDS,
     "pet_operator(listmode, grid=None, *, projector='siddon', subsets=1, tof=False, "
     "tof_n_sigma=0, attenuation=None, binned=False, use_cache=True, tor_fwhm_mm=2, ctx=None) "
     "-> Operator: list mode (one datum per event) or binned (one per crystal pair, "
     "histogrammed); grid None = the dataset's PET grid (voxels one crystal wide, as the CLI and "
     "the window; Scanner.default_grid() is the fine grid)"},
    {NULL}};

int tlpy_pet_init(PyObject *m) {
  if (PyType_Ready(&TlPyScannerType) < 0 || PyType_Ready(&TlPyListmodeType) < 0) return -1;
  Py_INCREF(&TlPyScannerType);
  Py_INCREF(&TlPyListmodeType);
  if (PyModule_AddObject(m, "Scanner", (PyObject *)&TlPyScannerType) < 0 ||
      PyModule_AddObject(m, "Listmode", (PyObject *)&TlPyListmodeType) < 0)
    return -1;
  return PyModule_AddFunctions(m, tlpy_pet_functions);
}
