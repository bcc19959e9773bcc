/* SPDX-License-Identifier: GPL-3.0-or-later */
/* FDK / FBP: pre-weighting, exact spatial ramp filtering and voxel-driven back projection,
 * batch by batch of views (see tl-ct-fdk.h for the formulas). */
#include "tl-ct-fdk.h"
#include <math.h>
#include <string.h>

static const char *const tl_ct_filter_names[] = {"ram-lak", "shepp-logan", "hann"};

const char *tl_ct_filter_name(TlCtFilter f) {
  return (guint)f < G_N_ELEMENTS(tl_ct_filter_names) ? tl_ct_filter_names[f] : "?";
}

gboolean tl_ct_filter_from_name(const char *name, TlCtFilter *out, GError **error) {
  for (guint i = 0; i < G_N_ELEMENTS(tl_ct_filter_names); i++)
    if (g_strcmp0(name, tl_ct_filter_names[i]) == 0) {
      *out = (TlCtFilter)i;
      return TRUE;
    }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown ramp filter '%s' (known: ram-lak, shepp-logan, hann)", name);
  return FALSE;
}

/* Band-limited ramp |f| (|f| <= 1/2) sampled at integer l (Kak & Slaney eq. 3.61, tau = 1). */
static double ram_lak(long l) {
  if (l == 0) return 0.25;
  if (l % 2 == 0) return 0.0;
  return -1.0 / (G_PI * G_PI * (double)l * (double)l);
}

double *tl_ct_ramp_kernel(TlCtFilter f, guint n) {
  double *g = g_new(double, 2 * (gsize)n - 1);
  for (long l = -(long)n + 1; l < (long)n; l++) {
    double v;
    switch (f) {
    case TL_CT_FILTER_SHEPP_LOGAN: v = 2.0 / (G_PI * G_PI * (1.0 - 4.0 * (double)l * l)); break;
    /* (1 + cos(2 pi f)) / 2 = 1/2 + (e^{2 pi i f} + e^{-2 pi i f}) / 4: shifts by +-1 */
    case TL_CT_FILTER_HANN: v = 0.5 * ram_lak(l) + 0.25 * (ram_lak(l - 1) + ram_lak(l + 1)); break;
    default: v = ram_lak(l); break;
    }
    g[l + n - 1] = v;
  }
  return g;
}

double tl_ct_fdk_view_scale(const TlCtGeometry *g, guint view) {
  double f_u, depth;
  tl_ct_geometry_scales(g, view, &f_u, &depth);
  /* pi / N * D^2 / tau with tau = D / f_u (cone); parallel: depth = 1, tau = 1 / f_u */
  return G_PI * depth * f_u / g->n_views;
}

struct _TlCtFdk {
  TlContext *ctx;
  TlCtProjector *bp;     /* voxel-driven, eq. 1 */
  TlPipeline *weight, *filter;
  TlArray *kernel;       /* 2 det_u - 1 taps */
  TlArray *scales;       /* one per view */
  TlArray *tmp, *filtered;
  guint batch;
};

/* Mirror the push blocks of shaders/ct/ct_fdk_weight.comp and ct_fdk_filter.comp. */
typedef struct {
  TlPush1D h;
  guint64 src, dst, scale, views;
  guint32 nu, nv, first, stride, cone;
  guint32 pad;
} WeightPush;
typedef struct {
  TlPush1D h;
  guint64 src, dst, kernel;
  guint32 nu, blocks;
} FilterPush;

/* Outputs per invocation of ct_fdk_filter (CT_FILTER_BLOCK there); the kernel array carries
 * that many zeros after its 2 nu - 1 taps. */
#define TL_CT_FILTER_BLOCK 8

TlCtFdk *tl_ct_fdk_new(TlContext *ctx, const TlCtGeometry *geometry, const TlImageGrid *grid,
                       TlCtFilter filter, guint batch_views, GError **error) {
  if ((guint)filter >= G_N_ELEMENTS(tl_ct_filter_names)) {
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

  g_autofree double *gk = tl_ct_ramp_kernel(filter, nu);
  g_autofree float *gf = g_new0(float, 2 * (gsize)nu - 1 + TL_CT_FILTER_BLOCK);
  for (guint i = 0; i < 2 * nu - 1; i++) gf[i] = (float)gk[i];
  g_autofree float *sc = g_new(float, n);
  for (guint k = 0; k < n; k++) sc[k] = (float)tl_ct_fdk_view_scale(geometry, k);

  if (!(f->kernel = tl_array_new_float(ctx, 2 * (guint64)nu - 1 + TL_CT_FILTER_BLOCK, error)) ||
      !tl_array_upload(f->kernel, gf, error) ||
      !(f->scales = tl_array_new_float(ctx, n, error)) || !tl_array_upload(f->scales, sc, error) ||
      !(f->tmp = tl_array_new_float(ctx, npix * f->batch, error)) ||
      !(f->filtered = tl_array_new_float(ctx, npix * f->batch, error)))
    return NULL;
  f->weight = tl_pipeline_new_builtin(ctx, "ct_fdk_weight", sizeof(WeightPush), NULL, 0, error);
  f->filter = tl_pipeline_new_builtin(ctx, "ct_fdk_filter", sizeof(FilterPush), NULL, 0, error);
  if (!f->weight || !f->filter) return NULL;
  tl_pipeline_set_item_cost(f->weight, 4);
  tl_pipeline_set_item_cost(f->filter, MAX(nu, 1u));
  return g_steal_pointer(&f);
}

void tl_ct_fdk_free(TlCtFdk *f) {
  if (!f) return;
  tl_ct_projector_free(f->bp);
  tl_pipeline_free(f->weight);
  tl_pipeline_free(f->filter);
  tl_array_free(f->kernel);
  tl_array_free(f->scales);
  tl_array_free(f->tmp);
  tl_array_free(f->filtered);
  g_free(f);
}

gboolean tl_ct_fdk_run(TlCtFdk *f, TlStream *s, const TlArray *proj, TlArray *image,
                       GError **error) {
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
  for (guint first = 0; first < g->n_views; first += f->batch) {
    guint count = MIN(f->batch, g->n_views - first);
    WeightPush wp = {.src = tl_array_address(proj) + 4 * npix * first,
                     .dst = tl_array_address(f->tmp),
                     .scale = tl_array_address(f->scales) + 4 * (guint64)first,
                     .views = tl_array_address(tl_ct_projector_views_table(f->bp)),
                     .nu = g->det_u, .nv = g->det_v, .first = first, .stride = 1,
                     .cone = g->beam == TL_CT_CONE};
    guint blocks = (g->det_u + TL_CT_FILTER_BLOCK - 1) / TL_CT_FILTER_BLOCK;
    FilterPush fp = {.src = tl_array_address(f->tmp), .dst = tl_array_address(f->filtered),
                     .kernel = tl_array_address(f->kernel), .nu = g->det_u, .blocks = blocks};
    TlCtViews v = {.first = first, .stride = 1, .count = count};
    if (!tl_stream_dispatch_1d(s, f->weight, "fdk weight", npix * count, &wp, error) ||
        !tl_stream_dispatch_1d(s, f->filter, "fdk filter", (guint64)blocks * g->det_v * count,
                               &fp, error) ||
        !tl_ct_projector_back(f->bp, s, &v, f->filtered, image, first > 0, error))
      return FALSE;
  }
  return TRUE;
}
