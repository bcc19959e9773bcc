/* SPDX-License-Identifier: GPL-3.0-or-later */
/* _tomolab: the module object, the GError -> exception mapping, the blocking-work runner
 * (GIL released, Ctrl-C cancels between submissions), devices and the registry lists. */
#define TLPY_MODULE_C
#include "tlpy.h"

static PyObject *tlpy_error, *tlpy_invalid_arg, *tlpy_io_error, *tlpy_format_error,
    *tlpy_parse_error, *tlpy_no_device, *tlpy_unsupported, *tlpy_cancelled;

PyObject *tlpy_cancelled_type(void) { return tlpy_cancelled; }

/* ---- errors ---- */

PyObject *tlpy_raise(GError *error) {
  PyObject *type = tlpy_error;
  if (error->domain == TL_ERROR) {
    switch (error->code) {
    case TL_ERROR_INVALID_ARG: type = tlpy_invalid_arg; break;
    case TL_ERROR_IO: type = tlpy_io_error; break;
    case TL_ERROR_FORMAT: type = tlpy_format_error; break;
    case TL_ERROR_PARSE: type = tlpy_parse_error; break;
    case TL_ERROR_NO_DEVICE: type = tlpy_no_device; break;
    case TL_ERROR_UNSUPPORTED: type = tlpy_unsupported; break;
    default: break;
    }
  } else if (error->domain == G_IO_ERROR && error->code == G_IO_ERROR_CANCELLED) {
    type = tlpy_cancelled;
  } else if (error->domain == G_FILE_ERROR || error->domain == G_IO_ERROR) {
    type = tlpy_io_error;
  }
  PyObject *exc = PyObject_CallFunction(type, "s", error->message);
  if (exc) {
    PyObject *domain = PyUnicode_FromString(g_quark_to_string(error->domain));
    PyObject_SetAttrString(exc, "domain", domain);
    Py_XDECREF(domain);
    PyObject *code = PyLong_FromLong(error->code);
    PyObject_SetAttrString(exc, "code", code);
    Py_XDECREF(code);
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
  }
  g_error_free(error);
  return NULL;
}

int tlpy_raise_int(GError *error) {
  tlpy_raise(error);
  return -1;
}

int tlpy_choice(const char *what, const char *value, const char *const *names) {
  for (int i = 0; names[i]; i++)
    if (strcmp(value, names[i]) == 0) return i;
  g_autofree char *list = g_strjoinv(", ", (char **)names);
  PyErr_Format(PyExc_ValueError, "%s '%s': expected one of %s", what, value, list);
  return -1;
}

/* ---- the runner ---- */

typedef struct {
  TlPyWork work;
  gpointer data;
  TlProgress *progress; /* NULL: none; pushed on the thread doing the work */
  GError *error;
  gboolean ok, done;
  GMutex m;
  GCond c;
} Job;

static GThreadPool *pool;
/* FALSE: work runs on the calling thread (GIL still released); Ctrl-C then waits for it. */
static gboolean interruptible = TRUE;

static void pool_func(gpointer job_, gpointer unused) {
  Job *j = job_;
  GError *e = NULL;
  if (j->progress) tl_progress_push(j->progress);
  gboolean ok = j->work(j->data, &e);
  if (j->progress) tl_progress_pop(j->progress);
  g_mutex_lock(&j->m);
  j->ok = ok;
  j->error = e;
  j->done = TRUE;
  g_cond_signal(&j->c);
  g_mutex_unlock(&j->m);
}

/* The work's progress reaches the caller only while it waits here (interruptible runs). A
 * callable returning False cancels like Ctrl-C and raises tomolab.Cancelled. */
int tlpy_run(TlPyWork work, gpointer data, GCancellable *cancel, GError **error) {
  if (!interruptible) {
    gboolean ok;
    Py_BEGIN_ALLOW_THREADS
    ok = work(data, error);
    Py_END_ALLOW_THREADS
    return ok ? 1 : 0;
  }
  TlPyReporter *rep = tlpy_reporter_new(cancel);
  if (rep) cancel = tlpy_reporter_cancellable(rep); /* the same one, or the reporter's own */
  Job j = {.work = work, .data = data, .progress = tlpy_reporter_progress(rep)};
  g_mutex_init(&j.m);
  g_cond_init(&j.c);
  GError *e = NULL;
  if (!g_thread_pool_push(pool, &j, &e)) {
    tlpy_reporter_free(rep);
    g_propagate_error(error, e);
    return 0;
  }
  gboolean interrupted = FALSE, stopped = FALSE;
  for (;;) {
    gboolean done;
    Py_BEGIN_ALLOW_THREADS
    g_mutex_lock(&j.m);
    gint64 end = g_get_monotonic_time() + 20 * G_TIME_SPAN_MILLISECOND;
    while (!j.done && g_cond_wait_until(&j.c, &j.m, end)) {}
    done = j.done;
    g_mutex_unlock(&j.m);
    Py_END_ALLOW_THREADS
    /* the reports so far, with the GIL held (after the last one when done) */
    int d = interrupted || stopped ? 0 : tlpy_reporter_deliver(rep);
    if (d > 0 && done) d = 0; /* False after the work finished: nothing left to stop */
    if (d != 0) {
      interrupted = d < 0, stopped = d > 0;
      g_cancellable_cancel(cancel);
    }
    if (done) break;
    /* Signals run their Python handlers here (main thread only); KeyboardInterrupt by
     * default. The work then stops at its next submission boundary. */
    if (!interrupted && PyErr_CheckSignals() < 0) {
      interrupted = TRUE;
      if (cancel) g_cancellable_cancel(cancel);
    }
  }
  g_mutex_clear(&j.m);
  g_cond_clear(&j.c);
  if (cancel) g_cancellable_reset(cancel);
  tlpy_reporter_free(rep); /* after: its own cancellable goes with it */
  if (interrupted || stopped) {
    g_clear_error(&j.error);
    if (stopped) PyErr_SetString(tlpy_cancelled, "cancelled by the progress callable");
    return -1;
  }
  if (!j.ok) {
    g_propagate_error(error, j.error);
    return 0;
  }
  return 1;
}

int tlpy_run_or_raise(TlPyWork work, gpointer data, GCancellable *cancel) {
  GError *error = NULL;
  int r = tlpy_run(work, data, cancel, &error);
  if (r == 0) return tlpy_raise_int(error);
  return r < 0 ? -1 : 0;
}

static PyObject *py_set_interruptible(PyObject *self, PyObject *arg) {
  int v = PyObject_IsTrue(arg);
  if (v < 0) return NULL;
  gboolean old = interruptible;
  interruptible = v;
  return PyBool_FromLong(old);
}

/* ---- devices ---- */

static PyObject *device_dict(const TlDeviceInfo *d) {
  PyObject *heaps = PyList_New(0);
  for (guint i = 0; i < d->n_heaps; i++) {
    PyObject *h = Py_BuildValue("{s:K,s:O}", "size", (unsigned long long)d->heaps[i].size,
                                "device_local", d->heaps[i].device_local ? Py_True : Py_False);
    PyList_Append(heaps, h);
    Py_XDECREF(h);
  }
  PyObject *r = Py_BuildValue(
      "{s:I,s:s,s:s,s:s,s:s,s:O,s:s,s:O,s:O,s:I,s:K,s:K,s:N}", "index", d->index, "name", d->name,
      "type", tl_device_type_name(d->type), "driver", d->driver_name, "driver_info",
      d->driver_info, "usable", d->usable ? Py_True : Py_False, "unusable_reason",
      d->unusable_reason, "float32_atomic_add", d->float32_atomic_add ? Py_True : Py_False,
      "timestamps", d->timestamps ? Py_True : Py_False, "subgroup_size", d->subgroup_size,
      "max_storage_buffer_range", (unsigned long long)d->max_storage_buffer_range,
      "max_memory_allocation_size", (unsigned long long)d->max_memory_allocation_size, "heaps",
      heaps);
  if (r) {
    g_autofree char *api = g_strdup_printf("%u.%u.%u", VK_API_VERSION_MAJOR(d->api_version),
                                           VK_API_VERSION_MINOR(d->api_version),
                                           VK_API_VERSION_PATCH(d->api_version));
    PyObject *a = PyUnicode_FromString(api);
    PyDict_SetItemString(r, "api_version", a);
    Py_XDECREF(a);
  }
  return r;
}
PyObject *tlpy_device_dict(const TlDeviceInfo *d) { return device_dict(d); }

static PyObject *py_devices(PyObject *self, PyObject *unused) {
  GError *error = NULL;
  GArray *a;
  Py_BEGIN_ALLOW_THREADS
  a = tl_enumerate_devices(&error);
  Py_END_ALLOW_THREADS
  if (!a) return tlpy_raise(error);
  PyObject *list = PyList_New(0);
  for (guint i = 0; i < a->len; i++) {
    PyObject *d = device_dict(&g_array_index(a, TlDeviceInfo, i));
    if (!d || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      g_array_unref(a);
      return NULL;
    }
    Py_DECREF(d);
  }
  g_array_unref(a);
  return list;
}

/* ---- registry ---- */

static PyObject *flag_list(guint flags) {
  static const struct { guint bit; const char *name; } names[] = {
      {TL_ALGO_EMISSION, "emission"},     {TL_ALGO_SUBSETS, "subsets"},
      {TL_ALGO_PRIOR, "prior"},           {TL_ALGO_NEEDS_DATA, "needs-data"},
      {TL_ALGO_NEEDS_PRIOR, "needs-prior"}};
  PyObject *l = PyList_New(0);
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
    if (flags & names[i].bit) {
      PyObject *s = PyUnicode_FromString(names[i].name);
      PyList_Append(l, s);
      Py_DECREF(s);
    }
  return l;
}

static PyObject *py_algorithms(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const TlAlgorithmClass *const *k = tl_registry_algorithms(); *k; k++) {
    PyObject *d = Py_BuildValue("{s:s,s:s,s:N}", "name", tl_algorithm_name(*k), "summary",
                                tl_algorithm_summary(*k), "flags", flag_list(tl_algorithm_flags(*k)));
    PyList_Append(list, d);
    Py_DECREF(d);
  }
  return list;
}

static PyObject *py_priors(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const TlPriorClass *const *k = tl_registry_priors(); *k; k++) {
    PyObject *d = Py_BuildValue("{s:s,s:s}", "name", (*k)->name, "summary", (*k)->summary);
    PyList_Append(list, d);
    Py_DECREF(d);
  }
  return list;
}

static PyObject *py_operators(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
  for (const TlOperatorClass *const *k = tl_registry_operators(); *k; k++) {
    PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:O}", "name", (*k)->name, "modality",
                                (*k)->modality, "summary", (*k)->summary, "listmode",
                                ((*k)->flags & TL_OPERATOR_LISTMODE) ? Py_True : Py_False);
    PyList_Append(list, d);
    Py_DECREF(d);
  }
  return list;
}

static PyObject *py_projectors(PyObject *self, PyObject *unused) {
  static const struct { guint bit; const char *name; } names[] = {
      {TL_PROJECTOR_LISTMODE, "listmode"}, {TL_PROJECTOR_BINNED, "binned"},
      {TL_PROJECTOR_TOF, "tof"},           {TL_PROJECTOR_DUAL_HEAD, "dual-head"}};
  PyObject *list = PyList_New(0);
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++) {
    PyObject *flags = PyList_New(0);
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++)
      if ((*p)->flags & names[i].bit) {
        PyObject *s = PyUnicode_FromString(names[i].name);
        PyList_Append(flags, s);
        Py_DECREF(s);
      }
    PyObject *d = Py_BuildValue("{s:s,s:s,s:s,s:N}", "name", (*p)->name, "label", (*p)->label,
                                "summary", (*p)->summary, "flags", flags);
    PyList_Append(list, d);
    Py_DECREF(d);
  }
  return list;
}

static PyMethodDef module_functions[] = {
    {"set_interruptible", py_set_interruptible, METH_O,
     "set_interruptible(flag) -> previous: True (default) runs device work on a worker thread so "
     "Ctrl-C cancels it between submissions; False runs it on the calling thread (GIL released; "
     "saves the thread hand-off, ~0.1 ms a call; Ctrl-C then waits for the call to end)"},
    {"devices", py_devices, METH_NOARGS,
     "devices() -> list of dict: every Vulkan physical device (usable or not)"},
    {"projectors", py_projectors, METH_NOARGS,
     "projectors() -> list of dict (name, label, summary, flags: listmode, binned, tof, "
     "dual-head) of the PET projectors, from the registry (the first is the default)"},
    {"algorithms", py_algorithms, METH_NOARGS,
     "algorithms() -> list of dict (name, summary, flags) from the registry"},
    {"priors", py_priors, METH_NOARGS, "priors() -> list of dict (name, summary)"},
    {"operators", py_operators, METH_NOARGS,
     "operators() -> list of dict (name, modality, summary, listmode)"},
    {NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_tomolab",
                                       "Tomolab's C library (tomolab-compute) for Python.", -1,
                                       NULL};

static int add_functions(PyObject *m, PyMethodDef *defs) {
  return PyModule_AddFunctions(m, defs);
}

static PyObject *new_exception(PyObject *m, const char *name, PyObject *bases, const char *doc) {
  g_autofree char *full = g_strconcat("tomolab.", name, NULL);
  PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
  if (!e) return NULL;
  Py_INCREF(e);
  if (PyModule_AddObject(m, name, e) < 0) {
    Py_DECREF(e);
    return NULL;
  }
  return e;
}

PyMODINIT_FUNC PyInit__tomolab(void) {
  import_array();
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  GError *error = NULL;
  if (!(pool = g_thread_pool_new(pool_func, NULL, -1, FALSE, &error))) return tlpy_raise(error);
  tlpy_error = new_exception(m, "Error", PyExc_RuntimeError,
                             "A Tomolab library call failed; str() is its message; .domain and "
                             ".code are the GError's.");
  if (!tlpy_error) return NULL;
#define SUB(var, name, other, doc)                                                       \
  do {                                                                                   \
    PyObject *b = PyTuple_Pack(2, tlpy_error, other);                                    \
    var = new_exception(m, name, b, doc);                                                \
    Py_DECREF(b);                                                                        \
    if (!var) return NULL;                                                               \
  } while (0)
  SUB(tlpy_invalid_arg, "InvalidArgument", PyExc_ValueError, "A value outside the documented range.");
  SUB(tlpy_io_error, "FileError", PyExc_OSError, "A file could not be read or written.");
  SUB(tlpy_format_error, "FormatError", PyExc_ValueError, "A file's contents are not as its format says.");
  SUB(tlpy_parse_error, "ParseError", PyExc_ValueError, "An expression or text could not be parsed.");
  SUB(tlpy_no_device, "NoDeviceError", PyExc_RuntimeError, "No usable Vulkan device.");
  SUB(tlpy_unsupported, "UnsupportedError", PyExc_NotImplementedError,
      "An optional operation this object does not offer.");
  tlpy_cancelled = new_exception(m, "Cancelled", tlpy_error,
                                 "A long call stopped by its progress callable returning False.");
  if (!tlpy_cancelled) return NULL;
#undef SUB
  if (add_functions(m, module_functions) < 0 || tlpy_context_init(m) < 0 ||
      tlpy_image_init(m) < 0 || tlpy_operator_init(m) < 0 || tlpy_pet_init(m) < 0 ||
      tlpy_ct_init(m) < 0 || tlpy_solver_init(m) < 0 || tlpy_run_init(m) < 0 ||
      tlpy_dataset_init(m) < 0 || PyModule_AddFunctions(m, tlpy_race_functions) < 0)
    return NULL;
  if (tlpy_ctprep_init(m) < 0) return NULL;
  if (tlpy_sinogram_init(m) < 0) return NULL;
  if (PyModule_AddFunctions(m, tlpy_progress_functions) < 0) return NULL;
  return m;
}
