/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT simulation: projection on the device or exactly on the host, Poisson noise on the host
 * (seeded), the log transform as a fused expression on the device. */
#include "tl-ct-simulate.h"
#include "expr/tl-expr.h"
#include "image/tl-rng.h"
#include <math.h>
#include <string.h>

void tl_ct_sim_options_init(TlCtSimOptions *o) {
  *o = (TlCtSimOptions){.projector = TL_CT_JOSEPH, .seed = 1};
}

static gboolean check_options(const TlCtSimOptions *o, GError **error) {
  if (!(o->i0 >= 0) || !isfinite(o->i0) || !(o->emission_scale >= 0) ||
      !isfinite(o->emission_scale) || (o->i0 > 0 && o->emission_scale > 0) ||
      (o->keep_counts && !(o->i0 > 0))) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT simulation: I0 %g and emission scale %g must be finite and >= 0, not both "
                "set; keeping counts needs I0 > 0", o->i0, o->emission_scale);
    return FALSE;
  }
  return TRUE;
}

/* Turns d->proj (line integrals) into the noisy data the options ask for. */
static gboolean add_noise(TlContext *ctx, TlCtData *d, const TlCtSimOptions *o, GError **error) {
  const TlCtGeometry *g = d->geometry;
  guint64 npix = (guint64)g->det_u * g->det_v;
  if (o->emission_scale > 0) {
    for (guint k = 0; k < g->n_views; k++) {
      TlRng r;
      tl_rng_init(&r, o->seed, k);
      float *p = d->proj + npix * k;
      for (guint64 i = 0; i < npix; i++)
        p[i] = (float)(tl_rng_poisson(&r, o->emission_scale * MAX(p[i], 0.0f)) / o->emission_scale);
    }
    d->description = g_strdup_printf("emission counts of %g per unit line integral / %g, seed %"
                                     G_GUINT64_FORMAT, o->emission_scale, o->emission_scale,
                                     o->seed);
    return TRUE;
  }
  if (!(o->i0 > 0)) return TRUE;
  /* Beer-Lambert (Petit 2020 eq. 2.1): I = I0 exp(-p), detected as a Poisson count */
  for (guint k = 0; k < g->n_views; k++) {
    TlRng r;
    tl_rng_init(&r, o->seed, k);
    float *p = d->proj + npix * k;
    for (guint64 i = 0; i < npix; i++) p[i] = (float)tl_rng_poisson(&r, o->i0 * exp(-p[i]));
  }
  d->i0 = o->i0;
  d->values = TL_CT_COUNTS;
  d->description = g_strdup_printf("transmission, I0 %g, Poisson noise, seed %" G_GUINT64_FORMAT,
                                   o->i0, o->seed);
  if (o->keep_counts) return TRUE;
  /* back to line integrals on the device */
  g_autoptr(TlArray) a = tl_ct_data_upload(ctx, d, error);
  if (!a || !tl_array_download(a, d->proj, error)) return FALSE;
  d->values = TL_CT_LINE_INTEGRALS;
  return TRUE;
}

TlArray *tl_ct_data_upload(TlContext *ctx, const TlCtData *d, GError **error) {
  guint64 n = tl_ct_data_n_values(d);
  g_autoptr(TlArray) a = tl_array_new_float(ctx, n, error);
  if (!a || !tl_array_upload(a, d->proj, error)) return NULL;
  if (d->values == TL_CT_COUNTS) {
    if (!(d->i0 > 0)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "CT data holds counts but no incident count I0 (%g) to normalise them", d->i0);
      return NULL;
    }
    g_autoptr(TlExprArgs) args = tl_expr_args_new();
    tl_expr_args_array(args, "p", a);
    tl_expr_args_scalar(args, "i0", (float)d->i0);
    tl_expr_args_set_label(args, "ct log transform");
    /* a pixel that counted nothing counts as half a photon: the line integral stays finite */
    if (!tl_expr_assign(ctx, NULL, "p = -log(max(p, 0.5) / i0)", args, error)) return NULL;
  }
  return g_steal_pointer(&a);
}

TlCtData *tl_ct_simulate_image(TlContext *ctx, const TlCtGeometry *geometry, const TlImage *image,
                               const TlCtSimOptions *opt, GError **error) {
  if (!check_options(opt, error)) return NULL;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, geometry, &image->grid, opt->projector,
                                                   error);
  if (!p) return NULL;
  g_autoptr(TlCtData) d = tl_ct_data_new(tl_ct_geometry_copy(geometry));
  TlCtViews all = tl_ct_views_all(geometry);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, tl_image_grid_n_voxels(&image->grid), error);
  g_autoptr(TlArray) y = x ? tl_array_new_float(ctx, tl_ct_data_n_values(d), error) : NULL;
  g_autoptr(TlStream) s = y ? tl_stream_new(ctx, error) : NULL;
  if (!s || !tl_array_upload(x, image->data, error) ||
      !tl_ct_projector_forward(p, s, &all, x, y, FALSE, error) || !tl_stream_finish(s, error) ||
      !tl_array_download(y, d->proj, error))
    return NULL;
  d->has_grid = TRUE;
  d->grid = image->grid;
  if (!add_noise(ctx, d, opt, error)) return NULL;
  return g_steal_pointer(&d);
}

TlCtData *tl_ct_simulate_phantom(TlContext *ctx, const TlCtGeometry *geometry,
                                 const TlCtPhantom *phantom, const TlImageGrid *grid,
                                 double scale, const TlCtSimOptions *opt, GError **error) {
  if (!check_options(opt, error) || !tl_image_grid_validate(grid, error)) return NULL;
  g_autoptr(TlCtData) d = tl_ct_data_new(tl_ct_geometry_copy(geometry));
  const TlCtGeometry *g = geometry;
  static const double zero[3] = {0, 0, 0};
  for (guint k = 0; k < g->n_views; k++) {
    double Qa[9], Qd[9], w;
    tl_ct_geometry_ray_basis(g, k, zero, Qa, Qd, &w);
    for (guint v = 0; v < g->det_v; v++)
      for (guint u = 0; u < g->det_u; u++) {
        double o[3], dir[3];
        tl_ct_ray_from_basis(g->beam, Qa, Qd, w, u, v, o, dir);
        d->proj[((guint64)k * g->det_v + v) * g->det_u + u] = (float)tl_ct_phantom_line_integral(
            phantom, grid, scale, o, dir, g->beam == TL_CT_CONE);
      }
  }
  d->has_grid = TRUE;
  d->grid = *grid;
  if (!add_noise(ctx, d, opt, error)) return NULL;
  return g_steal_pointer(&d);
}
