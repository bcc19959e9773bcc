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
  TlArray **records; /* per ray: 6 floats per line, data order */
  TlArray *counts;
  TlArray *scratch;  /* several rays: one subset's values */
  guint64 n;
  guint64 *pos;     /* given line i -> data position */
} LinesOp;

static TlLors lines_lors(TlOperator *op, guint subset, guint ray) {
  LinesOp *p = op->priv;
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
  g_free(p->records);
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

TlOperator *tl_pet_lines_operator_new(TlContext *ctx, const TlImageGrid *grid,
                                      const char *projector, guint64 n, const float *ends,
                                      guint n_rays, const float *ray_weights,
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
  double total = 0;
  for (guint64 i = 0; i < n; i++) {
    if (!isfinite(counts[i]) || counts[i] < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "line %" G_GUINT64_FORMAT ": count %g "
                  "(expected finite, >= 0)", i, counts[i]);
      return NULL;
    }
    total += counts[i];
  }
  if (!(total > 0)) {
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
  p->weights = g_new(float, n_rays);
  for (guint r = 0; r < n_rays; r++) p->weights[r] = ray_weights ? ray_weights[r] : 1.0f / n_rays;
  p->pos = g_new(guint64, n);
  g_autofree float *rec = g_new(float, 6 * n * n_rays), *cnt = g_new(float, n);
  for (guint64 i = 0; i < n; i++) {
    guint64 j = first[sub[i]]++;
    p->pos[i] = j;
    for (guint r = 0; r < n_rays; r++)
      memcpy(rec + 6 * (n * r + j), ends + 6 * (n * r + i), 6 * sizeof(float));
    cnt[j] = counts[i];
  }
  TlOperator *op = g_new0(TlOperator, 1);
  tl_operator_init(op, &tl_pet_lines_operator_class, ctx, grid, S, len);
  op->priv = p;
  const char *pj = projector ? projector : "siddon";
  g_autofree char *label = g_strdup_printf("pet-lines %s, %u ray%s, %u subset%s", pj, n_rays,
                                           n_rays == 1 ? "" : "s", S, S == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  gboolean ok = (p->proj = tl_projector_new(ctx, pj, grid, error)) &&
                (p->counts = tl_array_new_float(ctx, n, error)) &&
                tl_array_upload(p->counts, cnt, error) &&
                (n_rays == 1 ||
                 (p->scratch = tl_array_new_float(ctx, tl_operator_max_subset_length(op), error)));
  for (guint r = 0; ok && r < n_rays; r++)
    ok = (p->records[r] = tl_array_new(ctx, n, 6 * sizeof(float), error)) &&
         tl_array_upload(p->records[r], rec + 6 * n * r, error);
  if (!ok) {
    tl_operator_free(op);
    return NULL;
  }
  return op;
}

guint64 *tl_pet_lines_operator_order(const TlOperator *op) {
  if (!op || op->klass != &tl_pet_lines_operator_class) return NULL;
  const LinesOp *p = op->priv;
  return g_memdup2(p->pos, sizeof(guint64) * p->n);
}

TlOperator *tl_pet_lines_operator_new_arc(TlContext *ctx, const TlImageGrid *grid,
                                          const char *projector, const TlSinogram *sino,
                                          guint rays_t, guint rays_z, guint subsets,
                                          const TlImage *mu, GError **error) {
  if (mu && !tl_pet_check_attenuation(mu, grid, error)) return NULL;
  guint n_rays = rays_t * rays_z;
  g_autofree float *w = g_new(float, MAX(MIN(n_rays, TL_SINOGRAM_ARC_MAX_RAYS), 1));
  g_autofree guint32 *view_of = NULL;
  g_autofree float *ends = tl_sinogram_arc_lines(sino, rays_t, rays_z, w, &view_of, error);
  if (!ends) return NULL;
  /* the views of subset k: v mod S = k, so a subset with no view is refused here, naming both */
  if (subsets > sino->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets of the %u views of "
                "arc-corrected data (expected at most one subset per view)", subsets,
                sino->n_views);
    return NULL;
  }
  g_autoptr(TlOperator) op = tl_pet_lines_operator_new(ctx, grid, projector, sino->n_bins, ends,
                                                       n_rays, w, sino->data, view_of, subsets,
                                                       error);
  if (!op || !mu) return g_steal_pointer(&op);
  /* D = exp(-A mu) over every subset, in data order (D is not set yet: A alone) */
  g_autoptr(TlStream) s = tl_stream_new(ctx, error);
  g_autoptr(TlArray) m = s ? tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error) : NULL;
  g_autoptr(TlArray) a = m ? tl_array_new_float(ctx, sino->n_bins, error) : NULL;
  if (!a || !tl_array_upload(m, mu->data, error)) return NULL;
  for (guint k = 0; k < subsets; k++) {
    g_autoptr(TlArray) v = tl_array_new_view(a, tl_operator_subset_first(op, k),
                                             tl_operator_subset_length(op, k), error);
    if (!v || !tl_operator_forward(op, s, k, m, v, error)) return NULL;
  }
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "a", a);
  tl_expr_args_set_label(args, "attenuation factors");
  if (!tl_expr_assign(ctx, s, "a = exp(-a)", args, error) || !tl_stream_finish(s, error) ||
      !tl_operator_set_diag(op, a, FALSE, error))
    return NULL;
  return g_steal_pointer(&op);
}
