/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT: tomolab.CtGeometry (circular cone / parallel orbits, explicit matrices, geometry files),
 * tomolab.CtData (.tlct scans, simulation from an image or a phantom preset), ct_operator()
 * (the "ct" operator, with gather / scatter between geometry order and data order) and fdk(). */
#include "tlpy.h"
#include "run/tl-run-ct-direct.h"

typedef struct {
  PyObject_HEAD
  TlCtGeometry *g;
} TlPyCtGeometry;

typedef struct {
  PyObject_HEAD
  TlCtData *d;
} TlPyCtData;

static PyTypeObject TlPyCtGeometryType, TlPyCtDataType;

static PyObject *geometry_wrap(TlCtGeometry *g) {
  TlPyCtGeometry *o = PyObject_New(TlPyCtGeometry, &TlPyCtGeometryType);
  if (!o) {
    tl_ct_geometry_free(g);
    return NULL;
  }
  o->g = g;
  return (PyObject *)o;
}
static void geometry_dealloc(TlPyCtGeometry *self) {
  if (self->g) tl_ct_geometry_free(self->g);
  Py_TYPE(self)->tp_free((PyObject *)self);
}
static PyObject *no_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyErr_Format(PyExc_TypeError, "%s: use its class methods", type->tp_name);
  return NULL;
}

static PyObject *orbit(PyObject *args, PyObject *kw, gboolean cone) {
  static char *kw_cone[] = {"n_views", "sid_mm", "sdd_mm", "det_u", "det_v", "pixel_u_mm",
                            "pixel_v_mm", "arc_deg", "start_deg", "offset_u_mm", "offset_v_mm",
                            NULL};
  static char *kw_par[] = {"n_views", "det_u", "det_v", "pixel_u_mm", "pixel_v_mm", "arc_deg",
                           "start_deg", "offset_u_mm", "offset_v_mm", NULL};
  unsigned n, du, dv;
  double sid = 0, sdd = 0, pu, pv, arc = NAN, start = 0, ou = 0, ov = 0;
  TlCtOrbit o;
  if (cone) {
    if (!PyArg_ParseTupleAndKeywords(args, kw, "IddIIdd|$dddd:cone", kw_cone, &n, &sid, &sdd,
                                     &du, &dv, &pu, &pv, &arc, &start, &ou, &ov))
      return NULL;
    tl_ct_orbit_init_cone(&o, n, sid, sdd, du, dv, pu, pv);
  } else {
    if (!PyArg_ParseTupleAndKeywords(args, kw, "IIIdd|$dddd:parallel", kw_par, &n, &du, &dv,
                                     &pu, &pv, &arc, &start, &ou, &ov))
      return NULL;
    tl_ct_orbit_init_parallel(&o, n, du, dv, pu, pv);
  }
  if (!isnan(arc)) o.arc_deg = arc;
  o.start_deg = start;
  o.offset_u_mm = ou;
  o.offset_v_mm = ov;
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  return g ? geometry_wrap(g) : tlpy_raise(error);
}
static PyObject *geometry_cone(PyObject *cls, PyObject *args, PyObject *kw) {
  return orbit(args, kw, TRUE);
}
static PyObject *geometry_parallel(PyObject *cls, PyObject *args, PyObject *kw) {
  return orbit(args, kw, FALSE);
}
static PyObject *geometry_load(PyObject *cls, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_load(PyBytes_AS_STRING(path), &error);
  Py_DECREF(path);
  return g ? geometry_wrap(g) : tlpy_raise(error);
}
static PyObject *geometry_from_matrices(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"matrices", "det_u", "det_v", "beam", NULL};
  PyObject *mo;
  unsigned du, dv;
  const char *beam = "cone";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OII|s:from_matrices", kwlist, &mo, &du, &dv, &beam))
    return NULL;
  static const char *const beams[] = {"cone", "parallel", NULL};
  int b = tlpy_choice("beam", beam, beams);
  if (b < 0) return NULL;
  PyArrayObject *m = (PyArrayObject *)PyArray_FROM_OTF(mo, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
  if (!m) return NULL;
  if (PyArray_SIZE(m) == 0 || PyArray_SIZE(m) % 12) {
    PyErr_Format(PyExc_ValueError, "matrices: %zd values; expected 12 per view (n, 3, 4)",
                 (Py_ssize_t)PyArray_SIZE(m));
    Py_DECREF(m);
    return NULL;
  }
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_matrices(b == 0 ? TL_CT_CONE : TL_CT_PARALLEL,
                                                (guint)(PyArray_SIZE(m) / 12), du, dv,
                                                PyArray_DATA(m), &error);
  Py_DECREF(m);
  return g ? geometry_wrap(g) : tlpy_raise(error);
}
static PyObject *geometry_save(TlPyCtGeometry *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  GError *error = NULL;
  gboolean ok = tl_ct_geometry_save(self->g, PyBytes_AS_STRING(path), &error);
  Py_DECREF(path);
  if (!ok) return tlpy_raise(error);
  Py_RETURN_NONE;
}
static PyObject *geometry_matrices(TlPyCtGeometry *self, void *c) {
  npy_intp shape[3] = {self->g->n_views, 3, 4};
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(3, shape, NPY_FLOAT64);
  if (a) memcpy(PyArray_DATA(a), self->g->matrices, self->g->n_views * 12 * sizeof(double));
  return (PyObject *)a;
}
static PyObject *geometry_n_views(TlPyCtGeometry *self, void *c) {
  return PyLong_FromUnsignedLong(self->g->n_views);
}
static PyObject *geometry_det(TlPyCtGeometry *self, void *c) {
  return Py_BuildValue("II", self->g->det_u, self->g->det_v);
}
static PyObject *geometry_beam(TlPyCtGeometry *self, void *c) {
  return PyUnicode_FromString(self->g->beam == TL_CT_CONE ? "cone" : "parallel");
}
static PyObject *geometry_repr(TlPyCtGeometry *self) {
  return PyUnicode_FromFormat("<tomolab.CtGeometry %s beam, %u views of %u x %u>",
                              self->g->beam == TL_CT_CONE ? "cone" : "parallel", self->g->n_views,
                              self->g->det_u, self->g->det_v);
}

static PyMethodDef geometry_methods[] = {
    {"cone", (PyCFunction)(void (*)(void))geometry_cone, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "CtGeometry.cone(n_views, sid_mm, sdd_mm, det_u, det_v, pixel_u_mm, pixel_v_mm, *, "
     "arc_deg=360, start_deg=0, offset_u_mm=0, offset_v_mm=0): circular cone-beam orbit"},
    {"parallel", (PyCFunction)(void (*)(void))geometry_parallel,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "CtGeometry.parallel(n_views, det_u, det_v, pixel_u_mm, pixel_v_mm, *, arc_deg=180, ...)"},
    {"from_matrices", (PyCFunction)(void (*)(void))geometry_from_matrices,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "CtGeometry.from_matrices(matrices (n, 3, 4), det_u, det_v, beam='cone')"},
    {"load", geometry_load, METH_VARARGS | METH_CLASS, "CtGeometry.load(path)"},
    {"save", (PyCFunction)geometry_save, METH_VARARGS, "save(path)"},
    {NULL}};
static PyGetSetDef geometry_getset[] = {
    {"n_views", (getter)geometry_n_views, NULL, NULL},
    {"detector", (getter)geometry_det, NULL, "(det_u, det_v) pixels"},
    {"beam", (getter)geometry_beam, NULL, "'cone' or 'parallel'"},
    {"matrices", (getter)geometry_matrices, NULL, "(n_views, 3, 4) projection matrices (copy)"},
    {NULL}};

static PyTypeObject TlPyCtGeometryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.CtGeometry",
    .tp_basicsize = sizeof(TlPyCtGeometry),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A CT acquisition geometry (one 3x4 projection matrix per view).",
    .tp_new = no_new,
    .tp_dealloc = (destructor)geometry_dealloc,
    .tp_methods = geometry_methods,
    .tp_getset = geometry_getset,
    .tp_repr = (reprfunc)geometry_repr,
};

/* ---- CtData ---- */

PyObject *tlpy_ct_data_wrap(TlCtData *d) {
  TlPyCtData *o = PyObject_New(TlPyCtData, &TlPyCtDataType);
  if (!o) {
    tl_ct_data_free(d);
    return NULL;
  }
  o->d = d;
  return (PyObject *)o;
}
static void data_dealloc(TlPyCtData *self) {
  if (self->d) tl_ct_data_free(self->d);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

typedef struct {
  TlContext *ctx;
  const TlCtGeometry *g;
  TlImage *im;
  TlCtPhantom *ph;
  TlImageGrid grid;
  double scale;
  TlCtSimOptions o;
  TlCtData *d;
  const char *path;
} CtJob;

static gboolean do_ct_sim(gpointer d, GError **error) {
  CtJob *j = d;
  j->d = j->im ? tl_ct_simulate_image(j->ctx, j->g, j->im, &j->o, error)
               : tl_ct_simulate_phantom(j->ctx, j->g, j->ph, &j->grid, j->scale, &j->o, error);
  return j->d != NULL;
}

static PyObject *data_simulate(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"geometry", "image", "grid", "scale", "projector", "i0", "seed",
                           "keep_counts", "ctx", NULL};
  PyObject *go, *imo, *gridobj = Py_None, *ctxo = Py_None;
  CtJob j = {0};
  tl_ct_sim_options_init(&j.o);
  const char *projector = "joseph";
  unsigned long long seed = j.o.seed;
  int keep = 0;
  j.scale = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O$dsdKpO:simulate", kwlist,
                                   &TlPyCtGeometryType, &go, &imo, &gridobj, &j.scale, &projector,
                                   &j.o.i0, &seed, &keep, &ctxo))
    return NULL;
  j.o.seed = seed;
  j.o.keep_counts = keep;
  GError *error = NULL;
  if (!tl_ct_method_from_name(projector, &j.o.projector, &error)) return tlpy_raise(error);
  j.g = ((TlPyCtGeometry *)go)->g;
  if (PyUnicode_Check(imo)) {
    /* a phantom preset: exact line integrals on the host */
    if (gridobj == Py_None) {
      PyErr_SetString(PyExc_ValueError, "a phantom preset needs grid= (its normalised frame)");
      return NULL;
    }
    if (!tlpy_grid_from(gridobj, &j.grid)) return NULL;
    if (!(j.ph = tl_ct_phantom_new_preset(PyUnicode_AsUTF8(imo), &error))) return tlpy_raise(error);
  } else if (!(j.im = tlpy_image_from(imo, NULL, "image"))) {
    return NULL;
  }
  TlPyContext *c = tlpy_context_get(ctxo);
  PyObject *res = NULL;
  if (c) {
    j.ctx = c->ctx;
    if (tlpy_run_or_raise(do_ct_sim, &j, NULL) == 0) res = tlpy_ct_data_wrap(j.d);
    Py_DECREF(c);
  }
  if (j.im) tl_image_free(j.im);
  if (j.ph) tl_ct_phantom_free(j.ph);
  return res;
}

static gboolean do_ct_load(gpointer d, GError **error) {
  CtJob *j = d;
  /* any CT format of the table (.tlct, Data Exchange HDF5, TIFF stacks) */
  return (j->d = tl_format_load_kind(j->path, TL_DATA_CT, error)) != NULL;
}
static gboolean do_ct_save(gpointer d, GError **error) {
  CtJob *j = d;
  return tl_ct_data_save(j->d, j->path, error);
}
static PyObject *data_load(PyObject *cls, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  CtJob j = {.path = PyBytes_AS_STRING(path)};
  int r = tlpy_run_or_raise(do_ct_load, &j, NULL);
  Py_DECREF(path);
  return r < 0 ? NULL : tlpy_ct_data_wrap(j.d);
}
static PyObject *data_save(TlPyCtData *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  CtJob j = {.path = PyBytes_AS_STRING(path), .d = self->d};
  int r = tlpy_run_or_raise(do_ct_save, &j, NULL);
  Py_DECREF(path);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *data_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"geometry", "projections", NULL};
  PyObject *go, *po;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O:CtData", kwlist, &TlPyCtGeometryType, &go, &po))
    return NULL;
  const TlCtGeometry *g = ((TlPyCtGeometry *)go)->g;
  guint64 n = (guint64)g->n_views * g->det_u * g->det_v;
  PyArrayObject *a = tlpy_float_array(po, (npy_intp)n, "projections");
  if (!a) return NULL;
  TlCtData *d = tl_ct_data_new(tl_ct_geometry_copy(g));
  memcpy(d->proj, PyArray_DATA(a), n * sizeof(float));
  Py_DECREF(a);
  return tlpy_ct_data_wrap(d);
}
static PyObject *data_proj(TlPyCtData *self, void *c) {
  const TlCtGeometry *g = self->d->geometry;
  npy_intp shape[3] = {g->n_views, g->det_v, g->det_u};
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(3, shape, NPY_FLOAT32);
  if (a) memcpy(PyArray_DATA(a), self->d->proj, tl_ct_data_n_values(self->d) * sizeof(float));
  return (PyObject *)a;
}
static PyObject *data_geometry(TlPyCtData *self, void *c) {
  return geometry_wrap(tl_ct_geometry_copy(self->d->geometry));
}
static PyObject *data_values(TlPyCtData *self, void *c) {
  return PyUnicode_FromString(self->d->values == TL_CT_COUNTS ? "counts" : "line-integrals");
}
static PyObject *data_grid(TlPyCtData *self, void *c) {
  if (!self->d->has_grid) Py_RETURN_NONE;
  return tlpy_grid_to(&self->d->grid);
}

static PyMethodDef data_methods[] = {
    {"simulate", (PyCFunction)(void (*)(void))data_simulate,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "CtData.simulate(geometry, image, grid=None, *, scale=1, projector='joseph', i0=0, seed=1, "
     "keep_counts=False, ctx=None): image a tomolab.Image in mm^-1 (projected on the device) "
     "or a CT phantom preset name (exact line integrals on grid)"},
    {"load", data_load, METH_VARARGS | METH_CLASS, "CtData.load(path): a .tlct scan"},
    {"save", (PyCFunction)data_save, METH_VARARGS, "save(path)"},
    {NULL}};
static PyGetSetDef data_getset[] = {
    {"projections", (getter)data_proj, NULL, "(n_views, det_v, det_u) float32 (copy)"},
    {"geometry", (getter)data_geometry, NULL, "a copy of the geometry"},
    {"values", (getter)data_values, NULL, "'line-integrals' or 'counts'"},
    {"grid", (getter)data_grid, NULL, "the suggested grid, or None"},
    {NULL}};

static PyTypeObject TlPyCtDataType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.CtData",
    .tp_basicsize = sizeof(TlPyCtData),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CtData(geometry, projections): a CT scan (geometry + projections); also "
              "CtData.load, CtData.simulate.",
    .tp_new = data_new,
    .tp_dealloc = (destructor)data_dealloc,
    .tp_methods = data_methods,
    .tp_getset = data_getset,
};

/* ---- ct_operator, fdk ---- */

static PyObject *py_ct_operator(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"geometry", "grid", "method", "subsets", "ctx", NULL};
  PyObject *go, *gridobj, *ctxo = Py_None;
  const char *method = "joseph";
  unsigned subsets = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|$sIO:ct_operator", kwlist, &TlPyCtGeometryType,
                                   &go, &gridobj, &method, &subsets, &ctxo))
    return NULL;
  TlImageGrid grid;
  if (!tlpy_grid_from(gridobj, &grid)) return NULL;
  GError *error = NULL;
  TlCtMethod m;
  if (!tl_ct_method_from_name(method, &m, &error)) return tlpy_raise(error);
  TlPyContext *c = tlpy_context_get(ctxo);
  if (!c) return NULL;
  TlOperator *op;
  Py_BEGIN_ALLOW_THREADS
  op = tl_ct_operator_new(c->ctx, ((TlPyCtGeometry *)go)->g, &grid, m, subsets, &error);
  Py_END_ALLOW_THREADS
  PyObject *res = NULL;
  if (!op) {
    tlpy_raise(error);
  } else if (!(res = tlpy_operator_wrap(c, op, &error)) && error) {
    tlpy_raise(error);
  }
  Py_DECREF(c);
  return res;
}

typedef struct {
  TlContext *ctx;
  const TlCtGeometry *g;
  TlImageGrid grid;
  gboolean fbp;
  TlCtFilter filter;
  const float *proj;
  guint64 n_proj;
  float *dst;
} FdkJob;

/* The run layer's one path of FDK / FBP (run/tl-run-ct-direct.h: z-slabs), as the CLI's. */
static gboolean do_fdk(gpointer d, GError **error) {
  FdkJob *j = d;
  g_autoptr(TlArray) p = tl_array_new_float(j->ctx, j->n_proj, error);
  g_autoptr(TlStream) s = p ? tl_stream_new(j->ctx, error) : NULL;
  if (!s || !tl_array_upload(p, j->proj, error)) return FALSE;
  g_autoptr(TlCtSlabs) v = tl_run_ct_direct(j->ctx, s, j->g, &j->grid, j->fbp, j->filter, 0, p,
                                            error);
  return v && tl_ct_slabs_download(v, j->dst, error);
}

/* fdk() and fbp(): the same arguments; fbp refuses a cone-beam geometry. Any grid that the
 * device's and the host's memory hold (the array returned is the whole volume). */
static PyObject *fdk_or_fbp(PyObject *args, PyObject *kw, gboolean fbp) {
  static char *kwlist[] = {"geometry", "grid", "projections", "filter", "ctx", NULL};
  PyObject *go, *gridobj, *po, *ctxo = Py_None;
  const char *filter = "ram-lak";
  if (!PyArg_ParseTupleAndKeywords(args, kw, fbp ? "O!OO|sO:fbp" : "O!OO|sO:fdk", kwlist,
                                   &TlPyCtGeometryType, &go, &gridobj, &po, &filter, &ctxo))
    return NULL;
  const TlCtGeometry *g = ((TlPyCtGeometry *)go)->g;
  FdkJob j = {.g = g, .fbp = fbp, .n_proj = (guint64)g->n_views * g->det_u * g->det_v};
  if (!tlpy_grid_from_any(gridobj, &j.grid)) return NULL;
  GError *error = NULL;
  if (!tl_ct_filter_from_name(filter, &j.filter, &error)) return tlpy_raise(error);
  PyArrayObject *pa = tlpy_float_array(po, (npy_intp)j.n_proj, "projections");
  if (!pa) return NULL;
  TlPyContext *c = tlpy_context_get(ctxo);
  PyArrayObject *res = NULL;
  if (c) {
    j.ctx = c->ctx;
    /* refused before the array is made: the host holds the whole volume here */
    if (!tl_run_ct_direct_check(c->ctx, &j.grid, 4 * tl_image_grid_n_voxels(&j.grid), &error)) {
      tlpy_raise(error);
    } else if ((res = tlpy_image_array_new(&j.grid))) {
      j.proj = PyArray_DATA(pa);
      j.dst = PyArray_DATA(res);
      if (tlpy_run_or_raise(do_fdk, &j, NULL) < 0) Py_CLEAR(res);
    }
    Py_DECREF(c);
  }
  Py_DECREF(pa);
  return (PyObject *)res;
}

static PyObject *py_fdk(PyObject *self, PyObject *args, PyObject *kw) {
  return fdk_or_fbp(args, kw, FALSE);
}

static PyObject *py_fbp(PyObject *self, PyObject *args, PyObject *kw) {
  return fdk_or_fbp(args, kw, TRUE);
}

PyMethodDef tlpy_ct_functions[] = {
    {"ct_operator", (PyCFunction)(void (*)(void))py_ct_operator, METH_VARARGS | METH_KEYWORDS,
     "ct_operator(geometry, grid, *, method='joseph', subsets=1, ctx=None) -> Operator "
     "(joseph, siddon or raycast; data in the operator's order: see gather/scatter)"},
    {"fdk", (PyCFunction)(void (*)(void))py_fdk, METH_VARARGS | METH_KEYWORDS,
     "fdk(geometry, grid, projections, filter='ram-lak', ctx=None) -> image (nz, ny, nx): "
     "FDK / filtered back projection of line integrals in geometry order"},
    {"fbp", (PyCFunction)(void (*)(void))py_fbp, METH_VARARGS | METH_KEYWORDS,
     "fbp(geometry, grid, projections, filter='ram-lak', ctx=None) -> image (nz, ny, nx): "
     "filtered back projection of a parallel-beam scan (cone beam refused: use fdk)"},
    {NULL}};

int tlpy_ct_init(PyObject *m) {
  if (PyType_Ready(&TlPyCtGeometryType) < 0 || PyType_Ready(&TlPyCtDataType) < 0) return -1;
  Py_INCREF(&TlPyCtGeometryType);
  Py_INCREF(&TlPyCtDataType);
  if (PyModule_AddObject(m, "CtGeometry", (PyObject *)&TlPyCtGeometryType) < 0 ||
      PyModule_AddObject(m, "CtData", (PyObject *)&TlPyCtDataType) < 0)
    return -1;
  return PyModule_AddFunctions(m, tlpy_ct_functions);
}
