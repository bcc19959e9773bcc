/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Grids and images: a TlImageGrid is a tomolab.Grid (dims, voxel_mm, origin_mm, x first), a
 * TlImage a tomolab.Image (a float32 numpy array of shape (nz, ny, nx), i.e. x fastest as the
 * library stores it, and its grid). Both classes are plain Python (tomolab/__init__.py) and
 * registered here by _set_classes. Loading and saving go through tl_image_load/tl_image_save,
 * which pick the format from the file name. */
#include "tlpy.h"

static PyObject *grid_class, *image_class;

static int triple(PyObject *obj, const char *what, double out[3]) {
  PyObject *seq = PySequence_Fast(obj, what);
  if (!seq) return 0;
  if (PySequence_Fast_GET_SIZE(seq) != 3) {
    PyErr_Format(PyExc_ValueError, "grid %s: expected 3 values (x, y, z), got %zd", what,
                 PySequence_Fast_GET_SIZE(seq));
    Py_DECREF(seq);
    return 0;
  }
  for (int i = 0; i < 3; i++) {
    out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
    if (out[i] == -1.0 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return 0;
    }
  }
  Py_DECREF(seq);
  return 1;
}

/* A grid without the voxel bound (any > 0 or 1 keeps TlImage's 2^28: tlpy_grid_from). */
static int grid_from(PyObject *obj, TlImageGrid *out, int bounded) {
  static const char *names[] = {"dims", "voxel_mm", "origin_mm"};
  double v[3][3];
  for (int k = 0; k < 3; k++) {
    PyObject *a = PyObject_GetAttrString(obj, names[k]);
    if (!a) {
      PyErr_Format(PyExc_TypeError, "expected a tomolab.Grid (dims, voxel_mm, origin_mm), got %s",
                   Py_TYPE(obj)->tp_name);
      return 0;
    }
    int ok = triple(a, names[k], v[k]);
    Py_DECREF(a);
    if (!ok) return 0;
  }
  for (int i = 0; i < 3; i++) {
    if (!(v[0][i] >= 1 && v[0][i] <= G_MAXUINT32 && v[0][i] == (guint)v[0][i])) {
      g_autofree char *msg = g_strdup_printf("grid dims[%d] = %g: expected an integer >= 1", i,
                                             v[0][i]);
      PyErr_SetString(PyExc_ValueError, msg);
      return 0;
    }
    out->dims[i] = (guint)v[0][i];
    out->voxel_mm[i] = (float)v[1][i];
    out->origin_mm[i] = (float)v[2][i];
  }
  GError *error = NULL;
  if (!(bounded ? tl_image_grid_validate(out, &error) : tl_image_grid_validate_shape(out, &error)))
    return tlpy_raise_int(error), 0;
  return 1;
}

int tlpy_grid_from(PyObject *obj, TlImageGrid *out) { return grid_from(obj, out, 1); }
int tlpy_grid_from_any(PyObject *obj, TlImageGrid *out) { return grid_from(obj, out, 0); }

PyObject *tlpy_grid_to(const TlImageGrid *g) {
  if (!grid_class) {
    PyErr_SetString(PyExc_RuntimeError, "tomolab.Grid not registered (import tomolab)");
    return NULL;
  }
  return PyObject_CallFunction(grid_class, "(III)(ddd)(ddd)", g->dims[0], g->dims[1], g->dims[2],
                               (double)g->voxel_mm[0], (double)g->voxel_mm[1],
                               (double)g->voxel_mm[2], (double)g->origin_mm[0],
                               (double)g->origin_mm[1], (double)g->origin_mm[2]);
}

PyArrayObject *tlpy_float_array(PyObject *obj, npy_intp n, const char *what) {
  PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT32,
                                                       NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
  if (!a) return NULL;
  if (n >= 0 && PyArray_SIZE(a) != n) {
    PyErr_Format(PyExc_ValueError, "%s has %zd elements; expected %zd", what,
                 (Py_ssize_t)PyArray_SIZE(a), (Py_ssize_t)n);
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

PyArrayObject *tlpy_image_array_new(const TlImageGrid *g) {
  npy_intp shape[3] = {g->dims[2], g->dims[1], g->dims[0]};
  return (PyArrayObject *)PyArray_SimpleNew(3, shape, NPY_FLOAT32);
}

TlImage *tlpy_image_from(PyObject *obj, const TlImageGrid *grid, const char *what) {
  TlImageGrid g;
  PyObject *data = obj;
  gboolean is_image = PyObject_HasAttrString(obj, "grid") && PyObject_HasAttrString(obj, "data");
  PyObject *gobj = NULL;
  if (is_image) {
    gobj = PyObject_GetAttrString(obj, "grid");
    data = PyObject_GetAttrString(obj, "data");
    int ok = gobj && data && tlpy_grid_from(gobj, &g);
    Py_XDECREF(gobj);
    if (!ok) {
      Py_XDECREF(data);
      return NULL;
    }
    if (grid && !tl_image_grid_equal(&g, grid)) {
      g_autofree char *a = tl_image_grid_key(&g), *b = tl_image_grid_key(grid);
      PyErr_Format(PyExc_ValueError, "%s: its grid (%s) is not the expected grid (%s)", what, a, b);
      Py_DECREF(data);
      return NULL;
    }
  } else if (grid) {
    g = *grid;
    Py_INCREF(data);
  } else {
    PyErr_Format(PyExc_TypeError, "%s: expected a tomolab.Image (data and grid)", what);
    return NULL;
  }
  PyArrayObject *a = tlpy_float_array(data, (npy_intp)tl_image_grid_n_voxels(&g), what);
  Py_DECREF(data);
  if (!a) return NULL;
  TlImage *im = g_new0(TlImage, 1);
  im->grid = g;
  im->data = g_new(float, tl_image_grid_n_voxels(&g));
  memcpy(im->data, PyArray_DATA(a), tl_image_grid_n_voxels(&g) * sizeof(float));
  Py_DECREF(a);
  return im;
}

PyObject *tlpy_image_to(const TlImage *im) {
  PyArrayObject *a = tlpy_image_array_new(&im->grid);
  if (!a) return NULL;
  memcpy(PyArray_DATA(a), im->data, tl_image_grid_n_voxels(&im->grid) * sizeof(float));
  PyObject *g = tlpy_grid_to(&im->grid);
  if (!g) {
    Py_DECREF(a);
    return NULL;
  }
  return PyObject_CallFunction(image_class, "NN", a, g);
}

static PyObject *py_set_classes(PyObject *self, PyObject *args) {
  PyObject *g, *i;
  if (!PyArg_ParseTuple(args, "OO", &g, &i)) return NULL;
  Py_XSETREF(grid_class, Py_NewRef(g));
  Py_XSETREF(image_class, Py_NewRef(i));
  Py_RETURN_NONE;
}

static PyObject *py_grid_centred(PyObject *self, PyObject *args) {
  unsigned nx, ny, nz;
  float vx, vy, vz;
  if (!PyArg_ParseTuple(args, "(III)(fff)", &nx, &ny, &nz, &vx, &vy, &vz)) return NULL;
  TlImageGrid g = tl_image_grid_centred(nx, ny, nz, vx, vy, vz);
  GError *error = NULL;
  /* a description: what takes it bounds its voxels (one image 2^28, fdk by memory) */
  if (!tl_image_grid_validate_shape(&g, &error)) return tlpy_raise(error);
  return tlpy_grid_to(&g);
}

typedef struct {
  const char *path;
  TlImage *im;
} ImageJob;

static gboolean do_load(gpointer d, GError **error) {
  ImageJob *j = d;
  return (j->im = tl_image_load(j->path, error)) != NULL;
}
static gboolean do_save(gpointer d, GError **error) {
  ImageJob *j = d;
  return tl_image_save(j->im, j->path, error);
}

static PyObject *py_load_image(PyObject *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  ImageJob j = {PyBytes_AS_STRING(path), NULL};
  int r = tlpy_run_or_raise(do_load, &j, NULL);
  Py_DECREF(path);
  if (r < 0) return NULL;
  PyObject *out = tlpy_image_to(j.im);
  tl_image_free(j.im);
  return out;
}

static PyObject *py_save_image(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "image", "grid", NULL};
  PyObject *path, *image, *gobj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O|O:save_image", kwlist, PyUnicode_FSConverter,
                                   &path, &image, &gobj))
    return NULL;
  TlImageGrid g;
  if (gobj != Py_None && !tlpy_grid_from(gobj, &g)) {
    Py_DECREF(path);
    return NULL;
  }
  TlImage *im = tlpy_image_from(image, gobj != Py_None ? &g : NULL, "image");
  if (!im) {
    Py_DECREF(path);
    return NULL;
  }
  ImageJob j = {PyBytes_AS_STRING(path), im};
  int r = tlpy_run_or_raise(do_save, &j, NULL);
  Py_DECREF(path);
  tl_image_free(im);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_phantom(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "grid", "supersample", "sphere_ratio", "axis", "radius_mm",
                           "length_mm", NULL};
  const char *name;
  PyObject *gobj;
  unsigned supersample = 0, axis = 2;
  TlPhantomOptions o;
  tl_phantom_options_init(&o);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|IfIff:phantom", kwlist, &name, &gobj,
                                   &supersample, &o.sphere_ratio, &axis, &o.radius_mm,
                                   &o.length_mm))
    return NULL;
  o.axis = axis;
  TlImageGrid g;
  if (!tlpy_grid_from(gobj, &g)) return NULL;
  GError *error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset(name, &o, &g, &error);
  if (!ph) return tlpy_raise(error);
  g_autoptr(TlImage) act = NULL;
  g_autoptr(TlImage) mu = NULL;
  gboolean ok;
  Py_BEGIN_ALLOW_THREADS
  ok = tl_phantom_rasterise(ph, &g, supersample, &act, &mu, &error);
  Py_END_ALLOW_THREADS
  if (!ok) return tlpy_raise(error);
  PyObject *a = tlpy_image_to(act);
  PyObject *b = a ? tlpy_image_to(mu) : NULL;
  if (!b) {
    Py_XDECREF(a);
    return NULL;
  }
  return Py_BuildValue("NN", a, b);
}

static PyObject *py_phantom_names(PyObject *self, PyObject *unused) {
  PyObject *l = PyList_New(0);
  for (const char *const *n = tl_phantom_preset_names(); *n; n++) {
    PyObject *s = PyUnicode_FromString(*n);
    PyList_Append(l, s);
    Py_DECREF(s);
  }
  return l;
}

PyMethodDef tlpy_image_functions[] = {
    {"_set_classes", py_set_classes, METH_VARARGS, NULL},
    {"_grid_centred", py_grid_centred, METH_VARARGS, NULL},
    {"load_image", py_load_image, METH_VARARGS,
     "load_image(path) -> Image: any image format (NIfTI, raw, Interfile with STIR's .hv, "
     "MetaImage .mha/.mhd, DICOM), detected by content like tomolab-cli (docs/formats.md)"},
    {"save_image", (PyCFunction)(void (*)(void))py_save_image, METH_VARARGS | METH_KEYWORDS,
     "save_image(path, image, grid=None): image a tomolab.Image, or an array with grid; the "
     "format from the file name; written atomically"},
    {"phantom", (PyCFunction)(void (*)(void))py_phantom, METH_VARARGS | METH_KEYWORDS,
     "phantom(name, grid, supersample=0, sphere_ratio=4, axis=2, radius_mm=0, length_mm=0) -> "
     "(activity, mu): a PET phantom preset rasterised on grid"},
    {"phantom_names", py_phantom_names, METH_NOARGS, "phantom_names() -> the PET phantom presets"},
    {NULL}};

int tlpy_image_init(PyObject *m) { return PyModule_AddFunctions(m, tlpy_image_functions); }
