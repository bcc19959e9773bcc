/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT phantoms: sums of uniform ellipsoids in normalised coordinates: the grid's centre is 0
 * and half its larger transaxial (x, y) extent is 1, on all three axes, so the phantom fills
 * a cubic grid and a one-slice grid holds its central slice. Presets:
 *   "shepp-logan"           3-D Shepp-Logan (Shepp & Logan 1974 contrasts: 2, -0.98, ...)
 *   "modified-shepp-logan"  the higher-contrast variant (Toft: 1, -0.8, -0.2, ..., 0.1)
 *   "ball"                  one ball of radius 0.8, value 1
 * The slice z = 0 of either Shepp-Logan is the familiar 2-D phantom (Petit 2020 Code 3.2
 * uses the modified one). Values are attenuation per mm once multiplied by `scale`.
 * A PET phantom's mu-map (compute/image/tl-phantom.h, mm^-1 at 511 keV) is reused as an
 * attenuation object through tl_ct_phantom_mu_map(). */
#pragma once
#include "tl-api.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

typedef struct {
  double value;
  double centre[3];  /* normalised coordinates */
  double axes[3];    /* semi-axes along x, y, z before rotation */
  double phi_deg;    /* rotation about z (x towards y) */
} TlCtEllipsoid;

typedef struct {
  char *name;
  guint n;
  TlCtEllipsoid *e;
  double *rot;  /* per ellipsoid cos(phi), sin(phi): set by tl_ct_phantom_new */
} TlCtPhantom;

TL_API const char *const *tl_ct_phantom_preset_names(void); /* NULL-terminated */
TL_API TlCtPhantom *tl_ct_phantom_new_preset(const char *name, GError **error);
TL_API TlCtPhantom *tl_ct_phantom_new(const char *name, guint n, const TlCtEllipsoid *e);
TL_API void tl_ct_phantom_free(TlCtPhantom *ph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtPhantom, tl_ct_phantom_free)

/* value(point) * scale at the voxel centres (supersample <= 1) or averaged over
 * supersample^3 points per voxel. */
TL_API TlImage *tl_ct_phantom_rasterise(const TlCtPhantom *ph, const TlImageGrid *grid,
                                 guint supersample, double scale, GError **error);
/* Exact line integral (mm) of value * scale along origin + t dir, dir a unit vector in mm,
 * over t >= 0 when half_line, else over all t. */
TL_API double tl_ct_phantom_line_integral(const TlCtPhantom *ph, const TlImageGrid *grid, double scale,
                                   const double origin[3], const double dir[3],
                                   gboolean half_line);

/* The mu-map (mm^-1) of a PET phantom preset ("nema", "cylinder", ...) on grid, times
 * scale (e.g. mu(70 keV) / mu(511 keV) ~ 2 for water). */
TL_API TlImage *tl_ct_phantom_mu_map(const char *pet_preset, const TlImageGrid *grid, double scale,
                              GError **error);

G_END_DECLS
