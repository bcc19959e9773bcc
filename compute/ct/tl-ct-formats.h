/* CT projection formats other than .tlct (docs/formats.md "CT projections"): the Data
 * Exchange HDF5 layout of synchrotron tomography (tl-format-dxchange.c, through libhdf5),
 * and the parallel-beam geometry such files imply. */
#pragma once
#include "tl-ct-data.h"

G_BEGIN_DECLS

/* Bounds on what a projection file may declare, checked before anything is allocated. */
#define TL_DXCHANGE_MAX_DIM 65536u            /* views, rows or columns */
#define TL_DXCHANGE_MAX_VALUES (1ull << 30)   /* values in /exchange/data (4 GiB of float32) */
/* Flat/dark normalisation clamps the transmission (I - D) / (W - D) below at this value
 * (a line integral of -log(1e-6) = 13.8), as where W <= D or the ratio is not finite. */
#define TL_DXCHANGE_MIN_TRANSMISSION 1e-6

/* Parallel beam with one view per angle (radians) about z, detector columns along
 * e_u = (-sin t, cos t, 0), rows along z, pixels pixel_u x pixel_v mm, the rotation axis
 * projecting onto column centre_u (pixel index, may be fractional) and the middle row. */
TlCtGeometry *tl_ct_geometry_new_parallel_angles(guint n_views, const double *theta_rad,
                                                 guint det_u, guint det_v, double pixel_u_mm,
                                                 double pixel_v_mm, double centre_u,
                                                 GError **error);

/* Reads /exchange/data, data_white, data_dark (optional: zero) and theta; returns line
 * integrals p = -log((I - D) / (W - D)), W and D the per-pixel means of the flats and darks,
 * a parallel-beam geometry with 1 mm pixels (the layout stores no pixel size) and the
 * rotation axis on the middle column (nor a centre: see tl-ct-centre.h), and a suggested
 * grid of det_u x det_u x det_v voxels. The description says what was clamped. */
TlCtData *tl_ct_dxchange_load(const char *path, GError **error);

extern const TlFormatClass tl_format_dxchange;

G_END_DECLS
