/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Tube of response (Kovács (n.d.)): Joseph's plane walk with the bilinear hat convolved with a
 * Gaussian across the tube (shaders/pet/pet_tor.glsl); TlProjectorParams.tor_fwhm_mm sets it. */
#include "tl-projector-ray.h"
#include <math.h>

/* The kernel keeps at most 32 taps per transverse axis: 2 (1 + 3 s_u) + 1 <= 32 with
 * s_u = sigma sqrt(1 + (d_u / d_m)^2) / vox_u <= sigma sqrt 2 / vox_u (|d_u| <= |d_m|). */
#define TOR_MAX_REACH 14.0

static double tor_sigma_vox(const TlProjector *p) {
  float vmin = MIN(p->grid.voxel_mm[0], MIN(p->grid.voxel_mm[1], p->grid.voxel_mm[2]));
  return p->params.tor_fwhm_mm / 2.354820045 * G_SQRT2 / vmin;
}

/* (2R + 1)^2 taps on each plane of the longest axis. */
static guint32 tor_cost(const TlProjector *p) {
  const TlImageGrid *g = &p->grid;
  guint32 taps = 2 * (guint32)ceil(1.0 + 3.0 * tor_sigma_vox(p)) + 1;
  return taps * taps * MAX(g->dims[0], MAX(g->dims[1], g->dims[2]));
}

static const TlRayTracer tor_tracer = {.tracer = TL_PET_TRACER_TOR, .ray_cost = tor_cost};

static gboolean tor_init(TlProjector *p, GError **error) {
  double fwhm = p->params.tor_fwhm_mm;
  if (!isfinite(fwhm) || fwhm < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "tube of response: FWHM %g mm, expected a finite width >= 0", fwhm);
    return FALSE;
  }
  if (1.0 + 3.0 * tor_sigma_vox(p) > TOR_MAX_REACH) {
    float vmin = MIN(p->grid.voxel_mm[0], MIN(p->grid.voxel_mm[1], p->grid.voxel_mm[2]));
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "tube of response: FWHM %g mm is too wide for %g mm voxels (at most %.3g mm: "
                "the kernel keeps 32 voxels across the tube)",
                fwhm, vmin, (TOR_MAX_REACH - 1.0) / 3.0 * 2.354820045 / G_SQRT2 * vmin);
    return FALSE;
  }
  return tl_ray_projector_init(p, &tor_tracer, error);
}

static char *tor_key(const TlProjector *p) {
  return g_strdup_printf("tor fwhm %.9g mm", p->params.tor_fwhm_mm);
}

const TlProjectorClass tl_tor_class = {
    .name = "tor",
    .summary = "tube of response: Joseph's planes with a Gaussian across the tube (Kovács (n.d.))",
    .label = "Tube of response",
    .flags = TL_PROJECTOR_LISTMODE | TL_PROJECTOR_BINNED | TL_PROJECTOR_TOF,
    .init = tor_init,
    .key = tor_key,
    TL_RAY_PROJECTOR_OPS,
};
