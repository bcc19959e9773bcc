/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Gaussian and median filters on device volumes (tl-filter.h). */
#include "tl-kernels.h"
#include "tl-filter.h"
#include "tl-file.h"
#include <math.h>
#include <string.h>

/* FWHM = 2 sqrt(2 ln 2) sigma */
#define TL_FWHM_PER_SIGMA 2.3548200450309493

typedef struct {
  TlPush1D h;
  guint64 src, dst, w;
  guint32 dims[3];
  guint32 axis, radius;
  guint32 pad;
} GaussPush;

typedef struct {
  TlPush1D h;
  guint64 src, dst;
  guint32 dims[3];
  guint32 pad;
} MedianPush;

/* Pipelines built once per context; the lock covers creation from several threads. */
#define TL_FILTER_CACHE_KEY "tl-filter-pipelines"
typedef struct {
  GMutex lock;
  TlPipeline *gauss, *median[2];
  guint kernels_generation; /* tl_kernels_generation() of the three */
  GPtrArray *stale;         /* older pipelines (an edited kernel came in), freed at the end */
} FilterCache;

static void cache_free(gpointer data) {
  FilterCache *c = data;
  g_ptr_array_unref(c->stale);
  tl_pipeline_free(c->gauss);
  tl_pipeline_free(c->median[0]);
  tl_pipeline_free(c->median[1]);
  g_mutex_clear(&c->lock);
  g_free(c);
}

static TlPipeline *pipeline(TlContext *ctx, TlFilterKind kind, GError **error) {
  static GMutex create_lock;
  g_mutex_lock(&create_lock);
  FilterCache *c = tl_context_get_data(ctx, TL_FILTER_CACHE_KEY);
  if (!c) {
    c = g_new0(FilterCache, 1);
    g_mutex_init(&c->lock);
    c->stale = g_ptr_array_new_with_free_func((GDestroyNotify)tl_pipeline_free);
    c->kernels_generation = tl_kernels_generation(ctx);
    tl_context_set_data(ctx, TL_FILTER_CACHE_KEY, c, cache_free);
  }
  g_mutex_unlock(&create_lock);

  g_mutex_lock(&c->lock);
  guint generation = tl_kernels_generation(ctx);
  if (generation != c->kernels_generation) {
    TlPipeline **all[] = {&c->gauss, &c->median[0], &c->median[1]};
    for (guint i = 0; i < G_N_ELEMENTS(all); i++)
      if (*all[i]) g_ptr_array_add(c->stale, g_steal_pointer(all[i]));
    c->kernels_generation = generation;
  }
  /* the Metz filter is separable too: the Gaussian's kernel with other weights */
  gboolean separable = kind == TL_FILTER_GAUSS || kind == TL_FILTER_METZ;
  TlPipeline **slot = separable ? &c->gauss : &c->median[kind == TL_FILTER_MEDIAN5];
  if (!*slot) {
    if (separable) {
      *slot = tl_pipeline_new_builtin(ctx, "filter_gauss", sizeof(GaussPush), NULL, 0, error);
      /* 2r+1 taps; fixed here (not per radius) because the pipeline is shared by threads */
      if (*slot) tl_pipeline_set_item_cost(*slot, 8);
    } else {
      guint32 radius = kind == TL_FILTER_MEDIAN5 ? 2 : 1;
      *slot = tl_pipeline_new_builtin(ctx, "filter_median", sizeof(MedianPush), &radius, 1, error);
      /* forgetful selection: ~110 / ~2100 comparisons per voxel; cost ~ comparisons / 16 */
      if (*slot) tl_pipeline_set_item_cost(*slot, radius == 1 ? 8 : 128);
    }
  }
  TlPipeline *p = *slot;
  g_mutex_unlock(&c->lock);
  return p;
}

gboolean tl_filter_parse(const char *text, TlFilter *out, GError **error) {
  TlFilter f = {TL_FILTER_NONE, 0.0, 0};
  const char *expected = "expected median3, median5, gauss:FWHM (FWHM in mm, > 0), metz:FWHM:N "
                         "(N = 0 to 20) or none";
  if (!text) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no filter given; %s", expected);
    return FALSE;
  }
  if (!g_utf8_validate(text, -1, NULL) || strlen(text) > 200) {
    /* quoted: a message with invalid UTF-8 is not shown by GTK */
    g_autofree char *q = tl_text_quote(text, -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown filter \"%s\"; %s", q, expected);
    return FALSE;
  }
  if (g_str_equal(text, "none")) {
  } else if (g_str_equal(text, "median3")) {
    f.kind = TL_FILTER_MEDIAN3;
  } else if (g_str_equal(text, "median5")) {
    f.kind = TL_FILTER_MEDIAN5;
  } else if (g_str_has_prefix(text, "gauss:")) {
    const char *num = text + strlen("gauss:");
    char *end = NULL;
    double v = g_ascii_strtod(num, &end);
    if (end == num || *end != '\0') {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter \"%s\": \"%s\" is not a number; expected gauss:FWHM with the FWHM in "
                  "mm, e.g. gauss:4", text, num);
      return FALSE;
    }
    if (!isfinite(v) || v <= 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter \"%s\": FWHM %g mm; expected a finite FWHM > 0 mm", text, v);
      return FALSE;
    }
    f.kind = TL_FILTER_GAUSS;
    f.fwhm_mm = v;
  } else if (g_str_has_prefix(text, "metz:")) {
    const char *num = text + strlen("metz:");
    char *end = NULL;
    double v = g_ascii_strtod(num, &end);
    if (end == num || *end != ':') {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter \"%s\": expected metz:FWHM:N with the FWHM in mm and the power N, "
                  "e.g. metz:4:2", text);
      return FALSE;
    }
    if (!isfinite(v) || v <= 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter \"%s\": FWHM %g mm; expected a finite FWHM > 0 mm", text, v);
      return FALSE;
    }
    const char *pw = end + 1;
    guint64 n = 0;
    if (!*pw || !g_ascii_string_to_unsigned(pw, 10, 0, TL_FILTER_METZ_MAX_POWER, &n, NULL)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter \"%s\": Metz power \"%s\"; expected a whole number from 0 to %u", text,
                  pw, TL_FILTER_METZ_MAX_POWER);
      return FALSE;
    }
    f.kind = TL_FILTER_METZ;
    f.fwhm_mm = v;
    f.power = (guint)n;
  } else {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown filter \"%s\"; %s", text,
                expected);
    return FALSE;
  }
  *out = f;
  return TRUE;
}

char *tl_filter_to_string(const TlFilter *f) {
  switch (f->kind) {
  case TL_FILTER_MEDIAN3: return g_strdup("median3");
  case TL_FILTER_MEDIAN5: return g_strdup("median5");
  case TL_FILTER_GAUSS: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strconcat("gauss:", g_ascii_dtostr(buf, sizeof buf, f->fwhm_mm), NULL);
  }
  case TL_FILTER_METZ: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup_printf("metz:%s:%u", g_ascii_dtostr(buf, sizeof buf, f->fwhm_mm), f->power);
  }
  default: return g_strdup("none");
  }
}

guint tl_filter_gauss_radius(double fwhm_mm, double voxel_mm) {
  double r = floor(TL_FILTER_GAUSS_TRUNCATE * fwhm_mm / TL_FWHM_PER_SIGMA / voxel_mm);
  if (!(r >= 0)) return 0; /* NaN from a bad voxel size */
  return r > G_MAXUINT / 2 ? G_MAXUINT / 2 : (guint)r;
}

guint tl_filter_gauss_weights(double fwhm_mm, double voxel_mm, double *w) {
  guint r = tl_filter_gauss_radius(fwhm_mm, voxel_mm);
  if (!w) return r;
  double sigma = fwhm_mm / TL_FWHM_PER_SIGMA / voxel_mm, sum = 0;
  for (guint t = 0; t <= r; t++) {
    /* the centre weight is 1 whatever sigma: with a vanishing FWHM sigma^2 underflows to 0
     * and 0/0 would make every weight NaN; the filter becomes the identity instead */
    w[t] = t ? exp(-0.5 * (double)t * t / (sigma * sigma)) : 1.0;
    sum += t ? 2 * w[t] : w[t];
  }
  for (guint t = 0; t <= r; t++) w[t] /= sum;
  return r;
}

/* Metz: M = (1 - (1 - G^2)^(N+1)) / G = sum_{j=1}^{N+1} (-1)^(j+1) C(N+1, j) G^(2j-1), and
 * G^(2j-1) is the response of a unit-area Gaussian of variance (2j - 1) sigma^2: the kernel is
 * that signed sum of Gaussians, sampled. */
guint tl_filter_metz_radius(double fwhm_mm, guint power, double voxel_mm) {
  double widest = fwhm_mm / TL_FWHM_PER_SIGMA / voxel_mm * sqrt(2.0 * power + 1.0);
  double r = floor(TL_FILTER_METZ_TRUNCATE * widest);
  if (!(r >= 0)) return 0;
  return r > G_MAXUINT / 2 ? G_MAXUINT / 2 : (guint)r;
}

guint tl_filter_metz_weights(double fwhm_mm, guint power, double voxel_mm, double *w) {
  guint r = tl_filter_metz_radius(fwhm_mm, power, voxel_mm);
  if (!w) return r;
  double sigma = fwhm_mm / TL_FWHM_PER_SIGMA / voxel_mm, sum = 0;
  for (guint t = 0; t <= r; t++) {
    double v = 0, binom = 1; /* C(N+1, j) */
    for (guint j = 1; j <= power + 1; j++) {
      binom = binom * (power + 2 - j) / j;
      double var = (2.0 * j - 1.0) * sigma * sigma;
      /* as for the Gaussian: a vanishing width is the identity, not 0/0 */
      double g = var > 0 ? exp(-0.5 * (double)t * t / var) / sqrt(2 * G_PI * var) : (t == 0);
      v += (j % 2 ? 1.0 : -1.0) * binom * g;
    }
    w[t] = v;
    sum += t ? 2 * v : v;
  }
  if (sum != 0)
    for (guint t = 0; t <= r; t++) w[t] /= sum;
  return r;
}

double tl_filter_metz_response(double fwhm_mm, guint power, double f) {
  double sigma = fwhm_mm / TL_FWHM_PER_SIGMA;
  double g = exp(-2.0 * G_PI * G_PI * sigma * sigma * f * f);
  if (g < 1e-300) return 0;
  return (1.0 - pow(1.0 - g * g, power + 1.0)) / g;
}

static gboolean check_arrays(const TlImageGrid *grid, const TlArray *image, const TlArray *scratch,
                             GError **error) {
  if (!tl_image_grid_validate(grid, error)) return FALSE;
  guint64 n = tl_image_grid_n_voxels(grid);
  const TlArray *a[2] = {image, scratch};
  const char *what[2] = {"image", "scratch"};
  for (int k = 0; k < 2; k++) {
    if (!a[k]) {
      if (k == 0) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "filter: no image array");
        return FALSE;
      }
      continue;
    }
    if (tl_array_elem_size(a[k]) != sizeof(float) || tl_array_length(a[k]) < n) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter: the %s array has %" G_GUINT64_FORMAT " elements of %" G_GSIZE_FORMAT
                  " bytes; expected at least %" G_GUINT64_FORMAT " floats (%u x %u x %u)",
                  what[k], tl_array_length(a[k]), tl_array_elem_size(a[k]), n, grid->dims[0],
                  grid->dims[1], grid->dims[2]);
      return FALSE;
    }
  }
  if (scratch == image) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "filter: the scratch array is the image itself; expected a separate array");
    return FALSE;
  }
  return TRUE;
}

/* Records the passes; the result ends in `image`. */
static gboolean record(TlContext *ctx, TlStream *s, const TlFilter *f, const TlImageGrid *grid,
                       TlArray *image, TlArray *scratch, TlArray **weights, GError **error) {
  guint64 n = tl_image_grid_n_voxels(grid);
  TlPipeline *p = pipeline(ctx, f->kind, error);
  if (!p) return FALSE;
  gboolean metz = f->kind == TL_FILTER_METZ;
  if (f->kind != TL_FILTER_GAUSS && !metz) {
    MedianPush push = {.src = tl_array_address(image), .dst = tl_array_address(scratch)};
    memcpy(push.dims, grid->dims, sizeof push.dims);
    return tl_stream_dispatch_1d(s, p, f->kind == TL_FILTER_MEDIAN5 ? "median5" : "median3", n,
                                 &push, error) &&
           tl_stream_copy(s, scratch, 0, image, 0, n * sizeof(float), error);
  }

  /* Half kernels of the three axes, one after the other in one small array. */
  guint r[3], off[3], total = 0;
  for (int a = 0; a < 3; a++) {
    r[a] = metz ? tl_filter_metz_radius(f->fwhm_mm, f->power, grid->voxel_mm[a])
                : tl_filter_gauss_radius(f->fwhm_mm, grid->voxel_mm[a]);
    if (r[a] > TL_FILTER_GAUSS_MAX_RADIUS) {
      g_autofree char *name = tl_filter_to_string(f);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "filter %s: %u-voxel kernel radius along %c (voxel %g mm); expected at "
                  "most %u (a smaller FWHM)", name, r[a], "xyz"[a], grid->voxel_mm[a],
                  TL_FILTER_GAUSS_MAX_RADIUS);
      return FALSE;
    }
    off[a] = total;
    total += r[a] + 1;
  }
  g_autofree double *wd = g_new(double, total);
  g_autofree float *wf = g_new(float, total);
  for (int a = 0; a < 3; a++) {
    if (metz) tl_filter_metz_weights(f->fwhm_mm, f->power, grid->voxel_mm[a], wd + off[a]);
    else tl_filter_gauss_weights(f->fwhm_mm, grid->voxel_mm[a], wd + off[a]);
  }
  for (guint i = 0; i < total; i++) wf[i] = (float)wd[i];
  if (!(*weights = tl_array_new_float(ctx, total, error)) || !tl_array_upload(*weights, wf, error))
    return FALSE;

  /* x: image -> scratch, y: scratch -> image, z: image -> scratch, then copy back.
   * An axis with r = 0 is the identity and is skipped (only the buffer roles swap). */
  static const char *labels[2][3] = {{"gauss x", "gauss y", "gauss z"},
                                     {"metz x", "metz y", "metz z"}};
  TlArray *src = image, *dst = scratch;
  for (guint32 a = 0; a < 3; a++) {
    if (r[a] == 0) continue;
    GaussPush push = {.src = tl_array_address(src), .dst = tl_array_address(dst),
                      .w = tl_array_address(*weights) + off[a] * sizeof(float),
                      .axis = a, .radius = r[a]};
    memcpy(push.dims, grid->dims, sizeof push.dims);
    if (!tl_stream_dispatch_1d(s, p, labels[metz][a], n, &push, error)) return FALSE;
    TlArray *t = src;
    src = dst;
    dst = t;
  }
  if (src != image && !tl_stream_copy(s, src, 0, image, 0, n * sizeof(float), error))
    return FALSE;
  return TRUE;
}

gboolean tl_filter_apply(TlContext *ctx, TlStream *stream, const TlFilter *f,
                         const TlImageGrid *grid, TlArray *image, TlArray *scratch,
                         GError **error) {
  g_return_val_if_fail(ctx && f && grid, FALSE);
  if (f->kind != TL_FILTER_NONE && f->kind != TL_FILTER_MEDIAN3 && f->kind != TL_FILTER_MEDIAN5 &&
      f->kind != TL_FILTER_GAUSS && f->kind != TL_FILTER_METZ) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "filter: unknown kind %d; expected none, median3, median5, gauss or metz", f->kind);
    return FALSE;
  }
  if ((f->kind == TL_FILTER_GAUSS || f->kind == TL_FILTER_METZ) &&
      (!isfinite(f->fwhm_mm) || f->fwhm_mm <= 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "filter %s: FWHM %g mm; expected a finite FWHM > 0 mm",
                f->kind == TL_FILTER_GAUSS ? "gauss" : "metz", f->fwhm_mm);
    return FALSE;
  }
  if (f->kind == TL_FILTER_METZ && f->power > TL_FILTER_METZ_MAX_POWER) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "filter metz: power %u; expected 0 to %u", f->power, TL_FILTER_METZ_MAX_POWER);
    return FALSE;
  }
  if (!check_arrays(grid, image, scratch, error)) return FALSE;
  if (f->kind == TL_FILTER_NONE) return TRUE;

  g_autoptr(TlStream) own = NULL;
  if (!stream && !(stream = own = tl_stream_new(ctx, error))) return FALSE;
  g_autoptr(TlArray) own_scratch = NULL;
  if (!scratch &&
      !(scratch = own_scratch = tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error)))
    return FALSE;
  TlArray *weights = NULL;
  gboolean ok = record(ctx, stream, f, grid, image, scratch, &weights, error);
  /* Always wait, also after a failure, so nothing recorded still uses the temporaries. */
  ok = tl_stream_finish(stream, ok ? error : NULL) && ok;
  tl_array_free(weights);
  return ok;
}
