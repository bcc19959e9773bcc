/* Reference projectors (see pet-ref.h). Slow and simple on purpose. */
#include "pet-ref.h"
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Siddon (1985): the parameters alpha in [0, 1] at which the line p0 + alpha (p1 - p0) crosses
 * any voxel plane split it into segments each inside one voxel; the voxel is the one holding
 * the segment's midpoint (half-open voxels [i, i+1)), the weight the segment's length. */
static void ref_siddon(const TlImageGrid *g, const double p0[3], const double p1[3],
                       TlRefVisit visit, gpointer data) {
  double d[3], lo[3], len = 0;
  for (int k = 0; k < 3; k++) {
    d[k] = p1[k] - p0[k];
    lo[k] = g->origin_mm[k] - 0.5 * g->voxel_mm[k];
    len += d[k] * d[k];
  }
  len = sqrt(len);
  guint cap = g->dims[0] + g->dims[1] + g->dims[2] + 6, n = 0;
  double *alpha = g_new(double, cap);
  alpha[n++] = 0.0;
  alpha[n++] = 1.0;
  for (int k = 0; k < 3; k++) {
    if (d[k] == 0) continue;
    for (guint i = 0; i <= g->dims[k]; i++) {
      double a = (lo[k] + i * (double)g->voxel_mm[k] - p0[k]) / d[k];
      if (a > 0 && a < 1) alpha[n++] = a;
    }
  }
  qsort(alpha, n, sizeof(double), cmp_double);
  for (guint s = 0; s + 1 < n; s++) {
    double l = (alpha[s + 1] - alpha[s]) * len;
    if (l <= 0) continue;
    double mid = 0.5 * (alpha[s] + alpha[s + 1]);
    gint64 v[3];
    gboolean inside = TRUE;
    for (int k = 0; k < 3; k++) {
      v[k] = (gint64)floor((p0[k] + mid * d[k] - lo[k]) / g->voxel_mm[k]);
      inside = inside && v[k] >= 0 && v[k] < (gint64)g->dims[k];
    }
    if (inside) visit(v[0] + g->dims[0] * (v[1] + (guint64)g->dims[1] * v[2]), l, data);
  }
  g_free(alpha);
}

/* Joseph (1982): the dominant axis m is the one along which the line crosses the most voxels;
 * on each plane through voxel centres along m between the end points the image is bilinearly
 * interpolated (voxels outside count as zero) and weighted by the length between planes. */
static void ref_joseph(const TlImageGrid *g, const double p0[3], const double p1[3],
                       TlRefVisit visit, gpointer data) {
  double d[3], dv[3], len = 0;
  for (int k = 0; k < 3; k++) {
    d[k] = p1[k] - p0[k];
    dv[k] = fabs(d[k]) / g->voxel_mm[k];
    len += d[k] * d[k];
  }
  len = sqrt(len);
  int m = (dv[0] >= dv[1] && dv[0] >= dv[2]) ? 0 : (dv[1] >= dv[2] ? 1 : 2);
  if (dv[m] == 0) return;
  int u = m == 0 ? 1 : 0, w = m == 2 ? 1 : 2;
  double step = len / dv[m];
  for (guint k = 0; k < g->dims[m]; k++) {
    double c = g->origin_mm[m] + k * (double)g->voxel_mm[m]; /* centre plane */
    double t = (c - p0[m]) / d[m];
    if (t < 0 || t > 1) continue;
    /* continuous voxel-centre coordinates on the plane */
    double cu = (p0[u] + t * d[u] - g->origin_mm[u]) / g->voxel_mm[u];
    double cw = (p0[w] + t * d[w] - g->origin_mm[w]) / g->voxel_mm[w];
    double fu = floor(cu), fw = floor(cw);
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        gint64 iu = (gint64)fu + a, iw = (gint64)fw + b;
        if (iu < 0 || iu >= (gint64)g->dims[u] || iw < 0 || iw >= (gint64)g->dims[w]) continue;
        double wt = (a ? cu - fu : 1 - (cu - fu)) * (b ? cw - fw : 1 - (cw - fw)) * step;
        if (wt <= 0) continue;
        gint64 v[3];
        v[m] = k;
        v[u] = iu;
        v[w] = iw;
        visit(v[0] + g->dims[0] * (v[1] + (guint64)g->dims[1] * v[2]), wt, data);
      }
  }
}

void tl_ref_trace(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                  TlRefVisit visit, gpointer data) {
  if (kind == TL_REF_SIDDON)
    ref_siddon(g, p0, p1, visit, data);
  else
    ref_joseph(g, p0, p1, visit, data);
}

typedef struct {
  const float *image;
  double sum;
} FwdData;

static void fwd_visit(guint64 v, double w, gpointer data) {
  FwdData *f = data;
  f->sum += w * f->image[v];
}

double tl_ref_forward(TlRefKind kind, const TlImageGrid *g, const double p0[3],
                      const double p1[3], const float *image) {
  FwdData f = {image, 0};
  tl_ref_trace(kind, g, p0, p1, fwd_visit, &f);
  return f.sum;
}

typedef struct {
  double *image, w;
} BackData;

static void back_visit(guint64 v, double w, gpointer data) {
  BackData *b = data;
  b->image[v] += b->w * w;
}

void tl_ref_back(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                 double w, double *image) {
  BackData b = {image, w};
  tl_ref_trace(kind, g, p0, p1, back_visit, &b);
}
