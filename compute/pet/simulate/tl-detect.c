/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Ray -> crystal lookup over planar crystal groups. */
#include "tl-detect.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double n[3], off;    /* inward normal; the face plane is n.x = off */
  double e1[3], e2[3]; /* in-plane axes: e1 transaxial (z x n), e2 = n x e1 */
  guint nu, nv;
  double *u, *v;       /* sorted distinct crystal coordinates along e1, e2 */
  guint32 *cell;       /* nu x nv crystal ids, G_MAXUINT32 = empty */
} Group;

struct _TlDetector {
  guint n_groups;
  Group *groups;
  double hu, hv; /* half face size */
  /* rings around z: every face lies outside the cylinder of radius r_in, all crystals within
   * [zlo, zhi]; a photon already beyond that z range when it crosses the cylinder misses */
  gboolean ring;
  double r_in, zlo, zhi;
};

static double dot(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorted distinct values (merging those closer than tol). */
static double *distinct(double *vals, guint n, double tol, guint *out_n) {
  qsort(vals, n, sizeof *vals, cmp_double);
  double *d = g_new(double, n);
  guint m = 0;
  for (guint i = 0; i < n; i++)
    if (m == 0 || vals[i] - d[m - 1] > tol) d[m++] = vals[i];
  *out_n = m;
  return d;
}

/* Index of the value nearest x in sorted v[0..n), or -1 if farther than half. */
static int nearest(const double *v, guint n, double x, double half) {
  guint lo = 0, hi = n;
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    if (v[mid] < x) lo = mid + 1; else hi = mid;
  }
  int best = -1;
  double bd = half;
  for (int i = (int)lo - 1; i <= (int)lo; i++)
    if (i >= 0 && i < (int)n && fabs(v[i] - x) <= bd) bd = fabs(v[i] - x), best = i;
  return best;
}

static gboolean build_group(Group *g, const TlScanner *s, const guint32 *ids, guint n, guint gid,
                            GError **error) {
  const TlCrystal *c0 = &s->crystals[ids[0]];
  for (int d = 0; d < 3; d++) g->n[d] = c0->normal[d];
  double c[3] = {c0->centre[0], c0->centre[1], c0->centre[2]};
  g->off = dot(g->n, c);
  /* e1 = z x n (transaxial), or x when the face looks along z */
  double e1[3] = {-g->n[1], g->n[0], 0};
  double l = sqrt(e1[0] * e1[0] + e1[1] * e1[1]);
  if (l < 1e-6) e1[0] = 1, e1[1] = 0, l = 1;
  for (int d = 0; d < 3; d++) g->e1[d] = e1[d] / l;
  g->e2[0] = g->n[1] * g->e1[2] - g->n[2] * g->e1[1];
  g->e2[1] = g->n[2] * g->e1[0] - g->n[0] * g->e1[2];
  g->e2[2] = g->n[0] * g->e1[1] - g->n[1] * g->e1[0];
  double *us = g_new(double, n), *vs = g_new(double, n);
  for (guint i = 0; i < n; i++) {
    const TlCrystal *k = &s->crystals[ids[i]];
    double p[3] = {k->centre[0], k->centre[1], k->centre[2]};
    double dn = fabs(k->normal[0] - g->n[0]) + fabs(k->normal[1] - g->n[1]) + fabs(k->normal[2] - g->n[2]);
    if (dn > 1e-3 || fabs(dot(g->n, p) - g->off) > 0.01 + 1e-6 * fabs(g->off)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "scanner '%s': group %u is not a planar module (crystal %u is off the plane or "
                  "faces elsewhere); the simulator needs planar groups", s->name, gid, ids[i]);
      g_free(us);
      g_free(vs);
      return FALSE;
    }
    us[i] = dot(g->e1, p);
    vs[i] = dot(g->e2, p);
  }
  double tol_u = 0.01 * s->crystal_size[0], tol_v = 0.01 * s->crystal_size[1];
  g_autofree double *su = g_memdup2(us, sizeof(double) * n), *sv = g_memdup2(vs, sizeof(double) * n);
  g->u = distinct(su, n, tol_u, &g->nu);
  g->v = distinct(sv, n, tol_v, &g->nv);
  gboolean ok = (guint64)g->nu * g->nv <= 64ull * n + 4096;
  if (ok) {
    g->cell = g_new(guint32, (gsize)g->nu * g->nv);
    memset(g->cell, 0xff, sizeof(guint32) * g->nu * g->nv);
  }
  for (guint i = 0; ok && i < n; i++) {
    int a = nearest(g->u, g->nu, us[i], tol_u), b = nearest(g->v, g->nv, vs[i], tol_v);
    guint32 *cell = &g->cell[(gsize)a * g->nv + b];
    ok = a >= 0 && b >= 0 && *cell == G_MAXUINT32;
    if (ok) *cell = ids[i];
  }
  g_free(us);
  g_free(vs);
  if (!ok)
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "scanner '%s': the crystals of group %u do not form a grid on their plane "
                "(two share a cell, or the grid would be too sparse)", s->name, gid);
  return ok;
}

TlDetector *tl_detector_new(const TlScanner *s, GError **error) {
  /* crystal ids per group, groups in order of first appearance */
  g_autoptr(GHashTable) index = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) members = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  g_autoptr(GArray) gids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->n_crystals; i++) {
    guint gid = s->crystals[i].group;
    gpointer slot;
    if (!g_hash_table_lookup_extended(index, GUINT_TO_POINTER(gid), NULL, &slot)) {
      slot = GUINT_TO_POINTER(members->len);
      g_hash_table_insert(index, GUINT_TO_POINTER(gid), slot);
      g_ptr_array_add(members, g_array_new(FALSE, FALSE, sizeof(guint32)));
      g_array_append_val(gids, gid);
    }
    g_array_append_val(g_ptr_array_index(members, GPOINTER_TO_UINT(slot)), i);
  }
  TlDetector *det = g_new0(TlDetector, 1);
  det->n_groups = members->len;
  det->groups = g_new0(Group, det->n_groups);
  det->hu = 0.5 * s->crystal_size[0];
  det->hv = 0.5 * s->crystal_size[1];
  det->ring = TRUE;
  det->r_in = G_MAXDOUBLE;
  det->zlo = G_MAXDOUBLE;
  det->zhi = -G_MAXDOUBLE;
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    det->ring &= k->normal[2] == 0.0f;
    det->r_in = MIN(det->r_in, -(k->centre[0] * (double)k->normal[0] + k->centre[1] * (double)k->normal[1]));
    det->zlo = MIN(det->zlo, k->centre[2] - det->hv);
    det->zhi = MAX(det->zhi, k->centre[2] + det->hv);
  }
  det->ring &= det->r_in > 0;
  for (guint gi = 0; gi < det->n_groups; gi++) {
    GArray *m = g_ptr_array_index(members, gi);
    if (!build_group(&det->groups[gi], s, (guint32 *)m->data, m->len,
                     g_array_index(gids, guint, gi), error)) {
      tl_detector_free(det);
      return NULL;
    }
  }
  return det;
}

void tl_detector_free(TlDetector *det) {
  if (!det) return;
  for (guint i = 0; i < det->n_groups; i++) {
    g_free(det->groups[i].u);
    g_free(det->groups[i].v);
    g_free(det->groups[i].cell);
  }
  g_free(det->groups);
  g_free(det);
}

gint64 tl_detector_cast(const TlDetector *det, const double p[3], const double d[3], double hit[3]) {
  if (det->ring) {
    double a = d[0] * d[0] + d[1] * d[1], b = p[0] * d[0] + p[1] * d[1];
    double c = p[0] * p[0] + p[1] * p[1] - det->r_in * det->r_in;
    if (a < 1e-18) return -1; /* along the axis */
    if (c < 0) {
      double t = (-b + sqrt(b * b - a * c)) / a, z = p[2] + t * d[2];
      if (z < det->zlo || z > det->zhi) return -1;
    }
  }
  const Group *best = NULL;
  double bt = G_MAXDOUBLE;
  for (guint i = 0; i < det->n_groups; i++) {
    const Group *g = &det->groups[i];
    double dn = dot(g->n, d);
    if (dn >= -1e-12) continue; /* moving away from this face's front */
    double t = (g->off - dot(g->n, p)) / dn;
    if (t < bt) bt = t, best = g;
  }
  if (!best || bt <= 0) return -1;
  for (int k = 0; k < 3; k++) hit[k] = p[k] + bt * d[k];
  int a = nearest(best->u, best->nu, dot(best->e1, hit), det->hu);
  int b = nearest(best->v, best->nv, dot(best->e2, hit), det->hv);
  if (a < 0 || b < 0) return -1;
  guint32 id = best->cell[(gsize)a * best->nv + b];
  return id == G_MAXUINT32 ? -1 : (gint64)id;
}

gboolean tl_detector_inside(const TlDetector *det, const double p[3]) {
  for (guint i = 0; i < det->n_groups; i++)
    if (dot(det->groups[i].n, p) < det->groups[i].off) return FALSE;
  return TRUE;
}
