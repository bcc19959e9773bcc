/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Deterministic back projections: a 64-bit fixed-point accumulator on the device that the
 * scattering kernels add into with integer atomics (shaders/core/tl_fixed.glsl says how and
 * with what rounding), so the sums no longer depend on the order the invocations run in, and
 * the pass that adds it into a float image. A call, in stream order: tl_fixed_begin (zeroes
 * it), tl_fixed_bound_weights or tl_fixed_bound_unit (the scale, from the sum of the call's
 * |weights|), the caller's scattering kernel given tl_fixed_address and amax, tl_fixed_finish.
 * The accumulator is reused by the next call after them. */
#pragma once
#include "tl-stream.h"

G_BEGIN_DECLS

typedef struct _TlFixed TlFixed;

/* The most elements an accumulator holds: 32-bit word indices (2 per element + head). */
#define TL_FIXED_MAX_ELEMENTS ((G_GUINT64_CONSTANT(1) << 31) - 4)

TlFixed *tl_fixed_new(TlContext *ctx);
void tl_fixed_free(TlFixed *f);

/* Sized for n elements (n <= TL_FIXED_MAX_ELEMENTS) and zeroed in stream order. */
gboolean tl_fixed_begin(TlFixed *f, TlStream *s, guint64 n, GError **error);
/* The accumulator's device address (valid after tl_fixed_begin, until the next one). */
guint64 tl_fixed_address(const TlFixed *f);
/* The head from the call's weights: `count` floats at device address w. have_max: the
 * largest |w| is in the head already (a kernel that wrote w stored it, tl_fixed_max_store). */
gboolean tl_fixed_bound_weights(TlFixed *f, TlStream *s, guint64 w, guint64 count,
                                gboolean have_max, GError **error);
/* The head for `count` weights of 1. */
gboolean tl_fixed_bound_unit(TlFixed *f, TlStream *s, guint64 count, GError **error);
/* image[i] += acc_i 2^-k for i < n (tl_fixed_begin's n), with the scattering kernel's amax. */
gboolean tl_fixed_finish(TlFixed *f, TlStream *s, TlArray *image, float amax, GError **error);

G_END_DECLS
