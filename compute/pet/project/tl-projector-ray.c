/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Ray-tracing projectors on the device: pipelines per variant (created on first use) and the
 * push block shared by shaders/pet/pet_forward.comp, pet_back.comp and pet_em.comp. */
#include "tl-fixed.h"
#include "tl-kernels.h"
#include "tl-progress.h"
#include "tl-projector-ray.h"
#include <math.h>
#include "tl-sensitivity.h"
#include <stddef.h>
#include <string.h>

/* the device's record and crystal layouts (tl_constants.glsl) are the host's structs */
G_STATIC_ASSERT(sizeof(TlEvent) == 4 * TL_PET_RECORD_WORDS &&
                sizeof(TlBin) == 4 * TL_PET_RECORD_WORDS);
G_STATIC_ASSERT(sizeof(TlCrystal) == 4 * TL_PET_CRYSTAL_WORDS);

typedef struct {
  const TlRayTracer *tracer;
  float tor_sigma_mm;    /* PET_TOR_SIGMA: the "tor" class's Gaussian, 0 for the others */
  GHashTable *pipelines; /* variant key -> TlPipeline */
  guint kernels_generation; /* tl_kernels_generation() the pipelines were built at */
  GPtrArray *stale;      /* pipelines of older generations: a command buffer recorded before
                          * an edited kernel came in may still use them; freed with the projector */
  TlArray *partials;     /* host-visible per-workgroup log-likelihood sums */
  TlArray *sens_acc;     /* sensitivity: 64-bit fixed-point sums, 2 uints per voxel; reused
                          * in stream order (zeroed by each call before its kernels) */
  TlArray *sens_pairs;   /* sensitivity, symmetric method: the pairs to trace (sens_pairs()) */
  char *sens_pairs_key;  /* ... of this scanner (tl_scanner_key) */
  guint64 sens_counts[5]; /* ... how many are fixed by 1, 2, 4, 8, 16 symmetries */
  GPtrArray *sens_old;   /* pair lists replaced while work may still read them */
  TlPlanes *planes;      /* the CPU plane path's buffers (tl-projector-planes.c), or NULL */
  TlFixed *fixed;        /* TL_SCATTER_FIXED: the accumulator (core/tl-fixed.h) */
  TlArray *fixed_w;      /* ... the EM pass's back-projection weights, one per LOR */
} RayPriv;

gboolean tl_ray_projector_init(TlProjector *p, const TlRayTracer *t, GError **error) {
  RayPriv *r = g_new0(RayPriv, 1);
  r->tracer = t;
  r->tor_sigma_mm = t->tracer == TL_PET_TRACER_TOR ? (float)(p->params.tor_fwhm_mm / 2.354820045) : 0.0f;
  r->pipelines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  r->stale = g_ptr_array_new_with_free_func((GDestroyNotify)tl_pipeline_free);
  r->kernels_generation = tl_kernels_generation(p->ctx);
  r->sens_old = g_ptr_array_new_with_free_func((GDestroyNotify)tl_array_free);
  p->priv = r;
  return TRUE;
}

void tl_ray_projector_finalize(TlProjector *p) {
  RayPriv *r = p->priv;
  if (!r) return;
  g_hash_table_destroy(r->pipelines);
  g_ptr_array_unref(r->stale); /* every pipeline ever built, current ones included */
  tl_array_free(r->partials);
  tl_array_free(r->sens_acc);
  tl_array_free(r->sens_pairs);
  g_free(r->sens_pairs_key);
  g_ptr_array_unref(r->sens_old);
  tl_planes_free(r->planes);
  tl_fixed_free(r->fixed);
  tl_array_free(r->fixed_w);
  g_free(r);
  p->priv = NULL;
}

guint32 tl_ray_lors_value(TlLorKind k) {
  return k == TL_LORS_EVENTS ? TL_PET_LORS_EVENTS
         : k == TL_LORS_BINS ? TL_PET_LORS_BINS
                             : TL_PET_LORS_END_POINTS;
}

static guint32 float_bits(float f) {
  guint32 u;
  memcpy(&u, &f, sizeof u);
  return u;
}

void tl_ray_spec(const TlProjector *p, guint32 lors, guint32 atomic, guint32 atten,
                 const TlTof *tof, guint32 loglik, guint32 spec[TL_PET_N_IDS]) {
  const RayPriv *r = p->priv;
  TL_PET_SPEC(spec, TL_PET_ID_TRACER) = r->tracer->tracer;
  TL_PET_SPEC(spec, TL_PET_ID_LORS) = lors;
  TL_PET_SPEC(spec, TL_PET_ID_ATOMIC) = atomic;
  TL_PET_SPEC(spec, TL_PET_ID_ATTEN) = atten;
  TL_PET_SPEC(spec, TL_PET_ID_LOGLIK) = loglik;
  TL_PET_SPEC(spec, TL_PET_ID_TOF) = tof != NULL;
  /* without TOF the kernels never read these: any finite values */
  TL_PET_SPEC(spec, TL_PET_ID_TOF_SIGMA) = float_bits(tof ? tof->sigma_mm : 1.0f);
  TL_PET_SPEC(spec, TL_PET_ID_TOF_BIN) = float_bits(tof ? tof->bin_mm : 1.0f);
  TL_PET_SPEC(spec, TL_PET_ID_TOF_NSIGMA) = float_bits(tof ? tof->n_sigma : 3.0f);
  TL_PET_SPEC(spec, TL_PET_ID_TOR_SIGMA) = float_bits(r->tor_sigma_mm);
}

guint32 tl_ray_tracer(const TlProjector *p) { return ((const RayPriv *)p->priv)->tracer->tracer; }

/* The pipeline `key` names (built from `shader` and its constants on first use). */
TlPipeline *tl_ray_pipeline(TlProjector *p, const char *key, const char *shader, guint32 local,
                            guint32 push_size, const guint32 *spec, guint32 n_spec, guint32 cost,
                            GError **error) {
  RayPriv *r = p->priv;
  /* an edited kernel came in (tl-kernels.h): build afresh from it */
  guint generation = tl_kernels_generation(p->ctx);
  if (generation != r->kernels_generation) {
    g_hash_table_remove_all(r->pipelines);
    r->kernels_generation = generation;
  }
  TlPipeline *pl = g_hash_table_lookup(r->pipelines, key);
  if (pl) return pl;
  pl = tl_pipeline_new_builtin_local(p->ctx, shader, local, push_size, spec, n_spec, error);
  if (!pl) return NULL;
  tl_pipeline_set_item_cost(pl, cost);
  g_hash_table_insert(r->pipelines, g_strdup(key), pl);
  g_ptr_array_add(r->stale, pl);
  return pl;
}

/* The scatter mode p->scatter resolves to on this device: AUTO is FIXED; grids too large for
 * the fixed-point accumulator fall back to float atomics (CAS where the device lacks them). */
static TlScatter scatter_mode(const TlProjector *p) {
  gboolean has_fa = tl_context_info(p->ctx)->float32_atomic_add;
  TlScatter mode = p->scatter;
  /* $TOMOLAB_PET_SCATTER=float: AUTO takes float atomics (or CAS) for speed, giving up
   * bit-identical reruns (bench/README.md, bench/determinism) */
  if (mode == TL_SCATTER_AUTO)
    mode = g_strcmp0(g_getenv("TOMOLAB_PET_SCATTER"), "float") == 0
               ? (has_fa ? TL_SCATTER_FLOAT_ATOMIC : TL_SCATTER_CAS)
               : TL_SCATTER_FIXED;
  if (mode == TL_SCATTER_FIXED && tl_image_grid_n_voxels(&p->grid) > TL_FIXED_MAX_ELEMENTS)
    mode = has_fa ? TL_SCATTER_FLOAT_ATOMIC : TL_SCATTER_CAS;
  if (mode == TL_SCATTER_CAS && !has_fa) mode = TL_SCATTER_CAS_PORTABLE;
  return mode;
}

/* The kernel a scatter mode runs: the portable build (no float-atomic capability) where the
 * device lacks float atomics, or where it was asked for. */
static const char *scatter_shader(const TlProjector *p, const char *kernel, TlScatter mode) {
  if (g_str_equal(kernel, "pet_em_back")) return kernel; /* portable on every device */
  gboolean portable = mode == TL_SCATTER_CAS_PORTABLE ||
                      (mode == TL_SCATTER_FIXED && !tl_context_info(p->ctx)->float32_atomic_add);
  if (!portable) return kernel;
  return g_str_equal(kernel, "pet_back") ? "pet_back_cas" : "pet_em_cas";
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
  guint32 atomic = 0, fixed = 0;
  const char *shader = kernel;
  if (scatters) {
    if (p->scatter == TL_SCATTER_FLOAT_ATOMIC && !has_fa) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "float atomic add was asked for, but the device lacks "
                  "shaderBufferFloat32AtomicAdd");
      return NULL;
    }
    TlScatter mode = scatter_mode(p);
    /* all pairs here is the float sensitivity of grids beyond the fixed-point kernels */
    if (mode == TL_SCATTER_FIXED && lors == TL_PET_LORS_ALL_PAIRS)
      mode = has_fa ? TL_SCATTER_FLOAT_ATOMIC : TL_SCATTER_CAS_PORTABLE;
    atomic = mode == TL_SCATTER_FLOAT_ATOMIC;
    fixed = mode == TL_SCATTER_FIXED;
    shader = scatter_shader(p, kernel, mode);
  }
  /* pet_common.glsl's constants (PET_LOGLIK: pet_forward and pet_em; pet_back ignores it);
   * the ids of pet_sens and the plane path unused here; PET_FIXED last */
  guint32 spec[TL_PET_N_IDS] = {0};
  tl_ray_spec(p, lors, atomic, atten, tof, loglik, spec);
  TL_PET_SPEC(spec, TL_PET_ID_FIXED) = fixed;
  g_autofree char *key = g_strdup_printf(
      "%s/%u/%u/%u/%u/%u/%08x/%08x/%08x/%u", shader, lors, atomic, atten, loglik,
      TL_PET_SPEC(spec, TL_PET_ID_TOF), TL_PET_SPEC(spec, TL_PET_ID_TOF_SIGMA),
      TL_PET_SPEC(spec, TL_PET_ID_TOF_BIN), TL_PET_SPEC(spec, TL_PET_ID_TOF_NSIGMA), fixed);
  return tl_ray_pipeline(p, key, shader, 0, TL_PET_PUSH_SIZE, spec,
                         fixed ? TL_PET_ID_FIXED : TL_PET_ID_TOR_SIGMA,
                         MAX(r->tracer->ray_cost(p), 1u) * passes, error);
}

/* TL_SCATTER_FIXED's amax (tl-fixed.h): a LOR adds at most twice the voxel's diagonal to one
 * voxel per unit weight (sens_scale_bits below says why), times a margin of 4 for attenuation
 * factors slightly above 1 (a mu-map with negative noise). */
static float fixed_amax(const TlProjector *p) {
  const float *v = p->grid.voxel_mm;
  return (float)(8.0 * sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]));
}

/* The fixed-point back projection of lors weighted by w (NULL: every weight 1; PET_ATTEN as
 * pipeline's atten) into image with `kernel` (pet_back or pet_em_back): accumulator zeroed
 * (unless em: pet_em zeroed it and stored the largest |w| in its head), the head from the
 * weights, the scatter, the sum added into image. */
static gboolean back_fixed(TlProjector *p, TlStream *s, const char *kernel, const TlLors *lors,
                           guint32 atten, const TlArray *w, gboolean em, TlArray *image,
                           const char *lb, GError **error) {
  RayPriv *r = p->priv;
  TlPipeline *pl = pipeline(p, kernel, tl_ray_lors_value(lors->kind), atten, lors->tof, 0, 1,
                            error);
  if (!pl) return FALSE;
  if (!em) {
    if (!r->fixed) r->fixed = tl_fixed_new(p->ctx);
    if (!tl_fixed_begin(r->fixed, s, tl_image_grid_n_voxels(&p->grid), error)) return FALSE;
  }
  if (!(w ? tl_fixed_bound_weights(r->fixed, s, tl_array_address(w), lors->count, em, error)
          : tl_fixed_bound_unit(r->fixed, s, lors->count, error)))
    return FALSE;
  float amax = fixed_amax(p);
  TlPetPush push;
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
  push.dst = tl_fixed_address(r->fixed);
  push.pad = float_bits(amax);
  if (w) {
    push.aux = tl_array_address(w);
    push.flags = 1;
  }
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error) &&
         tl_fixed_finish(r->fixed, s, image, amax, error);
}

void tl_ray_push_init(const TlProjector *p, TlPetPush *push) {
  memset(push, 0, sizeof *push);
  for (int k = 0; k < 3; k++) {
    push->dims[k] = p->grid.dims[k];
    push->vox[k] = p->grid.voxel_mm[k];
    /* origin_mm is the centre of voxel (0,0,0) (tl-image.h); kernels want its outer corner */
    push->lo[k] = p->grid.origin_mm[k] - 0.5f * p->grid.voxel_mm[k];
  }
}

void tl_ray_push_lors(TlPetPush *push, const TlLors *l) {
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
  TlPipeline *pl = pipeline(p, "pet_forward", tl_ray_lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, 0, 1, error);
  if (!pl) return FALSE;
  TlPetPush push;
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.dst = tl_array_address(out);
  g_autofree char *lb = label(p, "forward");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

gboolean tl_ray_projector_back(TlProjector *p, TlStream *s, const TlLors *lors,
                               const TlArray *weights, TlArray *image, GError **error) {
  if (scatter_mode(p) == TL_SCATTER_FIXED) {
    g_autofree char *lb = label(p, "back");
    return back_fixed(p, s, "pet_back", lors, lors->atten != NULL, weights, FALSE, image, lb,
                      error);
  }
  TlPipeline *pl = pipeline(p, "pet_back", tl_ray_lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, 0, 1, error);
  if (!pl) return FALSE;
  TlPetPush push;
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
  push.dst = tl_array_address(image);
  if (weights) {
    push.aux = tl_array_address(weights);
    push.flags = 1;
  }
  g_autofree char *lb = label(p, "back");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

/* TL_SCATTER_FIXED's EM pass in two kernels: pet_em forwards and writes each LOR's weight
 * a_j m_j / ybar_j with their largest value, then pet_em_back (pet_back's code) adds them up
 * in fixed point (the weights carry a_j already: PET_ATTEN 0 there). One walk forward and one
 * back per LOR, as the fused kernel; the weights cost 4 bytes per LOR. */
static gboolean em_fixed(TlProjector *p, TlStream *s, const TlLors *lors, const TlArray *image,
                         TlArray *corr, TlArray *partials, GError **error) {
  RayPriv *r = p->priv;
  TlPipeline *pl = pipeline(p, "pet_em", tl_ray_lors_value(lors->kind), lors->atten != NULL,
                            lors->tof, partials != NULL, 1, error);
  if (!pl) return FALSE;
  if (!r->fixed) r->fixed = tl_fixed_new(p->ctx);
  guint64 n = MAX(lors->count, 1);
  if (!r->fixed_w || tl_array_length(r->fixed_w) < n) {
    /* recorded work may still read the old weights */
    if (r->fixed_w && !tl_stream_finish(s, error)) return FALSE;
    g_clear_pointer(&r->fixed_w, tl_array_free);
    if (!(r->fixed_w = tl_array_new_float(p->ctx, n, error))) return FALSE;
  }
  if (!tl_fixed_begin(r->fixed, s, tl_image_grid_n_voxels(&p->grid), error)) return FALSE;
  TlPetPush push;
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.dst = tl_array_address(r->fixed_w);
  push.norm = tl_fixed_address(r->fixed);
  if (partials) push.aux = tl_array_address(partials);
  g_autofree char *lb = label(p, "em");
  if (!tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error)) return FALSE;
  TlLors back = *lors;
  back.atten = NULL;
  g_autofree char *lbb = label(p, "em back");
  return back_fixed(p, s, "pet_em_back", &back, 0, r->fixed_w, TRUE, corr, lbb, error);
}

gboolean tl_ray_projector_em(TlProjector *p, TlStream *s, const TlLors *lors,
                             const TlArray *image, TlArray *corr, TlArray *partials,
                             GError **error) {
  RayPriv *r = p->priv;
  if (tl_planes_em_chosen(p, lors)) {
    if (!r->planes) r->planes = tl_planes_new();
    return tl_planes_em(p, r->planes, s, lors, image, corr, partials, error);
  }
  if (scatter_mode(p) == TL_SCATTER_FIXED)
    return em_fixed(p, s, lors, image, corr, partials, error);
  /* PET_LOGLIK picks the variant, so the pass without the log-likelihood is the old kernel */
  TlPipeline *pl = pipeline(p, "pet_em", tl_ray_lors_value(lors->kind), lors->atten != NULL,
                             lors->tof, partials != NULL, 2, error);
  if (!pl) return FALSE;
  TlPetPush push;
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
  push.image = tl_array_address(image);
  push.dst = tl_array_address(corr);
  if (partials) push.aux = tl_array_address(partials);
  /* one label for both variants: the profile shows one EM kernel per sub-iteration */
  g_autofree char *lb = label(p, "em");
  return tl_stream_dispatch_1d(s, pl, lb, lors->count, &push, error);
}

const char *const *tl_ray_projector_kernels(const TlProjector *p, TlProjectorPass pass,
                                            const TlLors *lors) {
  static const char *const forward[] = {"pet_forward", NULL};
  static const char *const back[] = {"pet_back", NULL}, *const back_cas[] = {"pet_back_cas", NULL};
  static const char *const em[] = {"pet_em", NULL}, *const em_cas[] = {"pet_em_cas", NULL};
  static const char *const planes[] = {"pet_em_rec", "pet_back_slabs", "pet_pairs", NULL};
  /* TL_SCATTER_FIXED: fixed_bound sums the weights, pet_back (the EM pass: pet_em forwards,
   * pet_em_back) adds in fixed point, fixed_finish converts */
  static const char *const back_fx[] = {"fixed_bound", "pet_back", "fixed_finish", NULL},
                           *const back_fx_cas[] = {"fixed_bound", "pet_back_cas", "fixed_finish",
                                                   NULL},
                           *const em_fx[] = {"pet_em", "fixed_bound", "pet_em_back",
                                             "fixed_finish", NULL},
                           *const em_fx_cas[] = {"pet_em_cas", "fixed_bound", "pet_em_back",
                                                 "fixed_finish", NULL};
  if (pass == TL_PROJECTOR_FORWARD) return forward;
  if (pass == TL_PROJECTOR_EM && tl_planes_em_chosen(p, lors)) return planes;
  TlScatter mode = scatter_mode(p);
  gboolean portable = g_str_has_suffix(scatter_shader(p, "pet_back", mode), "_cas");
  if (mode == TL_SCATTER_FIXED) {
    if (pass == TL_PROJECTOR_BACK) return portable ? back_fx_cas : back_fx;
    return portable ? em_fx_cas : em_fx;
  }
  if (pass == TL_PROJECTOR_BACK) return portable ? back_cas : back;
  return portable ? em_cas : em;
}

gboolean tl_ray_projector_loglik(TlProjector *p, TlStream *s, const TlLors *lors,
                                 const TlArray *image, double *sum, GError **error) {
  RayPriv *r = p->priv;
  *sum = 0.0;
  TlPipeline *pl = pipeline(p, "pet_forward", tl_ray_lors_value(lors->kind), lors->atten != NULL,
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
  tl_ray_push_init(p, &push);
  tl_ray_push_lors(&push, lors);
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

/* shaders/pet/pet_sens_finish.comp: Push. */
typedef struct {
  TlPush1D h;
  guint64 acc, image;
  guint32 dims[3];
  guint32 group;
  float inv_scale;
} TlSensFinishPush;
G_STATIC_ASSERT(sizeof(TlSensFinishPush) == 48);

/* The fixed-point scale 2^k of the sensitivity sums (pet_common.glsl PET_FIXED_SCATTER): a
 * pair adds at most twice the voxel's diagonal to one voxel (Siddon: the chord, at most the
 * diagonal; Joseph and the TOR: a weight <= 1 times a step <= the diagonal; attenuation and
 * symmetry weights <= 1), so no voxel's sum, nor the finishing pass's sum over the
 * symmetries, reaches 2^62 units. The DMI on 5.56 mm voxels: k = 26, a unit of 1.5e-8 mm. */
static int sens_scale_bits(const TlProjector *p, guint64 pairs) {
  const float *v = p->grid.voxel_mm;
  double diag = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
  double bound = MAX((double)pairs, 1.0) * 2.0 * diag;
  /* and one addition below 2^31 units, so that the high word changes only on a carry out of
   * the low one (~1.3 atomics per voxel instead of 2); the unit stays below 2^-31 of a
   * chord's largest length */
  int k = (int)MIN(floor(62.0 - log2(bound)), floor(31.0 - log2(2.0 * diag)));
  return CLAMP(k, -60, 100);
}

/* The symmetric method's pair list on the device (tl_sensitivity_orbit_pairs), made once per
 * scanner, grid and symmetry group (the same scanner and group again reuse it: tl_scanner_key
 * and the group's mask, which a normalisation may restrict). */
static TlArray *sens_pairs(TlProjector *p, const TlScanner *scanner, const TlSensSymmetry *sym,
                           guint64 counts[5], GError **error) {
  RayPriv *r = p->priv;
  g_autofree char *sk = tl_scanner_key(scanner);
  g_autofree char *key = g_strdup_printf("%s group %08x", sk, sym->mask);
  if (r->sens_pairs && g_strcmp0(key, r->sens_pairs_key) == 0) {
    memcpy(counts, r->sens_counts, sizeof r->sens_counts);
    return r->sens_pairs;
  }
  g_autofree guint32 *list = tl_sensitivity_orbit_pairs(scanner, sym, counts);
  guint64 total = 0;
  for (int k = 0; k < 5; k++) total += counts[k];
  TlArray *a = tl_array_new(p->ctx, MAX(total, 1), sizeof(guint32), error);
  if (!a || !tl_array_upload_range(a, 0, total, list, error)) {
    tl_array_free(a);
    return NULL;
  }
  /* recorded work may still read the old list: kept until the projector goes */
  if (r->sens_pairs) g_ptr_array_add(r->sens_old, r->sens_pairs);
  r->sens_pairs = a;
  g_free(r->sens_pairs_key);
  r->sens_pairs_key = g_steal_pointer(&key);
  memcpy(r->sens_counts, counts, sizeof r->sens_counts);
  return a;
}

/* Before the fixed-point kernels (grids above 2^31 voxels, whose uint pairs a 32-bit index
 * cannot reach): float atomics straight into the image. */
static gboolean sensitivity_float(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                  const TlArray *crystals, guint stride, guint offset,
                                  const TlArray *mu, TlArray *image, GError **error) {
  TlPipeline *pl = pipeline(p, "pet_back", TL_PET_LORS_ALL_PAIRS, mu != NULL, NULL, 0, mu ? 2 : 1,
                             error);
  if (!pl) return FALSE;
  guint64 pairs = tl_pair_count(scanner->n_crystals);
  guint64 items = pairs > offset ? (pairs - offset + stride - 1) / stride : 0;
  TlPetPush push;
  tl_ray_push_init(p, &push);
  push.crystals = tl_array_address(crystals);
  push.n_crystals = scanner->n_crystals;
  push.dst = tl_array_address(image);
  if (mu) push.image = tl_array_address(mu); /* PET_ATTEN with all pairs: the mu-map */
  push.first = offset;
  push.stride = stride;
  push.max_ring_diff = scanner->max_ring_difference;
  push.n_pairs = (guint32)pairs;
  g_autofree char *lb = label(p, "sensitivity");
  tl_progress_set_total((double)items * tl_pipeline_item_cost(pl)); /* the stream's cost units */
  return tl_stream_dispatch_1d(s, pl, lb, items, &push, error);
}

/* Grids up to 2^31 voxels: the fixed-point kernel (pet_sens), whose Siddon walk can run in
 * double (pet_sens_f64) where the device has shaderFloat64. */
static gboolean sens_fixed(const TlProjector *p) {
  return tl_image_grid_n_voxels(&p->grid) <= G_MAXUINT32 / 2;
}

static const char *sens_f64_refusal(const TlProjector *p) {
  RayPriv *r = p->priv;
  if (!r->tracer->walk_f64) return "only Siddon has a double-precision walk";
  if (!tl_context_info(p->ctx)->shader_float64) return "the device lacks shaderFloat64";
  if (!sens_fixed(p)) return "grids above 2^31 voxels use the float-atomic kernel";
  return NULL;
}

gboolean tl_ray_projector_sensitivity_double(const TlProjector *p) {
  return p->sens_precision != TL_SENS_PRECISION_FLOAT && !sens_f64_refusal(p);
}

gboolean tl_ray_projector_sensitivity(TlProjector *p, TlStream *s, const TlScanner *scanner,
                                      const TlArray *crystals, guint stride, guint offset,
                                      const TlArray *mu, const TlSensNorm *norm, TlArray *image,
                                      GError **error) {
  RayPriv *r = p->priv;
  guint64 nv = tl_image_grid_n_voxels(&p->grid);
  const char *no_f64 = sens_f64_refusal(p);
  if (p->sens_precision == TL_SENS_PRECISION_DOUBLE && no_f64) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "sensitivity in double precision with %s: %s", p->klass->name, no_f64);
    return FALSE;
  }
  gboolean f64 = tl_ray_projector_sensitivity_double(p);
  if (!sens_fixed(p)) {
    if (norm) {
      g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "sensitivity with a normalisation: "
                  "the grid's %" G_GUINT64_FORMAT " voxels are more than the 2^31 of the "
                  "fixed-point kernel (pet_sens), which alone applies it", nv);
      return FALSE;
    }
    return sensitivity_float(p, s, scanner, crystals, stride, offset, mu, image, error);
  }
  /* tl_projector_sensitivity_plan_norm's rule */
  TlSensSymmetry sym = {.order = 1, .mask = 1};
  if (p->sens_method != TL_SENS_FULL && stride == 1 && !mu)
    tl_sensitivity_symmetry_norm(scanner, &p->grid, tl_sensitivity_swaps(p),
                                 norm ? norm->norm : NULL, &sym);
  guint64 pairs = tl_pair_count(scanner->n_crystals);
  guint64 items = pairs > offset ? (pairs - offset + stride - 1) / stride : 0;
  int k = sens_scale_bits(p, pairs);
  /* pet_common.glsl's constants (the sensitivity is the non-TOF one, ATOMIC unused), then
   * pet_sens.glsl's: PET_FIXED_SCALE, PET_SYM, PET_NORM; pet_sens_f64 also the grid's corner
   * in double, each as two 32-bit halves (pet_siddon.glsl PET_LO64_*) */
  gboolean symmetric = sym.order > 1;
  guint32 spec[TL_PET_N_IDS] = {0};
  tl_ray_spec(p, TL_PET_LORS_ALL_PAIRS, 0, mu != NULL, NULL, 0, spec);
  TL_PET_SPEC(spec, TL_PET_ID_FIXED_SCALE) = float_bits(ldexpf(1.0f, k));
  TL_PET_SPEC(spec, TL_PET_ID_SYM) = symmetric;
  TL_PET_SPEC(spec, TL_PET_ID_NORM) = norm != NULL;
  guint32 *lo64 = &TL_PET_SPEC(spec, TL_PET_ID_LO64);
  for (int a = 0; a < 3; a++) {
    /* tl_ray_push_init's lo before its rounding to float, exactly centred where the
     * symmetries count the grid as centred */
    double lo = tl_sensitivity_plane_lo(&p->grid, a);
    guint64 bits;
    memcpy(&bits, &lo, sizeof bits);
    lo64[2 * a] = (guint32)bits;
    lo64[2 * a + 1] = (guint32)(bits >> 32);
  }
  const char *shader = f64 ? "pet_sens_f64" : "pet_sens";
  g_autofree char *key = g_strdup_printf("%s/%u/%d/%u/%u/%08x%08x/%08x%08x/%08x%08x", shader,
                                         (guint32)(mu != NULL), k, symmetric, (guint32)(norm != NULL),
                                         lo64[1], lo64[0], lo64[3], lo64[2], lo64[5], lo64[4]);
  TlPipeline *pl = tl_ray_pipeline(p, key, shader, 0, TL_PET_PUSH_SIZE, spec,
                                   f64 ? TL_PET_ID_LO64 + 5 : TL_PET_ID_NORM,
                                   MAX(r->tracer->ray_cost(p), 1u) * (mu ? 2 : 1), error);
  TlPipeline *fin = pl ? tl_ray_pipeline(p, "pet_sens_finish", "pet_sens_finish", 0,
                                         sizeof(TlSensFinishPush), NULL, 0, sym.order, error)
                       : NULL;
  guint64 counts[5] = {0};
  TlArray *list = fin && symmetric ? sens_pairs(p, scanner, &sym, counts, error) : NULL;
  gboolean ok = fin && (!symmetric || list);
  guint32 mask = sym.mask;
  tl_sensitivity_symmetry_clear(&sym);
  if (!ok) return FALSE;
  if (!r->sens_acc && !(r->sens_acc = tl_array_new(p->ctx, 2 * nv, sizeof(guint32), error)))
    return FALSE;
  if (!tl_stream_zero(s, r->sens_acc, error)) return FALSE;

  TlPetPush push;
  tl_ray_push_init(p, &push);
  push.crystals = tl_array_address(crystals);
  push.n_crystals = scanner->n_crystals;
  push.dst = tl_array_address(r->sens_acc);
  if (mu) push.image = tl_array_address(mu); /* PET_ATTEN with all pairs: the mu-map */
  if (norm) push.norm = tl_array_address(norm->table);
  push.max_ring_diff = scanner->max_ring_difference;
  push.n_pairs = (guint32)pairs;
  g_autofree char *lb = label(p, "sensitivity");
  /* the step's total in the stream's cost units (tl-progress.h: device steps count those) */
  guint64 traced = symmetric ? counts[0] + counts[1] + counts[2] + counts[3] + counts[4] : items;
  /* a phase of its own after the pair list's (tl-sensitivity-sym.c) */
  tl_progress_phase("sensitivity image", (double)traced * tl_pipeline_item_cost(pl) +
                                             (double)nv * tl_pipeline_item_cost(fin));
  if (symmetric) {
    /* one dispatch per class of pairs fixed by 2^c symmetries, weight 2^-c (pet_sens.comp) */
    push.aux = tl_array_address(list);
    guint64 first = 0;
    for (int c = 0; c < 5; c++) {
      push.first = (guint32)first;
      push.pad = float_bits(ldexpf(1.0f, -c));
      if (counts[c] && !tl_stream_dispatch_1d(s, pl, lb, counts[c], &push, error)) return FALSE;
      first += counts[c];
    }
  } else {
    push.first = offset;
    push.stride = stride;
    if (!tl_stream_dispatch_1d(s, pl, lb, items, &push, error)) return FALSE;
  }

  TlSensFinishPush fp = {.acc = tl_array_address(r->sens_acc),
                         .image = tl_array_address(image),
                         .dims = {p->grid.dims[0], p->grid.dims[1], p->grid.dims[2]},
                         .group = mask, .inv_scale = ldexpf(1.0f, -k)};
  return tl_stream_dispatch_1d(s, fin, "sensitivity sum", nv, &fp, error);
}
