/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT projection formats other than .tlct (docs/formats.md "CT projections"): the Data
 * Exchange HDF5 layout of synchrotron tomography (tl-format-dxchange.c, through libhdf5),
 * and the parallel-beam geometry such files imply. */
#pragma once
#include "tl-api.h"
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
TL_API TlCtGeometry *tl_ct_geometry_new_parallel_angles(guint n_views, const double *theta_rad,
                                                 guint det_u, guint det_v, double pixel_u_mm,
                                                 double pixel_v_mm, double centre_u,
                                                 GError **error);

/* Reads /exchange/data, data_white, data_dark (optional: zero) and theta; returns line
 * integrals p = -log((I - D) / (W - D)), W and D the per-pixel means of the flats and darks,
 * a parallel-beam geometry with 1 mm pixels (the layout stores no pixel size) and the
 * rotation axis on the middle column (nor a centre: see tl-ct-centre.h), and a suggested
 * grid of det_u x det_u x det_v voxels. The description says what was clamped. */
TL_API TlCtData *tl_ct_dxchange_load(const char *path, GError **error);

TL_API extern const TlFormatClass tl_format_dxchange;



/* --- TIFF stacks of projections (tl-format-tiff-stack.c, through libtiff) ---
 * A multi-page TIFF, one page per view (uint8, uint16, int16 or float32 greyscale, strips),
 * described by the sidecar "<file>.tlgeom" (docs/formats.md "TIFF projection stacks"):
 *
 *   tomolab-tiff-stack = 1
 *   beam = parallel               # or cone (then sid_mm and sdd_mm)
 *   angles = 0 180                # start and arc in degrees: view k at start + k arc / views
 *   pixel_mm = 0.65 0.65          # detector pixel (columns, rows)
 *   centre_u = 319.5              # optional: the column the rotation axis projects onto
 *   sid_mm = 500                  # cone only: source-isocentre and source-detector distances
 *   sdd_mm = 800
 *   values = counts               # counts (with flat, optional dark), transmission, line-integrals
 *   flat = flat.tif               # open-beam pages (mean), relative to the sidecar's folder
 *   dark = dark.tif               # optional
 */
typedef enum { TL_TIFF_COUNTS, TL_TIFF_TRANSMISSION, TL_TIFF_LINE_INTEGRALS } TlTiffValues;

typedef struct {
  TlCtBeam beam;
  double start_deg, arc_deg;
  double pixel_mm[2];
  double centre_u;    /* NAN: the middle column */
  double sid_mm, sdd_mm;
  TlTiffValues values;
  char *flat, *dark;  /* as written in the sidecar; NULL when absent */
} TlTiffSidecar;

/* Parses the sidecar text; errors name the source, the line, the key and the value. */
TL_API gboolean tl_ct_tiff_sidecar_parse(const char *text, gsize len, const char *source,
                                  TlTiffSidecar *out, GError **error);
TL_API void tl_ct_tiff_sidecar_clear(TlTiffSidecar *s);
TL_API TlCtData *tl_ct_tiff_stack_load(const char *path, GError **error);

TL_API extern const TlFormatClass tl_format_tiff_stack;
G_END_DECLS
