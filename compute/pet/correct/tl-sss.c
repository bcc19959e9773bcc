/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Single scatter simulation (Watson 2000; TOF: Watson 2007), the estimate's interpolation to
 * every crystal pair and the tail fit; the formulas are in tl-sss.h. The file format is in
 * tl-sss-file.c. CPU, on a GThreadPool: per chunk of scatter points, first every leg (scatter
 * point, sampled detector: line integrals, TOF tables), then every sampled pair sums its
 * chunk's scatter points in a fixed order, so the result does not depend on the threads. */
#include "tl-sss.h"
#include "tl-progress.h"
#include "tl-attenuation.h"
#include <math.h>
#include <string.h>

#define SQRT2 1.4142135623730951
#define INV_SQRT_2PI 0.3989422804014327
#define FWHM_TO_SIGMA (1.0 / 2.3548200450309493) /* 1 / (2 sqrt(2 ln 2)) */
#define CHUNK_POINTS 64   /* scatter points whose legs are held at once */
#define PAIRS_PER_TASK 64 /* sampled pairs per task of the pair phase */
/* The TOF kernel H is taken as 0 beyond w/2 + TOF_REACH sigma (Phi(-5) = 2.9e-7 of a bin's
 * weight), and the leg tables have nodes every sigma / TOF_NODES_PER_SIGMA. */
#define TOF_REACH 5.0
#define TOF_NODES_PER_SIGMA 2.0

/* ---- physics ---- */

void tl_energy_window_init(TlEnergyWindow *w) {
  *w = (TlEnergyWindow){.low_kev = 425.0, .high_kev = 650.0, .fwhm_511 = 0.12};
}

void tl_energy_window_from_scanner(TlEnergyWindow *w, const TlScanner *scanner) {
  double win[2], res;
  tl_scanner_energy(scanner, win, &res);
  *w = (TlEnergyWindow){.low_kev = win[0], .high_kev = win[1], .fwhm_511 = res};
}

double tl_energy_window_efficiency(const TlEnergyWindow *w, double e) {
  if (w->fwhm_511 <= 0) return e >= w->low_kev && e <= w->high_kev ? 1.0 : 0.0;
  double s = w->fwhm_511 * sqrt(TL_SSS_E0_KEV * e) * FWHM_TO_SIGMA;
  /* erfc keeps the tail below the window (scattered photons) accurate */
  return 0.5 * (erfc((w->low_kev - e) / (SQRT2 * s)) - erfc((w->high_kev - e) / (SQRT2 * s)));
}

/* Klein-Nishina total cross section per electron in units of r_e^2, alpha = E / m_e c^2 (Evans
 * 1955): 2 pi { (1+a)/a^2 [2(1+a)/(1+2a) - ln(1+2a)/a] + ln(1+2a)/(2a) - (1+3a)/(1+2a)^2 }. */
static double kn_total(double a) {
  double l = log1p(2 * a);
  return 2 * G_PI * ((1 + a) / (a * a) * (2 * (1 + a) / (1 + 2 * a) - l / a) + l / (2 * a) -
                     (1 + 3 * a) / ((1 + 2 * a) * (1 + 2 * a)));
}

/* dsigma/dOmega in units of r_e^2 for a 511 keV photon scattered by theta (c = cos theta):
 * (1/2) P^2 (P + 1/P - sin^2 theta), P = E'/E = 1 / (2 - c). */
static double kn_diff(double c) {
  double P = 1.0 / (2.0 - c);
  return 0.5 * P * P * (P + 1.0 / P - (1.0 - c * c));
}

/* ---- parameters and the scanner ---- */

void tl_sss_params_init(TlSssParams *p) {
  *p = (TlSssParams){.voxel_mm = 10, .scatter_mm = 20, .mu_threshold = 0.001,
                     .detector_mm = 40}; /* window all 0: the scanner's */
}

static gboolean check_params(const TlSssParams *p, GError **error) {
  const TlEnergyWindow *w = &p->window;
  const char *bad = NULL;
  if (!(isfinite(w->low_kev) && isfinite(w->high_kev) && w->low_kev > 0 &&
        w->high_kev > w->low_kev))
    bad = "an energy window 0 < low_kev < high_kev, both finite";
  else if (!(isfinite(w->fwhm_511) && w->fwhm_511 >= 0 && w->fwhm_511 < 1))
    bad = "an energy resolution fwhm_511 in [0, 1)";
  else if (!(isfinite(p->voxel_mm) && p->voxel_mm > 0 && isfinite(p->scatter_mm) &&
             p->scatter_mm > 0))
    bad = "voxel_mm and scatter_mm finite and > 0";
  else if (!(isfinite(p->mu_threshold) && p->mu_threshold >= 0))
    bad = "mu_threshold finite and >= 0";
  else if (!(isfinite(p->detector_mm) && p->detector_mm >= 0))
    bad = "detector_mm finite and >= 0 (0 = every crystal)";
  else if (p->n_threads > 1024)
    bad = "at most 1024 threads";
  if (!bad) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "SSS parameters: expected %s", bad);
  return FALSE;
}

/* Ring scanners: crystal id = ring * crystals_per_ring + i. */
static gboolean check_ring_scanner(const TlScanner *s, const char *what, GError **error) {
  gboolean ok = s->kind == TL_SCANNER_RING && s->crystals_per_ring >= 1 && s->n_rings >= 1 &&
                (guint64)s->crystals_per_ring * s->n_rings == s->n_crystals;
  for (guint i = 0; ok && i < s->n_crystals; i++) ok = s->crystals[i].ring == i / s->crystals_per_ring;
  if (!ok)
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "%s: scanner '%s' is not a ring scanner with crystal id = ring x "
                "crystals_per_ring + i (the sampled detectors are interpolated around the rings)",
                what, s->name ? s->name : "?");
  return ok;
}

/* ---- the coarse grid ---- */

typedef struct {
  TlImageGrid grid;
  float *mu, *act;
  double lo[3];
} Coarse;

static void coarse_clear(Coarse *c) {
  g_free(c->mu);
  g_free(c->act);
}

/* Block means of `im` over f[0] x f[1] x f[2] voxels (voxels beyond the image count as 0). */
static void block_mean(const TlImage *im, const guint f[3], const TlImageGrid *cg, float *out) {
  const TlImageGrid *g = &im->grid;
  guint64 n = tl_image_grid_n_voxels(cg);
  double *acc = g_new0(double, n);
  for (guint z = 0; z < g->dims[2]; z++)
    for (guint y = 0; y < g->dims[1]; y++) {
      const float *row = im->data + ((guint64)z * g->dims[1] + y) * g->dims[0];
      double *crow = acc + ((guint64)(z / f[2]) * cg->dims[1] + y / f[1]) * cg->dims[0];
      for (guint x = 0; x < g->dims[0]; x++) crow[x / f[0]] += row[x];
    }
  double inv = 1.0 / ((double)f[0] * f[1] * f[2]);
  for (guint64 i = 0; i < n; i++) out[i] = (float)(acc[i] * inv);
  g_free(acc);
}

static void coarse_make(Coarse *c, const TlImage *act, const TlImage *mu, double voxel_mm) {
  const TlImageGrid *g = &mu->grid;
  guint f[3];
  for (int k = 0; k < 3; k++) {
    f[k] = (guint)MAX(1.0, floor(voxel_mm / g->voxel_mm[k] + 0.5));
    f[k] = MIN(f[k], g->dims[k]);
    c->grid.dims[k] = (g->dims[k] + f[k] - 1) / f[k];
    c->grid.voxel_mm[k] = (float)(f[k] * (double)g->voxel_mm[k]);
    c->grid.origin_mm[k] = (float)(g->origin_mm[k] + 0.5 * (f[k] - 1) * g->voxel_mm[k]);
    c->lo[k] = c->grid.origin_mm[k] - 0.5 * c->grid.voxel_mm[k];
  }
  guint64 n = tl_image_grid_n_voxels(&c->grid);
  c->mu = g_new(float, n);
  c->act = g_new(float, n);
  block_mean(mu, f, &c->grid, c->mu);
  block_mean(act, f, &c->grid, c->act);
}

/* The chords of the segment a -> b through the coarse grid, a inside the grid's box:
 * voxel index and [t0, t1] in mm from a (Amanatides & Woo; each crossing computed from its
 * plane, never accumulated). Returns the number of chords written (at most dims summed + 1). */
typedef struct {
  guint64 voxel;
  double t0, t1;
} Chord;

static guint walk(const Coarse *c, const double a[3], const double b[3], Chord *out,
                  double *length) {
  const TlImageGrid *g = &c->grid;
  double d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  double L = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  *length = L;
  if (!(L > 0)) return 0;
  int idx[3], step[3];
  double v[3];
  for (int k = 0; k < 3; k++) {
    v[k] = g->voxel_mm[k];
    int i = (int)floor((a[k] - c->lo[k]) / v[k]);
    if (i < 0 || i >= (int)g->dims[k]) return 0; /* starts outside: nothing (never for SSS) */
    idx[k] = i;
    step[k] = d[k] > 0 ? 1 : d[k] < 0 ? -1 : 0;
  }
  guint n = 0;
  double t = 0;
  for (;;) {
    double tn = 1.0;
    int axis = -1;
    for (int k = 0; k < 3; k++) {
      if (!step[k]) continue;
      double plane = c->lo[k] + (idx[k] + (step[k] > 0)) * v[k];
      double tk = (plane - a[k]) / d[k];
      if (tk < tn) tn = tk, axis = k;
    }
    if (tn < t) tn = t; /* round-off at a start on a plane: a chord of length 0 */
    out[n++] = (Chord){(guint64)idx[0] + g->dims[0] * ((guint64)idx[1] + g->dims[1] * (guint64)idx[2]),
                       t * L, tn * L};
    if (axis < 0) break; /* reached b */
    idx[axis] += step[axis];
    if (idx[axis] < 0 || idx[axis] >= (int)g->dims[axis]) break;
    t = tn;
  }
  return n;
}

/* ---- scatter points and detectors ---- */

typedef struct {
  double p[3];
  double mu_v; /* mu_S V_S (mm^2) */
} Point;

static GArray *scatter_points(const Coarse *c, double scatter_mm, double thr) {
  const TlImageGrid *g = &c->grid;
  guint s[3], nb[3];
  for (int k = 0; k < 3; k++) {
    s[k] = (guint)MAX(1.0, floor(scatter_mm / g->voxel_mm[k] + 0.5));
    s[k] = MIN(s[k], g->dims[k]);
    nb[k] = (g->dims[k] + s[k] - 1) / s[k];
  }
  double cell = (double)g->voxel_mm[0] * g->voxel_mm[1] * g->voxel_mm[2];
  double volume = cell * s[0] * s[1] * s[2];
  GArray *pts = g_array_new(FALSE, FALSE, sizeof(Point));
  for (guint bz = 0; bz < nb[2]; bz++)
    for (guint by = 0; by < nb[1]; by++)
      for (guint bx = 0; bx < nb[0]; bx++) {
        double sum = 0, m[3] = {0, 0, 0};
        for (guint z = bz * s[2]; z < MIN(g->dims[2], (bz + 1) * s[2]); z++)
          for (guint y = by * s[1]; y < MIN(g->dims[1], (by + 1) * s[1]); y++)
            for (guint x = bx * s[0]; x < MIN(g->dims[0], (bx + 1) * s[0]); x++) {
              double mu = c->mu[x + (guint64)g->dims[0] * (y + (guint64)g->dims[1] * z)];
              if (mu <= 0) continue;
              double ctr[3];
              tl_image_grid_voxel_centre(g, x, y, z, ctr);
              sum += mu;
              for (int k = 0; k < 3; k++) m[k] += mu * ctr[k];
            }
        double mean = sum / (s[0] * s[1] * s[2]);
        if (!(sum > 0) || mean < thr) continue;
        /* the block's mean mu and whole volume: mu_S V_S = cell x the sum of its voxels' mu */
        Point pt = {{m[0] / sum, m[1] / sum, m[2] / sum}, mean * volume};
        g_array_append_val(pts, pt);
      }
  return pts;
}

typedef struct {
  double p[3], n[3];
  double area;
} Det;

/* n_t transaxial positions t_k = floor(k cpr / n_t), n_r rings round(m (R - 1)/(n_r - 1)). */
static void sample_detectors(const TlScanner *s, double detector_mm, guint *n_t, guint *n_r,
                             guint **tr, guint **rg) {
  guint cpr = s->crystals_per_ring, R = s->n_rings;
  guint nt = cpr, nr = R;
  if (detector_mm > 0) {
    double circ = 0;
    for (guint i = 0; i < cpr; i++) {
      const float *p = s->crystals[i].centre, *q = s->crystals[(i + 1) % cpr].centre;
      circ += hypot(p[0] - q[0], p[1] - q[1]);
    }
    double ext = fabs(s->crystals[(R - 1) * cpr].centre[2] - s->crystals[0].centre[2]);
    nt = (guint)CLAMP(ceil(circ / detector_mm), 1.0, (double)cpr);
    nr = R == 1 ? 1 : (guint)CLAMP(ceil(ext / detector_mm) + 1, 2.0, (double)R);
  }
  *tr = g_new(guint, nt);
  *rg = g_new(guint, nr);
  for (guint k = 0; k < nt; k++) (*tr)[k] = (guint)((guint64)k * cpr / nt);
  for (guint m = 0; m < nr; m++)
    (*rg)[m] = nr == 1 ? 0 : (guint)floor(m * (double)(R - 1) / (nr - 1) + 0.5);
  *n_t = nt;
  *n_r = nr;
}

/* ---- the computation ---- */

typedef struct {
  double R, u[3];
  double M, lam;   /* int mu, int lambda from the point to the detector */
  double sig;      /* geometric cross section: area x cos(incidence), 0 facing away */
  /* TOF: G at nodes y0 + k h, k < n (values then slopes), NULL when lambda = 0 on the leg */
  float *tab;
  guint n;
  double y0;
} Leg;

typedef struct {
  const TlSssParams *p;
  const Coarse *c;
  const Point *pts;
  const Det *det;
  guint D;
  /* energy terms */
  double eps0;
  double c_cut; /* below this cos(theta) the window keeps < 1e-30 of the photons: skipped */
  /* TOF */
  gboolean tof;
  guint nb;
  gint half;
  double w, sig_t, reach, h;
  /* the current chunk of points [s0, s1) and their legs (s - s0) * D + d */
  guint s0, s1;
  Leg *legs;
  double *acc;     /* sampled pairs x max(nb, 1) */
  guint64 n_pairs;
  GCancellable *cancel;
  gint stop;
} Job;

static double Phi(double x) { return 0.5 * erfc(-x / SQRT2); }

/* int H over u and H itself: K(u) = sig [Psi(x+) - Psi(x-)], H(u) = Phi(x+) - Phi(x-),
 * x+- = (u +- w/2)/sig, Psi(x) = x Phi(x) + phi(x). */
static void tof_kernel(const Job *j, double u, double *K, double *H) {
  double xp = (u + 0.5 * j->w) / j->sig_t, xm = (u - 0.5 * j->w) / j->sig_t;
  if (xm > 8) { /* Psi(x) = x to double precision */
    *K = j->w;
    *H = 0;
    return;
  }
  if (xp < -8) {
    *K = 0;
    *H = 0;
    return;
  }
  double pp = Phi(xp), pm = Phi(xm);
  double psip = xp * pp + INV_SQRT_2PI * exp(-0.5 * xp * xp);
  double psim = xm * pm + INV_SQRT_2PI * exp(-0.5 * xm * xm);
  *K = j->sig_t * (psip - psim);
  *H = pp - pm;
}

/* The leg's TOF table: G(y) = sum over chords lambda [K(y + t1) - K(y + t0)] and its slope,
 * from the jumps of lambda along the leg. */
static void leg_table(const Job *j, Leg *L, const Chord *ch, guint nc) {
  double *bt = g_new(double, 2 * nc + 2), *bc = g_new(double, 2 * nc + 2);
  guint nbd = 0;
  double tmin = G_MAXDOUBLE, tmax = -G_MAXDOUBLE;
  for (guint i = 0; i < nc; i++) {
    double lam = j->c->act[ch[i].voxel];
    if (lam == 0 || ch[i].t1 <= ch[i].t0) continue;
    if (nbd && bt[nbd - 1] == ch[i].t0) bc[nbd - 1] -= lam;
    else bt[nbd] = ch[i].t0, bc[nbd++] = -lam;
    bt[nbd] = ch[i].t1, bc[nbd++] = lam;
    tmin = MIN(tmin, ch[i].t0);
    tmax = MAX(tmax, ch[i].t1);
  }
  if (nbd) {
    L->y0 = -tmax - j->reach;
    L->n = (guint)ceil((tmax - tmin + 2 * j->reach) / j->h) + 2;
    L->tab = g_new(float, 2 * (gsize)L->n);
    for (guint k = 0; k < L->n; k++) {
      double y = L->y0 + k * j->h, G = 0, dG = 0;
      for (guint i = 0; i < nbd; i++) {
        double K, H;
        tof_kernel(j, y + bt[i], &K, &H);
        G += bc[i] * K;
        dG += bc[i] * H;
      }
      L->tab[k] = (float)G;
      L->tab[L->n + k] = (float)dG;
    }
  }
  g_free(bt);
  g_free(bc);
}

/* G of a leg at y: cubic Hermite between the nodes (exact values and slopes); 0 outside. */
static double leg_g(const Leg *L, double h, double y) {
  if (!L->tab) return 0;
  double x = (y - L->y0) / h;
  if (!(x >= 0) || x >= L->n - 1) return 0;
  guint k = (guint)x;
  double t = x - k, t2 = t * t, t3 = t2 * t;
  double g0 = L->tab[k], g1 = L->tab[k + 1], d0 = L->tab[L->n + k] * h,
         d1 = L->tab[L->n + k + 1] * h;
  return (2 * t3 - 3 * t2 + 1) * g0 + (t3 - 2 * t2 + t) * d0 + (-2 * t3 + 3 * t2) * g1 +
         (t3 - t2) * d1;
}

static void legs_task(gpointer data, gpointer user) {
  Job *j = user;
  guint s = j->s0 + GPOINTER_TO_UINT(data) - 1; /* task i: point s0 + i of the chunk */
  if (g_atomic_int_get(&j->stop)) return;
  if (g_cancellable_is_cancelled(j->cancel)) {
    g_atomic_int_set(&j->stop, 1);
    return;
  }
  const TlImageGrid *g = &j->c->grid;
  guint maxc = g->dims[0] + g->dims[1] + g->dims[2] + 4;
  Chord *ch = g_new(Chord, maxc);
  const Point *pt = &j->pts[s];
  for (guint d = 0; d < j->D; d++) {
    Leg *L = &j->legs[(gsize)(s - j->s0) * j->D + d];
    const Det *dt = &j->det[d];
    double len;
    guint nc = walk(j->c, pt->p, dt->p, ch, &len);
    L->R = len;
    double cosi = 0;
    for (int k = 0; k < 3; k++) {
      L->u[k] = len > 0 ? (dt->p[k] - pt->p[k]) / len : 0;
      cosi -= dt->n[k] * L->u[k];
    }
    L->sig = cosi > 0 ? dt->area * cosi : 0;
    double M = 0, lam = 0;
    for (guint i = 0; i < nc; i++) {
      double l = ch[i].t1 - ch[i].t0;
      M += l * j->c->mu[ch[i].voxel];
      lam += l * j->c->act[ch[i].voxel];
    }
    L->M = M;
    L->lam = lam;
    L->tab = NULL;
    if (j->tof && lam > 0 && L->sig > 0) leg_table(j, L, ch, nc);
  }
  g_free(ch);
}

/* Pair (da, db) with da <= db: the sum over the chunk's scatter points into acc. */
static void pair_sum(Job *j, guint da, guint db, double *acc) {
  const TlSssParams *p = j->p;
  gboolean iso = (p->flags & TL_SSS_ISOTROPIC) != 0, noatt = (p->flags & TL_SSS_NO_ATTENUATION) != 0;
  double kn0 = kn_total(1.0);
  for (guint s = j->s0; s < j->s1; s++) {
    const Leg *A = &j->legs[(gsize)(s - j->s0) * j->D + da];
    const Leg *B = &j->legs[(gsize)(s - j->s0) * j->D + db];
    if (A->sig == 0 || B->sig == 0 || (A->lam == 0 && B->lam == 0)) continue;
    /* theta: from the path arriving from A's side (-u_A) to the path towards B (u_B) */
    double c = -(A->u[0] * B->u[0] + A->u[1] * B->u[1] + A->u[2] * B->u[2]);
    c = CLAMP(c, -1.0, 1.0);
    if (c < j->c_cut) continue;
    double P = 1.0 / (2.0 - c), e1 = TL_SSS_E0_KEV * P;
    double f = iso ? 1.0 / (4 * G_PI) : kn_diff(c) / kn0; /* per sr, per unit mu */
    double eps1 = tl_energy_window_efficiency(&p->window, e1);
    double pre = j->pts[s].mu_v * f * A->sig * B->sig /
                 (4 * G_PI * A->R * A->R * B->R * B->R) * j->eps0 * eps1;
    if (pre == 0) continue;
    double rho = kn_total(P) / kn0; /* mu(E') / mu(E0) */
    double atA = noatt ? 1.0 : exp(-(A->M + rho * B->M)); /* I^A: scattered on the B leg */
    double atB = noatt ? 1.0 : exp(-(rho * A->M + B->M));
    if (!j->tof) {
      acc[0] += pre * (atA * A->lam + atB * B->lam);
      continue;
    }
    double o = 0.5 * (A->R - B->R);
    for (gint b = -j->half; b <= j->half; b++) {
      double cb = b * j->w;
      acc[b + j->half] += pre * (atA * leg_g(A, j->h, cb - o) + atB * leg_g(B, j->h, o - cb));
    }
  }
}

static void pairs_task(gpointer data, gpointer user) {
  Job *j = user;
  guint64 first = (GPOINTER_TO_SIZE(data) - 1) * (guint64)PAIRS_PER_TASK;
  guint64 last = MIN(first + PAIRS_PER_TASK, j->n_pairs);
  if (g_atomic_int_get(&j->stop)) return;
  guint nb = MAX(j->nb, 1);
  /* db from the first index: tri(0, db) <= first < tri(0, db + 1) */
  guint db = (guint)floor((sqrt(8.0 * (double)first + 1.0) - 1.0) / 2.0);
  while (tl_scatter_tri(0, db) > first) db--;
  while (tl_scatter_tri(0, db + 1) <= first) db++;
  guint da = (guint)(first - tl_scatter_tri(0, db));
  for (guint64 i = first; i < last; i++) {
    pair_sum(j, da, db, j->acc + i * nb);
    if (++da > db) da = 0, db++;
  }
}

static gboolean run_pool(GFunc fn, Job *j, guint n_tasks, guint threads, GError **error) {
  if (threads <= 1 || n_tasks <= 1) {
    for (guint i = 0; i < n_tasks; i++) fn(GUINT_TO_POINTER(i + 1), j);
    return TRUE;
  }
  GThreadPool *pool = g_thread_pool_new(fn, j, (gint)MIN(threads, n_tasks), FALSE, error);
  if (!pool) return FALSE;
  for (guint i = 0; i < n_tasks; i++) g_thread_pool_push(pool, GUINT_TO_POINTER(i + 1), NULL);
  g_thread_pool_free(pool, FALSE, TRUE);
  return TRUE;
}

static void free_legs(Job *j, guint n) {
  for (guint i = 0; i < n; i++) g_free(j->legs[i].tab);
}

TlScatterEstimate *tl_sss_estimate(const TlScanner *scanner, const TlImage *activity,
                                   const TlImage *mu, const TlSssParams *params,
                                   GCancellable *cancel, TlSssStats *stats, GError **error) {
  TlSssParams p;
  if (params) p = *params;
  else tl_sss_params_init(&p);
  if (!scanner || !activity || !mu) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "SSS: no %s",
                !scanner ? "scanner" : !activity ? "activity image" : "mu-map");
    return NULL;
  }
  if (p.window.low_kev == 0 && p.window.high_kev == 0 && p.window.fwhm_511 == 0)
    tl_energy_window_from_scanner(&p.window, scanner);
  if (!check_params(&p, error) || !tl_scanner_validate(scanner, error) ||
      !check_ring_scanner(scanner, "SSS", error) || !tl_image_grid_validate(&mu->grid, error) ||
      !tl_pet_check_attenuation(mu, &mu->grid, error) ||
      !tl_image_check_nonnegative(activity, "SSS activity image", error))
    return NULL;
  if (!tl_image_grid_equal(&activity->grid, &mu->grid)) {
    g_autofree char *a = tl_image_grid_key(&activity->grid), *m = tl_image_grid_key(&mu->grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "SSS: the activity image is on grid %s "
                "but the mu-map on %s: expected one grid", a, m);
    return NULL;
  }
  if (p.tof && scanner->tof_bins == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "TOF-SSS: scanner '%s' has no TOF bins",
                scanner->name);
    return NULL;
  }
  g_autoptr(TlScatterEstimate) e = g_new0(TlScatterEstimate, 1);
  e->scanner = tl_scanner_copy(scanner);
  e->scale = 1.0;
  sample_detectors(scanner, p.detector_mm, &e->n_t, &e->n_r, &e->transaxial, &e->ring);
  guint D = e->n_t * e->n_r;
  Job j = {.p = &p, .D = D, .tof = p.tof, .cancel = cancel};
  if (p.tof) {
    j.half = (gint)(scanner->tof_bins - 1) / 2;
    j.nb = e->n_bins = 2 * j.half + 1;
    j.w = scanner->tof_bin_mm;
    j.sig_t = tl_scanner_tof_sigma_mm(scanner);
    if (!(j.w > 0 && j.sig_t > 0 && isfinite(j.w) && isfinite(j.sig_t))) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "TOF-SSS: scanner '%s' has TOF bins of "
                  "%g mm and a resolution of %g mm: expected both > 0", scanner->name, j.w,
                  j.sig_t);
      return NULL;
    }
    j.reach = 0.5 * j.w + TOF_REACH * j.sig_t;
    j.h = j.sig_t / TOF_NODES_PER_SIGMA;
  }
  j.n_pairs = tl_scatter_estimate_n_pairs(e);
  guint nb = MAX(e->n_bins, 1);
  if (j.n_pairs > TL_SCATTER_MAX_VALUES / nb) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "SSS: %u x %u sampled detectors and %u "
                "bins make %" G_GUINT64_FORMAT " values, more than %" G_GUINT64_FORMAT
                " (sample fewer: detector_mm)", e->n_t, e->n_r, nb, j.n_pairs * nb,
                TL_SCATTER_MAX_VALUES);
    return NULL;
  }
  Coarse c = {0};
  coarse_make(&c, activity, mu, p.voxel_mm);
  j.c = &c;
  GArray *pts = scatter_points(&c, p.scatter_mm, p.mu_threshold);
  j.pts = (const Point *)pts->data;
  Det *det = g_new(Det, D);
  for (guint m = 0; m < e->n_r; m++)
    for (guint k = 0; k < e->n_t; k++) {
      const TlCrystal *cr = &scanner->crystals[e->ring[m] * scanner->crystals_per_ring +
                                               e->transaxial[k]];
      Det *d = &det[m * e->n_t + k];
      for (int a = 0; a < 3; a++) d->p[a] = cr->centre[a], d->n[a] = cr->normal[a];
      d->area = (double)scanner->crystal_size[0] * scanner->crystal_size[1];
    }
  j.det = det;
  j.eps0 = tl_energy_window_efficiency(&p.window, TL_SSS_E0_KEV);
  /* the angles whose photons the window cannot keep (eps(E') < 1e-30, E' rising with cos) */
  j.c_cut = -1.0;
  if (tl_energy_window_efficiency(&p.window, TL_SSS_E0_KEV / 3.0) < 1e-30 && j.eps0 >= 1e-30) {
    double lo = -1.0, hi = 1.0;
    for (int it = 0; it < 60; it++) {
      double mid = 0.5 * (lo + hi);
      if (tl_energy_window_efficiency(&p.window, TL_SSS_E0_KEV / (2.0 - mid)) < 1e-30) lo = mid;
      else hi = mid;
    }
    j.c_cut = lo;
  }
  j.acc = g_try_new0(double, MAX(j.n_pairs * nb, 1));
  j.legs = g_new0(Leg, (gsize)CHUNK_POINTS * D);
  guint threads = p.n_threads ? p.n_threads : g_get_num_processors();
  double sec_legs = 0, sec_pairs = 0;
  gboolean ok = j.acc != NULL;
  if (!ok)
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "SSS: no memory for %" G_GUINT64_FORMAT
                " sampled pairs", j.n_pairs);
  /* seconds to minutes on a CPU: progress by chunks of scatter points (tl-progress.h) */
  tl_progress_begin(p.progress_label ? p.progress_label : "scatter estimation (SSS)", pts->len);
  for (guint s0 = 0; ok && s0 < pts->len; s0 += CHUNK_POINTS) {
    if (!tl_progress_check("SSS", error)) {
      ok = FALSE;
      break;
    }
    j.s0 = s0;
    j.s1 = MIN(pts->len, s0 + CHUNK_POINTS);
    gint64 ta = g_get_monotonic_time();
    ok = run_pool(legs_task, &j, j.s1 - j.s0, threads, error);
    gint64 tb = g_get_monotonic_time();
    if (ok && !g_atomic_int_get(&j.stop))
      ok = run_pool(pairs_task, &j, (guint)((j.n_pairs + PAIRS_PER_TASK - 1) / PAIRS_PER_TASK),
                    threads, error);
    free_legs(&j, (j.s1 - j.s0) * D);
    sec_legs += (tb - ta) * 1e-6;
    sec_pairs += (g_get_monotonic_time() - tb) * 1e-6;
    if (ok && g_atomic_int_get(&j.stop)) {
      g_cancellable_set_error_if_cancelled(cancel, error);
      ok = FALSE;
    }
    tl_progress_set_done(j.s1);
  }
  tl_progress_end();
  if (ok) {
    e->values = g_new(float, MAX(j.n_pairs * nb, 1));
    for (guint64 i = 0; i < j.n_pairs * nb; i++) e->values[i] = (float)j.acc[i];
    e->description = g_strdup_printf(
        "SSS: %u scatter points, %u x %u detectors, grid %ux%ux%u of %gx%gx%g mm, window "
        "%g-%g keV at %g %% FWHM%s", pts->len, e->n_t, e->n_r, c.grid.dims[0], c.grid.dims[1],
        c.grid.dims[2], c.grid.voxel_mm[0], c.grid.voxel_mm[1], c.grid.voxel_mm[2],
        p.window.low_kev, p.window.high_kev, 100 * p.window.fwhm_511, p.tof ? ", TOF" : "");
    if (stats) {
      *stats = (TlSssStats){.scatter_points = pts->len, .n_t = e->n_t, .n_r = e->n_r,
                            .seconds_legs = sec_legs, .seconds_pairs = sec_pairs};
      for (int k = 0; k < 3; k++)
        stats->coarse_dims[k] = c.grid.dims[k], stats->coarse_mm[k] = c.grid.voxel_mm[k];
    }
    ok = tl_scatter_estimate_prepare(e, "SSS", error);
  }
  g_free(j.acc);
  g_free(j.legs);
  g_free(det);
  g_array_unref(pts);
  coarse_clear(&c);
  return ok ? g_steal_pointer(&e) : NULL;
}

/* ---- the estimate ---- */

void tl_scatter_estimate_free(TlScatterEstimate *e) {
  if (!e) return;
  tl_scanner_free(e->scanner);
  g_free(e->transaxial);
  g_free(e->ring);
  g_free(e->values);
  g_free(e->description);
  g_free(e->sums);
  g_free(e->corner);
  g_free(e->weight);
  g_free(e);
}

guint64 tl_scatter_estimate_n_pairs(const TlScatterEstimate *e) {
  guint64 D = (guint64)e->n_t * e->n_r;
  return D * (D + 1) / 2;
}

TlScatterEstimate *tl_scatter_estimate_copy(const TlScatterEstimate *e) {
  TlScatterEstimate *c = g_new0(TlScatterEstimate, 1);
  guint64 nv = tl_scatter_estimate_n_pairs(e) * MAX(e->n_bins, 1);
  c->scanner = tl_scanner_copy(e->scanner);
  c->n_t = e->n_t;
  c->n_r = e->n_r;
  c->transaxial = g_memdup2(e->transaxial, sizeof(guint) * e->n_t);
  c->ring = g_memdup2(e->ring, sizeof(guint) * e->n_r);
  c->n_bins = e->n_bins;
  c->values = g_memdup2(e->values, sizeof(float) * MAX(nv, 1));
  c->scale = e->scale;
  c->description = g_strdup(e->description);
  guint n = e->scanner->n_crystals;
  if (e->sums) c->sums = g_memdup2(e->sums, sizeof(float) * tl_scatter_estimate_n_pairs(e));
  c->corner = g_memdup2(e->corner, sizeof(guint32) * 4 * n);
  c->weight = g_memdup2(e->weight, sizeof(double) * 4 * n);
  return c;
}

/* Interpolation between the sampled detectors: linear in the crystal's z between the sampled
 * rings and in its azimuth around the ring between the sampled transaxial positions (gaps
 * between modules and sides then weigh as the geometry does, not as the crystal count). */
static void ring_corners(const TlScatterEstimate *e, guint r, guint *m0, guint *m1, double *wr) {
  const TlScanner *s = e->scanner;
  guint cpr = s->crystals_per_ring;
  *m0 = *m1 = 0;
  *wr = 0;
  if (r <= e->ring[0]) return;
  if (r >= e->ring[e->n_r - 1]) {
    *m0 = *m1 = e->n_r - 1;
    return;
  }
  while (e->ring[*m0 + 1] <= r) (*m0)++;
  *m1 = *m0 + 1;
  double z = s->crystals[r * cpr].centre[2], z0 = s->crystals[e->ring[*m0] * cpr].centre[2],
         z1 = s->crystals[e->ring[*m1] * cpr].centre[2];
  *wr = z1 != z0 ? CLAMP((z - z0) / (z1 - z0), 0.0, 1.0) : 0.0;
}

/* The azimuth of every crystal of ring 0 and the direction the indices run (+1: counter-
 * clockwise). */
static double *azimuths(const TlScanner *s, double *dir) {
  guint cpr = s->crystals_per_ring;
  double *phi = g_new(double, cpr);
  for (guint i = 0; i < cpr; i++) phi[i] = atan2(s->crystals[i].centre[1], s->crystals[i].centre[0]);
  *dir = cpr > 1 && remainder(phi[1] - phi[0], 2 * G_PI) < 0 ? -1.0 : 1.0;
  return phi;
}

static void trans_corners(const TlScatterEstimate *e, const double *phi, double dir, guint i,
                          guint *k0, guint *k1, double *wt) {
  *k0 = *k1 = 0;
  *wt = 0;
  if (e->n_t == 1) return;
  if (i < e->transaxial[0] || i >= e->transaxial[e->n_t - 1]) {
    *k0 = e->n_t - 1; /* around the ring: from the last sample to the first */
    *k1 = 0;
  } else {
    while (e->transaxial[*k0 + 1] <= i) (*k0)++;
    *k1 = *k0 + 1;
  }
  if (i == e->transaxial[*k0]) return;
  /* azimuths from sample k0 in the direction the indices run */
  double a0 = phi[e->transaxial[*k0]], a1 = phi[e->transaxial[*k1]];
  double span = fmod(dir * (a1 - a0) + 4 * G_PI, 2 * G_PI);
  double pos = fmod(dir * (phi[i] - a0) + 4 * G_PI, 2 * G_PI);
  if (span == 0) span = 2 * G_PI; /* one sample per turn apart: the whole ring */
  *wt = CLAMP(pos / span, 0.0, 1.0);
}

gboolean tl_scatter_estimate_prepare(TlScatterEstimate *e, const char *source, GError **error) {
  const char *src = source ? source : "scatter estimate";
  const TlScanner *s = e->scanner;
  if (!s || !tl_scanner_validate(s, error) || !check_ring_scanner(s, src, error)) {
    if (!s) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: no scanner", src);
    return FALSE;
  }
  guint cpr = s->crystals_per_ring, R = s->n_rings;
  const char *bad = NULL;
  if (e->n_t < 1 || e->n_t > cpr || e->n_r < 1 || e->n_r > R)
    bad = "1 to crystals_per_ring transaxial and 1 to rings ring samples";
  for (guint k = 0; !bad && k < e->n_t; k++)
    if (e->transaxial[k] >= cpr || (k && e->transaxial[k] <= e->transaxial[k - 1]))
      bad = "transaxial indices increasing and below crystals_per_ring";
  for (guint m = 0; !bad && m < e->n_r; m++)
    if (e->ring[m] >= R || (m && e->ring[m] <= e->ring[m - 1]))
      bad = "ring indices increasing and below the rings";
  if (!bad && e->n_bins && (e->n_bins != s->tof_bins || e->n_bins % 2 == 0))
    bad = "TOF bins 0 or the scanner's (odd) tof_bins";
  if (!bad && !(isfinite(e->scale) && e->scale >= 0)) bad = "a finite scale >= 0";
  if (bad) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s: expected %s (scanner '%s': %u "
                "crystals per ring, %u rings, %u TOF bins; the estimate: %u x %u samples, %u "
                "bins, scale %g)", src, bad, s->name, cpr, R, s->tof_bins, e->n_t, e->n_r,
                e->n_bins, e->scale);
    return FALSE;
  }
  guint64 np = tl_scatter_estimate_n_pairs(e), nb = MAX(e->n_bins, 1);
  for (guint64 i = 0; i < np * nb; i++) {
    float v = e->values[i];
    if (!isfinite(v) || v < 0) {
      guint64 pi = i / nb;
      guint db = (guint)floor((sqrt(8.0 * (double)pi + 1.0) - 1.0) / 2.0);
      while (tl_scatter_tri(0, db) > pi) db--;
      while (tl_scatter_tri(0, db + 1) <= pi) db++;
      guint da = (guint)(pi - tl_scatter_tri(0, db));
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "%s: value %" G_GUINT64_FORMAT " (sampled detectors %u and %u, bin %d) is %g: "
                  "expected a finite value >= 0", src, i, da, db,
                  e->n_bins ? (int)(i % nb) - (int)(nb / 2) : 0, (double)v);
      return FALSE;
    }
  }
  g_clear_pointer(&e->sums, g_free);
  if (e->n_bins) {
    e->sums = g_new(float, MAX(np, 1));
    for (guint64 i = 0; i < np; i++) {
      double t = 0;
      for (guint64 b = 0; b < nb; b++) t += e->values[i * nb + b];
      e->sums[i] = (float)t;
    }
  }
  /* per crystal: the 4 sampled detectors around it (2 rings x 2 transaxial positions) and
   * the bilinear weights (ring_corners, trans_corners) */
  g_free(e->corner);
  g_free(e->weight);
  e->corner = g_new0(guint32, 4 * (gsize)s->n_crystals);
  e->weight = g_new0(double, 4 * (gsize)s->n_crystals);
  double dir;
  g_autofree double *phi = azimuths(s, &dir);
  for (guint r = 0; r < R; r++) {
    guint m0, m1, k0, k1;
    double wr, wt;
    ring_corners(e, r, &m0, &m1, &wr);
    for (guint i = 0; i < cpr; i++) {
      trans_corners(e, phi, dir, i, &k0, &k1, &wt);
      gsize at = 4 * ((gsize)r * cpr + i);
      guint32 d[4] = {m0 * e->n_t + k0, m0 * e->n_t + k1, m1 * e->n_t + k0, m1 * e->n_t + k1};
      double w[4] = {(1 - wr) * (1 - wt), (1 - wr) * wt, wr * (1 - wt), wr * wt};
      for (int q = 0; q < 4; q++) e->corner[at + q] = d[q], e->weight[at + q] = w[q];
    }
  }
  return TRUE;
}

/* Unscaled interpolated value of (a, b): summed over bins (bin = G_MININT) or in one bin. */
static double interp(const TlScatterEstimate *e, guint a, guint b, gint bin) {
  const guint32 *ca = e->corner + 4 * (gsize)a, *cb = e->corner + 4 * (gsize)b;
  const double *wa = e->weight + 4 * (gsize)a, *wb = e->weight + 4 * (gsize)b;
  gint half = (gint)e->n_bins / 2;
  const float *vals = bin == G_MININT ? (e->n_bins ? e->sums : e->values) : e->values;
  guint nb = bin == G_MININT ? 1 : e->n_bins;
  double v = 0;
  for (int i = 0; i < 4; i++) {
    if (wa[i] == 0) continue;
    for (int k = 0; k < 4; k++) {
      if (wb[k] == 0) continue;
      guint da = ca[i], db = cb[k];
      guint64 at;
      if (bin == G_MININT) at = da <= db ? tl_scatter_tri(da, db) : tl_scatter_tri(db, da);
      else if (da <= db) at = tl_scatter_tri(da, db) * nb + (guint)(bin + half);
      else at = tl_scatter_tri(db, da) * nb + (guint)(-bin + half);
      v += (double)wa[i] * wb[k] * vals[at];
    }
  }
  return v;
}

double tl_scatter_estimate_pair(const TlScatterEstimate *e, guint a, guint b) {
  return e->scale * interp(e, a, b, G_MININT);
}

double tl_scatter_estimate_pair_tof(const TlScatterEstimate *e, guint a, guint b, gint bin) {
  gint half = (gint)e->n_bins / 2;
  if (!e->n_bins || bin < -half || bin > half) return 0;
  return e->scale * interp(e, a, b, bin);
}

gboolean tl_scatter_estimate_check_scanner(const TlScatterEstimate *e, const TlScanner *scanner,
                                           const char *source, GError **error) {
  g_autofree char *k1 = tl_scanner_key(e->scanner), *k2 = tl_scanner_key(scanner);
  if (strcmp(k1, k2) == 0) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "%s: the scatter estimate is for scanner '%s' (%u crystals, %u rings, %u TOF bins) "
              "but the data are from scanner '%s' (%u crystals, %u rings, %u TOF bins): expected "
              "the same scanner (crystal table, acceptance and TOF)",
              source ? source : "scatter estimate", e->scanner->name, e->scanner->n_crystals,
              e->scanner->n_rings, e->scanner->tof_bins, scanner->name, scanner->n_crystals,
              scanner->n_rings, scanner->tof_bins);
  return FALSE;
}

char *tl_scatter_estimate_describe(const TlScatterEstimate *e) {
  return g_strdup_printf("%s (scanner '%s', %u x %u sampled detectors, %s, scale %g)",
                         e->description ? e->description : "scatter estimate", e->scanner->name,
                         e->n_t, e->n_r, e->n_bins ? "TOF" : "non-TOF", e->scale);
}

/* ---- the tail ---- */

void tl_tail_params_init(TlTailParams *p) {
  *p = (TlTailParams){.mu_support = 0.0005, .margin_mm = 10, .min_counts = 100};
}

struct _TlScatterTail {
  const TlScanner *scanner;
  double margin;
  double *hx, *hy;  /* convex hull of the support, projected along z */
  guint nh;
  guint cpr;
  guint8 *by_index; /* crystals_per_ring^2 answers when every ring has ring 0's positions */
};

static double cross2(const double *o, const double *a, const double *b) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

static int cmp_xy(const void *x, const void *y) {
  const double *a = x, *b = y;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return (a[1] > b[1]) - (a[1] < b[1]);
}

static gboolean tail_line(const TlScatterTail *t, const float *pa, const float *pb) {
  if (t->nh == 0) return TRUE; /* no support: every line misses it */
  double dx = pb[0] - (double)pa[0], dy = pb[1] - (double)pa[1], l = hypot(dx, dy);
  if (!(l > 1e-9)) return FALSE;
  double nx = -dy / l, ny = dx / l, lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
  for (guint i = 0; i < t->nh; i++) {
    double d = (t->hx[i] - pa[0]) * nx + (t->hy[i] - pa[1]) * ny;
    lo = MIN(lo, d);
    hi = MAX(hi, d);
  }
  return lo > t->margin || hi < -t->margin;
}

TlScatterTail *tl_scatter_tail_new(const TlScanner *s, const TlImage *mu, const TlTailParams *p,
                                   GError **error) {
  TlTailParams dp;
  if (!p) tl_tail_params_init(&dp), p = &dp;
  if (!(isfinite(p->mu_support) && p->mu_support >= 0 && isfinite(p->margin_mm) &&
        p->margin_mm >= 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "tail: mu_support %g and margin %g mm: "
                "expected finite values >= 0", p->mu_support, p->margin_mm);
    return NULL;
  }
  if (!tl_image_grid_validate(&mu->grid, error)) return NULL;
  const TlImageGrid *g = &mu->grid;
  guint64 nxy = (guint64)g->dims[0] * g->dims[1];
  g_autofree guint8 *col = g_new0(guint8, nxy);
  for (guint64 i = 0; i < tl_image_grid_n_voxels(g); i++) {
    float v = mu->data[i];
    if (!isfinite(v)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "tail: mu-map voxel %" G_GUINT64_FORMAT
                  " is %g: expected a finite value", i, (double)v);
      return NULL;
    }
    if (v > p->mu_support) col[i % nxy] = 1;
  }
  /* the corners of every support column, then Andrew's monotone chain */
  GArray *pts = g_array_new(FALSE, FALSE, sizeof(double) * 2);
  for (guint y = 0; y < g->dims[1]; y++)
    for (guint x = 0; x < g->dims[0]; x++) {
      if (!col[(guint64)y * g->dims[0] + x]) continue;
      double cx = g->origin_mm[0] + x * (double)g->voxel_mm[0];
      double cy = g->origin_mm[1] + y * (double)g->voxel_mm[1];
      for (int q = 0; q < 4; q++) {
        double c[2] = {cx + ((q & 1) ? 0.5 : -0.5) * g->voxel_mm[0],
                       cy + ((q & 2) ? 0.5 : -0.5) * g->voxel_mm[1]};
        g_array_append_val(pts, c);
      }
    }
  TlScatterTail *t = g_new0(TlScatterTail, 1);
  t->scanner = s;
  t->margin = p->margin_mm;
  guint n = pts->len;
  if (n) {
    double(*P)[2] = (double(*)[2])pts->data;
    qsort(P, n, sizeof *P, cmp_xy);
    double(*H)[2] = g_malloc(sizeof(double[2]) * 2 * n);
    guint k = 0;
    for (guint i = 0; i < n; i++) {
      while (k >= 2 && cross2(H[k - 2], H[k - 1], P[i]) <= 0) k--;
      H[k][0] = P[i][0], H[k][1] = P[i][1], k++;
    }
    for (guint i = n - 1, lo = k + 1; i-- > 0;) {
      while (k >= lo && cross2(H[k - 2], H[k - 1], P[i]) <= 0) k--;
      H[k][0] = P[i][0], H[k][1] = P[i][1], k++;
    }
    t->nh = k > 1 ? k - 1 : k;
    t->hx = g_new(double, t->nh);
    t->hy = g_new(double, t->nh);
    for (guint i = 0; i < t->nh; i++) t->hx[i] = H[i][0], t->hy[i] = H[i][1];
    g_free(H);
  }
  g_array_unref(pts);
  /* ring scanners whose rings repeat ring 0 transaxially: one answer per index pair */
  guint cpr = s->crystals_per_ring;
  gboolean same = s->kind == TL_SCANNER_RING && cpr > 0 && (guint64)cpr * s->n_rings == s->n_crystals &&
                  (guint64)cpr * cpr <= (G_GUINT64_CONSTANT(1) << 26);
  for (guint i = cpr; same && i < s->n_crystals; i++) {
    const float *a = s->crystals[i].centre, *b = s->crystals[i % cpr].centre;
    same = fabsf(a[0] - b[0]) <= 1e-3f && fabsf(a[1] - b[1]) <= 1e-3f;
  }
  if (same) {
    t->cpr = cpr;
    t->by_index = g_new(guint8, (gsize)cpr * cpr);
    for (guint a = 0; a < cpr; a++)
      for (guint b = 0; b < cpr; b++)
        t->by_index[(gsize)a * cpr + b] = tail_line(t, s->crystals[a].centre, s->crystals[b].centre);
  }
  return t;
}

void tl_scatter_tail_free(TlScatterTail *t) {
  if (!t) return;
  g_free(t->hx);
  g_free(t->hy);
  g_free(t->by_index);
  g_free(t);
}

gboolean tl_scatter_tail_has(const TlScatterTail *t, guint a, guint b) {
  if (t->by_index) return t->by_index[(gsize)(a % t->cpr) * t->cpr + b % t->cpr];
  return tail_line(t, t->scanner->crystals[a].centre, t->scanner->crystals[b].centre);
}

typedef struct {
  guint64 key;
  double count;
} Keyed;

static int cmp_keyed(const void *x, const void *y) {
  guint64 a = ((const Keyed *)x)->key, b = ((const Keyed *)y)->key;
  return (a > b) - (a < b);
}

/* Whether the sums over every allowed pair separate into transaxial x ring sums: the tail
 * answers per transaxial index pair, and the group of a crystal is its ring-0 twin's. */
static gboolean separable(const TlScatterEstimate *e, const TlScatterTail *t) {
  const TlScanner *s = e->scanner;
  guint cpr = s->crystals_per_ring;
  if (!t->by_index || t->cpr != cpr) return FALSE;
  for (guint i = cpr; i < s->n_crystals; i++)
    if (s->crystals[i].group != s->crystals[i % cpr].group) return FALSE;
  return TRUE;
}

/* The tail fit's sums without visiting the N^2/2 pairs. For crystals a = (r_a, i_a),
 * b = (r_b, i_b) the pair is allowed when the groups of i_a, i_b differ and |r_a - r_b| <= d,
 * in the tail by (i_a, i_b) alone, and its value is sum_{ka, kb} wt wt sum_{ma, mb} wr wr
 * V(ma n_t + ka, mb n_t + kb). So over ordered pairs (each unordered pair twice)
 *   sum = sum_{i_a, i_b} sum_{ka, kb} wt(i_a, ka) wt(i_b, kb) U(ka, kb),
 *   U(ka, kb) = sum_{ma, mb} Rw(ma, mb) V(ma n_t + ka, mb n_t + kb),
 *   Rw(ma, mb) = sum_{|r_a - r_b| <= d} wr(r_a, ma) wr(r_b, mb),
 * and the randoms s_a s_b from prefix sums over the rings: O(cpr^2 R) instead of O(N^2). */
static void fit_separable(const TlScatterEstimate *e, const TlScatterTail *tail, const Keyed *k,
                          guint64 n_counts, const TlRandoms *randoms, TlTailFit *f) {
  const TlScanner *s = e->scanner;
  guint cpr = s->crystals_per_ring, R = s->n_rings, nt = e->n_t, nr = e->n_r;
  guint d = MIN(s->max_ring_difference, R - 1);
  g_autofree double *WR = g_new0(double, (gsize)R * nr);
  for (guint r = 0; r < R; r++) {
    guint m0, m1;
    double w;
    ring_corners(e, r, &m0, &m1, &w);
    WR[(gsize)r * nr + m0] += 1 - w;
    WR[(gsize)r * nr + m1] += w;
  }
  g_autofree double *Rw = g_new0(double, (gsize)nr * nr);
  guint64 ring_pairs = 0; /* ordered (r_a, r_b) within the acceptance */
  for (guint ra = 0; ra < R; ra++)
    for (guint rb = ra > d ? ra - d : 0; rb <= MIN(R - 1, ra + d); rb++) {
      ring_pairs++;
      for (guint ma = 0; ma < nr; ma++)
        for (guint mb = 0; mb < nr; mb++)
          Rw[ma * nr + mb] += WR[(gsize)ra * nr + ma] * WR[(gsize)rb * nr + mb];
    }
  const float *V = e->n_bins ? e->sums : e->values;
  g_autofree double *U = g_new0(double, (gsize)nt * nt);
  for (guint ka = 0; ka < nt; ka++)
    for (guint kb = 0; kb < nt; kb++) {
      double u = 0;
      for (guint ma = 0; ma < nr; ma++)
        for (guint mb = 0; mb < nr; mb++) {
          guint da = ma * nt + ka, db = mb * nt + kb;
          u += Rw[ma * nr + mb] * V[da <= db ? tl_scatter_tri(da, db) : tl_scatter_tri(db, da)];
        }
      U[(gsize)ka * nt + kb] = u;
    }
  double dir;
  g_autofree double *phi = azimuths(s, &dir);
  g_autofree guint *K = g_new(guint, 2 * (gsize)cpr);
  g_autofree double *W = g_new(double, cpr);
  for (guint i = 0; i < cpr; i++) trans_corners(e, phi, dir, i, &K[2 * i], &K[2 * i + 1], &W[i]);
  /* randoms: prefix sums over the rings of s(r, i) per transaxial index */
  g_autofree double *P = randoms ? g_new0(double, (gsize)cpr * (R + 1)) : NULL;
  for (guint i = 0; P && i < cpr; i++)
    for (guint r = 0; r < R; r++)
      P[(gsize)i * (R + 1) + r + 1] = P[(gsize)i * (R + 1) + r] + randoms->factor[r * cpr + i];
  double total = 0, tail_est = 0, tail_rnd = 0;
  guint64 tail_pairs = 0;
  for (guint ia = 0; ia < cpr; ia++)
    for (guint ib = 0; ib < cpr; ib++) {
      if (s->crystals[ia].group == s->crystals[ib].group) continue;
      double wa[2] = {1 - W[ia], W[ia]}, wb[2] = {1 - W[ib], W[ib]}, T = 0;
      for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++)
          if (wa[x] != 0 && wb[y] != 0)
            T += wa[x] * wb[y] * U[(gsize)K[2 * ia + x] * nt + K[2 * ib + y]];
      total += T;
      if (!tail->by_index[(gsize)ia * cpr + ib]) continue;
      tail_est += T;
      tail_pairs += ring_pairs;
      for (guint ra = 0; P && ra < R; ra++) {
        const double *pb = P + (gsize)ib * (R + 1);
        guint lo = ra > d ? ra - d : 0, hi = MIN(R - 1, ra + d);
        tail_rnd += randoms->factor[ra * cpr + ia] * (pb[hi + 1] - pb[lo]);
      }
    }
  f->total_estimate = 0.5 * total;
  f->tail_estimate = 0.5 * tail_est;
  f->tail_randoms = 0.5 * tail_rnd;
  f->tail_pairs = tail_pairs / 2;
  for (guint64 q = 0; q < n_counts; q++) {
    guint a = (guint)(k[q].key >> 32), b = (guint)k[q].key;
    if (tail->by_index[(gsize)(a % cpr) * cpr + b % cpr]) f->tail_counts += k[q].count;
  }
}

gboolean tl_scatter_tail_fit(const TlScatterEstimate *e, const TlImage *mu, const TlBin *counts,
                             guint64 n_counts, const TlRandoms *randoms, const TlTailParams *p,
                             TlTailFit *fit, GError **error) {
  TlTailParams dp;
  if (!p) tl_tail_params_init(&dp), p = &dp;
  const TlScanner *s = e->scanner;
  guint N = s->n_crystals;
  if (randoms && randoms->n_crystals != N) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "tail fit: randoms for %u crystals, but "
                "the scanner '%s' has %u", randoms->n_crystals, s->name, N);
    return FALSE;
  }
  if (!(isfinite(p->min_counts) && p->min_counts >= 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "tail fit: min_counts %g: expected a "
                "finite value >= 0", p->min_counts);
    return FALSE;
  }
  g_autofree Keyed *k = g_new(Keyed, MAX(n_counts, 1));
  for (guint64 i = 0; i < n_counts; i++) {
    guint a = counts[i].a, b = counts[i].b;
    if (a >= N || b >= N || !tl_scanner_pair_allowed(s, a, b) || !isfinite(counts[i].count) ||
        counts[i].count < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "tail fit: count %" G_GUINT64_FORMAT
                  " (crystals %u, %u: %g): expected an allowed pair of scanner '%s' and a "
                  "finite count >= 0", i, a, b, (double)counts[i].count, s->name);
      return FALSE;
    }
    k[i].key = a < b ? (guint64)a << 32 | b : (guint64)b << 32 | a;
    k[i].count = counts[i].count;
  }
  qsort(k, n_counts, sizeof *k, cmp_keyed);
  TlScatterTail *tail = tl_scatter_tail_new(s, mu, p, error);
  if (!tail) return FALSE;
  TlTailFit f = {0};
  if (!p->pair_factor && separable(e, tail)) {
    fit_separable(e, tail, k, n_counts, randoms, &f);
  } else {
    guint64 at = 0;
    for (guint a = 0; a < N; a++)
      for (guint b = a + 1; b < N; b++) {
        if (!tl_scanner_pair_allowed(s, a, b)) continue;
        double nf = p->pair_factor ? p->pair_factor(a, b, p->pair_factor_data) : 1.0;
        double sv = nf * interp(e, a, b, G_MININT);
        f.total_estimate += sv;
        if (!tl_scatter_tail_has(tail, a, b)) continue;
        guint64 key = (guint64)a << 32 | b;
        double y = 0;
        while (at < n_counts && k[at].key < key) at++;
        for (guint64 q = at; q < n_counts && k[q].key == key; q++) y += k[q].count;
        f.tail_pairs++;
        f.tail_counts += y;
        f.tail_randoms += randoms ? tl_randoms_pair(randoms, a, b) : 0.0;
        f.tail_estimate += sv;
      }
  }
  tl_scatter_tail_free(tail);
  if (f.tail_counts < p->min_counts || !(f.tail_estimate > 0)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "tail fit: %.0f prompts and an estimate of %g in the tail (%" G_GUINT64_FORMAT
                " crystal pairs whose lines pass more than %g mm outside the mu-map's support): "
                "expected at least %g prompts and an estimate > 0 (an object that fills the "
                "field of view leaves no tail; a smaller margin_mm or more counts help)",
                f.tail_counts, f.tail_estimate, f.tail_pairs, p->margin_mm, p->min_counts);
    return FALSE;
  }
  double net = f.tail_counts - f.tail_randoms;
  f.scale = net > 0 ? net / f.tail_estimate : 0.0;
  *fit = f;
  return TRUE;
}
