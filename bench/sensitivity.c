/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/sensitivity: the DMI scanner's sensitivity image (every crystal pair), its time and
 * its accuracy (bench/README.md, section "bench/sensitivity").
 *
 *   bench/sensitivity [--grid NX NY NZ VOX] [--projector siddon] [--full] [--float]
 *                     [--old FILE] [--ref-all] [--ref-stride M]
 *
 * Times tl_projector_sensitivity with the automatic method (the symmetric one on the DMI;
 * Siddon's walk in double where the device has shaderFloat64), with --full the full method
 * too, and with --float the float walk (TL_SENS_PRECISION_FLOAT), comparing them. --old FILE: a cache file of an
 * earlier version (key text, NUL, float32 voxels) compared with the new image. --ref-stride M:
 * the pairs p = 0 mod M (every M-th pair, the whole geometry) back-projected by the device's
 * full method and by the double-precision plain C reference of the tests (tests/pet-ref.c),
 * summed in double; 0 = skip. --ref-all: every pair in double (the C reference on one pair
 * per orbit, completed by the symmetries in double). The reference walks the grid exactly
 * centred, its first planes at -n vox / 2 in double, where the float origin of
 * tl_image_grid_centred is 5.5e-6 mm off on the demo grid (the device's double walk does the
 * same: tl_sensitivity_plane_lo). Default grid: the demo's, 108 x 108 x 36 voxels of 5.56 mm.
 *
 * Accuracy measure: the per-voxel relative difference |a - b| / b over the voxels whose b is
 * at least 1 % of the image's largest value (the others lie at the corners of the grid,
 * outside the scanner's field of view, where a few pairs graze a voxel and one float chord's
 * rounding is the whole value), and the largest difference over all voxels relative to the
 * largest value. */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pet-ref.h"
#include "pet/project/tl-projector.h"
#include "pet/scanner/tl-scanner.h"
#include "pet/project/tl-sensitivity.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static void die(GError *e) {
  fprintf(stderr, "sensitivity: %s\n", e ? e->message : "failed");
  exit(1);
}

static double now(void) { return g_get_monotonic_time() * 1e-6; }

static TlImageGrid grid;

/* Also by distance from the axis: within 150 mm (the NEMA phantom's body), 150-250 mm, beyond
 * (the grid's outer voxels, up to 300 mm, where float plane positions are coarsest). */
static void compare(const char *what, const float *a, const double *b, guint64 n) {
  double m = 0, dmax = 0, rel = 0, sum_rel = 0, zone[3] = {0, 0, 0};
  guint64 counted = 0;
  for (guint64 i = 0; i < n; i++) m = MAX(m, fabs(b[i]));
  for (guint64 i = 0; i < n; i++) {
    double d = fabs(a[i] - b[i]);
    dmax = MAX(dmax, d);
    if (b[i] >= 0.01 * m) {
      rel = MAX(rel, d / b[i]);
      sum_rel += (a[i] - b[i]) / b[i];
      counted++;
      guint64 x = i % grid.dims[0], y = i / grid.dims[0] % grid.dims[1];
      double px = grid.origin_mm[0] + x * grid.voxel_mm[0];
      double py = grid.origin_mm[1] + y * grid.voxel_mm[1];
      double r = sqrt(px * px + py * py);
      int z = r < 150 ? 0 : r < 250 ? 1 : 2;
      zone[z] = MAX(zone[z], d / b[i]);
    }
  }
  if (getenv("SENS_WHERE")) {
    guint64 at = 0;
    double worst = 0;
    for (guint64 i = 0; i < n; i++)
      if (b[i] >= 0.01 * m && fabs(a[i] - b[i]) / b[i] > worst) worst = fabs(a[i] - b[i]) / b[i], at = i;
    printf("    worst voxel (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
           "): %.9g vs %.9g\n", at % grid.dims[0], at / grid.dims[0] % grid.dims[1],
           at / grid.dims[0] / grid.dims[1], a[at], b[at]);
  }
  printf("  %s: per voxel (>= 1%% of max, %" G_GUINT64_FORMAT " voxels) max %.3g (r < 150 mm "
         "%.3g, 150-250 mm %.3g, beyond %.3g), mean signed %.3g; max |diff| / max %.3g\n", what,
         counted, rel, zone[0], zone[1], zone[2], counted ? sum_rel / counted : 0.0,
         m > 0 ? dmax / m : dmax);
}

static float *device_image(TlProjector *p, const TlScanner *sc, const TlArray *cry, guint stride,
                           double *seconds) {
  GError *error = NULL;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(p));
  g_autoptr(TlStream) s = tl_stream_new(p->ctx, &error);
  g_autoptr(TlArray) img = s ? tl_array_new_float(p->ctx, nv, &error) : NULL;
  if (!img || !tl_array_zero(img, &error)) die(error);
  double t0 = now();
  if (!tl_projector_sensitivity(p, s, sc, cry, stride, 0, img, &error) ||
      !tl_stream_finish(s, &error))
    die(error);
  *seconds = now() - t0;
  float *h = g_new(float, nv);
  if (!tl_array_download(img, h, &error)) die(error);
  return h;
}

int main(int argc, char **argv) {
  GError *error = NULL;
  guint dims[3] = {108, 108, 36};
  float vox = 5.56f;
  const char *projector = "siddon", *old = NULL;
  gboolean full = FALSE, flt = FALSE;
  guint ref_stride = 0;
  gboolean ref_sym = FALSE;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--grid") && i + 4 < argc) {
      for (int k = 0; k < 3; k++) dims[k] = (guint)atoi(argv[++i]);
      vox = (float)atof(argv[++i]);
    } else if (!strcmp(argv[i], "--projector") && i + 1 < argc) {
      projector = argv[++i];
    } else if (!strcmp(argv[i], "--full")) {
      full = TRUE;
    } else if (!strcmp(argv[i], "--float")) {
      flt = TRUE;
    } else if (!strcmp(argv[i], "--old") && i + 1 < argc) {
      old = argv[++i];
    } else if (!strcmp(argv[i], "--ref-all")) {
      ref_sym = TRUE;
    } else if (!strcmp(argv[i], "--ref-stride") && i + 1 < argc) {
      ref_stride = (guint)atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: sensitivity [--grid NX NY NZ VOX] [--projector NAME] [--full] "
                      "[--float] [--old FILE] [--ref-all] [--ref-stride M]\n");
      return 2;
    }
  }
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  g_autoptr(TlScanner) sc = ctx ? tl_scanner_new_preset("dmi", &error) : NULL;
  if (!sc) die(error);
  TlImageGrid g = tl_image_grid_centred(dims[0], dims[1], dims[2], vox, vox, vox);
  grid = g;
  double plane_lo[3];
  for (int k = 0; k < 3; k++) plane_lo[k] = -0.5 * dims[k] * (double)vox;
  guint64 nv = tl_image_grid_n_voxels(&g);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, projector, &g, &error);
  g_autoptr(TlArray) cry = p ? tl_scanner_upload(sc, ctx, &error) : NULL;
  if (!cry) die(error);
  double load[3] = {0};
  getloadavg(load, 3);
  guint order = 1;
  TlSensMethod m = tl_projector_sensitivity_plan(p, sc, 1, FALSE, &order);
  printf("DMI sensitivity, %u x %u x %u voxels of %.2f mm, %s, %" G_GUINT64_FORMAT
         " pairs; device %s; load average %.2f\n", dims[0], dims[1], dims[2], vox, projector,
         tl_pair_count(sc->n_crystals), tl_context_info(ctx)->name, load[0]);
  { /* the host's share of the symmetric method: finding the symmetries, listing the pairs */
    double t0 = now();
    TlSensSymmetry sym;
    tl_sensitivity_symmetry(sc, &g, tl_sensitivity_swaps(p), &sym);
    double t1 = now();
    guint64 counts[5] = {0};
    g_autofree guint32 *list = sym.order > 1 ? tl_sensitivity_orbit_pairs(sc, &sym, counts) : NULL;
    printf("  host: symmetries (mask 0x%04x) %.3f s, pair list %.2f s: %" G_GUINT64_FORMAT
           " + %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
           " pairs fixed by 1, 2, 4, 8 symmetries\n", sym.mask, t1 - t0, now() - t1, counts[0],
           counts[1], counts[2], counts[3]);
    tl_sensitivity_symmetry_clear(&sym);
  }
  double t_auto = 0, t_full = 0;
  g_autofree float *a = device_image(p, sc, cry, 1, &t_auto);
  printf("  automatic method: %s, %u symmetries, walk in %s: %.1f s\n",
         m == TL_SENS_SYMMETRIC ? "symmetric" : "full", order,
         tl_projector_sensitivity_in_double(p) ? "double" : "float", t_auto);
  g_autofree double *ad = g_new(double, nv);
  for (guint64 i = 0; i < nv; i++) ad[i] = a[i];
  g_autofree float *f = NULL;
  if (full) {
    tl_projector_set_sensitivity_method(p, TL_SENS_FULL);
    f = device_image(p, sc, cry, 1, &t_full);
    tl_projector_set_sensitivity_method(p, TL_SENS_AUTO);
    printf("  full method: %.1f s\n", t_full);
    compare("full vs automatic", f, ad, nv);
  }
  g_autofree float *fw = NULL;
  if (flt) {
    double t_float = 0;
    tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_FLOAT);
    fw = device_image(p, sc, cry, 1, &t_float);
    tl_projector_set_sensitivity_precision(p, TL_SENS_PRECISION_AUTO);
    printf("  automatic method, float walk: %.1f s\n", t_float);
    compare("float walk vs automatic", fw, ad, nv);
  }
  g_autofree float *o = NULL;
  if (old) {
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(old, &data, &len, &error)) die(error);
    const char *nul = memchr(data, 0, len);
    gsize off = nul ? (gsize)(nul - data) + 1 : 0;
    if (!nul || len - off != nv * sizeof(float)) {
      fprintf(stderr, "sensitivity: %s is not a cache file of this grid\n", old);
      return 1;
    }
    o = g_new(float, nv);
    memcpy(o, data + off, nv * sizeof(float));
    compare("old (float atomics) vs new", o, ad, nv);
  }
  if (ref_sym) {
    /* every pair in double: one per orbit (the host's list, weights 1 / |G_p|) back-projected by
     * the C reference, then summed over the symmetries' voxel maps in double — the same exact
     * sum as the full one (the symmetries hold for the crystal table to 4 float ulps) */
    double t0 = now();
    TlSensSymmetry sym;
    tl_sensitivity_symmetry(sc, &g, tl_sensitivity_swaps(p), &sym);
    guint64 counts[5] = {0};
    g_autofree guint32 *list = tl_sensitivity_orbit_pairs(sc, &sym, counts);
    TlRefModel model = {.kind = !strcmp(projector, "joseph") ? TL_REF_JOSEPH : TL_REF_SIDDON,
                        .plane_lo = plane_lo};
    g_autofree double *part = g_new0(double, nv);
    guint64 first = 0;
    for (int c = 0; c < 5; c++) {
      double w = ldexp(1.0, -c);
#pragma omp parallel
      {
        double *mine = g_new0(double, nv);
#pragma omp for schedule(dynamic, 4096)
        for (guint64 q = first; q < first + counts[c]; q++) {
          guint ca, cb;
          tl_pair_decode(sc->n_crystals, list[q], &ca, &cb);
          const float *pa = sc->crystals[ca].centre, *pb = sc->crystals[cb].centre;
          double p0[3] = {pa[0], pa[1], pa[2]}, p1[3] = {pb[0], pb[1], pb[2]};
          tl_ref_back_model(&model, &g, p0, p1, w, mine);
        }
#pragma omp critical
        for (guint64 i = 0; i < nv; i++) part[i] += mine[i];
        g_free(mine);
      }
      first += counts[c];
    }
    g_autofree double *ref = g_new0(double, nv);
    for (guint64 i = 0; i < nv; i++) {
      guint64 x = i % dims[0], y = i / dims[0] % dims[1], z = i / dims[0] / dims[1];
      for (guint c = 0; c < 16; c++) {
        if (!(sym.mask >> c & 1)) continue;
        guint64 u = x, v = y, t = z;
        if (c & 4) u = y, v = x;
        if (c & 1) u = dims[0] - 1 - u;
        if (c & 2) v = dims[1] - 1 - v;
        if (c & 8) t = dims[2] - 1 - t;
        ref[i] += part[u + dims[0] * (v + dims[1] * t)];
      }
    }
    tl_sensitivity_symmetry_clear(&sym);
    printf("  double reference of every pair (by the symmetries): %.1f s\n", now() - t0);
    compare("automatic method vs double reference, every pair", a, ref, nv);
    if (o) compare("old (float atomics) vs double reference, every pair", o, ref, nv);
    if (f) compare("full method vs double reference, every pair", f, ref, nv);
    if (fw) compare("float walk vs double reference, every pair", fw, ref, nv);
  }
  if (ref_stride > 0) {
    double t_dev = 0, t0 = now();
    tl_projector_set_sensitivity_method(p, TL_SENS_FULL);
    g_autofree float *d = device_image(p, sc, cry, ref_stride, &t_dev);
    guint64 pairs = tl_pair_count(sc->n_crystals);
    TlRefModel model = {.kind = !strcmp(projector, "joseph") ? TL_REF_JOSEPH : TL_REF_SIDDON,
                        .plane_lo = plane_lo};
    g_autofree double *ref = g_new0(double, nv);
#pragma omp parallel
    {
      double *mine = g_new0(double, nv);
#pragma omp for schedule(dynamic, 4096)
      for (guint64 q = 0; q < pairs; q += ref_stride) {
        guint ca, cb;
        tl_pair_decode(sc->n_crystals, q, &ca, &cb);
        if (!tl_scanner_pair_allowed(sc, ca, cb)) continue;
        const float *pa = sc->crystals[ca].centre, *pb = sc->crystals[cb].centre;
        double p0[3] = {pa[0], pa[1], pa[2]}, p1[3] = {pb[0], pb[1], pb[2]};
        tl_ref_back_model(&model, &g, p0, p1, 1.0, mine);
      }
#pragma omp critical
      for (guint64 i = 0; i < nv; i++) ref[i] += mine[i];
      g_free(mine);
    }
    printf("  pairs p = 0 mod %u: device %.1f s, double reference %.1f s\n", ref_stride, t_dev,
           now() - t0 - t_dev);
    compare("device (full, fixed point) vs double reference", d, ref, nv);
  }
  return 0;
}
