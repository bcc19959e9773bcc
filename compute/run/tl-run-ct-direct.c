/* SPDX-License-Identifier: GPL-3.0-or-later */
/* FDK / FBP of a run into z-slabs, the memory checks before it, and the volume's way to the
 * host (tl-run-ct-direct.h). */
#include "tl-run-ct-direct.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>

guint64 tl_run_host_memory(void) {
  /* MemAvailable: what can be allocated without swapping (free + reclaimable caches) */
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  guint64 kib = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %" G_GUINT64_FORMAT " kB", &kib) == 1) break;
  if (f) fclose(f);
  if (kib) return kib * 1024;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (guint64)pages * (guint64)size : G_MAXUINT64;
}

/* The device's memory for one volume: its largest device-local heap (any heap when none is
 * marked so), 0 when it reports none. */
static guint64 device_memory(const TlDeviceInfo *info) {
  guint64 local = 0, any = 0;
  for (guint32 i = 0; i < info->n_heaps && i < TL_MAX_HEAPS; i++) {
    any = MAX(any, info->heaps[i].size);
    if (info->heaps[i].device_local) local = MAX(local, info->heaps[i].size);
  }
  return local ? local : any;
}

static gboolean refuse(GError **error, const TlImageGrid *g, guint64 bytes, const char *what,
                       guint64 limit) {
  g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
              "CT grid %u x %u x %u: %" G_GUINT64_FORMAT " bytes (%.2f GiB) of float voxels; %s "
              "%" G_GUINT64_FORMAT " bytes (%.2f GiB); use fewer or larger voxels",
              g->dims[0], g->dims[1], g->dims[2], bytes, bytes / 1073741824.0, what, limit,
              limit / 1073741824.0);
  return FALSE;
}

gboolean tl_run_ct_direct_check(TlContext *ctx, const TlImageGrid *grid, guint64 host_bytes,
                                GError **error) {
  if (!tl_image_grid_validate_shape(grid, error)) return FALSE;
  guint64 nvox = tl_image_grid_n_voxels(grid), bytes = 4 * nvox;
  if (nvox > TL_CT_MAX_VOXELS)
    return refuse(error, grid, bytes, "the CT kernels index at most 2^32 - 1 voxels:",
                  4 * TL_CT_MAX_VOXELS);
  guint64 host = tl_run_host_memory();
  if (host_bytes > host)
    return refuse(error, grid, bytes, "the host's available memory (MemAvailable), which "
                  "must hold the volume here, is", host);
  guint64 device = device_memory(tl_context_info(ctx));
  if (device && bytes > device)
    return refuse(error, grid, bytes, "the device's largest memory heap is", device);
  guint64 slab;
  if (!tl_ct_slab_limit(ctx, &slab, error)) return FALSE;
  guint64 plane = 4 * (guint64)grid->dims[0] * grid->dims[1];
  if (plane > slab)
    return refuse(error, grid, bytes, "a z-slab (the device's largest allocation, or "
                  "TOMOLAB_CT_SLAB_BYTES) must hold one plane of the volume, it holds", slab);
  return TRUE;
}

TlCtSlabs *tl_run_ct_direct(TlContext *ctx, TlStream *s, const TlCtGeometry *g,
                            const TlImageGrid *grid, gboolean fbp, TlCtFilter filter,
                            guint batch, const TlArray *proj, GError **error) {
  if (!tl_run_ct_direct_check(ctx, grid, 0, error)) return NULL;
  if (fbp && g->beam != TL_CT_PARALLEL) { /* tl_ct_fbp_new's refusal, for the slab path */
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "FBP reconstructs parallel-beam scans; this one is cone beam (%u views of %u x %u): "
                "use FDK", g->n_views, g->det_u, g->det_v);
    return NULL;
  }
  /* FBP is FDK's parallel-beam case (w = 1, D = 1, no cosine: tl-ct-fdk.h), one object */
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new_for_slabs(ctx, g, grid, filter, TL_CT_RAMP_AUTO, batch,
                                                 error);
  g_autoptr(TlCtSlabs) v = f ? tl_ct_slabs_new(ctx, grid, error) : NULL;
  if (!v || !tl_ct_slabs_fdk(f, s, proj, v, error) || !tl_stream_finish(s, error)) return NULL;
  return g_steal_pointer(&v);
}

TlImage *tl_run_ct_slabs_image(const TlCtSlabs *v, GError **error) {
  const TlImageGrid *g = tl_ct_slabs_grid(v);
  if (!tl_image_grid_validate(g, error)) {
    g_prefix_error(error, "CT volume as one image (%" G_GUINT64_FORMAT " bytes): ",
                   4 * tl_image_grid_n_voxels(g));
    return NULL;
  }
  guint64 bytes = 4 * tl_image_grid_n_voxels(g), host = tl_run_host_memory();
  if (bytes > host) {
    refuse(error, g, bytes, "the host's available memory (MemAvailable) is", host);
    return NULL;
  }
  g_autoptr(TlImage) im = tl_image_new(g);
  if (!tl_ct_slabs_download(v, im->data, error)) return NULL;
  return g_steal_pointer(&im);
}

/* Planes [first, first + n) from the slabs holding them (tl_image_save_nifti_planes). */
static gboolean slab_planes(guint first, guint n, float *buf, gpointer data, GError **error) {
  const TlCtSlabs *v = data;
  const TlImageGrid *g = tl_ct_slabs_grid(v);
  guint64 plane = (guint64)g->dims[0] * g->dims[1];
  for (guint i = 0; i < tl_ct_slabs_count(v) && n > 0; i++) {
    guint f0, np;
    TlArray *a = tl_ct_slabs_array(v, i, &f0, &np);
    if (first >= f0 + np) continue;
    guint take = MIN(n, f0 + np - first);
    if (!tl_array_download_range(a, (first - f0) * plane, take * plane, buf, error)) return FALSE;
    buf += take * plane;
    first += take;
    n -= take;
  }
  return TRUE;
}

gboolean tl_run_ct_slabs_save(const TlCtSlabs *v, const char *unit, const char *path,
                              GError **error) {
  if (tl_format_path_has_extension(path, ".nii .nii.gz"))
    return tl_image_save_nifti_planes(tl_ct_slabs_grid(v), unit, path, slab_planes, (gpointer)v,
                                      error);
  g_autoptr(TlImage) im = tl_run_ct_slabs_image(v, error);
  if (!im) {
    g_prefix_error(error, "'%s' (NIfTI, .nii or .nii.gz, is written plane by plane at any "
                   "size): ", path);
    return FALSE;
  }
  if (unit && !tl_image_set_unit(im, unit)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "'%s': unit '%s' (expected printable "
                "ASCII, fewer than %d bytes)", path, unit, TL_IMAGE_UNIT_MAX);
    return FALSE;
  }
  return tl_image_save(im, path, error);
}
