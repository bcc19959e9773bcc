/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NEMA NU 2 image-quality analysis of the NEMA IEC body phantom (image/tl-phantom.h,
 * "nema"): contrast recovery per hot sphere, background variability and the lung insert's
 * residual, from circular ROIs (image/tl-roi.h) on a reconstruction of the phantom.
 *
 * NU 2-2018 section 7.4 (quoted where implemented in tl-nema.c):
 *   CR_H,j = ((C_H,j / C_B,j) - 1) / ((a_H / a_B) - 1)         percent contrast, hot sphere j
 *   N_j    = SD_j / C_B,j                                       background variability
 *   dC_lung = C_lung / C_B,37mm                                 lung residual
 * C_B,j is the mean of the 60 background ROIs of sphere j's diameter (12 positions x 5
 * slices: the spheres' central slice and +-10, +-20 mm), SD_j their standard deviation.
 *
 * Simplifications (docs/workbench.md):
 * - The 12 background positions are placed automatically (no operator): 37 mm circles at
 *   least 15 mm from the body's edge, 5 mm clear of every sphere and the lung insert,
 *   spread by farthest-point selection on a 1 mm lattice; the smaller ROIs are concentric.
 * - By default the hot-sphere ROI holds only voxels lying wholly inside the sphere on the
 *   image grid (radius sqrt(r^2 - (dz + vz/2)^2) - half the in-plane voxel diagonal), so a
 *   noiseless image of the phantom's own truth gives CR = 1 for every sphere (on grids too
 *   coarse for any voxel to lie wholly inside, the voxel holding the centre: CR < 1); NEMA's
 *   circle of the sphere's full inner diameter (partial-volume voxels at its rim lower CR
 *   even for the truth) is `full_diameter`.
 * - The lung residual uses the central slice only (NEMA: every slice). */
#pragma once
#include "tl-api.h"
#include "tl-roi.h"

G_BEGIN_DECLS

#define TL_NEMA_N_SPHERES 6
#define TL_NEMA_N_BACKGROUND 12  /* positions per slice */
#define TL_NEMA_N_SLICES 5

typedef struct {
  double centre_mm[3];   /* the phantom's centre (TlPhantomOptions.centre_mm) */
  double sphere_ratio;   /* a_H / a_B (TlPhantomOptions.sphere_ratio; 4 by default) */
  gboolean full_diameter;/* NEMA's full-diameter hot ROIs instead of the interior ones */
} TlNemaOptions;

TL_API void tl_nema_options_init(TlNemaOptions *o);

/* The ROIs on one grid (computed once, reused every sub-iteration). */
typedef struct {
  TlImageGrid grid;
  TlNemaOptions opt;
  double diameter_mm[TL_NEMA_N_SPHERES];               /* 37, 28, 22, 17, 13, 10 */
  TlRoi hot[TL_NEMA_N_SPHERES];                        /* axial circles */
  /* background[j][s * 12 + p]: sphere size j, slice s, position p */
  TlRoi background[TL_NEMA_N_SPHERES][TL_NEMA_N_SLICES * TL_NEMA_N_BACKGROUND];
  guint n_background;                                  /* per size: <= 60 (slices off the grid drop) */
  TlRoi lung;                                          /* 30 mm circle, central slice */
} TlNemaLayout;

typedef struct {
  TlRoiStats hot[TL_NEMA_N_SPHERES];
  double background_mean[TL_NEMA_N_SPHERES];     /* C_B,j */
  double background_sd[TL_NEMA_N_SPHERES];       /* SD_j (over the ROI means, K - 1) */
  double contrast_recovery[TL_NEMA_N_SPHERES];   /* CR_H,j (fraction; 1 = full recovery) */
  double variability[TL_NEMA_N_SPHERES];         /* N_j (fraction) */
  double lung_mean, lung_residual;               /* C_lung, dC_lung (fraction) */
  double mean_cr, mean_variability;              /* over the six sizes (the plotted point) */
} TlNemaResult;

/* FALSE (GError) when the grid misses the spheres' plane or the phantom's options are bad. */
TL_API gboolean tl_nema_layout_init(TlNemaLayout *l, const TlImageGrid *grid, const TlNemaOptions *opt,
                             GError **error);
/* `im` must be on the layout's grid. */
TL_API void tl_nema_analyse(const TlNemaLayout *l, const TlImage *im, TlNemaResult *out);
/* CSV header and one row (no newline; the row allocated): per-sphere CR, N, then
 * lung residual. */
TL_API const char *tl_nema_csv_header(void);
TL_API char *tl_nema_csv_row(const TlNemaResult *r);

G_END_DECLS
