/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The attenuation map (mu-map, mm^-1) a PET correction or operator takes: its grid and its
 * values checked once, for every user (the operators, SSS, the normalisation estimate). */
#pragma once
#include "tl-api.h"
#include "image/tl-image.h"

G_BEGIN_DECLS

/* Largest plausible linear attenuation coefficient at 511 keV (mm^-1): water 0.0096, cortical
 * bone ~0.017; anything above this is taken for a map in the wrong units (e.g. cm^-1). */
#define TL_PET_MU_MAX 0.05f

/* mu on `grid`, every voxel finite and in [0, TL_PET_MU_MAX]; the GError names both grids,
 * or the voxel and its value. */
TL_API gboolean tl_pet_check_attenuation(const TlImage *mu, const TlImageGrid *grid, GError **error);

G_END_DECLS
