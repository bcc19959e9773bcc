/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Progress of long Python calls (docs/python.md "Progress"; issue 28 item 3): the library's
 * long steps report to the calling thread's TlProgress (core/tl-progress.h), and the blocking
 * runner (tlpy-module.c) pushes one on its worker thread whenever the call has a Python
 * callable to report to: the call's own progress= argument, else the module's hook
 * (set_progress). Reports queue up on the worker (or the progress's heartbeat) thread and the
 * waiting caller delivers them with the GIL held, as callable(fraction, message); a callable
 * that returns False (or raises) cancels the work between submissions. */
#include "tlpy.h"

static PyObject *hook;         /* the module's hook (strong), NULL: none */
static double interval = 0.25; /* tl_progress_set_interval of every reporter */
/* The current call's setting on this thread (strong): NULL keeps the hook, Py_False silences
 * it, else the call's callable. */
static _Thread_local PyObject *call_progress;

int tlpy_progress_enter(PyObject *progress, PyObject **saved) {
  if (progress && progress != Py_None && progress != Py_False && !PyCallable_Check(progress)) {
    PyErr_SetString(PyExc_TypeError, "progress: expected a callable(fraction, message) or None");
    return -1;
  }
  *saved = call_progress;
  call_progress = progress && progress != Py_None ? Py_NewRef(progress) : Py_XNewRef(*saved);
  return 0;
}

void tlpy_progress_leave(PyObject *saved) {
  Py_XDECREF(call_progress);
  call_progress = saved;
}

PyObject *tlpy_progress_callable(void) {
  if (call_progress == Py_False) return NULL;
  return call_progress ? call_progress : hook;
}

typedef struct {
  double fraction; /* < 0: unknown */
  char *message;
} Report;

struct _TlPyReporter {
  PyObject *callable; /* strong */
  TlProgress *progress;
  GCancellable *cancel; /* the call's, or the reporter's own (strong either way) */
  GMutex m;
  GArray *queue; /* of Report */
};

/* On the worker or heartbeat thread, one call at a time: queue it (the GIL is not ours). */
static void on_report(const TlProgressReport *rep, gpointer data) {
  TlPyReporter *r = data;
  g_autofree char *text = tl_progress_format(rep);
  Report q = {.fraction = rep->fraction < 0 ? -1 : CLAMP(rep->fraction, 0, 1),
              .message = g_strdup_printf("%s: %s", rep->what, text)};
  g_mutex_lock(&r->m);
  g_array_append_val(r->queue, q);
  g_mutex_unlock(&r->m);
}

static void report_clear(gpointer p) { g_free(((Report *)p)->message); }

TlPyReporter *tlpy_reporter_new(GCancellable *cancel) {
  PyObject *cb = tlpy_progress_callable();
  if (!cb) return NULL;
  TlPyReporter *r = g_new0(TlPyReporter, 1);
  r->callable = Py_NewRef(cb);
  r->cancel = cancel ? g_object_ref(cancel) : g_cancellable_new();
  g_mutex_init(&r->m);
  r->queue = g_array_new(FALSE, FALSE, sizeof(Report));
  g_array_set_clear_func(r->queue, report_clear);
  r->progress = tl_progress_new(on_report, r, r->cancel);
  tl_progress_set_interval(r->progress, interval);
  return r;
}

TlProgress *tlpy_reporter_progress(TlPyReporter *r) { return r ? r->progress : NULL; }
GCancellable *tlpy_reporter_cancellable(TlPyReporter *r) { return r ? r->cancel : NULL; }

int tlpy_reporter_deliver(TlPyReporter *r) {
  if (!r) return 0;
  g_mutex_lock(&r->m);
  GArray *q = r->queue;
  r->queue = g_array_new(FALSE, FALSE, sizeof(Report));
  g_array_set_clear_func(r->queue, report_clear);
  g_mutex_unlock(&r->m);
  int res = 0;
  for (guint i = 0; i < q->len && res == 0; i++) {
    const Report *p = &g_array_index(q, Report, i);
    PyObject *f = p->fraction < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(p->fraction);
    PyObject *out = f ? PyObject_CallFunction(r->callable, "Os", f, p->message) : NULL;
    Py_XDECREF(f);
    if (!out)
      res = -1;
    else if (out == Py_False)
      res = 1;
    Py_XDECREF(out);
  }
  g_array_unref(q);
  return res;
}

void tlpy_reporter_free(TlPyReporter *r) {
  if (!r) return;
  tl_progress_free(r->progress); /* joins its heartbeat: no report comes after */
  g_array_unref(r->queue);
  g_mutex_clear(&r->m);
  g_object_unref(r->cancel);
  Py_DECREF(r->callable);
  g_free(r);
}

/* set_progress(callable=None, *, interval=None) -> the previous hook */
static PyObject *py_set_progress(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"callable", "interval", NULL};
  PyObject *cb = Py_None, *iv = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$O:set_progress", kwlist, &cb, &iv)) return NULL;
  if (cb != Py_None && !PyCallable_Check(cb)) {
    PyErr_SetString(PyExc_TypeError, "set_progress: expected a callable(fraction, message) "
                    "or None");
    return NULL;
  }
  if (iv != Py_None) {
    double v = PyFloat_AsDouble(iv);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (!(v >= 0) || v > 3600) {
      PyErr_Format(PyExc_ValueError, "set_progress: interval %g s; expected 0 .. 3600", v);
      return NULL;
    }
    interval = v;
  }
  PyObject *old = hook ? hook : Py_NewRef(Py_None);
  hook = cb == Py_None ? NULL : Py_NewRef(cb);
  return old;
}

PyMethodDef tlpy_progress_functions[] = {
    {"set_progress", (PyCFunction)(void (*)(void))py_set_progress, METH_VARARGS | METH_KEYWORDS,
     "set_progress(callable=None, *, interval=None) -> the previous hook: every long call "
     "without its own progress= reports to callable(fraction, message) (fraction 0..1 of the "
     "step, None while unknown; message 'step: 37 % · 12 s · about 20 s left'); returning "
     "False cancels the call (tomolab.Cancelled). interval: seconds between reports (0.25)"},
    {NULL}};
