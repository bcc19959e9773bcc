/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT projectors: the per-view table, argument checks, the choice of back projection and the
 * dispatches of shaders/ct/ct_forward.comp, ct_back.comp (gather), ct_back_scatter.comp and
 * ct_back_scatter_cas.comp (scatter) and ct_bp_voxel.comp / ct_bp_voxel64.comp. */
#include "tl-ct-projector.h"
#include "tl-fixed.h"
#include <math.h>
#include <string.h>

#define TL_CT_VIEW_FLOATS 32
#include "core/tl_constants.glsl" /* the kernels' block and tile sizes, flag bits */

/* Mirrors CT_PUSH in shaders/ct/ct_common.glsl (scalar layout, 104 bytes). */
typedef struct {
  TlPush1D h;
  guint64 image, proj, views;
  guint32 dims[3];
  float corner[3];
  float voxel[3];
  guint32 nu, nv;
  guint32 first, stride, count;
  float step;
  guint32 flags;
  float bound; /* ct_back_scatter with CT_FIXED: the bound per unit weight (tl-fixed.h) */
  guint32 pad;
} CtPush;
G_STATIC_ASSERT(sizeof(CtPush) == 104);


struct _TlCtProjector {
  TlContext *ctx;
  TlCtGeometry *geom;
  TlImageGrid grid;
  TlCtMethod method;
  float step;
  gboolean disc;           /* voxel: the inscribed disc of each slice only */
  TlArray *views;          /* the per-view table */
  TlPipeline *forward;     /* NULL for voxel */
  TlPipeline *back;        /* the gather (voxel: its only back projector); built on first use */
  TlPipeline *scatter;     /* the scatter in use (float atomics or CAS); built on first use */
  TlCtBack back_mode;      /* resolved: GATHER, SCATTER, SCATTER_CAS, _TILED, _FIXED(32) */
  TlFixed *fixed;          /* SCATTER_FIXED(32): the accumulator */
  guint32 forward_cost;    /* per pixel */
  guint32 back_cost;       /* per voxel and view */
  char *label_forward, *label_back; /* one back label for every form: profiles compare them */
};

static const char *const tl_ct_back_names[] = {"auto", "gather", "scatter", "scatter-cas",
                                               "scatter-tiled", "scatter-fixed",
                                               "scatter-fixed32"};

const char *tl_ct_back_name(TlCtBack b) {
  return (guint)b < G_N_ELEMENTS(tl_ct_back_names) ? tl_ct_back_names[b] : "?";
}

gboolean tl_ct_back_from_name(const char *name, TlCtBack *out, GError **error) {
  for (guint i = 0; i < G_N_ELEMENTS(tl_ct_back_names); i++)
    if (g_strcmp0(name, tl_ct_back_names[i]) == 0) {
      *out = (TlCtBack)i;
      return TRUE;
    }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown CT back projection '%s' (known: auto, gather, scatter, scatter-cas, "
              "scatter-tiled, scatter-fixed, scatter-fixed32)", name);
  return FALSE;
}

static const char *const tl_ct_method_names[] = {"joseph", "siddon", "raycast", "voxel"};

const char *tl_ct_method_name(TlCtMethod m) {
  return (guint)m < G_N_ELEMENTS(tl_ct_method_names) ? tl_ct_method_names[m] : "?";
}

gboolean tl_ct_method_from_name(const char *name, TlCtMethod *out, GError **error) {
  for (guint i = 0; i < G_N_ELEMENTS(tl_ct_method_names); i++)
    if (g_strcmp0(name, tl_ct_method_names[i]) == 0) {
      *out = (TlCtMethod)i;
      return TRUE;
    }
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown CT projector '%s' (known: joseph, siddon, raycast, voxel)", name);
  return FALSE;
}

/* One view of the table (shaders/ct/ct_common.glsl), derived in double; rays start near the
 * volume's centre. */
static void view_record(const TlCtGeometry *g, const TlImageGrid *grid, guint k,
                        float out[TL_CT_VIEW_FLOATS]) {
  const double *P = tl_ct_geometry_matrix(g, k);
  double Qa[9], Qd[9], w, ref[3];
  for (int a = 0; a < 3; a++)
    ref[a] = grid->origin_mm[a] + 0.5 * (grid->dims[a] - 1.0) * grid->voxel_mm[a];
  tl_ct_geometry_ray_basis(g, k, ref, Qa, Qd, &w);
  memset(out, 0, sizeof(float) * TL_CT_VIEW_FLOATS);
  for (int i = 0; i < 12; i++) out[i] = (float)P[i];
  for (int i = 0; i < 9; i++) out[12 + i] = (float)Qa[i];
  for (int i = 0; i < 9; i++) out[21 + i] = (float)Qd[i];
  out[30] = (float)w;
}

/* Cone beam: every corner of the volume box, widened by the 1.5 voxels the footprints
 * reach, must have depth > 0 in every view. */
static gboolean check_in_front(const TlCtGeometry *g, const TlImageGrid *grid, GError **error) {
  if (g->beam != TL_CT_CONE) return TRUE;
  for (guint k = 0; k < g->n_views; k++)
    for (int c = 0; c < 8; c++) {
      double x[3], u, v;
      for (int a = 0; a < 3; a++) {
        double idx = (c >> a) & 1 ? grid->dims[a] + 1.0 : -2.0;
        x[a] = grid->origin_mm[a] + idx * grid->voxel_mm[a];
      }
      if (!(tl_ct_geometry_project(g, k, x, &u, &v) > 0)) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                    "CT projector: the volume (%u x %u x %u voxels of %g x %g x %g mm) reaches "
                    "behind the source of view %u; it must lie in front of every source",
                    grid->dims[0], grid->dims[1], grid->dims[2], grid->voxel_mm[0],
                    grid->voxel_mm[1], grid->voxel_mm[2], k);
        return FALSE;
      }
    }
  return TRUE;
}

/* Detector pixels inside the footprint of the central voxel's support box in view 0: the
 * gather's inner loop count, for the submit budget. */
static double footprint_pixels(const TlCtGeometry *g, const TlImageGrid *grid, double lo,
                               double hi) {
  double umin = INFINITY, umax = -INFINITY, vmin = INFINITY, vmax = -INFINITY;
  for (int c = 0; c < 8; c++) {
    double x[3], u, v;
    for (int a = 0; a < 3; a++)
      x[a] = grid->origin_mm[a] +
             (0.5 * (grid->dims[a] - 1.0) - 0.5 + ((c >> a) & 1 ? hi : lo)) * grid->voxel_mm[a];
    tl_ct_geometry_project(g, 0, x, &u, &v);
    umin = MIN(umin, u), umax = MAX(umax, u), vmin = MIN(vmin, v), vmax = MAX(vmax, v);
  }
  return (MIN(umax - umin, g->det_u) + 1) * (MIN(vmax - vmin, g->det_v) + 1);
}

/* The most bytes one array may hold on this device (tl_array_new's limit). */
static guint64 largest_allocation(const TlDeviceInfo *info) {
  guint64 limit = info->max_memory_allocation_size ? info->max_memory_allocation_size : G_MAXUINT64;
  return info->max_buffer_size ? MIN(limit, info->max_buffer_size) : limit;
}

/* Tomolab's CT volumes: each kernel indexes voxels with 32-bit integers, and a volume is held in
 * z-slabs of whole planes (tl-ct-slabs.h), so one plane must fit an allocation. Beyond that a
 * volume is refused here, naming the grid, its bytes and the limits, rather than by the grid
 * check's generic words or at the first array a run makes. */
static gboolean check_fits(TlContext *ctx, const TlCtGeometry *g, const TlImageGrid *grid,
                           GError **error) {
  guint64 device = largest_allocation(tl_context_info(ctx));
  const guint *d = grid->dims;
  guint64 nvox = (guint64)d[0] * d[1] * d[2], plane = 4 * (guint64)d[0] * d[1];
  guint64 view = 4 * (guint64)g->det_u * g->det_v;
  if (nvox > TL_CT_MAX_VOXELS)
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "CT volume %u x %u x %u: %" G_GUINT64_FORMAT " voxels, an image of %"
                G_GUINT64_FORMAT " bytes (%.2f GiB), beyond the %" G_GUINT64_FORMAT
                " voxels (2^32 - 1) the CT kernels index; use fewer or larger voxels", d[0], d[1],
                d[2], nvox, 4 * nvox, 4 * nvox / 1073741824.0, TL_CT_MAX_VOXELS);
  else if (plane > device)
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "CT volume %u x %u x %u: one plane of %u x %u voxels takes %" G_GUINT64_FORMAT
                " bytes, beyond this device's largest allocation (maxMemoryAllocationSize / "
                "maxBufferSize) of %" G_GUINT64_FORMAT " bytes; volumes are split by planes only",
                d[0], d[1], d[2], d[0], d[1], plane, device);
  else if (view > device)
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "CT detector %u x %u: one view needs %" G_GUINT64_FORMAT " bytes, beyond this "
                "device's largest allocation of %" G_GUINT64_FORMAT " bytes", g->det_u, g->det_v,
                view, device);
  else
    return TRUE;
  return FALSE;
}

/* A volume held in one array (what the solver and the single-array calls need): beyond the
 * device's largest allocation or Tomolab's image limit (2^28 voxels, tl-image.h) it is
 * refused, naming the grid, its bytes and the limits. */
gboolean tl_ct_volume_check_one_array(TlContext *ctx, const TlImageGrid *grid, GError **error) {
  guint64 device = largest_allocation(tl_context_info(ctx));
  guint64 limit = MIN(device, 4 * TL_IMAGE_MAX_VOXELS);
  const guint *d = grid->dims;
  guint64 nvox = (guint64)d[0] * d[1] * d[2], image = 4 * nvox;
  if (image <= limit) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
              "CT volume %u x %u x %u: %" G_GUINT64_FORMAT " voxels, an image of %"
              G_GUINT64_FORMAT " bytes (%.2f GiB) in one array, beyond the limit of %"
              G_GUINT64_FORMAT " bytes (%.2f GiB: Tomolab's images hold at most 2^28 voxels; "
              "this device's largest allocation, maxMemoryAllocationSize / maxBufferSize, is %"
              G_GUINT64_FORMAT " bytes); iterative reconstruction needs the volume in one array "
              "(FDK, FBP and the projectors run it in slabs: tl-ct-slabs.h); use fewer or larger "
              "voxels", d[0], d[1], d[2], nvox, image, image / 1073741824.0, limit,
              limit / 1073741824.0, device);
  return FALSE;
}

/* Whether every voxel centre projects onto the centre of a detector row in every view (v
 * independent of x and y, w constant, v integral on every slice): ct_bp_voxel's constant ROWS,
 * its two-tap sample. Decided in double from the matrices the kernel's floats come from;
 * within 1e-6 px, where the four-tap sample's row weights would be 1 and < 1e-6. */
static gboolean rows_exact(const TlCtGeometry *g, const TlImageGrid *grid) {
  for (guint k = 0; k < g->n_views; k++) {
    const double *P = tl_ct_geometry_matrix(g, k);
    if (P[4] != 0 || P[5] != 0 || P[8] != 0 || P[9] != 0 || P[10] != 0 || !(P[11] != 0))
      return FALSE;
    for (guint z = 0; z < grid->dims[2]; z++) {
      double v = (P[6] * (grid->origin_mm[2] + (double)z * grid->voxel_mm[2]) + P[7]) / P[11];
      if (fabs(v - round(v)) > 1e-6) return FALSE;
    }
  }
  return TRUE;
}

/* ct_bp_voxel64, each detector row's two taps as one 64-bit load (2 loads a sample instead of
 * 4), where the device has shaderInt64 and the detector 2 columns or more. By measurement on
 * lavapipe (bench/README.md "bench/ct", third round): 0.127 against 0.249 core-s at 128^3, so
 * CPU devices take it; GPUs keep the four loads (not measured there). $TOMOLAB_CT_BP_LOADS=2|4
 * overrides (bench/ct times both). */
static gboolean bp_pair_loads(const TlContext *ctx, const TlCtGeometry *g) {
  const TlDeviceInfo *info = tl_context_info(ctx);
  if (!info->shader_int64 || g->det_u < 2) return FALSE;
  const char *env = g_getenv("TOMOLAB_CT_BP_LOADS");
  if (env && *env) return g_strcmp0(env, "2") == 0;
  return info->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

/* Voxels along x per item of the gather back projections: ct_bp_voxel's or ct_back's block. */
static guint32 gather_block(const TlCtProjector *p) {
  return p->method == TL_CT_VOXEL ? TL_CT_BP_BLOCK : TL_CT_BACK_BLOCK;
}

TlCtProjector *tl_ct_projector_new(TlContext *ctx, const TlCtGeometry *geometry,
                                   const TlImageGrid *grid, TlCtMethod method, GError **error) {
  /* the grid's own checks on one plane: its voxel count is check_fits' (slabs lift 2^28) */
  TlImageGrid plane = *grid;
  plane.dims[2] = 1;
  if (!check_fits(ctx, geometry, grid, error) || !tl_image_grid_validate(&plane, error) ||
      (grid->dims[2] == 0 && !tl_image_grid_validate(grid, error)))
    return NULL;
  if ((guint)method >= G_N_ELEMENTS(tl_ct_method_names)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown CT projector %d", method);
    return NULL;
  }
  if (!check_in_front(geometry, grid, error)) return NULL;
  g_autoptr(TlCtProjector) p = g_new0(TlCtProjector, 1);
  p->ctx = ctx;
  p->geom = tl_ct_geometry_copy(geometry);
  p->grid = *grid;
  p->method = method;
  p->step = 0.5f * MIN(grid->voxel_mm[0], MIN(grid->voxel_mm[1], grid->voxel_mm[2]));

  guint n = geometry->n_views;
  g_autofree float *table = g_new(float, (gsize)TL_CT_VIEW_FLOATS * n);
  for (guint k = 0; k < n; k++) view_record(geometry, grid, k, table + (gsize)TL_CT_VIEW_FLOATS * k);
  p->views = tl_array_new_float(ctx, (guint64)TL_CT_VIEW_FLOATS * n, error);
  if (!p->views || !tl_array_upload(p->views, table, error)) return NULL;

  guint32 spec = method;
  const guint *d = grid->dims;
  p->label_forward = g_strdup_printf("ct forward %s", tl_ct_method_name(method));
  p->label_back = g_strdup_printf("ct back %s", tl_ct_method_name(method));
  if (method == TL_CT_VOXEL) {
    guint32 rows = rows_exact(geometry, grid);
    const char *bp = bp_pair_loads(ctx, geometry) ? "ct_bp_voxel64" : "ct_bp_voxel";
    p->back = tl_pipeline_new_builtin(ctx, bp, sizeof(CtPush), &rows, 1, error);
    if (!p->back) return NULL;
    p->back_cost = 4 * TL_CT_BP_BLOCK;
    p->back_mode = TL_CT_BACK_GATHER;
  } else {
    p->forward = tl_pipeline_new_builtin(ctx, "ct_forward", sizeof(CtPush), &spec, 1, error);
    if (!p->forward) return NULL;
    /* rough voxel reads per ray, and per voxel-view (pixels in the footprint x ~8) */
    double diag = sqrt((double)d[0] * d[0] + (double)d[1] * d[1] + (double)d[2] * d[2]);
    double fw = method == TL_CT_JOSEPH ? 4.0 * MAX(d[0], MAX(d[1], d[2]))
              : method == TL_CT_SIDDON ? (double)d[0] + d[1] + d[2]
                                       : 8.0 * diag * 2.0;
    double lo = method == TL_CT_SIDDON ? 0.0 : -0.5, hi = method == TL_CT_SIDDON ? 1.0 : 1.5;
    p->forward_cost = (guint32)CLAMP(fw, 1.0, 1e6);
    p->back_cost = (guint32)CLAMP(8.0 * TL_CT_BACK_BLOCK * footprint_pixels(geometry, grid, lo, hi),
                                  1.0, 1e6);
    if (!tl_ct_projector_set_back(p, TL_CT_BACK_AUTO, error)) return NULL;
  }
  return g_steal_pointer(&p);
}

void tl_ct_projector_free(TlCtProjector *p) {
  if (!p) return;
  tl_pipeline_free(p->forward);
  tl_pipeline_free(p->back);
  tl_pipeline_free(p->scatter);
  tl_fixed_free(p->fixed);
  tl_array_free(p->views);
  tl_ct_geometry_free(p->geom);
  g_free(p->label_forward);
  g_free(p->label_back);
  g_free(p);
}

/* AUTO without $TOMOLAB_CT_BACK: the scatter on every kind of device. It walks each ray once
 * as the forward does, one atomic add where the forward has one load, while the gather visits
 * every detector pixel of each voxel's footprint. Measured (bench/README.md "bench/ct"): on
 * lavapipe the scatter costs 1.4-1.55x its forward projection, the gather 4.4-7.6x and the CAS
 * scatter 2.8-3.2x (so CPU devices keep the scatter too); on an H100 the gathers cost 35-400x
 * the forward. A device without float atomics gets the CAS kernel (set_back below). */
/* By measurement (bench/README.md, bench/ct): on lavapipe the scatter is 1.25-1.9x its forward
 * projection against 4.4-7.6x for the gather, for every projector. On an NVIDIA H200
 * (2026-11-28, CT-cone GPU case) back / forward was: Joseph gather 0.69x, scatter 0.34x;
 * Siddon gather 0.53x, scatter 0.91x; ray casting gather 0.93x, scatter 2.13x. */
/* The scatter sums in fixed point: deterministic, as the gather is by construction. */
static TlCtBack auto_back(const TlContext *ctx, TlCtMethod method) {
  if (tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU || method == TL_CT_JOSEPH)
    return TL_CT_BACK_SCATTER_FIXED;
  return TL_CT_BACK_GATHER;
}

gboolean tl_ct_projector_set_back(TlCtProjector *p, TlCtBack mode, GError **error) {
  if ((guint)mode >= G_N_ELEMENTS(tl_ct_back_names)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "unknown CT back projection %d", mode);
    return FALSE;
  }
  if (p->method == TL_CT_VOXEL) return TRUE; /* FDK's back projector has one form */
  if (mode == TL_CT_BACK_AUTO) {
    const char *env = g_getenv("TOMOLAB_CT_BACK");
    if (env && *env) {
      GError *e = NULL;
      if (!tl_ct_back_from_name(env, &mode, &e)) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "TOMOLAB_CT_BACK: %s", e->message);
        g_error_free(e);
        return FALSE;
      }
    }
    if (mode == TL_CT_BACK_AUTO) mode = auto_back(p->ctx, p->method);
  }
  const TlDeviceInfo *info = tl_context_info(p->ctx);
  gboolean has_fa = info->float32_atomic_add;
  /* the tiled kernel: Joseph, float atomics and a workgroup of CT_TILE^2 = 256 */
  if (mode == TL_CT_BACK_SCATTER_TILED &&
      (p->method != TL_CT_JOSEPH || !has_fa || info->max_compute_work_group_invocations < 256 ||
       info->max_compute_work_group_size[0] < 256))
    mode = TL_CT_BACK_SCATTER;
  /* the fixed-point sums take two words a voxel: a volume whose float image fits the device's
   * largest allocation but whose sums do not runs the float scatter (not deterministic) */
  guint64 nvox = tl_image_grid_n_voxels(&p->grid);
  gboolean fixed = mode == TL_CT_BACK_SCATTER_FIXED || mode == TL_CT_BACK_SCATTER_FIXED32;
  if (fixed && (nvox > TL_FIXED_MAX_ELEMENTS || 8 * nvox + 16 > largest_allocation(info))) {
    mode = TL_CT_BACK_SCATTER;
    fixed = FALSE;
  }
  if (mode == TL_CT_BACK_SCATTER_FIXED && !info->buffer_int64_atomics)
    mode = TL_CT_BACK_SCATTER_FIXED32;
  if (mode == TL_CT_BACK_SCATTER && !has_fa) mode = TL_CT_BACK_SCATTER_CAS;
  guint32 spec = p->method;
  if (mode == TL_CT_BACK_GATHER) {
    if (!p->back) {
      p->back = tl_pipeline_new_builtin(p->ctx, "ct_back", sizeof(CtPush), &spec, 1, error);
      if (!p->back) return FALSE;
    }
  } else if (mode != p->back_mode || !p->scatter) {
    /* constant 2: the order of the rays (ct_back_scatter.glsl); TOMOLAB_CT_SCATTER_ORDER=views
     * puts views fastest, for measuring atomic contention on GPUs */
    /* constant 3: CT_FIXED; FIXED adds each term with one 64-bit atomic (its own build, which
     * needs the device's shaderBufferInt64Atomics), FIXED32 with two 32-bit ones in the
     * float-atomic build where the device has it, else in the portable one */
    guint32 spec2[3] = {p->method, g_strcmp0(g_getenv("TOMOLAB_CT_SCATTER_ORDER"), "views") == 0,
                        fixed};
    const char *name = mode == TL_CT_BACK_SCATTER_FIXED               ? "ct_back_scatter_fixed64"
                     : mode == TL_CT_BACK_SCATTER || (fixed && has_fa) ? "ct_back_scatter"
                                                                       : "ct_back_scatter_cas";
    TlPipeline *pl =
        mode == TL_CT_BACK_SCATTER_TILED
            ? tl_pipeline_new_builtin_local(p->ctx, "ct_back_tiled", TL_CT_TILE * TL_CT_TILE,
                                            sizeof(CtPush), NULL, 0, error)
            : tl_pipeline_new_builtin(p->ctx, name, sizeof(CtPush), spec2, 3, error);
    if (!pl) return FALSE;
    tl_pipeline_free(p->scatter);
    p->scatter = pl;
    /* a ray's walk, with an atomic add per voxel where the forward loads: the forward's cost */
    tl_pipeline_set_item_cost(p->scatter, p->forward_cost);
  }
  p->back_mode = mode;
  return TRUE;
}

TlCtBack tl_ct_projector_back_mode(const TlCtProjector *p) { return p->back_mode; }

TlContext *tl_ct_projector_context(const TlCtProjector *p) { return p->ctx; }
const TlCtGeometry *tl_ct_projector_geometry(const TlCtProjector *p) { return p->geom; }
const TlImageGrid *tl_ct_projector_grid(const TlCtProjector *p) { return &p->grid; }
TlCtMethod tl_ct_projector_method(const TlCtProjector *p) { return p->method; }
void tl_ct_projector_set_disc(TlCtProjector *p, gboolean disc) { p->disc = disc; }
void tl_ct_projector_set_step(TlCtProjector *p, float step_mm) {
  if (step_mm > 0 && isfinite(step_mm)) p->step = step_mm;
}
float tl_ct_projector_step(const TlCtProjector *p) { return p->step; }
const TlArray *tl_ct_projector_views_table(const TlCtProjector *p) { return p->views; }

TlCtViews tl_ct_views_all(const TlCtGeometry *g) {
  return (TlCtViews){.first = 0, .stride = 1, .count = g->n_views};
}

TlCtViews tl_ct_views_subset(const TlCtGeometry *g, guint s, guint n) {
  n = MAX(n, 1u);
  guint count = s < g->n_views ? (g->n_views - s + n - 1) / n : 0;
  return (TlCtViews){.first = s, .stride = n, .count = count};
}

guint64 tl_ct_views_n_pixels(const TlCtGeometry *g, const TlCtViews *v) {
  return (guint64)v->count * g->det_u * g->det_v;
}

static gboolean check_call(TlCtProjector *p, const TlCtViews *v, const TlArray *image,
                           const TlArray *proj, GError **error) {
  const TlCtGeometry *g = p->geom;
  if (v->count == 0 || v->stride == 0 || v->first >= g->n_views ||
      v->first + (guint64)v->stride * (v->count - 1) >= g->n_views) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT projector: views %u + %u k (k < %u) are not all among the %u views",
                v->first, v->stride, v->count, g->n_views);
    return FALSE;
  }
  guint64 nvox = tl_image_grid_n_voxels(&p->grid), npix = tl_ct_views_n_pixels(g, v);
  const TlArray *bad = NULL;
  guint64 want = 0;
  if (tl_array_elem_size(image) != 4 || tl_array_length(image) != nvox) bad = image, want = nvox;
  else if (tl_array_elem_size(proj) != 4 || tl_array_length(proj) < npix) bad = proj, want = npix;
  if (bad) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT projector: the %s array has %" G_GUINT64_FORMAT " elements of %zu bytes; "
                "expected %s%" G_GUINT64_FORMAT " floats",
                bad == image ? "image" : "projection", tl_array_length(bad),
                tl_array_elem_size(bad), bad == image ? "" : "at least ", want);
    return FALSE;
  }
  return TRUE;
}

static void fill_push(TlCtProjector *p, const TlCtViews *v, const TlArray *image,
                      const TlArray *proj, gboolean accumulate, CtPush *push) {
  memset(push, 0, sizeof *push);
  push->image = tl_array_address(image);
  push->proj = tl_array_address(proj);
  push->views = tl_array_address(p->views);
  for (int a = 0; a < 3; a++) {
    push->dims[a] = p->grid.dims[a];
    push->voxel[a] = p->grid.voxel_mm[a];
    /* outer corner of voxel 0: origin_mm is its centre */
    push->corner[a] = p->grid.origin_mm[a] - 0.5f * p->grid.voxel_mm[a];
  }
  push->nu = p->geom->det_u;
  push->nv = p->geom->det_v;
  push->first = v->first;
  push->stride = v->stride;
  push->count = v->count;
  push->step = p->step;
  push->flags = (p->geom->beam == TL_CT_CONE ? TL_CT_FLAG_CONE : 0) | (accumulate ? TL_CT_FLAG_ACCUMULATE : 0);
}

gboolean tl_ct_projector_forward(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                 const TlArray *image, TlArray *proj, gboolean accumulate,
                                 GError **error) {
  if (!p->forward) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "the voxel-driven CT projector has no forward projection (use joseph, siddon "
                "or raycast)");
    return FALSE;
  }
  if (!check_call(p, views, image, proj, error)) return FALSE;
  CtPush push;
  fill_push(p, views, image, proj, accumulate, &push);
  tl_pipeline_set_item_cost(p->forward, p->forward_cost);
  return tl_stream_dispatch_1d(s, p->forward, p->label_forward,
                               tl_ct_views_n_pixels(p->geom, views), &push, error);
}

/* SCATTER_FIXED (tl-fixed.h): accumulator zeroed, its head from the call's data, the scatter
 * into it, its sum added into image. amax, the most a ray adds to one voxel per unit weight:
 * about twice the voxel's diagonal (Siddon: the chord; Joseph: a bilinear weight <= 1 times the
 * step between planes; ray casting: trilinear weights <= 1 of the samples within a voxel's
 * reach, 2 diagonals + a step), with a margin of 4. */
static gboolean back_fixed(TlCtProjector *p, TlStream *s, guint64 rays, CtPush *push,
                           TlArray *image, GError **error) {
  const float *v = p->grid.voxel_mm;
  double diag = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
  push->bound = (float)(4.0 * (2.0 * diag + p->step));
  if (!p->fixed) p->fixed = tl_fixed_new(p->ctx);
  if (!tl_fixed_begin(p->fixed, s, tl_image_grid_n_voxels(&p->grid), error) ||
      !tl_fixed_bound_weights(p->fixed, s, push->proj, rays, FALSE, error))
    return FALSE;
  push->image = tl_fixed_address(p->fixed);
  /* the 64-bit kernel reads (lo, hi) as one aligned word: head of 4 words, a buffer's start */
  if (p->back_mode == TL_CT_BACK_SCATTER_FIXED && (push->image & 7) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT fixed-point back projection: accumulator at address 0x%" G_GINT64_MODIFIER
                "x, expected 8-byte alignment for its 64-bit atomics", push->image);
    return FALSE;
  }
  return tl_stream_dispatch_1d(s, p->scatter, p->label_back, rays, push, error) &&
         tl_fixed_finish(p->fixed, s, image, push->bound, error);
}

gboolean tl_ct_projector_back(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                              const TlArray *proj, TlArray *image, gboolean accumulate,
                              GError **error) {
  if (!check_call(p, views, image, proj, error)) return FALSE;
  CtPush push;
  if (p->back_mode != TL_CT_BACK_GATHER) {
    /* ray-driven: one item per pixel, each adding into the image */
    if (!accumulate && !tl_stream_zero(s, image, error)) return FALSE;
    fill_push(p, views, image, proj, TRUE, &push);
    guint64 items = tl_ct_views_n_pixels(p->geom, views);
    if (p->back_mode == TL_CT_BACK_SCATTER_TILED) /* whole tiles, one workgroup each */
      items = (guint64)views->count * ((p->geom->det_u + TL_CT_TILE - 1) / TL_CT_TILE) *
              ((p->geom->det_v + TL_CT_TILE - 1) / TL_CT_TILE) * TL_CT_TILE * TL_CT_TILE;
    if (p->back_mode == TL_CT_BACK_SCATTER_FIXED || p->back_mode == TL_CT_BACK_SCATTER_FIXED32)
      return back_fixed(p, s, items, &push, image, error);
    return tl_stream_dispatch_1d(s, p->scatter, p->label_back, items, &push, error);
  }
  fill_push(p, views, image, proj, accumulate, &push);
  if (p->method == TL_CT_VOXEL && p->disc) { /* ct_bp_voxel: bound = the disc's radius^2 */
    double r = 0.5 * MIN(p->grid.dims[0], p->grid.dims[1]);
    push.bound = (float)(r * r);
  }
  guint64 cost = (guint64)p->back_cost * views->count;
  tl_pipeline_set_item_cost(p->back, (guint32)MIN(cost, (guint64)G_MAXUINT32));
  /* each item is a block of voxels along x (TL_CT_BP_BLOCK, TL_CT_BACK_BLOCK) */
  guint32 block = gather_block(p);
  guint64 items = (guint64)(p->grid.dims[0] + block - 1) / block * p->grid.dims[1] * p->grid.dims[2];
  return tl_stream_dispatch_1d(s, p->back, p->label_back, items, &push, error);
}

/* ---- Volumes in z-slabs (tl-ct-slabs.h) ---- */

/* A slab call: planes [z0, z0 + nz) within the volume, slab holding them, views among the
 * geometry's and the projection array long enough. */
static gboolean check_slab_call(TlCtProjector *p, const TlCtViews *v, const TlArray *slab,
                                guint z0, guint nz, const TlArray *proj, GError **error) {
  const guint *d = p->grid.dims;
  const TlCtGeometry *g = p->geom;
  guint64 want = (guint64)d[0] * d[1] * nz;
  if (nz == 0 || z0 >= d[2] || nz > d[2] - z0 || tl_array_elem_size(slab) != 4 ||
      tl_array_length(slab) != want) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT projector: slab of planes %u + %u of a %u x %u x %u volume in an array of %"
                G_GUINT64_FORMAT " elements of %zu bytes; expected planes within the volume and "
                "%" G_GUINT64_FORMAT " floats", z0, nz, d[0], d[1], d[2], tl_array_length(slab),
                tl_array_elem_size(slab), want);
    return FALSE;
  }
  if (v->count == 0 || v->stride == 0 || v->first >= g->n_views ||
      v->first + (guint64)v->stride * (v->count - 1) >= g->n_views ||
      tl_array_elem_size(proj) != 4 || tl_array_length(proj) < tl_ct_views_n_pixels(g, v)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "CT projector: views %u + %u k (k < %u) of %u, projection array of %"
                G_GUINT64_FORMAT " elements of %zu bytes; expected views among the geometry's "
                "and at least %" G_GUINT64_FORMAT " floats", v->first, v->stride, v->count,
                g->n_views, tl_array_length(proj), tl_array_elem_size(proj),
                tl_ct_views_n_pixels(g, v));
    return FALSE;
  }
  return TRUE;
}

/* Forward of one slab: the projector restricted to planes [z0, z0 + nz), i.e. the same rays
 * (the view table is the whole grid's: ray casting's samples stay where the whole volume's
 * are) through a grid of nz planes whose outer corner is plane z0's; a ray's sum over the
 * slabs is its sum over the volume, regrouped. */
gboolean tl_ct_projector_forward_slab(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                      const TlArray *slab, guint z0, guint nz, TlArray *proj,
                                      gboolean accumulate, GError **error) {
  if (!p->forward) return tl_ct_projector_forward(p, s, views, slab, proj, accumulate, error);
  if (!check_slab_call(p, views, slab, z0, nz, proj, error)) return FALSE;
  CtPush push;
  fill_push(p, views, slab, proj, accumulate, &push);
  push.dims[2] = nz;
  push.corner[2] = (float)(p->grid.origin_mm[2] + (z0 - 0.5) * p->grid.voxel_mm[2]);
  tl_pipeline_set_item_cost(p->forward, p->forward_cost);
  return tl_stream_dispatch_1d(s, p->forward, p->label_forward,
                               tl_ct_views_n_pixels(p->geom, views), &push, error);
}

/* Back projection into one slab by a gather (ct_back, voxel: ct_bp_voxel): each voxel is
 * computed alone from the whole grid's coordinates, so dispatching only the slab's items gives
 * each of its voxels the very bits of the unsplit gather. The kernel writes voxel idx of the
 * whole grid at image + 4 idx, so it is handed the slab's address less its first voxel's
 * offset: every address it forms lies in the slab. The ray-driven scatters cannot be cut so
 * (a ray adds into every slab it crosses), hence the gather here whatever set_back chose. */
gboolean tl_ct_projector_back_slab(TlCtProjector *p, TlStream *s, const TlCtViews *views,
                                   const TlArray *proj, TlArray *slab, guint z0, guint nz,
                                   gboolean accumulate, GError **error) {
  if (!check_slab_call(p, views, slab, z0, nz, proj, error)) return FALSE;
  if (!p->back) {
    guint32 spec = p->method;
    p->back = tl_pipeline_new_builtin(p->ctx, "ct_back", sizeof(CtPush), &spec, 1, error);
    if (!p->back) return FALSE;
  }
  const guint *d = p->grid.dims;
  CtPush push;
  fill_push(p, views, slab, proj, accumulate, &push);
  push.image = tl_array_address(slab) - 4 * (guint64)d[0] * d[1] * z0;
  guint64 cost = (guint64)p->back_cost * views->count;
  tl_pipeline_set_item_cost(p->back, (guint32)MIN(cost, (guint64)G_MAXUINT32));
  guint64 per_plane = (guint64)(d[0] + gather_block(p) - 1) / gather_block(p) * d[1];
  return tl_stream_dispatch_1d_range(s, p->back, p->label_back, per_plane * z0, per_plane * nz,
                                     &push, error);
}
