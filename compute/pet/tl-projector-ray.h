/* Internal: the projector operations shared by the ray-tracing projectors (Siddon, Joseph).
 * They run the kernels shaders/pet/pet_{forward,back,em}.comp; a class picks its tracer with the
 * PET_TRACER specialization constant and says how many voxels one ray may touch (the cost
 * of one LOR against the stream's submit budget). */
#pragma once
#include "tl-projector.h"

G_BEGIN_DECLS

/* PET_TRACER values (shaders/pet/pet_trace.glsl) */
enum { TL_RAY_TRACER_SIDDON = 0, TL_RAY_TRACER_JOSEPH = 1, TL_RAY_TRACER_TOR = 2 };

typedef struct {
  guint32 tracer;                             /* TL_RAY_TRACER_* */
  guint32 (*ray_cost)(const TlProjector *p);  /* voxels one ray visits at most */
} TlRayTracer;

/* init for a class whose tracer is `t` (static storage). */
gboolean tl_ray_projector_init(TlProjector *p, const TlRayTracer *t, GError **error);
void tl_ray_projector_finalize(TlProjector *p);
gboolean tl_ray_projector_forward(TlProjector *p, TlStream *s, const TlLors *lors,
                                  const TlArray *image, TlArray *out, GError **error);
gboolean tl_ray_projector_back(TlProjector *p, TlStream *s, const TlLors *lors,
                               const TlArray *weights, TlArray *image, GError **error);
gboolean tl_ray_projector_em(TlProjector *p, TlStream *s, const TlLors *lors,
                             const TlArray *image, TlArray *corr, TlArray *partials,
                             GError **error);
gboolean tl_ray_projector_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                                 const TlArray *image, double *sum, GError **error);
gboolean tl_ray_projector_sensitivity(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                      const TlArray *crystals, guint stride, guint offset,
                                      const TlArray *mu, const TlSensNorm *norm,
                                      TlArray *image, GError **error);

/* A class whose every operation is the ray implementation. */
#define TL_RAY_PROJECTOR_OPS                                                          \
  .finalize = tl_ray_projector_finalize, .forward = tl_ray_projector_forward,         \
  .back = tl_ray_projector_back, .em = tl_ray_projector_em,                           \
  .loglik = tl_ray_projector_loglik, .sensitivity = tl_ray_projector_sensitivity

G_END_DECLS
