/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The cost of the log-likelihood in the fused EM pass (tl-pet-operator.h em with partials):
 * one list-mode EM pass on random events of the small-animal scanner, timed without the sum,
 * with it (PET_LOGLIK, same pass), and as the EM pass followed by the separate
 * log-likelihood projection (tl_projector_loglik, what TlRecon runs today), alternating, best
 * of `reps` wall times. Usage: pet-em-loglik [events (300000)] [reps (5)] [projector]. */
#include <stdio.h>
#include <stdlib.h>
#include "pet/tl-pet-operator.h"
#include "tomolab-compute.h"

static G_NORETURN void die(GError *error) {
  fprintf(stderr, "pet-em-loglik: %s\n", error ? error->message : "failed");
  exit(1);
}

int main(int argc, char **argv) {
  guint64 n = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 300000;
  guint reps = argc > 2 ? (guint)atoi(argv[2]) : 5;
  const char *projector = argc > 3 ? argv[3] : "siddon";
  GError *error = NULL;
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) die(error);
  TlScanner *sc = tl_scanner_new_preset("small-animal", &error);
  if (!sc) die(error);
  g_autoptr(TlListmode) lm = tl_listmode_new(sc, n);
  g_autoptr(GRand) r = g_rand_new_with_seed(1);
  for (guint64 i = 0; i < n; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, sc->n_crystals);
      e->b = g_rand_int_range(r, 0, sc->n_crystals);
    } while (!tl_scanner_pair_allowed(sc, e->a, e->b));
  }
  /* 64 x 64 x 40 voxels of 1.2 x 1.2 x 3 mm around the centre of the field of view */
  TlImageGrid g = {.dims = {64, 64, 40}, .voxel_mm = {1.2f, 1.2f, 3.0f}};
  for (int k = 0; k < 3; k++) g.origin_mm[k] = -0.5f * (g.dims[k] - 1) * g.voxel_mm[k];
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = projector;
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  if (!op) die(error);
  guint64 nv = tl_operator_n_voxels(op), np = tl_operator_em_partials(op, 0);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) c = x ? tl_array_new_float(ctx, nv, &error) : NULL;
  g_autoptr(TlArray) part = c ? tl_array_new_host(ctx, np, sizeof(float), TRUE, &error) : NULL;
  g_autoptr(TlStream) s = part ? tl_stream_new(ctx, &error) : NULL;
  if (!s) die(error);
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "x", x);
  if (!tl_expr_assign(ctx, s, "x = 1", args, &error)) die(error);
  TlLors all = tl_pet_operator_lors(op, 0);
  double best[3] = {G_MAXDOUBLE, G_MAXDOUBLE, G_MAXDOUBLE}, ll[3] = {0, 0, 0};
  for (guint rep = 0; rep <= reps; rep++) /* rep 0 builds the pipelines */
    for (int v = 0; v < 3; v++) {
      double t0 = g_get_monotonic_time() * 1e-6;
      if (!tl_stream_zero(s, c, &error) ||
          !tl_operator_em(op, s, 0, x, c, v == 1 ? part : NULL, &error) ||
          !tl_stream_finish(s, &error))
        die(error);
      if (v == 1) {
        const float *p = tl_array_map(part);
        ll[1] = 0;
        for (guint64 k = 0; k < np; k++) ll[1] += p[k];
      }
      if (v == 2 && !tl_projector_loglik(tl_pet_operator_projector(op), s, &all, x, &ll[2],
                                         &error))
        die(error);
      double t = g_get_monotonic_time() * 1e-6 - t0;
      if (rep > 0) best[v] = MIN(best[v], t);
    }
  printf("%s, %" G_GUINT64_FORMAT " events, grid 64x64x40, best of %u (%s)\n",
         tl_operator_label(op), n, reps, tl_context_info(ctx)->name);
  printf("  em pass                    %.4f s\n", best[0]);
  printf("  em pass + loglik (fused)   %.4f s  (%+.1f%%)  loglik %.6f\n", best[1],
         100 * (best[1] / best[0] - 1), ll[1]);
  printf("  em pass, then loglik pass  %.4f s  (%+.1f%%)  loglik %.6f\n", best[2],
         100 * (best[2] / best[0] - 1), ll[2]);
  return 0;
}
