/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PETRIC's metrics (tl-metrics.h): masks kept as voxel index lists, sums in double. */
#include "tl-metrics.h"
#include "tl-error.h"
#include <math.h>

typedef struct {
  char *name;
  GArray *index; /* guint64 voxel indices */
  double ref_mean;
} Region;

struct _TlMetrics {
  TlImage *ref;
  guint64 n;
  Region object, background; /* background.index NULL = none */
  GPtrArray *voi;            /* Region * */
  double norm;
};

static void region_clear(Region *r) {
  g_clear_pointer(&r->name, g_free);
  g_clear_pointer(&r->index, g_array_unref);
}

static void region_free(gpointer p) {
  region_clear(p);
  g_free(p);
}

static double ref_mean(const TlMetrics *m, const GArray *index) {
  double s = 0;
  for (guint i = 0; i < index->len; i++) s += m->ref->data[g_array_index(index, guint64, i)];
  return s / index->len;
}

/* The normalisation PETRIC uses (the background's mean), else the whole object's. */
static void update_norm(TlMetrics *m) {
  m->norm = m->background.index ? m->background.ref_mean : m->object.ref_mean;
}

TlMetrics *tl_metrics_new(const TlImage *reference, GError **error) {
  if (!reference || !tl_image_grid_validate(&reference->grid, error)) {
    if (!reference)
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "metrics: no reference image");
    return NULL;
  }
  TlMetrics *m = g_new0(TlMetrics, 1);
  m->ref = tl_image_copy(reference);
  m->n = tl_image_grid_n_voxels(&reference->grid);
  m->voi = g_ptr_array_new_with_free_func(region_free);
  m->object.name = g_strdup("whole object");
  m->object.index = g_array_sized_new(FALSE, FALSE, sizeof(guint64), (guint)m->n);
  for (guint64 i = 0; i < m->n; i++) g_array_append_val(m->object.index, i);
  m->object.ref_mean = ref_mean(m, m->object.index);
  update_norm(m);
  return m;
}

void tl_metrics_free(TlMetrics *m) {
  if (!m) return;
  tl_image_free(m->ref);
  region_clear(&m->object);
  region_clear(&m->background);
  g_ptr_array_unref(m->voi);
  g_free(m);
}

/* The voxels of `mask` (non-zero) as a region named `name`. */
static gboolean region_from_mask(const TlMetrics *m, const char *name, const TlImage *mask,
                                 Region *out, GError **error) {
  if (!mask || !tl_image_grid_equal(&mask->grid, &m->ref->grid)) {
    g_autofree char *want = tl_image_grid_key(&m->ref->grid);
    g_autofree char *got = mask ? tl_image_grid_key(&mask->grid) : g_strdup("no image");
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "metrics: the %s mask is on grid %s: expected the reference's grid %s", name, got,
                want);
    return FALSE;
  }
  GArray *index = g_array_new(FALSE, FALSE, sizeof(guint64));
  for (guint64 i = 0; i < m->n; i++)
    if (mask->data[i] != 0) g_array_append_val(index, i);
  if (index->len == 0) {
    g_array_unref(index);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "metrics: the %s mask holds no voxel (expected some non-zero voxels)", name);
    return FALSE;
  }
  *out = (Region){.name = g_strdup(name), .index = index, .ref_mean = ref_mean(m, index)};
  return TRUE;
}

gboolean tl_metrics_set_object(TlMetrics *m, const TlImage *mask, GError **error) {
  Region r;
  if (!region_from_mask(m, "whole object", mask, &r, error)) return FALSE;
  region_clear(&m->object);
  m->object = r;
  update_norm(m);
  return TRUE;
}

gboolean tl_metrics_set_background(TlMetrics *m, const TlImage *mask, GError **error) {
  Region r;
  if (!region_from_mask(m, "background", mask, &r, error)) return FALSE;
  if (!(r.ref_mean > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "metrics: the reference's mean over the background mask is %g: expected > 0 "
                "(the metrics are relative to it)", r.ref_mean);
    region_clear(&r);
    return FALSE;
  }
  region_clear(&m->background);
  m->background = r;
  update_norm(m);
  return TRUE;
}

gboolean tl_metrics_add_voi(TlMetrics *m, const char *name, const TlImage *mask, GError **error) {
  Region r;
  if (!region_from_mask(m, name ? name : "VOI", mask, &r, error)) return FALSE;
  g_ptr_array_add(m->voi, g_memdup2(&r, sizeof r));
  return TRUE;
}

gboolean tl_metrics_add_roi(TlMetrics *m, const char *name, const TlRoi *roi, GError **error) {
  g_autoptr(TlImage) mask = tl_image_new(&m->ref->grid);
  const guint *d = m->ref->grid.dims;
  for (guint k = 0; k < d[2]; k++)
    for (guint j = 0; j < d[1]; j++)
      for (guint i = 0; i < d[0]; i++)
        mask->data[i + (guint64)d[0] * (j + (guint64)d[1] * k)] =
            tl_roi_contains(roi, &m->ref->grid, i, j, k);
  return tl_metrics_add_voi(m, name, mask, error);
}

/* Whether voxel i of the grid is in any of rois[0..n). */
static void mask_rois(const TlImageGrid *g, const TlRoi *rois, guint n, float *mask) {
  const guint *d = g->dims;
  for (guint k = 0; k < d[2]; k++)
    for (guint j = 0; j < d[1]; j++)
      for (guint i = 0; i < d[0]; i++)
        for (guint r = 0; r < n; r++)
          if (tl_roi_contains(&rois[r], g, i, j, k)) {
            mask[i + (guint64)d[0] * (j + (guint64)d[1] * k)] = 1;
            break;
          }
}

gboolean tl_metrics_add_nema(TlMetrics *m, const TlNemaLayout *layout, GError **error) {
  if (!tl_image_grid_equal(&layout->grid, &m->ref->grid)) {
    g_autofree char *got = tl_image_grid_key(&layout->grid);
    g_autofree char *want = tl_image_grid_key(&m->ref->grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "metrics: the NEMA layout is on grid %s: expected the reference's %s", got, want);
    return FALSE;
  }
  g_autoptr(TlImage) bg = tl_image_new(&m->ref->grid);
  mask_rois(&m->ref->grid, layout->background[0], layout->n_background, bg->data);
  if (!tl_metrics_set_background(m, bg, error)) return FALSE;
  for (guint s = 0; s < TL_NEMA_N_SPHERES; s++) {
    g_autofree char *name = g_strdup_printf("sphere %g mm", layout->diameter_mm[s]);
    g_autoptr(TlImage) v = tl_image_new(&m->ref->grid);
    mask_rois(&m->ref->grid, &layout->hot[s], 1, v->data);
    if (!tl_metrics_add_voi(m, name, v, error)) return FALSE;
  }
  return TRUE;
}

guint tl_metrics_n_voi(const TlMetrics *m) { return m->voi->len; }
const char *tl_metrics_voi_name(const TlMetrics *m, guint v) {
  return v < m->voi->len ? ((Region *)m->voi->pdata[v])->name : NULL;
}
const TlImageGrid *tl_metrics_grid(const TlMetrics *m) { return &m->ref->grid; }
guint tl_metrics_n_values(const TlMetrics *m) { return 2 + m->voi->len; }
double tl_metrics_norm(const TlMetrics *m) { return m->norm; }

static double region_rmse(const TlMetrics *m, const Region *r, const float *x) {
  double s = 0;
  for (guint i = 0; i < r->index->len; i++) {
    guint64 v = g_array_index(r->index, guint64, i);
    double d = (double)x[v] - m->ref->data[v];
    s += d * d;
  }
  return sqrt(s / r->index->len) / m->norm;
}

gboolean tl_metrics_evaluate(const TlMetrics *m, const float *image, gsize n, double *values,
                             GError **error) {
  if (n != m->n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "metrics: the image has %" G_GSIZE_FORMAT " voxels: expected the reference's %"
                G_GUINT64_FORMAT, n, m->n);
    return FALSE;
  }
  values[0] = region_rmse(m, &m->object, image);
  values[1] = m->background.index ? region_rmse(m, &m->background, image) : NAN;
  for (guint v = 0; v < m->voi->len; v++) {
    const Region *r = m->voi->pdata[v];
    double s = 0;
    for (guint i = 0; i < r->index->len; i++) s += image[g_array_index(r->index, guint64, i)];
    values[2 + v] = fabs(s / r->index->len - r->ref_mean) / m->norm;
  }
  return TRUE;
}

gboolean tl_metrics_met(const TlMetrics *m, const double *values) {
  /* !(a <= b) so that a NAN rmse (a zero norm) never counts as met */
  if (!(values[0] <= TL_METRICS_RMSE_TARGET)) return FALSE;
  if (m->background.index && !(values[1] <= TL_METRICS_BACKGROUND_TARGET)) return FALSE;
  for (guint v = 0; v < m->voi->len; v++)
    if (!(values[2 + v] <= TL_METRICS_VOI_TARGET)) return FALSE;
  return TRUE;
}

void tl_target_init(TlTarget *t, guint consecutive) {
  *t = (TlTarget){.consecutive = MAX(consecutive, 1), .first = NAN, .reached = NAN};
}

gboolean tl_target_push(TlTarget *t, double time, gboolean met) {
  if (!isnan(t->reached)) return TRUE;
  if (!met) {
    t->run = 0;
    t->first = NAN;
    return FALSE;
  }
  if (t->run++ == 0) t->first = time;
  if (t->run >= t->consecutive) t->reached = t->first;
  return !isnan(t->reached);
}
