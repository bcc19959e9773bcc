/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET operator over explicit lines (tl-pet-lines.h). */
#include "tl-pet-lines.h"
#include "pet/project/tl-projector.h"
#include <math.h>
#include <string.h>

typedef struct {
  TlProjector *proj;
  TlArray *records; /* 6 floats per line, data order */
  TlArray *counts;
  guint64 n;
  guint64 *pos;     /* given line i -> data position */
} LinesOp;

static TlLors lines_lors(TlOperator *op, guint subset) {
  LinesOp *p = op->priv;
  return (TlLors){.kind = TL_LORS_END_POINTS,
                  .records = p->records,
                  .first = tl_operator_subset_first(op, subset),
                  .count = tl_operator_subset_length(op, subset)};
}

static gboolean lines_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                              TlArray *y, GError **error) {
  TlLors l = lines_lors(op, subset);
  return tl_projector_forward(((LinesOp *)op->priv)->proj, s, &l, x, y, error);
}

static gboolean lines_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                              TlArray *x, GError **error) {
  TlLors l = lines_lors(op, subset);
  return tl_projector_back(((LinesOp *)op->priv)->proj, s, &l, w, x, error);
}

static gboolean lines_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  LinesOp *p = op->priv;
  return tl_stream_copy(s, p->counts, 0, m, 0, tl_array_size_bytes(m), error);
}

static void lines_finalize(TlOperator *op) {
  LinesOp *p = op->priv;
  if (!p) return;
  if (p->proj) tl_projector_free(p->proj);
  if (p->records) tl_array_free(p->records);
  if (p->counts) tl_array_free(p->counts);
  g_free(p->pos);
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
                                      const float *counts, const guint32 *group, guint subsets,
                                      GError **error) {
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
  double total = 0;
  for (guint64 i = 0; i < n; i++) {
    for (int k = 0; k < 6; k++)
      if (!isfinite(ends[6 * i + k])) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "line %" G_GUINT64_FORMAT ": end "
                    "point coordinate %d is %g (expected finite mm)", i, k, ends[6 * i + k]);
        return NULL;
      }
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
  p->pos = g_new(guint64, n);
  g_autofree float *rec = g_new(float, 6 * n), *cnt = g_new(float, n);
  for (guint64 i = 0; i < n; i++) {
    guint64 j = first[sub[i]]++;
    p->pos[i] = j;
    memcpy(rec + 6 * j, ends + 6 * i, 6 * sizeof(float));
    cnt[j] = counts[i];
  }
  TlOperator *op = g_new0(TlOperator, 1);
  tl_operator_init(op, &tl_pet_lines_operator_class, ctx, grid, S, len);
  op->priv = p;
  const char *pj = projector ? projector : "siddon";
  g_autofree char *label = g_strdup_printf("pet-lines %s, %u subset%s", pj, S, S == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  if (!(p->proj = tl_projector_new(ctx, pj, grid, error)) ||
      !(p->records = tl_array_new(ctx, n, 6 * sizeof(float), error)) ||
      !tl_array_upload(p->records, rec, error) ||
      !(p->counts = tl_array_new_float(ctx, n, error)) || !tl_array_upload(p->counts, cnt, error)) {
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
