/* SPDX-License-Identifier: GPL-3.0-or-later */
/* NEMA NU 2 image quality on a reconstruction of the NEMA IEC body phantom (tl-nema.h).
 * The phantom's geometry comes from the phantom itself (tl_phantom_new_preset "nema"), so
 * the analysis follows any change there. */
#include <math.h>
#include <string.h>
#include "image/tl-nema.h"
#include "image/tl-phantom.h"

#define BG_RADIUS 18.5    /* the 37 mm background circle */
#define EDGE_GAP 15.0     /* NEMA: ROI edges 15 mm from the phantom's edge */
#define INSERT_GAP 5.0    /* clearance to spheres and lung insert (covers partial voxels) */

void tl_nema_options_init(TlNemaOptions *o) {
  memset(o, 0, sizeof *o);
  o->sphere_ratio = 4.0;
}

/* Whether the whole disc of radius r about (x, y) at height z is inside the body: the body
 * is convex, so the centre and 72 points on the rim settle it to well under a millimetre. */
static gboolean disc_inside(const TlShape *body, double x, double y, double z, double r) {
  double p[3] = {x, y, z};
  if (!tl_shape_contains(body, p))
    return FALSE;
  for (int a = 0; a < 72; a++) {
    double t = G_PI * a / 36.0, q[3] = {x + r * cos(t), y + r * sin(t), z};
    if (!tl_shape_contains(body, q))
      return FALSE;
  }
  return TRUE;
}

/* Centre of the slice holding z (clamped to the grid: callers check the range). */
static double slice_centre(const TlImageGrid *g, double z) {
  double k = floor((z - g->origin_mm[2]) / g->voxel_mm[2] + 0.5);
  return g->origin_mm[2] + k * g->voxel_mm[2];
}

static gboolean slice_on_grid(const TlImageGrid *g, double z) {
  double k = floor((z - g->origin_mm[2]) / g->voxel_mm[2] + 0.5);
  return k >= 0 && k <= g->dims[2] - 1.0;
}

gboolean tl_nema_layout_init(TlNemaLayout *l, const TlImageGrid *grid, const TlNemaOptions *opt,
                             GError **error) {
  memset(l, 0, sizeof *l);
  if (!tl_image_grid_validate(grid, error))
    return FALSE;
  l->grid = *grid;
  l->opt = *opt;
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  for (int a = 0; a < 3; a++)
    po.centre_mm[a] = (float)opt->centre_mm[a];
  po.sphere_ratio = (float)opt->sphere_ratio;
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, NULL, error);
  if (!ph)
    return FALSE;
  const TlShape *body = NULL, *lung = NULL, *spheres[TL_NEMA_N_SPHERES];
  guint ns = 0;
  for (guint i = 0; i < ph->shapes->len; i++) {
    const TlShape *s = &g_array_index(ph->shapes, TlShape, i);
    if (s->kind == TL_SHAPE_NEMA_BODY) body = s;
    else if (s->kind == TL_SHAPE_CYLINDER) lung = s;
    else if (s->kind == TL_SHAPE_SPHERE && ns < TL_NEMA_N_SPHERES) spheres[ns++] = s;
  }
  g_assert(body && lung && ns == TL_NEMA_N_SPHERES);  /* the preset's own layout */
  const double zc = spheres[0]->centre[2];
  if (!slice_on_grid(grid, zc)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "NEMA analysis: the spheres' plane (z = %.1f mm) is outside the image (z from %.1f to %.1f mm)",
                zc, grid->origin_mm[2], grid->origin_mm[2] + (grid->dims[2] - 1) * grid->voxel_mm[2]);
    return FALSE;
  }
  const double z0 = slice_centre(grid, zc);
  const double vxy = 0.5 * hypot(grid->voxel_mm[0], grid->voxel_mm[1]);

  /* Hot spheres: axial circles on the slice nearest each sphere's centre. */
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    const TlShape *s = spheres[j];
    double r = s->radius;
    l->diameter_mm[j] = 2.0 * r;
    double zs = slice_centre(grid, s->centre[2]);
    double rad = r;
    if (!opt->full_diameter) {
      /* A voxel lies wholly inside the sphere when its farthest corner does: at most
       * |dz| + vz/2 away along z and half the in-plane diagonal further out. */
      double dz = fabs(zs - s->centre[2]) + 0.5 * grid->voxel_mm[2];
      double h = r * r - dz * dz;
      rad = h > 0 ? MAX(sqrt(h) - vxy, 0) : 0;
      /* Voxels too coarse for any to lie wholly inside: the one holding the centre. */
      double ci = floor((s->centre[0] - grid->origin_mm[0]) / grid->voxel_mm[0] + 0.5);
      double cj = floor((s->centre[1] - grid->origin_mm[1]) / grid->voxel_mm[1] + 0.5);
      double d = hypot(s->centre[0] - (grid->origin_mm[0] + ci * grid->voxel_mm[0]),
                       s->centre[1] - (grid->origin_mm[1] + cj * grid->voxel_mm[1]));
      rad = MAX(rad, d * (1 + 1e-9) + 1e-9);
    }
    l->hot[j] = (TlRoi){TL_ROI_CIRCLE, {s->centre[0], s->centre[1], zs}, rad, 2};
  }

  /* Background: candidates on a 1 mm lattice of the central slice, 15 mm between the 37 mm
   * circle and the body's edge, clear of the inserts (on every slice: the spheres' full
   * radius is used although the slices at +-10, +-20 mm cut them smaller). */
  GArray *cand = g_array_new(FALSE, FALSE, 2 * sizeof(double));
  const double cx = opt->centre_mm[0], cy = opt->centre_mm[1];
  for (double y = cy - 115; y <= cy + 115; y += 1.0)
    for (double x = cx - 150; x <= cx + 150; x += 1.0) {
      if (hypot(x - lung->centre[0], y - lung->centre[1]) < lung->radius + BG_RADIUS + INSERT_GAP)
        continue;
      gboolean clear = TRUE;
      for (int j = 0; j < TL_NEMA_N_SPHERES && clear; j++)
        clear = hypot(x - spheres[j]->centre[0], y - spheres[j]->centre[1]) >=
                spheres[j]->radius + BG_RADIUS + INSERT_GAP;
      if (!clear || !disc_inside(body, x, y, zc, BG_RADIUS + EDGE_GAP))
        continue;
      double p[2] = {x, y};
      g_array_append_val(cand, p);
    }
  g_assert(cand->len >= TL_NEMA_N_BACKGROUND);
  /* Farthest-point selection: start at the candidate farthest from the lung insert (the
   * first such in lattice order), then repeatedly the one farthest from those chosen. */
  double pos[TL_NEMA_N_BACKGROUND][2];
  g_autofree double *dist = g_new(double, cand->len);
  for (guint c = 0; c < cand->len; c++) {
    const double *p = &g_array_index(cand, double, 2 * c);
    dist[c] = -hypot(p[0] - lung->centre[0], p[1] - lung->centre[1]);  /* seed rule */
  }
  for (int n = 0; n < TL_NEMA_N_BACKGROUND; n++) {
    guint best = 0;
    for (guint c = 1; c < cand->len; c++)
      if ((n == 0 ? -dist[c] > -dist[best] : dist[c] > dist[best]))
        best = c;
    memcpy(pos[n], &g_array_index(cand, double, 2 * best), sizeof pos[n]);
    for (guint c = 0; c < cand->len; c++) {
      const double *p = &g_array_index(cand, double, 2 * c);
      double d = hypot(p[0] - pos[n][0], p[1] - pos[n][1]);
      dist[c] = n == 0 ? d : MIN(dist[c], d);
    }
  }
  g_array_unref(cand);
  /* Five slices: central and +-10, +-20 mm (those on the grid). */
  guint nb = 0;
  for (int s = -2; s <= 2; s++) {
    double z = zc + 10.0 * s;
    if (!slice_on_grid(grid, z))
      continue;
    double zk = slice_centre(grid, z);
    for (int p = 0; p < TL_NEMA_N_BACKGROUND; p++, nb++)
      for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
        l->background[j][nb] = (TlRoi){TL_ROI_CIRCLE, {pos[p][0], pos[p][1], zk}, 0.5 * l->diameter_mm[j], 2};
  }
  l->n_background = nb;
  /* Lung insert: a 30 mm circle on its axis, central slice. */
  l->lung = (TlRoi){TL_ROI_CIRCLE, {lung->centre[0], lung->centre[1], z0}, 15.0, 2};
  return TRUE;
}

void tl_nema_analyse(const TlNemaLayout *l, const TlImage *im, TlNemaResult *out) {
  memset(out, 0, sizeof *out);
  double cr_sum = 0, n_sum = 0;
  int cr_n = 0, n_n = 0;
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++) {
    tl_roi_stats(&l->hot[j], im, &out->hot[j]);
    /* C_B,j: the mean of the background ROI means; SD_j = sqrt(sum (C_B,j,k - C_B,j)^2 / (K - 1)). */
    double sum = 0, ss = 0;
    guint k = 0;
    g_autofree double *means = g_new(double, MAX(l->n_background, 1));
    for (guint b = 0; b < l->n_background; b++) {
      TlRoiStats st;
      tl_roi_stats(&l->background[j][b], im, &st);
      if (st.n == 0)
        continue;
      means[k++] = st.mean;
      sum += st.mean;
    }
    double cb = k ? sum / k : NAN;
    for (guint b = 0; b < k; b++)
      ss += (means[b] - cb) * (means[b] - cb);
    out->background_mean[j] = cb;
    out->background_sd[j] = k > 1 ? sqrt(ss / (k - 1)) : NAN;
    /* NU 2-2018 eq. 7.4.1: Q_H,j = ((C_H,j / C_B,j) - 1) / ((a_H / a_B) - 1) (as a fraction). */
    double ratio = l->opt.sphere_ratio;
    out->contrast_recovery[j] = out->hot[j].n && cb != 0 && ratio != 1
                                ? (out->hot[j].mean / cb - 1.0) / (ratio - 1.0) : NAN;
    /* N_j = SD_j / C_B,j */
    out->variability[j] = cb != 0 ? out->background_sd[j] / cb : NAN;
    if (isfinite(out->contrast_recovery[j])) cr_sum += out->contrast_recovery[j], cr_n++;
    if (isfinite(out->variability[j])) n_sum += out->variability[j], n_n++;
  }
  TlRoiStats lung;
  tl_roi_stats(&l->lung, im, &lung);
  out->lung_mean = lung.mean;
  /* dC_lung = C_lung / C_B,37mm */
  out->lung_residual = lung.n && out->background_mean[0] != 0 ? lung.mean / out->background_mean[0] : NAN;
  out->mean_cr = cr_n ? cr_sum / cr_n : NAN;
  out->mean_variability = n_n ? n_sum / n_n : NAN;
}

const char *tl_nema_csv_header(void) {
  return "CR 37mm,CR 28mm,CR 22mm,CR 17mm,CR 13mm,CR 10mm,"
         "N 37mm,N 28mm,N 22mm,N 17mm,N 13mm,N 10mm,lung residual";
}

char *tl_nema_csv_row(const TlNemaResult *r) {
  GString *s = g_string_new(NULL);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
    g_string_append_printf(s, "%.6g,", r->contrast_recovery[j]);
  for (int j = 0; j < TL_NEMA_N_SPHERES; j++)
    g_string_append_printf(s, "%.6g,", r->variability[j]);
  g_string_append_printf(s, "%.6g", r->lung_residual);
  return g_string_free(s, FALSE);
}
