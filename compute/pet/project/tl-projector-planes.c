/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CPU plane path of Joseph's list-mode EM sub-iteration (issue 17).
 *
 * On a CPU Vulkan device (lavapipe) every buffer access compiles to a loop over the SIMD lanes
 * and every float atomic add to a locked compare-and-swap per lane, so the fused event-parallel
 * kernel (pet_em.glsl: four atomic adds per plane) ran at a quarter of plain C. This path does
 * the same sub-iteration, c_n += sum_j a_jn a_j m_j / ybar_j (van Gendt et al. 2021 Listing 1), in
 * chunks of
 * events:
 *   1. pet_em_rec.comp forward projects each event of the chunk (one invocation per event, as
 *      the fused kernel) and writes its ratio and plane walk as a record;
 *   2. pet_back_slabs.comp back projects the chunk's records with one invocation per plane:
 *      each plane has one writer, so plain loads and stores replace the atomics; it adds
 *      into pair buffers B, two taps per slot, summed in double (pet_pairs.glsl);
 *   3. after the last chunk pet_pairs.comp adds B into the correction image.
 * The weights are bit for bit those of pet_joseph.glsl (the same arithmetic in
 * pet_plane_sample_at), the forward sum is the same, and the back projection's sums come out in
 * the same order on every run, in double: the path is the fused kernel's operator to its
 * walk's float rounding (tests/test-pet-em-planes.c). Device memory: the chunk's records
 * (fixed) and B, about 8 times the float image; the events still cost only their 12 bytes.
 *
 * Chosen (TL_EM_AUTO) on CPU devices for Joseph without TOF when no scatter mode was asked for
 * and pet_em was not edited (tl_planes_em_chosen says why not with TOF); GPUs keep the fused kernel, which van Gendt et al. 2021 measured faster there. */
#include "tl-projector-ray.h"
#include "tl-kernels.h"
#include <string.h>

/* Loop iterations one invocation may run, all its loops together: llvmpipe (lavapipe) ends
 * every loop of an invocation once 65 535 iterations have run in it (gallivm's
 * LP_MAX_TGSI_LOOP_ITERATIONS, a guard against endless loops; Mesa 22.3 as current Mesa).
 * Stage 2 walks all of a chunk's records of its axis in one loop, so chunks of 65 536 events
 * lost their last record (issue 32: one event per full chunk, up to 14 % in single voxels). */
#define TL_PLANES_LOOP_LIMIT 65535u
/* Planes owned by one workgroup of pet_back_slabs: more planes, fewer records read per plane
 * (what counts with TOF, whose events span ~20 planes), fewer workgroups to share among the
 * CPU's threads. Measured (bench/README.md, bench/pet): non-TOF the same from 16 to 64, TOF
 * 0.88x C at 16 and 1.0x at 32. At most 5 passes of a subgroup: Mesa 22.3's llvmpipe summed
 * wrongly from 6 passes on in the TOF variant (Mesa 25.0 right; tests/test-pet-em-planes),
 * most likely the loop limit above once the pass loop was no longer unrolled. */
#define TL_PLANES_PER_GROUP(tof) ((tof) ? TL_PET_SLAB_PLANES_TOF : TL_PET_SLAB_PLANES)
/* Record words (pet_em_rec.comp) */
#define TL_REC_WORDS(tof) ((tof) ? TL_PET_REC_WORDS_TOF : TL_PET_REC_WORDS)

/* One slot of the pair buffers: two doubles (pet_pairs.glsl says why double) */
#define PAIR_BYTES 16u

struct _TlPlanes {
  TlArray *b;          /* pair buffers along x then y (pet_pairs.glsl) */
  TlArray *records;    /* one chunk's records */
  TlArray *ranges;     /* TL_PET_RANGE_WORDS per chunk: first/end record per axis */
};

TlPlanes *tl_planes_new(void) { return g_new0(TlPlanes, 1); }

void tl_planes_free(TlPlanes *pl) {
  if (!pl) return;
  tl_array_free(pl->b);
  tl_array_free(pl->records);
  tl_array_free(pl->ranges);
  g_free(pl);
}

/* Slots of the two pair buffers (pet_pairs.glsl): the image with one more entry along x, then
 * with one more along y. */
static guint64 pair_slots(const guint32 *d) {
  return (guint64)(d[0] + 1) * d[1] * d[2] + (guint64)d[0] * (d[1] + 1) * d[2];
}

/* Why the path cannot run on this projector and device, or NULL. */
static const char *unsupported(const TlProjector *p, const TlLors *lors) {
  const TlDeviceInfo *info = tl_context_info(p->ctx);
  if (tl_ray_tracer(p) != TL_PET_TRACER_JOSEPH) return "only Joseph's projector has it";
  if (!info->shader_int64) return "the device lacks shaderInt64";
  if (!info->shader_float64) return "the device lacks shaderFloat64 (the pair buffers' sums)";
  VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT |
                                VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  if ((info->subgroup_ops & need) != need)
    return "the device lacks subgroup broadcast or reductions in compute shaders";
  guint32 half_words = TL_REC_WORDS(lors->tof != NULL) / 2;
  guint32 planes = TL_PLANES_PER_GROUP(lors->tof != NULL);
  if (info->subgroup_size < half_words || info->subgroup_size > planes ||
      planes % info->subgroup_size)
    return "the device's subgroup size does not fit the records";
  const guint32 *d = p->grid.dims;
  for (int k = 0; k < 3; k++)
    if (d[k] >= 1u << TL_PET_REC_PLANE_BITS)
      return "an image dimension reaches 2^" G_STRINGIFY(TL_PET_REC_PLANE_BITS) " (the records' "
             "plane numbers)";
  guint64 slots = pair_slots(d);
  if (slots > G_MAXUINT32) return "its pair buffers would exceed 2^32 slots (32-bit indices)";
  if (info->max_memory_allocation_size && PAIR_BYTES * slots > info->max_memory_allocation_size)
    return "its pair buffers would exceed the device's largest allocation";
  return NULL;
}

gboolean tl_planes_em_chosen(const TlProjector *p, const TlLors *lors) {
  if (p->em_method == TL_EM_PLANES) return TRUE;
  if (p->em_method != TL_EM_AUTO || p->scatter != TL_SCATTER_AUTO) return FALSE;
  /* an edited one-kernel pass (the kernel editor, recon --kernel) runs as written */
  if (tl_kernels_replaced(p->ctx, "pet_em") || tl_kernels_replaced(p->ctx, "pet_em_cas"))
    return FALSE;
  /* The fastest of the two, which are one operator (summed in double here, in fixed point
   * there: tests/test-pet-em-planes.c finds them 0 to 2e-8 apart, both within 7e-7 of the
   * double reference). Measured on lavapipe (bench/README.md, bench/pet): without TOF the
   * one-kernel pass takes 1.47x the plane path's time; with TOF the plane path is no faster
   * (0.98x at 8e4 events, 0.82x at 3e4), so TOF keeps the one-kernel pass. */
  return lors->tof == NULL && tl_context_info(p->ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU &&
         unsupported(p, lors) == NULL;
}

static gboolean ensure(TlArray **a, TlContext *ctx, guint64 n, gsize elem, GError **error) {
  if (*a && tl_array_length(*a) >= n) return TRUE;
  g_clear_pointer(a, tl_array_free);
  *a = tl_array_new(ctx, n, elem, error);
  return *a != NULL;
}

gboolean tl_planes_em(TlProjector *p, TlPlanes *pl, TlStream *s, const TlLors *lors,
                      const TlArray *image, TlArray *corr, TlArray *partials, GError **error) {
  const char *why = unsupported(p, lors);
  if (why) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "the plane path of the EM sub-iteration was asked for, but %s", why);
    return FALSE;
  }
  if (lors->count == 0) return TRUE;
  const TlDeviceInfo *info = tl_context_info(p->ctx);
  const guint32 *d = p->grid.dims;
  guint64 nv = (guint64)d[0] * d[1] * d[2];
  guint64 slots = pair_slots(d);
  guint32 rec_words = TL_REC_WORDS(lors->tof != NULL);

  /* the fused kernel's constants (pet_common.glsl), the ids of pet_sens unused, then
   * PET_SLAB_PLANES and PET_REC_WORDS */
  guint32 spec[TL_PET_N_IDS] = {0};
  tl_ray_spec(p, tl_ray_lors_value(lors->kind), 0, lors->atten != NULL, lors->tof,
              partials != NULL, spec);
  guint32 S = MIN(TL_PLANES_PER_GROUP(lors->tof != NULL), 5 * info->subgroup_size);
  TL_PET_SPEC(spec, TL_PET_ID_SLAB_PLANES) = S;
  TL_PET_SPEC(spec, TL_PET_ID_REC_WORDS) = rec_words;
  guint32 tof_spec[4];
  memcpy(tof_spec, &TL_PET_SPEC(spec, TL_PET_ID_TOF), sizeof tof_spec); /* TOF and its three */
  g_autofree char *key = g_strdup_printf(
      "pet_em_rec/%u/%u/%u/%u/%08x/%08x/%08x", TL_PET_SPEC(spec, TL_PET_ID_LORS),
      TL_PET_SPEC(spec, TL_PET_ID_ATTEN), TL_PET_SPEC(spec, TL_PET_ID_LOGLIK), tof_spec[0],
      tof_spec[1], tof_spec[2], tof_spec[3]);
  g_autofree char *slab_key =
      g_strdup_printf("pet_back_slabs/%u/%08x/%08x/%08x/%u/%u", tof_spec[0], tof_spec[1],
                      tof_spec[2], tof_spec[3], info->subgroup_size, S);
  guint32 cost = 4 * MAX(d[0], MAX(d[1], d[2]));
  TlPipeline *rec = tl_ray_pipeline(p, key, "pet_em_rec", 0, TL_PET_PUSH_SIZE, spec,
                                    TL_PET_ID_REC_WORDS, cost, error);
  /* one subgroup per workgroup: the records are shared out by subgroupBroadcast */
  TlPipeline *slabs = rec ? tl_ray_pipeline(p, slab_key, "pet_back_slabs", info->subgroup_size,
                                            TL_PET_PUSH_SIZE, spec, TL_PET_ID_REC_WORDS, 1,
                                            error)
                          : NULL;
  TlPipeline *add = slabs ? tl_ray_pipeline(p, "pet_pairs", "pet_pairs", 0, TL_PET_PUSH_SIZE,
                                            NULL, 0, 1, error)
                          : NULL;
  if (!add) return FALSE;
  /* Events per chunk: stage 2's invocations loop once per record of the chunk, and per record
   * over their passes (S / subgroup) and Joseph's two rows, so with no inner loop unrolled a
   * record costs 1 + 3 passes iterations; the chunk, a power of two, keeps that under the loop
   * limit and holds whole workgroups of stage 1 (its log-likelihood partials start at
   * chunk / local). On a subgroup of 8: 8192 events non-TOF, 4096 TOF; records of 32-48
   * bytes, a few hundred KiB. */
  guint32 local = tl_pipeline_local_size(rec);
  guint32 per_record = 1 + 3 * ((S + info->subgroup_size - 1) / info->subgroup_size);
  guint64 chunk = (guint64)1 << (g_bit_storage(TL_PLANES_LOOP_LIMIT / per_record) - 1);
  if (chunk < local || chunk % local) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "the plane path of the EM sub-iteration needs %u loop iterations per event and "
                "workgroups of %u events, over the %u a CPU device's invocation may run",
                per_record, local, TL_PLANES_LOOP_LIMIT);
    return FALSE;
  }
  guint64 n_chunks = (lors->count + chunk - 1) / chunk;
  if (!ensure(&pl->b, p->ctx, slots, PAIR_BYTES, error) ||
      !ensure(&pl->records, p->ctx, chunk * rec_words, 4, error) ||
      !ensure(&pl->ranges, p->ctx, n_chunks * TL_PET_RANGE_WORDS, 4, error) || !tl_stream_zero(s, pl->b, error) ||
      !tl_stream_zero(s, pl->ranges, error))
    return FALSE;

  /* labels: the profile shows the forward-and-ratio pass as the sub-iteration's EM kernel */
  g_autofree char *em_label = g_strdup_printf("em %s", p->klass->name);
  g_autofree char *back_label = g_strdup_printf("em back %s", p->klass->name);
  guint32 groups_xy = 2 * ((MAX(d[0], d[1]) + S - 1) / S); /* x and y slabs interleaved */
  guint32 groups_z = (d[2] + S - 1) / S;
  TlPetPush push;
  for (guint64 c = 0; c < n_chunks; c++) {
    guint64 start = c * chunk, count = MIN(chunk, lors->count - start);
    TlLors sub = *lors;
    sub.first = lors->first + start;
    sub.count = count;
    guint64 ranges = tl_array_address(pl->ranges) + c * TL_PET_RANGE_WORDS * sizeof(guint32);
    tl_ray_push_init(p, &push);
    tl_ray_push_lors(&push, &sub);
    push.image = tl_array_address(image);
    push.dst = tl_array_address(pl->records);
    push.norm = ranges;
    /* the chunk's partials start where the fused kernel's would (start is a multiple of the
     * local size), so tl_projector_loglik_partials() sizes them as before */
    if (partials) push.aux = tl_array_address(partials) + start / local * sizeof(float);
    if (!tl_stream_dispatch_1d(s, rec, em_label, count, &push, error)) return FALSE;

    tl_ray_push_init(p, &push);
    push.lors = tl_array_address(pl->records);
    push.dst = tl_array_address(pl->b);
    push.norm = ranges;
    for (guint32 part = 0; part < 2; part++) {
      push.flags = part;
      guint32 groups = part == 0 ? groups_xy : groups_z;
      /* cost: every workgroup reads the chunk's records of its axis */
      if (!tl_stream_dispatch(s, slabs, back_label, groups, 1, 1, &push, count * groups, error))
        return FALSE;
    }
  }
  tl_ray_push_init(p, &push);
  push.image = tl_array_address(pl->b);
  push.dst = tl_array_address(corr);
  return tl_stream_dispatch_1d(s, add, "em pairs", nv, &push, error);
}
