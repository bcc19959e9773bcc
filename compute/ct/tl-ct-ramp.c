/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The ramp filter along detector rows: closed-form taps, the FFT path (VkFFT) and the exact
 * spatial convolution (see tl-ct-ramp.h for the formulas). */
#include "tl-ct-ramp.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef TL_HAVE_VKFFT
#include "tl-ct-vkfft.h"
#endif

static const char *const tl_ct_filter_names[] = {"ram-lak", "shepp-logan", "hann", "cosine"};
G_STATIC_ASSERT(G_N_ELEMENTS(tl_ct_filter_names) == TL_CT_FILTER_N);

const char *tl_ct_filter_name(TlCtFilter f) {
  return (guint)f < G_N_ELEMENTS(tl_ct_filter_names) ? tl_ct_filter_names[f] : "?";
}

gboolean tl_ct_filter_from_name(const char *name, TlCtFilter *out, GError **error) {
  for (guint i = 0; i < G_N_ELEMENTS(tl_ct_filter_names); i++)
    if (g_strcmp0(name, tl_ct_filter_names[i]) == 0) {
      *out = (TlCtFilter)i;
      return TRUE;
    }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown ramp filter '%s' (known: ram-lak, shepp-logan, hann, cosine)",
              name ? name : "(none)");
  return FALSE;
}

/* Band-limited ramp |f| (|f| <= 1/2) sampled at integer l (Kak & Slaney eq. 3.61, tau = 1). */
static double ram_lak(long l) {
  if (l == 0) return 0.25;
  if (l % 2 == 0) return 0.0;
  return -1.0 / (G_PI * G_PI * (double)l * (double)l);
}

/* The same ramp's inverse transform at a half-integer x = l + 1/2, where cos(pi x) = 0 and
 * sin(pi x) = (-1)^l: h(x) = (-1)^l / (2 pi x) - 1 / (2 pi^2 x^2). */
static double ramp_half(long l) {
  double x = (double)l + 0.5, sign = (l % 2 == 0) ? 1.0 : -1.0;
  return sign / (2 * G_PI * x) - 1.0 / (2 * G_PI * G_PI * x * x);
}

double *tl_ct_ramp_kernel(TlCtFilter f, guint n) {
  double *g = g_new(double, 2 * (gsize)n - 1);
  for (long l = -(long)n + 1; l < (long)n; l++) {
    double v;
    switch (f) {
    case TL_CT_FILTER_SHEPP_LOGAN: v = 2.0 / (G_PI * G_PI * (1.0 - 4.0 * (double)l * l)); break;
    /* (1 + cos(2 pi f)) / 2 = 1/2 + (e^{2 pi i f} + e^{-2 pi i f}) / 4: shifts by +-1 */
    case TL_CT_FILTER_HANN: v = 0.5 * ram_lak(l) + 0.25 * (ram_lak(l - 1) + ram_lak(l + 1)); break;
    /* cos(pi f) = (e^{i pi f} + e^{-i pi f}) / 2: shifts by +-1/2 */
    case TL_CT_FILTER_COSINE: v = 0.5 * (ramp_half(l - 1) + ramp_half(l)); break;
    default: v = ram_lak(l); break;
    }
    g[l + n - 1] = v;
  }
  return g;
}

/* 2^a m, m = 1, 3, 5 or 7: on lavapipe VkFFT's mixed-radix lengths of several odd factors ran
 * 2-3x slower per sample than these (1920 rows of nu = 312: N = 630 0.113 core-s, 648 0.129,
 * 640 0.059; N = 400 for nu = 200 0.179 against 448 0.073), while these cost 0.054-0.07
 * core-s per 10^6 samples from N = 256 to 3584 (bench/README.md, issue 31 fourth round). */
guint tl_ct_ramp_fft_size(guint nu) {
  guint64 need = MAX(2 * (guint64)nu - 1, 2), best = G_MAXUINT64;
  static const guint odd[] = {1, 3, 5, 7};
  for (guint i = 0; i < G_N_ELEMENTS(odd); i++) {
    guint64 n = 2 * odd[i];
    while (n < need) n *= 2;
    best = MIN(best, n);
  }
  return (guint)best;
}

gboolean tl_ct_ramp_have_fft(void) {
#ifdef TL_HAVE_VKFFT
  return TRUE;
#else
  return FALSE;
#endif
}

#define TL_CT_RAMP_FFT_MAX 16384u

/* Outputs per invocation of ct_fdk_filter, TL_CT_FILTER_BLOCK of the constants the kernels
 * share: the kernel array carries that many zeros after its 2 nu - 1 taps. */
#include "core/tl_constants.glsl"

/* Mirror the push blocks of shaders/ct/ct_fdk_filter.comp, ct_ramp_rows.comp and
 * ct_ramp_spectrum.comp. */
typedef struct {
  TlPush1D h;
  guint64 src, dst, kernel;
  guint32 nu, blocks, even_blocks;
  float center;
} FilterPush;
typedef struct {
  TlPush1D h;
  guint64 src, dst;
  guint32 src_stride, dst_stride, n_src, n_dst;
} RowsPush;
typedef struct {
  TlPush1D h;
  guint64 data, h_addr;
  guint32 n_freq;
} SpectrumPush;

struct _TlCtRamp {
  TlContext *ctx;
  TlCtRampMethod method;
  guint nu, max_rows;
  /* spatial */
  TlPipeline *conv;
  TlArray *taps;
  gboolean odd_taps; /* taps only at odd l (and l = 0): ct_fdk_filter's half-work form */
  float center;      /* g[0] then */
  /* FFT */
  guint n_fft, fft_rows; /* padded length; rows per transform (the buffer's) */
  TlPipeline *rows, *spectrum;
  TlArray *h, *buf;
  struct _TlCtVkfft *plan;
};

#ifdef TL_HAVE_VKFFT
typedef struct {
  TlCtVkfft *plan;
  gboolean inverse;
  GError *error;
} AppendData;

static void append_fft(VkCommandBuffer cb, gpointer data) {
  AppendData *a = data;
  tl_ct_vkfft_append(a->plan, cb, a->inverse, &a->error);
}
#endif

/* H[k] = sum_l g(l) cos(2 pi k l / N), k = 0 .. N/2: the DFT of the taps placed circularly
 * (g(l) at l mod N), real because g is even; scaled by 1 / N for the inverse transform. */
static float *tl_ct_ramp_spectrum(const double *g, guint nu, guint n) {
  g_autofree double *cosines = g_new(double, n);
  for (guint m = 0; m < n; m++) cosines[m] = cos(2 * G_PI * m / n);
  float *h = g_new(float, n / 2 + 1);
  for (guint k = 0; k <= n / 2; k++) {
    double s = g[nu - 1];
    for (guint l = 1; l < nu; l++) s += 2 * g[nu - 1 + l] * cosines[(guint64)k * l % n];
    h[k] = (float)(s / n);
  }
  return h;
}

/* TL_CT_RAMP_AUTO's choice. On a GPU the FFT path, always (where built; rows up to
 * TL_CT_RAMP_FFT_MAX). On a CPU device (lavapipe) whichever costs less by a model fitted there
 * (bench/README.md, issue 31 fourth round; 2 cores, 1920 rows of 312 to 480 rows of 1248):
 * the spatial convolution 0.245 ns of core time per multiply-add (nu or, odd taps only,
 * nu / 2 + 1 per output), the FFT path 55 ns per padded sample (VkFFT's two transforms, the
 * pad, the product and the crop): spatial while nu * taps <= 224 N. Ram-Lak: spatial up to
 * nu ~ 900 (the tooth's 640 columns, the bench's 312); the other windows up to nu ~ 470.
 * $TOMOLAB_CT_RAMP=fft|spatial overrides it (benchmarks). */
static TlCtRampMethod ramp_auto(TlContext *ctx, guint nu, gboolean odd_taps) {
  if (!tl_ct_ramp_have_fft() || nu > TL_CT_RAMP_FFT_MAX) return TL_CT_RAMP_SPATIAL;
  const char *env = g_getenv("TOMOLAB_CT_RAMP");
  if (g_strcmp0(env, "fft") == 0) return TL_CT_RAMP_FFT;
  if (g_strcmp0(env, "spatial") == 0) return TL_CT_RAMP_SPATIAL;
  if (tl_context_info(ctx)->type != VK_PHYSICAL_DEVICE_TYPE_CPU) return TL_CT_RAMP_FFT;
  guint64 macs = (guint64)nu * (odd_taps ? nu / 2 + 1 : nu);
  return macs <= 224 * (guint64)tl_ct_ramp_fft_size(nu) ? TL_CT_RAMP_SPATIAL : TL_CT_RAMP_FFT;
}

TlCtRamp *tl_ct_ramp_new(TlContext *ctx, TlCtFilter filter, guint nu, guint max_rows,
                         TlCtRampMethod method, GError **error) {
  if ((guint)filter >= TL_CT_FILTER_N) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown ramp filter %d", filter);
    return NULL;
  }
  if (nu == 0 || max_rows == 0 || nu > (1u << 24)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "ramp filter: %u rows of %u pixels; expected 1 to 2^24 pixels and >= 1 row",
                max_rows, nu);
    return NULL;
  }
  /* the taps' spectrum is an O(N nu) sum in double on the host: 0.02 s at 2048 columns, 0.3 s
   * at 8192; wider rows than any detector made today are filtered spatially */
  if (method == TL_CT_RAMP_FFT && nu > TL_CT_RAMP_FFT_MAX) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "the FFT ramp filter takes rows of up to %u pixels; these have %u",
                TL_CT_RAMP_FFT_MAX, nu);
    return NULL;
  }
  if (method == TL_CT_RAMP_FFT && !tl_ct_ramp_have_fft()) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "the FFT ramp filter needs VkFFT, which this build does not have (meson "
                "-Dvkfft=enabled with libvkfft-dev installed)");
    return NULL;
  }
  g_autoptr(TlCtRamp) r = g_new0(TlCtRamp, 1);
  r->ctx = ctx;
  r->nu = nu;
  r->max_rows = max_rows;
  g_autofree double *gk = tl_ct_ramp_kernel(filter, nu);
  /* Ram-Lak's taps at even l != 0 are exactly zero: the spatial kernel then skips them (half
   * the multiply-adds), taking the odd taps g[2 d + 1] at index d + nu (ct_fdk_filter.comp) */
  r->odd_taps = nu > 2;
  for (guint l = 2; l < nu && r->odd_taps; l += 2) r->odd_taps = gk[nu - 1 + l] == 0.0;
  r->method = method != TL_CT_RAMP_AUTO ? method : ramp_auto(ctx, nu, r->odd_taps);
  if (r->method == TL_CT_RAMP_SPATIAL) {
    gsize len = 2 * (gsize)nu + TL_CT_FILTER_BLOCK;
    g_autofree float *gf = g_new0(float, len);
    if (r->odd_taps) {
      r->center = (float)gk[nu - 1];
      for (long d = -(long)nu; d < (long)nu; d++)
        if (labs(2 * d + 1) < (long)nu) gf[d + nu] = (float)gk[2 * d + 1 + nu - 1];
    } else {
      for (guint i = 0; i < 2 * nu - 1; i++) gf[i] = (float)gk[i];
    }
    if (!(r->taps = tl_array_new_float(ctx, len, error)) || !tl_array_upload(r->taps, gf, error) ||
        !(r->conv = tl_pipeline_new_builtin(ctx, "ct_fdk_filter", sizeof(FilterPush), NULL, 0,
                                            error)))
      return NULL;
    tl_pipeline_set_item_cost(r->conv, r->odd_taps ? nu / 2 + 1 : nu);
    return g_steal_pointer(&r);
  }
  r->n_fft = tl_ct_ramp_fft_size(nu);
  guint64 row_bytes = 8 * (guint64)(r->n_fft / 2 + 1);
  /* VkFFT binds the buffer as one storage-buffer descriptor: at most maxStorageBufferRange */
  guint64 range = tl_context_info(ctx)->max_storage_buffer_range;
  if (row_bytes > range) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "ramp filter: one padded row of %u samples (%" G_GUINT64_FORMAT " bytes) exceeds "
                "the device's maxStorageBufferRange (%" G_GUINT64_FORMAT " bytes)", r->n_fft,
                row_bytes, range);
    return NULL;
  }
  r->fft_rows = (guint)MIN((guint64)max_rows, range / row_bytes);
  /* $TOMOLAB_FFT_ROWS caps the rows per transform, so tests reach the loop over chunks that
   * only rows beyond maxStorageBufferRange need otherwise */
  const char *cap = g_getenv("TOMOLAB_FFT_ROWS");
  if (cap && g_ascii_strtoull(cap, NULL, 10) > 0)
    r->fft_rows = (guint)MIN((guint64)r->fft_rows, g_ascii_strtoull(cap, NULL, 10));
  g_autofree float *h = tl_ct_ramp_spectrum(gk, nu, r->n_fft);
  if (!(r->h = tl_array_new_float(ctx, r->n_fft / 2 + 1, error)) || !tl_array_upload(r->h, h, error) ||
      !(r->buf = tl_array_new_float(ctx, row_bytes / 4 * r->fft_rows, error)) ||
      !(r->rows = tl_pipeline_new_builtin(ctx, "ct_ramp_rows", sizeof(RowsPush), NULL, 0, error)) ||
      !(r->spectrum = tl_pipeline_new_builtin(ctx, "ct_ramp_spectrum", sizeof(SpectrumPush), NULL,
                                              0, error)))
    return NULL;
#ifdef TL_HAVE_VKFFT
  /* stale rows (a last, partial batch) are transformed too: they must hold numbers */
  if (!tl_array_zero(r->buf, error) ||
      !(r->plan = tl_ct_vkfft_new(ctx, r->buf, r->n_fft, r->fft_rows, error)))
    return NULL;
#endif
  return g_steal_pointer(&r);
}

void tl_ct_ramp_free(TlCtRamp *r) {
  if (!r) return;
#ifdef TL_HAVE_VKFFT
  tl_ct_vkfft_free(r->plan);
#endif
  tl_pipeline_free(r->conv);
  tl_pipeline_free(r->rows);
  tl_pipeline_free(r->spectrum);
  tl_array_free(r->taps);
  tl_array_free(r->h);
  tl_array_free(r->buf);
  g_free(r);
}

TlCtRampMethod tl_ct_ramp_method(const TlCtRamp *r) { return r->method; }

gboolean tl_ct_ramp_run(TlCtRamp *r, TlStream *s, const TlArray *src, TlArray *dst, guint rows,
                        GError **error) {
  guint64 n = (guint64)rows * r->nu;
  if (rows > r->max_rows || tl_array_elem_size(src) != 4 || tl_array_elem_size(dst) != 4 ||
      tl_array_length(src) < n || tl_array_length(dst) < n) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "ramp filter: %u rows of %u floats (at most %u rows) do not fit the arrays of "
                "%" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT " elements", rows, r->nu,
                r->max_rows, tl_array_length(src), tl_array_length(dst));
    return FALSE;
  }
  if (r->method == TL_CT_RAMP_SPATIAL) {
    guint b = TL_CT_FILTER_BLOCK, blocks = (r->nu + b - 1) / b, even_blocks = 0;
    if (r->odd_taps) { /* outputs of each parity in blocks of their own */
      even_blocks = ((r->nu + 1) / 2 + b - 1) / b;
      blocks = even_blocks + (r->nu / 2 + b - 1) / b;
    }
    FilterPush fp = {.src = tl_array_address(src), .dst = tl_array_address(dst),
                     .kernel = tl_array_address(r->taps), .nu = r->nu, .blocks = blocks,
                     .even_blocks = even_blocks, .center = r->center};
    return tl_stream_dispatch_1d(s, r->conv, "fdk filter", (guint64)blocks * rows, &fp, error);
  }
#ifdef TL_HAVE_VKFFT
  guint nf = r->n_fft / 2 + 1, stride = 2 * nf;
  /* VkFFT's cost in the stream's units: about 5 N log2 N flops per row and direction */
  guint64 fft_cost = (guint64)r->fft_rows * r->n_fft * (guint64)g_bit_storage(r->n_fft);
  for (guint first = 0; first < rows; first += r->fft_rows) {
    guint count = MIN(r->fft_rows, rows - first);
    guint64 off = 4 * (guint64)first * r->nu;
    RowsPush pad = {.src = tl_array_address(src) + off, .dst = tl_array_address(r->buf),
                    .src_stride = r->nu, .dst_stride = stride, .n_src = r->nu, .n_dst = stride};
    SpectrumPush sp = {.data = tl_array_address(r->buf), .h_addr = tl_array_address(r->h),
                       .n_freq = nf};
    RowsPush crop = {.src = tl_array_address(r->buf), .dst = tl_array_address(dst) + off,
                     .src_stride = stride, .dst_stride = r->nu, .n_src = r->nu, .n_dst = r->nu};
    AppendData fwd = {r->plan, FALSE, NULL}, inv = {r->plan, TRUE, NULL};
    if (!tl_stream_dispatch_1d(s, r->rows, "fdk filter", (guint64)count * stride, &pad, error) ||
        !tl_stream_record_external(s, "fdk fft", fft_cost, append_fft, &fwd, error))
      return FALSE;
    if (fwd.error) {
      g_propagate_error(error, fwd.error);
      return FALSE;
    }
    if (!tl_stream_dispatch_1d(s, r->spectrum, "fdk filter", (guint64)count * nf, &sp, error) ||
        !tl_stream_record_external(s, "fdk fft", fft_cost, append_fft, &inv, error))
      return FALSE;
    if (inv.error) {
      g_propagate_error(error, inv.error);
      return FALSE;
    }
    if (!tl_stream_dispatch_1d(s, r->rows, "fdk filter", (guint64)count * r->nu, &crop, error))
      return FALSE;
  }
  return TRUE;
#else
  g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "the FFT ramp filter needs VkFFT");
  return FALSE;
#endif
}
