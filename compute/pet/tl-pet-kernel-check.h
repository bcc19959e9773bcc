/* SPDX-License-Identifier: GPL-3.0-or-later */
/* An edited projector kernel installed with a check (core/tl-kernels.h): before a replaced
 * pet_forward / pet_back is used by a run, the pair is measured on random LORs, so the kernel
 * editor shows at once whether A and A^T still agree and how far A moved from the kernel used
 * before. Other kernels are installed the same way with the measures left at NAN. */
#pragma once
#include "tl-api.h"
#include "tl-kernels.h"
#include "pet/scanner/tl-scanner.h"

G_BEGIN_DECLS

typedef struct {
  guint n_lors;
  /* |<A x, w> - <x, A^T w>| / max(|<A x, w>|, |<x, A^T w>|) with the new pair (x, w random in
   * [0, 1]): about 1e-7 for an adjoint pair in float */
  double adjoint_rel;
  /* max |A x - A_before x| / max |A_before x|, and the same for A^T w */
  double forward_rel, back_rel;
} TlPetKernelCheck;

/* Installs `spirv` as the replacement of built-in kernel `name` in ctx; for pet_forward,
 * pet_back and their variants, first measures the projector pair (`projector`: "siddon",
 * "joseph" or "tor") on n_lors random LORs of `scanner` through `grid` before and after.
 * On failure (a kernel that compiled but cannot run) the kernel in use before stays. */
TL_API gboolean tl_pet_kernel_install_checked(TlContext *ctx, const char *name, const guint32 *spirv,
                                       gsize size_bytes, const TlScanner *scanner,
                                       const TlImageGrid *grid, const char *projector,
                                       guint n_lors, TlPetKernelCheck *out, GError **error);

G_END_DECLS
