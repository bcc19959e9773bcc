/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab.Solver: one reconstruction (recon/tl-solver.h) of any registered algorithm on any
 * Operator, with step(), run(callback=...), the current image as numpy, the objective, the
 * RMSE against a truth and the per-kernel GPU profile. Ctrl-C during step/run cancels between
 * the stream's submissions; the image stays the last complete one. */
#include "tlpy.h"
#include "expr/tl-kernel-edit.h"

typedef struct {
  PyObject_HEAD
  TlPyOperator *op;
  TlSolver *sv;
  TlArray *data, *additive; /* owned; the solver borrows them */
  GCancellable *cancel;
  TlSolverProgress last;    /* of the last step (image and profile pointers not kept) */
  gboolean have_last;
} TlPySolver;

static void solver_dealloc(TlPySolver *self) {
  if (self->sv) tl_solver_free(self->sv);
  if (self->data) tl_array_free(self->data);
  if (self->additive) tl_array_free(self->additive);
  if (self->cancel) g_object_unref(self->cancel);
  Py_XDECREF(self->op);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static void on_progress(const TlSolverProgress *p, gpointer user) {
  TlPySolver *self = user;
  self->last = *p;
  self->last.image = NULL;
  self->last.profile = NULL;
  self->have_last = TRUE;
}

static TlArray *upload(TlPyOperator *op, PyObject *obj, const char *what) {
  guint64 n = tl_operator_n_data(op->op);
  PyArrayObject *a = tlpy_float_array(obj, (npy_intp)n, what);
  if (!a) return NULL;
  GError *error = NULL;
  TlArray *d = tl_array_new_float(op->context->ctx, MAX(n, 1), &error);
  if (!d || !tl_array_upload_range(d, 0, n, PyArray_DATA(a), &error)) {
    if (d) tl_array_free(d);
    Py_DECREF(a);
    tlpy_raise(error);
    return NULL;
  }
  Py_DECREF(a);
  return d;
}

typedef struct {
  TlPySolver *self;
  const char *algorithm;
  TlProblem pb;
  TlSolverOptions o;
  TlImage *truth, *start, *sens;
  guint64 budget;
} NewJob;

static gboolean do_new(gpointer d, GError **error) {
  NewJob *j = d;
  TlContext *ctx = j->self->op->context->ctx;
  if (!(j->self->sv = tl_solver_new(ctx, j->algorithm, &j->pb, &j->o, error))) return FALSE;
  return (!j->truth || tl_solver_set_truth(j->self->sv, j->truth, error)) &&
         (!j->start || tl_solver_set_image(j->self->sv, j->start, error));
}

static int solver_init(TlPySolver *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op", "algorithm", "data", "additive", "iterations", "relaxation",
                           "nonnegative", "objective", "prior", "beta", "gamma", "epsilon",
                           "filter", "filter_every", "uniform_sensitivity", "rmse_scaled",
                           "truth", "image", "submit_budget", "seed", "start_subset",
                           "beta_absolute", "progress", "sensitivity", NULL};
  PyObject *opo, *data = Py_None, *additive = Py_None, *truth = Py_None, *image = Py_None;
  PyObject *progress = Py_None, *saved, *sens = Py_None;
  NewJob j = {.self = self, .algorithm = "mlem"};
  tl_solver_options_init(&j.o);
  unsigned iterations = j.o.iterations, filter_every = 0;
  int nonneg = j.o.nonnegative, uniform = j.o.uniform_sensitivity, scaled = j.o.rmse_scaled;
  const char *objective = "iteration", *prior = NULL, *filter = NULL;
  double gamma = j.o.prior_params.gamma, epsilon = j.o.prior_params.epsilon;
  unsigned long long budget = 0;
  int absolute = 0;
  if (self->sv) {
    PyErr_SetString(PyExc_RuntimeError, "Solver already initialised");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|s$OOIfpszdddzIppOOKIIpOO:Solver", kwlist,
                                   &TlPyOperatorType, &opo, &j.algorithm, &data, &additive,
                                   &iterations, &j.o.relaxation, &nonneg, &objective, &prior,
                                   &j.o.beta, &gamma, &epsilon, &filter, &filter_every, &uniform,
                                   &scaled, &truth, &image, &budget, &j.o.seed,
                                   &j.o.start_subset, &absolute, &progress, &sens))
    return -1;
  if (progress != Py_None && !PyCallable_Check(progress)) {
    PyErr_SetString(PyExc_TypeError, "progress: expected a callable(fraction, message) or None");
    return -1;
  }
  static const char *const whens[] = {"never", "iteration", "subiteration", NULL};
  int when = tlpy_choice("objective", objective, whens);
  if (when < 0) return -1;
  j.o.objective = (TlObjectiveWhen)when;
  j.o.iterations = iterations;
  j.o.nonnegative = nonneg;
  j.o.uniform_sensitivity = uniform;
  j.o.rmse_scaled = scaled;
  j.o.beta_absolute = absolute;
  j.o.prior = prior;
  j.o.prior_params.gamma = gamma;
  j.o.prior_params.epsilon = epsilon;
  j.o.filter_every = filter_every;
  GError *error = NULL;
  if (filter && !tl_filter_parse(filter, &j.o.filter, &error)) return tlpy_raise_int(error);
  TlPyOperator *op = (TlPyOperator *)opo;
  self->op = (TlPyOperator *)Py_NewRef(opo);
  if (data != Py_None && !(self->data = upload(op, data, "data"))) return -1;
  if (additive != Py_None && !(self->additive = upload(op, additive, "additive"))) return -1;
  j.pb = (TlProblem){op->op, self->data, self->additive};
  const TlImageGrid *grid = tl_operator_grid(op->op);
  int r = -1;
  if (truth != Py_None && !(j.truth = tlpy_image_from(truth, grid, "truth"))) goto out;
  if (image != Py_None && !(j.start = tlpy_image_from(image, grid, "image"))) goto out;
  /* the sensitivity image given (STIR's sensitivity filename; the run key `sensitivity`) */
  if (sens != Py_None && !(j.sens = tlpy_image_from(sens, grid, "sensitivity"))) goto out;
  j.o.sensitivity = j.sens;
  self->cancel = g_cancellable_new();
  if (tlpy_operator_enter(op) < 0) goto out;
  /* the set-up's long step: the sensitivity images (progress, or the module's hook) */
  if (tlpy_progress_enter(progress, &saved) == 0) {
    r = tlpy_run_or_raise(do_new, &j, self->cancel);
    tlpy_progress_leave(saved);
  }
  tlpy_operator_leave(op);
  if (r == 0) {
    tl_solver_set_callback(self->sv, on_progress, self);
    tl_solver_set_cancellable(self->sv, self->cancel);
    if (budget) tl_solver_set_submit_budget(self->sv, budget);
  } else if (self->sv) {
    g_clear_pointer(&self->sv, tl_solver_free);
  }
out:
  if (j.truth) tl_image_free(j.truth);
  if (j.start) tl_image_free(j.start);
  if (j.sens) tl_image_free(j.sens);
  return r;
}

static int ok(TlPySolver *self) {
  if (self->sv) return 1;
  PyErr_SetString(PyExc_RuntimeError, "Solver not initialised");
  return 0;
}

static gboolean do_step(gpointer d, GError **error) { return tl_solver_step(d, error); }

/* one step, GIL released, Ctrl-C cancels; 0 or -1 with an exception */
static int step(TlPySolver *self) {
  if (tlpy_operator_enter(self->op) < 0) return -1;
  int r = tlpy_run_or_raise(do_step, self->sv, self->cancel);
  tlpy_operator_leave(self->op);
  return r;
}

static PyObject *progress_dict(TlPySolver *self) {
  if (!self->have_last) Py_RETURN_NONE;
  const TlSolverProgress *p = &self->last;
  return Py_BuildValue("{s:I,s:I,s:I,s:I,s:d,s:O,s:d,s:d,s:O}", "iteration", p->iteration,
                       "subset", p->subset, "n_subsets", p->n_subsets, "sub_iterations",
                       p->sub_iterations, "objective", p->objective, "objective_from_pass",
                       p->objective_from_pass ? Py_True : Py_False, "rmse", p->rmse, "seconds",
                       p->seconds, "filtered", p->filtered ? Py_True : Py_False);
}

static PyObject *solver_step(TlPySolver *self, PyObject *unused) {
  if (!ok(self) || step(self) < 0) return NULL;
  return progress_dict(self);
}

/* progress(fraction, message) after sub-iteration k of total; 1: go on, 0: stop, -1: raised */
static int run_report(PyObject *progress, guint k, guint total, double seconds) {
  g_autofree char *msg = g_strdup_printf("reconstruction: sub-iteration %u of %u (%.2f s)", k,
                                         total, seconds);
  PyObject *r = PyObject_CallFunction(progress, "ds", total ? (double)k / total : 1.0, msg);
  if (!r) return -1;
  int go = r != Py_False;
  Py_DECREF(r);
  return go;
}

static PyObject *solver_run(TlPySolver *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"callback", "progress", NULL};
  PyObject *cb = Py_None, *progress = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$O:run", kwlist, &cb, &progress) || !ok(self))
    return NULL;
  if (cb != Py_None && !PyCallable_Check(cb)) {
    PyErr_SetString(PyExc_TypeError, "callback: expected a callable or None");
    return NULL;
  }
  if (progress != Py_None && !PyCallable_Check(progress)) {
    PyErr_SetString(PyExc_TypeError, "progress: expected a callable(fraction, message) or None");
    return NULL;
  }
  /* the run reports its sub-iterations itself (to progress, else the module's hook); the
   * steps inside are silenced so the fractions only rise */
  PyObject *rep = progress != Py_None ? progress : tlpy_progress_callable(), *saved;
  Py_XINCREF(rep);
  if (tlpy_progress_enter(rep ? Py_False : Py_None, &saved) < 0) return NULL;
  const TlSolverOptions *o = tl_solver_options(self->sv);
  guint total = o->iterations * tl_operator_n_subsets(self->op->op);
  guint first = tl_solver_sub_iterations(self->sv);
  gint64 t0 = g_get_monotonic_time();
  PyObject *res = NULL;
  /* tl_solver_run's loop, with the Python callbacks between steps (False stops the run) */
  while (tl_solver_sub_iterations(self->sv) < total) {
    if (step(self) < 0) goto done;
    if (cb != Py_None) {
      PyObject *p = progress_dict(self);
      if (!p) goto done;
      PyObject *r = PyObject_CallOneArg(cb, p);
      Py_DECREF(p);
      if (!r) goto done;
      int stop = r == Py_False;
      Py_DECREF(r);
      if (stop) break;
    }
    if (rep) {
      guint k = tl_solver_sub_iterations(self->sv);
      int go = run_report(rep, k - first, total - first,
                          (g_get_monotonic_time() - t0) * 1e-6);
      if (go < 0) goto done;
      if (!go) break;
    }
  }
  res = PyLong_FromUnsignedLong(tl_solver_sub_iterations(self->sv));
done:
  tlpy_progress_leave(saved);
  Py_XDECREF(rep);
  return res;
}

typedef struct {
  TlSolver *sv;
  TlImage *im;
  double v;
} GetJob;
static gboolean do_image(gpointer d, GError **error) {
  GetJob *j = d;
  return (j->im = tl_solver_image(j->sv, error)) != NULL;
}
static gboolean do_objective(gpointer d, GError **error) {
  GetJob *j = d;
  return tl_solver_objective(j->sv, &j->v, error);
}

static PyObject *solver_image(TlPySolver *self, void *c) {
  if (!ok(self) || tlpy_operator_enter(self->op) < 0) return NULL;
  GetJob j = {self->sv};
  int r = tlpy_run_or_raise(do_image, &j, NULL);
  tlpy_operator_leave(self->op);
  if (r < 0) return NULL;
  PyArrayObject *a = tlpy_image_array_new(&j.im->grid);
  if (a) memcpy(PyArray_DATA(a), j.im->data, tl_image_grid_n_voxels(&j.im->grid) * sizeof(float));
  tl_image_free(j.im);
  return (PyObject *)a;
}

static PyObject *solver_objective(TlPySolver *self, PyObject *unused) {
  if (!ok(self) || tlpy_operator_enter(self->op) < 0) return NULL;
  GetJob j = {self->sv};
  int r = tlpy_run_or_raise(do_objective, &j, self->cancel);
  tlpy_operator_leave(self->op);
  return r < 0 ? NULL : PyFloat_FromDouble(j.v);
}

static PyObject *solver_set_image(TlPySolver *self, PyObject *arg) {
  if (!ok(self)) return NULL;
  g_autoptr(TlImage) im = tlpy_image_from(arg, tl_solver_grid(self->sv), "image");
  if (!im) return NULL;
  GError *error = NULL;
  if (!tl_solver_set_image(self->sv, im, &error)) return tlpy_raise(error);
  self->have_last = FALSE;
  Py_RETURN_NONE;
}

static PyObject *solver_set_prior(TlPySolver *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "beta", "gamma", "epsilon", NULL};
  const char *name;
  double beta = 0;
  TlPriorParams p;
  tl_prior_params_init(&p);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "z|ddd:set_prior", kwlist, &name, &beta, &p.gamma,
                                   &p.epsilon) ||
      !ok(self))
    return NULL;
  GError *error = NULL;
  if (!tl_solver_set_prior(self->sv, name, beta, &p, &error)) return tlpy_raise(error);
  Py_RETURN_NONE;
}

static PyObject *solver_profile(TlPySolver *self, void *c) {
  if (!ok(self)) return NULL;
  const TlProfile *p = tl_solver_profile(self->sv);
  PyObject *d = PyDict_New();
  for (guint i = 0; p && i < tl_profile_n_entries(p); i++) {
    const TlProfileEntry *e = tl_profile_entry(p, i);
    PyObject *v = Py_BuildValue("{s:I,s:d}", "calls", e->calls, "gpu_ms", e->gpu_ms);
    PyDict_SetItemString(d, e->label, v);
    Py_DECREF(v);
  }
  return d;
}

static PyObject *solver_sensitivity(TlPySolver *self, void *c) {
  if (!ok(self)) return NULL;
  const TlArray *s = tl_solver_sensitivity(self->sv, G_MAXUINT);
  if (!s) Py_RETURN_NONE;
  PyArrayObject *a = tlpy_image_array_new(tl_solver_grid(self->sv));
  GError *error = NULL;
  if (a && !tl_array_download(s, PyArray_DATA(a), &error)) {
    Py_DECREF(a);
    return tlpy_raise(error);
  }
  return (PyObject *)a;
}

static PyObject *solver_sub_iterations(TlPySolver *self, void *c) {
  if (!ok(self)) return NULL;
  return PyLong_FromUnsignedLong(tl_solver_sub_iterations(self->sv));
}
static PyObject *solver_progress(TlPySolver *self, void *c) { return progress_dict(self); }
static PyObject *solver_algorithm(TlPySolver *self, void *c) {
  if (!ok(self)) return NULL;
  return PyUnicode_FromString(tl_algorithm_name(tl_solver_algorithm(self->sv)));
}
static PyObject *solver_rmse(TlPySolver *self, void *c) {
  return PyFloat_FromDouble(self->have_last ? self->last.rmse : NAN);
}
static PyObject *solver_op(TlPySolver *self, void *c) { return Py_NewRef((PyObject *)self->op); }

/* An edited built-in kernel for this run: refused when the run never calls it (the solver's
 * configured path, tl_solver_check_kernel), else compiled and installed in the operator's
 * context like Context.set_kernel. */
typedef struct {
  TlPySolver *self;
  const char *name, *source;
} SetKernelJob;

static gboolean do_set_kernel(gpointer d, GError **error) {
  SetKernelJob *j = d;
  return tl_solver_check_kernel(j->self->sv, j->name, error) &&
         tl_kernel_compile(j->self->op->context->ctx, j->name, j->source, NULL, error);
}

static PyObject *solver_set_kernel(TlPySolver *self, PyObject *args) {
  SetKernelJob j = {self};
  if (!PyArg_ParseTuple(args, "ss:set_kernel", &j.name, &j.source) || !ok(self)) return NULL;
  if (tlpy_operator_enter(self->op) < 0) return NULL;
  int r = tlpy_run_or_raise(do_set_kernel, &j, NULL);
  tlpy_operator_leave(self->op);
  if (r < 0) return NULL;
  Py_RETURN_NONE;
}

/* The objective calls (tlpy-objective.c). */
static PyObject *solver_objective_at(TlPySolver *self, PyObject *x) {
  return tlpy_solver_objective_at(self->sv, self->op, x);
}
static PyObject *solver_gradient(TlPySolver *self, PyObject *args, PyObject *kw) {
  return tlpy_solver_gradient(self->sv, self->op, args, kw);
}
static PyObject *solver_prior_gradient(TlPySolver *self, PyObject *x) {
  return tlpy_solver_prior_gradient(self->sv, self->op, x);
}
static PyObject *solver_prior_hessian_diag(TlPySolver *self, PyObject *x) {
  return tlpy_solver_prior_hessian_diag(self->sv, self->op, x);
}
static PyObject *solver_compute_kappa(TlPySolver *self, PyObject *x) {
  return tlpy_solver_compute_kappa(self->sv, self->op, x);
}
static PyObject *solver_set_kappa(TlPySolver *self, PyObject *k) {
  if (!ok(self)) return NULL;
  return tlpy_solver_set_kappa(self->sv, k);
}

static PyMethodDef solver_methods[] = {
    {"objective_at", (PyCFunction)solver_objective_at, METH_O,
     "objective_at(x) -> (Phi, log-likelihood, R): the penalised objective Phi = L - beta R "
     "at image x (emission)"},
    {"gradient", (PyCFunction)(void (*)(void))solver_gradient, METH_VARARGS | METH_KEYWORDS,
     "gradient(x, subset=None, *, data_only=False) -> dPhi/dx at x (all data, or one subset's "
     "share with beta / S); data_only: the log-likelihood's gradient"},
    {"prior_gradient", (PyCFunction)solver_prior_gradient, METH_O,
     "prior_gradient(x) -> dR/dx (without beta; R the normalised prior, prior_scale times the "
     "prior's own)"},
    {"prior_hessian_diag", (PyCFunction)solver_prior_hessian_diag, METH_O,
     "prior_hessian_diag(x) -> d2R/dx_j2 (quadratic, rdp)"},
    {"compute_kappa", (PyCFunction)solver_compute_kappa, METH_O,
     "compute_kappa(x) -> PETRIC's kappa at image x: sqrt of minus the log-likelihood "
     "Hessian's row sums"},
    {"set_kappa", (PyCFunction)solver_set_kappa, METH_O,
     "set_kappa(k): per-voxel prior weights (None: none)"},
    {"set_kernel", (PyCFunction)solver_set_kernel, METH_VARARGS,
     "set_kernel(name, source): the GLSL `source` replaces built-in kernel `name` from the next "
     "step on, as Context.set_kernel does; refused (ValueError naming the kernels the run "
     "calls) when this run's steps never call `name` (Context.revert_kernel undoes it)"},
    {"step", (PyCFunction)solver_step, METH_NOARGS,
     "step() -> progress dict: one sub-iteration (the next subset)"},
    {"run", (PyCFunction)(void (*)(void))solver_run, METH_VARARGS | METH_KEYWORDS,
     "run(callback=None, *, progress=None) -> sub-iterations done: steps until `iterations` "
     "full iterations; callback(progress dict) after each step, progress(fraction, message) "
     "too (else the module's hook); either returning False stops"},
    {"objective", (PyCFunction)solver_objective, METH_NOARGS,
     "objective() -> the objective of the current image (may cost a projection)"},
    {"set_image", (PyCFunction)solver_set_image, METH_O,
     "set_image(x): the starting image (resets the counters)"},
    {"set_prior", (PyCFunction)(void (*)(void))solver_set_prior, METH_VARARGS | METH_KEYWORDS,
     "set_prior(name, beta=0, gamma=2, epsilon=1e-3): used from the next step on"},
    {NULL}};
static PyObject *solver_prior_scale(TlPySolver *self, void *closure) {
  (void)closure;
  if (!self->sv) {
    PyErr_SetString(PyExc_RuntimeError, "Solver not initialised");
    return NULL;
  }
  return PyFloat_FromDouble(tl_solver_prior_scale(self->sv));
}

static PyGetSetDef solver_getset[] = {
    {"image", (getter)solver_image, NULL, "the current image (nz, ny, nx), a copy"},
    {"profile", (getter)solver_profile, NULL, "{kernel label: {calls, gpu_ms}} since the start"},
    {"sensitivity", (getter)solver_sensitivity, NULL, "emission: the sensitivity image, or None"},
    {"sub_iterations", (getter)solver_sub_iterations, NULL, NULL},
    {"progress", (getter)solver_progress, NULL, "the last step's progress dict, or None"},
    {"rmse", (getter)solver_rmse, NULL, "the last step's RMSE against the truth (nan without)"},
    {"algorithm", (getter)solver_algorithm, NULL, NULL},
    {"op", (getter)solver_op, NULL, "the Operator"},
    {"prior_scale", (getter)solver_prior_scale, NULL,
     "the factor beta is multiplied by (docs/recon.md: the prior's strength is relative)"},
    {NULL}};

static PyTypeObject TlPySolverType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tomolab.Solver",
    .tp_basicsize = sizeof(TlPySolver),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Solver(op, algorithm='mlem', *, data=None, additive=None, iterations=10, "
              "relaxation=1, nonnegative=False, objective='iteration', prior=None, beta=0, "
              "gamma=2, epsilon=1e-3, filter=None, filter_every=0, uniform_sensitivity=False, "
              "rmse_scaled=True, truth=None, image=None, submit_budget=0, seed=1, beta_absolute=False, "
              "progress=None, sensitivity=None): any algorithm of tomolab.algorithms() on op "
              "(data None: the operator's own counts); progress: callable(fraction, message) for "
              "the set-up's sensitivity images (tomolab.set_progress); sensitivity: the image "
              "to use instead of computing it (STIR's sensitivity filename).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)solver_init,
    .tp_dealloc = (destructor)solver_dealloc,
    .tp_methods = solver_methods,
    .tp_getset = solver_getset,
};

int tlpy_solver_init(PyObject *m) {
  if (PyType_Ready(&TlPySolverType) < 0) return -1;
  Py_INCREF(&TlPySolverType);
  return PyModule_AddObject(m, "Solver", (PyObject *)&TlPySolverType);
}
