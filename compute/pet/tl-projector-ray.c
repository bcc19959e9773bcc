/* Ray-tracing projectors on the device: pipelines per variant (created on first use) and the
 * push block shared by shaders/pet/pet_forward.comp, pet_back.comp and pet_em.comp. */
#include "tl-kernels.h"
#include "tl-projector-ray.h"
#include <stddef.h>
#include <string.h>

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
} TlPetPush;
#define TL_PET_PUSH_SIZE ((guint32)(offsetof(TlPetPush, atten) + sizeof(guint64)))
G_STATIC_ASSERT(offsetof(TlPetPush, dims) == 48 && offsetof(TlPetPush, vox) == 80);
G_STATIC_ASSERT(offsetof(TlPetPush, atten) == 112 && TL_PET_PUSH_SIZE == 120);

/* PET_LORS values */
enum { LORS_EVENTS = 0, LORS_BINS = 1, LORS_END_POINTS = 2, LORS_ALL_PAIRS = 3 };

typedef struct {
  const TlRayTracer *tracer;
  float tor_sigma_mm;    /* PET_TOR_SIGMA: the "tor" class's Gaussian, 0 for the others */
  GHashTable *pipelines; /* variant key -> TlPipeline */
  guint kernels_generation; /* tl_kernels_generation() the pipelines were built at */
  GPtrArray *stale;      /* pipelines of older generations: a command buffer recorded before
                          * an edited kernel came in may still use them; freed with the projector */
  TlArray *partials;     /* host-visible per-workgroup log-likelihood sums */
} RayPriv;

gboolean tl_ray_projector_init(TlProjector *p, const TlRayTracer *t, GError **error) {
  RayPriv *r = g_new0(RayPriv, 1);
  r->tracer = t;
  r->tor_sigma_mm = t->tracer == TL_RAY_TRACER_TOR ? (float)(p->params.tor_fwhm_mm / 2.354820045) : 0.0f;
  r->pipelines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  r->stale = g_ptr_array_new_with_free_func((GDestroyNotify)tl_pipeline_free);
  r->kernels_generation = tl_kernels_generation(p->ctx);
  p->priv = r;
  return TRUE;
}

void tl_ray_projector_finalize(TlProjector *p) {
  RayPriv *r = p->priv;
  if (!r) return;
  g_hash_table_destroy(r->pipelines);
  g_ptr_array_unref(r->stale); /* every pipeline ever built, current ones included */
  tl_array_free(r->partials);
  g_free(r);
  p->priv = NULL;
}

static guint32 lors_value(TlLorKind k) {
  return k == TL_LORS_EVENTS ? LORS_EVENTS : k == TL_LORS_BINS ? LORS_BINS : LORS_END_POINTS;
}

static guint32 float_bits(float f) {
  guint32 u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The pipeline of `kernel` ("pet_forward", "pet_back", "pet_em") for a LOR source, with the
 * scatter mode resolved against the device; cost = rays' voxels x `passes` (em walks twice;
 * attenuated all-pairs sensitivity walks each pair twice too: mu first, then the image).
 * tof: NULL = none. */
static TlPipeline *pipeline(TlProjector *p, const char *kernel, guint32 lors, guint32 atten,
                            const TlTof *tof, guint32 loglik, guint32 passes, GError **error) {
  RayPriv *r = p->priv;
  gboolean has_fa = tl_context_info(p->ctx)->float32_atomic_add;
  gboolean scatters = g_strcmp0(kernel, "pet_forward") != 0;
  guint32 atomic = 0;
  const char *shader = kernel;
  if (scatters) {
    TlScatter mode = p->scatter;
    if (mode == TL_SCATTER_FLOAT_ATOMIC && !has_fa) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "float atomic add was asked for, but the device lacks "
                  "shaderBufferFloat32AtomicAdd");
      return NULL;
    }
    if (mode == TL_SCATTER_AUTO) mode = has_fa ? TL_SCATTER_FLOAT_ATOMIC : TL_SCATTER_CAS;
    if (mode == TL_SCATTER_CAS && !has_fa) mode = TL_SCATTER_CAS_PORTABLE;
    atomic = mode == TL_SCATTER_FLOAT_ATOMIC;
    if (mode == TL_SCATTER_CAS_PORTABLE)
      shader = g_str_equal(kernel, "pet_back") ? "pet_back_cas" : "pet_em_cas";
  }
  /* constant ids 1..10: PET_TRACER, PET_LORS, PET_ATOMIC, PET_ATTEN, PET_LOGLIK
   * (pet_forward and pet_em; pet_back ignores the entry), PET_TOF, its sigma, bin width and
   * truncation, PET_TOR_SIGMA (shaders/pet/pet_common.glsl) */
  guint32 spec[10] = {r->tracer->tracer, lors, atomic, atten, loglik, tof != NULL,
                      float_bits(tof ? tof->sigma_mm : 1.0f), float_bits(tof ? tof->bin_mm : 1.0f),
                      float_bits(tof ? tof->n_sigma : 3.0f), float_bits(r->tor_sigma_mm)};
  g_autofree char *key = g_strdup_printf("%s/%u/%u/%u/%u/%u/%08x/%08x/%08x", shader, lors,
                                         atomic, atten, loglik, spec[5], spec[6], spec[7],
                                         spec[8]);
  /* an edited kernel came in (tl-kernels.h): build afresh from it */
  guint generation = tl_kernels_generation(p->ctx);
  if (generation != r->kernels_generation) {
    g_hash_table_remove_all(r->pipelines);
    r->kernels_generation = generation;
  }
  TlPipeline *pl = g_hash_table_lookup(r->pipelines, key);
  if (pl) return pl;
  pl = tl_pipeline_new_builtin(p->ctx, shader, TL_PET_PUSH_SIZE, spec, G_N_ELEMENTS(spec),
                               error);
  if (!pl) return NULL;
  tl_pipeline_set_item_cost(pl, MAX(r->tracer->ray_cost(p), 1u) * passes);
  g_hash_table_insert(r->pipelines, g_steal_pointer(&key), pl);
  g_ptr_array_add(r->stale, pl);
  return pl;
}

static void push_init(const TlProjector *p, TlPetPush *push) {
  memset(push, 0, sizeof *push);
  for (int k = 0; k < 3; k++) {
    push->dims[k] = p->grid.dims[k];
    push->vox[k] = p->grid.voxel_mm[k];
    /* origin_mm is the centre of voxel (0,0,0) (tl-image.h); kernels want its outer corner */
    push->lo[k] = p->grid.origin_mm[k] - 0.5f * p->grid.voxel_mm[k];
  }
}

static void push_lors(TlPetPush *push, const TlLors *l) {
  push->lors = tl_array_address(l->records);
  if (l->atten) push->atten = tl_array_address(l->atten);
  push->first = (guint32)l->first;
  if (l->kind != TL_LORS_END_POINTS) {
    push->crystals = tl_array_address(l->crystals);
    push->n_crystals = (guint32)tl_array_length(l->crystals);
  }
}

static char *label(const TlProjector *p, const char *what) {
  return g_strdup_printf("%s %s", what, p->klass->name);
}

gboolean tl_ray_projector_forward(TlProjector *p, TlStream *s, const TlLors *lors,
                                  const TlArray *image, TlArray *out, GError **error) {
  TlPipeline *pl = pipeline(p, "pet_forward", lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, 0, 1, error);
  if (!pl) return FALSE;
  TlPetPush push;
  push_init(p, &push);
  push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.dst = tl_array_address(out);
  g_autofree char *lb = label(p, "forward");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

gboolean tl_ray_projector_back(TlProjector *p, TlStream *s, const TlLors *lors,
                               const TlArray *weights, TlArray *image, GError **error) {
  TlPipeline *pl = pipeline(p, "pet_back", lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, 0, 1, error);
  if (!pl) return FALSE;
  TlPetPush push;
  push_init(p, &push);
  push_lors(&push, lors);
  push.dst = tl_array_address(image);
  if (weights) {
    push.aux = tl_array_address(weights);
    push.flags = 1;
  }
  g_autofree char *lb = label(p, "back");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

gboolean tl_ray_projector_em(TlProjector *p, TlStream *s, const TlLors *lors,
                             const TlArray *image, TlArray *corr, TlArray *partials,
                             GError **error) {
  /* PET_LOGLIK picks the variant, so the pass without the log-likelihood is the old kernel */
  TlPipeline *pl = pipeline(p, "pet_em", lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, partials != NULL, 2, error);
  if (!pl) return FALSE;
  TlPetPush push;
  push_init(p, &push);
  push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.dst = tl_array_address(corr);
  if (partials) push.aux = tl_array_address(partials);
  /* one label for both variants: the profile shows one EM kernel per sub-iteration */
  g_autofree char *lb = label(p, "em");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

gboolean tl_ray_projector_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                                 const TlArray *image, double *sum, GError **error) {
  RayPriv *r = p->priv;
  *sum = 0.0;
  TlPipeline *pl = pipeline(p, "pet_forward", lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, 1, 1, error);
  if (!pl) return FALSE;
  guint32 local = tl_pipeline_local_size(pl);
  guint64 groups = (lors->count + local - 1) / local;
  if (groups == 0) return tl_stream_finish(s, error);
  if (!r->partials || tl_array_length(r->partials) < groups) {
    g_clear_pointer(&r->partials, tl_array_free);
    r->partials = tl_array_new_host(p->ctx, groups, sizeof(float), TRUE, error);
    if (!r->partials) return FALSE;
  }
  TlPetPush push;
  push_init(p, &push);
  push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.aux = tl_array_address(r->partials);
  g_autofree char *lb = label(p, "loglik");
  if (!tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error) ||
      !tl_stream_finish(s, error))
    return FALSE;
  /* workgroup sums in float, their total in double: 10^6 events stay well resolved */
  const float *part = tl_array_map(r->partials);
  double acc = 0.0;
  for (guint64 g = 0; g < groups; g++) acc += part[g];
  *sum = acc;
  return TRUE;
}

gboolean tl_ray_projector_sensitivity(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                      const TlArray *crystals, guint stride, guint offset,
                                      const TlArray *mu, TlArray *image, GError **error) {
  TlPipeline *pl = pipeline(p, "pet_back", LORS_ALL_PAIRS, mu != NULL, NULL, 0, mu ? 2 : 1,
                             error);
  if (!pl) return FALSE;
  guint64 pairs = tl_pair_count(scanner->n_crystals);
  guint64 items = pairs > offset ? (pairs - offset + stride - 1) / stride : 0;
  TlPetPush push;
  push_init(p, &push);
  push.crystals = tl_array_address(crystals);
  push.n_crystals = scanner->n_crystals;
  push.dst = tl_array_address(image);
  if (mu) push.image = tl_array_address(mu); /* PET_ATTEN with all pairs: the mu-map */
  push.first = offset;
  push.stride = stride;
  push.max_ring_diff = scanner->max_ring_difference;
  push.n_pairs = (guint32)pairs;
  g_autofree char *lb = label(p, "sensitivity");
  return tl_stream_dispatch_1d(s, pl, lb, items, &push, error);
}
