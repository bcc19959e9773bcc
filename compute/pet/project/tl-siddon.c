/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Siddon's projector: exact intersection lengths (shaders/pet/pet_siddon.glsl). */
#include "tl-projector-ray.h"

/* A ray crosses at most one plane per voxel boundary: nx + ny + nz voxels. */
static guint32 siddon_cost(const TlProjector *p) {
  return p->grid.dims[0] + p->grid.dims[1] + p->grid.dims[2];
}

static const TlRayTracer siddon_tracer = {.tracer = TL_PET_TRACER_SIDDON,
                                           .ray_cost = siddon_cost,
                                           .walk_f64 = TRUE};

static gboolean siddon_init(TlProjector *p, GError **error) {
  return tl_ray_projector_init(p, &siddon_tracer, error);
}

const TlProjectorClass tl_siddon_class = {
    .name = "siddon",
    .summary = "Siddon: exact intersection length of the line with each voxel",
    .label = "Siddon",
    .flags = TL_PROJECTOR_LISTMODE | TL_PROJECTOR_BINNED | TL_PROJECTOR_TOF,
    .init = siddon_init,
    TL_RAY_PROJECTOR_OPS,
};
