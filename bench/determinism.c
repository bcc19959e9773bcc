/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The cost of deterministic back projections (core/tl-fixed.h): one list-mode EM pass and one
 * back projection of random events of the small-animal scanner (64 x 64 x 40 voxels), and a
 * CT-cone back projection, each with the fixed-point sums (the default) and with float
 * atomics, alternating, best of `reps` wall times, in one run (ratios fixed / float).
 * Usage: determinism [events (50000)] [reps (2)]. */
#include <stdio.h>
#include <stdlib.h>
#include "ct/tl-ct-projector.h"
#include "pet/tl-pet-operator.h"
#include "tomolab-compute.h"

static G_NORETURN void die(GError *error) {
  fprintf(stderr, "determinism: %s\n", error ? error->message : "failed");
  exit(1);
}

static double now(void) { return g_get_monotonic_time() * 1e-6; }

int main(int argc, char **argv) {
  guint64 n = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 50000;
  guint reps = argc > 2 ? (guint)atoi(argv[2]) : 2;
  GError *error = NULL;
  setvbuf(stdout, NULL, _IOLBF, 0);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) die(error);
  printf("device: %s\n", tl_context_info(ctx)->name);
  TlScanner *sc = tl_scanner_new_preset("small-animal", &error);
  if (!sc) die(error);
  g_autoptr(TlListmode) lm = tl_listmode_new(sc, n); /* owns sc */
  g_autoptr(GRand) r = g_rand_new_with_seed(1);
  for (guint64 i = 0; i < n; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, sc->n_crystals);
      e->b = g_rand_int_range(r, 0, sc->n_crystals);
    } while (!tl_scanner_pair_allowed(sc, e->a, e->b));
  }
  TlImageGrid g = {.dims = {64, 64, 40}, .voxel_mm = {1.2f, 1.2f, 3.0f}};
  for (int k = 0; k < 3; k++) g.origin_mm[k] = -0.5f * (g.dims[k] - 1) * g.voxel_mm[k];
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  if (!s) die(error);
  static const char *const projectors[] = {"siddon", "joseph", "tor"};
  static const TlScatter modes[] = {TL_SCATTER_FIXED, TL_SCATTER_FLOAT_ATOMIC};
  printf("%-8s %-5s %12s %12s %8s\n", "PET", "pass", "fixed s", "float s", "ratio");
  for (gsize pj = 0; pj < G_N_ELEMENTS(projectors); pj++) {
    TlOperator *ops[2];
    for (int m = 0; m < 2; m++) {
      TlPetOperatorOptions o;
      tl_pet_operator_options_init(&o);
      o.projector = projectors[pj];
      o.scatter = modes[m];
      if (!(ops[m] = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error))) die(error);
    }
    guint64 nv = tl_operator_n_voxels(ops[0]), nd = tl_operator_n_data(ops[0]);
    g_autoptr(TlArray) x = tl_array_new_float(ctx, nv, &error);
    g_autoptr(TlArray) c = x ? tl_array_new_float(ctx, nv, &error) : NULL;
    g_autoptr(TlArray) w = c ? tl_array_new_float(ctx, nd, &error) : NULL;
    if (!w) die(error);
    g_autoptr(TlExprArgs) args = tl_expr_args_new();
    tl_expr_args_array(args, "x", x);
    tl_expr_args_array(args, "w", w);
    if (!tl_expr_assign(ctx, s, "x = 1", args, &error) ||
        !tl_expr_assign(ctx, s, "w = 1", args, &error))
      die(error);
    for (int pass = 0; pass < 2; pass++) {
      double best[2] = {G_MAXDOUBLE, G_MAXDOUBLE};
      for (guint rep = 0; rep <= reps; rep++) /* rep 0 builds the pipelines */
        for (int m = 0; m < 2; m++) {
          double t0 = now();
          if (!tl_stream_zero(s, c, &error) ||
              !(pass == 0 ? tl_operator_em(ops[m], s, 0, x, c, NULL, &error)
                          : tl_operator_adjoint(ops[m], s, 0, w, c, &error)) ||
              !tl_stream_finish(s, &error))
            die(error);
          if (rep) best[m] = MIN(best[m], now() - t0);
        }
      printf("%-8s %-5s %12.3f %12.3f %8.2f\n", projectors[pj], pass ? "back" : "em", best[0],
             best[1], best[0] / best[1]);
    }
    tl_operator_free(ops[0]);
    tl_operator_free(ops[1]);
  }

  /* CT: a 48^3 grid of 1 mm, 60 views of 64 x 48 pixels, cone beam */
  TlCtOrbit orb;
  tl_ct_orbit_init_cone(&orb, 60, 400, 800, 64, 48, 1.5, 1.5);
  g_autoptr(TlCtGeometry) cg = tl_ct_geometry_new_orbit(&orb, &error);
  if (!cg) die(error);
  TlImageGrid cgrid = tl_image_grid_centred(48, 48, 48, 1, 1, 1);
  TlCtViews v = tl_ct_views_all(cg);
  guint64 npix = tl_ct_views_n_pixels(cg, &v), nvox = tl_image_grid_n_voxels(&cgrid);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, npix, &error);
  g_autoptr(TlArray) img = y ? tl_array_new_float(ctx, nvox, &error) : NULL;
  if (!img) die(error);
  g_autoptr(TlExprArgs) cargs = tl_expr_args_new();
  tl_expr_args_array(cargs, "y", y);
  if (!tl_expr_assign(ctx, s, "y = 1", cargs, &error)) die(error);
  static const TlCtMethod methods[] = {TL_CT_JOSEPH, TL_CT_SIDDON, TL_CT_RAYCAST};
  static const TlCtBack backs[] = {TL_CT_BACK_SCATTER_FIXED, TL_CT_BACK_SCATTER};
  printf("%-8s %-5s %12s %12s %8s\n", "CT", "pass", "fixed s", "float s", "ratio");
  for (gsize mi = 0; mi < G_N_ELEMENTS(methods); mi++) {
    g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, cg, &cgrid, methods[mi], &error);
    if (!p) die(error);
    double best[2] = {G_MAXDOUBLE, G_MAXDOUBLE};
    for (guint rep = 0; rep <= reps; rep++)
      for (int m = 0; m < 2; m++) {
        if (!tl_ct_projector_set_back(p, backs[m], &error)) die(error);
        double t0 = now();
        if (!tl_ct_projector_back(p, s, &v, y, img, FALSE, &error) || !tl_stream_finish(s, &error))
          die(error);
        if (rep) best[m] = MIN(best[m], now() - t0);
      }
    printf("%-8s %-5s %12.3f %12.3f %8.2f\n", tl_ct_method_name(methods[mi]), "back", best[0],
           best[1], best[0] / best[1]);
  }
  return 0;
}
