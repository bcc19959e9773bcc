/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/ct-cpu: the plain C + OpenMP references of bench/ct (ct-cpu.h). */
#include "ct-cpu.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-ramp.h"
#include <complex.h>
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* One view record of shaders/ct/ct_common.glsl: P[12], Qa[9], Qd[9], wref, pad. */
#define VIEW_FLOATS 32
#define BIG 3.0e38f

gboolean ct_cpu_init(CtCpu *c, TlCtProjector *p, GError **error) {
  memset(c, 0, sizeof *c);
  c->g = tl_ct_projector_geometry(p);
  c->grid = *tl_ct_projector_grid(p);
  c->n_views = c->g->n_views;
  const TlArray *t = tl_ct_projector_views_table(p);
  if (tl_array_length(t) != (guint64)VIEW_FLOATS * c->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "bench/ct-cpu: the view table has %" G_GUINT64_FORMAT " floats, expected %u x %d",
                tl_array_length(t), c->n_views, VIEW_FLOATS);
    return FALSE;
  }
  c->views = g_new(float, VIEW_FLOATS * (gsize)c->n_views);
  for (int a = 0; a < 3; a++) c->corner[a] = c->grid.origin_mm[a] - 0.5f * c->grid.voxel_mm[a];
  return tl_array_download((TlArray *)t, c->views, error);
}

void ct_cpu_clear(CtCpu *c) { g_clear_pointer(&c->views, g_free); }

typedef struct {
  float a[3], d[3], t0, t1;
} Ray;

/* ct_ray(): A = Qa (u, v, 1), D = Qd (u, v, 1) normalised, both in voxel units. */
static Ray make_ray(const CtCpu *c, const float *w, float u, float v) {
  const float *Qa = w + 12, *Qd = w + 21;
  float A[3], q[3];
  for (int i = 0; i < 3; i++) {
    A[i] = Qa[3 * i] * u + Qa[3 * i + 1] * v + Qa[3 * i + 2];
    q[i] = Qd[3 * i] * u + Qd[3 * i + 1] * v + Qd[3 * i + 2];
  }
  float len = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
  Ray r;
  for (int i = 0; i < 3; i++) {
    r.a[i] = (A[i] - c->corner[i]) / c->grid.voxel_mm[i];
    r.d[i] = (q[i] / len) / c->grid.voxel_mm[i];
  }
  r.t0 = c->g->beam == TL_CT_CONE ? -w[30] * len : -BIG;
  r.t1 = BIG;
  return r;
}

static int clip(float a, float d, float lo, float hi, float *t0, float *t1) {
  if (d == 0.0f) return a >= lo && a < hi;
  float ta = (lo - a) / d, tb = (hi - a) / d;
  *t0 = fmaxf(*t0, fminf(ta, tb));
  *t1 = fminf(*t1, fmaxf(ta, tb));
  return *t0 <= *t1;
}

/* ct_joseph_walk(): back = 0 returns sum a_jn img[n]; back = 1 adds a_jn y into img[n]. */
static float joseph_walk(const CtCpu *c, const Ray *r, float *img, int back, float y) {
  const guint *dims = c->grid.dims;
  float ad[3] = {fabsf(r->d[0]), fabsf(r->d[1]), fabsf(r->d[2])};
  int m = (ad[0] >= ad[1] && ad[0] >= ad[2]) ? 0 : (ad[1] >= ad[2] ? 1 : 2);
  int u = m == 0 ? 1 : 0, v = m == 2 ? 1 : 2;
  int n[3] = {(int)dims[0], (int)dims[1], (int)dims[2]};
  float t0 = r->t0, t1 = r->t1;
  if (!clip(r->a[m], r->d[m], 0.0f, (float)n[m], &t0, &t1) ||
      !clip(r->a[u], r->d[u], -0.5f, n[u] + 0.5f, &t0, &t1) ||
      !clip(r->a[v], r->d[v], -0.5f, n[v] + 0.5f, &t0, &t1))
    return 0;
  float c0 = r->a[m] + t0 * r->d[m], c1 = r->a[m] + t1 * r->d[m];
  int klo = (int)fminf(fmaxf(ceilf(fminf(c0, c1) - 0.5f), 0.0f), (float)n[m]);
  int khi = (int)fminf(fmaxf(floorf(fmaxf(c0, c1) - 0.5f), -1.0f), (float)(n[m] - 1));
  float su = r->d[u] / r->d[m], sv = r->d[v] / r->d[m], wl = 1.0f / ad[m];
  size_t stride[3] = {1, dims[0], (size_t)dims[0] * dims[1]};
  float acc = 0, yw = y * wl;
  for (int k = klo; k <= khi; k++) {
    float dm = (float)k + 0.5f - r->a[m];
    float pu = r->a[u] + dm * su - 0.5f, pv = r->a[v] + dm * sv - 0.5f;
    float fu = floorf(pu), fv = floorf(pv), eu = pu - fu, ev = pv - fv;
    int iu = (int)fu, iv = (int)fv;
    for (int cc = 0; cc < 4; cc++) {
      int qu = iu + (cc & 1), qv = iv + (cc >> 1);
      if (qu < 0 || qu >= n[u] || qv < 0 || qv >= n[v]) continue;
      float wc = ((cc & 1) ? eu : 1.0f - eu) * ((cc >> 1) ? ev : 1.0f - ev);
      size_t idx = (size_t)k * stride[m] + (size_t)qu * stride[u] + (size_t)qv * stride[v];
      if (back)
        img[idx] += wc * yw;
      else
        acc += wc * img[idx];
    }
  }
  return acc * wl;
}

void ct_cpu_forward(const CtCpu *c, const float *x, float *y) {
  const int nu = c->g->det_u, nv = c->g->det_v, nk = c->n_views;
#pragma omp parallel for collapse(2) schedule(dynamic, 4)
  for (int k = 0; k < nk; k++)
    for (int v = 0; v < nv; v++) {
      const float *w = c->views + (size_t)VIEW_FLOATS * k;
      float *row = y + ((size_t)k * nv + v) * nu;
      for (int u = 0; u < nu; u++) {
        Ray r = make_ray(c, w, (float)u, (float)v);
        row[u] = joseph_walk(c, &r, (float *)x, 0, 0);
      }
    }
}

void ct_cpu_back(const CtCpu *c, const float *y, float *x) {
  const int nu = c->g->det_u, nv = c->g->det_v, nk = c->n_views;
  const size_t nvox = tl_image_grid_n_voxels(&c->grid);
  int nt = 1;
#ifdef _OPENMP
  nt = omp_get_max_threads();
#endif
  float *priv = g_new0(float, nvox * (nt - 1)); /* thread 0 adds into x itself */
  memset(x, 0, nvox * sizeof(float));
#pragma omp parallel
  {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    float *img = t == 0 ? x : priv + nvox * (t - 1);
#pragma omp for collapse(2) schedule(dynamic, 4)
    for (int k = 0; k < nk; k++)
      for (int v = 0; v < nv; v++) {
        const float *w = c->views + (size_t)VIEW_FLOATS * k;
        const float *row = y + ((size_t)k * nv + v) * nu;
        for (int u = 0; u < nu; u++) {
          if (row[u] == 0.0f) continue;
          Ray r = make_ray(c, w, (float)u, (float)v);
          joseph_walk(c, &r, img, 1, row[u]);
        }
      }
#pragma omp for schedule(static)
    for (size_t i = 0; i < nvox; i++)
      for (int j = 0; j < nt - 1; j++) x[i] += priv[nvox * j + i];
  }
  g_free(priv);
}

/* Siegl et al. 2011 eq. 1: for every voxel, the sum over the views of the bilinear sample at its
 * projection divided by w^2 (P: the first 12 floats of each view record); rows of voxels along
 * x innermost, as RabbitCT's CPU codes. */
void ct_cpu_bp(const CtCpu *c, const float *proj, float *out) {
  const int nu = c->g->det_u, nv = c->g->det_v, nk = c->n_views;
  const int nx = c->grid.dims[0], ny = c->grid.dims[1], nz = c->grid.dims[2];
  const size_t npix = (size_t)nu * nv;
#pragma omp parallel for collapse(2) schedule(static)
  for (int z = 0; z < nz; z++)
    for (int y = 0; y < ny; y++) {
      float *row = out + ((size_t)z * ny + y) * nx;
      for (int x = 0; x < nx; x++) row[x] = 0;
      const float wy = c->grid.origin_mm[1] + y * c->grid.voxel_mm[1];
      const float wz = c->grid.origin_mm[2] + z * c->grid.voxel_mm[2];
      for (int k = 0; k < nk; k++) {
        const float *a = c->views + (size_t)VIEW_FLOATS * k; /* P, row-major 3 x 4 */
        const float *img = proj + k * npix;
        for (int x = 0; x < nx; x++) {
          const float wx = c->grid.origin_mm[0] + x * c->grid.voxel_mm[0];
          float w = a[8] * wx + a[9] * wy + a[10] * wz + a[11];
          if (!(w > 0)) continue;
          float r = 1.0f / w;
          float u = (a[0] * wx + a[1] * wy + a[2] * wz + a[3]) * r;
          float v = (a[4] * wx + a[5] * wy + a[6] * wz + a[7]) * r;
          int iu = (int)floorf(u), iv = (int)floorf(v);
          if (iu < -1 || iu >= nu || iv < -1 || iv >= nv) continue;
          float eu = u - iu, ev = v - iv, s = 0;
          if (iv >= 0) {
            if (iu >= 0) s += (1 - eu) * (1 - ev) * img[iv * nu + iu];
            if (iu + 1 < nu) s += eu * (1 - ev) * img[iv * nu + iu + 1];
          }
          if (iv + 1 < nv) {
            if (iu >= 0) s += (1 - eu) * ev * img[(iv + 1) * nu + iu];
            if (iu + 1 < nu) s += eu * ev * img[(iv + 1) * nu + iu + 1];
          }
          row[x] += s * r * r;
        }
      }
    }
}

/* In-place radix-2 FFT of n = 2^m points (sign -1 forward, +1 inverse, unscaled). */
static void fft(float complex *a, guint n, int sign) {
  for (guint i = 1, j = 0; i < n; i++) {
    guint bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      float complex t = a[i];
      a[i] = a[j], a[j] = t;
    }
  }
  for (guint len = 2; len <= n; len <<= 1) {
    double ang = sign * 2 * G_PI / len;
    float complex wl = (float)cos(ang) + I * (float)sin(ang);
    for (guint i = 0; i < n; i += len) {
      float complex w = 1;
      for (guint j = 0; j < len / 2; j++) {
        float complex s = a[i + j], t = w * a[i + j + len / 2];
        a[i + j] = s + t, a[i + j + len / 2] = s - t;
        w *= wl;
      }
    }
  }
}

void ct_cpu_fdk(const CtCpu *c, const float *proj, float *out) {
  const TlCtGeometry *g = c->g;
  const int nu = g->det_u, nv = g->det_v, nk = c->n_views;
  guint n = 2;
  while (n < 2u * nu - 1) n <<= 1;
  /* the kernel's spectrum: taps -nu+1 .. nu-1 placed circularly, over n for the inverse */
  g_autofree double *taps = tl_ct_ramp_kernel(TL_CT_FILTER_RAM_LAK, nu);
  g_autofree float complex *H = g_new0(float complex, n);
  for (int l = -nu + 1; l < nu; l++) H[(l + (int)n) % n] = (float)taps[l + nu - 1];
  fft(H, n, -1);
  for (guint i = 0; i < n; i++) H[i] /= n;
  float *filtered = g_new(float, (size_t)nk * nv * nu);
#pragma omp parallel
  {
    float complex *buf = g_new(float complex, n);
#pragma omp for collapse(2) schedule(static)
    for (int k = 0; k < nk; k++)
      for (int v = 0; v < nv; v++) {
        const float *w = c->views + (size_t)VIEW_FLOATS * k;
        float scale = (float)tl_ct_fdk_view_scale(g, k);
        size_t o = ((size_t)k * nv + v) * nu;
        for (int u = 0; u < nu; u++) {
          float cw = 1;
          if (g->beam == TL_CT_CONE) { /* ct_fdk_weight.comp: 1 / |Qd (u, v, 1)| */
            const float *Qd = w + 21;
            float q0 = Qd[0] * u + Qd[1] * v + Qd[2], q1 = Qd[3] * u + Qd[4] * v + Qd[5];
            float q2 = Qd[6] * u + Qd[7] * v + Qd[8];
            cw = 1.0f / sqrtf(q0 * q0 + q1 * q1 + q2 * q2);
          }
          buf[u] = proj[o + u] * cw * scale;
        }
        for (guint u = nu; u < n; u++) buf[u] = 0;
        fft(buf, n, -1);
        for (guint i = 0; i < n; i++) buf[i] *= H[i];
        fft(buf, n, 1);
        for (int u = 0; u < nu; u++) filtered[o + u] = crealf(buf[u]);
      }
    g_free(buf);
  }
  ct_cpu_bp(c, filtered, out);
  g_free(filtered);
}

static size_t n_data(const CtCpu *c) { return (size_t)c->n_views * c->g->det_u * c->g->det_v; }

void ct_cpu_sirt_sums(const CtCpu *c, float *rinv, float *cinv) {
  size_t nvox = tl_image_grid_n_voxels(&c->grid), nd = n_data(c);
  float *ones = g_new(float, MAX(nvox, nd));
  for (size_t i = 0; i < MAX(nvox, nd); i++) ones[i] = 1;
  ct_cpu_forward(c, ones, rinv);
  ct_cpu_back(c, ones, cinv);
  for (size_t i = 0; i < nd; i++) rinv[i] = rinv[i] > 0 ? 1 / rinv[i] : 0;
  for (size_t i = 0; i < nvox; i++) cinv[i] = cinv[i] > 0 ? 1 / cinv[i] : 0;
  g_free(ones);
}

void ct_cpu_sirt_step(const CtCpu *c, const float *y, const float *rinv, const float *cinv,
                      float *x, float *q, float *v) {
  size_t nvox = tl_image_grid_n_voxels(&c->grid), nd = n_data(c);
  ct_cpu_forward(c, x, q);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nd; i++) q[i] = (y[i] - q[i]) * rinv[i];
  ct_cpu_back(c, q, v);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nvox; i++) x[i] = fmaxf(x[i] + cinv[i] * v[i], 0.0f);
}

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

void ct_cpu_cgls_start(const CtCpu *c, const float *y, CtCpuCgls *st) {
  size_t nvox = tl_image_grid_n_voxels(&c->grid), nd = n_data(c);
  st->x = g_new0(float, nvox), st->s = g_new(float, nvox), st->p = g_new(float, nvox);
  st->r = g_memdup2(y, nd * sizeof(float)), st->q = g_new(float, nd);
  ct_cpu_back(c, st->r, st->s);
  memcpy(st->p, st->s, nvox * sizeof(float));
  st->gamma = dot(st->s, st->s, nvox);
}

void ct_cpu_cgls_step(const CtCpu *c, CtCpuCgls *st) {
  size_t nvox = tl_image_grid_n_voxels(&c->grid), nd = n_data(c);
  ct_cpu_forward(c, st->p, st->q);
  double qq = dot(st->q, st->q, nd);
  float alpha = qq > 0 ? (float)(st->gamma / qq) : 0;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nvox; i++) st->x[i] += alpha * st->p[i];
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nd; i++) st->r[i] -= alpha * st->q[i];
  ct_cpu_back(c, st->r, st->s);
  double gamma = dot(st->s, st->s, nvox);
  float beta = st->gamma > 0 ? (float)(gamma / st->gamma) : 0;
  st->gamma = gamma;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < nvox; i++) st->p[i] = st->s[i] + beta * st->p[i];
}

void ct_cpu_cgls_clear(CtCpuCgls *st) {
  g_free(st->x), g_free(st->r), g_free(st->s), g_free(st->p), g_free(st->q);
  memset(st, 0, sizeof *st);
}
