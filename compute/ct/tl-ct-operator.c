/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Class "ct": the matched CT projector pairs behind the TlOperator interface, with
 * interleaved view subsets (tl-ct-operator.h). D is applied by the operator base. */
#include "tl-ct-operator.h"

typedef struct {
  TlCtProjector *proj;
  TlCtViews *views; /* per subset */
} CtOp;

static void ct_finalize(TlOperator *op) {
  CtOp *c = op->priv;
  if (!c) return;
  tl_ct_projector_free(c->proj);
  g_free(c->views);
  g_free(c);
}

static gboolean ct_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                           TlArray *y, GError **error) {
  CtOp *c = op->priv;
  return tl_ct_projector_forward(c->proj, s, &c->views[subset], x, y, FALSE, error);
}

static gboolean ct_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                           TlArray *x, GError **error) {
  CtOp *c = op->priv;
  return tl_ct_projector_back(c->proj, s, &c->views[subset], w, x, TRUE, error);
}

const TlOperatorClass tl_ct_operator_class = {
    .name = "ct",
    .modality = "ct",
    .summary = "CT projection views (joseph, siddon or raycast), interleaved view subsets",
    .flags = 0,
    .finalize = ct_finalize,
    .forward = ct_forward,
    .adjoint = ct_adjoint,
};

TlOperator *tl_ct_operator_new(TlContext *ctx, const TlCtGeometry *geometry,
                               const TlImageGrid *grid, TlCtMethod method, guint subsets,
                               GError **error) {
  if (method != TL_CT_JOSEPH && method != TL_CT_SIDDON && method != TL_CT_RAYCAST) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT operator: projector '%s' is not a matched forward/adjoint pair (use joseph, "
                "siddon or raycast)", tl_ct_method_name(method));
    return NULL;
  }
  if (subsets == 0 || subsets > geometry->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT operator: %u subsets of %u views (expected 1 to %u)", subsets,
                geometry->n_views, geometry->n_views);
    return NULL;
  }
  /* the solver's images are single arrays: no slabs here */
  if (!tl_ct_volume_check_one_array(ctx, grid, error)) return NULL;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, geometry, grid, method, error);
  if (!p) return NULL;
  CtOp *c = g_new0(CtOp, 1);
  c->views = g_new(TlCtViews, subsets);
  g_autofree guint64 *lengths = g_new(guint64, subsets);
  for (guint s = 0; s < subsets; s++) {
    c->views[s] = tl_ct_views_subset(geometry, s, subsets);
    lengths[s] = tl_ct_views_n_pixels(geometry, &c->views[s]);
  }
  c->proj = g_steal_pointer(&p);
  TlOperator *op = g_new0(TlOperator, 1);
  tl_operator_init(op, &tl_ct_operator_class, ctx, grid, subsets, lengths);
  op->priv = c;
  g_autofree char *label = g_strdup_printf("ct %s, %u views, %u subset%s",
                                           tl_ct_method_name(method), geometry->n_views,
                                           subsets, subsets == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  return op;
}

TlCtProjector *tl_ct_operator_projector(TlOperator *op) {
  g_return_val_if_fail(op && op->klass == &tl_ct_operator_class, NULL);
  return ((CtOp *)op->priv)->proj;
}

TlCtViews tl_ct_operator_views(const TlOperator *op, guint subset) {
  g_return_val_if_fail(op && op->klass == &tl_ct_operator_class && subset < op->n_subsets,
                       (TlCtViews){0});
  return ((CtOp *)op->priv)->views[subset];
}

/* Both directions: one device copy per view between geometry order and data order. */
static gboolean permute(TlOperator *op, TlStream *s, const TlArray *src, TlArray *dst,
                        gboolean to_data, GError **error) {
  if (!op || op->klass != &tl_ct_operator_class) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s is not a CT operator",
                op ? tl_operator_label(op) : "(null)");
    return FALSE;
  }
  CtOp *c = op->priv;
  const TlCtGeometry *g = tl_ct_projector_geometry(c->proj);
  guint64 npix = (guint64)g->det_u * g->det_v, n = tl_operator_n_data(op);
  const TlArray *arrays[2] = {src, dst};
  for (int i = 0; i < 2; i++) {
    if (tl_array_elem_size(arrays[i]) == 4 && tl_array_length(arrays[i]) == n) continue;
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: %s of %" G_GUINT64_FORMAT " elements of %zu bytes; expected %"
                G_GUINT64_FORMAT " floats (%u views of %u x %u)", tl_operator_label(op),
                (i == 0) == to_data ? "projection array" : "data vector",
                tl_array_length(arrays[i]), tl_array_elem_size(arrays[i]), n, g->n_views,
                g->det_u, g->det_v);
    return FALSE;
  }
  /* the copies read and write in any order: the two arrays must not share bytes */
  if (tl_array_buffer(src) == tl_array_buffer(dst) &&
      tl_array_buffer_offset(src) < tl_array_buffer_offset(dst) + 4 * n &&
      tl_array_buffer_offset(dst) < tl_array_buffer_offset(src) + 4 * n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: the projection array and the data vector overlap (use two arrays)",
                tl_operator_label(op));
    return FALSE;
  }
  for (guint sub = 0; sub < op->n_subsets; sub++) {
    const TlCtViews *v = &c->views[sub];
    for (guint k = 0; k < v->count; k++) {
      guint64 geom = 4 * npix * (v->first + (guint64)k * v->stride);
      guint64 data = 4 * (op->first[sub] + npix * k);
      if (!tl_stream_copy(s, src, to_data ? geom : data, dst, to_data ? data : geom, 4 * npix,
                          error))
        return FALSE;
    }
  }
  return TRUE;
}

gboolean tl_ct_operator_gather(TlOperator *op, TlStream *s, const TlArray *proj_view_major,
                               TlArray *data, GError **error) {
  return permute(op, s, proj_view_major, data, TRUE, error);
}

gboolean tl_ct_operator_scatter(TlOperator *op, TlStream *s, const TlArray *data,
                                TlArray *proj_view_major, GError **error) {
  return permute(op, s, data, proj_view_major, FALSE, error);
}
