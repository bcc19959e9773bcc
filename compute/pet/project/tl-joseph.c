/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Joseph's projector: bilinear interpolation on the planes through the voxel centres across the
 * ray's dominant axis (shaders/pet/pet_joseph.glsl). */
#include "tl-projector-ray.h"

/* Four voxels on each plane of the longest axis. */
static guint32 joseph_cost(const TlProjector *p) {
  const TlImageGrid *g = &p->grid;
  return 4 * MAX(g->dims[0], MAX(g->dims[1], g->dims[2]));
}

static const TlRayTracer joseph_tracer = {.tracer = TL_PET_TRACER_JOSEPH, .ray_cost = joseph_cost};

static gboolean joseph_init(TlProjector *p, GError **error) {
  return tl_ray_projector_init(p, &joseph_tracer, error);
}

const TlProjectorClass tl_joseph_class = {
    .name = "joseph",
    .summary = "Joseph: bilinear interpolation on planes across the dominant axis",
    .label = "Joseph",
    .flags = TL_PROJECTOR_LISTMODE | TL_PROJECTOR_BINNED | TL_PROJECTOR_TOF,
    .init = joseph_init,
    TL_RAY_PROJECTOR_OPS,
};
