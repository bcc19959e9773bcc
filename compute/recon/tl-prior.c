/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The common part of every TlPrior (tl-prior.h): lookup by name, parameter checks, and the
 * two dispatches of shaders/recon/prior.comp. The classes (one file each) only name their
 * kind; the formulas live in the kernel, documented again in each class's file. */
#include "tl-prior.h"
#include "tl-recon-registry.h"
#include <math.h>
#include <string.h>

/* The push block of shaders/recon/prior.comp. */
typedef struct {
  TlPush1D h;
  guint64 x, out, kappa;
  guint32 dims[3];
  float voxel[3];
  float gamma, eps;
  guint32 use_kappa;
} PriorPush;

typedef struct {
  TlPipeline *value, *gradient, *hessian;
  const TlArray *kappa; /* borrowed, or NULL */
  TlArray *partials; /* host-visible, one float per workgroup: one value() at a time per prior */
  guint64 n_groups;
} PriorPriv;

void tl_prior_params_init(TlPriorParams *p) {
  p->gamma = 2.0;
  p->epsilon = 1e-3;
}

/* The kernel computes in float: a value that is finite in double but 0 or inf as a float is
 * refused too. */
static gboolean check_params(const TlPriorClass *klass, const TlPriorParams *p, GError **error) {
  if (!(p->gamma >= 0) || !isfinite((float)p->gamma)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "prior %s: gamma %g; expected a finite gamma >= 0", klass->name, p->gamma);
    return FALSE;
  }
  if (!(p->epsilon > 0) || !isfinite((float)p->epsilon) || (float)p->epsilon == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "prior %s: epsilon %g; expected a finite epsilon > 0", klass->name, p->epsilon);
    return FALSE;
  }
  return TRUE;
}

TlPrior *tl_prior_new(TlContext *ctx, const char *name, const TlImageGrid *grid,
                      const TlPriorParams *params, GError **error) {
  const TlPriorClass *k = tl_recon_find_prior(name, error);
  return k ? tl_prior_new_class(ctx, k, grid, params, error) : NULL;
}

TlPrior *tl_prior_new_class(TlContext *ctx, const TlPriorClass *klass, const TlImageGrid *grid,
                            const TlPriorParams *params, GError **error) {
  g_return_val_if_fail(ctx && klass && grid, NULL);
  TlPriorParams def;
  tl_prior_params_init(&def);
  if (!params) params = &def;
  if (!check_params(klass, params, error) || !tl_image_grid_validate(grid, error)) return NULL;

  TlPrior *p = g_new0(TlPrior, 1);
  PriorPriv *pv = g_new0(PriorPriv, 1);
  p->klass = klass;
  p->ctx = ctx;
  p->grid = *grid;
  p->params = *params;
  p->priv = pv;
  guint32 spec_value[2] = {klass->kind, 1}, spec_grad[2] = {klass->kind, 0},
          spec_hess[2] = {klass->kind, 2};
  if (!(pv->value = tl_pipeline_new_builtin(ctx, "prior", sizeof(PriorPush), spec_value, 2,
                                            error)) ||
      !(pv->gradient = tl_pipeline_new_builtin(ctx, "prior", sizeof(PriorPush), spec_grad, 2,
                                               error)) ||
      !(pv->hessian = tl_pipeline_new_builtin(ctx, "prior", sizeof(PriorPush), spec_hess, 2,
                                              error))) {
    tl_prior_free(p);
    return NULL;
  }
  /* 26 neighbours read per voxel, against the one read of a plain element-wise kernel */
  tl_pipeline_set_item_cost(pv->value, 8);
  tl_pipeline_set_item_cost(pv->gradient, 8);
  tl_pipeline_set_item_cost(pv->hessian, 8);
  guint32 local = tl_pipeline_local_size(pv->value);
  pv->n_groups = (tl_image_grid_n_voxels(grid) + local - 1) / local;
  if (!(pv->partials = tl_array_new_host(ctx, pv->n_groups, sizeof(float), TRUE, error))) {
    tl_prior_free(p);
    return NULL;
  }
  return p;
}

void tl_prior_free(TlPrior *p) {
  if (!p) return;
  PriorPriv *pv = p->priv;
  if (pv) {
    tl_pipeline_free(pv->value);
    tl_pipeline_free(pv->gradient);
    tl_pipeline_free(pv->hessian);
    tl_array_free(pv->partials);
    g_free(pv);
  }
  g_free(p);
}

const char *tl_prior_name(const TlPrior *p) { return p->klass->name; }

gboolean tl_prior_set_params(TlPrior *p, const TlPriorParams *params, GError **error) {
  g_return_val_if_fail(p && params, FALSE);
  if (!check_params(p->klass, params, error)) return FALSE;
  /* scalars travel in push constants: nothing to rebuild */
  p->params = *params;
  return TRUE;
}

static gboolean check_array(const TlPrior *p, const TlArray *a, const char *what,
                            GError **error) {
  guint64 n = tl_image_grid_n_voxels(&p->grid);
  if (a && tl_array_length(a) == n && tl_array_elem_size(a) == sizeof(float)) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "prior %s: %s of %" G_GUINT64_FORMAT " elements of %" G_GSIZE_FORMAT
              " bytes; expected %" G_GUINT64_FORMAT " floats (%u x %u x %u)",
              p->klass->name, what, a ? tl_array_length(a) : 0, a ? tl_array_elem_size(a) : 0,
              n, p->grid.dims[0], p->grid.dims[1], p->grid.dims[2]);
  return FALSE;
}

static PriorPush push_for(const TlPrior *p, const TlArray *x, guint64 out) {
  const PriorPriv *pv = p->priv;
  PriorPush push = {.x = tl_array_address(x), .out = out, .gamma = (float)p->params.gamma,
                    .eps = (float)p->params.epsilon,
                    .kappa = tl_array_address(pv->kappa ? pv->kappa : x),
                    .use_kappa = pv->kappa != NULL};
  memcpy(push.dims, p->grid.dims, sizeof push.dims);
  memcpy(push.voxel, p->grid.voxel_mm, sizeof push.voxel);
  return push;
}

/* The gradient (kind 0) or the Hessian's diagonal (kind 2) into out. */
static gboolean per_voxel(TlPrior *p, TlStream *s, const TlArray *x, TlArray *out, int kind,
                          GError **error) {
  g_return_val_if_fail(p && s, FALSE);
  const char *what = kind == 0 ? "gradient" : "Hessian diagonal";
  if (!check_array(p, x, "image", error) || !check_array(p, out, what, error))
    return FALSE;
  if (tl_array_buffer(x) == tl_array_buffer(out) &&
      tl_array_buffer_offset(x) == tl_array_buffer_offset(out)) {
    /* every voxel reads its neighbours: writing in place would race */
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "prior %s: the %s array is the image itself; expected a separate array",
                p->klass->name, what);
    return FALSE;
  }
  PriorPriv *pv = p->priv;
  PriorPush push = push_for(p, x, tl_array_address(out));
  return tl_stream_dispatch_1d(s, kind == 0 ? pv->gradient : pv->hessian,
                               kind == 0 ? "prior gradient" : "prior hessian",
                               tl_image_grid_n_voxels(&p->grid), &push, error);
}

gboolean tl_prior_gradient(TlPrior *p, TlStream *s, const TlArray *x, TlArray *grad,
                           GError **error) {
  return per_voxel(p, s, x, grad, 0, error);
}

/* TV is no sum of pair terms: neither kappa nor a diagonal is defined for it here. */
static gboolean pairwise(const TlPrior *p, const char *what, GError **error) {
  if (p->klass->kind != 2) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "prior %s: %s is offered for the pairwise priors only (quadratic, rdp)",
              p->klass->name, what);
  return FALSE;
}

gboolean tl_prior_hessian_diag(TlPrior *p, TlStream *s, const TlArray *x, TlArray *diag,
                               GError **error) {
  g_return_val_if_fail(p, FALSE);
  return pairwise(p, "the Hessian diagonal", error) && per_voxel(p, s, x, diag, 2, error);
}

gboolean tl_prior_set_kappa(TlPrior *p, const TlArray *kappa, GError **error) {
  g_return_val_if_fail(p, FALSE);
  if (kappa && (!pairwise(p, "kappa", error) || !check_array(p, kappa, "kappa", error)))
    return FALSE;
  ((PriorPriv *)p->priv)->kappa = kappa;
  return TRUE;
}

const TlArray *tl_prior_kappa(const TlPrior *p) { return ((PriorPriv *)p->priv)->kappa; }

gboolean tl_prior_value(TlPrior *p, TlStream *s, const TlArray *x, double *value,
                        GError **error) {
  g_return_val_if_fail(p && s && value, FALSE);
  if (!check_array(p, x, "image", error)) return FALSE;
  PriorPriv *pv = p->priv;
  PriorPush push = push_for(p, x, tl_array_address(pv->partials));
  if (!tl_stream_dispatch_1d(s, pv->value, "prior value", tl_image_grid_n_voxels(&p->grid),
                             &push, error)) {
    g_autoptr(GError) ignored = NULL;
    tl_stream_finish(s, &ignored); /* chunks already submitted still write the partials */
    return FALSE;
  }
  if (!tl_stream_finish(s, error)) return FALSE;
  const float *part = tl_array_map(pv->partials);
  double sum = 0.0;
  for (guint64 g = 0; g < pv->n_groups; g++) sum += part[g];
  *value = sum;
  return TRUE;
}
