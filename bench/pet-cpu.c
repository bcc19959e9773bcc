/* SPDX-License-Identifier: GPL-3.0-or-later */
/* See pet-cpu.h. The loops mirror the GLSL line by line so the comparison is like for like. */
#include "pet-cpu.h"
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  int n[3];
  float lo[3], vox[3];
  guint stride[3];
} Grid;

static Grid grid_of(const TlImageGrid *g) {
  Grid r;
  for (int k = 0; k < 3; k++) {
    r.n[k] = (int)g->dims[k];
    r.vox[k] = g->voxel_mm[k];
    r.lo[k] = g->origin_mm[k] - 0.5f * g->voxel_mm[k];
  }
  r.stride[0] = 1;
  r.stride[1] = g->dims[0];
  r.stride[2] = g->dims[0] * g->dims[1];
  return r;
}

enum { FWD, BACK };

/* One event's TOF kernel (TlTof in tl-projector.h): bin centre c (mm from the LOR midpoint,
 * positive towards crystal b), half width hw, truncation lim = n sigma, k = 1 / (sigma sqrt 2),
 * norm = 1 / (2 erf(n / sqrt 2)), window half width win = hw + lim around c. */
typedef struct {
  float c, hw, lim, k, norm, win;
} Tof;

/* erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), as pet_tof.glsl computes it. */
static inline float tof_erf(float x) {
  float t = 1.0f / (1.0f + 0.3275911f * fabsf(x));
  float p = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
             0.254829592f) * t;
  return copysignf(1.0f - p * expf(-x * x), x);
}

static Tof tof_of(const TlTof *t, gint32 bin) {
  return (Tof){.c = (float)bin * t->bin_mm, .hw = 0.5f * t->bin_mm,
               .lim = t->n_sigma * t->sigma_mm, .k = 0.70710678f / t->sigma_mm,
               .norm = 0.5f / tof_erf(t->n_sigma * 0.70710678f),
               .win = 0.5f * t->bin_mm + t->n_sigma * t->sigma_mm};
}

/* h_b at signed distance x (mm) from the midpoint. */
static inline float tof_weight(const Tof *t, float x) {
  float hi = fminf(fmaxf(t->c + t->hw - x, -t->lim), t->lim);
  float lo = fminf(fmaxf(t->c - t->hw - x, -t->lim), t->lim);
  return (tof_erf(hi * t->k) - tof_erf(lo * t->k)) * t->norm;
}

/* Narrows [t0, t1] (LOR parameter, 0 at p0, 1 at p1, length len mm) to the TOF window. */
static inline void tof_clip(const Tof *t, float len, float *t0, float *t1) {
  *t0 = fmaxf(*t0, 0.5f + (t->c - t->win) / len);
  *t1 = fminf(*t1, 0.5f + (t->c + t->win) / len);
}

/* tof NULL: non-TOF. Always inlined, so each call site with a constant NULL compiles to the
 * plain walk. */
static G_ALWAYS_INLINE inline float siddon(const Grid *g, const float *p0, const float *p1,
                                           int mode, float w, const float *x, float *img,
                                           const Tof *tof) {
  float d[3], hi[3], t0 = 0, t1 = 1;
  for (int k = 0; k < 3; k++) {
    d[k] = p1[k] - p0[k];
    hi[k] = g->lo[k] + g->n[k] * g->vox[k];
  }
  float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  for (int k = 0; k < 3; k++) {
    if (d[k] == 0) {
      if (p0[k] < g->lo[k] || p0[k] >= hi[k]) return 0;
    } else {
      float ta = (g->lo[k] - p0[k]) / d[k], tb = (hi[k] - p0[k]) / d[k];
      t0 = fmaxf(t0, fminf(ta, tb));
      t1 = fminf(t1, fmaxf(ta, tb));
    }
  }
  if (!(t0 < t1)) return 0;
  /* TOF: the walk starts in the voxel where the window opens and ends with the voxel where it
   * closes, each with its whole chord (pet_siddon.glsl) */
  float tw0 = t0, tw1 = t1;
  if (tof) tof_clip(tof, len, &tw0, &tw1);
  if (!(tw0 < tw1)) return 0;
  int v[3], step[3];
  float tn[3], t = t0;
  for (int k = 0; k < 3; k++) {
    float c = (p0[k] + tw0 * d[k] - g->lo[k]) / g->vox[k];
    if (d[k] > 0) {
      v[k] = CLAMP((int)floorf(c), 0, g->n[k] - 1);
      step[k] = 1;
      tn[k] = (g->lo[k] + (float)(v[k] + 1) * g->vox[k] - p0[k]) / d[k];
    } else if (d[k] < 0) {
      v[k] = CLAMP((int)ceilf(c) - 1, 0, g->n[k] - 1);
      step[k] = -1;
      tn[k] = (g->lo[k] + (float)v[k] * g->vox[k] - p0[k]) / d[k];
    } else {
      v[k] = CLAMP((int)floorf(c), 0, g->n[k] - 1);
      step[k] = 0;
      tn[k] = 2;
    }
    if (tof && step[k] != 0)
      t = fmaxf(t, (g->lo[k] + (float)(step[k] > 0 ? v[k] : v[k] + 1) * g->vox[k] - p0[k]) / d[k]);
  }
  float acc = 0;
  for (int guard = g->n[0] + g->n[1] + g->n[2] + 3; t < tw1 && guard > 0; guard--) {
    float te = fmaxf(t, fminf(fminf(tn[0], tn[1]), fminf(tn[2], t1)));
    float l = (te - t) * len;
    if (tof) l *= tof_weight(tof, (0.5f * (t + te) - 0.5f) * len); /* middle of the chord */
    guint i = v[0] + g->stride[1] * v[1] + g->stride[2] * v[2];
    if (mode == FWD)
      acc += l * x[i];
    else
      img[i] += w * l;
    t = te;
    gboolean out = FALSE;
    for (int k = 0; k < 3; k++)
      if (step[k] != 0 && tn[k] <= te) {
        v[k] += step[k];
        out = out || v[k] < 0 || v[k] >= g->n[k];
        tn[k] = (g->lo[k] + (float)(step[k] > 0 ? v[k] + 1 : v[k]) * g->vox[k] - p0[k]) / d[k];
      }
    if (out) break;
  }
  return acc;
}

static G_ALWAYS_INLINE inline float joseph(const Grid *g, const float *p0, const float *p1,
                                           int mode, float w, const float *x, float *img,
                                           const Tof *tof) {
  float a[3], d[3], ad[3];
  for (int k = 0; k < 3; k++) {
    a[k] = (p0[k] - g->lo[k]) / g->vox[k];
    d[k] = (p1[k] - p0[k]) / g->vox[k];
    ad[k] = fabsf(d[k]);
  }
  float len = sqrtf((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) +
                    (p1[2] - p0[2]) * (p1[2] - p0[2]));
  int m = (ad[0] >= ad[1] && ad[0] >= ad[2]) ? 0 : (ad[1] >= ad[2] ? 1 : 2);
  if (ad[m] == 0) return 0;
  int u = m == 0 ? 1 : 0, vv = m == 2 ? 1 : 2;
  float t0 = 0, t1 = 1;
  for (int j = 0; j < 2; j++) {
    int k = j == 0 ? u : vv;
    float lo = -0.5f, hi = (float)g->n[k] + 0.5f;
    if (d[k] == 0) {
      if (a[k] <= lo || a[k] >= hi) return 0;
    } else {
      float ta = (lo - a[k]) / d[k], tb = (hi - a[k]) / d[k];
      t0 = fmaxf(t0, fminf(ta, tb));
      t1 = fminf(t1, fmaxf(ta, tb));
    }
  }
  if (tof) tof_clip(tof, len, &t0, &t1);
  if (t0 > t1) return 0;
  float c0 = a[m] + t0 * d[m], c1 = a[m] + t1 * d[m];
  float klo = fminf(fmaxf(ceilf(fminf(c0, c1) - 0.5f), 0), (float)g->n[m]);
  float khi = fminf(fmaxf(floorf(fmaxf(c0, c1) - 0.5f), -1), (float)(g->n[m] - 1));
  float wl = len / ad[m], su = d[u] / d[m], sv = d[vv] / d[m], acc = 0;
  for (int k = (int)klo; k <= (int)khi; k++) {
    float dm = (float)k + 0.5f - a[m];
    float wk = tof ? wl * tof_weight(tof, (dm / d[m] - 0.5f) * len) : wl; /* point on the plane */
    float pu = a[u] + dm * su - 0.5f, pv = a[vv] + dm * sv - 0.5f;
    float fu = floorf(pu), fv = floorf(pv), eu = pu - fu, ev = pv - fv;
    int iu = (int)fu, iv = (int)fv;
    for (int c = 0; c < 4; c++) {
      int ju = iu + (c & 1), jv = iv + (c >> 1);
      if (ju < 0 || ju >= g->n[u] || jv < 0 || jv >= g->n[vv]) continue;
      float wc = ((c & 1) ? eu : 1 - eu) * ((c >> 1) ? ev : 1 - ev) * wk;
      guint i = (guint)k * g->stride[m] + (guint)ju * g->stride[u] + (guint)jv * g->stride[vv];
      if (mode == FWD)
        acc += wc * x[i];
      else
        img[i] += w * wc;
    }
  }
  return acc;
}

void pet_cpu_forward_tof(PetCpuKind kind, const TlImageGrid *tg, const TlScanner *s,
                         const TlEvent *ev, guint64 n, const TlTof *tof, const float *x,
                         float *out) {
  Grid g = grid_of(tg);
#pragma omp parallel for schedule(dynamic, 4096)
  for (gint64 i = 0; i < (gint64)n; i++) {
    const float *p0 = s->crystals[ev[i].a].centre, *p1 = s->crystals[ev[i].b].centre;
    if (tof) {
      Tof t = tof_of(tof, ev[i].tof_bin);
      out[i] = kind == PET_CPU_SIDDON ? siddon(&g, p0, p1, FWD, 0, x, NULL, &t)
                                      : joseph(&g, p0, p1, FWD, 0, x, NULL, &t);
    } else {
      out[i] = kind == PET_CPU_SIDDON ? siddon(&g, p0, p1, FWD, 0, x, NULL, NULL)
                                      : joseph(&g, p0, p1, FWD, 0, x, NULL, NULL);
    }
  }
}

void pet_cpu_forward(PetCpuKind kind, const TlImageGrid *tg, const TlScanner *s,
                     const TlEvent *ev, guint64 n, const float *x, float *out) {
  pet_cpu_forward_tof(kind, tg, s, ev, n, NULL, x, out);
}

void pet_cpu_back_tof(PetCpuKind kind, const TlImageGrid *tg, const TlScanner *s,
                      const TlEvent *ev, guint64 n, const TlTof *tof, const float *w, float *img) {
  Grid g = grid_of(tg);
  guint64 nv = tl_image_grid_n_voxels(tg);
#pragma omp parallel
  {
    float *mine = g_new0(float, nv);
#pragma omp for schedule(dynamic, 4096)
    for (gint64 i = 0; i < (gint64)n; i++) {
      const float *p0 = s->crystals[ev[i].a].centre, *p1 = s->crystals[ev[i].b].centre;
      float wi = w ? w[i] : 1.0f;
      if (tof) {
        Tof t = tof_of(tof, ev[i].tof_bin);
        if (kind == PET_CPU_SIDDON)
          siddon(&g, p0, p1, BACK, wi, NULL, mine, &t);
        else
          joseph(&g, p0, p1, BACK, wi, NULL, mine, &t);
      } else if (kind == PET_CPU_SIDDON) {
        siddon(&g, p0, p1, BACK, wi, NULL, mine, NULL);
      } else {
        joseph(&g, p0, p1, BACK, wi, NULL, mine, NULL);
      }
    }
    /* threads add their images in turn, each a slab at a time, so the sum stays parallel */
#ifdef _OPENMP
    int nt = omp_get_num_threads(), me = omp_get_thread_num();
#else
    int nt = 1, me = 0;
#endif
    for (int r = 0; r < nt; r++) {
      guint64 slab = (nv + nt - 1) / nt, part = (guint64)((me + r) % nt);
      guint64 lo = part * slab, hi = MIN(nv, lo + slab);
      for (guint64 v = lo; v < hi; v++) img[v] += mine[v];
#pragma omp barrier
    }
    g_free(mine);
  }
}

void pet_cpu_back(PetCpuKind kind, const TlImageGrid *tg, const TlScanner *s, const TlEvent *ev,
                  guint64 n, const float *w, float *img) {
  pet_cpu_back_tof(kind, tg, s, ev, n, NULL, w, img);
}
