/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET operator over explicit lines (tl-pet-lines.h). */
#include "tl-pet-lines.h"
#include "pet/project/tl-projector.h"
#include "pet/data/tl-sinogram-arc.h"
#include "pet/correct/tl-attenuation.h"
#include "expr/tl-expr.h"
#include <math.h>
#include <string.h>

typedef struct {
  TlProjector *proj;
  guint n_rays;
  float *weights;     /* per ray, summing to 1 */
  TlArray **records; /* per ray: 6 floats per line, data order; TOF: all rays share one
                      * array of events (TlEvent 2j, 2j + 1, bin) in records[0] */
  TlArray **crystals; /* TOF only, per ray: 2 TlCrystal per line, data order */
  TlTof tof;
  gboolean has_tof;
  TlArray *counts;   /* NULL: none (the twin class without a counts method) */
  TlArray *scratch;  /* several rays: one subset's values */
  guint64 n;
  guint64 *pos;     /* given line i -> data position */
} LinesOp;

static TlLors lines_lors(TlOperator *op, guint subset, guint ray) {
  LinesOp *p = op->priv;
  if (p->has_tof)
    return (TlLors){.kind = TL_LORS_EVENTS,
                    .records = p->records[0],
                    .crystals = p->crystals[ray],
                    .first = tl_operator_subset_first(op, subset),
                    .count = tl_operator_subset_length(op, subset),
                    .tof = &p->tof};
  return (TlLors){.kind = TL_LORS_END_POINTS,
                  .records = p->records[ray],
                  .first = tl_operator_subset_first(op, subset),
                  .count = tl_operator_subset_length(op, subset)};
}

/* o = expr(o, a, k), elementwise over one subset's values */
static gboolean combine(TlOperator *op, TlStream *s, const char *expr, TlArray *o, TlArray *a,
                        float k, GError **error) {
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "o", o);
  tl_expr_args_array(args, "a", a);
  tl_expr_args_scalar(args, "k", k);
  tl_expr_args_set_label(args, "pet-lines rays");
  return tl_expr_assign(op->ctx, s, expr, args, error);
}

/* Several rays: y = sum over rays r of w_r A_r x (STIR's rays per bin). */
static gboolean lines_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                              TlArray *y, GError **error) {
  LinesOp *p = op->priv;
  TlLors l = lines_lors(op, subset, 0);
  if (p->n_rays == 1) return tl_projector_forward(p->proj, s, &l, x, y, error);
  if (l.count == 0) return TRUE;
  g_autoptr(TlArray) t = tl_array_new_view(p->scratch, 0, l.count, error);
  if (!t) return FALSE;
  for (guint r = 0; r < p->n_rays; r++) {
    l = lines_lors(op, subset, r);
    if (!tl_projector_forward(p->proj, s, &l, x, t, error) ||
        !combine(op, s, r ? "o = o + a * k" : "o = a * k", y, t, p->weights[r], error))
      return FALSE;
  }
  return TRUE;
}

/* x += sum over rays of A_r^T (w_r w): the exact adjoint of the sum above. */
static gboolean lines_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                              TlArray *x, GError **error) {
  LinesOp *p = op->priv;
  TlLors l = lines_lors(op, subset, 0);
  if (p->n_rays == 1) return tl_projector_back(p->proj, s, &l, w, x, error);
  if (l.count == 0) return TRUE;
  g_autoptr(TlArray) t = tl_array_new_view(p->scratch, 0, l.count, error);
  if (!t) return FALSE;
  for (guint r = 0; r < p->n_rays; r++) {
    l = lines_lors(op, subset, r);
    if (!combine(op, s, "o = a * k", t, (TlArray *)w, p->weights[r], error) ||
        !tl_projector_back(p->proj, s, &l, t, x, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean lines_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  LinesOp *p = op->priv;
  return tl_stream_copy(s, p->counts, 0, m, 0, tl_array_size_bytes(m), error);
}

static void lines_finalize(TlOperator *op) {
  LinesOp *p = op->priv;
  if (!p) return;
  if (p->proj) tl_projector_free(p->proj);
  for (guint r = 0; p->records && r < p->n_rays; r++)
    if (p->records[r]) tl_array_free(p->records[r]);
  for (guint r = 0; p->crystals && r < p->n_rays; r++)
    if (p->crystals[r]) tl_array_free(p->crystals[r]);
  g_free(p->records);
  g_free(p->crystals);
  if (p->counts) tl_array_free(p->counts);
  if (p->scratch) tl_array_free(p->scratch);
  g_free(p->pos);
  g_free(p->weights);
  g_free(p);
}

/* No sensitivity method: the default A_s^T D_s 1 over the stored lines is the right one, since
 * every line of the data is stored. */
const TlOperatorClass tl_pet_lines_operator_class = {
    .name = "pet-lines",
    .modality = "pet",
    .summary = "PET projector along explicit lines with counts (arc-corrected sinograms)",
    .flags = 0,
    .finalize = lines_finalize,
    .forward = lines_forward,
    .adjoint = lines_adjoint,
    .counts = lines_counts,
};

/* Lines without measured counts (Python's line_operator): no counts method, so a solver asks
 * for the data instead of reading counts that are not there. */
static const TlOperatorClass lines_no_counts_class = {
    .name = "pet-lines",
    .modality = "pet",
    .summary = "PET projector along explicit lines (no counts: the problem gives the data)",
    .flags = 0,
    .finalize = lines_finalize,
    .forward = lines_forward,
    .adjoint = lines_adjoint,
};

TlOperator *tl_pet_lines_operator_new(TlContext *ctx, const TlImageGrid *grid,
                                      const char *projector, guint64 n, const float *ends,
                                      guint n_rays, const float *ray_weights,
                                      const float *counts, const guint32 *group,
                                      guint subsets, GError **error) {
  return tl_pet_lines_operator_new_tof(ctx, grid, projector, n, ends, n_rays, ray_weights, NULL,
                                       NULL, counts, group, subsets, error);
}

/* The TOF records of `rec` (6 floats per line and ray, data order): per ray a table of two
 * crystals per line, and the events (2j, 2j + 1, bin of the line at j) all rays share. */
static gboolean upload_tof(LinesOp *p, TlContext *ctx, const float *rec, const gint32 *bin_at,
                           GError **error) {
  guint64 n = p->n;
  g_autofree TlEvent *ev = g_new(TlEvent, n);
  for (guint64 j = 0; j < n; j++)
    ev[j] = (TlEvent){.a = (guint32)(2 * j), .b = (guint32)(2 * j + 1), .tof_bin = bin_at[j]};
  if (!(p->records[0] = tl_array_new(ctx, n, sizeof(TlEvent), error)) ||
      !tl_array_upload(p->records[0], ev, error))
    return FALSE;
  g_autofree TlCrystal *c = g_new0(TlCrystal, 2 * n);
  for (guint r = 0; r < p->n_rays; r++) {
    for (guint64 j = 0; j < n; j++) {
      memcpy(c[2 * j].centre, rec + 6 * (n * r + j), 3 * sizeof(float));
      memcpy(c[2 * j + 1].centre, rec + 6 * (n * r + j) + 3, 3 * sizeof(float));
      c[2 * j + 1].group = 1; /* the pair rule (pet_common.glsl): two groups, same ring */
    }
    if (!(p->crystals[r] = tl_array_new(ctx, 2 * n, sizeof(TlCrystal), error)) ||
        !tl_array_upload(p->crystals[r], c, error))
      return FALSE;
  }
  return TRUE;
}

TlOperator *tl_pet_lines_operator_new_tof(TlContext *ctx, const TlImageGrid *grid,
                                          const char *projector, guint64 n, const float *ends,
                                          guint n_rays, const float *ray_weights,
                                          const gint32 *tof_bin, const TlTof *tof,
                                          const float *counts, const guint32 *group,
                                          guint subsets, GError **error) {
  if (n == 0 || n > G_MAXUINT32 / 8) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%" G_GUINT64_FORMAT " lines (expected 1 "
                "to %u)", n, G_MAXUINT32 / 8);
    return NULL;
  }
  if (subsets < 1 || subsets > n || subsets > 1000) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets (expected 1 to %" G_GUINT64_FORMAT
                ", the number of lines, and at most 1000)", subsets, n);
    return NULL;
  }
  if (n_rays < 1 || n_rays > TL_PET_LINES_MAX_RAYS) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u rays per line (expected 1 to %u)",
                n_rays, TL_PET_LINES_MAX_RAYS);
    return NULL;
  }
  for (guint64 i = 0; i < 6 * n * n_rays; i++)
    if (!isfinite(ends[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "ray %" G_GUINT64_FORMAT " of line %"
                  G_GUINT64_FORMAT ": end point coordinate %d is %g (expected finite mm)",
                  i / (6 * n), i % (6 * n) / 6, (int)(i % 6), ends[i]);
      return NULL;
    }
  double wsum = 0;
  for (guint r = 0; ray_weights && r < n_rays; r++) {
    if (!(ray_weights[r] >= 0) || !isfinite(ray_weights[r])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "ray %u: weight %g (expected finite, "
                  ">= 0)", r, ray_weights[r]);
      return NULL;
    }
    wsum += ray_weights[r];
  }
  if (ray_weights && fabs(wsum - 1) > 1e-5) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "ray weights sum to %g (expected 1)", wsum);
    return NULL;
  }
  if (tof && (!(tof->sigma_mm > 0) || !isfinite(tof->sigma_mm) || !(tof->bin_mm > 0) ||
              !isfinite(tof->bin_mm) || !(tof->n_sigma > 0) || tof->n_sigma > 10)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "TOF kernel: sigma_mm %g, bin_mm %g, "
                "n_sigma %g (expected positive finite widths and n_sigma in (0, 10])",
                tof->sigma_mm, tof->bin_mm, tof->n_sigma);
    return NULL;
  }
  if (tof && !tof_bin) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "TOF kernel given without the lines' "
                "TOF bins (tof_bin NULL)");
    return NULL;
  }
  double total = 0;
  for (guint64 i = 0; counts && i < n; i++) {
    if (!isfinite(counts[i]) || counts[i] < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "line %" G_GUINT64_FORMAT ": count %g "
                  "(expected finite, >= 0)", i, counts[i]);
      return NULL;
    }
    total += counts[i];
  }
  if (counts && !(total > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "the %" G_GUINT64_FORMAT " lines hold no "
                "counts", n);
    return NULL;
  }
  guint S = subsets;
  g_autofree guint64 *len = g_new0(guint64, S), *first = g_new0(guint64, S + 1);
  g_autofree guint *sub = g_new(guint, n);
  for (guint64 i = 0; i < n; i++) {
    sub[i] = group ? group[i] % S : (guint)(i * S / n);
    len[sub[i]]++;
  }
  for (guint s = 0; s < S; s++) first[s + 1] = first[s] + len[s];
  LinesOp *p = g_new0(LinesOp, 1);
  p->n = n;
  p->n_rays = n_rays;
  p->records = g_new0(TlArray *, n_rays);
  p->crystals = tof ? g_new0(TlArray *, n_rays) : NULL;
  p->has_tof = tof != NULL;
  if (tof) p->tof = *tof;
  p->weights = g_new(float, n_rays);
  for (guint r = 0; r < n_rays; r++) p->weights[r] = ray_weights ? ray_weights[r] : 1.0f / n_rays;
  p->pos = g_new(guint64, n);
  g_autofree float *rec = g_new(float, 6 * n * n_rays), *cnt = g_new(float, n);
  g_autofree gint32 *bin_at = tof ? g_new(gint32, n) : NULL;
  for (guint64 i = 0; i < n; i++) {
    guint64 j = first[sub[i]]++;
    p->pos[i] = j;
    for (guint r = 0; r < n_rays; r++)
      memcpy(rec + 6 * (n * r + j), ends + 6 * (n * r + i), 6 * sizeof(float));
    cnt[j] = counts ? counts[i] : 0;
    if (bin_at) bin_at[j] = tof_bin[i];
  }
  TlOperator *op = g_new0(TlOperator, 1);
  tl_operator_init(op, counts ? &tl_pet_lines_operator_class : &lines_no_counts_class, ctx, grid,
                   S, len);
  op->priv = p;
  const char *pj = projector ? projector : "siddon";
  g_autofree char *label = g_strdup_printf("pet-lines %s%s, %u ray%s, %u subset%s", pj,
                                           tof ? " tof" : "", n_rays, n_rays == 1 ? "" : "s", S,
                                           S == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  gboolean ok = (p->proj = tl_projector_new(ctx, pj, grid, error)) &&
                (!counts || ((p->counts = tl_array_new_float(ctx, n, error)) &&
                             tl_array_upload(p->counts, cnt, error))) &&
                (n_rays == 1 ||
                 (p->scratch = tl_array_new_float(ctx, tl_operator_max_subset_length(op), error)));
  if (ok && tof) ok = upload_tof(p, ctx, rec, bin_at, error);
  for (guint r = 0; ok && !tof && r < n_rays; r++)
    ok = (p->records[r] = tl_array_new(ctx, n, 6 * sizeof(float), error)) &&
         tl_array_upload(p->records[r], rec + 6 * n * r, error);
  if (!ok) {
    tl_operator_free(op);
    return NULL;
  }
  return op;
}

guint64 *tl_pet_lines_operator_order(const TlOperator *op) {
  if (!op || (op->klass != &tl_pet_lines_operator_class && op->klass != &lines_no_counts_class))
    return NULL;
  const LinesOp *p = op->priv;
  return g_memdup2(p->pos, sizeof(guint64) * p->n);
}

/* The view of each bin in sinogram order (segment, view, axial, tangential), for view subsets. */
static guint32 *views_of(const TlSinogram *s) {
  guint32 *vo = g_try_new(guint32, MAX(s->n_bins, 1));
  guint64 j = 0;
  for (guint seg = 0; vo && seg < s->n_segments; seg++)
    for (guint v = 0; v < s->n_views; v++)
      for (guint64 k = 0; k < (guint64)s->n_axial[seg] * s->n_tangential && j < s->n_bins; k++)
        vo[j++] = v;
  return vo;
}

TlOperator *tl_pet_lines_operator_new_sinogram(TlContext *ctx, const TlImageGrid *grid,
                                               const char *projector, const TlSinogram *sino,
                                               guint rays_t, guint rays_z, guint subsets,
                                               const TlImage *mu, GError **error) {
  if (mu && !tl_pet_check_attenuation(mu, grid, error)) return NULL;
  gboolean pairs = !sino->arc_corrected;
  guint n_rays = rays_t * rays_z;
  g_autofree float *w = g_new(float, MAX(MIN(n_rays, TL_SINOGRAM_ARC_MAX_RAYS), 1));
  g_autofree guint32 *view_of = NULL;
  g_autofree guint8 *live = NULL;
  g_autofree float *ends = NULL;
  if (pairs) {
    if (!(ends = tl_sinogram_pair_lines(sino, rays_t, rays_z, w, error)) ||
        (sino->block_positions && !(live = tl_sinogram_pair_crystals(sino, error))))
      return NULL;
    if (!(view_of = views_of(sino))) {
      g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%" G_GUINT64_FORMAT " bins: their "
                  "views do not fit in memory", sino->n_bins);
      return NULL;
    }
  } else if (!(ends = tl_sinogram_arc_lines(sino, rays_t, rays_z, w, &view_of, error))) {
    return NULL;
  }
  /* the views of subset k: v mod S = k, so a subset with no view is refused here, naming both */
  if (subsets > sino->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets of the %u views of %s data "
                "(expected at most one subset per view)", subsets, sino->n_views,
                pairs ? "crystal-pair" : "arc-corrected");
    return NULL;
  }
  g_autoptr(TlOperator) op = tl_pet_lines_operator_new(ctx, grid, projector, sino->n_bins, ends,
                                                       n_rays, w, sino->data, view_of, subsets,
                                                       error);
  if (!op || (!mu && !live)) return g_steal_pointer(&op);
  g_autoptr(TlStream) s = tl_stream_new(ctx, error);
  g_autoptr(TlArray) a = s ? tl_array_new_float(ctx, sino->n_bins, error) : NULL;
  g_autoptr(TlArray) m = NULL; /* read by the stream until it finishes */
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  if (!a) return NULL;
  if (mu) {
    /* D = exp(-A mu) over every subset, in data order (D is not set yet: A alone) */
    if (!(m = tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error)) ||
        !tl_array_upload(m, mu->data, error))
      return NULL;
    for (guint k = 0; k < subsets; k++) {
      g_autoptr(TlArray) v = tl_array_new_view(a, tl_operator_subset_first(op, k),
                                               tl_operator_subset_length(op, k), error);
      if (!v || !tl_operator_forward(op, s, k, m, v, error)) return NULL;
    }
    tl_expr_args_array(args, "a", a);
    tl_expr_args_set_label(args, "attenuation factors");
    if (!tl_expr_assign(ctx, s, "a = exp(-a)", args, error)) return NULL;
  }
  if (!tl_stream_finish(s, error)) return NULL;
  if (live) {
    /* the block gaps' bins weighted 0, in data order */
    g_autofree float *d = g_new(float, sino->n_bins);
    g_autofree guint64 *pos = tl_pet_lines_operator_order(op);
    if (mu && !tl_array_download(a, d, error)) return NULL;
    for (guint64 i = 0; i < sino->n_bins; i++)
      d[pos[i]] = live[i] ? (mu ? d[pos[i]] : 1.0f) : 0.0f;
    if (!tl_array_upload(a, d, error)) return NULL;
  }
  if (!tl_operator_set_diag(op, a, FALSE, error)) return NULL;
  return g_steal_pointer(&op);
}

TlOperator *tl_pet_lines_operator_new_arc(TlContext *ctx, const TlImageGrid *grid,
                                          const char *projector, const TlSinogram *sino,
                                          guint rays_t, guint rays_z, guint subsets,
                                          const TlImage *mu, GError **error) {
  /* crystal-pair data are refused here as before (tl_sinogram_arc_lines names them) */
  if (!sino->arc_corrected) {
    g_autofree float *none = tl_sinogram_arc_lines(sino, rays_t, rays_z, NULL, NULL, error);
    g_assert(!none);
    return NULL;
  }
  return tl_pet_lines_operator_new_sinogram(ctx, grid, projector, sino, rays_t, rays_z, subsets,
                                            mu, error);
}
