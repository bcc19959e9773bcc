/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Ellipsoid phantoms: rasterisation and exact line integrals (for simulation without the
 * "inverse crime" of projecting with the reconstruction's own projector). */
#include "tl-ct-phantom.h"
#include "image/tl-phantom.h"
#include <math.h>
#include <string.h>

/* 3-D Shepp-Logan: the 2-D phantom's ellipses (Shepp & Logan 1974) as ellipsoids, with the
 * z semi-axes and centres of the usual 3-D extension (Kak & Slaney ch. 3 table; the
 * "phantom3d" tables derived from it). Columns: contrast (original), contrast (modified,
 * Toft), centre x y z, semi-axes a b c, rotation about z in degrees. */
static const double tl_shepp_logan[10][9] = {
  {  2.00,  1.0,  0.00,  0.0000,  0.00,  0.6900, 0.920, 0.810,   0 },
  { -0.98, -0.8,  0.00, -0.0184,  0.00,  0.6624, 0.874, 0.780,   0 },
  { -0.02, -0.2,  0.22,  0.0000,  0.00,  0.1100, 0.310, 0.220, -18 },
  { -0.02, -0.2, -0.22,  0.0000,  0.00,  0.1600, 0.410, 0.280,  18 },
  {  0.01,  0.1,  0.00,  0.3500, -0.15,  0.2100, 0.250, 0.410,   0 },
  {  0.01,  0.1,  0.00,  0.1000,  0.25,  0.0460, 0.046, 0.050,   0 },
  {  0.01,  0.1,  0.00, -0.1000,  0.25,  0.0460, 0.046, 0.050,   0 },
  {  0.01,  0.1, -0.08, -0.6050,  0.00,  0.0460, 0.023, 0.050,   0 },
  {  0.01,  0.1,  0.00, -0.6060,  0.00,  0.0230, 0.023, 0.020,   0 },
  {  0.01,  0.1,  0.06, -0.6050,  0.00,  0.0230, 0.046, 0.020,   0 },
};

static const char *const tl_ct_presets[] = {"shepp-logan", "modified-shepp-logan", "ball", NULL};

const char *const *tl_ct_phantom_preset_names(void) { return tl_ct_presets; }

TlCtPhantom *tl_ct_phantom_new(const char *name, guint n, const TlCtEllipsoid *e) {
  TlCtPhantom *ph = g_new0(TlCtPhantom, 1);
  ph->name = g_strdup(name);
  ph->n = n;
  ph->e = g_memdup2(e, sizeof *e * n);
  ph->rot = g_new(double, 2 * (gsize)n);
  for (guint i = 0; i < n; i++) {
    ph->rot[2 * i] = cos(e[i].phi_deg * G_PI / 180);
    ph->rot[2 * i + 1] = sin(e[i].phi_deg * G_PI / 180);
  }
  return ph;
}

TlCtPhantom *tl_ct_phantom_new_preset(const char *name, GError **error) {
  TlCtEllipsoid e[10];
  if (strcmp(name, "ball") == 0) {
    e[0] = (TlCtEllipsoid){.value = 1, .axes = {0.8, 0.8, 0.8}};
    return tl_ct_phantom_new(name, 1, e);
  }
  gboolean modified = strcmp(name, "modified-shepp-logan") == 0;
  if (!modified && strcmp(name, "shepp-logan") != 0) {
    g_autofree char *known = g_strjoinv(", ", (char **)tl_ct_presets);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown CT phantom '%s' (known: %s)",
                name, known);
    return NULL;
  }
  for (int i = 0; i < 10; i++) {
    const double *r = tl_shepp_logan[i];
    e[i] = (TlCtEllipsoid){.value = r[modified ? 1 : 0], .centre = {r[2], r[3], r[4]},
                           .axes = {r[5], r[6], r[7]}, .phi_deg = r[8]};
  }
  return tl_ct_phantom_new(name, 10, e);
}

void tl_ct_phantom_free(TlCtPhantom *ph) {
  if (!ph) return;
  g_free(ph->name);
  g_free(ph->e);
  g_free(ph->rot);
  g_free(ph);
}

/* mm -> normalised: one scale for all three axes, half the grid's larger transaxial extent,
 * about the grid's centre. A cubic grid holds the phantom's [-1, 1]^3; a thin grid (a 2-D
 * slice) cuts the middle of the 3-D phantom rather than squeezing it. */
typedef struct {
  double centre[3], half[3];
} Frame;

static void frame_of(const TlImageGrid *g, Frame *f) {
  double h = 0.5 * MAX(g->dims[0] * g->voxel_mm[0], g->dims[1] * g->voxel_mm[1]);
  for (int a = 0; a < 3; a++) {
    f->half[a] = h;
    f->centre[a] = g->origin_mm[a] + 0.5 * (g->dims[a] - 1.0) * g->voxel_mm[a];
  }
}

/* Point p (normalised) into ellipsoid i's unit-sphere coordinates. */
static void to_unit(const TlCtPhantom *ph, guint i, const double p[3], double y[3],
                    gboolean is_dir) {
  const TlCtEllipsoid *e = &ph->e[i];
  double c = ph->rot[2 * i], s = ph->rot[2 * i + 1];
  double q[3];
  for (int a = 0; a < 3; a++) q[a] = p[a] - (is_dir ? 0 : e->centre[a]);
  /* rotate by -phi: the ellipsoid's own axes */
  double x = c * q[0] + s * q[1], yy = -s * q[0] + c * q[1];
  y[0] = x / e->axes[0];
  y[1] = yy / e->axes[1];
  y[2] = q[2] / e->axes[2];
}

static double value_at(const TlCtPhantom *ph, const double p[3]) {
  double v = 0;
  for (guint i = 0; i < ph->n; i++) {
    double y[3];
    to_unit(ph, i, p, y, FALSE);
    if (y[0] * y[0] + y[1] * y[1] + y[2] * y[2] <= 1.0) v += ph->e[i].value;
  }
  return v;
}

TlImage *tl_ct_phantom_rasterise(const TlCtPhantom *ph, const TlImageGrid *grid,
                                 guint supersample, double scale, GError **error) {
  if (!tl_image_grid_validate(grid, error)) return NULL;
  guint s = MAX(supersample, 1u);
  Frame f;
  frame_of(grid, &f);
  TlImage *im = tl_image_new(grid);
  const guint nx = grid->dims[0], ny = grid->dims[1], nz = grid->dims[2];
  for (guint k = 0; k < nz; k++)
    for (guint j = 0; j < ny; j++)
      for (guint i = 0; i < nx; i++) {
        double acc = 0;
        for (guint c = 0; c < s * s * s; c++) {
          /* sub-sample offsets in (-0.5, 0.5) voxel, centred */
          double o[3] = {(c % s + 0.5) / s - 0.5, (c / s % s + 0.5) / s - 0.5,
                         (c / (s * s) + 0.5) / s - 0.5};
          double idx[3] = {i + o[0], j + o[1], k + o[2]}, p[3];
          for (int a = 0; a < 3; a++)
            p[a] = (grid->origin_mm[a] + idx[a] * grid->voxel_mm[a] - f.centre[a]) / f.half[a];
          acc += value_at(ph, p);
        }
        im->data[i + (gsize)nx * (j + (gsize)ny * k)] = (float)(scale * acc / (s * s * s));
      }
  return im;
}

double tl_ct_phantom_line_integral(const TlCtPhantom *ph, const TlImageGrid *grid, double scale,
                                   const double origin[3], const double dir[3],
                                   gboolean half_line) {
  Frame f;
  frame_of(grid, &f);
  double o[3], d[3];
  for (int a = 0; a < 3; a++) {
    o[a] = (origin[a] - f.centre[a]) / f.half[a];
    d[a] = dir[a] / f.half[a]; /* per mm of t */
  }
  double sum = 0;
  for (guint i = 0; i < ph->n; i++) {
    double y0[3], y1[3];
    to_unit(ph, i, o, y0, FALSE);
    to_unit(ph, i, d, y1, TRUE);
    /* |y0 + t y1|^2 = 1: a t^2 + 2 b t + c = 0 */
    double a = y1[0] * y1[0] + y1[1] * y1[1] + y1[2] * y1[2];
    double b = y0[0] * y1[0] + y0[1] * y1[1] + y0[2] * y1[2];
    double c = y0[0] * y0[0] + y0[1] * y0[1] + y0[2] * y0[2] - 1.0;
    double disc = b * b - a * c;
    if (a <= 0 || disc <= 0) continue;
    double r = sqrt(disc);
    double t0 = (-b - r) / a, t1 = (-b + r) / a;
    if (half_line) t0 = MAX(t0, 0.0);
    if (t1 > t0) sum += ph->e[i].value * (t1 - t0);
  }
  return scale * sum;
}

TlImage *tl_ct_phantom_mu_map(const char *pet_preset, const TlImageGrid *grid, double scale,
                              GError **error) {
  TlPhantomOptions opt;
  tl_phantom_options_init(&opt);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset(pet_preset, &opt, grid, error);
  if (!ph) return NULL;
  TlImage *mu = NULL;
  if (!tl_phantom_rasterise(ph, grid, 0, NULL, &mu, error)) return NULL;
  if (scale != 1.0) {
    guint64 n = tl_image_grid_n_voxels(grid);
    for (guint64 i = 0; i < n; i++) mu->data[i] = (float)(mu->data[i] * scale);
  }
  return mu;
}
