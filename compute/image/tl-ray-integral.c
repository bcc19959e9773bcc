/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CPU line integral through a voxel image, exact intersection lengths. */
#include "tl-ray-integral.h"
#include <math.h>
#include <string.h>

/* Amanatides & Woo's voxel walk along a + t d, shared by the integral and the march: the
 * clip of [t0, t1] to the grid, then the voxels in order, each with its [t, tn) span. */
typedef struct {
  const TlImage *im;
  double t, t1;          /* the current span starts at t; the walk ends at t1 */
  int idx[3], step[3];
  double tmax[3], tdelta[3];
  gint64 at, stride[3];
} Walk;

/* FALSE when the line misses the grid within [t0, t1]. */
static gboolean walk_begin(Walk *w, const TlImage *im, const double a[3], const double d[3],
                           double t0, double t1) {
  const TlImageGrid *g = &im->grid;
  double lo[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = g->origin_mm[k] - 0.5 * g->voxel_mm[k];
    double hi = lo[k] + g->dims[k] * (double)g->voxel_mm[k];
    if (d[k] == 0.0) {
      if (a[k] < lo[k] || a[k] >= hi) return FALSE;
      continue;
    }
    double ta = (lo[k] - a[k]) / d[k], tb = (hi - a[k]) / d[k];
    t0 = MAX(t0, MIN(ta, tb));
    t1 = MIN(t1, MAX(ta, tb));
  }
  if (t0 >= t1) return FALSE;
  /* start in the voxel holding the entry point (clamped against round-off at the faces) */
  for (int k = 0; k < 3; k++) {
    double p = a[k] + t0 * d[k];
    int i = (int)floor((p - lo[k]) / g->voxel_mm[k]);
    w->idx[k] = CLAMP(i, 0, (int)g->dims[k] - 1);
    if (d[k] > 0) {
      w->step[k] = 1;
      w->tmax[k] = (lo[k] + (w->idx[k] + 1) * (double)g->voxel_mm[k] - a[k]) / d[k];
      w->tdelta[k] = g->voxel_mm[k] / d[k];
    } else if (d[k] < 0) {
      w->step[k] = -1;
      w->tmax[k] = (lo[k] + w->idx[k] * (double)g->voxel_mm[k] - a[k]) / d[k];
      w->tdelta[k] = -g->voxel_mm[k] / d[k];
    } else {
      w->step[k] = 0;
      w->tmax[k] = G_MAXDOUBLE;
      w->tdelta[k] = 0;
    }
  }
  w->im = im;
  w->t = t0, w->t1 = t1;
  w->stride[0] = 1, w->stride[1] = g->dims[0], w->stride[2] = (gint64)g->dims[0] * g->dims[1];
  w->at = w->idx[0] + w->stride[1] * w->idx[1] + w->stride[2] * w->idx[2];
  return TRUE;
}

/* The current voxel's value and the end of its span; FALSE once the walk is over. */
static gboolean walk_span(const Walk *w, double *tn, float *value) {
  if (!(w->t < w->t1)) return FALSE;
  int m = w->tmax[0] < w->tmax[1] ? (w->tmax[0] < w->tmax[2] ? 0 : 2)
                                  : (w->tmax[1] < w->tmax[2] ? 1 : 2);
  *tn = MIN(w->tmax[m], w->t1);
  *value = w->im->data[w->at];
  return TRUE;
}

/* On to the next voxel (the span ended at tn); FALSE when it leaves the grid. */
static gboolean walk_next(Walk *w, double tn) {
  int m = w->tmax[0] < w->tmax[1] ? (w->tmax[0] < w->tmax[2] ? 0 : 2)
                                  : (w->tmax[1] < w->tmax[2] ? 1 : 2);
  w->t = tn;
  w->idx[m] += w->step[m];
  if (w->idx[m] < 0 || w->idx[m] >= (int)w->im->grid.dims[m]) return FALSE;
  w->at += w->step[m] * w->stride[m];
  w->tmax[m] += w->tdelta[m];
  return TRUE;
}

double tl_ray_integral(const TlImage *im, const double a[3], const double b[3], double stop) {
  double d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  Walk w;
  if (!walk_begin(&w, im, a, d, 0.0, 1.0)) return 0.0;
  double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  double stop_t = stop / len; /* compare in units of t, multiply once at the end */
  double sum = 0.0, tn;
  float v;
  while (walk_span(&w, &tn, &v)) {
    sum += v * (tn - w.t);
    if (sum > stop_t || !walk_next(&w, tn)) break;
  }
  return sum * len;
}

gboolean tl_ray_march(const TlImage *im, const double a[3], const double d[3], double target,
                      double *t_hit) {
  Walk w;
  if (!walk_begin(&w, im, a, d, 0.0, G_MAXDOUBLE)) return FALSE;
  /* in mm along the unit direction */
  double sum = 0.0, tn;
  float mu;
  while (walk_span(&w, &tn, &mu)) {
    if (mu > 0 && sum + mu * (tn - w.t) >= target) {
      *t_hit = w.t + (target - sum) / mu; /* mu is constant within the voxel */
      return TRUE;
    }
    sum += mu * (tn - w.t);
    if (!walk_next(&w, tn)) break;
  }
  return FALSE;
}

TlImage *tl_image_crop_to_support(const TlImage *im) {
  const TlImageGrid *g = &im->grid;
  guint lo[3] = {G_MAXUINT, G_MAXUINT, G_MAXUINT}, hi[3] = {0, 0, 0};
  for (guint z = 0; z < g->dims[2]; z++)
    for (guint y = 0; y < g->dims[1]; y++) {
      const float *row = im->data + (guint64)g->dims[0] * (y + (guint64)g->dims[1] * z);
      for (guint x = 0; x < g->dims[0]; x++)
        if (row[x] != 0.0f) {
          guint p[3] = {x, y, z};
          for (int d = 0; d < 3; d++) lo[d] = MIN(lo[d], p[d]), hi[d] = MAX(hi[d], p[d]);
        }
    }
  if (lo[0] == G_MAXUINT) return NULL;
  TlImageGrid c = *g;
  for (int d = 0; d < 3; d++) {
    c.dims[d] = hi[d] - lo[d] + 1;
    c.origin_mm[d] = (float)(g->origin_mm[d] + lo[d] * (double)g->voxel_mm[d]);
  }
  TlImage *out = tl_image_new(&c);
  for (guint z = 0; z < c.dims[2]; z++)
    for (guint y = 0; y < c.dims[1]; y++)
      memcpy(out->data + (guint64)c.dims[0] * (y + (guint64)c.dims[1] * z),
             im->data + lo[0] + (guint64)g->dims[0] * (y + lo[1] + (guint64)g->dims[1] * (z + lo[2])),
             sizeof(float) * c.dims[0]);
  return out;
}
