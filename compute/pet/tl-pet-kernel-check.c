/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Installing an edited projector kernel with its check (tl-pet-kernel-check.h). */
#include "tl-pet-kernel-check.h"
#include "tl-pet-operator.h"
#include <math.h>
#include <string.h>

typedef struct {
  float *y; /* A x over the check's LORs */
  float *b; /* A^T w */
} Pair;

static gboolean project(TlContext *ctx, TlOperator *op, const TlArray *x, const TlArray *w,
                        guint64 nd, guint64 nv, Pair *out, GError **error) {
  g_autoptr(TlStream) s = tl_stream_new(ctx, error);
  if (!s) return FALSE;
  g_autoptr(TlArray) y = tl_array_new(ctx, nd, sizeof(float), error);
  g_autoptr(TlArray) b = y ? tl_array_new(ctx, nv, sizeof(float), error) : NULL;
  if (!b || !tl_stream_zero(s, b, error) || !tl_operator_forward(op, s, 0, x, y, error) ||
      !tl_operator_adjoint(op, s, 0, w, b, error) || !tl_stream_finish(s, error))
    return FALSE;
  out->y = g_new(float, nd);
  out->b = g_new(float, nv);
  return tl_array_download(y, out->y, error) && tl_array_download(b, out->b, error);
}

static double max_rel(const float *now, const float *before, guint64 n) {
  double d = 0, m = 0;
  for (guint64 i = 0; i < n; i++) {
    d = MAX(d, fabs((double)now[i] - before[i]));
    m = MAX(m, fabs((double)before[i]));
  }
  return m > 0 ? d / m : d;
}

static double dot(const float *a, const float *b, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

gboolean tl_pet_kernel_install_checked(TlContext *ctx, const char *name, const guint32 *spirv,
                                       gsize size_bytes, const TlScanner *scanner,
                                       const TlImageGrid *grid, const char *projector,
                                       guint n_lors, TlPetKernelCheck *out, GError **error) {
  *out = (TlPetKernelCheck){0, NAN, NAN, NAN};
  gboolean pair = g_str_has_prefix(name, "pet_forward") || g_str_has_prefix(name, "pet_back");
  if (!pair || !scanner || !grid || n_lors == 0)
    return tl_kernels_replace(ctx, name, spirv, size_bytes, error);
  if (!tl_image_grid_validate(grid, error)) return FALSE;

  /* random detectable pairs; a fixed seed, so the numbers shown compare between edits */
  g_autoptr(TlListmode) lm = tl_listmode_new(tl_scanner_copy(scanner), n_lors);
  g_autoptr(GRand) r = g_rand_new_with_seed(2026);
  for (guint i = 0; i < n_lors; i++) {
    TlEvent *e = &lm->events[i];
    guint tries = 0;
    do {
      e->a = g_rand_int_range(r, 0, scanner->n_crystals);
      e->b = g_rand_int_range(r, 0, scanner->n_crystals);
    } while (!tl_scanner_pair_allowed(scanner, e->a, e->b) && ++tries < 1000);
    if (tries == 1000) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "kernel check: scanner '%s' gave no detectable pair in 1000 draws",
                  scanner->name ? scanner->name : "");
      return FALSE;
    }
  }
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = projector;
  o.subsets = 1;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, grid, &o, error);
  if (!op) return FALSE;
  guint64 nd = tl_operator_n_data(op), nv = tl_image_grid_n_voxels(grid);
  g_autofree float *xh = g_new(float, nv), *wh = g_new(float, nd);
  for (guint64 i = 0; i < nv; i++) xh[i] = (float)g_rand_double(r);
  for (guint64 j = 0; j < nd; j++) wh[j] = (float)g_rand_double(r);
  g_autoptr(TlArray) x = tl_array_new(ctx, nv, sizeof(float), error);
  g_autoptr(TlArray) w = x ? tl_array_new(ctx, nd, sizeof(float), error) : NULL;
  if (!w || !tl_array_upload(x, xh, error) || !tl_array_upload(w, wh, error)) return FALSE;
  Pair before = {0}, after = {0};
  /* what was in use, to put back if the new kernel cannot run (its words live as long as ctx) */
  gboolean was_replaced = tl_kernels_replaced(ctx, name);
  gsize prev_size = 0;
  const char *prev_label = NULL;
  const guint32 *prev = tl_kernels_spirv(ctx, name, &prev_size, &prev_label);
  gboolean ok = project(ctx, op, x, w, nd, nv, &before, error) &&
                tl_kernels_replace(ctx, name, spirv, size_bytes, error);
  if (ok && !project(ctx, op, x, w, nd, nv, &after, error)) {
    ok = FALSE;
    if (was_replaced) tl_kernels_replace(ctx, name, prev, prev_size, NULL);
    else tl_kernels_revert(ctx, name);
  }
  if (ok) {
    double fwd = dot(after.y, wh, nd), back = dot(xh, after.b, nv);
    double m = MAX(fabs(fwd), fabs(back));
    *out = (TlPetKernelCheck){n_lors, m > 0 ? fabs(fwd - back) / m : 0,
                              max_rel(after.y, before.y, nd), max_rel(after.b, before.b, nv)};
  }
  g_free(before.y), g_free(before.b), g_free(after.y), g_free(after.b);
  return ok;
}
