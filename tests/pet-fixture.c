/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pet-fixture.h"
#include <math.h>
#include "image/tl-phantom.h"

TlImageGrid fx_grid(guint nx, guint ny, guint nz, float vx, float vy, float vz) {
  TlImageGrid g = {.dims = {nx, ny, nz}, .voxel_mm = {vx, vy, vz}};
  for (int k = 0; k < 3; k++) g.origin_mm[k] = -0.5f * g.dims[k] * g.voxel_mm[k] + 0.5f * g.voxel_mm[k];
  return g;
}

guint64 fx_voxels(const TlImageGrid *g) { return (guint64)g->dims[0] * g->dims[1] * g->dims[2]; }

TlScanner *fx_ring_scanner(guint rings, guint sides, guint per_side, float pitch, float radius,
                           float ring_pitch, guint max_ring_difference) {
  TlScanner *s = g_new0(TlScanner, 1);
  s->name = g_strdup("test-ring");
  s->kind = TL_SCANNER_RING;
  s->n_rings = rings;
  s->crystals_per_ring = sides * per_side;
  s->n_crystals = rings * s->crystals_per_ring;
  s->max_ring_difference = max_ring_difference;
  s->crystal_size[0] = pitch;
  s->crystal_size[1] = ring_pitch;
  s->crystal_size[2] = 10;
  s->crystals = g_new0(TlCrystal, s->n_crystals);
  for (guint r = 0; r < rings; r++)
    for (guint side = 0; side < sides; side++) {
      double phi = 2 * G_PI * side / sides;
      double nx = cos(phi), ny = sin(phi); /* outward; the normal points inward */
      for (guint c = 0; c < per_side; c++) {
        double off = (c - 0.5 * (per_side - 1)) * pitch;
        TlCrystal *x = &s->crystals[r * s->crystals_per_ring + side * per_side + c];
        x->centre[0] = (float)(radius * nx - off * ny);
        x->centre[1] = (float)(radius * ny + off * nx);
        x->centre[2] = (float)((r - 0.5 * (rings - 1)) * ring_pitch);
        x->normal[0] = (float)-nx;
        x->normal[1] = (float)-ny;
        x->group = side;
        x->ring = r;
      }
    }
  return s;
}

void fx_scanner_free(TlScanner *s) {
  if (!s) return;
  g_free(s->name);
  g_free(s->crystals);
  g_free(s);
}

gboolean fx_pair_allowed(const TlScanner *s, guint a, guint b) {
  const TlCrystal *x = &s->crystals[a], *y = &s->crystals[b];
  return x->group != y->group && (guint)ABS((int)x->ring - (int)y->ring) <= s->max_ring_difference;
}

TlArray *fx_upload(TlContext *ctx, const void *src, guint64 n, gsize elem) {
  GError *error = NULL;
  TlArray *a = tl_array_new(ctx, MAX(n, 1), elem, &error);
  g_assert_no_error(error);
  if (n) g_assert_true(tl_array_upload_range(a, 0, n, src, &error));
  g_assert_no_error(error);
  return a;
}

TlArray *fx_upload_crystals(TlContext *ctx, const TlScanner *s) {
  return fx_upload(ctx, s->crystals, s->n_crystals, sizeof(TlCrystal));
}

float *fx_download(const TlArray *a) {
  GError *error = NULL;
  float *out = g_new(float, tl_array_length(a));
  g_assert_true(tl_array_download(a, out, &error));
  g_assert_no_error(error);
  return out;
}

float *fx_random_floats(guint64 n, guint32 seed, double lo, double hi) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  float *v = g_new(float, n);
  for (guint64 i = 0; i < n; i++) v[i] = (float)g_rand_double_range(r, lo, hi);
  return v;
}

void fx_random_unit(GRand *r, double u[3]) {
  double z = g_rand_double_range(r, -1, 1), phi = g_rand_double_range(r, 0, 2 * G_PI);
  double s = sqrt(1 - z * z);
  u[0] = s * cos(phi);
  u[1] = s * sin(phi);
  u[2] = z;
}

double fx_dot(const float *a, const float *b, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

double fx_max_abs(const double *a, guint64 n) {
  double m = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, fabs(a[i]));
  return m;
}

/* Mean of the image over voxels of the middle slices (the end slices see few LORs) whose
 * centre lies at a distance in [r0, r1) mm from the cylinder axis. */
double fx_ring_mean(const TlImage *im, double r0, double r1) {
  const TlImageGrid *g = &im->grid;
  double sum = 0;
  guint n = 0;
  for (guint k = 1; k + 1 < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double c[3];
        tl_image_grid_voxel_centre(g, i, j, k, c);
        double r = hypot(c[0], c[1]);
        if (r < r0 || r >= r1) continue;
        sum += im->data[i + g->dims[0] * (j + g->dims[1] * k)];
        n++;
      }
  g_assert_cmpuint(n, >, 20);
  return sum / n;
}

TlImage *fx_point_source(double x, double y, double z) {
  TlImageGrid g = {{1, 1, 1}, {0.001f, 0.001f, 0.001f}, {(float)x, (float)y, (float)z}};
  TlImage *im = tl_image_new(&g);
  im->data[0] = 1.0f;
  return im;
}

void fx_cylinder(const TlImageGrid *g, double radius, double half_length, double mu, guint sub,
                 TlImage **act, TlImage **mu_out) {
  g_autoptr(TlPhantom) ph = tl_phantom_new("cylinder");
  TlShape c = {.kind = TL_SHAPE_CYLINDER, .radius = (float)radius,
               .half_length = (float)half_length, .axis = 2, .activity = 1.0f, .mu = (float)mu,
               .flags = TL_SHAPE_SETS_ACTIVITY | (mu > 0 ? TL_SHAPE_SETS_MU : 0)};
  tl_phantom_add(ph, &c);
  GError *error = NULL;
  gboolean ok = tl_phantom_rasterise(ph, g, sub, act, mu_out, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

TlListmode *fx_simulate(const TlScanner *s, const TlImage *act, const TlImage *mu,
                        const TlSimulateParams *p, TlSimulateStats *st) {
  GError *error = NULL;
  TlListmode *lm = tl_simulate(s, act, mu, p, NULL, NULL, NULL, st, &error);
  g_assert_no_error(error);
  g_assert_nonnull(lm);
  return lm;
}

TlListmode *fx_nema_like(const TlImageGrid *g, float half_length, float cold_radius,
                         const FxSphere *hot, guint n_hot, guint64 events, guint32 seed,
                         TlImage **truth) {
  GError *error = NULL;
  TlScanner *fx = fx_ring_scanner(8, 16, 4, 4.97f, 50.0f, 5.0f, 7);
  g_autoptr(TlScanner) s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  g_autoptr(TlPhantom) ph = tl_phantom_new("NEMA-like");
  TlShape body = {.kind = TL_SHAPE_CYLINDER, .centre = {0, 0, 0}, .radius = 25.0f,
                  .half_length = half_length, .axis = 2, .activity = 1.0f,
                  .flags = TL_SHAPE_SETS_ACTIVITY};
  TlShape cold = body;
  cold.radius = cold_radius, cold.activity = 0.0f;
  tl_phantom_add(ph, &body);
  tl_phantom_add(ph, &cold);
  for (guint i = 0; i < n_hot; i++) {
    TlShape h = body;
    h.kind = TL_SHAPE_SPHERE;
    h.centre[0] = hot[i].x, h.centre[1] = hot[i].y, h.radius = hot[i].radius, h.activity = 4.0f;
    tl_phantom_add(ph, &h);
  }
  g_autoptr(TlImage) act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, g, 0, &act, NULL, &error));
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.exact_count = TRUE;
  sp.seed = seed;
  TlListmode *lm = tl_simulate(s, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  if (truth) *truth = g_steal_pointer(&act);
  return lm;
}
