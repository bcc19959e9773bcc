/* CPU line integral through a voxel image, exact intersection lengths. */
#include "tl-ray-integral.h"
#include <math.h>
#include <string.h>

double tl_ray_integral(const TlImage *im, const double a[3], const double b[3], double stop) {
  const TlImageGrid *g = &im->grid;
  double d[3], lo[3], t0 = 0.0, t1 = 1.0;
  for (int k = 0; k < 3; k++) {
    d[k] = b[k] - a[k];
    lo[k] = g->origin_mm[k] - 0.5 * g->voxel_mm[k];
    double hi = lo[k] + g->dims[k] * (double)g->voxel_mm[k];
    if (d[k] == 0.0) {
      if (a[k] < lo[k] || a[k] >= hi) return 0.0;
      continue;
    }
    double ta = (lo[k] - a[k]) / d[k], tb = (hi - a[k]) / d[k];
    t0 = MAX(t0, MIN(ta, tb));
    t1 = MIN(t1, MAX(ta, tb));
  }
  if (t0 >= t1) return 0.0;
  double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  double stop_t = stop / len; /* compare in units of t, multiply once at the end */
  /* start in the voxel holding the entry point (clamped against round-off at the faces) */
  double tm = t0;
  int idx[3], step[3];
  double tmax[3], tdelta[3];
  for (int k = 0; k < 3; k++) {
    double p = a[k] + tm * d[k];
    int i = (int)floor((p - lo[k]) / g->voxel_mm[k]);
    idx[k] = CLAMP(i, 0, (int)g->dims[k] - 1);
    if (d[k] > 0) {
      step[k] = 1;
      tmax[k] = (lo[k] + (idx[k] + 1) * (double)g->voxel_mm[k] - a[k]) / d[k];
      tdelta[k] = g->voxel_mm[k] / d[k];
    } else if (d[k] < 0) {
      step[k] = -1;
      tmax[k] = (lo[k] + idx[k] * (double)g->voxel_mm[k] - a[k]) / d[k];
      tdelta[k] = -g->voxel_mm[k] / d[k];
    } else {
      step[k] = 0;
      tmax[k] = G_MAXDOUBLE;
      tdelta[k] = 0;
    }
  }
  const gint64 stride[3] = {1, g->dims[0], (gint64)g->dims[0] * g->dims[1]};
  gint64 at = idx[0] + stride[1] * idx[1] + stride[2] * idx[2];
  double t = t0, sum = 0.0;
  while (t < t1) {
    int m = tmax[0] < tmax[1] ? (tmax[0] < tmax[2] ? 0 : 2) : (tmax[1] < tmax[2] ? 1 : 2);
    double tn = MIN(tmax[m], t1);
    sum += im->data[at] * (tn - t);
    if (sum > stop_t) break;
    t = tn;
    idx[m] += step[m];
    if (idx[m] < 0 || idx[m] >= (int)g->dims[m]) break;
    at += step[m] * stride[m];
    tmax[m] += tdelta[m];
  }
  return sum * len;
}

gboolean tl_ray_march(const TlImage *im, const double a[3], const double d[3], double target,
                      double *t_hit) {
  const TlImageGrid *g = &im->grid;
  double lo[3], t0 = 0.0, t1 = G_MAXDOUBLE;
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
  /* the same voxel walk as tl_ray_integral, in mm along the unit direction */
  int idx[3], step[3];
  double tmax[3], tdelta[3];
  for (int k = 0; k < 3; k++) {
    double p = a[k] + t0 * d[k];
    int i = (int)floor((p - lo[k]) / g->voxel_mm[k]);
    idx[k] = CLAMP(i, 0, (int)g->dims[k] - 1);
    if (d[k] > 0) {
      step[k] = 1;
      tmax[k] = (lo[k] + (idx[k] + 1) * (double)g->voxel_mm[k] - a[k]) / d[k];
      tdelta[k] = g->voxel_mm[k] / d[k];
    } else if (d[k] < 0) {
      step[k] = -1;
      tmax[k] = (lo[k] + idx[k] * (double)g->voxel_mm[k] - a[k]) / d[k];
      tdelta[k] = -g->voxel_mm[k] / d[k];
    } else {
      step[k] = 0;
      tmax[k] = G_MAXDOUBLE;
      tdelta[k] = 0;
    }
  }
  const gint64 stride[3] = {1, g->dims[0], (gint64)g->dims[0] * g->dims[1]};
  gint64 at = idx[0] + stride[1] * idx[1] + stride[2] * idx[2];
  double t = t0, sum = 0.0;
  while (t < t1) {
    int m = tmax[0] < tmax[1] ? (tmax[0] < tmax[2] ? 0 : 2) : (tmax[1] < tmax[2] ? 1 : 2);
    double tn = MIN(tmax[m], t1), mu = im->data[at];
    if (mu > 0 && sum + mu * (tn - t) >= target) {
      *t_hit = t + (target - sum) / mu; /* mu is constant within the voxel */
      return TRUE;
    }
    sum += mu * (tn - t);
    t = tn;
    idx[m] += step[m];
    if (idx[m] < 0 || idx[m] >= (int)g->dims[m]) break;
    at += step[m] * stride[m];
    tmax[m] += tdelta[m];
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
