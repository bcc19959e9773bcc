/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PET sinograms for tomolab.Sinogram (python/tomolab/sinogram.py; docs/python.md "PET
 * sinograms"): STIR projection data read and written, list mode histogrammed, the crystal
 * pairs of every bin (for the sinogram's operator) and the library's own forward projection
 * into a sinogram, all over pet/data/tl-sinogram.h. A sinogram crosses into Python as a dict
 * of its geometry fields and its bins, flat in the library's order (segment after segment,
 * [view][axial][tangential] within one); sinogram.py gives it its shape. */
#include "tlpy.h"
#include "pet/data/tl-sinogram-hist.h"
#include "pet/tl-sinogram-model.h"
#include "pet/tl-pet-lines.h"

static int set_item(PyObject *dict, const char *key, PyObject *value) {
  if (!value) return -1;
  int r = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return r;
}

/* The dict of s (data copied). */
static PyObject *sino_to_dict(const TlSinogram *s) {
  PyObject *d = PyDict_New(), *segs = PyList_New(s->n_segments);
  char *scanner_text = NULL;
  npy_intp n = (npy_intp)s->n_bins;
  PyArrayObject *data = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT32);
  if (!d || !segs || !data) goto fail;
  memcpy(PyArray_DATA(data), s->data, s->n_bins * sizeof(float));
  for (guint i = 0; i < s->n_segments; i++)
    PyList_SET_ITEM(segs, i, Py_BuildValue("(iiI)", s->min_ring_difference[i],
                                           s->max_ring_difference[i], s->n_axial[i]));
  GError *error = NULL;
  TlScanner *sc = tl_sinogram_scanner(s, &error);
  if (!sc) {
    tlpy_raise(error);
    goto fail;
  }
  scanner_text = tl_scanner_to_text(sc);
  tl_scanner_free(sc);
  if (set_item(d, "name", PyUnicode_DecodeUTF8(s->name ? s->name : "", s->name ? strlen(s->name) : 0,
                                               "replace")) < 0 ||
      set_item(d, "segments", Py_NewRef(segs)) < 0 ||
      set_item(d, "n_views", PyLong_FromUnsignedLong(s->n_views)) < 0 ||
      set_item(d, "n_tangential", PyLong_FromUnsignedLong(s->n_tangential)) < 0 ||
      set_item(d, "arc_corrected", PyBool_FromLong(s->arc_corrected)) < 0 ||
      set_item(d, "n_rings", PyLong_FromUnsignedLong(s->n_rings)) < 0 ||
      set_item(d, "n_detectors", PyLong_FromUnsignedLong(s->n_detectors)) < 0 ||
      set_item(d, "inner_radius_mm", PyFloat_FromDouble(s->inner_radius_mm)) < 0 ||
      set_item(d, "doi_mm", PyFloat_FromDouble(s->doi_mm)) < 0 ||
      set_item(d, "ring_spacing_mm", PyFloat_FromDouble(s->ring_spacing_mm)) < 0 ||
      set_item(d, "bin_size_mm", PyFloat_FromDouble(s->bin_size_mm)) < 0 ||
      set_item(d, "view_offset_deg", PyFloat_FromDouble(s->view_offset_deg)) < 0 ||
      set_item(d, "block_positions", PyLong_FromUnsignedLong(s->block_positions)) < 0 ||
      set_item(d, "scanner_text", PyUnicode_FromString(scanner_text)) < 0 ||
      set_item(d, "data", Py_NewRef(data)) < 0)
    goto fail;
  g_free(scanner_text);
  Py_DECREF(segs);
  Py_DECREF(data);
  return d;
fail:
  g_free(scanner_text);
  Py_XDECREF(d);
  Py_XDECREF(segs);
  Py_XDECREF(data);
  return NULL;
}

/* A TlSinogram from the dict's geometry and data (Python's Sinogram fields), validated. */
static TlSinogram *sino_from_obj(PyObject *o) {
  TlSinogram *s = g_new0(TlSinogram, 1);
  PyObject *segs = NULL, *name = NULL;
  PyArrayObject *data = NULL;
#define GET(key, conv, field)                                                                \
  do {                                                                                       \
    PyObject *v = PyObject_GetAttrString(o, key);                                            \
    if (!v) goto fail;                                                                       \
    s->field = conv(v);                                                                      \
    Py_DECREF(v);                                                                            \
    if (PyErr_Occurred()) goto fail;                                                         \
  } while (0)
  GET("n_views", PyLong_AsUnsignedLong, n_views);
  GET("n_tangential", PyLong_AsUnsignedLong, n_tangential);
  GET("arc_corrected", PyObject_IsTrue, arc_corrected);
  GET("n_rings", PyLong_AsUnsignedLong, n_rings);
  GET("n_detectors", PyLong_AsUnsignedLong, n_detectors);
  GET("inner_radius_mm", PyFloat_AsDouble, inner_radius_mm);
  GET("doi_mm", PyFloat_AsDouble, doi_mm);
  GET("ring_spacing_mm", PyFloat_AsDouble, ring_spacing_mm);
  GET("bin_size_mm", PyFloat_AsDouble, bin_size_mm);
  GET("view_offset_deg", PyFloat_AsDouble, view_offset_deg);
  GET("block_positions", PyLong_AsUnsignedLong, block_positions); /* gaps: no line there */
#undef GET
  if (!(name = PyObject_GetAttrString(o, "name"))) goto fail;
  const char *nm = PyUnicode_AsUTF8(name);
  if (!nm) goto fail;
  s->name = g_strdup(nm);
  PyObject *seg_attr = PyObject_GetAttrString(o, "segments");
  if (!seg_attr) goto fail;
  segs = PySequence_Fast(seg_attr, "segments: expected a sequence of (min_rd, max_rd, n_axial)");
  Py_DECREF(seg_attr);
  if (!segs) goto fail;
  Py_ssize_t ns = PySequence_Fast_GET_SIZE(segs);
  if (ns < 1 || ns > TL_SINOGRAM_MAX_SEGMENTS) {
    PyErr_Format(PyExc_ValueError, "segments: %zd given, expected 1 .. %u", ns,
                 TL_SINOGRAM_MAX_SEGMENTS);
    goto fail;
  }
  s->n_segments = (guint)ns;
  s->n_axial = g_new0(guint, ns);
  s->min_ring_difference = g_new0(gint, ns);
  s->max_ring_difference = g_new0(gint, ns);
  for (Py_ssize_t i = 0; i < ns; i++)
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(segs, i), "iiI;segments: expected (min_rd, "
                          "max_rd, n_axial) tuples", &s->min_ring_difference[i],
                          &s->max_ring_difference[i], &s->n_axial[i]))
      goto fail;
  /* the bins the geometry holds, each count clamped so the product cannot overflow: a value
   * that large fails the validation below anyway */
  guint64 n = 0;
  for (guint i = 0; i < s->n_segments; i++)
    n += (guint64)MIN(s->n_axial[i], 1u << 15) * MIN(s->n_views, 1u << 15) *
         MIN(s->n_tangential, 1u << 15);
  s->n_bins = n;
  GError *error = NULL;
  if (!tl_sinogram_validate(s, "Sinogram", &error)) {
    tlpy_raise(error);
    goto fail;
  }
  PyObject *dobj = PyObject_GetAttrString(o, "data");
  if (!dobj) goto fail;
  data = tlpy_float_array(dobj, (npy_intp)n, "Sinogram.data");
  Py_DECREF(dobj);
  if (!data) goto fail;
  s->data = g_new(float, n);
  memcpy(s->data, PyArray_DATA(data), n * sizeof(float));
  Py_DECREF(data);
  Py_DECREF(segs);
  Py_DECREF(name);
  return s;
fail:
  Py_XDECREF(data);
  Py_XDECREF(segs);
  Py_XDECREF(name);
  tl_sinogram_free(s);
  return NULL;
}

typedef struct {
  const char *path;
  TlSinogram *s;
  TlListmode *lm;
  guint max_rd;
  guint64 outside;
} SinoJob;

static gboolean do_load(gpointer d, GError **error) {
  SinoJob *j = d;
  return (j->s = tl_sinogram_load(j->path, error)) != NULL;
}

static gboolean do_save(gpointer d, GError **error) {
  SinoJob *j = d;
  return tl_sinogram_save(j->s, j->path, error);
}

static gboolean do_histogram(gpointer d, GError **error) {
  SinoJob *j = d;
  /* the sinogram the CLI's convert writes: STIR's layout and segment order, span 1 */
  return (j->s = tl_sinogram_new_stir(j->lm->scanner, 1, j->max_rd, error)) &&
         tl_sinogram_add_events(j->s, j->lm, &j->outside, error);
}

static PyObject *py_load(PyObject *self, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&:_sinogram_load", PyUnicode_FSConverter, &path)) return NULL;
  SinoJob j = {.path = PyBytes_AS_STRING(path)};
  int r = tlpy_run_or_raise(do_load, &j, NULL);
  Py_DECREF(path);
  PyObject *res = r < 0 ? NULL : sino_to_dict(j.s);
  tl_sinogram_free(j.s);
  return res;
}

static PyObject *py_save(PyObject *self, PyObject *args) {
  PyObject *o, *path;
  if (!PyArg_ParseTuple(args, "OO&:_sinogram_save", &o, PyUnicode_FSConverter, &path))
    return NULL;
  SinoJob j = {.path = PyBytes_AS_STRING(path), .s = sino_from_obj(o)};
  int r = j.s ? tlpy_run_or_raise(do_save, &j, NULL) : -1;
  Py_DECREF(path);
  tl_sinogram_free(j.s);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

/* _sinogram_histogram(scanner_text, events (a, b) uint32 pairs (n, 2), max_rd or -1):
 * (dict, events outside the sinogram). */
static PyObject *py_histogram(PyObject *self, PyObject *args) {
  const char *text;
  PyObject *eo;
  int max_rd;
  if (!PyArg_ParseTuple(args, "sOi:_sinogram_histogram", &text, &eo, &max_rd)) return NULL;
  PyArrayObject *ev = (PyArrayObject *)PyArray_FROM_OTF(eo, NPY_UINT32, NPY_ARRAY_IN_ARRAY |
                                                        NPY_ARRAY_FORCECAST);
  if (!ev) return NULL;
  if (PyArray_NDIM(ev) != 2 || PyArray_DIM(ev, 1) != 2) {
    PyErr_Format(PyExc_ValueError, "events: %d axes; expected crystal pairs (n, 2)",
                 PyArray_NDIM(ev));
    Py_DECREF(ev);
    return NULL;
  }
  GError *error = NULL;
  TlScanner *sc = tl_scanner_from_text(text, "<listmode scanner>", 1, &error);
  if (!sc) {
    Py_DECREF(ev);
    return tlpy_raise(error);
  }
  npy_intp n = PyArray_DIM(ev, 0);
  SinoJob j = {.lm = tl_listmode_new(sc, (guint64)n), .max_rd = max_rd < 0 ? G_MAXUINT : (guint)max_rd};
  const guint32 *p = PyArray_DATA(ev);
  for (npy_intp i = 0; i < n; i++)
    j.lm->events[i] = (TlEvent){p[2 * i], p[2 * i + 1], 0};
  Py_DECREF(ev);
  int r = tlpy_run_or_raise(do_histogram, &j, NULL);
  tl_listmode_free(j.lm);
  PyObject *res = NULL;
  if (r == 0) {
    PyObject *d = sino_to_dict(j.s);
    if (d) res = Py_BuildValue("(NK)", d, (unsigned long long)j.outside);
  }
  tl_sinogram_free(j.s);
  return res;
}

typedef struct {
  TlSinogram *s;
  GArray *pairs;
  float *per_bin;
} PairsJob;

static gboolean do_pairs(gpointer d, GError **error) {
  PairsJob *j = d;
  /* every bin's pairs (keep_zero), whatever its value; then each bin's number of pairs: the
   * sum over its pairs of 1, exact in float below 2^24 */
  for (guint64 i = 0; i < j->s->n_bins; i++) j->s->data[i] = 1.0f;
  if (!(j->pairs = tl_sinogram_to_bins(j->s, TRUE, error))) return FALSE;
  g_autofree float *ones = g_new(float, MAX(j->pairs->len, 1u));
  for (guint i = 0; i < j->pairs->len; i++) ones[i] = 1.0f;
  if (!tl_sinogram_set_from_pairs(j->s, j->pairs, ones, error)) return FALSE;
  j->per_bin = j->s->data;
  return TRUE;
}

/* _sinogram_pairs(sino): (pairs (n, 2) uint32 in bin order, pairs per bin (n_bins,) uint32). */
static PyObject *py_pairs(PyObject *self, PyObject *args) {
  PyObject *o;
  if (!PyArg_ParseTuple(args, "O:_sinogram_pairs", &o)) return NULL;
  PairsJob j = {.s = sino_from_obj(o)};
  if (!j.s) return NULL;
  int r = tlpy_run_or_raise(do_pairs, &j, NULL);
  PyObject *res = NULL;
  if (r == 0) {
    npy_intp d2[2] = {j.pairs->len, 2}, nb = (npy_intp)j.s->n_bins;
    PyArrayObject *pa = (PyArrayObject *)PyArray_SimpleNew(2, d2, NPY_UINT32);
    PyArrayObject *cnt = pa ? (PyArrayObject *)PyArray_SimpleNew(1, &nb, NPY_UINT32) : NULL;
    if (cnt) {
      guint32 *p = PyArray_DATA(pa), *c = PyArray_DATA(cnt);
      for (guint i = 0; i < j.pairs->len; i++) {
        const TlBin *b = &g_array_index(j.pairs, TlBin, i);
        p[2 * i] = b->a, p[2 * i + 1] = b->b;
      }
      for (npy_intp i = 0; i < nb; i++) c[i] = (guint32)j.per_bin[i];
      res = Py_BuildValue("(NN)", pa, cnt);
    } else {
      Py_XDECREF(pa);
    }
  }
  if (j.pairs) g_array_free(j.pairs, TRUE);
  tl_sinogram_free(j.s);
  return res;
}

typedef struct {
  TlContext *ctx;
  TlSinogram *s, *out;
  TlImage *x;
} FwdJob;

static gboolean do_forward(gpointer d, GError **error) {
  FwdJob *j = d;
  return (j->out = tl_sinogram_forward(j->ctx, j->s, j->x, error)) != NULL;
}

/* _sinogram_forward(sino, image, context): tl_sinogram_forward's bins (flat float32). */
static PyObject *py_forward(PyObject *self, PyObject *args) {
  PyObject *o, *im, *ctxo = Py_None;
  if (!PyArg_ParseTuple(args, "OO|O:_sinogram_forward", &o, &im, &ctxo)) return NULL;
  FwdJob j = {0};
  TlPyContext *c = tlpy_context_get(ctxo);
  if (!c) return NULL;
  j.ctx = c->ctx;
  PyObject *res = NULL;
  if (!(j.s = sino_from_obj(o)) || !(j.x = tlpy_image_from(im, NULL, "image"))) goto done;
  if (tlpy_run_or_raise(do_forward, &j, NULL) < 0) goto done;
  npy_intp n = (npy_intp)j.out->n_bins;
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT32);
  if (a) memcpy(PyArray_DATA(a), j.out->data, n * sizeof(float));
  res = (PyObject *)a;
done:
  tl_sinogram_free(j.s);
  tl_sinogram_free(j.out);
  if (j.x) tl_image_free(j.x);
  Py_DECREF(c);
  return res;
}

/* _sinogram_scanner_text(sino): the text of tl_sinogram_scanner (Scanner.from_text reads it). */
static PyObject *py_scanner_text(PyObject *self, PyObject *args) {
  PyObject *o;
  if (!PyArg_ParseTuple(args, "O:_sinogram_scanner_text", &o)) return NULL;
  g_autoptr(TlSinogram) s = sino_from_obj(o);
  if (!s) return NULL;
  GError *error = NULL;
  g_autoptr(TlScanner) sc = tl_sinogram_scanner(s, &error);
  if (!sc) return tlpy_raise(error);
  g_autofree char *text = tl_scanner_to_text(sc);
  return PyUnicode_FromString(text);
}

/* ---- _arc_operator: arc-corrected bins as lines (pet/tl-pet-lines.h), the CLI's and the
 * window's operator for such data (tl_pet_lines_operator_new_arc, via tl_recon_new_arc) ---- */

typedef struct {
  TlContext *ctx;
  TlSinogram *s;
  TlImageGrid grid;
  gboolean have_grid;
  const char *projector;
  guint rays_t, rays_z, subsets;
  TlImage *mu;
  TlOperator *op;
} ArcJob;

static gboolean do_arc(gpointer d, GError **error) {
  ArcJob *j = d;
  /* arc-corrected, or crystal pairs with rays: the CLI's and the window's tl_recon_new_lines */
  j->op = tl_pet_lines_operator_new_sinogram(j->ctx, &j->grid, j->projector, j->s, j->rays_t,
                                             j->rays_z, j->subsets, j->mu, error);
  return j->op != NULL;
}

static PyObject *py_arc_operator(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"sinogram", "grid", "projector", "subsets", "rays_tangential",
                           "rays_axial", "attenuation", "ctx", NULL};
  PyObject *so, *gobj = Py_None, *ctxo = Py_None, *atten = Py_None;
  ArcJob j = {.projector = "siddon", .rays_t = 1, .rays_z = 1, .subsets = 1};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$zIIIOO:_arc_operator", kwlist, &so, &gobj,
                                   &j.projector, &j.subsets, &j.rays_t, &j.rays_z, &atten,
                                   &ctxo))
    return NULL;
  if (gobj != Py_None) {
    if (!tlpy_grid_from(gobj, &j.grid)) return NULL;
    j.have_grid = TRUE;
  }
  if (!(j.s = sino_from_obj(so))) return NULL;
  if (!j.have_grid) { /* the dataset's PET grid of the sinogram's scanner, as the CLI's */
    GError *error = NULL;
    TlScanner *sc = tl_sinogram_scanner(j.s, &error);
    if (!sc) {
      tl_sinogram_free(j.s);
      return tlpy_raise(error);
    }
    j.grid = tl_dataset_pet_grid(sc);
    tl_scanner_free(sc);
  }
  TlPyContext *c = NULL;
  if ((atten != Py_None && !(j.mu = tlpy_image_from(atten, &j.grid, "attenuation"))) ||
      !(c = tlpy_context_get(ctxo))) {
    tl_sinogram_free(j.s);
    if (j.mu) tl_image_free(j.mu);
    return NULL;
  }
  j.ctx = c->ctx;
  PyObject *res = NULL;
  if (tlpy_run_or_raise(do_arc, &j, NULL) == 0) {
    GError *error = NULL;
    res = tlpy_operator_wrap(c, j.op, &error);
    if (!res && error) tlpy_raise(error);
  }
  tl_sinogram_free(j.s);
  if (j.mu) tl_image_free(j.mu);
  Py_DECREF(c);
  return res;
}

PyObject *tlpy_sinogram_dict(const TlSinogram *s) { return sino_to_dict(s); }

static PyMethodDef sinogram_functions[] = {
    {"_arc_operator", (PyCFunction)(void (*)(void))py_arc_operator, METH_VARARGS | METH_KEYWORDS,
     "_arc_operator(sinogram, grid=None, *, projector='siddon', subsets=1, rays_tangential=1, "
     "rays_axial=1, attenuation=None, ctx=None) -> Operator: arc-corrected bins as lines"},
    {"_sinogram_scanner_text", py_scanner_text, METH_VARARGS,
     "_sinogram_scanner_text(sinogram) -> the scanner file text of its geometry"},
    {"_sinogram_load", py_load, METH_VARARGS, "_sinogram_load(path) -> dict (STIR .hs)"},
    {"_sinogram_save", py_save, METH_VARARGS, "_sinogram_save(sinogram, path)"},
    {"_sinogram_histogram", py_histogram, METH_VARARGS,
     "_sinogram_histogram(scanner_text, pairs, max_rd) -> (dict, events outside)"},
    {"_sinogram_pairs", py_pairs, METH_VARARGS,
     "_sinogram_pairs(sinogram) -> (crystal pairs in bin order, pairs per bin)"},
    {"_sinogram_forward", py_forward, METH_VARARGS,
     "_sinogram_forward(sinogram, image, context=None) -> bins (tl_sinogram_forward)"},
    {NULL}};

int tlpy_sinogram_init(PyObject *m) { return PyModule_AddFunctions(m, sinogram_functions); }
