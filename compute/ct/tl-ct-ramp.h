/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The ramp filter of FDK and FBP along detector rows, on the device: the band-limited ramp
 * with its window as spatial taps in closed form, applied either
 *
 *   - by FFT (VkFFT, Tolmachev 2023, Vulkan backend): each row zero-padded to N >= 2 nu - 1
 *     (the next even N = 2^a m, m = 1, 3, 5 or 7), R2C, times the DFT of the same taps placed
 *     circularly, C2R, cropped. With N >= 2 nu - 1 the circular convolution of the padded
 *     row is the linear one (no wrap-around), so it equals the spatial path up to float
 *     rounding; the taps' DFT is computed on the host in double (not the continuous ramp
 *     sampled in frequency, which would differ by the kernel's truncation, Kak & Slaney
 *     1988 sec. 3.3.2). O(N log N) per row.
 *   - or as the exact spatial convolution (nu multiply-adds per output, nu / 2 + 1 where the
 *     even taps l != 0 are zero: Ram-Lak): the reference the tests hold the FFT to, the
 *     fallback of builds without VkFFT, and TL_CT_RAMP_AUTO's choice on CPU devices where a
 *     cost model says it is cheaper.
 *
 * Taps g(l), |l| < nu, pixel spacing 1 (Kak & Slaney eq. 3.61 and its windowed forms):
 *   Ram-Lak       g(0) = 1/4, g(odd l) = -1 / (pi l)^2, g(even l) = 0
 *   Shepp-Logan   g(l) = 2 / (pi^2 (1 - 4 l^2))                      (ramp x sinc(f))
 *   Hann          g(l) = g_RL(l)/2 + (g_RL(l-1) + g_RL(l+1))/4       (ramp x (1 + cos 2 pi f)/2)
 *   cosine        g(l) = (h(l - 1/2) + h(l + 1/2)) / 2               (ramp x cos pi f)
 * with h(x) = sin(pi x)/(2 pi x) + (cos(pi x) - 1)/(2 pi^2 x^2) the band-limited ramp's
 * inverse Fourier transform at any x (h(l) = g_RL(l)). */
#pragma once
#include "tl-api.h"
#include "tl-stream.h"

G_BEGIN_DECLS

typedef enum {
  TL_CT_FILTER_RAM_LAK,
  TL_CT_FILTER_SHEPP_LOGAN,
  TL_CT_FILTER_HANN,
  TL_CT_FILTER_COSINE,
  TL_CT_FILTER_N,
} TlCtFilter;

TL_API const char *tl_ct_filter_name(TlCtFilter f);
/* "ram-lak", "shepp-logan", "hann", "cosine" */
TL_API gboolean tl_ct_filter_from_name(const char *name, TlCtFilter *out, GError **error);
/* g(l) for l = -(n-1) .. n-1 at index l + n - 1 (2n - 1 values, pixel spacing 1). */
TL_API double *tl_ct_ramp_kernel(TlCtFilter f, guint n);

typedef enum {
  TL_CT_RAMP_AUTO,    /* GPUs: FFT where built with VkFFT (rows up to 16384 pixels), else
                       * spatial; CPU devices: whichever a cost model fitted on lavapipe
                       * says is cheaper (tl-ct-ramp.c); $TOMOLAB_CT_RAMP=fft|spatial */
  TL_CT_RAMP_FFT,     /* refused (TL_ERROR_UNSUPPORTED) in builds without VkFFT, or wider rows */
  TL_CT_RAMP_SPATIAL,
} TlCtRampMethod;

/* TRUE when this build has the VkFFT path. */
TL_API gboolean tl_ct_ramp_have_fft(void);
/* The padded length the FFT path uses for rows of nu pixels: the smallest even N >= 2 nu - 1
 * of the form 2^a m, m = 1, 3, 5 or 7 (lengths VkFFT does in few passes; at most 25 % above
 * 2 nu - 1). */
TL_API guint tl_ct_ramp_fft_size(guint nu);

typedef struct _TlCtRamp TlCtRamp;

/* A filter for up to max_rows rows of nu floats at a time. */
TL_API TlCtRamp *tl_ct_ramp_new(TlContext *ctx, TlCtFilter filter, guint nu, guint max_rows,
                         TlCtRampMethod method, GError **error);
TL_API void tl_ct_ramp_free(TlCtRamp *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlCtRamp, tl_ct_ramp_free)
/* TL_CT_RAMP_FFT or TL_CT_RAMP_SPATIAL: what this filter does. */
TL_API TlCtRampMethod tl_ct_ramp_method(const TlCtRamp *r);

/* dst rows = src rows * g, rows [0, rows) of nu floats each (rows <= max_rows; src and dst
 * distinct arrays). Recorded on s under the labels "fdk filter" (the spatial convolution; the
 * FFT path's pad, spectrum product and crop) and "fdk fft" (VkFFT's forward and inverse
 * transforms); the caller finishes the stream. */
TL_API gboolean tl_ct_ramp_run(TlCtRamp *r, TlStream *s, const TlArray *src, TlArray *dst, guint rows,
                        GError **error);

G_END_DECLS
