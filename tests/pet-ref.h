/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Plain C reference projectors for the PET tests, written independently of the GLSL: double
 * precision, Siddon in its original merged-crossings form (every plane crossing collected and
 * sorted, each segment's voxel from its midpoint), Joseph as a loop over every plane of the
 * dominant axis, the tube of response (TOR) as Joseph's planes with the bilinear hat convolved
 * with a Gaussian in closed form, and time of flight as a weight per sample point. */
#pragma once
#include <glib.h>
#include "image/tl-image.h"

typedef enum { TL_REF_SIDDON, TL_REF_JOSEPH, TL_REF_TOR } TlRefKind;

/* The TOR FWHM used by tl_ref_trace/forward/back (TL_TOR_FWHM_DEFAULT of tl-projector.h). */
#define TL_REF_TOR_FWHM_DEFAULT 2.0

/* Calls visit(voxel index, weight in mm) for each voxel the LOR p0 -> p1 (mm) touches. */
typedef void (*TlRefVisit)(guint64 voxel, double weight, gpointer data);
void tl_ref_trace(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                  TlRefVisit visit, gpointer data);

double tl_ref_forward(TlRefKind kind, const TlImageGrid *g, const double p0[3],
                      const double p1[3], const float *image);
/* image[n] += w a_n */
void tl_ref_back(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                 double w, double *image);

/* The TOF weight h_b(x) of tl-projector.h (TlTof) with C's erf: bin `bin` (centre bin *
 * bin_mm), position x_mm from the LOR midpoint, positive towards p1 (crystal b). */
double tl_ref_tof_weight(double sigma_mm, double bin_mm, double n_sigma, int bin, double x_mm);

/* (H * G_s)(x): the hat H(x) = max(0, 1 - |x|) convolved with the N(0, s^2) density, in
 * closed form (s in the units of x; s = 0 gives H). */
double tl_ref_tor_kernel(double x, double s);

typedef struct {
  double sigma_mm, bin_mm, n_sigma;
  int bin; /* the event's TOF bin */
} TlRefTof;

/* A system matrix: projector, the TOR's FWHM (TL_REF_TOR only; 0 = Joseph) and time of flight
 * (NULL = none; the weight at each sample point: Siddon the middle of the voxel's chord,
 * Joseph and TOR the point on the plane). */
typedef struct {
  TlRefKind kind;
  double tor_fwhm_mm;
  const TlRefTof *tof;
  /* Siddon: NULL, or the grid's first voxel planes (x, y, z) in double instead of its float
   * origin - vox / 2 (an exactly centred grid, -n vox / 2, which a float origin cannot say) */
  const double *plane_lo;
} TlRefModel;

void tl_ref_trace_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                        const double p1[3], TlRefVisit visit, gpointer data);
void tl_ref_trace_tor(const TlImageGrid *g, const double p0[3], const double p1[3],
                      double fwhm_mm, TlRefVisit visit, gpointer data);
double tl_ref_forward_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                            const double p1[3], const float *image);
void tl_ref_back_model(const TlRefModel *m, const TlImageGrid *g, const double p0[3],
                       const double p1[3], double w, double *image);
