/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Phantoms: lists of simple shapes, each with an activity concentration and an attenuation
 * coefficient (mm^-1, 511 keV), rasterised onto any TlImageGrid with sub-voxel
 * supersampling. Shapes are painted in order: a later shape replaces what it covers (by
 * the fraction of the voxel it covers). Thin sources (points, lines) add activity instead. */
#pragma once
#include "tl-api.h"
#include "tl-image.h"

G_BEGIN_DECLS

#define TL_MU_WATER 0.0096f /* mm^-1 at 511 keV */
#define TL_MU_LUNG 0.0029f  /* NEMA lung insert, ~0.3 g/ml */

typedef enum {
  TL_SHAPE_CYLINDER,  /* radius, half_length along axis */
  TL_SHAPE_SPHERE,    /* radius */
  TL_SHAPE_NEMA_BODY, /* IEC body interior (see tl-phantom.c), half_length along z */
  TL_SHAPE_POINT,     /* thin: adds `activity` (per mm^3 x mm^3) to the voxel holding centre */
  TL_SHAPE_LINE,      /* thin: segment along axis, `activity` per mm of length */
} TlShapeKind;

enum { TL_SHAPE_SETS_ACTIVITY = 1, TL_SHAPE_SETS_MU = 2 };

typedef struct {
  TlShapeKind kind;
  float centre[3]; /* mm, scanner coordinates */
  float radius;
  float half_length;
  guint axis;      /* 0, 1, 2 = x, y, z */
  float activity;  /* concentration (arbitrary units per mm^3) */
  float mu;        /* mm^-1 */
  guint flags;     /* TL_SHAPE_SETS_*: what the shape paints */
} TlShape;

typedef struct {
  char *name;
  GArray *shapes; /* of TlShape, in painting order */
} TlPhantom;

typedef struct {
  float centre_mm[3]; /* where the phantom's centre goes (default 0, 0, 0) */
  float sphere_ratio; /* NEMA sphere : background activity (default 4; 0 = cold spheres) */
  guint axis;         /* cylinder and Derenzo rod axis (default 2 = z; Chou et al. 2012 uses x) */
  float radius_mm;    /* cylinder radius / line-source spread (0 = from the grid) */
  float length_mm;    /* cylinder and line length (0 = from the grid) */
} TlPhantomOptions;

TL_API void tl_phantom_options_init(TlPhantomOptions *o);
TL_API TlPhantom *tl_phantom_new(const char *name);
TL_API void tl_phantom_add(TlPhantom *ph, const TlShape *shape);
TL_API void tl_phantom_free(TlPhantom *ph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlPhantom, tl_phantom_free)

/* "cylinder", "lines", "derenzo" (Chou et al. 2012's micro rods), "derenzo-clinical", "nema",
 * "point". `grid` (may be NULL) sizes the cylinder and line sources when the options
 * leave them 0. */
TL_API TlPhantom *tl_phantom_new_preset(const char *name, const TlPhantomOptions *opt,
                                 const TlImageGrid *grid, GError **error);
TL_API const char *const *tl_phantom_preset_names(void); /* NULL-terminated */

/* Rasterises with supersample^3 points in each partly covered voxel (0 = 4). Either
 * output may be NULL. The activity is checked (finite, >= 0). */
TL_API gboolean tl_phantom_rasterise(const TlPhantom *ph, const TlImageGrid *grid, guint supersample,
                              TlImage **activity, TlImage **mu, GError **error);

/* Whether point p (mm) lies inside the solid shape (thin shapes: never). */
TL_API gboolean tl_shape_contains(const TlShape *s, const double p[3]);

G_END_DECLS
