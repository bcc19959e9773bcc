/* SPDX-License-Identifier: GPL-3.0-or-later */
/* FDK / FBP: pre-weighting, ramp filtering (tl-ct-ramp.h) and voxel-driven back projection,
 * batch by batch of views (see tl-ct-fdk.h for the formulas). */
#include "tl-ct-fdk.h"
#include <math.h>
#include <string.h>

#include "core/tl_constants.glsl"

double tl_ct_fdk_view_scale(const TlCtGeometry *g, guint view) {
  double f_u, depth;
  tl_ct_geometry_scales(g, view, &f_u, &depth);
  /* pi / N * D^2 / tau with tau = D / f_u (cone); parallel: depth = 1, tau = 1 / f_u */
  return G_PI * depth * f_u / g->n_views;
}

struct _TlCtFdk {
  TlContext *ctx;
  TlCtProjector *bp;     /* voxel-driven, eq. 1 */
  TlPipeline *weight;
  TlCtRamp *ramp;
  TlArray *scales;       /* one per view */
  TlArray *tmp, *filtered;
  guint batch;
};

/* Mirrors the push block of shaders/ct/ct_fdk_weight.comp. */
typedef struct {
  TlPush1D h;
  guint64 src, dst, scale, views;
  guint32 nu, nv, first, stride, cone;
  guint32 segs;
} WeightPush;

TlCtFdk *tl_ct_fdk_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error) {
  return tl_ct_fdk_new_full(ctx, geometry, grid, filter, TL_CT_RAMP_AUTO, batch_views, error);
}

/* one_array: the image will be one array (tl_ct_fdk_run), so a volume beyond one is refused
 * now, naming it; else it is run in slabs (tl-ct-slabs.h) and only the projector's limits hold. */
static TlCtFdk *fdk_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                        TlCtFilter filter, TlCtRampMethod ramp, guint batch_views,
                        gboolean one_array, GError **error) {
  if (one_array && !tl_ct_volume_check_one_array(ctx, grid, error)) return NULL;
  if ((guint)filter >= TL_CT_FILTER_N) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown ramp filter %d", filter);
    return NULL;
  }
  g_autoptr(TlCtFdk) f = g_new0(TlCtFdk, 1);
  f->ctx = ctx;
  f->bp = tl_ct_projector_new(ctx, geometry, grid, TL_CT_VOXEL, error);
  if (!f->bp) return NULL;
  guint nu = geometry->det_u, nv = geometry->det_v, n = geometry->n_views;
  guint64 npix = (guint64)nu * nv;
  f->batch = batch_views ? batch_views : (guint)CLAMP((64u << 20) / 4 / npix, 1, n);
  f->batch = MIN(f->batch, n);

  g_autofree float *sc = g_new(float, n);
  for (guint k = 0; k < n; k++) sc[k] = (float)tl_ct_fdk_view_scale(geometry, k);

  if (!(f->ramp = tl_ct_ramp_new(ctx, filter, nu, nv * f->batch, ramp, error)) ||
      !(f->scales = tl_array_new_float(ctx, n, error)) || !tl_array_upload(f->scales, sc, error) ||
      !(f->tmp = tl_array_new_float(ctx, npix * f->batch, error)) ||
      !(f->filtered = tl_array_new_float(ctx, npix * f->batch, error)))
    return NULL;
  f->weight = tl_pipeline_new_builtin(ctx, "ct_fdk_weight", sizeof(WeightPush), NULL, 0, error);
  if (!f->weight) return NULL;
  tl_pipeline_set_item_cost(f->weight, 4 * TL_CT_WEIGHT_BLOCK);
  return g_steal_pointer(&f);
}

TlCtFdk *tl_ct_fdk_new_full(TlContext *ctx, const TlCtGeometry *geometry,
                            const TlImageGrid *grid, TlCtFilter filter, TlCtRampMethod ramp,
                            guint batch_views, GError **error) {
  return fdk_new(ctx, geometry, grid, filter, ramp, batch_views, TRUE, error);
}

TlCtFdk *tl_ct_fdk_new_for_slabs(TlContext *ctx, const TlCtGeometry *geometry,
                                 const TlImageGrid *grid, TlCtFilter filter, TlCtRampMethod ramp,
                                 guint batch_views, GError **error) {
  return fdk_new(ctx, geometry, grid, filter, ramp, batch_views, FALSE, error);
}

TlCtFdk *tl_ct_fbp_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error) {
  if (geometry->beam != TL_CT_PARALLEL) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "FBP reconstructs parallel-beam scans; this one is cone beam (%u views of %u x %u): "
                "use FDK", geometry->n_views, geometry->det_u, geometry->det_v);
    return NULL;
  }
  return tl_ct_fdk_new_full(ctx, geometry, grid, filter, TL_CT_RAMP_AUTO, batch_views, error);
}

void tl_ct_fdk_set_disc(TlCtFdk *f, gboolean disc) { tl_ct_projector_set_disc(f->bp, disc); }

void tl_ct_fdk_free(TlCtFdk *f) {
  if (!f) return;
  tl_ct_projector_free(f->bp);
  tl_pipeline_free(f->weight);
  tl_ct_ramp_free(f->ramp);
  tl_array_free(f->scales);
  tl_array_free(f->tmp);
  tl_array_free(f->filtered);
  g_free(f);
}

static gboolean back_into_array(TlCtProjector *bp, TlStream *s, const TlCtViews *v,
                                const TlArray *filtered, gboolean accumulate, gpointer image,
                                GError **error) {
  return tl_ct_projector_back(bp, s, v, filtered, image, accumulate, error);
}

gboolean tl_ct_fdk_run(TlCtFdk *f, TlStream *s, const TlArray *proj, TlArray *image,
                       GError **error) {
  return tl_ct_fdk_run_with(f, s, proj, back_into_array, image, error);
}

gboolean tl_ct_fdk_run_with(TlCtFdk *f, TlStream *s, const TlArray *proj, TlCtFdkBackFunc back,
                            gpointer data, GError **error) {
  const TlCtGeometry *g = tl_ct_projector_geometry(f->bp);
  TlCtViews all = tl_ct_views_all(g);
  guint64 npix = (guint64)g->det_u * g->det_v;
  if (tl_array_elem_size(proj) != 4 || tl_array_length(proj) < tl_ct_views_n_pixels(g, &all)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "FDK: the projection array has %" G_GUINT64_FORMAT " elements; expected %" G_GUINT64_FORMAT
                " floats (%u views of %u x %u)", tl_array_length(proj),
                tl_ct_views_n_pixels(g, &all), g->n_views, g->det_u, g->det_v);
    return FALSE;
  }
  /* ct_fdk_weight: one invocation per TL_CT_WEIGHT_BLOCK pixels of a row */
  guint segs = (g->det_u + TL_CT_WEIGHT_BLOCK - 1) / TL_CT_WEIGHT_BLOCK;
  for (guint first = 0; first < g->n_views; first += f->batch) {
    guint count = MIN(f->batch, g->n_views - first);
    WeightPush wp = {.src = tl_array_address(proj) + 4 * npix * first,
                     .dst = tl_array_address(f->tmp),
                     .scale = tl_array_address(f->scales) + 4 * (guint64)first,
                     .views = tl_array_address(tl_ct_projector_views_table(f->bp)),
                     .nu = g->det_u, .nv = g->det_v, .first = first, .stride = 1,
                     .cone = g->beam == TL_CT_CONE, .segs = segs};
    TlCtViews v = {.first = first, .stride = 1, .count = count};
    if (!tl_stream_dispatch_1d(s, f->weight, "fdk weight", (guint64)segs * g->det_v * count,
                               &wp, error) ||
        !tl_ct_ramp_run(f->ramp, s, f->tmp, f->filtered, g->det_v * count, error) ||
        !back(f->bp, s, &v, f->filtered, first > 0, data, error))
      return FALSE;
  }
  return TRUE;
}
