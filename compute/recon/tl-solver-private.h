/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to recon/: the solver state every algorithm file sees, and TlAlgorithmClass. An
 * algorithm is one file defining a TlAlgorithmClass (+ one line in tl-recon-registry.c); its
 * step writes the new image into sv->next (never sv->x), so a cancel keeps the last image. */
#pragma once
#include "tl-solver.h"
#include "expr/tl-expr.h"

struct _TlAlgorithmClass {
  const char *name;
  const char *summary;
  guint flags; /* TlAlgorithmFlags */
  /* After the common set-up (data, subsets, sensitivity for emission, start image). */
  gboolean (*init)(TlSolver *sv, GError **error);
  /* One sub-iteration on `subset`: the new image into sv->next. *objective may be set when
   * the step gets the objective of the image it started from, or of the new one, for free
   * (set *objective_is_new accordingly); leave NAN otherwise. */
  gboolean (*step)(TlSolver *sv, guint subset, double *objective, gboolean *objective_is_new,
                   GError **error);
  /* After a cancel or a new start image: forget state tied to the old image. */
  void (*reset)(TlSolver *sv);
  void (*finalize)(TlSolver *sv);
};

struct _TlSolver {
  TlContext *ctx;
  const TlAlgorithmClass *klass;
  TlSolverOptions opt;
  char *prior_name;
  TlOperator *op;
  TlProblem pb;
  guint n_subsets;
  guint64 n_voxels;
  TlArray *y;          /* measured data (pb.data, or the operator's counts made here) */
  TlArray *y_owned;    /* the latter */
  TlArray **y_sub;     /* views of y per subset */
  TlArray **a_sub;     /* views of pb.additive per subset (NULL entries without) */
  TlArray *q;          /* scratch data vector of max subset length */
  TlArray **q_sub;     /* views of q with each subset's length */
  TlArray *x, *next, *vol; /* image, next image, an image-sized scratch */
  TlArray **sens;      /* emission: per subset column sums (or one shared), else NULL */
  TlArray *sens_all;   /* emission: the column sums of every subset together */
  TlArray *truth;
  double truth_sum;
  TlArray *filter_tmp;
  TlPrior *prior;
  TlArray *grad;       /* prior gradient */
  TlArray *kappa;      /* the prior's per-voxel weights (tl_solver_set_kappa), or NULL */
  double sens_mean;    /* emission: the mean of S over the voxels where S > 0 (0: none) */
  double start_value;  /* emission: the start image's constant (data total / sum S) */
  TlStream *stream;
  TlProfile *profile;
  GCancellable *cancellable;
  TlExprArgs *args;
  TlSolverCallback cb;
  gpointer cb_data;
  guint sub_iterations;
  gboolean want_objective; /* this step's objective will be reported */
  gboolean fp_valid;   /* one subset: q holds D A x of the current image (from the objective) */
  TlArray *partials;   /* the fused EM pass's log-likelihood partial sums */
  gboolean pass_pending; /* partials of this step's pass still to be read */
  double *pass_terms;  /* per subset: the data term of its latest EM pass (NAN: none yet) */
  gpointer state;      /* the algorithm's own */
  double passes;       /* data passes so far (tl_solver_data_passes) */
  double step_delta;   /* delta of the last tl_solver_precond (tl_solver_floored_step) */
  gboolean auto_epsilon; /* rdp's epsilon still to be set from an OSEM image */
};

/* tl_solver_new with a class not (yet) in the registry: a program linking the internal
 * library tries an algorithm of its own (tests/doc-example-driver.c runs the Landweber example
 * of docs/architecture.md). */
TlSolver *tl_solver_new_class(TlContext *ctx, const TlAlgorithmClass *klass,
                              const TlProblem *problem, const TlSolverOptions *opt,
                              GError **error);
/* beta as the algorithms use it: opt.beta * tl_solver_prior_scale (tl-solver.h). */
double tl_solver_beta(const TlSolver *sv);
/* Records `expr` on the solver's stream with sv->args. */
gboolean tl_solver_expr(TlSolver *sv, const char *expr, GError **error);
/* Emission: the sensitivity image for subset s (shared when all subsets use one). */
TlArray *tl_solver_sens(TlSolver *sv, guint subset);
/* Whether the emission step can use the operator's fused EM pass (its own counts, no
 * additive term, D inside its kernels). */
gboolean tl_solver_em_fast(const TlSolver *sv);
/* Makes sv->y / sv->y_sub (the problem's data, or the operator's counts). */
gboolean tl_solver_need_data(TlSolver *sv, GError **error);
/* The (penalised) objective of sv->x; data_term: the emission data term if already known. */
gboolean tl_solver_objective_with(TlSolver *sv, const double *data_term, double *objective,
                                  GError **error);
/* The objective of image x and, when not NULL, its parts: the log-likelihood and R(x) (the
 * penalty is beta R). Another image than sv->x: emission only. */
gboolean tl_solver_objective_parts(TlSolver *sv, const TlArray *x, const double *data_term,
                                   double *objective, double *likelihood, double *prior,
                                   GError **error);
/* sv->y / y_sub and the scratch data vector sv->q / q_sub. */
gboolean tl_solver_need_scratch(TlSolver *sv, GError **error);
/* Emission, shared by mlem / osem / osl / bsrem: records sv->vol = A_k^T D_k (y_k / ybar_k)
 * over the data with ybar = D_k A_k x + a_k > 0 (the fused EM pass when possible), and, when
 * objectives are wanted, the pass's own log-likelihood data term. */
gboolean tl_solver_em_correction(TlSolver *sv, guint subset, GError **error);
/* After the step's update is recorded: keeps the pass's data term as its subset's latest and
 * sets *objective to the penalised log-likelihood from the passes: the latest data term of
 * every subset (each at the image its pass started from; scaled by S / known while some
 * subset has none yet) minus the expected total and beta R at the image this step started
 * from. Exact for one subset (MLEM: the log-likelihood of the image before this step); for
 * OSEM an estimate that costs no projection. */
void tl_solver_forget_passes(TlSolver *sv);
gboolean tl_solver_em_objective(TlSolver *sv, guint subset, double *objective, GError **error);
/* Distributed runs (TlSolverOptions.reducer): sums `a` / v[0..n) over the participants;
 * without a reducer they do nothing. reduce_image finishes the stream first. */
gboolean tl_solver_reduce_image(TlSolver *sv, TlArray *a, GError **error);
gboolean tl_solver_reduce_scalars(TlSolver *sv, double *v, guint n, GError **error);
/* The prior's gradient of sv->x into sv->grad (zero without a prior). */
gboolean tl_solver_prior_gradient(TlSolver *sv, GError **error);
/* The diagonal preconditioner of the gradient algorithms at x into P (tl-objective.c):
 * 1 / (s / max(x, delta) + beta H_R(x)), 0 where s = 0; x / s without a prior. Uses sv->grad. */
gboolean tl_solver_precond(TlSolver *sv, const TlArray *x, TlArray *P, GError **error);
/* The step of the gradient algorithms (svrg, saga, lbfgsb), with its floor and ceiling:
 *   masked:  out = select(P > 0, min(max(x + alpha P (dir), x / 10), 10 max(x, delta)), x)
 *   else:    out = min(max(x + alpha (dir), x / 10), 10 max(x, delta))
 * delta that of the last tl_solver_precond (call it first).
 * dir an expression over the names args binds (x, P, out's name and dir's arrays); binds the
 * scalar "al". Records on the solver's stream. tl-objective.c says why the floor. */
gboolean tl_solver_floored_step(TlSolver *sv, TlExprArgs *args, const char *out, gboolean masked,
                                float alpha, const char *dir, GError **error);
/* order = a random permutation of 0 .. n-1 drawn from r. */
void tl_solver_shuffle(GRand *r, guint *order, guint n);

/* The epoch check of svrg and saga (tl-epoch-check.c, which says why): the last image whose
 * Phi did not fall, its Phi, and the step scale. */
typedef struct {
  TlArray *good;
  double phi_good;
  gboolean have_good;
  float scale;  /* multiplies the algorithm's step: halved at each undone epoch */
  guint streak; /* checks passed since the last change of scale */
  guint undone; /* epochs undone so far */
} TlEpochCheck;
gboolean tl_epoch_check_init(TlEpochCheck *c, TlSolver *sv, GError **error);
void tl_epoch_check_reset(TlEpochCheck *c);
void tl_epoch_check_clear(TlEpochCheck *c);
/* At an epoch's start: Phi of sv->x against the last good image's; *undo = TRUE when it fell
 * (the caller restarts from c->good, whose Phi is c->phi_good), else sv->x becomes the good one. */
gboolean tl_epoch_check(TlEpochCheck *c, TlSolver *sv, gboolean *undo, GError **error);
