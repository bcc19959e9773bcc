/* Plain C reference projectors for the PET tests, written independently of the GLSL: double
 * precision, Siddon in its original merged-crossings form (every plane crossing collected and
 * sorted, each segment's voxel from its midpoint), Joseph as a loop over every plane of the
 * dominant axis. */
#pragma once
#include <glib.h>
#include "pet/tl-image.h"

typedef enum { TL_REF_SIDDON, TL_REF_JOSEPH } TlRefKind;

/* Calls visit(voxel index, weight in mm) for each voxel the LOR p0 -> p1 (mm) touches. */
typedef void (*TlRefVisit)(guint64 voxel, double weight, gpointer data);
void tl_ref_trace(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                  TlRefVisit visit, gpointer data);

double tl_ref_forward(TlRefKind kind, const TlImageGrid *g, const double p0[3],
                      const double p1[3], const float *image);
/* image[n] += w a_n */
void tl_ref_back(TlRefKind kind, const TlImageGrid *g, const double p0[3], const double p1[3],
                 double w, double *image);
