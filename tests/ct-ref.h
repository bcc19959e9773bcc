/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C references for the CT tests, written from the papers' equations, in double,
 * sharing no code with the kernels (only the geometry's matrices as input). */
#pragma once
#include "ct/tl-ct-geometry.h"
#include "ct/tl-ct-phantom.h"
#include "image/tl-image.h"

/* Siegl et al. 2011 eq. 1 over views [first, first + count): out[voxel] = sum_n p^_n(u, v) / w^2
 * with p^ bilinear interpolation, zero boundary. proj: count views, contiguous. */
void ct_ref_bp_voxel(const TlCtGeometry *g, guint first, guint count, const TlImageGrid *grid,
                     const float *proj, double *out);

/* Exact length of the ray origin + t dir (t >= t_min) inside the box [lo, hi] (mm). */
double ct_ref_chord_box(const double origin[3], const double dir[3], double t_min,
                        const double lo[3], const double hi[3]);
/* Exact line integral of a voxel image along the ray: sum over voxels of value x length
 * of the ray inside that voxel's box (each voxel intersected on its own, in double). */
double ct_ref_line_integral(const TlImage *im, const double origin[3], const double dir[3],
                            double t_min);

/* Reference FDK (FBP for parallel beams): the formula of tl-ct-fdk.h written out directly,
 * with the ramp filter as an explicit double-precision convolution and the Ram-Lak kernel.
 * proj: every view. */
void ct_ref_fdk(const TlCtGeometry *g, const TlImageGrid *grid, const float *proj, double *out);

/* Analytic projections of an ellipsoid phantom (tl_ct_phantom_line_integral per pixel). */
float *ct_ref_project_phantom(const TlCtGeometry *g, const TlImageGrid *grid,
                              const TlCtPhantom *phantom, double scale);

double ct_ref_rmse(const float *a, const double *b, guint64 n);
double ct_ref_rmse_f(const float *a, const float *b, guint64 n);
