/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtRecon: iterative CT reconstruction on the device: the CT problem (the operator of
 * tl-ct-operator.h over the views, the projections regrouped by subset) run by the one
 * reconstruction core (recon/tl-solver.h), so every algorithm of the registry applies
 * (least squares: sirt, os-sart, cgls; emission data: mlem, osem, osl, bsrem with a prior).
 * The step / callback / cancel contract is the solver's: a step is one sub-iteration, a
 * callback follows each with the image, the objective, the RMSE against a ground truth and
 * the profiler's timings, and a cancel between submissions leaves the last complete image
 * (every step writes its new image into a second buffer, swapped in only when the step
 * completed). All vector work is fused array expressions (compute/expr).
 *
 * A = the projector's system matrix, y = the measured line integrals (or counts for MLEM),
 * R = diag(1 / A 1) (inverse row sums), C_s = diag(1 / A_s^T 1) (inverse column sums of
 * subset s; zero where a sum is zero), lambda = relaxation:
 *
 *   SIRT     x <- x + lambda C A^T R (y - A x)                          (one subset)
 *   SART     the same per ordered subset s of views (A_s, y_s, C_s): OS-SART; with one
 *            view per subset it is SART of Siegl et al. 2011 ref. 7 (Andersen & Kak); subset s
 * holds
 *            views s, s + S, s + 2S ... The relaxed update of Siegl et al. 2011 sec. 2.3
 *   CGLS     conjugate gradients on the normal equations of Petit 2020 eq. 2.6,
 *            min 1/2 |A x - y|^2 (Hestenes-Stiefel / Paige-Saunders CGLS); its residual
 *            norm |y - A x_k| never increases
 *   MLEM     x <- x / C_s^-1 * A_s^T (y_s / A_s x) for emission data (OSEM with S > 1)
 *
 * Objective reported: 1/2 |A x - y|^2 (SIRT, SART, CGLS) or the Poisson log-likelihood
 * sum (y log A x - A x) over A x > 0 (MLEM), of the NEW image. CGLS has it for free (its
 * residual is updated recursively); the others pay one forward projection of all views,
 * so it is computed as options.objective says (SIRT and MLEM with one subset reuse that
 * projection in their next step). */
#pragma once
#include "tl-api.h"
#include <gio/gio.h>
#include "tl-ct-projector.h"
#include "recon/tl-solver.h"

G_BEGIN_DECLS

typedef enum { TL_CT_SIRT, TL_CT_SART, TL_CT_CGLS, TL_CT_MLEM } TlCtAlgo;

typedef enum {
  TL_CT_OBJECTIVE_NEVER,
  TL_CT_OBJECTIVE_ITERATION,    /* after the last subset of each iteration (default) */
  TL_CT_OBJECTIVE_SUBITERATION, /* after every sub-iteration */
} TlCtObjectiveWhen;

typedef struct {
  TlCtAlgo algo;
  guint subsets;          /* SART and MLEM: S >= 1 (SIRT and CGLS use 1) */
  guint iterations;       /* full passes over the data that tl_ct_recon_run makes */
  TlCtMethod projector;   /* joseph, siddon or raycast (matched pairs) */
  float relaxation;       /* SIRT / SART lambda, in (0, 2) */
  guint32 seed;           /* svrg / saga: subset order (TlSolverOptions.seed, default 1) */
  gboolean nonnegative;   /* SIRT / SART: clamp the image at 0 after each update */
  TlCtObjectiveWhen objective;
  /* Any algorithm of the registry by name (NULL: algo's). */
  const char *algorithm;
  /* Prior for osl / bsrem (NULL = none), its strength and parameters. */
  const char *prior;
  double beta;
  TlPriorParams prior_params;
} TlCtReconOptions;

/* SIRT, 1 subset, 10 iterations, Joseph, lambda 1, no clamp, objective per iteration. */
TL_API void tl_ct_recon_options_init(TlCtReconOptions *o);
TL_API const char *tl_ct_algo_name(TlCtAlgo a);
/* "sirt", "sart", "os-sart" (= sart), "cgls", "mlem" */
TL_API gboolean tl_ct_algo_from_name(const char *name, TlCtAlgo *out, GError **error);

typedef struct {
  guint iteration;          /* 1-based iteration this sub-iteration belongs to */
  guint subset;             /* 0-based */
  guint n_subsets;
  guint sub_iterations;     /* sub-iterations done so far (this one included) */
  const TlArray *image;     /* the new image on the device */
  double objective;         /* NAN when not computed this time */
  double rmse;              /* NAN without a truth */
  double seconds;           /* wall time of this sub-iteration (objective and RMSE included) */
  const TlProfile *profile; /* GPU time per kernel since the start */
} TlCtReconProgress;

typedef void (*TlCtReconCallback)(const TlCtReconProgress *progress, gpointer user_data);

typedef struct _TlCtRecon TlCtRecon;

/* proj: every view of the geometry (line integrals; MLEM: counts), copied (regrouped by
 * subset) onto the device, so it may be freed after. */
TL_API TlCtRecon *tl_ct_recon_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                           const TlArray *proj, const TlCtReconOptions *opt, GError **error);
TL_API void tl_ct_recon_free(TlCtRecon *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtRecon, tl_ct_recon_free)

/* Ground truth on the grid, for the RMSE in the progress reports. */
TL_API gboolean tl_ct_recon_set_truth(TlCtRecon *r, const TlImage *truth, GError **error);
/* Starting image (default 0; MLEM: 1). Resets the iteration counters. */
TL_API gboolean tl_ct_recon_set_image(TlCtRecon *r, const TlImage *image, GError **error);
TL_API void tl_ct_recon_set_callback(TlCtRecon *r, TlCtReconCallback cb, gpointer user_data);
/* Checked before each sub-iteration and between the stream's submissions. */
TL_API void tl_ct_recon_set_cancellable(TlCtRecon *r, GCancellable *cancellable);
/* Work per submission (tl_stream_set_submit_budget): smaller = finer cancel points. */
TL_API void tl_ct_recon_set_submit_budget(TlCtRecon *r, guint64 budget);

/* One sub-iteration. FALSE + G_IO_ERROR_CANCELLED when cancelled: the image is then the one
 * the last complete sub-iteration made; reset the cancellable to go on (CGLS restarts its
 * directions from that image). */
TL_API gboolean tl_ct_recon_step(TlCtRecon *r, GError **error);
/* Sub-iterations until options.iterations full iterations are done. */
TL_API gboolean tl_ct_recon_run(TlCtRecon *r, GError **error);
/* The objective of the current image (a forward projection of all views; CGLS: free). */
TL_API gboolean tl_ct_recon_objective(TlCtRecon *r, double *objective, GError **error);

TL_API guint tl_ct_recon_sub_iterations(const TlCtRecon *r);
TL_API const TlImageGrid *tl_ct_recon_grid(const TlCtRecon *r);
TL_API const TlArray *tl_ct_recon_image_array(const TlCtRecon *r);
TL_API TlImage *tl_ct_recon_image(TlCtRecon *r, GError **error);
TL_API const TlProfile *tl_ct_recon_profile(const TlCtRecon *r);
TL_API TlCtProjector *tl_ct_recon_projector(TlCtRecon *r);
TL_API TlOperator *tl_ct_recon_operator(TlCtRecon *r);
TL_API TlSolver *tl_ct_recon_solver(TlCtRecon *r);
TL_API const TlCtReconOptions *tl_ct_recon_options(const TlCtRecon *r);

G_END_DECLS
