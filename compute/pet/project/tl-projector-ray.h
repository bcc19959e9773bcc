/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal: the projector operations shared by the ray-tracing projectors (Siddon, Joseph).
 * They run the kernels shaders/pet/pet_{forward,back,em}.comp; a class picks its tracer with the
 * PET_TRACER specialization constant and says how many voxels one ray may touch (the cost
 * of one LOR against the stream's submit budget). */
#pragma once
#include "tl-projector.h"
#include "tl-pipeline.h"
#include "core/tl_constants.glsl" /* TL_PET_*: the kernels' constant ids, values and layouts */
#include <stddef.h>

G_BEGIN_DECLS

typedef struct {
  guint32 tracer;                             /* PET_TRACER: TL_PET_TRACER_* */
  guint32 (*ray_cost)(const TlProjector *p);  /* voxels one ray visits at most */
  gboolean walk_f64; /* has a double walk for the sensitivity (pet_sens_f64.comp) */
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
gboolean tl_ray_projector_sensitivity_double(const TlProjector *p);
const char *const *tl_ray_projector_kernels(const TlProjector *p, TlProjectorPass pass,
                                            const TlLors *lors);

/* shaders/pet/pet_common.glsl: Push (scalar layout). */
typedef struct {
  TlPush1D h;
  guint64 lors, crystals, image, dst, aux;
  guint32 dims[3];
  guint32 first;
  float lo[3];
  guint32 flags;
  float vox[3];
  guint32 n_crystals;
  guint32 stride;
  guint32 max_ring_diff;
  guint32 n_pairs;
  guint32 pad;
  guint64 atten; /* PET_ATTEN: per-record attenuation factors */
  guint64 norm;  /* pet_sens, PET_NORM: the normalisation tables (tl_norm_upload) */
} TlPetPush;
#define TL_PET_PUSH_SIZE ((guint32)(offsetof(TlPetPush, norm) + sizeof(guint64)))
G_STATIC_ASSERT(offsetof(TlPetPush, dims) == 48 && offsetof(TlPetPush, vox) == 80);
G_STATIC_ASSERT(offsetof(TlPetPush, atten) == 112 && TL_PET_PUSH_SIZE == 128);

/* Helpers shared with the CPU plane path (tl-projector-planes.c). */
guint32 tl_ray_tracer(const TlProjector *p);
guint32 tl_ray_lors_value(TlLorKind k);
/* The value of constant id `id` in a kernel's array of values (tl-pipeline.h: ids from 1). */
#define TL_PET_SPEC(spec, id) ((spec)[(id) - 1])
/* Sets constant ids TL_PET_ID_TRACER .. TL_PET_ID_TOR_SIGMA of pet_common.glsl in spec (an
 * array of TL_PET_N_IDS values); the others are left as they are. */
void tl_ray_spec(const TlProjector *p, guint32 lors, guint32 atomic, guint32 atten,
                 const TlTof *tof, guint32 loglik, guint32 spec[TL_PET_N_IDS]);
/* The pipeline `key` names, built from `shader` on first use (local 0: the default size). */
TlPipeline *tl_ray_pipeline(TlProjector *p, const char *key, const char *shader, guint32 local,
                            guint32 push_size, const guint32 *spec, guint32 n_spec, guint32 cost,
                            GError **error);
void tl_ray_push_init(const TlProjector *p, TlPetPush *push);
void tl_ray_push_lors(TlPetPush *push, const TlLors *l);

/* The CPU plane path of the EM sub-iteration (tl-projector-planes.c). */
typedef struct _TlPlanes TlPlanes;
TlPlanes *tl_planes_new(void);
void tl_planes_free(TlPlanes *pl);
gboolean tl_planes_em_chosen(const TlProjector *p, const TlLors *lors);
gboolean tl_planes_em(TlProjector *p, TlPlanes *pl, TlStream *s, const TlLors *lors,
                      const TlArray *image, TlArray *corr, TlArray *partials, GError **error);

/* A class whose every operation is the ray implementation. */
#define TL_RAY_PROJECTOR_OPS                                                          \
  .finalize = tl_ray_projector_finalize, .forward = tl_ray_projector_forward,         \
  .back = tl_ray_projector_back, .em = tl_ray_projector_em,                           \
  .loglik = tl_ray_projector_loglik, .sensitivity = tl_ray_projector_sensitivity,   \
  .sensitivity_double = tl_ray_projector_sensitivity_double,                        \
  .kernels = tl_ray_projector_kernels

G_END_DECLS
