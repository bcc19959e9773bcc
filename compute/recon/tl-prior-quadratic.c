/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The quadratic prior (tl-prior.h):
 *
 *   R = 1/4 sum_j sum_{k in N_j} w_jk (x_j - x_k)^2,   dR/dx_j = sum_{k in N_j} w_jk (x_j - x_k)
 *
 * i.e. the pair potential 1/2 w (x_j - x_k)^2 once per pair; the gradient's factor 1 is the
 * 1/4 times 2 (derivative) times 2 (x_j appears as j and as k). Kernel: shaders/recon/prior.comp,
 * kind 0. */
#include "tl-recon-registry.h"

const TlPriorClass tl_prior_quadratic = {
    .name = "quadratic",
    .summary = "quadratic smoothing: 1/2 w (x_j - x_k)^2 per neighbour pair",
    .kind = 0,
};
