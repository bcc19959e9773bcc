/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A third-party program: built by tests/check-install.py against the installed library with
 * only `pkg-config --cflags --libs tomolab-compute` (a copy outside the source tree), it
 * finds MLEM in the registry by name (and fails to find a made-up one), then forward-projects
 * a uniform 8x8x1 mm slab (1 mm voxels) in one parallel-beam view. Every central ray crosses
 * 8 voxels of 1, so it must read 8. It uses only what TL_API exports: a hidden function would
 * not link. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tomolab-compute.h"
#include "tl-registry.h"
#include "ct/tl-ct-projector.h"

int main(void) {
  GError *error = NULL;
  const TlAlgorithmClass *mlem = tl_registry_algorithm("mlem", &error);
  if (!mlem || strcmp(tl_algorithm_name(mlem), "mlem") != 0) goto fail;
  if (tl_registry_algorithm("no-such-algorithm", &error) || !error) {
    fprintf(stderr, "install-consumer: a made-up algorithm was found\n");
    return 1;
  }
  g_clear_error(&error);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) goto fail;
  TlCtOrbit orbit;
  tl_ct_orbit_init_parallel(&orbit, 1, 8, 1, 1.0, 1.0);
  g_autoptr(TlCtGeometry) geometry = tl_ct_geometry_new_orbit(&orbit, &error);
  if (!geometry) goto fail;
  TlImageGrid grid = tl_image_grid_centred(8, 8, 1, 1.0f, 1.0f, 1.0f);
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, geometry, &grid, TL_CT_JOSEPH, &error);
  if (!p) goto fail;
  TlCtViews views = tl_ct_views_all(geometry);
  guint64 n_pixels = tl_ct_views_n_pixels(geometry, &views);
  float ones[64], proj[8] = {0};
  for (int i = 0; i < 64; i++) ones[i] = 1.0f;
  g_autoptr(TlArray) image = tl_array_new_float(ctx, 64, &error);
  g_autoptr(TlArray) sino = image ? tl_array_new_float(ctx, n_pixels, &error) : NULL;
  g_autoptr(TlStream) s = sino ? tl_stream_new(ctx, &error) : NULL;
  if (n_pixels != 8 || !s || !tl_array_upload(image, ones, &error) ||
      !tl_ct_projector_forward(p, s, &views, image, sino, FALSE, &error) ||
      !tl_stream_finish(s, &error) || !tl_array_download(sino, proj, &error))
    goto fail;
  for (int u = 2; u < 6; u++) {
    if (fabsf(proj[u] - 8.0f) > 1e-3f) {
      fprintf(stderr, "install-consumer: pixel %d reads %g, expected 8\n", u, proj[u]);
      return 1;
    }
  }
  printf("install-consumer: forward projection on %s: %g %g %g %g\n",
         tl_context_info(ctx)->name, proj[2], proj[3], proj[4], proj[5]);
  return 0;
fail:
  fprintf(stderr, "install-consumer: %s\n", error ? error->message : "projection size");
  g_clear_error(&error);
  return 1;
}
