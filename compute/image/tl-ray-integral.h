/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Exact line integrals through a voxel image on the CPU (Siddon's intersection lengths,
 * walked voxel by voxel as Amanatides & Woo do): the simulator's attenuation
 * exp(-sum_n l(A; r_n) mu_n) of van Gendt et al. 2021 eq. 6. */
#pragma once
#include "tl-api.h"
#include "tl-image.h"

G_BEGIN_DECLS

/* Integral of the image along the segment a -> b (mm, the image in units per mm gives a
 * dimensionless result). Stops early and returns a value > stop once the sum exceeds it
 * (G_MAXDOUBLE: never). */
TL_API double tl_ray_integral(const TlImage *im, const double a[3], const double b[3], double stop);

/* Walks the ray a + t d (d a unit vector, t >= 0, mm) through the image until the integral
 * reaches `target`: TRUE with *t_hit where it does, FALSE when the ray leaves the image first.
 * A photon with -ln(u) of optical depth to spend (u uniform) interacts at *t_hit: the
 * simulator's interaction point, exp(-integral) the chance to pass. */
TL_API gboolean tl_ray_march(const TlImage *im, const double a[3], const double d[3], double target,
                      double *t_hit);

/* The smallest sub-image holding every non-zero voxel (same voxel size, shifted origin);
 * NULL when the image is all zero. Lines then walk only where something is. */
TL_API TlImage *tl_image_crop_to_support(const TlImage *im);

G_END_DECLS
