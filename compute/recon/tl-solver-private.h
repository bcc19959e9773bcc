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
  TlStream *stream;
  TlProfile *profile;
  GCancellable *cancellable;
  TlExprArgs *args;
  TlSolverCallback cb;
  gpointer cb_data;
  guint sub_iterations;
  gpointer state;      /* the algorithm's own */
};

/* Records `expr` on the solver's stream with sv->args. */
gboolean tl_solver_expr(TlSolver *sv, const char *expr, GError **error);
/* Emission: the sensitivity image for subset s (shared when all subsets use one). */
TlArray *tl_solver_sens(TlSolver *sv, guint subset);
/* The prior's gradient of sv->x into sv->grad (zero without a prior). */
gboolean tl_solver_prior_gradient(TlSolver *sv, GError **error);
