/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlPrior: a penalty R(x) on the image, for penalised (MAP) reconstruction
 *
 *   maximise  Phi(x) = L(x) - beta R(x)     (L the Poisson log-likelihood)
 *
 * Every prior here is a sum over neighbouring voxel pairs or a smoothed gradient norm, so
 * its gradient is a stencil over the 3 x 3 x 3 neighbourhood: one kernel per concern
 * (value partial sums, gradient), variants chosen by a specialization constant, never copied
 * shaders (shaders/recon/prior.comp). Voxels outside the grid do not exist (no padding
 * term). The neighbour weights w_jk = 1 / (distance between voxel centres in units of the
 * smallest voxel edge), over the 26 neighbours.
 *
 *   quadratic  R = 1/4 sum_j sum_{k in N_j} w_jk (x_j - x_k)^2
 *   rdp        R = 1/2 sum_j sum_{k in N_j} w_jk (x_j - x_k)^2 / (x_j + x_k + gamma |x_j - x_k| + eps)
 *              (Nuyts et al. 2002, the relative difference prior; gamma >= 0 sets how edges are
 *              kept; eps > 0 keeps it finite where x_j = x_k = 0; for images x >= 0, where the
 *              denominator is >= eps)
 *   tv         R = sum_j (sqrt(|grad x|_j^2 + eps^2) - eps), grad = forward differences along
 *              x, y, z in mm (voxel size), the difference across the grid's far face taken as 0
 *              (the - eps makes R = 0 on a constant image, like the other two; no gradient
 *              changes)
 *
 * (The 1/4 and 1/2 make each pair count once with the pair terms of the papers: the double
 * sum visits every pair twice.)
 *
 * Per-voxel weights kappa (tl_prior_set_kappa; quadratic and rdp): every pair term is
 * multiplied by kappa_j kappa_k, so rdp becomes exactly the relative difference prior of STIR
 * and SIRF that the PETRIC challenge's objective uses (Tsai et al. 2020's spatially variant
 * strength; kappa = sqrt of the log-likelihood Hessian's row sums at an OSEM image,
 * tl_solver_compute_kappa). tl_prior_hessian_diag gives d^2R/dx_j^2 (quadratic and rdp), the
 * prior half of the preconditioners of the stochastic algorithms (tl-algo-svrg.c).
 *
 * value() and gradient() see the image only; beta is the
 * algorithm's. A new prior is one file with a TlPriorClass and one line in
 * compute/recon/tl-recon-registry.c. */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

typedef struct _TlPrior TlPrior;

typedef struct {
  double gamma;   /* rdp: edge preservation, >= 0 (default 2) */
  double epsilon; /* rdp, tv: smoothing, > 0 (default 1e-3 in image units; tv: per mm) */
} TlPriorParams;

typedef struct {
  const char *name;    /* "quadratic", "rdp", "tv" */
  const char *summary;
  /* the value of specialization constant 1 of shaders/recon/prior.comp for this prior */
  guint32 kind;
} TlPriorClass;

struct _TlPrior {
  const TlPriorClass *klass;
  TlContext *ctx;
  TlImageGrid grid;
  TlPriorParams params;
  gpointer priv;  /* pipelines, partial-sum buffer */
};

TL_API void tl_prior_params_init(TlPriorParams *p); /* gamma 2, epsilon 1e-3 */

/* By name from compute/recon/tl-recon-registry.c's list; GError names the known ones. NULL
 * params: defaults. Checks the parameters (finite, gamma >= 0, epsilon > 0). */
TL_API TlPrior *tl_prior_new(TlContext *ctx, const char *name, const TlImageGrid *grid,
                      const TlPriorParams *params, GError **error);
TL_API TlPrior *tl_prior_new_class(TlContext *ctx, const TlPriorClass *klass, const TlImageGrid *grid,
                            const TlPriorParams *params, GError **error);
TL_API void tl_prior_free(TlPrior *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlPrior, tl_prior_free)

TL_API const char *tl_prior_name(const TlPrior *p);
/* New gamma / epsilon between iterations (the window changes them while paused). */
TL_API gboolean tl_prior_set_params(TlPrior *p, const TlPriorParams *params, GError **error);

/* grad = dR/dx (overwritten; a separate array from x), recorded on s. */
TL_API gboolean tl_prior_gradient(TlPrior *p, TlStream *s, const TlArray *x, TlArray *grad,
                           GError **error);
/* *value = R(x): one dispatch of partial sums, then the stream is finished and the partials
 * added in double on the host. */
TL_API gboolean tl_prior_value(TlPrior *p, TlStream *s, const TlArray *x, double *value,
                        GError **error);

/* diag = d^2 R / dx_j^2 at x (overwritten; a separate array from x), recorded on s. Quadratic:
 * sum_k w_jk kappa_j kappa_k; rdp: sum_k w_jk kappa_j kappa_k 2 (2 x_k + eps)^2 / D_jk^3 with
 * D_jk = x_j + x_k + gamma |x_j - x_k| + eps (the second derivative away from x_j = x_k, where
 * it has a kink when gamma > 0: the one-sided limits agree, so this is the value there too).
 * GError for tv (no diagonal offered). */
TL_API gboolean tl_prior_hessian_diag(TlPrior *p, TlStream *s, const TlArray *x, TlArray *diag,
                               GError **error);
/* Per-voxel weights kappa (one float per voxel, >= 0; borrowed: it must outlive the prior or
 * the next call), NULL = none (kappa = 1). Quadratic and rdp only: GError for tv. */
TL_API gboolean tl_prior_set_kappa(TlPrior *p, const TlArray *kappa, GError **error);
TL_API const TlArray *tl_prior_kappa(const TlPrior *p);

G_END_DECLS
