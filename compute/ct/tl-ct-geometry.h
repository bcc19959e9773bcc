/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlCtGeometry: a CT acquisition as one 3x4 projection matrix per view (the general form
 * of RabbitCT, elsa and RTK; Siegl et al. 2011 eq. 1), plus the detector size in pixels.
 *
 * Conventions (docs/ct.md):
 *  - world coordinates in mm; the volume is a TlImageGrid in the same frame; the rotation
 *    axis of the generated orbits is z and the isocentre is the world origin;
 *  - P maps a world point X (homogeneous) to (u w, v w, w): u = column, v = row of the
 *    detector in pixel indices, pixel centres at integers (0 .. det_u-1, 0 .. det_v-1);
 *  - rows of P are stored row-major: P[0..3] = first row. Siegl et al. 2011 numbers the same
 * entries
 *    column-major (a0 = P[0], a1 = P[4], a2 = P[8], a3 = P[1], ...);
 *  - cone beam: P = [M | p], M invertible; stored normalised so that the third row of M is
 *    a unit vector and w(origin) > 0, so w is the depth of X in mm along the principal ray;
 *  - parallel beam: the third row of P is (0, 0, 0, 1) (w = 1); rays run along the null
 *    direction of M's first two rows.
 * Constructors and the loader call tl_ct_geometry_validate(): zero views, an empty
 * detector, a singular matrix, a non-finite entry or a mixed cone/parallel set -> GError. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

typedef enum {
  TL_CT_CONE,
  TL_CT_PARALLEL,
} TlCtBeam;

typedef struct {
  TlCtBeam beam;
  guint n_views;
  guint det_u, det_v;    /* detector columns and rows, in pixels */
  double *matrices;      /* 12 per view, row-major 3x4, normalised as above */
  char *description;     /* free text (generator parameters...); may be NULL */
} TlCtGeometry;

/* Circular orbit about z (both beams). Source of view k at angle
 * b_k = start_deg + k * arc_deg / n_views: s = sid (cos b, sin b, 0). The detector is
 * perpendicular to the central ray, sdd from the source (parallel beam: through the
 * origin), its u axis along e_u = (-sin b, cos b, 0), v along e_v = (0, 0, 1); its centre
 * sits offset_u, offset_v mm from the central ray along e_u, e_v. */
typedef struct {
  TlCtBeam beam;
  guint n_views;
  double start_deg, arc_deg;
  double sid_mm, sdd_mm;          /* cone only */
  guint det_u, det_v;
  double pixel_u_mm, pixel_v_mm;
  double offset_u_mm, offset_v_mm;
} TlCtOrbit;

/* The frame of one generated view: source (cone), detector centre, unit axes, and the
 * unit ray direction (from source to detector; parallel: shared by every ray). */
typedef struct {
  double source[3];
  double det_centre[3];
  double e_u[3], e_v[3];
  double dir[3];
} TlCtViewFrame;

/* Defaults: cone, 360 deg, start 0. */
TL_API void tl_ct_orbit_init_cone(TlCtOrbit *o, guint n_views, double sid_mm, double sdd_mm,
                           guint det_u, guint det_v, double pixel_u_mm, double pixel_v_mm);
/* Parallel beam over 180 deg; det_v = 1 with pixel_v_mm = slice thickness is 2-D. */
TL_API void tl_ct_orbit_init_parallel(TlCtOrbit *o, guint n_views, guint det_u, guint det_v,
                               double pixel_u_mm, double pixel_v_mm);
TL_API gboolean tl_ct_orbit_validate(const TlCtOrbit *o, GError **error);
/* World position of the centre of detector pixel (u, v) of a frame. */
TL_API void tl_ct_orbit_frame(const TlCtOrbit *o, guint view, TlCtViewFrame *f);
TL_API void tl_ct_orbit_pixel(const TlCtOrbit *o, const TlCtViewFrame *f, double u, double v,
                       double out[3]);

TL_API TlCtGeometry *tl_ct_geometry_new_orbit(const TlCtOrbit *o, GError **error);
/* From explicit matrices (12 per view, any scale; normalised here). */
TL_API TlCtGeometry *tl_ct_geometry_new_matrices(TlCtBeam beam, guint n_views, guint det_u,
                                          guint det_v, const double *matrices, GError **error);
TL_API TlCtGeometry *tl_ct_geometry_copy(const TlCtGeometry *g);
TL_API void tl_ct_geometry_free(TlCtGeometry *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtGeometry, tl_ct_geometry_free)

/* Normalises the matrices in place and checks everything listed in the header comment. */
TL_API gboolean tl_ct_geometry_validate(TlCtGeometry *g, GError **error);
/* A geometry with views first, first + stride, ... (count of them). */
TL_API TlCtGeometry *tl_ct_geometry_subset(const TlCtGeometry *g, guint first, guint stride, guint count,
                                    GError **error);

/* Per-view quantities derived from the matrix. */
TL_API const double *tl_ct_geometry_matrix(const TlCtGeometry *g, guint view);
/* Cone: the source (camera centre, P s = 0). Parallel: FALSE (at infinity). */
TL_API gboolean tl_ct_geometry_source(const TlCtGeometry *g, guint view, double out[3]);
/* Unit direction of the ray through pixel (u, v), from the source side to the detector. */
TL_API void tl_ct_geometry_ray(const TlCtGeometry *g, guint view, double u, double v, double origin[3],
                        double dir[3]);
/* The rays of a view as the kernels build them (shaders/ct/ct_common.glsl): pixel (u, v) ->
 * A + t D, A = Qa (u, v, 1), D = normalise(Qd (u, v, 1)), both affine in (u, v). A is
 * where the ray crosses the plane through `ref` perpendicular to the principal ray (cone:
 * to the central ray; parallel: to D), so a kernel holds points near the volume in float
 * rather than the distant source. Cone: Qd = M^-1, the source is A - t_src D with
 * t_src = depth(ref) |Qd (u, v, 1)|, returned as *depth_ref; parallel: Qd = [0 0 D], 0. */
TL_API void tl_ct_geometry_ray_basis(const TlCtGeometry *g, guint view, const double ref[3],
                              double Qa[9], double Qd[9], double *depth_ref);
/* The ray of pixel (u, v) from a view's basis (ref = origin), as tl_ct_geometry_ray gives it:
 * for loops over many pixels of one view. */
TL_API void tl_ct_ray_from_basis(TlCtBeam beam, const double Qa[9], const double Qd[9], double depth_ref,
                          double u, double v, double origin[3], double dir[3]);
/* Projects X: returns w (cone: depth in mm; parallel: 1) and sets *u, *v. */
TL_API double tl_ct_geometry_project(const TlCtGeometry *g, guint view, const double x[3], double *u,
                              double *v);
/* Focal length along u in pixels (cone: sdd / pixel_u; parallel: 1 / pixel_u) and the
 * depth of the world origin (cone: the source-isocentre distance; parallel: 1). */
TL_API void tl_ct_geometry_scales(const TlCtGeometry *g, guint view, double *f_u, double *depth_origin);

/* Text form (docs/ct.md "Geometry file"): a header of key = value lines and one line
 * "view K = p00 p01 ... p23" per view; numbers are written so they read back exactly. */
TL_API char *tl_ct_geometry_to_text(const TlCtGeometry *g);
TL_API TlCtGeometry *tl_ct_geometry_from_text(const char *text, const char *source, GError **error);
TL_API TlCtGeometry *tl_ct_geometry_load(const char *path, GError **error);
TL_API gboolean tl_ct_geometry_save(const TlCtGeometry *g, const char *path, GError **error);

G_END_DECLS
