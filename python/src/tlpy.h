/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The _tomolab extension module's shared declarations. The module is a thin layer over the
 * tomolab-compute C library: each Python call converts its arguments, runs one library call
 * (or a short fixed sequence of them) with the GIL released, and converts the result. No
 * algorithm lives here. Files: tlpy-module.c (module, errors, devices, registry, the blocking
 * runner), tlpy-context.c (Context, Array, expressions), tlpy-image.c (grids, images, phantoms),
 * tlpy-pet.c (scanners, list mode, simulation, PET operators), tlpy-operator.c (the linear
 * operator type), tlpy-ct.c (CT geometry, data, operator, FDK), tlpy-solver.c (Solver),
 * tlpy-algebra.c (the operator's algebra slots, handed to tomolab/linop.py), tlpy-lines.c
 * (operators from line end points and CSR arrays, PET records), tlpy-progress.c (progress=
 * and the module's hook: the library's TlProgress reports delivered to Python). */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tlpy_ARRAY_API
#ifndef TLPY_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <gio/gio.h>
#include "tomolab-compute.h"
#include "tl-registry.h"
#include "image/tl-image.h"
#include "image/tl-phantom.h"
#include "image/tl-filter.h"
#include "pet/tl-pet-operator.h"
#include "pet/simulate/tl-simulate.h"
#include "ct/tl-ct-operator.h"
#include "ct/tl-ct-simulate.h"
#include "ct/tl-ct-fdk.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-csr-operator.h"

/* ---- errors (tlpy-module.c) ---- */
/* Raises the Python exception of a GError (tomolab.Error or a subclass, carrying the message,
 * domain and code) and frees it; returns NULL for `return tlpy_raise(error);`. */
PyObject *tlpy_raise(GError *error);
int tlpy_raise_int(GError *error); /* the same, returns -1 */

/* ---- blocking work (tlpy-module.c) ----
 * Runs work(data) on a pool thread with the GIL released while the calling thread waits and
 * checks for signals every 20 ms; on KeyboardInterrupt (or any exception a signal handler
 * raises) it cancels `cancel`, waits for the work to stop between submissions, resets
 * `cancel` and returns -1 with the exception set. 1: done; 0: *error set by the work. */
typedef gboolean (*TlPyWork)(gpointer data, GError **error);
int tlpy_run(TlPyWork work, gpointer data, GCancellable *cancel, GError **error);
/* tlpy_run + raising: returns 0 on success, -1 with a Python exception. */
int tlpy_run_or_raise(TlPyWork work, gpointer data, GCancellable *cancel);

/* ---- context (tlpy-context.c) ---- */
typedef struct {
  PyObject_HEAD
  TlContext *ctx;
} TlPyContext;
extern PyTypeObject TlPyContextType;
/* obj: a Context or None (the module's default context, made on first use). New reference. */
TlPyContext *tlpy_context_get(PyObject *obj);

typedef struct {
  PyObject_HEAD
  TlPyContext *context;
  TlArray *array;
} TlPyArray;
extern PyTypeObject TlPyArrayType;
/* Wraps (takes) a float array of `context`. */
PyObject *tlpy_array_wrap(TlPyContext *context, TlArray *array);

/* ---- grids and images (tlpy-image.c) ---- */
/* A grid from an object with dims, voxel_mm, origin_mm (tomolab.Grid); 0 + exception on error. */
int tlpy_grid_from(PyObject *obj, TlImageGrid *out);
/* The same without TlImage's 2^28-voxel bound: FDK / FBP's grids, bounded by memory. */
int tlpy_grid_from_any(PyObject *obj, TlImageGrid *out);
PyObject *tlpy_grid_to(const TlImageGrid *g); /* a tomolab.Grid */
/* A float32 C-contiguous array of exactly n elements from any array-like (new reference;
 * NULL + ValueError naming `what` and both counts otherwise). */
PyArrayObject *tlpy_float_array(PyObject *obj, npy_intp n, const char *what);
/* A new float32 array of shape (nz, ny, nx) of the grid. */
PyArrayObject *tlpy_image_array_new(const TlImageGrid *g);
/* A TlImage from an object with .data and .grid (tomolab.Image), or from an array-like on
 * `grid` (grid may be NULL when obj is an Image). Caller frees. */
TlImage *tlpy_image_from(PyObject *obj, const TlImageGrid *grid, const char *what);
PyObject *tlpy_image_to(const TlImage *im); /* a tomolab.Image (data copied) */
int tlpy_image_init(PyObject *m);

/* ---- operator (tlpy-operator.c) ---- */
typedef struct {
  PyObject_HEAD
  TlPyContext *context;
  TlOperator *op;
  TlStream *stream;
  GCancellable *cancel;
  TlArray *xbuf, *ybuf; /* host <-> device staging of the numpy calls, made on first use */
  gboolean busy;        /* a call is running (the GIL is released): a second one is refused */
  PyObject *keep;       /* objects the operator borrows from (may be NULL) */
  gint64 last_us;       /* wall time of the last forward/adjoint inside the library */
} TlPyOperator;
extern PyTypeObject TlPyOperatorType;
PyObject *tlpy_operator_wrap(TlPyContext *context, TlOperator *op, GError **error);
/* Marks op busy; -1 + RuntimeError if it already is. */
int tlpy_operator_enter(TlPyOperator *o);
void tlpy_operator_leave(TlPyOperator *o);

/* ---- objective calls of Solver (tlpy-objective.c); x: an array-like image ---- */
PyObject *tlpy_solver_objective_at(TlSolver *sv, TlPyOperator *op, PyObject *x);
PyObject *tlpy_solver_gradient(TlSolver *sv, TlPyOperator *op, PyObject *args, PyObject *kw);
PyObject *tlpy_solver_prior_gradient(TlSolver *sv, TlPyOperator *op, PyObject *x);
PyObject *tlpy_solver_prior_hessian_diag(TlSolver *sv, TlPyOperator *op, PyObject *x);
PyObject *tlpy_solver_compute_kappa(TlSolver *sv, TlPyOperator *op, PyObject *x);
PyObject *tlpy_solver_set_kappa(TlSolver *sv, PyObject *kappa);

/* ---- wrapping (takes the pointer; frees it on failure) ---- */
PyObject *tlpy_listmode_wrap(TlListmode *lm); /* tlpy-pet.c: a tomolab.Listmode */
PyObject *tlpy_sinogram_dict(const TlSinogram *s); /* tlpy-sinogram.c: tomolab.Sinogram's fields */
PyObject *tlpy_ct_data_wrap(TlCtData *d);     /* tlpy-ct.c: a tomolab.CtData */
/* ---- module parts: each adds its types and functions ---- */
int tlpy_context_init(PyObject *m);
int tlpy_operator_init(PyObject *m);
int tlpy_pet_init(PyObject *m);
int tlpy_ct_init(PyObject *m);
int tlpy_solver_init(PyObject *m);
/* tomolab.Run's C half (tlpy-run.c). */
int tlpy_run_init(PyObject *m);
int tlpy_dataset_init(PyObject *m); /* tlpy-dataset.c: _open, __version__ */
int tlpy_ctprep_init(PyObject *m);  /* tlpy-ctprep.c: CT preprocessing */
int tlpy_sinogram_init(PyObject *m); /* tlpy-sinogram.c: PET sinograms */
extern PyMethodDef tlpy_context_functions[], tlpy_image_functions[], tlpy_pet_functions[],
    tlpy_ct_functions[];

/* Parses an enum name from a NULL-terminated list; -1 + ValueError listing them. */
int tlpy_choice(const char *what, const char *value, const char *const *names);
PyObject *tlpy_device_dict(const TlDeviceInfo *d);

/* ---- operator algebra (tlpy-algebra.c) and operators from arrays (tlpy-lines.c) ---- */
void tlpy_algebra_prepare(PyTypeObject *t); /* before PyType_Ready: number slots, call */
int tlpy_algebra_init(PyTypeObject *t);     /* after: T, H, data_shape, aslinearoperator... */
extern PyMethodDef tlpy_lines_functions[];
/* tomolab.race's C half (tlpy-race.c). */
extern PyMethodDef tlpy_race_functions[];

/* ---- progress of long calls (tlpy-progress.c) ----
 * A call's progress= argument: tlpy_progress_enter(progress, &saved) ... tlpy_progress_leave
 * (saved) around its tlpy_run calls; progress NULL or None keeps the module's hook, Py_False
 * silences it (a call that reports itself); -1 + TypeError for a non-callable. */
int tlpy_progress_enter(PyObject *progress, PyObject **saved);
void tlpy_progress_leave(PyObject *saved);
/* The callable this thread's call reports to (borrowed), NULL: none. */
PyObject *tlpy_progress_callable(void);
/* The runner's side (GIL held except where said): a reporter of the current callable, NULL
 * when there is none; its TlProgress is pushed on the thread doing the work, reports are
 * queued there and delivered by tlpy_reporter_deliver: 0 go on, 1 the callable returned False,
 * -1 it raised (exception set). The cancellable: `cancel`, or the reporter's own. */
typedef struct _TlPyReporter TlPyReporter;
TlPyReporter *tlpy_reporter_new(GCancellable *cancel);
TlProgress *tlpy_reporter_progress(TlPyReporter *r);
GCancellable *tlpy_reporter_cancellable(TlPyReporter *r);
int tlpy_reporter_deliver(TlPyReporter *r);
void tlpy_reporter_free(TlPyReporter *r);
extern PyMethodDef tlpy_progress_functions[];
/* tomolab.Cancelled: a call stopped by its progress callable (or a G_IO_ERROR_CANCELLED). */
PyObject *tlpy_cancelled_type(void);
