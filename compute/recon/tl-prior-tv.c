/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Smoothed total variation (tl-prior.h):
 *
 *   R = sum_j (S_j - eps),  S_j = sqrt(|g_j|^2 + eps^2),
 *   g_j = ((x_{j+e_x} - x_j) / v_x, (x_{j+e_y} - x_j) / v_y, (x_{j+e_z} - x_j) / v_z)
 *
 * forward differences in mm, 0 across the grid's far face. x_m enters g_m with -1/v_a and
 * g_{m-e_a} with +1/v_a, so
 *
 *   dR/dx_m = sum_a [ g_{m-e_a,a} / S_{m-e_a} - g_{m,a} / S_m ] / v_a
 *
 * (no m-e_a term on the near face). The -eps makes R = 0 on a constant image; it changes no
 * gradient. Kernel: shaders/recon/prior.comp, kind 2. */
#include "tl-recon-registry.h"

const TlPriorClass tl_prior_tv = {
    .name = "tv",
    .summary = "smoothed total variation: sqrt(|grad x|^2 + eps^2) - eps per voxel",
    .kind = 2,
};
