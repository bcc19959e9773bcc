/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PETRIC image-quality metrics of an image against a converged reference, and its
 * time to target (Thielemans et al. 2024: PETRIC's wiki, "Metrics and thresholds";
 * docs/recon.md, "Races").
 *
 * With norm = the reference's mean over the background mask (over the whole-object mask
 * where no background mask is given):
 *   rmse             sqrt(mean over the whole object of (x - ref)^2) / norm
 *   background rmse  sqrt(mean over the background of (x - ref)^2) / norm   (NAN without one)
 *   voi[v]           |mean_v(x) - mean_v(ref)| / norm   (PETRIC's AEM, "absolute error of
 *                    the mean" of each volume of interest)
 * The target is met when rmse <= 1 %, background rmse <= 1 % and every voi <= 0.5 %; the time
 * to target is the time of the first evaluation from which it is met 10 evaluations in a row.
 * Masks are images on the reference's grid; a voxel is in where its value is non-zero. */
#pragma once
#include "tl-api.h"
#include "image/tl-image.h"
#include "image/tl-roi.h"
#include "image/tl-nema.h"

G_BEGIN_DECLS

#define TL_METRICS_RMSE_TARGET 0.01
#define TL_METRICS_BACKGROUND_TARGET 0.01
#define TL_METRICS_VOI_TARGET 0.005
#define TL_METRICS_CONSECUTIVE 10

typedef struct _TlMetrics TlMetrics;

/* The reference is copied. Whole object = every voxel until a mask is set. */
TL_API TlMetrics *tl_metrics_new(const TlImage *reference, GError **error);
TL_API void tl_metrics_free(TlMetrics *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlMetrics, tl_metrics_free)

/* GError when the mask's grid differs from the reference's, the mask is empty, or (background)
 * the reference's mean over it is not positive. */
TL_API gboolean tl_metrics_set_object(TlMetrics *m, const TlImage *mask, GError **error);
TL_API gboolean tl_metrics_set_background(TlMetrics *m, const TlImage *mask, GError **error);
TL_API gboolean tl_metrics_add_voi(TlMetrics *m, const char *name, const TlImage *mask,
                                   GError **error);
/* A region drawn by the user (image/tl-roi.h) as a VOI. */
TL_API gboolean tl_metrics_add_roi(TlMetrics *m, const char *name, const TlRoi *roi,
                                   GError **error);

/* The NEMA IEC phantom's regions (image/tl-nema.h) as PETRIC's: each hot sphere's ROI a VOI
 * ("sphere 37 mm", ...), the background mask the union of the 37 mm background ROIs. */
TL_API gboolean tl_metrics_add_nema(TlMetrics *m, const TlNemaLayout *layout, GError **error);

TL_API guint tl_metrics_n_voi(const TlMetrics *m);
TL_API const char *tl_metrics_voi_name(const TlMetrics *m, guint v);
TL_API const TlImageGrid *tl_metrics_grid(const TlMetrics *m);
/* How many values tl_metrics_evaluate writes: 2 + the VOIs. */
TL_API guint tl_metrics_n_values(const TlMetrics *m);
/* The normalisation (reference's background mean; whole-object mean without a background). */
TL_API double tl_metrics_norm(const TlMetrics *m);

/* values[0] = rmse, values[1] = background rmse, values[2 + v] = voi v. n = the image's voxel
 * count, checked against the reference's. */
TL_API gboolean tl_metrics_evaluate(const TlMetrics *m, const float *image, gsize n,
                                    double *values, GError **error);
/* Whether values (as written by tl_metrics_evaluate) meet every threshold (a NAN background
 * rmse, no background mask, counts as met). */
TL_API gboolean tl_metrics_met(const TlMetrics *m, const double *values);

/* Time to target over a sequence of evaluations. */
typedef struct {
  guint consecutive; /* evaluations in a row needed */
  guint run;         /* evaluations met in a row so far */
  double first;      /* time of the first of them */
  double reached;    /* NAN until `consecutive` in a row were met: then `first` */
} TlTarget;

TL_API void tl_target_init(TlTarget *t, guint consecutive);
/* One evaluation at `time` (non-decreasing) that met the target or not; returns whether the
 * target is reached (now or before). A later miss does not undo a reached target. */
TL_API gboolean tl_target_push(TlTarget *t, double time, gboolean met);

G_END_DECLS
