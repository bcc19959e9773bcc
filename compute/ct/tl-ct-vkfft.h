/* SPDX-License-Identifier: GPL-3.0-or-later */
/* VkFFT (Tolmachev 2023; Debian libvkfft-dev, one header, Vulkan backend) behind three C
 * calls, for tl-ct-ramp.c. C++ is confined to tl-ct-vkfft.cpp: vkFFT.h initialises scalars
 * with `= {}`, which C17 compilers refuse. Batched 1-D R2C / C2R transforms in place. */
#pragma once
#include "tl-api.h"
#include "tl-array.h"

G_BEGIN_DECLS

typedef struct _TlCtVkfft TlCtVkfft;

/* A plan for `rows` transforms of n reals (n even) in place in `buffer`: rows of n/2 + 1
 * complex values (interleaved floats). The buffer must outlive the plan. */
TlCtVkfft *tl_ct_vkfft_new(TlContext *ctx, TlArray *buffer, guint n, guint rows, GError **error);
void tl_ct_vkfft_free(TlCtVkfft *p);
/* Records the forward (R2C, inverse = FALSE) or inverse (C2R, unnormalised) transform of
 * every row into cb. */
gboolean tl_ct_vkfft_append(TlCtVkfft *p, VkCommandBuffer cb, gboolean inverse, GError **error);

G_END_DECLS
