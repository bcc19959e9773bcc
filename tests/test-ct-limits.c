/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT volumes against the largest image (issue 31 item 3): the device's largest allocation
 * (maxMemoryAllocationSize / maxBufferSize) or Tomolab's 2^28 voxels, whichever is smaller. A
 * volume one 1024 x 1024 slice beyond it is taken by the projector and FDK for slabs (which run
 * it in z-slabs) and refused when FDK into one array, the CT operator or the reconstruction is
 * made, with a message
 * naming the grid, the bytes and the limit (no allocation is tried); a volume just under it is
 * accepted; one whose image
 * fits but whose fixed-point back-projection sums (8 bytes a voxel) do not takes the float
 * scatter instead of failing at its first back projection. Sized from the device's own
 * limits, so it holds on any driver. */
#include <string.h>
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-operator.h"
#include "ct/tl-ct-projector.h"
#include "ct/tl-ct-recon.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint64 device_bytes(void) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  guint64 limit = info->max_memory_allocation_size ? info->max_memory_allocation_size : G_MAXUINT64;
  return info->max_buffer_size ? MIN(limit, info->max_buffer_size) : limit;
}

/* the largest float image: the device's allocation or the 2^28 voxels of any Tomolab image */
static guint64 limit_bytes(void) { return MIN(device_bytes(), 4 * TL_IMAGE_MAX_VOXELS); }

static TlCtGeometry *small_parallel(void) {
  TlCtOrbit o;
  tl_ct_orbit_init_parallel(&o, 4, 64, 4, 1.0, 1.0);
  GError *error = NULL;
  TlCtGeometry *g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  return g;
}

/* 1024 x 1024 x nz voxels with 4 nz MiB one slice above (over) or at most (!over) the limit */
static TlImageGrid grid_at_limit(gboolean over) {
  guint64 slice = (guint64)1024 * 1024 * 4;
  guint64 nz = limit_bytes() / slice + (over ? 1 : 0);
  g_assert_cmpuint(nz, >, 0);
  g_assert_cmpuint(nz, <, G_MAXUINT32);
  return tl_image_grid_centred(1024, 1024, (guint)nz, 0.01f, 0.01f, 0.01f);
}

static void assert_names_limit(const GError *e, const TlImageGrid *grid) {
  g_assert_error(e, TL_ERROR, TL_ERROR_OUT_OF_MEMORY);
  g_autofree char *dims = g_strdup_printf("CT volume %u x %u x %u", grid->dims[0],
                                          grid->dims[1], grid->dims[2]);
  g_autofree char *bytes = g_strdup_printf("%" G_GUINT64_FORMAT " bytes",
                                           4 * tl_image_grid_n_voxels(grid));
  g_autofree char *limit = g_strdup_printf("%" G_GUINT64_FORMAT " bytes", limit_bytes());
  g_test_message("%s", e->message);
  g_assert_nonnull(strstr(e->message, dims));
  g_assert_nonnull(strstr(e->message, bytes));
  g_assert_nonnull(strstr(e->message, limit));
}

static void test_over(void) {
  g_autoptr(TlCtGeometry) g = small_parallel();
  TlImageGrid grid = grid_at_limit(TRUE);
  g_assert_cmpuint(4 * tl_image_grid_n_voxels(&grid), >, limit_bytes());
  GError *error = NULL;
  /* the projector and FDK for slabs take it: they run it in z-slabs (tl-ct-slabs.h, test
   * ct-slabs) */
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_JOSEPH, &error);
  g_assert_no_error(error);
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new_for_slabs(ctx, g, &grid, TL_CT_FILTER_RAM_LAK,
                                                  TL_CT_RAMP_AUTO, 0, &error);
  g_assert_no_error(error);
  /* FDK into one array and the iterative reconstructions (one array): refused */
  g_assert_null(tl_ct_fdk_new(ctx, g, &grid, TL_CT_FILTER_RAM_LAK, 0, &error));
  assert_names_limit(error, &grid);
  g_clear_error(&error);
  g_assert_null(tl_ct_operator_new(ctx, g, &grid, TL_CT_JOSEPH, 1, &error));
  assert_names_limit(error, &grid);
  g_clear_error(&error);
  g_autoptr(TlArray) proj = tl_array_new_float(ctx, 4 * 64 * 4, &error);
  g_assert_no_error(error);
  TlCtReconOptions o;
  tl_ct_recon_options_init(&o);
  o.algo = TL_CT_CGLS;
  g_assert_null(tl_ct_recon_new(ctx, g, &grid, proj, &o, &error));
  assert_names_limit(error, &grid);
  g_clear_error(&error);
}

/* At the limit: the projector is made (its image fits); where the fixed-point sums do not
 * (lavapipe: 2^28 voxels take 2 GiB + 16 bytes of sums, its limit is 2 GiB) the fixed back
 * projection asked for is the float scatter instead of an allocation failure at its first run. */
static void test_under(void) {
  g_autoptr(TlCtGeometry) g = small_parallel();
  TlImageGrid grid = grid_at_limit(FALSE);
  g_assert_cmpuint(4 * tl_image_grid_n_voxels(&grid), <=, limit_bytes());
  GError *error = NULL;
  g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, g, &grid, TL_CT_JOSEPH, &error);
  g_assert_no_error(error);
  g_assert_nonnull(p);
  /* the sums' array: two 32-bit words a voxel and a head of 4 (tl-fixed.c) */
  gboolean sums_fit = 8 * tl_image_grid_n_voxels(&grid) + 16 <= device_bytes();
  g_test_message("device limit %" G_GUINT64_FORMAT " B, %u x %u x %u voxels: fixed sums %s",
                 device_bytes(), grid.dims[0], grid.dims[1], grid.dims[2],
                 sums_fit ? "fit" : "do not fit (float scatter)");
  /* fixed sums: with one 64-bit atomic where the device has them, else two 32-bit ones */
  TlCtBack fixed = tl_context_info(ctx)->buffer_int64_atomics ? TL_CT_BACK_SCATTER_FIXED
                                                               : TL_CT_BACK_SCATTER_FIXED32;
  g_assert_true(tl_ct_projector_set_back(p, TL_CT_BACK_SCATTER_FIXED, &error));
  g_assert_no_error(error);
  g_assert_cmpint(tl_ct_projector_back_mode(p) == fixed, ==, sums_fit);
  /* a small volume keeps the fixed sums where they are asked for */
  TlImageGrid small = tl_image_grid_centred(16, 16, 4, 4.0f, 4.0f, 1.0f);
  g_autoptr(TlCtProjector) q = tl_ct_projector_new(ctx, g, &small, TL_CT_JOSEPH, &error);
  g_assert_no_error(error);
  g_assert_true(tl_ct_projector_set_back(q, TL_CT_BACK_SCATTER_FIXED, &error));
  g_assert_cmpint(tl_ct_projector_back_mode(q), ==, fixed);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  ctx = tl_test_context();
  g_test_add_func("/ct-limits/over", test_over);
  g_test_add_func("/ct-limits/under", test_under);
  int r = g_test_run();
  tl_test_context_done(ctx);
  return r;
}
