/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT volumes in z-slabs: the split by the allocation limit, transfers, and the loops of the
 * projections over the slabs (tl-ct-slabs.h; why slabs: docs/large-arrays.md). */
#include "tl-ct-slabs.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct _TlCtSlabs {
  TlImageGrid grid;
  guint n;
  TlArray **arrays;
  guint *first, *planes;
};

static guint64 device_limit(TlContext *ctx) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  guint64 limit = info->max_memory_allocation_size ? info->max_memory_allocation_size : G_MAXUINT64;
  return info->max_buffer_size ? MIN(limit, info->max_buffer_size) : limit;
}

gboolean tl_ct_slab_limit(TlContext *ctx, guint64 *bytes, GError **error) {
  *bytes = device_limit(ctx);
  const char *env = g_getenv("TOMOLAB_CT_SLAB_BYTES");
  if (!env || !*env) return TRUE;
  char *end = NULL;
  errno = 0;
  guint64 v = g_ascii_strtoull(env, &end, 10);
  if (errno || end == env || *end || v == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOMOLAB_CT_SLAB_BYTES is '%s' (expected a positive number of bytes)", env);
    return FALSE;
  }
  *bytes = MIN(*bytes, v);
  return TRUE;
}

void tl_ct_slabs_free(TlCtSlabs *v) {
  if (!v) return;
  for (guint i = 0; i < v->n; i++) tl_array_free(v->arrays[i]);
  g_free(v->arrays);
  g_free(v->first);
  g_free(v->planes);
  g_free(v);
}

TlCtSlabs *tl_ct_slabs_new(TlContext *ctx, const TlImageGrid *grid, GError **error) {
  guint64 limit;
  if (!tl_ct_slab_limit(ctx, &limit, error)) return NULL;
  const guint *d = grid->dims;
  guint64 nvox = (guint64)d[0] * d[1] * d[2], plane = 4 * (guint64)d[0] * d[1];
  if (nvox == 0 || nvox > TL_CT_MAX_VOXELS || plane > limit) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "CT volume %u x %u x %u (%" G_GUINT64_FORMAT " bytes) cannot be held in slabs: "
                "a plane takes %" G_GUINT64_FORMAT " bytes, a slab at most %" G_GUINT64_FORMAT
                " bytes (the device's largest allocation or TOMOLAB_CT_SLAB_BYTES), the CT "
                "kernels index 1 to %" G_GUINT64_FORMAT " voxels", d[0], d[1], d[2], 4 * nvox,
                plane, limit, TL_CT_MAX_VOXELS);
    return NULL;
  }
  guint per = (guint)MIN(limit / plane, (guint64)d[2]);
  g_autoptr(TlCtSlabs) v = g_new0(TlCtSlabs, 1);
  v->grid = *grid;
  guint n = (d[2] + per - 1) / per;
  v->arrays = g_new0(TlArray *, n);
  v->first = g_new(guint, n);
  v->planes = g_new(guint, n);
  for (guint i = 0; i < n; i++) {
    v->first[i] = i * per;
    v->planes[i] = MIN(per, d[2] - i * per);
    GError *e = NULL;
    v->arrays[i] = tl_array_new_float(ctx, plane / 4 * v->planes[i], &e);
    if (!v->arrays[i]) {
      g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                  "CT volume %u x %u x %u (%" G_GUINT64_FORMAT " bytes in %u slabs of at most "
                  "%u planes): slab %u: %s", d[0], d[1], d[2], 4 * nvox, n, per, i, e->message);
      g_error_free(e);
      return NULL;
    }
    v->n = i + 1;
  }
  return g_steal_pointer(&v);
}

const TlImageGrid *tl_ct_slabs_grid(const TlCtSlabs *v) { return &v->grid; }
guint tl_ct_slabs_count(const TlCtSlabs *v) { return v->n; }

TlArray *tl_ct_slabs_array(const TlCtSlabs *v, guint i, guint *first_plane, guint *planes) {
  g_return_val_if_fail(i < v->n, NULL);
  if (first_plane) *first_plane = v->first[i];
  if (planes) *planes = v->planes[i];
  return v->arrays[i];
}

static guint64 plane_voxels(const TlCtSlabs *v) {
  return (guint64)v->grid.dims[0] * v->grid.dims[1];
}

gboolean tl_ct_slabs_upload(TlCtSlabs *v, const float *data, GError **error) {
  for (guint i = 0; i < v->n; i++)
    if (!tl_array_upload(v->arrays[i], data + plane_voxels(v) * v->first[i], error)) return FALSE;
  return TRUE;
}

gboolean tl_ct_slabs_download(const TlCtSlabs *v, float *data, GError **error) {
  for (guint i = 0; i < v->n; i++)
    if (!tl_array_download(v->arrays[i], data + plane_voxels(v) * v->first[i], error))
      return FALSE;
  return TRUE;
}

static gboolean check_grid(const TlCtProjector *p, const TlCtSlabs *x, GError **error) {
  const TlImageGrid *a = tl_ct_projector_grid(p), *b = &x->grid;
  if (memcmp(a, b, sizeof *a) == 0) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "CT slabs: a volume of %u x %u x %u voxels given to a projector of %u x %u x %u "
              "(expected the projector's grid)", b->dims[0], b->dims[1], b->dims[2],
              a->dims[0], a->dims[1], a->dims[2]);
  return FALSE;
}

/* One slab (the whole volume) goes the unsplit way: every projector and back projection mode. */
gboolean tl_ct_slabs_forward(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                             const TlCtSlabs *x, TlArray *proj, gboolean accumulate,
                             GError **error) {
  if (!check_grid(p, x, error)) return FALSE;
  if (x->n == 1) return tl_ct_projector_forward(p, s, views, x->arrays[0], proj, accumulate, error);
  for (guint i = 0; i < x->n; i++)
    if (!tl_ct_projector_forward_slab(p, s, views, x->arrays[i], x->first[i], x->planes[i], proj,
                                      accumulate || i > 0, error))
      return FALSE;
  return TRUE;
}

gboolean tl_ct_slabs_back(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                          const TlArray *proj, TlCtSlabs *x, gboolean accumulate,
                          GError **error) {
  if (!check_grid(p, x, error)) return FALSE;
  if (x->n == 1) return tl_ct_projector_back(p, s, views, proj, x->arrays[0], accumulate, error);
  for (guint i = 0; i < x->n; i++)
    if (!tl_ct_projector_back_slab(p, s, views, proj, x->arrays[i], x->first[i], x->planes[i],
                                   accumulate, error))
      return FALSE;
  return TRUE;
}

static gboolean fdk_back(TlCtProjector *bp, TlStream *s, const TlCtViews *v,
                         const TlArray *filtered, gboolean accumulate, gpointer x,
                         GError **error) {
  return tl_ct_slabs_back(bp, s, v, filtered, x, accumulate, error);
}

gboolean tl_ct_slabs_fdk(TlCtFdk *f, TlStream *s, const TlArray *proj, TlCtSlabs *x,
                         GError **error) {
  return tl_ct_fdk_run_with(f, s, proj, fdk_back, x, error);
}
