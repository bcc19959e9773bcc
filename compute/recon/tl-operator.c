/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The common part of every TlOperator: subset ranges, the diagonal D around classes that do
 * not apply it themselves, and the default sensitivity A_s^T D_s 1. */
#include "tl-operator.h"
#include "expr/tl-expr.h"
#include <math.h>

void tl_operator_init(TlOperator *op, const TlOperatorClass *klass, TlContext *ctx,
                      const TlImageGrid *grid, guint n_subsets, const guint64 *lengths) {
  op->klass = klass;
  op->ctx = ctx;
  op->grid = *grid;
  op->n_subsets = n_subsets;
  op->first = g_new0(guint64, n_subsets + 1);
  for (guint s = 0; s < n_subsets; s++) op->first[s + 1] = op->first[s] + lengths[s];
}

void tl_operator_free(TlOperator *op) {
  if (!op) return;
  if (op->klass && op->klass->finalize) op->klass->finalize(op);
  tl_array_free(op->diag);
  tl_array_free(op->scratch);
  g_free(op->first);
  g_free(op->label);
  g_free(op);
}

const char *tl_operator_name(const TlOperator *op) { return op->klass->name; }
const char *tl_operator_label(const TlOperator *op) {
  return op->label ? op->label : op->klass->name;
}
void tl_operator_set_label(TlOperator *op, const char *label) {
  g_free(op->label);
  op->label = g_strdup(label);
}
const TlImageGrid *tl_operator_grid(const TlOperator *op) { return &op->grid; }
guint64 tl_operator_n_voxels(const TlOperator *op) { return tl_image_grid_n_voxels(&op->grid); }
guint tl_operator_n_subsets(const TlOperator *op) { return op->n_subsets; }
guint64 tl_operator_n_data(const TlOperator *op) { return op->first[op->n_subsets]; }
guint64 tl_operator_subset_first(const TlOperator *op, guint s) { return op->first[s]; }
guint64 tl_operator_subset_length(const TlOperator *op, guint s) {
  return op->first[s + 1] - op->first[s];
}
guint64 tl_operator_max_subset_length(const TlOperator *op) {
  guint64 m = 0;
  for (guint s = 0; s < op->n_subsets; s++) m = MAX(m, tl_operator_subset_length(op, s));
  return m;
}
gboolean tl_operator_is_listmode(const TlOperator *op) {
  return (op->klass->flags & TL_OPERATOR_LISTMODE) != 0;
}
TlContext *tl_operator_context(const TlOperator *op) { return op->ctx; }
const TlArray *tl_operator_diag(const TlOperator *op) { return op->diag; }

static gboolean check_subset(const TlOperator *op, guint s, const TlArray *data, const char *what,
                             GError **error) {
  if (s >= op->n_subsets) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: subset %u of an operator with %u",
                tl_operator_label(op), s, op->n_subsets);
    return FALSE;
  }
  if (data && (tl_array_length(data) != tl_operator_subset_length(op, s) ||
               tl_array_elem_size(data) != 4)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: %s of %" G_GUINT64_FORMAT " elements for subset %u of %" G_GUINT64_FORMAT,
                tl_operator_label(op), what, tl_array_length(data), s,
                tl_operator_subset_length(op, s));
    return FALSE;
  }
  return TRUE;
}

static gboolean check_image(const TlOperator *op, const TlArray *x, GError **error) {
  if (tl_array_length(x) == tl_operator_n_voxels(op) && tl_array_elem_size(x) == 4) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s: image of %" G_GUINT64_FORMAT " elements, the grid has %" G_GUINT64_FORMAT,
              tl_operator_label(op), tl_array_length(x), tl_operator_n_voxels(op));
  return FALSE;
}

gboolean tl_operator_set_diag(TlOperator *op, const TlArray *d, gboolean combine,
                              GError **error) {
  if (!d) {
    g_clear_pointer(&op->diag, tl_array_free);
    return TRUE;
  }
  if (tl_array_length(d) != tl_operator_n_data(op) || tl_array_elem_size(d) != 4) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: per-datum factors D of %" G_GUINT64_FORMAT " elements, the operator has %"
                G_GUINT64_FORMAT " data", tl_operator_label(op), tl_array_length(d),
                tl_operator_n_data(op));
    return FALSE;
  }
  g_autoptr(TlStream) s = tl_stream_new(op->ctx, error);
  if (!s) return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "d", (TlArray *)d);
  double bad = 0;
  /* D must be finite and >= 0: a NaN factor would silently zero or poison its data */
  if (!tl_expr_reduce(op->ctx, s, "sum(select(d >= 0, select(d < 3.0e38, 0, 1), 1))", args, &bad,
                      error))
    return FALSE;
  if (bad > 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: %.0f per-datum factors are negative, infinite or NaN (expected finite "
                "values >= 0)", tl_operator_label(op), bad);
    return FALSE;
  }
  if (!op->diag || !combine) {
    TlArray *n = tl_array_new_float(op->ctx, tl_operator_n_data(op), error);
    if (!n) return FALSE;
    tl_array_free(op->diag);
    op->diag = n;
    tl_expr_args_array(args, "D", op->diag);
    tl_expr_args_set_label(args, "set D");
    return tl_expr_assign(op->ctx, s, "D = d", args, error) && tl_stream_finish(s, error);
  }
  tl_expr_args_array(args, "D", op->diag);
  tl_expr_args_set_label(args, "combine D");
  return tl_expr_assign(op->ctx, s, "D = D * d", args, error) && tl_stream_finish(s, error);
}

/* View of D for subset s (caller frees). */
static TlArray *diag_view(TlOperator *op, guint s, GError **error) {
  return tl_array_new_view(op->diag, op->first[s], tl_operator_subset_length(op, s), error);
}

static gboolean base_diag(const TlOperator *op) {
  return op->diag && !(op->klass->flags & TL_OPERATOR_NATIVE_DIAG);
}

gboolean tl_operator_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                             TlArray *y, GError **error) {
  if (!check_subset(op, subset, y, "forward output", error) || !check_image(op, x, error) ||
      !op->klass->forward(op, s, subset, x, y, error))
    return FALSE;
  if (!base_diag(op)) return TRUE;
  g_autoptr(TlArray) d = diag_view(op, subset, error);
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "y", y);
  tl_expr_args_array(args, "d", d);
  tl_expr_args_set_label(args, "apply D");
  return d && tl_expr_assign(op->ctx, s, "y = d * y", args, error);
}

gboolean tl_operator_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                             TlArray *x, GError **error) {
  if (!check_subset(op, subset, w, "adjoint input", error) || !check_image(op, x, error))
    return FALSE;
  if (!base_diag(op)) return op->klass->adjoint(op, s, subset, w, x, error);
  /* D w into the scratch (one per operator: the stream orders its reuse) */
  if (!op->scratch &&
      !(op->scratch = tl_array_new_float(op->ctx, tl_operator_max_subset_length(op), error)))
    return FALSE;
  g_autoptr(TlArray) d = diag_view(op, subset, error);
  g_autoptr(TlArray) t = d ? tl_array_new_view(op->scratch, 0, tl_array_length(w), error) : NULL;
  if (!t) return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "t", t);
  tl_expr_args_array(args, "w", (TlArray *)w);
  tl_expr_args_array(args, "d", d);
  tl_expr_args_set_label(args, "apply D");
  return tl_expr_assign(op->ctx, s, "t = d * w", args, error) &&
         op->klass->adjoint(op, s, subset, t, x, error);
}

gboolean tl_operator_sensitivity(TlOperator *op, TlStream *s, guint subset, TlArray *out,
                                 GError **error) {
  if (!check_subset(op, subset, NULL, NULL, error) || !check_image(op, out, error)) return FALSE;
  if (op->klass->sensitivity) return op->klass->sensitivity(op, s, subset, out, error);
  /* A_s^T D_s 1 over the stored data */
  guint64 n = tl_operator_subset_length(op, subset);
  g_autoptr(TlArray) ones = tl_array_new_float(op->ctx, MAX(n, 1), error);
  g_autoptr(TlArray) v = ones ? tl_array_new_view(ones, 0, n, error) : NULL;
  if (!v) return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "o", ones);
  tl_expr_args_set_label(args, "sensitivity ones");
  /* the stream must finish before `ones` goes */
  return tl_expr_assign(op->ctx, s, "o = 1", args, error) && tl_stream_zero(s, out, error) &&
         tl_operator_adjoint(op, s, subset, v, out, error) && tl_stream_finish(s, error);
}

gboolean tl_operator_has_counts(const TlOperator *op) { return op->klass->counts != NULL; }

gboolean tl_operator_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  if (!op->klass->counts) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "%s holds no measured counts: give the problem its data", tl_operator_label(op));
    return FALSE;
  }
  if (tl_array_length(m) != tl_operator_n_data(op)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "%s: counts array of %" G_GUINT64_FORMAT " elements for %" G_GUINT64_FORMAT
                " data", tl_operator_label(op), tl_array_length(m), tl_operator_n_data(op));
    return FALSE;
  }
  return op->klass->counts(op, s, m, error);
}

gboolean tl_operator_has_em(const TlOperator *op) { return op->klass->em != NULL; }

gboolean tl_operator_kernel_used(const TlOperator *op, guint subset, gboolean em, const char *name,
                                 GPtrArray *runs) {
  if (!op->klass->kernel_used) return TRUE;
  g_autoptr(GPtrArray) scratch = runs ? NULL : g_ptr_array_new();
  return op->klass->kernel_used(op, MIN(subset, op->n_subsets - 1), em, name,
                                runs ? runs : scratch);
}

gboolean tl_operator_em(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                        TlArray *corr, TlArray *partials, GError **error) {
  if (!op->klass->em) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "%s has no fused EM pass",
                tl_operator_label(op));
    return FALSE;
  }
  if (base_diag(op)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "%s: the fused EM pass cannot apply per-datum factors", tl_operator_label(op));
    return FALSE;
  }
  return check_subset(op, subset, NULL, NULL, error) && check_image(op, x, error) &&
         check_image(op, corr, error) && op->klass->em(op, s, subset, x, corr, partials, error);
}

guint64 tl_operator_em_partials(TlOperator *op, guint subset) {
  return op->klass->em_partials ? op->klass->em_partials(op, subset) : 0;
}
