/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Reference projectors (see pet-ref.h). Slow and simple on purpose. */
#include "pet-ref.h"
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The tracers report each (voxel, weight) with the LOR parameter t in [0, 1] of its sample
 * point (Siddon: the middle of the voxel's chord; Joseph, TOR: the point on the plane), which
 * the TOF weight needs. */
typedef void (*RefVisitT)(guint64 voxel, double weight, double t, gpointer data);

static guint64 voxel_index(const TlImageGrid *g, const gint64 v[3]) {
  return v[0] + g->dims[0] * (v[1] + (guint64)g->dims[1] * v[2]);
}

/* Siddon (1985): the parameters alpha in [0, 1] at which the line p0 + alpha (p1 - p0) crosses
 * any voxel plane split it into segments each inside one voxel; the voxel is the one holding
 * the segment's midpoint (half-open voxels [i, i+1)), the weight the segment's length. */
static void ref_siddon(const TlImageGrid *g, const double *plane_lo, const double p0[3],
                       const double p1[3], RefVisitT visit, gpointer data) {
  double d[3], lo[3], len = 0;
  for (int k = 0; k < 3; k++) {
    d[k] = p1[k] - p0[k];
    lo[k] = plane_lo ? plane_lo[k] : g->origin_mm[k] - 0.5 * g->voxel_mm[k];
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
    if (inside) visit(voxel_index(g, v), l, mid, data);
  }
  g_free(alpha);
}

/* Joseph (1982): the dominant axis m is the one along which the line crosses the most voxels;
 * on each plane through voxel centres along m between the end points the image is bilinearly
 * interpolated (voxels outside count as zero) and weighted by the length between planes. */
static void ref_joseph(const TlImageGrid *g, const double p0[3], const double p1[3],
                       RefVisitT visit, gpointer data) {
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
        visit(voxel_index(g, v), wt, t, data);
      }
  }
}


/* Phi(y / s), the N(0, s^2) distribution function, and the N(0, s^2) density g(y). */
static double ncdf(double y, double s) { return 0.5 * erfc(-y / (s * G_SQRT2)); }
static double npdf(double y, double s) { return exp(-0.5 * (y / s) * (y / s)) / (s * sqrt(2 * G_PI)); }
static double ramp2(double y, double s) { return y * ncdf(y, s) + s * s * npdf(y, s); }

/* The hat H(x) = max(0, 1 - |x|) convolved with a Gaussian of sd s, in closed form: with
 * R(y) = y Phi(y/s) + s^2 g(y) (R'' = g), H = ramp(x+1) - 2 ramp(x) + ramp(x-1) gives
 * (H*G)(x) = R(x+1) - 2 R(x) + R(x-1). */
double tl_ref_tor_kernel(double x, double s) {
  if (s <= 0) return MAX(0.0, 1.0 - fabs(x));
  return ramp2(x + 1, s) - 2 * ramp2(x, s) + ramp2(x - 1, s);
}

/* Weights on one transverse axis of a TOR plane: the LOR crosses the plane at continuous
 * voxel-centre coordinate c; the kernel is truncated to |i - c| <= 3 s + 1 and scaled so its
 * weights over every integer i in that window (inside the image or not) sum to 1, the hat's
 * sum. Fills idx/wt, returns the count. */
static guint tor_axis(double c, double s, gint64 *idx, double *wt, guint cap) {
  double r = 3 * s + 1, sum = 0;
  guint n = 0;
  for (gint64 i = (gint64)ceil(c - r); i <= (gint64)floor(c + r) && n < cap; i++) {
    double k = tl_ref_tor_kernel(i - c, s);
    idx[n] = i;
    wt[n++] = k;
    sum += k;
  }
  for (guint j = 0; j < n; j++) wt[j] /= sum;
  return n;
}

/* Tube of response: Joseph's planes, with each transverse axis a's hat replaced by the hat
 * convolved with the marginal on that axis of a Gaussian (sigma = FWHM / 2.3548) in the
 * perpendicular distance to the LOR: sigma_a = sigma sqrt(1 + (d_a / d_m)^2) / vox_a voxels
 * (d in mm). */
static void ref_tor(const TlImageGrid *g, const double p0[3], const double p1[3],
                    double fwhm_mm, RefVisitT visit, gpointer data) {
  double d[3], dv[3], len = 0;
  for (int k = 0; k < 3; k++) {
    d[k] = p1[k] - p0[k];
    dv[k] = fabs(d[k]) / g->voxel_mm[k];
    len += d[k] * d[k];
  }
  len = sqrt(len);
  int m = (dv[0] >= dv[1] && dv[0] >= dv[2]) ? 0 : (dv[1] >= dv[2] ? 1 : 2);
  if (dv[m] == 0) return;
  int ax[2] = {m == 0 ? 1 : 0, m == 2 ? 1 : 2};
  double step = len / dv[m], sig = fwhm_mm / (2 * sqrt(2 * G_LN2)), s[2];
  for (int a = 0; a < 2; a++)
    s[a] = sig * sqrt(1 + (d[ax[a]] / d[m]) * (d[ax[a]] / d[m])) / g->voxel_mm[ax[a]];
  enum { CAP = 4096 };
  gint64 *idx = g_new(gint64, 2 * CAP);
  double *wt = g_new(double, 2 * CAP);
  for (guint k = 0; k < g->dims[m]; k++) {
    double t = (g->origin_mm[m] + k * (double)g->voxel_mm[m] - p0[m]) / d[m];
    if (t < 0 || t > 1) continue;
    guint n[2];
    for (int a = 0; a < 2; a++) {
      double c = (p0[ax[a]] + t * d[ax[a]] - g->origin_mm[ax[a]]) / g->voxel_mm[ax[a]];
      n[a] = tor_axis(c, s[a], idx + a * CAP, wt + a * CAP, CAP);
    }
    for (guint i = 0; i < n[0]; i++)
      for (guint j = 0; j < n[1]; j++) {
        gint64 v[3] = {0};
        v[m] = k;
        v[ax[0]] = idx[i];
        v[ax[1]] = idx[CAP + j];
        if (v[ax[0]] < 0 || v[ax[0]] >= (gint64)g->dims[ax[0]] || v[ax[1]] < 0 ||
            v[ax[1]] >= (gint64)g->dims[ax[1]])
          continue;
        double w = wt[i] * wt[CAP + j] * step;
        if (w > 0) visit(voxel_index(g, v), w, t, data);
      }
  }
  g_free(idx);
  g_free(wt);
}

/* tl-projector.h's TOF weight, written out with C's erf: the Gaussian of sd sigma around the
 * true position x, integrated over bin b = [c - w/2, c + w/2] (c = b w) with both ends
 * clamped to +- n sigma around x, divided by the truncated Gaussian's mass erf(n / sqrt 2). */
double tl_ref_tof_weight(double sigma_mm, double bin_mm, double n_sigma, int bin, double x_mm) {
  double c = bin * bin_mm, lim = n_sigma * sigma_mm;
  double hi = CLAMP(c + 0.5 * bin_mm - x_mm, -lim, lim), lo = CLAMP(c - 0.5 * bin_mm - x_mm, -lim, lim);
  double phi_hi = 0.5 * erf(hi / (sigma_mm * G_SQRT2)), phi_lo = 0.5 * erf(lo / (sigma_mm * G_SQRT2));
  return (phi_hi - phi_lo) / erf(n_sigma / G_SQRT2);
}

typedef struct {
  const TlRefModel *m;
  double len;
  TlRefVisit visit;
  gpointer data;
} ModelData;

/* Multiplies each weight by the TOF weight at its sample point, x = (t - 1/2) |p1 - p0| from
 * the midpoint, positive towards p1 (crystal b). */
static void model_visit(guint64 v, double w, double t, gpointer data) {
  ModelData *md = data;
  const TlRefTof *tof = md->m->tof;
  if (tof) w *= tl_ref_tof_weight(tof->sigma_mm, tof->bin_mm, tof->n_sigma, tof->bin, (t - 0.5) * md->len);
  if (w != 0) md->visit(v, w, md->data);
}

void tl_ref_trace_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                        const double p1[3], TlRefVisit visit, gpointer data) {
  ModelData md = {m, 0, visit, data};
  for (int k = 0; k < 3; k++) md.len += (p1[k] - p0[k]) * (p1[k] - p0[k]);
  md.len = sqrt(md.len);
  if (m->kind == TL_REF_SIDDON)
    ref_siddon(g, m->plane_lo, p0, p1, model_visit, &md);
  else if (m->kind == TL_REF_JOSEPH)
    ref_joseph(g, p0, p1, model_visit, &md);
  else
    ref_tor(g, p0, p1, m->tor_fwhm_mm, model_visit, &md);
}

void tl_ref_trace_tor(const TlImageGrid *g, const double p0[3], const double p1[3],
                      double fwhm_mm, TlRefVisit visit, gpointer data) {
  TlRefModel m = {.kind = TL_REF_TOR, .tor_fwhm_mm = fwhm_mm};
  tl_ref_trace_model(&m, g, p0, p1, visit, data);
}

void tl_ref_trace(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                  TlRefVisit visit, gpointer data) {
  TlRefModel m = {.kind = kind, .tor_fwhm_mm = TL_REF_TOR_FWHM_DEFAULT};
  tl_ref_trace_model(&m, g, p0, p1, visit, data);
}

typedef struct {
  const float *image;
  double sum;
} FwdData;

static void fwd_visit(guint64 v, double w, gpointer data) {
  FwdData *f = data;
  f->sum += w * f->image[v];
}

double tl_ref_forward_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                            const double p1[3], const float *image) {
  FwdData f = {image, 0};
  tl_ref_trace_model(m, g, p0, p1, fwd_visit, &f);
  return f.sum;
}

double tl_ref_forward(TlRefKind kind, const TlImageGrid *g, const double p0[3],
                      const double p1[3], const float *image) {
  TlRefModel m = {.kind = kind, .tor_fwhm_mm = TL_REF_TOR_FWHM_DEFAULT};
  return tl_ref_forward_model(&m, g, p0, p1, image);
}

typedef struct {
  double *image, w;
} BackData;

static void back_visit(guint64 v, double w, gpointer data) {
  BackData *b = data;
  b->image[v] += b->w * w;
}

void tl_ref_back_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                       const double p1[3], double w, double *image) {
  BackData b = {image, w};
  tl_ref_trace_model(m, g, p0, p1, back_visit, &b);
}

void tl_ref_back(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                 double w, double *image) {
  TlRefModel m = {.kind = kind, .tor_fwhm_mm = TL_REF_TOR_FWHM_DEFAULT};
  tl_ref_back_model(&m, g, p0, p1, w, image);
}
