/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The relative difference prior (Nuyts, Beque, Dupont & Mortelmans 2002, IEEE TNS 49(1)),
 * with the eps of tl-prior.h that keeps it finite where x_j = x_k = 0:
 *
 *   R = 1/2 sum_j sum_{k in N_j} w_jk f(x_j, x_k),
 *   f(a, b) = (a - b)^2 / (a + b + gamma |a - b| + eps)
 *   dR/dx_j = sum_{k in N_j} w_jk (x_j - x_k)(x_j + 3 x_k + gamma |x_j - x_k| + 2 eps)
 *                                / (x_j + x_k + gamma |x_j - x_k| + eps)^2
 *
 * (f is symmetric, so x_j's two appearances per pair give the same derivative and cancel the
 * 1/2; with eps = 0 and r = x_j / x_k the pair term is the paper's
 * (r - 1)(gamma |r - 1| + r + 3) / (r + 1 + gamma |r - 1|)^2.) The image must be >= 0 so that
 * the denominator stays >= eps. Kernel: shaders/recon/prior.comp, kind 1. */
#include "tl-recon-registry.h"

const TlPriorClass tl_prior_rdp = {
    .name = "rdp",
    .summary = "relative difference prior (Nuyts 2002): edge-preserving, scaled to the activity",
    .kind = 1,
};
