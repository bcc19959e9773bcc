/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSolver: one reconstruction run = a problem (operator + data) + an algorithm from the
 * registry + options, with the step / callback / cancel contract every front end uses
 * (elsa's Problem / Solver split, Petit 2020 ch. 3; PETSc's KSP over a MatShell).
 *
 *   step      one sub-iteration (the next subset); the new image is written into a second
 *             buffer and becomes current only when the step completed, so a cancel between
 *             the stream's submissions leaves the last complete image
 *   callback  after each step: the image, the objective, the RMSE against a ground truth,
 *             the wall time and the profiler's per-kernel GPU times
 *   cancel    a GCancellable checked before each step and between submissions
 *
 * Algorithms (one file each, listed in compute/tl-registry.c; formulas in their files):
 *   mlem, osem       EM for Poisson data with the additive term (van Gendt et al. 2021 eq. 4-5)
 *   osl              MAP one-step-late EM (Green 1990) with a prior
 *   bsrem            block sequential regularised EM (De Pierro & Yamagishi 2001), convergent
 *   sirt, os-sart    simultaneous / ordered-subset algebraic reconstruction
 *   cgls             conjugate gradients on the normal equations
 * The objective reported is the penalised Poisson log-likelihood
 *   sum_j (m_j log ybar_j - ybar_j) - beta R(x)   (up to the constant -sum log m_j!)
 * for emission algorithms, else 1/2 |A x - y|^2. */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "tl-operator.h"
#include "tl-prior.h"
#include "image/tl-filter.h"

G_BEGIN_DECLS

/* The data side of ybar = D A x + a. Arrays are whole data vectors in the operator's data
 * order (tl-operator.h) and are borrowed: they must outlive the solver. */
typedef struct {
  TlOperator *op;
  TlArray *data;     /* measured y; NULL = the operator's own counts (list mode, bins) */
  TlArray *additive; /* a (expected randoms + scatter per datum, >= 0), or NULL = 0 */
  /* sum of a over every measurable datum where the data vector holds only some of them (list
   * mode: a at the events, not over every pair): the start image's expected additive counts;
   * 0 = sum of `additive` */
  double additive_total;
} TlProblem;

typedef enum {
  TL_ALGO_EMISSION = 1 << 0,   /* Poisson model: x >= 0, y counts (mlem, osem, osl, bsrem) */
  TL_ALGO_SUBSETS = 1 << 1,    /* uses the operator's subsets (others need one subset) */
  TL_ALGO_PRIOR = 1 << 2,      /* takes a prior (others refuse one) */
  TL_ALGO_NEEDS_DATA = 1 << 3, /* needs an explicit data vector: not for list mode */
  TL_ALGO_NEEDS_PRIOR = 1 << 4,/* meaningless without a prior (osl with beta 0 is mlem) */
} TlAlgorithmFlags;

typedef enum {
  TL_OBJECTIVE_NEVER,
  TL_OBJECTIVE_ITERATION,    /* after the last subset of each iteration (default) */
  TL_OBJECTIVE_SUBITERATION, /* after every sub-iteration */
} TlObjectiveWhen;

typedef struct _TlSolver TlSolver;
typedef struct _TlAlgorithmClass TlAlgorithmClass;

/* Several processes, one problem (distributed reconstruction, docs/scale.md): each process
 * holds a share of the data (list-mode events) and of the sensitivity pairs, and the solver
 * sums what the shares contribute through these callbacks, so the library stays free of any
 * message-passing library. Every participant runs the same solver with the same options.
 *   image    sums the float array `a` (on the device; the solver's stream is finished) over
 *            every participant, in place; called for each sensitivity image at set-up and
 *            for the EM correction image c after each EM pass
 *   scalars  sums v[0..n) over every participant, in place (data totals, log-likelihood
 *            data terms)
 * Sums must not depend on the number of participants beyond float rounding (sum in double).
 * Emission algorithms only (the others refuse a reducer). */
typedef struct {
  gboolean (*image)(TlContext *ctx, TlArray *a, gpointer data, GError **error);
  gboolean (*scalars)(double *v, guint n, gpointer data, GError **error);
  gpointer data;
} TlSolverReducer;

typedef struct {
  guint iterations;        /* full passes over the subsets that tl_solver_run makes */
  float relaxation;        /* sirt / os-sart lambda in (0, 2); bsrem alpha_0 in (0, 1] */
  gboolean nonnegative;    /* sirt / os-sart / cgls: clamp at 0 after each update */
  TlObjectiveWhen objective;
  /* Prior (algorithms with TL_ALGO_PRIOR): a name from the registry, or NULL = none. */
  const char *prior;
  /* beta is relative (docs/recon.md, "The prior's strength"): the solver multiplies it by
   * tl_solver_prior_scale, the mean sensitivity over the image's support times the start
   * image's value to the power 1 - d (d the prior's degree: rdp and tv 1, quadratic 2; tv
   * also times the smallest voxel edge in mm), so that one beta does the same on any scanner,
   * grid, projector, count level and image unit. beta_absolute: beta as given (STIR's and
   * PETRIC's penalisation factor; comparisons with their values). */
  double beta;
  gboolean beta_absolute;
  TlPriorParams prior_params;
  /* Filter between iterations: after every filter_every-th sub-iteration the new image is
   * filtered before it becomes current (STIR's inter-iteration filter). 0 / NONE: never. */
  TlFilter filter;
  guint filter_every;
  /* s = 1 instead of the sensitivity (van Gendt et al. 2021 Table 3's baseline; comparisons only).
   * */
  gboolean uniform_sensitivity;
  /* RMSE of the image scaled to the truth's total (emission images are in counts per unit
   * sensitivity; phantoms in their own units), or of the image as it is. */
  gboolean rmse_scaled;
  /* Distributed run: how the shares are summed (borrowed; NULL = one process). */
  const TlSolverReducer *reducer;
  /* svrg / saga: the seed of the random subset order (same seed, same images, bit for bit) */
  guint32 seed;
  /* The subset of the first sub-iteration (STIR's "start at subset"): the order is start,
   * start + 1, ... mod S; an iteration is still S sub-iterations. 0 to S - 1. */
  guint start_subset;
  /* Emission algorithms: this many OSEM epochs (of the problem's subsets) first, then the
   * algorithm from their image with its own schedule restarted (PETRIC's entrants start from
   * an OSEM image). The warm-up's steps are ordinary steps: counted, timed, reported. 0 = none.
   * prior_params.epsilon NAN = automatic for rdp (PETRIC): 1e-3 times the largest voxel of an
   * OSEM image, the warm-up's image or else one OSEM epoch from the start image, computed at
   * the algorithm's first step (tl-solver.c); other priors take 1e-3. */
  guint warm_epochs;
  /* Emission algorithms: the sensitivity image (all subsets' column sums) given instead of
   * computed (STIR's "sensitivity filename"; borrowed at set-up only): on the grid, finite,
   * >= 0 (else a GError naming the grids or the voxel). With S > 1 subsets each subset's is
   * this image / S, as STIR does without subset sensitivities. NULL: computed. */
  const TlImage *sensitivity;
} TlSolverOptions;

/* 10 iterations, relaxation 1, objective per iteration, no prior (beta 0, gamma 2,
 * epsilon 1e-3), no filter, rmse_scaled TRUE, seed 1. */
TL_API void tl_solver_options_init(TlSolverOptions *o);

typedef struct {
  guint iteration;          /* 1-based iteration this sub-iteration belongs to */
  guint subset;             /* 0-based */
  guint n_subsets;
  guint sub_iterations;     /* sub-iterations done so far (this one included) */
  const TlArray *image;     /* the new image on the device */
  double objective;         /* NAN when not computed this time */
  /* Emission: the log-likelihood data term came from the EM pass itself, at the image the
   * pass started from (one step late, no extra projection). */
  gboolean objective_from_pass;
  double rmse;              /* NAN without a truth */
  double seconds;           /* wall time of this sub-iteration (objective and RMSE included) */
  gboolean filtered;        /* the filter between iterations ran on this image */
  const TlProfile *profile; /* GPU time per kernel since the start */
} TlSolverProgress;

typedef void (*TlSolverCallback)(const TlSolverProgress *progress, gpointer user_data);

/* The algorithm by registry name ("mlem", "osem", "osl", "bsrem", "sirt", "os-sart", "sart",
 * "cgls"). GError when the algorithm does not apply to the problem (list mode and least
 * squares, several subsets for an algorithm without TL_ALGO_SUBSETS, a prior it cannot take),
 * naming both. The problem's arrays are borrowed; the operator too (it must outlive the
 * solver). Set-up work (sensitivity images, row sums) runs here. */
TL_API TlSolver *tl_solver_new(TlContext *ctx, const char *algorithm, const TlProblem *problem,
                        const TlSolverOptions *opt, GError **error);
TL_API void tl_solver_free(TlSolver *sv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlSolver, tl_solver_free)

/* Whether `klass` can run on `op` (and why not). */
TL_API gboolean tl_algorithm_applies(const TlAlgorithmClass *klass, const TlOperator *op,
                              GError **error);

TL_API gboolean tl_solver_set_truth(TlSolver *sv, const TlImage *truth, GError **error);
/* Starting image (default: emission 1 scaled so the expected total matches the data, else 0).
 * Resets the counters. */
TL_API gboolean tl_solver_set_image(TlSolver *sv, const TlImage *image, GError **error);
TL_API void tl_solver_set_callback(TlSolver *sv, TlSolverCallback cb, gpointer user_data);
TL_API void tl_solver_set_cancellable(TlSolver *sv, GCancellable *cancellable);
TL_API void tl_solver_set_submit_budget(TlSolver *sv, guint64 budget);
/* New prior / strength, used from the next step on (the window changes them while paused).
 * name NULL = none. */
TL_API gboolean tl_solver_set_prior(TlSolver *sv, const char *name, double beta,
                             const TlPriorParams *params, GError **error);

/* Replaces the problem's additive term a (borrowed, as in TlProblem; NULL = none) from the next
 * step on, without rebuilding anything: the data, the sensitivity images and the image stay
 * (scatter estimation iterated with the reconstruction changes a between rounds). Emission
 * algorithms only; the length must be the operator's data length. The objective's per-subset
 * estimates start afresh. Going from no term to one allocates the data vector and the scratch
 * that the fused EM pass did without. */
TL_API gboolean tl_solver_set_additive(TlSolver *sv, TlArray *additive, GError **error);
/* TlProblem.additive_total for the term set now (0 = sum of the array), read by the start
 * image of tl_solver_restart. */
TL_API void tl_solver_set_additive_total(TlSolver *sv, double total);
/* The additive term in use (NULL = none). */
TL_API const TlArray *tl_solver_additive(const TlSolver *sv);

TL_API gboolean tl_solver_step(TlSolver *sv, GError **error);
TL_API gboolean tl_solver_run(TlSolver *sv, GError **error);
/* The objective of the current image (may cost a projection of all data). */
TL_API gboolean tl_solver_objective(TlSolver *sv, double *objective, GError **error);

/* Resume (a checkpoint): the image and the sub-iterations already done; the next step runs
 * subset sub_iterations mod S. The objective's per-subset estimates start afresh. */
TL_API gboolean tl_solver_resume(TlSolver *sv, const TlImage *image, guint sub_iterations,
                          GError **error);

/* The default start image again (emission: the constant whose expected total is the data's less
 * the additive term in use; otherwise 0), the sub-iterations done kept so that progress counts
 * on: a scatter estimate iterated with the reconstruction restarts from it with the final
 * additive term (tl_recon_scatter_rounds). */
TL_API gboolean tl_solver_restart(TlSolver *sv, GError **error);

TL_API guint tl_solver_sub_iterations(const TlSolver *sv);
/* Data passes so far, the fair x axis of races: one projection of all data forward and back
 * (an EM pass, a full gradient) is 1, a subset's share 1/S, a forward projection alone (an
 * objective) 1/2. 0 for algorithms that count none (the least-squares ones). */
TL_API double tl_solver_data_passes(const TlSolver *sv);
TL_API const TlImageGrid *tl_solver_grid(const TlSolver *sv);
TL_API const TlArray *tl_solver_image_array(const TlSolver *sv);
TL_API TlImage *tl_solver_image(TlSolver *sv, GError **error);
TL_API const TlProfile *tl_solver_profile(const TlSolver *sv);
/* Whether an edit of built-in kernel `name` (core/tl-kernels.h) would change the solver's
 * sub-iterations as configured now (the EM pass or forward and adjoint, the prior, the filter
 * between iterations); if not, FALSE and a GError naming the kernels they run instead, e.g.
 * "pet_back is not called by this run: its sub-iterations run pet_em_rec, pet_back_slabs,
 * pet_pairs". TRUE where the operator does not say (tl_operator_kernel_used). */
TL_API gboolean tl_solver_check_kernel(const TlSolver *sv, const char *name, GError **error);
TL_API TlOperator *tl_solver_operator(TlSolver *sv);
TL_API const TlSolverOptions *tl_solver_options(const TlSolver *sv);
/* The factor beta is multiplied by (1 with beta_absolute, without a prior or for an
 * algorithm without sensitivity images): the penalty is beta * scale * R(x). */
TL_API double tl_solver_prior_scale(const TlSolver *sv);
TL_API const TlAlgorithmClass *tl_solver_algorithm(const TlSolver *sv);
/* The penalised Poisson objective as functions of any image x (device arrays of the grid's
 * voxel count; emission algorithms only; compute/recon/tl-objective.c has the formulas): a
 * researcher's own algorithm calls these, the gradient algorithms do.
 *   objective_at        Phi(x), and when not NULL its parts: the log-likelihood L(x) and R(x)
 *                       (R = 0 without a prior or with beta = 0: not computed)
 *                       (Phi = L - beta R); costs a projection of all data
 *   data_gradient       dL/dx = A^T D^T (y / ybar) - s over all data (subset = G_MAXUINT) or
 *                       subset k's share A_k^T D_k^T (y_k / ybar_k) - s_k; overwrites grad
 *   objective_gradient  data_gradient - beta dR/dx (one subset: beta / S)
 * All record on the solver's stream and finish it where a value is read. */
TL_API gboolean tl_solver_objective_at(TlSolver *sv, const TlArray *x, double *objective,
                                double *likelihood, double *prior, GError **error);
TL_API gboolean tl_solver_data_gradient(TlSolver *sv, guint subset, const TlArray *x,
                                 TlArray *grad, GError **error);
TL_API gboolean tl_solver_objective_gradient(TlSolver *sv, guint subset, const TlArray *x,
                                      TlArray *grad, GError **error);
/* The stream these record on: finish it before reading an array they wrote. */
TL_API TlStream *tl_solver_stream(TlSolver *sv);
/* The prior in use (NULL = none): its value, gradient and Hessian diagonal (tl-prior.h). */
TL_API TlPrior *tl_solver_prior(TlSolver *sv);
/* Per-voxel prior weights kappa (copied; kept across tl_solver_set_prior; NULL = none):
 * checked finite and >= 0, grid equal to the reconstruction's; quadratic and rdp only. */
TL_API gboolean tl_solver_set_kappa(TlSolver *sv, const TlImage *kappa, GError **error);
/* The prior's epsilon in use; NAN while an automatic one (TlSolverOptions.warm_epochs) is not
 * yet computed. */
TL_API double tl_solver_epsilon(const TlSolver *sv);
/* PETRIC's kappa at image x (an OSEM image): sqrt(max(0, A^T D^T (y D A 1 / ybar^2))), the
 * square root of the row sums of minus the log-likelihood's Hessian (Tsai et al. 2020).
 * Emission only; costs two projections of all data. */
TL_API TlImage *tl_solver_compute_kappa(TlSolver *sv, const TlImage *x, GError **error);

/* Emission algorithms: the sensitivity image of subset s (or of all subsets, s = G_MAXUINT). */
TL_API const TlArray *tl_solver_sensitivity(const TlSolver *sv, guint subset);

G_END_DECLS
