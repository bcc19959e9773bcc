/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/ct-cpu: plain C + OpenMP references of the CT work bench/ct times on the device, on the
 * same data: Joseph's forward projection and its transpose (the loops of
 * shaders/ct/ct_joseph.glsl and ct_common.glsl's ray, line by line, from the projector's own
 * view table), FDK (pre-weighting, the ramp by a radix-2 FFT, the voxel-driven back projection
 * of Siegl et al. 2011 eq. 1) and one iteration of SIRT and of CGLS built from them. */
#pragma once
#include "tomolab-compute.h"
#include "ct/tl-ct-projector.h"

typedef struct {
  const TlCtGeometry *g;
  TlImageGrid grid;
  float *views;      /* the projector's table, TL_CT_VIEW_FLOATS per view */
  guint n_views;
  float corner[3];   /* outer corner of voxel 0 (voxel units start there) */
} CtCpu;

/* The table downloaded from a Joseph (or any ray-driven) projector; FALSE with error. */
gboolean ct_cpu_init(CtCpu *c, TlCtProjector *p, GError **error);
void ct_cpu_clear(CtCpu *c);

/* y = A x over all the projector's views (y: views x det_v x det_u). */
void ct_cpu_forward(const CtCpu *c, const float *x, float *y);
/* x = A^T y: each thread scatters into its own image, summed at the end. */
void ct_cpu_back(const CtCpu *c, const float *y, float *x);

/* Siegl et al. 2011 eq. 1 (the voxel-driven back projection of FDK, not an adjoint) of proj
 * (views x det_v x det_u) into out. */
void ct_cpu_bp(const CtCpu *c, const float *proj, float *out);

/* FDK (parallel beam: FBP) with the Ram-Lak ramp: scale and cosine weights, the ramp by FFT
 * (rows zero-padded to a power of two >= 2 det_u - 1), eq. 1's back projection. */
void ct_cpu_fdk(const CtCpu *c, const float *proj, float *out);

/* One SIRT iteration x <- max(x + C A^T R (y - A x), 0) with R, C the inverse row and column
 * sums (computed by ct_cpu_sirt_sums once). */
void ct_cpu_sirt_sums(const CtCpu *c, float *rinv, float *cinv);
void ct_cpu_sirt_step(const CtCpu *c, const float *y, const float *rinv, const float *cinv,
                      float *x, float *q, float *v);

/* CGLS (Hestenes-Stiefel on the normal equations): state r (data), s, p (image), gamma =
 * |s|^2; ct_cpu_cgls_start from x = 0, then one ct_cpu_cgls_step per iteration. */
typedef struct {
  float *x, *r, *s, *p, *q;
  double gamma;
} CtCpuCgls;
void ct_cpu_cgls_start(const CtCpu *c, const float *y, CtCpuCgls *st);
void ct_cpu_cgls_step(const CtCpu *c, CtCpuCgls *st);
void ct_cpu_cgls_clear(CtCpuCgls *st);
