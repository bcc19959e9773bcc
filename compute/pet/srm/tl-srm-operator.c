/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Class "pet-srm" (tl-srm-operator.h): the symmetric system response matrix on the device
 * and the grouped LOR tables of each subset. */
#include "tl-srm-operator.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pet/scanner/tl-scanner.h"
#include "tl-fixed.h"
#include "tl-kernels.h"

#include "core/tl_constants.glsl" /* TL_SRM_*: the group size and LOR word the kernels share */
#define GROUP TL_SRM_GROUP
/* the LOR word's crystal offsets are stored + LOR_OFF in TL_SRM_LOR_BITS each */
#define LOR_OFF (1u << (TL_SRM_LOR_BITS - 1))

/* Mirrors the push block of shaders/pet/srm_common.glsl (scalar layout). */
typedef struct {
  guint64 groups, lors, class_ptr, keys, vals, image, data;
  guint32 dims[3], D;
  gint32 ey, ez;
  guint32 interchange, xsym, n_groups, lor_first;
  float bound; /* srm_back_fixed: the bound per unit weight (core/tl-fixed.h) */
  guint32 pad;
} SrmPush;
G_STATIC_ASSERT(sizeof(SrmPush) == 104);

typedef struct {
  TlSrmTables t;
  guint n_crystals;
  TlArray *class_ptr, *keys, *vals, *lors, *counts;
  TlArray **groups;       /* per subset */
  guint32 *n_groups;      /* per subset */
  guint64 *work;          /* per subset: element visits, for the submit budget */
  guint32 *pair_a, *pair_b; /* data order */
  TlPipeline *fwd, *back;
  TlFixed *fixed;         /* deterministic adjoint (srm_back_fixed), or NULL: float atomics */
  float max_val;          /* the largest stored |h| */
} SrmOp;

static void srm_finalize(TlOperator *op) {
  SrmOp *c = op->priv;
  if (!c) return;
  TlArray *arrays[] = {c->class_ptr, c->keys, c->vals, c->lors, c->counts};
  for (gsize i = 0; i < G_N_ELEMENTS(arrays); i++) tl_array_free(arrays[i]);
  for (guint s = 0; s < op->n_subsets && c->groups; s++) tl_array_free(c->groups[s]);
  g_free(c->groups);
  g_free(c->n_groups);
  g_free(c->work);
  g_free(c->pair_a);
  g_free(c->pair_b);
  tl_pipeline_free(c->fwd);
  tl_pipeline_free(c->back);
  tl_fixed_free(c->fixed);
  g_free(c);
}

static gboolean run(TlOperator *op, TlStream *s, guint subset, TlPipeline *p, const char *label,
                    guint64 image, const TlArray *data, float bound, GError **error) {
  SrmOp *c = op->priv;
  guint32 n = c->n_groups[subset];
  if (n == 0) return TRUE;
  SrmPush push = {.groups = tl_array_address(c->groups[subset]),
                  .lors = tl_array_address(c->lors),
                  .class_ptr = tl_array_address(c->class_ptr),
                  .keys = tl_array_address(c->keys),
                  .vals = tl_array_address(c->vals),
                  .image = image,
                  .data = tl_array_address(data),
                  .dims = {c->t.nx, c->t.ny, c->t.nz},
                  .D = c->t.D,
                  .ey = c->t.ey,
                  .ez = c->t.ez,
                  .interchange = c->t.interchange,
                  .xsym = c->t.xsym,
                  .n_groups = n,
                  .lor_first = (guint32)op->first[subset],
                  .bound = bound};
  guint32 gx = MIN(n, 65535u), gy = (n + gx - 1) / gx;
  return tl_stream_dispatch(s, p, label, gx, gy, 1, &push, c->work[subset], error);
}

static gboolean srm_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                            TlArray *y, GError **error) {
  SrmOp *c = op->priv;
  return run(op, s, subset, c->fwd, "srm forward", tl_array_address(x), y, 0, error);
}

static gboolean srm_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                            TlArray *x, GError **error) {
  SrmOp *c = op->priv;
  if (!c->fixed) return run(op, s, subset, c->back, "srm back", tl_array_address(x), w, 0, error);
  /* deterministic (core/tl-fixed.h); amax: a datum adds h w to a voxel at most a few times
   * (stored elements that fall into one voxel through the half-voxel offsets: 4 at most),
   * margin 2 */
  guint64 n = op->first[subset + 1] - op->first[subset];
  float amax = (float)(8.0 * MAX(c->max_val, 1e-30));
  return tl_fixed_begin(c->fixed, s, (guint64)c->t.nx * c->t.ny * c->t.nz, error) &&
         tl_fixed_bound_weights(c->fixed, s, tl_array_address(w), n, FALSE, error) &&
         run(op, s, subset, c->back, "srm back", tl_fixed_address(c->fixed), w, amax, error) &&
         tl_fixed_finish(c->fixed, s, x, amax, error);
}

static gboolean srm_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  SrmOp *c = op->priv;
  return tl_stream_copy(s, c->counts, 0, m, 0, 4 * tl_operator_n_data(op), error);
}

const TlOperatorClass tl_pet_srm_operator_class = {
    .name = "pet-srm",
    .modality = "pet",
    .summary = "dual-head bins, precomputed system response matrix stored by symmetry "
               "(Chou et al. 2012)",
    .flags = 0,
    .finalize = srm_finalize,
    .forward = srm_forward,
    .adjoint = srm_adjoint,
    .counts = srm_counts,
};

typedef struct {
  guint64 sort; /* class << 33 | swap << 32 ... then pair index */
  guint64 pair;
  guint32 a, b, word;
  float count;
} Datum;

static int datum_cmp(const void *x, const void *y) {
  const Datum *a = x, *b = y;
  if (a->sort != b->sort) return a->sort < b->sort ? -1 : 1;
  return a->pair < b->pair ? -1 : a->pair > b->pair;
}

/* The kernels with a workgroup of `local` invocations: a class holds a few hundred to a few
 * thousand elements, so the default 256 leaves most invocations idle at each barrier.
 * $TOMOLAB_SRM_LOCAL overrides (measurements). */
static TlPipeline *pipeline(TlContext *ctx, const char *name, GError **error) {
  gsize size = 0;
  const char *label = name;
  const guint32 *words = tl_kernels_spirv(ctx, name, &size, &label);
  if (!words) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no embedded kernel named '%s'", name);
    return NULL;
  }
  const char *env = g_getenv("TOMOLAB_SRM_LOCAL");
  guint32 local = env ? (guint32)CLAMP(g_ascii_strtoull(env, NULL, 10), GROUP, TL_SRM_MAX_LOCAL) : 32;
  local = MIN(local, tl_context_default_local_size(ctx));
  TlPipelineDesc d = {.spirv = words, .spirv_size = size, .name = label, .local_size = local,
                      .push_size = sizeof(SrmPush)};
  return tl_pipeline_new(ctx, &d, error);
}

static TlArray *upload(TlContext *ctx, const void *data, guint64 n, GError **error) {
  g_autoptr(TlArray) a = tl_array_new(ctx, MAX(n, 1), 4, error);
  if (!a || (n && !tl_array_upload_range(a, 0, n, data, error))) return NULL;
  return g_steal_pointer(&a);
}

TlOperator *tl_srm_operator_new(TlContext *ctx, const TlSrm *m, const TlScanner *s,
                                const TlBin *bins, guint64 n_bins, guint subsets,
                                GError **error) {
  TlSrmTables t;
  tl_srm_tables(m, &t);
  if (s->kind != TL_SCANNER_DUAL_HEAD || !s->layout || s->layout->head_crystals[0] != t.nu ||
      s->layout->head_crystals[1] != t.nv || t.nu > LOR_OFF || t.nv > LOR_OFF) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "pet-srm operator: scanner '%s' is not the dual-head scanner of the matrix "
                "(%u x %u crystals per head, at most %u x %u)", s->name, t.nu, t.nv, LOR_OFF,
                LOR_OFF);
    return NULL;
  }
  guint per = t.nu * t.nv;
  guint64 n_pairs = (guint64)per * per;
  if (subsets < 1 || subsets > 1000 || subsets > n_pairs || n_pairs > G_MAXUINT32) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "pet-srm operator: %u subsets of %" G_GUINT64_FORMAT " pairs (expected 1 to "
                "min(1000, pairs); pairs < 2^32)", subsets, n_pairs);
    return NULL;
  }
  g_autofree float *count = g_new0(float, n_pairs);
  for (guint64 i = 0; i < n_bins; i++) {
    guint a = MIN(bins[i].a, bins[i].b), b = MAX(bins[i].a, bins[i].b);
    if (a >= per || b < per || b >= 2 * per || !isfinite(bins[i].count) || bins[i].count < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "pet-srm operator: bin %" G_GUINT64_FORMAT " (%u, %u, count %g) is not a "
                  "head-0 / head-1 pair of '%s' with a finite count >= 0", i, bins[i].a,
                  bins[i].b, bins[i].count, s->name);
      return NULL;
    }
    count[(guint64)a * per + (b - per)] += bins[i].count;
  }
  /* every pair, assigned to its subset, sorted within it */
  g_autofree Datum *d = g_new(Datum, n_pairs);
  g_autofree guint64 *len = g_new0(guint64, subsets);
  g_autofree guint64 *at = g_new0(guint64, subsets + 1);
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++) len[tl_pair_index(s->n_crystals, a, b) % subsets]++;
  for (guint k = 0; k < subsets; k++) at[k + 1] = at[k] + len[k];
  g_autofree guint64 *fill = g_memdup2(at, sizeof(guint64) * (subsets + 1));
  for (guint a = 0; a < per; a++)
    for (guint b = per; b < 2 * per; b++) {
      guint ha, ua, va, hb, ub, vb, flags;
      tl_srm_crystal(m, a, &ha, &ua, &va);
      tl_srm_crystal(m, b, &hb, &ub, &vb);
      gint du = (gint)ub - (gint)ua, dv = (gint)vb - (gint)va;
      guint cls = tl_srm_class(m, du, dv, &flags);
      guint64 p = tl_pair_index(s->n_crystals, a, b);
      Datum *e = &d[fill[p % subsets]++];
      e->sort = ((guint64)cls << 1) | (flags & 1u);
      e->pair = p;
      e->a = a;
      e->b = b;
      e->word = ua | va << TL_SRM_LOR_BITS | (guint32)(du + (gint)LOR_OFF) << (2 * TL_SRM_LOR_BITS) |
                (guint32)(dv + (gint)LOR_OFF) << (3 * TL_SRM_LOR_BITS);
      e->count = count[(guint64)a * per + (b - per)];
    }
  g_autoptr(TlOperator) op = g_new0(TlOperator, 1);
  tl_operator_init(op, &tl_pet_srm_operator_class, ctx, tl_srm_grid(m), subsets, len);
  SrmOp *c = g_new0(SrmOp, 1);
  op->priv = c;
  c->t = t;
  c->n_crystals = s->n_crystals;
  c->groups = g_new0(TlArray *, subsets);
  c->n_groups = g_new0(guint32, subsets);
  c->work = g_new0(guint64, subsets);
  c->pair_a = g_new(guint32, n_pairs);
  c->pair_b = g_new(guint32, n_pairs);
  g_autofree guint32 *words = g_new(guint32, n_pairs);
  g_autofree float *counts = g_new(float, n_pairs);
  g_autofree guint32 *grp = g_new(guint32, 4 * n_pairs);
  for (guint k = 0; k < subsets; k++) {
    Datum *e = d + at[k];
    guint64 n = len[k];
    qsort(e, n, sizeof *e, datum_cmp);
    guint32 ng = 0;
    for (guint64 i = 0; i < n;) {
      guint64 j = i + 1;
      while (j < n && j - i < GROUP && e[j].sort == e[i].sort) j++;
      guint32 cls = (guint32)(e[i].sort >> 1);
      grp[4 * ng] = (guint32)i;
      grp[4 * ng + 1] = (guint32)(j - i);
      grp[4 * ng + 2] = cls;
      grp[4 * ng + 3] = (guint32)(e[i].sort & 1u);
      c->work[k] += (guint64)(t.class_ptr[cls + 1] - t.class_ptr[cls]) * (j - i);
      ng++;
      i = j;
    }
    for (guint64 i = 0; i < n; i++) {
      words[at[k] + i] = e[i].word;
      counts[at[k] + i] = e[i].count;
      c->pair_a[at[k] + i] = e[i].a;
      c->pair_b[at[k] + i] = e[i].b;
    }
    c->n_groups[k] = ng;
    if (!(c->groups[k] = upload(ctx, grp, 4ull * ng, error))) return NULL;
  }
  guint64 ne = t.class_ptr[t.n_classes];
  /* $TOMOLAB_SRM_SCATTER=cas: the compare-and-swap kernel even with float atomics (bench);
   * =float: float atomics where the device has them; else (the default) the fixed-point
   * kernel, whose sums are the same on every run */
  const char *scatter = g_getenv("TOMOLAB_SRM_SCATTER");
  gboolean fa = tl_context_info(ctx)->float32_atomic_add && g_strcmp0(scatter, "cas") != 0;
  guint64 nvox = (guint64)t.nx * t.ny * t.nz;
  if (g_strcmp0(scatter, "cas") != 0 && g_strcmp0(scatter, "float") != 0 &&
      nvox <= TL_FIXED_MAX_ELEMENTS)
    c->fixed = tl_fixed_new(ctx);
  for (guint64 i = 0; i < t.class_ptr[t.n_classes]; i++)
    c->max_val = MAX(c->max_val, fabsf(t.val[i]));
  if (!(c->class_ptr = upload(ctx, t.class_ptr, t.n_classes + 1, error)) ||
      !(c->keys = upload(ctx, t.key, ne, error)) || !(c->vals = upload(ctx, t.val, ne, error)) ||
      !(c->lors = upload(ctx, words, n_pairs, error)) ||
      !(c->counts = upload(ctx, counts, n_pairs, error)) ||
      !(c->fwd = pipeline(ctx, "srm_forward", error)) ||
      !(c->back = pipeline(ctx, c->fixed ? "srm_back_fixed" : fa ? "srm_back" : "srm_back_cas",
                           error)))
    return NULL;
  guint32 ls = tl_pipeline_local_size(c->fwd);
  if (ls > TL_SRM_MAX_LOCAL || ls < GROUP) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "pet-srm operator: workgroup size %u (the forward's reduction needs %u to %u)",
                ls, GROUP, TL_SRM_MAX_LOCAL);
    return NULL;
  }
  g_autofree char *label = g_strdup_printf("pet-srm %u classes, %" G_GUINT64_FORMAT
                                           " stored elements, %u subset%s", t.n_classes, ne,
                                           subsets, subsets == 1 ? "" : "s");
  tl_operator_set_label(op, label);
  return g_steal_pointer(&op);
}

void tl_srm_operator_pair(const TlOperator *op, guint64 i, guint *a, guint *b) {
  const SrmOp *c = op->priv;
  *a = c->pair_a[i];
  *b = c->pair_b[i];
}
