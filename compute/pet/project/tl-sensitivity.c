/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Sensitivity images: computed on the device, cached on disk (see tl-sensitivity.h).
 * Cache file: the key text, a NUL byte, then the float32 voxels (x fastest). A file whose key
 * or size differs is ignored and rewritten. */
#include "tl-sensitivity.h"
#include <glib/gstdio.h>
#include <string.h>
#include "image/tl-file.h"
#include "tl-progress.h"

/* Without attenuation the key is the scanner, grid, projector and subset; with it a line
 * "attenuation sha256:<hash of the mu-map's float32 bytes>" follows, and with a normalisation
 * a line "normalisation sha256:<TlNorm.sha256>" (without either the key is as before, so
 * existing caches stay valid). Projectors with settings
 * name them (tl_projector_key: "tor fwhm 2 mm"). Version 2: the tracer's float weights summed
 * exactly in fixed point (tl-projector.h TlSensMethod); version 1 summed them with float
 * atomics (order-dependent), so its files are not reused (one recomputation, seconds with the
 * symmetries). Version 3: Siddon's walk no longer stalls at a crossing rounded 1 ulp behind
 * (a GPU finding; lavapipe's images are unchanged), so images made before are not reused.
 * Version 4: the walk's arithmetic is named ("walk double" on devices with shaderFloat64 for
 * Siddon, else "walk float": tl_projector_sensitivity_in_double); the two images differ by
 * the float walk's rounding, 4.7e-6 of the maximum on the DMI demo grid. The method is not
 * part of the key: walked in double, the symmetric and the full method agree bit for bit on
 * the DMI; the float walk's two differ by its rounding of mirror-image pairs (bench/README.md). */
static char *cache_key(const TlProjector *p, const TlScanner *scanner, guint subsets,
                       guint subset, const char *mu_hash, const char *norm_hash) {
  g_autofree char *sk = tl_scanner_key(scanner);
  g_autofree char *gk = tl_image_grid_key(tl_projector_grid(p));
  g_autofree char *ak = mu_hash ? g_strdup_printf("attenuation sha256:%s\n", mu_hash)
                                : g_strdup("");
  g_autofree char *nk = norm_hash ? g_strdup_printf("normalisation sha256:%s\n", norm_hash)
                                  : g_strdup("");
  g_autofree char *pk = tl_projector_key(p);
  return g_strdup_printf("tomolab-sensitivity 4\nprojector %s\nwalk %s\n%s\n%s\n"
                         "subset %u of %u\n%s%s",
                         pk, tl_projector_sensitivity_in_double(p) ? "double" : "float", sk, gk,
                         subset, subsets, ak, nk);
}

char *tl_sensitivity_mu_hash(const TlImage *mu) {
  return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)mu->data,
                                     tl_image_grid_n_voxels(&mu->grid) * sizeof(float));
}

static char *cache_path(const TlProjector *p, const TlScanner *scanner, guint subsets,
                        guint subset, const char *mu_hash, const char *norm_hash) {
  g_autofree char *key = cache_key(p, scanner, subsets, subset, mu_hash, norm_hash);
  g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
  g_autofree char *name = g_strdup_printf("sensitivity-%.32s.f32", sum);
  return g_build_filename(g_get_user_cache_dir(), "tomolab", name, NULL);
}

char *tl_sensitivity_cache_path(const TlProjector *p, const TlScanner *scanner, guint subsets,
                                guint subset) {
  return cache_path(p, scanner, subsets, subset, NULL, NULL);
}

/* The cached voxels, or NULL when there is no usable file. */
static float *cache_read(const char *path, const char *key, guint64 nv) {
  g_autofree char *data = NULL;
  gsize len = 0, klen = strlen(key) + 1;
  if (!g_file_get_contents(path, &data, &len, NULL)) return NULL;
  if (len != klen + nv * sizeof(float) || memcmp(data, key, klen) != 0) return NULL;
  float *v = g_new(float, nv);
  memcpy(v, data + klen, nv * sizeof(float));
  return v;
}

static void cache_write(const char *path, const char *key, const float *v, guint64 nv) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_path_get_dirname(path);
  char *tmp = NULL;
  FILE *f = g_mkdir_with_parents(dir, 0755) == 0 ? tl_file_begin(path, &tmp, &error) : NULL;
  if (f && fwrite(key, strlen(key) + 1, 1, f) == 1 && fwrite(v, sizeof(float), nv, f) == nv &&
      tl_file_commit(f, &tmp, path, &error))
    return;
  if (f) tl_file_abort(f, &tmp);
  g_message("sensitivity cache %s not written: %s", path, error ? error->message : "write failed");
}

TlArray *tl_sensitivity_image(TlProjector *p, TlStream *s, const TlScanner *scanner,
                              const TlArray *crystals, guint subsets, guint subset,
                              gboolean use_cache, gboolean *from_cache, GError **error) {
  return tl_sensitivity_image_atten(p, s, scanner, crystals, subsets, subset, NULL, NULL,
                                    use_cache, from_cache, error);
}

TlArray *tl_sensitivity_image_atten(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                    const TlArray *crystals, guint subsets, guint subset,
                                    const TlArray *mu, const char *mu_hash, gboolean use_cache,
                                    gboolean *from_cache, GError **error) {
  return tl_sensitivity_image_norm(p, s, scanner, crystals, subsets, subset, mu, mu_hash, NULL,
                                   use_cache, from_cache, error);
}

TlArray *tl_sensitivity_image_norm(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                   const TlArray *crystals, guint subsets, guint subset,
                                   const TlArray *mu, const char *mu_hash,
                                   const TlSensNorm *norm, gboolean use_cache,
                                   gboolean *from_cache, GError **error) {
  TlContext *ctx = p->ctx;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(p));
  if (from_cache) *from_cache = FALSE;
  if (mu && !mu_hash) use_cache = FALSE; /* no key for this map: never reuse a file */
  if (!mu) mu_hash = NULL;
  const char *norm_hash = norm && norm->norm ? norm->norm->sha256 : NULL;
  if (norm && !norm_hash) use_cache = FALSE;
  g_autofree char *key = cache_key(p, scanner, subsets, subset, mu_hash, norm_hash);
  g_autofree char *path = cache_path(p, scanner, subsets, subset, mu_hash, norm_hash);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, error);
  if (!img) return NULL;
  g_autofree float *cached = use_cache ? cache_read(path, key, nv) : NULL;
  if (cached) {
    if (!tl_array_upload(img, cached, error)) return NULL;
    if (from_cache) *from_cache = TRUE;
    return g_steal_pointer(&img);
  }
  /* the long step of a cold first run (minutes for a clinical scanner on a CPU driver): its
   * submissions report to the thread's progress (tl-progress.h), the projector sets the total */
  g_autofree char *what = subsets > 1 ? g_strdup_printf("sensitivity image (subset %u of %u)",
                                                        subset + 1, subsets)
                                      : g_strdup("sensitivity image");
  tl_progress_begin_device(what);
  gboolean ok = tl_stream_zero(s, img, error) &&
                tl_projector_sensitivity_norm(p, s, scanner, crystals, subsets, subset, mu, norm,
                                              img, error);
  if (ok) {
    ok = tl_stream_finish(s, error);
  } else {
    /* finished all the same: a cancel between submissions leaves recorded work that writes
     * img, which must not outlive it */
    g_autoptr(GError) ignored = NULL;
    tl_stream_finish(s, &ignored);
  }
  tl_progress_end();
  if (!ok) return NULL;
  if (use_cache) {
    g_autofree float *v = g_new(float, nv);
    if (!tl_array_download(img, v, error)) return NULL;
    cache_write(path, key, v, nv);
  }
  return g_steal_pointer(&img);
}
