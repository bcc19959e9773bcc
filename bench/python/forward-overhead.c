/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/python/forward-overhead: the C side of the Python per-call overhead benchmark
 * (bench/python/forward_overhead.py runs both in one run). One call is exactly what the
 * binding's A.forward(x) does for a numpy x: upload x, the operator's forward over its subsets,
 * finish the stream, download y; the time of `repeat` calls is taken `rounds` times and the
 * best per-call time printed, so the Python figure is compared with the same work from C.
 *
 *   forward-overhead SCAN.tlm NXxNYxNZ@MM REPEAT ROUNDS   (grid centred; Siddon, 1 subset) */
#include <stdio.h>
#include <stdlib.h>
#include "tomolab-compute.h"
#include "pet/tl-pet-operator.h"

static void die(GError *e) {
  fprintf(stderr, "forward-overhead: %s\n", e->message);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: forward-overhead SCAN.tlm NXxNYxNZ@MM REPEAT ROUNDS\n");
    return 2;
  }
  guint nx, ny, nz;
  float mm;
  if (sscanf(argv[2], "%ux%ux%u@%f", &nx, &ny, &nz, &mm) != 4) {
    fprintf(stderr, "forward-overhead: bad grid '%s'\n", argv[2]);
    return 2;
  }
  int repeat = atoi(argv[3]), rounds = atoi(argv[4]);
  GError *e = NULL;
  g_autoptr(TlListmode) lm = tl_listmode_load(argv[1], &e);
  if (!lm) die(e);
  TlImageGrid grid = tl_image_grid_centred(nx, ny, nz, mm, mm, mm);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &e);
  if (!ctx) die(e);
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &grid, NULL, &e);
  if (!op) die(e);
  guint64 nv = tl_operator_n_voxels(op), nd = tl_operator_n_data(op);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &e);
  g_autoptr(TlArray) x = s ? tl_array_new_float(ctx, nv, &e) : NULL;
  g_autoptr(TlArray) y = x ? tl_array_new_float(ctx, nd, &e) : NULL;
  if (!y) die(e);
  float *hx = g_new(float, nv), *hy = g_new(float, nd);
  for (guint64 i = 0; i < nv; i++) hx[i] = 1.0f;
  double best = 1e30;
  for (int r = 0; r < rounds + 1; r++) { /* round 0: one call to warm up (pipelines) */
    gint64 t0 = g_get_monotonic_time();
    int calls = r == 0 ? 1 : repeat;
    for (int k = 0; k < calls; k++) {
      if (!tl_array_upload(x, hx, &e)) die(e);
      for (guint sub = 0; sub < tl_operator_n_subsets(op); sub++) {
        g_autoptr(TlArray) v = tl_array_new_view(y, tl_operator_subset_first(op, sub),
                                                 tl_operator_subset_length(op, sub), &e);
        if (!v || !tl_operator_forward(op, s, sub, x, v, &e) || !tl_stream_finish(s, &e)) die(e);
      }
      if (!tl_array_download(y, hy, &e)) die(e);
    }
    double per = (g_get_monotonic_time() - t0) * 1e-6 / calls;
    if (r > 0 && per < best) best = per;
  }
  double sum = 0;
  for (guint64 i = 0; i < nd; i++) sum += hy[i];
  printf("%.9f %.6e\n", best, sum);
  g_free(hx);
  g_free(hy);
  return 0;
}
