/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The symmetries a sensitivity image may use (tl-sensitivity.h TlSensSymmetry): the elements
 * of the 16 quarter turns and mirror planes through the axes (the square's 8 transaxially,
 * times the axial mirror z -> -z) that map the crystal table onto itself and the image grid
 * onto itself, each found by checking every crystal, never assumed from a scanner's name.
 * The DMI's 34-gon has no quarter turn (34 is not a multiple of 4), but its mirrors x -> -x,
 * y -> -y, their product and the axial mirror (4 modules of 9 rings, centred) hold: 8. */
#include "tl-sensitivity.h"
#include "core/tl_constants.glsl" /* TL_PET_SYM_*: the transforms' bits, pet_sens_finish's too */
#include "tl-progress.h"
#include <float.h>
#include <math.h>
#include <string.h>

/* Transform c (TlSensSymmetry.mask bit c): TL_PET_SYM_SWAP_XY first, then the mirrors
 * (shaders/pet/pet_sens_finish.comp applies the same to voxels). */
static void transform(guint c, const float in[3], double out[3]) {
  double x = in[0], y = in[1];
  if (c & TL_PET_SYM_SWAP_XY) {
    double t = x;
    x = y;
    y = t;
  }
  out[0] = (c & TL_PET_SYM_FLIP_X) ? -x : x;
  out[1] = (c & TL_PET_SYM_FLIP_Y) ? -y : y;
  out[2] = (c & TL_PET_SYM_FLIP_Z) ? -(double)in[2] : in[2];
}

/* Two float coordinates computed independently for mirror-image crystals differ by a few
 * rounding errors of the coordinate's size; anything more is a different position. */
static double tol_mm(double v) { return 4.0 * FLT_EPSILON * MAX(fabs(v), 1.0); }

/* Where the grid's voxel planes along axis k are: lo + i * vox, i = 0..n. */
static double plane_lo(const TlImageGrid *g, int k) {
  return g->origin_mm[k] - 0.5 * g->voxel_mm[k];
}

/* Half the grid's extent along axis k (exact: n < 2^29, vox a float). */
static double half_extent(const TlImageGrid *g, int k) {
  return 0.5 * g->dims[k] * (double)g->voxel_mm[k];
}

/* Centred: the middle of the grid, lo + n vox / 2, within a tenth of a micrometre of 0. */
static gboolean centred(const TlImageGrid *g, int k) {
  return fabs(plane_lo(g, k) + half_extent(g, k)) <= 1e-4;
}

double tl_sensitivity_plane_lo(const TlImageGrid *g, int k) {
  return centred(g, k) ? -half_extent(g, k) : plane_lo(g, k);
}

static gboolean grid_allows(const TlImageGrid *g, guint c) {
  for (int k = 0; k < 3; k++) {
    gboolean flips = (k == 0 && (c & TL_PET_SYM_FLIP_X)) || (k == 1 && (c & TL_PET_SYM_FLIP_Y)) ||
                     (k == 2 && (c & TL_PET_SYM_FLIP_Z)) || (k < 2 && (c & TL_PET_SYM_SWAP_XY));
    if (!flips) continue;
    if (!centred(g, k)) return FALSE;
  }
  if ((c & TL_PET_SYM_SWAP_XY) &&
      (g->dims[0] != g->dims[1] || g->voxel_mm[0] != g->voxel_mm[1] ||
       g->origin_mm[0] != g->origin_mm[1]))
    return FALSE;
  return TRUE;
}

/* A line of response lying in a voxel plane is counted in the voxel above it (Siddon's
 * half-open voxels), its mirror image in the voxel above the mirror plane: not symmetric.
 * Such a line has both crystals on the plane; a transform that flips axis k is refused when
 * any crystal lies within 1e-4 mm of a voxel plane along k. Only those: the transforms
 * leaving k alone form a subgroup and stay exact (the mMR on the window's 4 mm grid has
 * crystals on z planes: its x/y mirrors and quarter turns still hold, 8 of 16). */
static gboolean crystals_off_planes(const TlScanner *s, const TlImageGrid *g, int k) {
  double lo = plane_lo(g, k), v = g->voxel_mm[k];
  for (guint i = 0; i < s->n_crystals; i++) {
    double u = (s->crystals[i].centre[k] - lo) / v;
    double r = nearbyint(u);
    if (r >= 0 && r <= g->dims[k] && fabs(u - r) * v < 1e-4) return FALSE;
  }
  return TRUE;
}

/* Whether transform c flips (or, swapping, moves) axis k. */
static gboolean acts_on(guint c, int k) {
  guint32 moves = k == 0   ? TL_PET_SYM_FLIP_X | TL_PET_SYM_SWAP_XY
                  : k == 1 ? TL_PET_SYM_FLIP_Y | TL_PET_SYM_SWAP_XY
                           : TL_PET_SYM_FLIP_Z;
  return (c & moves) != 0;
}

typedef struct {
  const TlCrystal *c;
  guint *order; /* crystal indices sorted by x */
  guint n;
} Lookup;

static gint by_x(gconstpointer a, gconstpointer b, gpointer crystals) {
  const TlCrystal *c = crystals;
  float xa = c[*(const guint *)a].centre[0], xb = c[*(const guint *)b].centre[0];
  return (xa > xb) - (xa < xb);
}

/* The crystal at p (within tol_mm on every axis), or G_MAXUINT. */
static guint find_crystal(const Lookup *l, const double p[3]) {
  double tx = tol_mm(p[0]);
  guint lo = 0, hi = l->n; /* first with x >= p[0] - tx */
  while (lo < hi) {
    guint m = lo + (hi - lo) / 2;
    if (l->c[l->order[m]].centre[0] < p[0] - tx) lo = m + 1;
    else hi = m;
  }
  for (guint i = lo; i < l->n && l->c[l->order[i]].centre[0] <= p[0] + tx; i++) {
    const TlCrystal *q = &l->c[l->order[i]];
    if (fabs(q->centre[1] - p[1]) <= tol_mm(p[1]) && fabs(q->centre[2] - p[2]) <= tol_mm(p[2]))
      return l->order[i];
  }
  return G_MAXUINT;
}

/* perm[i] = the crystal transform c maps crystal i to, when c maps the table onto itself
 * keeping the pair rule (groups to groups one to one, ring differences kept). */
static gboolean crystal_permutation(const TlScanner *s, const Lookup *l, guint c, guint *perm) {
  guint ng = 0;
  for (guint i = 0; i < s->n_crystals; i++) ng = MAX(ng, s->crystals[i].group + 1);
  g_autofree guint *gmap = g_new(guint, ng), *ginv = g_new(guint, ng);
  for (guint k = 0; k < ng; k++) gmap[k] = ginv[k] = G_MAXUINT;
  gint64 ring_sum = -1; /* rings map r -> r (0) or r -> ring_sum - r (axial mirror) */
  for (guint i = 0; i < s->n_crystals; i++) {
    double p[3];
    transform(c, s->crystals[i].centre, p);
    guint j = find_crystal(l, p);
    if (j == G_MAXUINT) return FALSE;
    perm[i] = j;
    guint ga = s->crystals[i].group, gb = s->crystals[j].group;
    if (gmap[ga] == G_MAXUINT && ginv[gb] == G_MAXUINT) {
      gmap[ga] = gb;
      ginv[gb] = ga;
    }
    if (gmap[ga] != gb || ginv[gb] != ga) return FALSE;
    gint64 ra = s->crystals[i].ring, rb = s->crystals[j].ring;
    if (c & TL_PET_SYM_FLIP_Z) {
      if (ring_sum < 0) ring_sum = ra + rb;
      if (ra + rb != ring_sum) return FALSE;
    } else if (ra != rb) {
      return FALSE;
    }
  }
  return TRUE;
}

void tl_sensitivity_symmetry(const TlScanner *s, const TlImageGrid *g, gboolean swaps,
                             TlSensSymmetry *sym) {
  *sym = (TlSensSymmetry){.order = 1, .mask = 1, .perm = NULL};
  if (!s || s->n_crystals < 2) return;
  guint n = s->n_crystals;
  Lookup l = {.c = s->crystals, .order = g_new(guint, n), .n = n};
  for (guint i = 0; i < n; i++) l.order[i] = i;
  g_qsort_with_data(l.order, (gint)n, sizeof(guint), by_x, s->crystals);
  g_autoptr(GArray) perms = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autofree guint *perm = g_new(guint, n);
  gboolean off[3];
  for (int k = 0; k < 3; k++) off[k] = crystals_off_planes(s, g, k);
  for (guint c = 1; c < TL_PET_SYM_TRANSFORMS; c++) {
    if (((c & TL_PET_SYM_SWAP_XY) && !swaps) || !grid_allows(g, c)) continue;
    if ((acts_on(c, 0) && !off[0]) || (acts_on(c, 1) && !off[1]) || (acts_on(c, 2) && !off[2]))
      continue;
    if (!crystal_permutation(s, &l, c, perm)) continue;
    sym->mask |= 1u << c;
    sym->order++;
    g_array_append_vals(perms, perm, n);
  }
  g_free(l.order);
  if (sym->order > 1) sym->perm = (guint32 *)g_array_free(g_steal_pointer(&perms), FALSE);
}

void tl_sensitivity_symmetry_norm(const TlScanner *s, const TlImageGrid *g, gboolean swaps,
                                  const TlNorm *norm, TlSensSymmetry *sym) {
  tl_sensitivity_symmetry(s, g, swaps, sym);
  if (!norm || sym->order < 2) return;
  /* the transforms n is invariant under, with their permutations, in the order of c */
  guint n = s->n_crystals, kept = 0;
  guint32 mask = 1;
  guint32 *perm = g_new(guint32, (gsize)n * (sym->order - 1));
  for (guint c = 1, k = 0; c < TL_PET_SYM_TRANSFORMS; c++) {
    if (!(sym->mask & (1u << c))) continue;
    const guint32 *pc = sym->perm + (gsize)k++ * n;
    if (!tl_norm_invariant(norm, pc)) continue;
    memcpy(perm + (gsize)kept++ * n, pc, sizeof(guint32) * n);
    mask |= 1u << c;
  }
  g_free(sym->perm);
  sym->order = kept + 1;
  sym->mask = mask;
  sym->perm = kept ? perm : NULL;
  if (!kept) g_free(perm);
}

void tl_sensitivity_symmetry_clear(TlSensSymmetry *sym) {
  g_clear_pointer(&sym->perm, g_free);
  sym->order = 1;
  sym->mask = 1;
}

/* tl_pair_index without a division (a != b). */
static inline guint32 pair_index(guint32 n, guint32 a, guint32 b) {
  guint32 d = b >= a ? b - a : b + n - a;
  if (2 * d > n || (2 * d == n && a > b)) {
    guint32 t = a;
    a = b;
    b = t;
    d = n - d;
  }
  return a + n * (d - 1);
}

guint32 *tl_sensitivity_orbit_pairs(const TlScanner *s, const TlSensSymmetry *sym,
                                    guint64 counts[5]) {
  guint32 n = s->n_crystals;
  guint64 pairs = tl_pair_count(n);
  guint g_count = sym->order - 1;
  GArray *by[5];
  for (int k = 0; k < 5; k++) by[k] = g_array_new(FALSE, FALSE, sizeof(guint32));
  /* every pair visited on the host: seconds for a clinical scanner, a phase of the sensitivity
   * image's progress (tl-progress.h) */
  tl_progress_phase("sensitivity image (listing the pairs to trace)", (double)pairs);
  TlProgress *progress = tl_progress_current();
  /* rows d = 1..n/2 of the pair numbering (tl-projector.h): p = a + n (d - 1), b = a + d */
  for (guint64 p0 = 0; p0 < pairs; p0 += n) {
    tl_progress_add_to(progress, n);
    guint32 d = (guint32)(p0 / n) + 1;
    for (guint32 a = 0; a < n && p0 + a < pairs; a++) {
      guint32 b = a + d >= n ? a + d - n : a + d;
      if (!tl_scanner_pair_allowed(s, a, b)) continue;
      guint32 p = (guint32)(p0 + a), fixed_by = 1;
      gboolean canonical = TRUE;
      for (guint g = 0; g < g_count && canonical; g++) {
        const guint32 *perm = sym->perm + (guint64)g * n;
        guint32 q = pair_index(n, perm[a], perm[b]);
        canonical = q >= p;
        fixed_by += q == p;
      }
      if (!canonical) continue;
      int k = fixed_by == 1 ? 0 : fixed_by == 2 ? 1 : fixed_by == 4 ? 2 : fixed_by == 8 ? 3 : 4;
      g_array_append_val(by[k], p);
    }
  }
  guint64 total = 0;
  for (int k = 0; k < 5; k++) total += counts[k] = by[k]->len;
  guint32 *out = g_new(guint32, MAX(total, 1));
  guint64 at = 0;
  for (int k = 0; k < 5; k++) {
    if (by[k]->len) memcpy(out + at, by[k]->data, by[k]->len * sizeof(guint32));
    at += by[k]->len;
    g_array_free(by[k], TRUE);
  }
  return out;
}

gboolean tl_sensitivity_swaps(const TlProjector *p) {
  return g_strcmp0(tl_projector_name(p), "siddon") == 0;
}
