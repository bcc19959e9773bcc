/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Phantom presets and their rasterisation with sub-voxel supersampling. */
#include "tl-phantom.h"
#include <math.h>
#include <string.h>

static const char *const preset_names[] = {"cylinder", "lines", "derenzo", "derenzo-clinical",
                                           "nema", "point", NULL};

const char *const *tl_phantom_preset_names(void) { return preset_names; }

void tl_phantom_options_init(TlPhantomOptions *o) {
  memset(o, 0, sizeof *o);
  o->sphere_ratio = 4.0f;
  o->axis = 2;
}

TlPhantom *tl_phantom_new(const char *name) {
  TlPhantom *ph = g_new0(TlPhantom, 1);
  ph->name = g_strdup(name);
  ph->shapes = g_array_new(FALSE, FALSE, sizeof(TlShape));
  return ph;
}

void tl_phantom_add(TlPhantom *ph, const TlShape *shape) { g_array_append_val(ph->shapes, *shape); }

void tl_phantom_free(TlPhantom *ph) {
  if (!ph) return;
  g_free(ph->name);
  g_array_unref(ph->shapes);
  g_free(ph);
}

static TlShape shape(TlShapeKind kind, const float c[3], float dx, float dy, float dz,
                     float radius, float half_length, guint axis, float act, float mu, guint flags) {
  return (TlShape){kind, {c[0] + dx, c[1] + dy, c[2] + dz}, radius, half_length, axis, act, mu, flags};
}

/* In-plane axes (u, v) for rods along `axis`, right-handed: z -> (x, y), x -> (y, z). */
static void plane_axes(guint axis, int *u, int *v) {
  *u = (int)(axis + 1) % 3;
  *v = (int)(axis + 2) % 3;
}

/* NEMA IEC body phantom (NEMA NU 2 / IEC 61675-1 image-quality phantom), interior: top half a
 * disc of radius 147 mm, bottom a 140 mm wide flat part 77 mm deep with 77 mm corner radii,
 * 180 mm long; the 50 mm lung insert on the axis of the top disc moved 35 mm up so the body is
 * centred; six spheres of 10-37 mm inner diameter, centres on a 57.2 mm circle about the
 * insert, 70 mm from the +z end wall (z = +20 mm). Walls are left out. */
static void add_nema(TlPhantom *ph, const TlPhantomOptions *o) {
  const float *c = o->centre_mm;
  tl_phantom_add(ph, &(TlShape){TL_SHAPE_NEMA_BODY, {c[0], c[1], c[2]}, 147.0f, 90.0f, 2, 1.0f,
                                TL_MU_WATER, TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU});
  TlShape lung = shape(TL_SHAPE_CYLINDER, c, 0, 0, 0, 25.0f, 90.0f, 2, 0.0f, TL_MU_LUNG,
                       TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU);
  tl_phantom_add(ph, &lung);
  static const float diam[6] = {37, 28, 22, 17, 13, 10};
  for (int i = 0; i < 6; i++) {
    double a = G_PI * (180.0 + 60.0 * i) / 180.0; /* largest at -x, then counter-clockwise */
    TlShape s = shape(TL_SHAPE_SPHERE, c, (float)(57.2 * cos(a)), (float)(57.2 * sin(a)), 20.0f,
                      0.5f * diam[i], 0, 2, o->sphere_ratio, TL_MU_WATER,
                      TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU);
    tl_phantom_add(ph, &s);
  }
}

/* Hot-rod Derenzo: six sectors of 60 degrees, one rod diameter d each, rods on a triangular
 * lattice with centre spacing 2d (Chou et al. 2012: "The spacing between the rods in the same
 * group is
 * twice their diameter"). Row k of a sector holds k+1 rods at r0 + k*2d*sqrt(3)/2 from the
 * centre; with r0 = 2d every edge rod keeps d from the sector edge. Rows are added while the
 * outermost rod stays inside r_rods. Group 0 (largest) points along +v, then
 * counter-clockwise. Cold water body, hot rods. */
static void add_derenzo(TlPhantom *ph, const TlPhantomOptions *o, const float diam[6], float body_r,
                        float r_rods, float half_len) {
  int u, v;
  plane_axes(o->axis, &u, &v);
  TlShape body = shape(TL_SHAPE_CYLINDER, o->centre_mm, 0, 0, 0, body_r, half_len, o->axis, 0.0f,
                       TL_MU_WATER, TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU);
  tl_phantom_add(ph, &body);
  for (int g = 0; g < 6; g++) {
    double d = diam[g], p = 2 * d, r0 = 2 * d, th = G_PI / 2 + g * G_PI / 3;
    double er[2] = {cos(th), sin(th)}, et[2] = {-sin(th), cos(th)};
    for (int k = 0;; k++) {
      double rk = r0 + k * p * sqrt(3.0) / 2;
      if (hypot(rk, k * p / 2) + d / 2 > r_rods) break;
      for (int m = 0; m <= k; m++) {
        double t = (m - 0.5 * k) * p;
        TlShape rod = body;
        rod.radius = (float)(d / 2);
        rod.activity = 1.0f;
        rod.centre[u] += (float)(rk * er[0] + t * et[0]);
        rod.centre[v] += (float)(rk * er[1] + t * et[1]);
        tl_phantom_add(ph, &rod);
      }
    }
  }
}

TlPhantom *tl_phantom_new_preset(const char *name, const TlPhantomOptions *opt,
                                 const TlImageGrid *grid, GError **error) {
  TlPhantomOptions o;
  if (opt)
    o = *opt;
  else
    tl_phantom_options_init(&o);
  if (o.axis > 2 || !isfinite(o.sphere_ratio) || o.sphere_ratio < 0 || !(o.radius_mm >= 0) ||
      !(o.length_mm >= 0) || !isfinite(o.centre_mm[0] + o.centre_mm[1] + o.centre_mm[2])) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "phantom '%s': options out of range (axis %u: expected 0-2; sphere ratio %g, "
                "radius %g, length %g: expected finite and >= 0)",
                name, o.axis, o.sphere_ratio, o.radius_mm, o.length_mm);
    return NULL;
  }
  /* sizes from the grid: a transaxial fraction of its half-width, most of its length */
  float half_t = 150.0f, len = 180.0f;
  if (grid) {
    int u, v;
    plane_axes(o.axis, &u, &v);
    half_t = 0.5f * MIN(grid->dims[u] * grid->voxel_mm[u], grid->dims[v] * grid->voxel_mm[v]);
    len = 0.9f * grid->dims[o.axis] * grid->voxel_mm[o.axis];
  }
  float radius = o.radius_mm > 0 ? o.radius_mm : MIN(0.66f * half_t, 100.0f);
  float length = o.length_mm > 0 ? o.length_mm : MIN(len, 180.0f);
  TlPhantom *ph = tl_phantom_new(name);
  const float *c = o.centre_mm;
  guint both = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU;
  if (g_strcmp0(name, "nema") == 0) {
    add_nema(ph, &o);
  } else if (g_strcmp0(name, "cylinder") == 0) {
    TlShape s = shape(TL_SHAPE_CYLINDER, c, 0, 0, 0, radius, length / 2, o.axis, 1, TL_MU_WATER, both);
    tl_phantom_add(ph, &s);
  } else if (g_strcmp0(name, "lines") == 0) {
    /* van Gendt et al. 2021: "a simulated scan of a phantom image containing three radioactive line
     * sources". In air, parallel to the axis, at unequal distances so flips show. */
    int u, v;
    plane_axes(o.axis, &u, &v);
    static const float pos[3][2] = {{0, 0}, {1, 0}, {0, 0.5f}};
    for (int i = 0; i < 3; i++) {
      TlShape s = shape(TL_SHAPE_LINE, c, 0, 0, 0, 0, length / 2, o.axis, 1, 0, TL_SHAPE_SETS_ACTIVITY);
      s.centre[u] += pos[i][0] * radius;
      s.centre[v] += pos[i][1] * radius;
      tl_phantom_add(ph, &s);
    }
  } else if (g_strcmp0(name, "derenzo") == 0) {
    /* Chou et al. 2012's micro Derenzo: rods of 2.4 ... 0.75 mm in a 45 mm wide, 20 mm long body */
    static const float d[6] = {2.4f, 2.0f, 1.7f, 1.35f, 1.0f, 0.75f};
    add_derenzo(ph, &o, d, 22.5f, 20.0f, 10.0f);
  } else if (g_strcmp0(name, "derenzo-clinical") == 0) {
    /* clinical scale (Jaszczak-type insert): 12.7 ... 4.8 mm rods, 216 mm body, 88 mm rods */
    static const float d[6] = {12.7f, 11.1f, 9.5f, 7.9f, 6.4f, 4.8f};
    add_derenzo(ph, &o, d, 108.0f, 97.0f, 44.0f);
  } else if (g_strcmp0(name, "point") == 0) {
    TlShape s = shape(TL_SHAPE_POINT, c, 0, 0, 0, 0, 0, 2, 1000.0f, 0, TL_SHAPE_SETS_ACTIVITY);
    tl_phantom_add(ph, &s);
  } else {
    g_autofree char *known = g_strjoinv(", ", (char **)preset_names);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown phantom '%s' (expected one of: %s)",
                name, known);
    tl_phantom_free(ph);
    return NULL;
  }
  return ph;
}

/* --- rasterisation --- */

static gboolean nema_inside(double x, double y) {
  double yy = y + 35.0; /* relative to the centre of the top disc */
  if (yy >= 0) return x * x + yy * yy <= 147.0 * 147.0;
  if (yy < -77.0) return FALSE;
  double ax = fabs(x);
  return ax <= 70.0 || (ax - 70.0) * (ax - 70.0) + yy * yy <= 77.0 * 77.0;
}

static gboolean inside(const TlShape *s, const double p[3]) {
  double d[3] = {p[0] - s->centre[0], p[1] - s->centre[1], p[2] - s->centre[2]};
  switch (s->kind) {
  case TL_SHAPE_SPHERE: return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= (double)s->radius * s->radius;
  case TL_SHAPE_CYLINDER: {
    int u = (int)(s->axis + 1) % 3, v = (int)(s->axis + 2) % 3;
    return fabs(d[s->axis]) <= s->half_length &&
           d[u] * d[u] + d[v] * d[v] <= (double)s->radius * s->radius;
  }
  case TL_SHAPE_NEMA_BODY: return fabs(d[2]) <= s->half_length && nema_inside(d[0], d[1]);
  default: return FALSE;
  }
}

/* Public for analyses that need the phantom's outline (image/tl-nema.c). */
gboolean tl_shape_contains(const TlShape *s, const double p[3]) {
  return inside(s, p);
}

static void bbox(const TlShape *s, double lo[3], double hi[3]) {
  double e[3] = {s->radius, s->radius, s->radius};
  if (s->kind == TL_SHAPE_CYLINDER) e[s->axis] = s->half_length;
  if (s->kind == TL_SHAPE_NEMA_BODY) e[0] = 147.0, e[1] = 112.0, e[2] = s->half_length;
  for (int d = 0; d < 3; d++) lo[d] = s->centre[d] - e[d], hi[d] = s->centre[d] + e[d];
}

/* Index range of the voxels that overlap [lo, hi] along axis d; FALSE if none. */
static gboolean range(const TlImageGrid *g, int d, double lo, double hi, guint *i0, guint *i1) {
  double a = floor((lo - g->origin_mm[d]) / g->voxel_mm[d] + 0.5);
  double b = floor((hi - g->origin_mm[d]) / g->voxel_mm[d] + 0.5);
  if (b < 0 || a > g->dims[d] - 1.0) return FALSE;
  *i0 = (guint)MAX(a, 0);
  *i1 = (guint)MIN(b, g->dims[d] - 1.0);
  return TRUE;
}

static void paint(float *v, float f, float value) {
  if (v) *v = *v * (1 - f) + f * value;
}

/* Volume shapes are convex, so a voxel whose 8 corners are inside is fully covered; the
 * others get supersample^3 samples. */
static void raster_volume(const TlShape *s, const TlImageGrid *g, guint ss, float *act, float *mu) {
  double lo[3], hi[3];
  guint r0[3], r1[3];
  bbox(s, lo, hi);
  for (int d = 0; d < 3; d++)
    if (!range(g, d, lo[d], hi[d], &r0[d], &r1[d])) return;
  for (guint k = r0[2]; k <= r1[2]; k++)
    for (guint j = r0[1]; j <= r1[1]; j++)
      for (guint i = r0[0]; i <= r1[0]; i++) {
        double c[3], p[3];
        tl_image_grid_voxel_centre(g, i, j, k, c);
        int corners = 0;
        for (int q = 0; q < 8; q++) {
          for (int d = 0; d < 3; d++) p[d] = c[d] + ((q >> d & 1) ? 0.5 : -0.5) * g->voxel_mm[d];
          corners += inside(s, p);
        }
        float f = 1.0f;
        if (corners < 8) {
          guint n = 0;
          for (guint a = 0; a < ss; a++)
            for (guint b = 0; b < ss; b++)
              for (guint e = 0; e < ss; e++) {
                p[0] = c[0] + ((e + 0.5) / ss - 0.5) * g->voxel_mm[0];
                p[1] = c[1] + ((b + 0.5) / ss - 0.5) * g->voxel_mm[1];
                p[2] = c[2] + ((a + 0.5) / ss - 0.5) * g->voxel_mm[2];
                n += inside(s, p);
              }
          f = (float)n / (ss * ss * ss);
          if (n == 0) continue;
        }
        guint64 idx = i + (guint64)g->dims[0] * (j + (guint64)g->dims[1] * k);
        if (s->flags & TL_SHAPE_SETS_ACTIVITY) paint(act ? &act[idx] : NULL, f, s->activity);
        if (s->flags & TL_SHAPE_SETS_MU) paint(mu ? &mu[idx] : NULL, f, s->mu);
      }
}

/* Thin sources add activity per voxel volume: a point its amount, a line its length inside. */
static void raster_thin(const TlShape *s, const TlImageGrid *g, float *act) {
  if (!act) return;
  double vol = (double)g->voxel_mm[0] * g->voxel_mm[1] * g->voxel_mm[2];
  guint idx[3], r0, r1;
  int a = s->kind == TL_SHAPE_LINE ? (int)s->axis : -1;
  for (int d = 0; d < 3; d++) {
    if (d == a) continue;
    if (!range(g, d, s->centre[d], s->centre[d], &idx[d], &r1)) return;
  }
  if (a < 0) {
    act[idx[0] + (guint64)g->dims[0] * (idx[1] + (guint64)g->dims[1] * idx[2])] += (float)(s->activity / vol);
    return;
  }
  double lo = s->centre[a] - s->half_length, hi = s->centre[a] + s->half_length;
  if (!range(g, a, lo, hi, &r0, &r1)) return;
  for (guint i = r0; i <= r1; i++) {
    double c = g->origin_mm[a] + i * (double)g->voxel_mm[a];
    double len = MIN(hi, c + 0.5 * g->voxel_mm[a]) - MAX(lo, c - 0.5 * g->voxel_mm[a]);
    if (len <= 0) continue;
    idx[a] = i;
    act[idx[0] + (guint64)g->dims[0] * (idx[1] + (guint64)g->dims[1] * idx[2])] += (float)(s->activity * len / vol);
  }
}

static gboolean shape_ok(const TlShape *s, guint i, const char *name, GError **error) {
  gboolean thin = s->kind == TL_SHAPE_POINT || s->kind == TL_SHAPE_LINE;
  const char *bad = NULL;
  if (s->kind > TL_SHAPE_LINE)
    bad = "a known shape kind";
  else if (s->axis > 2)
    bad = "axis 0, 1 or 2";
  else if (!isfinite(s->centre[0] + s->centre[1] + s->centre[2]))
    bad = "a finite centre";
  else if (!thin && !(s->radius > 0 && isfinite(s->radius)))
    bad = "a positive finite radius";
  else if ((s->kind == TL_SHAPE_LINE || s->kind == TL_SHAPE_CYLINDER ||
            s->kind == TL_SHAPE_NEMA_BODY) && !(s->half_length > 0 && isfinite(s->half_length)))
    bad = "a positive finite half length";
  else if (!(s->activity >= 0) || !isfinite(s->activity))
    bad = "a finite activity >= 0 (NaN and negative activity are not allowed)";
  else if (!(s->mu >= 0) || !isfinite(s->mu))
    bad = "a finite attenuation coefficient >= 0";
  if (bad)
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "phantom '%s': shape %u (activity %g, mu %g, radius %g): expected %s", name, i,
                s->activity, s->mu, s->radius, bad);
  return !bad;
}

gboolean tl_phantom_rasterise(const TlPhantom *ph, const TlImageGrid *grid, guint supersample,
                              TlImage **activity, TlImage **mu, GError **error) {
  if (!tl_image_grid_validate(grid, error)) {
    g_prefix_error(error, "phantom '%s': ", ph->name);
    return FALSE;
  }
  for (guint i = 0; i < ph->shapes->len; i++)
    if (!shape_ok(&g_array_index(ph->shapes, TlShape, i), i, ph->name, error)) return FALSE;
  guint ss = supersample ? MIN(supersample, 64) : 4;
  g_autoptr(TlImage) act = tl_image_new(grid);
  g_autoptr(TlImage) att = mu ? tl_image_new(grid) : NULL;
  for (guint i = 0; i < ph->shapes->len; i++) {
    const TlShape *s = &g_array_index(ph->shapes, TlShape, i);
    if (s->kind == TL_SHAPE_POINT || s->kind == TL_SHAPE_LINE)
      raster_thin(s, grid, act->data);
    else
      raster_volume(s, grid, ss, act->data, att ? att->data : NULL);
  }
  if (!tl_image_check_nonnegative(act, ph->name, error)) return FALSE;
  if (activity) *activity = g_steal_pointer(&act);
  if (mu) *mu = g_steal_pointer(&att);
  return TRUE;
}
