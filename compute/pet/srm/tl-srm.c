/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The dual-head system response matrix stored by symmetry class (tl-srm.h): the detector
 * response integral, the class build, the index arithmetic and the cache file. */
#include "tl-srm.h"
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include "image/tl-file.h"
#include "core/tl_constants.glsl" /* the key's packing, which srm_common.glsl unpacks */

/* key packing: ix in TL_SRM_KEY_X_BITS, m_y + M_OFF and m_z + M_OFF in TL_SRM_KEY_M_BITS each */
#define M_OFF ((gint)1 << (TL_SRM_KEY_M_BITS - 1))

static guint32 pack_key(gint ix, gint my, gint mz) {
  return (guint32)ix | (guint32)(my + M_OFF) << TL_SRM_KEY_X_BITS |
         (guint32)(mz + M_OFF) << (TL_SRM_KEY_X_BITS + TL_SRM_KEY_M_BITS);
}

static guint32 key_ix(guint32 key) { return key & ((1u << TL_SRM_KEY_X_BITS) - 1); }

static void unpack_key(guint32 key, gint *ix, gint *my, gint *mz) {
  *ix = (gint)key_ix(key);
  *my = (gint)((key >> TL_SRM_KEY_X_BITS) & ((1u << TL_SRM_KEY_M_BITS) - 1)) - M_OFF;
  *mz = (gint)(key >> (TL_SRM_KEY_X_BITS + TL_SRM_KEY_M_BITS)) - M_OFF;
}

struct _TlSrm {
  TlSrmParams prm;
  TlImageGrid grid;
  guint nu, nv, D;
  double pitch[2], half_gap, depth;
  gint ey, ez;
  gboolean interchange, xsym;
  guint du_max, dv_max;     /* class table dims: |du| <= du_max, |dv| <= dv_max */
  gint *class_of;           /* (du_max + 1) x (dv_max + 1), -1 = not a class (interchange) */
  guint n_classes;
  guint32 *class_du, *class_dv;
  guint32 *class_ptr;
  guint32 *key;
  float *val;
  char *scanner_key, *grid_key;
};

void tl_srm_params_init(TlSrmParams *p) {
  memset(p, 0, sizeof *p);
  p->mu_per_mm = TL_SRM_LYSO_MU;
  p->samples = 8;
  p->threshold = 1e-3;
}

typedef struct {
  double py, pz, T, mu;
  guint n;
} Model;

/* Depth interval [*s0, *s1] (already clipped) narrowed to where q + k s lies within
 * [c - half, c + half]. */
static void clip_axis(double q, double k, double c, double half, double *s0, double *s1) {
  double lo = c - half - q, hi = c + half - q;
  if (k == 0.0) {
    if (lo > 0 || hi < 0) *s1 = -1;
    return;
  }
  double a = lo / k, b = hi / k;
  if (a > b) {
    double t = a;
    a = b;
    b = t;
  }
  *s0 = MAX(*s0, a);
  *s1 = MIN(*s1, b);
}

/* Probability of a first interaction in the column centred (cy, cz) for a photon entering
 * the slab at (qy, qz) with lateral slopes (ky, kz) per mm of depth and 1 / cos = sec. */
static double absorb(const Model *m, double qy, double qz, double ky, double kz, double cy,
                     double cz, double sec) {
  double s0 = 0, s1 = m->T;
  clip_axis(qy, ky, cy, 0.5 * m->py, &s0, &s1);
  clip_axis(qz, kz, cz, 0.5 * m->pz, &s0, &s1);
  if (s1 <= s0) return 0.0;
  return exp(-m->mu * s0 * sec) - exp(-m->mu * s1 * sec);
}

static void hull(double *lo, double *hi, double v) {
  *lo = MIN(*lo, v);
  *hi = MAX(*hi, v);
}

/* h for column A (face centre (xa, ya, za), head 0 at x <= xa) and column B (face centre
 * (xb, yb, zb), head 1 at x >= xb), point P strictly between. The directions are
 * parametrised by the point q where the line crosses the plane x = xa:
 * d omega = h0 dA / r^3, h0 = P_x - xa, r = |q - P|. The box of q holds every line that
 * meets both columns (the hulls of their front and back faces seen from P). */
static double response(const Model *m, const double P[3], const double A[3], const double B[3]) {
  double h0 = P[0] - A[0], h1 = B[0] - P[0];
  if (!(h0 > 0 && h1 > 0)) return 0.0;
  double box[2][2]; /* [axis y/z][lo/hi] */
  const double half[2] = {0.5 * m->py, 0.5 * m->pz};
  for (int d = 0; d < 2; d++) {
    double alo = G_MAXDOUBLE, ahi = -G_MAXDOUBLE, blo = G_MAXDOUBLE, bhi = -G_MAXDOUBLE;
    double p = P[d + 1];
    for (int e = -1; e <= 1; e += 2) {
      double ya = A[d + 1] + e * half[d], yb = B[d + 1] + e * half[d];
      hull(&alo, &ahi, ya);                                /* A's front face */
      hull(&alo, &ahi, p + (ya - p) * h0 / (h0 + m->T));   /* A's back face */
      hull(&blo, &bhi, p - (yb - p) * h0 / h1);            /* B's front face */
      hull(&blo, &bhi, p - (yb - p) * h0 / (h1 + m->T));   /* B's back face */
    }
    box[d][0] = MAX(alo, blo);
    box[d][1] = MIN(ahi, bhi);
    if (box[d][1] <= box[d][0]) return 0.0;
  }
  guint n = MAX(m->n, 1);
  double wy = (box[0][1] - box[0][0]) / n, wz = (box[1][1] - box[1][0]) / n, sum = 0.0;
  for (guint i = 0; i < n; i++) {
    double qy = box[0][0] + (i + 0.5) * wy, dy = qy - P[1];
    for (guint j = 0; j < n; j++) {
      double qz = box[1][0] + (j + 0.5) * wz, dz = qz - P[2];
      double r2 = h0 * h0 + dy * dy + dz * dz, r = sqrt(r2), sec = r / h0;
      double ky = dy / h0, kz = dz / h0;
      double fa = absorb(m, qy, qz, ky, kz, A[1], A[2], sec);
      if (fa == 0.0) continue;
      /* the other photon enters head 1 at P - (q - P) h1 / h0 and goes on the other way */
      double fb = absorb(m, P[1] - dy * h1 / h0, P[2] - dz * h1 / h0, -ky, -kz, B[1], B[2], sec);
      sum += fa * fb * h0 / (r2 * r);
    }
  }
  return sum * wy * wz / (2.0 * G_PI);
}

static Model model_of(const TlScanner *s, const TlSrmParams *prm) {
  Model m = {.mu = prm->mu_per_mm, .n = prm->samples};
  m.py = s->layout ? s->layout->head_pitch_mm[0] : s->crystal_size[0];
  m.pz = s->layout ? s->layout->head_pitch_mm[1] : s->crystal_size[1];
  m.T = prm->depth_mm > 0 ? prm->depth_mm : s->crystal_size[2];
  return m;
}

double tl_srm_point_response(const TlScanner *s, const TlSrmParams *prm, guint a, guint b,
                             const double p[3]) {
  if (a >= s->n_crystals || b >= s->n_crystals) return 0.0;
  if (s->crystals[a].group == 1) {
    guint t = a;
    a = b;
    b = t;
  }
  if (s->crystals[a].group != 0 || s->crystals[b].group != 1) return 0.0;
  Model m = model_of(s, prm);
  double A[3], B[3];
  for (int d = 0; d < 3; d++) {
    A[d] = s->crystals[a].centre[d];
    B[d] = s->crystals[b].centre[d];
  }
  return response(&m, p, A, B);
}

/* ---- the symmetric store ---- */

static gboolean near_int(double v, guint *out) {
  double r = floor(v + 0.5);
  if (r < 1 || fabs(v - r) > 1e-4 * MAX(1.0, r)) return FALSE;
  *out = (guint)r;
  return TRUE;
}

static gboolean centred(const TlImageGrid *g, int d) {
  double want = -0.5 * (g->dims[d] - 1.0) * g->voxel_mm[d];
  return fabs(g->origin_mm[d] - want) <= 1e-4 * g->voxel_mm[d];
}

static gboolean setup(TlSrm *m, const TlScanner *s, const TlImageGrid *grid,
                      const TlSrmParams *prm, GError **error) {
  const char *bad = NULL;
  guint dz = 0;
  if (s->kind != TL_SCANNER_DUAL_HEAD || !s->layout)
    bad = "a dual-head scanner built from its layout";
  else if (!tl_image_grid_validate(grid, error))
    return FALSE;
  else if (!near_int(s->layout->head_pitch_mm[0] / grid->voxel_mm[1], &m->D) ||
           !near_int(s->layout->head_pitch_mm[1] / grid->voxel_mm[2], &dz) || dz != m->D)
    bad = "y and z voxel sizes equal to the crystal pitch / D, the same integer D in y and z";
  else if (!centred(grid, 0) || !centred(grid, 1) || !centred(grid, 2))
    bad = "a grid centred on the scanner (tl_image_grid_centred)";
  else if (grid->dims[0] > 1u << TL_SRM_KEY_X_BITS)
    bad = "at most 2^" G_STRINGIFY(TL_SRM_KEY_X_BITS) " planes across the gap";
  else if (!(prm->mu_per_mm > 0 && isfinite(prm->mu_per_mm)) || prm->samples < 1 ||
           prm->samples > 256 || !(prm->threshold >= 0 && prm->threshold < 1))
    bad = "mu > 0, 1 to 256 samples, threshold in [0, 1)";
  if (bad) {
    g_autofree char *gk = tl_image_grid_key(grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "system response matrix of scanner '%s' on grid %s: expected %s", s->name, gk,
                bad);
    return FALSE;
  }
  m->prm = *prm;
  m->grid = *grid;
  m->nu = s->layout->head_crystals[0];
  m->nv = s->layout->head_crystals[1];
  m->pitch[0] = s->layout->head_pitch_mm[0];
  m->pitch[1] = s->layout->head_pitch_mm[1];
  m->half_gap = 0.5 * s->layout->head_distance_mm;
  m->depth = prm->depth_mm > 0 ? prm->depth_mm : s->crystal_size[2];
  m->ey = (gint)grid->dims[1] - 1 - (gint)((m->nu - 1) * m->D);
  m->ez = (gint)grid->dims[2] - 1 - (gint)((m->nv - 1) * m->D);
  m->xsym = TRUE;
  /* y <-> z needs the same pitch, voxel and half-voxel lattice parity in both axes */
  m->interchange = fabs(m->pitch[0] - m->pitch[1]) < 1e-6 &&
                   grid->voxel_mm[1] == grid->voxel_mm[2] && ((m->ey - m->ez) & 1) == 0;
  m->du_max = m->nu - 1;
  m->dv_max = m->nv - 1;
  m->class_of = g_new(gint, (m->du_max + 1) * (m->dv_max + 1));
  GArray *cu = g_array_new(FALSE, FALSE, sizeof(guint32)), *cv = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (guint u = 0; u <= m->du_max; u++)
    for (guint v = 0; v <= m->dv_max; v++) {
      gint *c = &m->class_of[u * (m->dv_max + 1) + v];
      if (m->interchange && v > u) {
        *c = -1; /* stored as (v, u) */
        continue;
      }
      *c = (gint)cu->len;
      g_array_append_val(cu, u);
      g_array_append_val(cv, v);
    }
  /* (v, u) with v > du_max cannot be swapped into the table: keep those as their own class */
  if (m->interchange)
    for (guint u = 0; u <= m->du_max; u++)
      for (guint v = u + 1; v <= m->dv_max; v++)
        if (v > m->du_max) {
          m->class_of[u * (m->dv_max + 1) + v] = (gint)cu->len;
          g_array_append_val(cu, u);
          g_array_append_val(cv, v);
        }
  m->n_classes = cu->len;
  m->class_du = (guint32 *)g_array_free(cu, FALSE);
  m->class_dv = (guint32 *)g_array_free(cv, FALSE);
  m->scanner_key = tl_scanner_key(s);
  m->grid_key = tl_image_grid_key(grid);
  return TRUE;
}

guint tl_srm_class(const TlSrm *m, int du, int dv, guint *flags) {
  guint f = (du < 0 ? 2u : 0u) | (dv < 0 ? 4u : 0u);
  guint au = (guint)ABS(du), av = (guint)ABS(dv);
  if (au > m->du_max || av > m->dv_max) {
    if (flags) *flags = f;
    return G_MAXUINT;
  }
  gint c = m->class_of[au * (m->dv_max + 1) + av];
  if (c < 0) {
    f |= 1u;
    c = m->class_of[av * (m->dv_max + 1) + au];
  }
  if (flags) *flags = f;
  return (guint)c;
}

void tl_srm_crystal(const TlSrm *m, guint id, guint *head, guint *u, guint *v) {
  guint per = m->nu * m->nv;
  *head = id / per;
  *u = (id % per) % m->nu;
  *v = (id % per) / m->nu;
}

typedef struct {
  guint32 key;
  float val;
} Entry;

static int entry_cmp(const void *a, const void *b) {
  guint32 x = ((const Entry *)a)->key, y = ((const Entry *)b)->key;
  return x < y ? -1 : x > y;
}

/* One class: the reference LOR from head-0 crystal (0, 0) in relative coordinates (crystal
 * A's face centre at y = z = 0), every voxel of the tube between the two columns. */
static GArray *build_class(const TlSrm *m, guint c, GError **error) {
  Model md = {.py = m->pitch[0], .pz = m->pitch[1], .T = m->depth, .mu = m->prm.mu_per_mm,
              .n = m->prm.samples};
  double du = m->class_du[c], dv = m->class_dv[c];
  double A[3] = {-m->half_gap, 0, 0}, B[3] = {m->half_gap, du * m->pitch[0], dv * m->pitch[1]};
  const TlImageGrid *g = &m->grid;
  guint nx = g->dims[0], planes = m->xsym ? (nx + 1) / 2 : nx;
  double hv[2] = {0.5 * g->voxel_mm[1], 0.5 * g->voxel_mm[2]};
  gint par[2] = {m->ey & 1, m->ez & 1};
  GArray *out = g_array_new(FALSE, FALSE, sizeof(Entry));
  double vmax = 0;
  for (guint ix = 0; ix < planes; ix++) {
    double x = g->origin_mm[0] + ix * g->voxel_mm[0];
    gint mlo[2], mhi[2];
    for (int d = 0; d < 2; d++) {
      /* tube extent at x: extremes over the columns' corners (y linear in the end points,
       * monotone in the end depths), one voxel of margin */
      double lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE, h = 0.5 * m->pitch[d];
      for (int ea = -1; ea <= 1; ea += 2)
        for (int eb = -1; eb <= 1; eb += 2)
          for (int da = 0; da < 2; da++)
            for (int db = 0; db < 2; db++) {
              double xa = A[0] - da * m->depth, xb = B[0] + db * m->depth;
              double w = (x - xa) / (xb - xa), ya = A[d + 1] + ea * h, yb = B[d + 1] + eb * h;
              hull(&lo, &hi, ya + w * (yb - ya));
            }
      mlo[d] = (gint)floor(lo / hv[d]) - 2;
      mhi[d] = (gint)ceil(hi / hv[d]) + 2;
      if (((mlo[d] - par[d]) & 1) != 0) mlo[d]--;
      if (mlo[d] < -M_OFF + 1 || mhi[d] > M_OFF - 1) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                    "system response matrix: direction (%g, %g) spans half-voxel offsets %d to "
                    "%d, beyond the +-%d of the packed keys (use larger voxels)", du, dv,
                    mlo[d], mhi[d], M_OFF - 1);
        g_array_free(out, TRUE);
        return NULL;
      }
    }
    for (gint mz = mlo[1]; mz <= mhi[1]; mz += 2)
      for (gint my = mlo[0]; my <= mhi[0]; my += 2) {
        double P[3] = {x, my * hv[0], mz * hv[1]};
        double h = response(&md, P, A, B);
        if (!(h > 0)) continue;
        Entry e = {pack_key((gint)ix, my, mz), (float)h};
        vmax = MAX(vmax, h);
        g_array_append_val(out, e);
      }
  }
  /* drop the negligible tail */
  guint k = 0;
  for (guint i = 0; i < out->len; i++) {
    Entry e = g_array_index(out, Entry, i);
    if (e.val > m->prm.threshold * vmax) g_array_index(out, Entry, k++) = e;
  }
  g_array_set_size(out, k);
  qsort(out->data, out->len, sizeof(Entry), entry_cmp);
  return out;
}

typedef struct {
  TlSrm *m;
  GArray **classes;
  gint next, failed;
  GError *error;
  GMutex lock;
} Build;

static gpointer build_worker(gpointer data) {
  Build *b = data;
  for (;;) {
    gint c = g_atomic_int_add(&b->next, 1);
    if (c >= (gint)b->m->n_classes || g_atomic_int_get(&b->failed)) break;
    GError *err = NULL;
    b->classes[c] = build_class(b->m, (guint)c, &err);
    if (!b->classes[c]) {
      g_mutex_lock(&b->lock);
      if (!b->error) b->error = err;
      else g_error_free(err);
      g_mutex_unlock(&b->lock);
      g_atomic_int_set(&b->failed, 1);
    }
  }
  return NULL;
}

TlSrm *tl_srm_new(const TlScanner *s, const TlImageGrid *grid, const TlSrmParams *prm,
                  GError **error) {
  TlSrmParams def;
  if (!prm) {
    tl_srm_params_init(&def);
    prm = &def;
  }
  g_autoptr(TlSrm) m = g_new0(TlSrm, 1);
  if (!setup(m, s, grid, prm, error)) return NULL;
  Build b = {.m = m, .classes = g_new0(GArray *, m->n_classes)};
  g_mutex_init(&b.lock);
  guint nt = CLAMP(g_get_num_processors(), 1, 64);
  GThread **th = g_new(GThread *, nt);
  for (guint t = 0; t < nt; t++) th[t] = g_thread_new("srm-build", build_worker, &b);
  for (guint t = 0; t < nt; t++) g_thread_join(th[t]);
  g_free(th);
  g_mutex_clear(&b.lock);
  guint64 total = 0;
  for (guint c = 0; c < m->n_classes && !b.error; c++) total += b.classes[c]->len;
  if (!b.error && total > G_MAXUINT32) {
    g_set_error(&b.error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "system response matrix: %" G_GUINT64_FORMAT " stored elements exceed the "
                "32-bit offsets", total);
  }
  if (!b.error) {
    m->class_ptr = g_new(guint32, m->n_classes + 1);
    m->key = g_new(guint32, MAX(total, 1));
    m->val = g_new(float, MAX(total, 1));
    guint64 at = 0;
    for (guint c = 0; c < m->n_classes; c++) {
      m->class_ptr[c] = (guint32)at;
      for (guint i = 0; i < b.classes[c]->len; i++, at++) {
        Entry e = g_array_index(b.classes[c], Entry, i);
        m->key[at] = e.key;
        m->val[at] = e.val;
      }
    }
    m->class_ptr[m->n_classes] = (guint32)at;
  }
  for (guint c = 0; c < m->n_classes; c++)
    if (b.classes[c]) g_array_free(b.classes[c], TRUE);
  g_free(b.classes);
  if (b.error) {
    g_propagate_error(error, b.error);
    return NULL;
  }
  return g_steal_pointer(&m);
}

void tl_srm_free(TlSrm *m) {
  if (!m) return;
  g_free(m->class_of);
  g_free(m->class_du);
  g_free(m->class_dv);
  g_free(m->class_ptr);
  g_free(m->key);
  g_free(m->val);
  g_free(m->scanner_key);
  g_free(m->grid_key);
  g_free(m);
}

float tl_srm_element(const TlSrm *m, guint a, guint b, guint64 voxel) {
  guint ha, ua, va, hb, ub, vb;
  tl_srm_crystal(m, a, &ha, &ua, &va);
  tl_srm_crystal(m, b, &hb, &ub, &vb);
  if (ha == hb || ha > 1 || hb > 1) return 0.0f;
  if (ha == 1) {
    guint t;
    t = ua, ua = ub, ub = t;
    t = va, va = vb, vb = t;
  }
  const guint *n = m->grid.dims;
  if (voxel >= (guint64)n[0] * n[1] * n[2]) return 0.0f;
  gint ix = (gint)(voxel % n[0]), iy = (gint)(voxel / n[0] % n[1]),
       iz = (gint)(voxel / ((guint64)n[0] * n[1]));
  gint du = (gint)ub - (gint)ua, dv = (gint)vb - (gint)va;
  /* relative half-voxel offsets from crystal A: iy - u_a D = (m_y + ey) / 2 */
  gint my = 2 * (iy - (gint)(ua * m->D)) - m->ey, mz = 2 * (iz - (gint)(va * m->D)) - m->ez;
  gint D = (gint)m->D;
  if (m->xsym && ix > (gint)n[0] - 1 - ix) { /* point reflection through the LOR midpoint */
    ix = (gint)n[0] - 1 - ix;
    my = 2 * du * D - my;
    mz = 2 * dv * D - mz;
  }
  guint flags;
  guint c = tl_srm_class(m, du, dv, &flags);
  if (c == G_MAXUINT) return 0.0f;
  if (flags & 2u) my = -my;
  if (flags & 4u) mz = -mz;
  if (flags & 1u) {
    gint t = my;
    my = mz;
    mz = t;
  }
  if (my <= -M_OFF || my >= M_OFF || mz <= -M_OFF || mz >= M_OFF) return 0.0f;
  guint32 key = pack_key((gint)ix, my, mz);
  guint32 lo = m->class_ptr[c], hi = m->class_ptr[c + 1];
  while (lo < hi) {
    guint32 mid = lo + (hi - lo) / 2;
    if (m->key[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < m->class_ptr[c + 1] && m->key[lo] == key ? m->val[lo] : 0.0f;
}

void tl_srm_tables(const TlSrm *m, TlSrmTables *t) {
  *t = (TlSrmTables){.nx = m->grid.dims[0], .ny = m->grid.dims[1], .nz = m->grid.dims[2],
                     .D = m->D, .ey = m->ey, .ez = m->ez, .interchange = m->interchange,
                     .xsym = m->xsym, .n_classes = m->n_classes, .class_ptr = m->class_ptr,
                     .key = m->key, .val = m->val, .nu = m->nu, .nv = m->nv};
}

const TlImageGrid *tl_srm_grid(const TlSrm *m) { return &m->grid; }

void tl_srm_sizes(const TlSrm *m, gboolean count_full_nnz, TlSrmSizes *out) {
  memset(out, 0, sizeof *out);
  out->n_classes = m->n_classes;
  out->stored = m->class_ptr[m->n_classes];
  out->stored_bytes = out->stored * 8 + 4ull * (m->n_classes + 1);
  out->n_lors = (guint64)m->nu * m->nv * m->nu * m->nv;
  out->n_voxels = tl_image_grid_n_voxels(&m->grid);
  if (!count_full_nnz) return;
  /* every LOR: its class's elements (doubled by the x reflection off the middle plane) that
   * land inside the grid */
  const guint *n = m->grid.dims;
  guint64 nnz = 0;
  for (guint va = 0; va < m->nv; va++)
    for (guint ua = 0; ua < m->nu; ua++)
      for (guint vb = 0; vb < m->nv; vb++)
        for (guint ub = 0; ub < m->nu; ub++) {
          gint du = (gint)ub - (gint)ua, dv = (gint)vb - (gint)va;
          guint flags, c = tl_srm_class(m, du, dv, &flags);
          for (guint32 k = m->class_ptr[c]; k < m->class_ptr[c + 1]; k++) {
            guint32 key = m->key[k];
            gint ix, a, b;
            unpack_key(key, &ix, &a, &b);
            gint my = (flags & 1u) ? b : a, mz = (flags & 1u) ? a : b;
            if (flags & 2u) my = -my;
            if (flags & 4u) mz = -mz;
            for (int mirror = 0; mirror < 2; mirror++) {
              gint x = ix, yy = my, zz = mz;
              if (mirror) {
                if (!m->xsym || ix == (gint)n[0] - 1 - ix) break;
                x = (gint)n[0] - 1 - ix;
                yy = 2 * du * (gint)m->D - my;
                zz = 2 * dv * (gint)m->D - mz;
              }
              gint iy = (yy + m->ey) / 2 + (gint)(ua * m->D), iz = (zz + m->ez) / 2 + (gint)(va * m->D);
              if (x >= 0 && iy >= 0 && iz >= 0 && x < (gint)n[0] && iy < (gint)n[1] && iz < (gint)n[2])
                nnz++;
            }
          }
        }
  out->full_nnz = nnz;
}

/* ---- cache file ---- */

#define SRM_MAGIC "TLSRM001"

static char *header_text(const TlSrm *m) {
  char mu[32], depth[32], thr[32];
  tl_format_double(mu, m->prm.mu_per_mm);
  tl_format_double(depth, m->depth);
  tl_format_double(thr, m->prm.threshold);
  return g_strdup_printf("scanner = %s\ngrid = %s\nmu = %s\ndepth = %s\nsamples = %u\n"
                         "threshold = %s\nclasses = %u\n", m->scanner_key, m->grid_key, mu, depth,
                         m->prm.samples, thr, m->n_classes);
}

gboolean tl_srm_save(const TlSrm *m, const char *path, GError **error) {
  g_autofree char *tmp = NULL;
  FILE *f = tl_file_begin(path, &tmp, error);
  if (!f) return FALSE;
  g_autofree char *hdr = header_text(m);
  guint32 hlen = (guint32)strlen(hdr);
  guint64 n = m->class_ptr[m->n_classes];
  gboolean ok = fwrite(SRM_MAGIC, 1, 8, f) == 8 && fwrite(&hlen, 4, 1, f) == 1 &&
                fwrite(hdr, 1, hlen, f) == hlen && fwrite(&n, 8, 1, f) == 1 &&
                fwrite(m->class_ptr, 4, m->n_classes + 1, f) == m->n_classes + 1 &&
                (n == 0 || (fwrite(m->key, 4, n, f) == n && fwrite(m->val, 4, n, f) == n));
  if (!ok) {
    tl_file_abort(f, &tmp);
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: write failed", path);
    return FALSE;
  }
  return tl_file_commit(f, &tmp, path, error);
}

TlSrm *tl_srm_load(const char *path, const TlScanner *s, const TlImageGrid *grid,
                   const TlSrmParams *prm, GError **error) {
  TlSrmParams def;
  if (!prm) {
    tl_srm_params_init(&def);
    prm = &def;
  }
  if (!tl_file_check_input(path, "system response matrix", error)) return NULL;
  g_autoptr(TlSrm) m = g_new0(TlSrm, 1);
  if (!setup(m, s, grid, prm, error)) return NULL;
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &data, &len, error)) return NULL;
  g_autofree char *want = header_text(m);
  guint32 hlen = 0;
  if (len < 12 || memcmp(data, SRM_MAGIC, 8) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: not a system response matrix (expected the magic '" SRM_MAGIC "')", path);
    return NULL;
  }
  memcpy(&hlen, data + 8, 4);
  if (hlen > len - 12 || len - 12 - hlen < 8) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: header length %u does not fit the %" G_GSIZE_FORMAT "-byte file", path,
                hlen, len);
    return NULL;
  }
  if (hlen != strlen(want) || memcmp(data + 12, want, hlen) != 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: made for another scanner, grid or response model (header differs from the "
                "expected:\n%s)", path, want);
    return NULL;
  }
  guint64 n = 0;
  gsize at = 12 + hlen;
  memcpy(&n, data + at, 8);
  at += 8;
  guint64 need = 4ull * (m->n_classes + 1);
  if (n > TL_SRM_MAX_ELEMENTS || n > G_MAXUINT32 || len - at != need + 8 * n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: field 'elements' = %" G_GUINT64_FORMAT " (expected at most %" G_GUINT64_FORMAT " and a file "
                "of exactly %" G_GUINT64_FORMAT " bytes after the header, found %" G_GSIZE_FORMAT
                ")", path, n, (guint64)TL_SRM_MAX_ELEMENTS, (guint64)(need + 8 * MIN(n, TL_SRM_MAX_ELEMENTS)),
                len - at);
    return NULL;
  }
  m->class_ptr = g_new(guint32, m->n_classes + 1);
  memcpy(m->class_ptr, data + at, need);
  at += need;
  m->key = g_new(guint32, MAX(n, 1));
  m->val = g_new(float, MAX(n, 1));
  memcpy(m->key, data + at, 4 * n);
  memcpy(m->val, data + at + 4 * n, 4 * n);
  /* offsets non-decreasing from 0 to n, keys sorted within classes and in range, values
   * finite and positive: anything else would send kernels out of bounds */
  gboolean ok = m->class_ptr[0] == 0 && m->class_ptr[m->n_classes] == n;
  for (guint c = 0; ok && c < m->n_classes; c++) ok = m->class_ptr[c] <= m->class_ptr[c + 1];
  for (guint c = 0; ok && c < m->n_classes; c++)
    for (guint32 k = m->class_ptr[c]; ok && k < m->class_ptr[c + 1]; k++)
      ok = key_ix(m->key[k]) < (m->xsym ? (grid->dims[0] + 1) / 2 : grid->dims[0]) &&
           (k == m->class_ptr[c] || m->key[k - 1] < m->key[k]) && isfinite(m->val[k]) &&
           m->val[k] > 0;
  if (!ok) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "%s: class offsets or elements out of order or range (a damaged file)", path);
    return NULL;
  }
  return g_steal_pointer(&m);
}

TlSrm *tl_srm_cached(const TlScanner *s, const TlImageGrid *grid, const TlSrmParams *prm,
                     gboolean *from_cache, GError **error) {
  TlSrmParams def;
  if (!prm) {
    tl_srm_params_init(&def);
    prm = &def;
  }
  if (from_cache) *from_cache = FALSE;
  g_autofree char *skey = tl_scanner_key(s), *gkey = tl_image_grid_key(grid);
  g_autofree char *id = g_strdup_printf("%s|%s|%.17g|%.17g|%u|%.17g", skey, gkey, prm->mu_per_mm,
                                        prm->depth_mm, prm->samples, prm->threshold);
  g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, id, -1);
  g_autofree char *name = g_strdup_printf("srm-%.32s.bin", hash);
  g_autofree char *dir = g_build_filename(g_get_user_cache_dir(), "tomolab", NULL);
  g_autofree char *path = g_build_filename(dir, name, NULL);
  if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    TlSrm *m = tl_srm_load(path, s, grid, prm, NULL);
    if (m) {
      if (from_cache) *from_cache = TRUE;
      return m;
    }
  }
  TlSrm *m = tl_srm_new(s, grid, prm, error);
  if (!m) return NULL;
  /* a cache that cannot be written is not an error: the matrix is there */
  if (g_mkdir_with_parents(dir, 0755) == 0) tl_srm_save(m, path, NULL);
  return m;
}
