/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Monte-Carlo simulator: fixed blocks of work on a GThreadPool, one random stream per block. */
#include "tl-simulate.h"
#include "tl-compton.h"
#include "tl-detect.h"
#include "image/tl-file.h"
#include "image/tl-ray-integral.h"
#include "image/tl-rng.h"
#include <math.h>
#include <string.h>

#define BLOCK_TRUES 8192   /* events mode: detected events per block */
#define BLOCK_DECAYS 65536 /* decays mode: sampled annihilations per block */
#define STREAM_RANDOMS (G_GUINT64_CONSTANT(1) << 40)
#define STREAM_SHUFFLE (G_GUINT64_CONSTANT(1) << 41)
#define STREAM_EFFICIENCY (G_GUINT64_CONSTANT(1) << 42)
#define STREAM_DELAYED (G_GUINT64_CONSTANT(1) << 43)
#define ANNIHILATION_KEV TL_ELECTRON_KEV /* each photon of an annihilation at rest */
#define MIN_EFFICIENCY 0.05 /* drawn efficiencies below this are drawn again */

/* One alias-table entry: a draw reads one entry, maybe its alias, and takes its centre. */
typedef struct {
  float prob;
  guint32 alias;
  float centre[3];
} Source;

typedef struct {
  const TlScanner *scanner;
  TlDetector *det;
  TlImageGrid grid;  /* the activity's */
  guint64 n_src;     /* voxels with activity inside the scanner */
  guint32 *vox;      /* their indices */
  Source *src;       /* Vose alias table over them, with their centres */
  TlImage *mu;       /* cropped to its support; NULL = no attenuation */
  float mu_max;      /* its largest value: Woodcock tracking's majorant */
  double mu_lo[3], mu_hi[3], mu_inv_vox[3]; /* its box (voxel faces, mm), 1 / voxel size */
  double cone_cos;
  gboolean events_mode, tof;
  double tof_sigma, tof_bin;
  gint32 tof_half;
  guint64 seed;
  /* photon path: each photon followed on its own (scatter, singles) */
  gboolean per_photon, scatter, count_singles;
  double window[2], resolution, sigma_511; /* energy window (keV), resolution, KN at 511 */
  float *keep;       /* n_crystals: efficiency / max efficiency; NULL = all 1 */
  guint64 *singles;  /* n_crystals: detected photons, merged from the blocks */
  gint stop;         /* atomic: cancel */
  GMutex lock;
  GCond cond;
  guint blocks_done;
  guint64 events_done;
} Sim;

typedef struct {
  guint64 index, quota;
  GArray *events;
  GByteArray *tags;
  guint64 sampled, geometric, attenuated, tof_outside, scattered;
  guint64 photons, interacted, absorbed, missed, energy_rejected, efficiency_rejected, singles;
  gboolean starved;
} Block;

/* A photon that reached a crystal: where, along which path length, scattered or not. */
typedef struct {
  gint64 crystal;
  double hit[3];
  double path; /* mm from the annihilation to the hit, through the scatter point */
  gboolean scattered;
} Photon;

/* Vose's alias method: O(1) draws of a voxel with probability proportional to its activity. */
static void build_alias(Sim *sim, const double *w, double total) {
  guint64 n = sim->n_src;
  double *p = g_new(double, n);
  guint32 *small = g_new(guint32, n), *large = g_new(guint32, n);
  guint64 ns = 0, nl = 0;
  for (guint64 i = 0; i < n; i++) {
    p[i] = w[i] * n / total;
    if (p[i] < 1.0) small[ns++] = (guint32)i; else large[nl++] = (guint32)i;
  }
  Source *src = sim->src = g_new(Source, n);
  const TlImageGrid *g = &sim->grid;
  for (guint64 i = 0; i < n; i++) {
    guint32 v = sim->vox[i];
    double c[3];
    tl_image_grid_voxel_centre(g, v % g->dims[0], v / g->dims[0] % g->dims[1], v / g->dims[0] / g->dims[1], c);
    for (int d = 0; d < 3; d++) src[i].centre[d] = (float)c[d];
  }
  while (ns && nl) {
    guint32 s = small[--ns], l = large[nl - 1];
    src[s].prob = (float)p[s];
    src[s].alias = l;
    p[l] -= 1.0 - p[s];
    if (p[l] < 1.0) {
      nl--;
      small[ns++] = l;
    }
  }
  while (nl) src[large[--nl]].prob = 1.0f, src[large[nl]].alias = large[nl];
  while (ns) src[small[--ns]].prob = 1.0f, src[small[ns]].alias = small[ns]; /* round-off */
  g_free(p);
  g_free(small);
  g_free(large);
}

/* Sources: voxels with activity whose centre is inside the scanner. Returns the share of
 * activity left outside, or -1 when nothing is inside. */
static double build_sources(Sim *sim, const TlImage *act) {
  const TlImageGrid *g = &act->grid;
  guint64 n = tl_image_grid_n_voxels(g), m = 0;
  double total = 0, inside = 0;
  sim->vox = g_new(guint32, n);
  double *w = g_new(double, n);
  for (guint64 i = 0; i < n; i++) {
    if (act->data[i] <= 0) continue;
    double c[3];
    tl_image_grid_voxel_centre(g, i % g->dims[0], i / g->dims[0] % g->dims[1],
                               i / g->dims[0] / g->dims[1], c);
    total += act->data[i];
    if (!tl_detector_inside(sim->det, c)) continue;
    inside += act->data[i];
    sim->vox[m] = (guint32)i;
    w[m++] = act->data[i];
  }
  sim->n_src = m;
  if (m) build_alias(sim, w, inside);
  g_free(w);
  return m ? 1.0 - inside / total : -1.0;
}

/* For a ring scanner around z, a photon from radius r needs a transverse path of at least
 * R_in - r to reach a face, so both photons of a pair land inside the crystals' axial span Z
 * only if |cot(polar)| <= Z / (2 (R_in - r_max)). Sampling only that cone (and counting the
 * decays it stands for) skips directions that can never be detected. A single photon (the
 * singles rates) from height z0 lands within the span only if its axial displacement,
 * at least (R_in - r) |cot(polar)|, is at most max(zhi - z0, z0 - zlo): the wider cone
 * |cot| <= that / (R_in - r_max). A scattered photon may come from any direction: no cone. */
static double cone_cos(const Sim *sim, const TlImage *act, gboolean singles) {
  const TlScanner *s = sim->scanner;
  if (sim->scatter) return 1.0;
  double r_in = G_MAXDOUBLE, zlo = G_MAXDOUBLE, zhi = -G_MAXDOUBLE, r_max = 0;
  double szlo = G_MAXDOUBLE, szhi = -G_MAXDOUBLE;
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *k = &s->crystals[i];
    if (k->normal[2] != 0.0f) return 1.0;
    double off = -(k->centre[0] * (double)k->normal[0] + k->centre[1] * (double)k->normal[1]);
    r_in = MIN(r_in, off);
    zlo = MIN(zlo, k->centre[2] - 0.5 * s->crystal_size[1]);
    zhi = MAX(zhi, k->centre[2] + 0.5 * s->crystal_size[1]);
  }
  const TlImageGrid *g = &act->grid;
  for (guint64 m = 0; m < sim->n_src; m++) {
    guint32 i = sim->vox[m];
    double c[3];
    tl_image_grid_voxel_centre(g, i % g->dims[0], i / g->dims[0] % g->dims[1],
                               i / g->dims[0] / g->dims[1], c);
    double r = hypot(fabs(c[0]) + 0.5 * g->voxel_mm[0], fabs(c[1]) + 0.5 * g->voxel_mm[1]);
    r_max = MAX(r_max, r);
    szlo = MIN(szlo, c[2] - 0.5 * g->voxel_mm[2]);
    szhi = MAX(szhi, c[2] + 0.5 * g->voxel_mm[2]);
  }
  if (r_in - r_max <= 1.0) return 1.0;
  double kappa = singles ? MAX(zhi - szlo, szhi - zlo) / (r_in - r_max)
                         : (zhi - zlo) / (2.0 * (r_in - r_max));
  return MIN(1.0, kappa / sqrt(1.0 + kappa * kappa));
}

/* The direction at polar angle theta (cos ct) and azimuth phi around the unit vector d. */
static void turn(double d[3], double ct, double phi) {
  double st = sqrt(MAX(0.0, 1.0 - ct * ct)), cp = cos(phi), sp = sin(phi);
  double den = sqrt(MAX(0.0, 1.0 - d[2] * d[2])), n[3];
  if (den < 1e-6) { /* along z: any perpendicular pair of axes */
    n[0] = st * cp;
    n[1] = st * sp;
    n[2] = (d[2] > 0 ? 1.0 : -1.0) * ct;
  } else {
    n[0] = st * (d[0] * d[2] * cp - d[1] * sp) / den + d[0] * ct;
    n[1] = st * (d[1] * d[2] * cp + d[0] * sp) / den + d[1] * ct;
    n[2] = -st * cp * den + d[2] * ct;
  }
  double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  for (int k = 0; k < 3; k++) d[k] = n[k] / l;
}

/* Woodcock (delta) tracking (Woodcock et al. 1965): the first interaction along q + t d (d a
 * unit vector) in the mu-map times `scale`, TRUE with *t_hit, FALSE when the photon leaves the
 * map first. Tentative collisions are drawn at the majorant scale x mu_max and each is real
 * with probability mu(x) / mu_max, which samples the interaction point with exactly the
 * distribution of the voxel walk's -ln(u) of optical depth (tl_ray_march) without walking
 * the voxels: in a water cylinder a photon takes one to three steps where the walk crossed
 * some fifty 4 mm voxels (the scatter simulation of test-pet-quant was 45 s). */
static gboolean woodcock(const Sim *sim, TlRng *rng, const double q[3], const double d[3],
                         double scale, double *t_hit) {
  const TlImage *mu = sim->mu;
  const TlImageGrid *g = &mu->grid;
  double t0 = 0, t1 = G_MAXDOUBLE;
  for (int k = 0; k < 3; k++) {
    if (d[k] == 0.0) {
      if (q[k] < sim->mu_lo[k] || q[k] >= sim->mu_hi[k]) return FALSE;
      continue;
    }
    double ta = (sim->mu_lo[k] - q[k]) / d[k], tb = (sim->mu_hi[k] - q[k]) / d[k];
    t0 = MAX(t0, MIN(ta, tb));
    t1 = MIN(t1, MAX(ta, tb));
  }
  if (t0 >= t1) return FALSE;
  double step = 1.0 / (scale * sim->mu_max);
  for (double t = t0;;) {
    t += -log(1.0 - tl_rng_uniform(rng)) * step;
    if (t >= t1) return FALSE;
    gsize at = 0, stride = 1;
    for (int k = 0; k < 3; k++) {
      int i = (int)floor((q[k] + t * d[k] - sim->mu_lo[k]) * sim->mu_inv_vox[k]);
      at += (gsize)CLAMP(i, 0, (int)g->dims[k] - 1) * stride;
      stride *= g->dims[k];
    }
    if (tl_rng_uniform(rng) * sim->mu_max < mu->data[at]) {
      *t_hit = t;
      return TRUE;
    }
  }
}

/* One photon from p along d until a crystal detects it (TRUE) or it is lost (FALSE).
 * Without scatter: cast onto the crystals, then survival exp(-integral of mu) up to the hit
 * (van Gendt et al. 2021 eq. 6, per photon). With scatter: the first interaction point is where
 * the optical depth reaches -ln(u), drawn by Woodcock tracking; there the photon scatters by theta from Kahn's sampler
 * of Klein-Nishina, azimuth uniform, energy E' = E / (1 + (E / m c^2)(1 - cos theta)); it then
 * crosses mu(E') = mu(511) sigma_KN(E') / sigma_KN(511) (Compton-only water, tl-compton.h),
 * and a second interaction removes it (single scatter). The measured energy is E + sigma(E) N
 * (tl_energy_sigma_kev), kept within the window; then the crystal keeps it with probability
 * eps_i / max eps. */
static gboolean track(const Sim *sim, TlRng *rng, const double p[3], const double d0[3],
                      Photon *ph, Block *b, guint32 *singles) {
  double q[3] = {p[0], p[1], p[2]}, d[3] = {d0[0], d0[1], d0[2]}, e = ANNIHILATION_KEV;
  ph->scattered = FALSE;
  ph->path = 0;
  b->photons++;
  gint64 c;
  if (!sim->scatter) {
    double tau = -log(1.0 - tl_rng_uniform(rng));
    if ((c = tl_detector_cast(sim->det, q, d, ph->hit)) < 0) {
      b->missed++;
      return FALSE;
    }
    if (sim->mu && tl_ray_integral(sim->mu, q, ph->hit, tau) > tau) {
      b->interacted++;
      b->absorbed++;
      return FALSE;
    }
  } else {
    double t;
    if (woodcock(sim, rng, q, d, 1.0, &t)) {
      b->interacted++;
      for (int k = 0; k < 3; k++) q[k] += t * d[k];
      ph->path = t;
      double ct = tl_klein_nishina_sample(rng, e);
      turn(d, ct, 2.0 * G_PI * tl_rng_uniform(rng));
      e = tl_compton_energy(e, ct);
      ph->scattered = TRUE;
      if (woodcock(sim, rng, q, d, tl_klein_nishina_total(e) / sim->sigma_511, &t)) {
        b->absorbed++;
        return FALSE;
      }
    }
    if ((c = tl_detector_cast(sim->det, q, d, ph->hit)) < 0) {
      b->missed++;
      return FALSE;
    }
    double measured = e + tl_energy_sigma_kev(sim->resolution, e) * tl_rng_normal(rng);
    if (measured < sim->window[0] || measured > sim->window[1]) {
      b->energy_rejected++;
      return FALSE;
    }
  }
  if (sim->keep && tl_rng_uniform(rng) >= sim->keep[c]) {
    b->efficiency_rejected++;
    return FALSE;
  }
  double h2 = 0;
  for (int k = 0; k < 3; k++) h2 += (ph->hit[k] - q[k]) * (ph->hit[k] - q[k]);
  ph->path += sqrt(h2);
  ph->crystal = c;
  b->singles++;
  if (singles) singles[c]++;
  return TRUE;
}

/* The TOF bin of the measured offset s (mm, positive towards crystal b), or FALSE when it
 * falls outside the bins. */
static gboolean tof_bin(const Sim *sim, TlRng *rng, double s, gint32 *bin) {
  s += sim->tof_sigma * tl_rng_normal(rng);
  double fb = floor(s / sim->tof_bin + 0.5);
  if (fabs(fb) > sim->tof_half) return FALSE;
  *bin = (gint32)fb;
  return TRUE;
}

/* Position of p along the LOR of crystals a -> b from its midpoint (docs/formats.md). */
static double lor_offset(const TlCrystal *cr, guint a, guint c, const double p[3]) {
  const float *A = cr[a].centre, *B = cr[c].centre;
  double u[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]};
  double len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), s = 0;
  for (int k = 0; k < 3; k++) s += (p[k] - 0.5 * (A[k] + B[k])) * u[k] / len;
  return s;
}

static void run_block(gpointer data, gpointer user) {
  Block *b = data;
  Sim *sim = user;
  TlRng rng;
  tl_rng_init(&rng, sim->seed, 1 + b->index);
  const TlImageGrid *g = &sim->grid;
  const TlCrystal *cr = sim->scanner->crystals;
  guint64 limit = sim->events_mode ? 2000 * b->quota + 10000000 : b->quota;
  b->events = g_array_sized_new(FALSE, FALSE, sizeof(TlEvent), sim->events_mode ? b->quota : 1024);
  b->tags = g_byte_array_sized_new(sim->events_mode ? b->quota : 1024);
  guint32 *singles = sim->count_singles ? g_new0(guint32, sim->scanner->n_crystals) : NULL;
  while (sim->events_mode ? b->events->len < b->quota : b->sampled < b->quota) {
    if (b->sampled >= limit) {
      b->starved = TRUE;
      break;
    }
    if ((b->sampled & 4095) == 0 && g_atomic_int_get(&sim->stop)) break;
    b->sampled++;
    /* annihilation: a voxel by its activity, uniform within it */
    double x = tl_rng_uniform(&rng) * sim->n_src;
    guint64 m = (guint64)x;
    if (x - m >= sim->src[m].prob) m = sim->src[m].alias;
    const float *vc = sim->src[m].centre;
    double p[3];
    for (int k = 0; k < 3; k++) p[k] = vc[k] + (tl_rng_uniform(&rng) - 0.5) * g->voxel_mm[k];
    /* back-to-back photons along an isotropic direction (within the acceptance cone) */
    double cz = sim->cone_cos * (2.0 * tl_rng_uniform(&rng) - 1.0);
    double phi = 2.0 * G_PI * tl_rng_uniform(&rng), st = sqrt(1.0 - cz * cz);
    double d[3] = {st * cos(phi), st * sin(phi), cz}, nd[3] = {-d[0], -d[1], -d[2]};
    gint32 bin = 0;
    guint8 tag = TL_TAG_TRUE;
    gint64 a, c;
    if (sim->per_photon) {
      /* each photon on its own: the singles count a photon whose partner is lost too */
      Photon pa, pb;
      gboolean da = track(sim, &rng, p, d, &pa, b, singles);
      if (!da && !singles) continue;
      gboolean db = track(sim, &rng, p, nd, &pb, b, singles);
      if (!da || !db) continue;
      a = pa.crystal, c = pb.crystal;
      if (!tl_scanner_pair_allowed(sim->scanner, (guint)a, (guint)c)) continue;
      if (pa.scattered || pb.scattered) tag = TL_TAG_SCATTERED;
      /* TOF: s = c (t_a - t_b) / 2; unscattered, the annihilation's offset along the LOR;
       * scattered, half the difference of the real path lengths */
      if (sim->tof && !tof_bin(sim, &rng, tag == TL_TAG_TRUE ? lor_offset(cr, a, c, p)
                                                              : 0.5 * (pa.path - pb.path), &bin)) {
        b->tof_outside++;
        continue;
      }
    } else {
      double survive = 1.0 - tl_rng_uniform(&rng); /* drawn always: same streams with or without mu */
      double ha[3], hb[3];
      a = tl_detector_cast(sim->det, p, d, ha);
      if (a < 0) continue;
      c = tl_detector_cast(sim->det, p, nd, hb);
      if (c < 0) continue;
      /* tl_scanner_pair_allowed, inlined: groups differ, rings close enough */
      guint ra = cr[a].ring, rc = cr[c].ring;
      if (cr[a].group == cr[c].group || (ra > rc ? ra - rc : rc - ra) > sim->scanner->max_ring_difference)
        continue;
      b->geometric++;
      /* van Gendt et al. 2021 eq. 6: alpha = exp(-sum_n l(A; r_n) mu_n); the pair survives with
       * that
       * probability, i.e. when -ln(u) exceeds the line integral between the two hits */
      if (sim->mu && tl_ray_integral(sim->mu, ha, hb, -log(survive)) > -log(survive)) {
        b->attenuated++;
        continue;
      }
      if (sim->keep) { /* both photons through their crystals' efficiencies */
        gboolean ka = tl_rng_uniform(&rng) < sim->keep[a], kc = tl_rng_uniform(&rng) < sim->keep[c];
        b->efficiency_rejected += !ka + !kc;
        if (!ka || !kc) continue;
      }
      if (sim->tof && !tof_bin(sim, &rng, lor_offset(cr, a, c, p), &bin)) {
        b->tof_outside++;
        continue;
      }
    }
    TlEvent e = {(guint32)a, (guint32)c, bin};
    g_array_append_val(b->events, e);
    g_byte_array_append(b->tags, &tag, 1);
    b->scattered += tag == TL_TAG_SCATTERED;
  }
  g_mutex_lock(&sim->lock);
  if (singles) /* integer sums: the same totals whatever order the blocks finish in */
    for (guint i = 0; i < sim->scanner->n_crystals; i++) sim->singles[i] += singles[i];
  sim->blocks_done++;
  sim->events_done += b->events->len;
  g_cond_signal(&sim->cond);
  g_mutex_unlock(&sim->lock);
  g_free(singles);
}

void tl_simulate_params_init(TlSimulateParams *p) {
  memset(p, 0, sizeof *p);
  p->events = 1e6;
  p->seed = 1;
  p->coincidence_window_ns = TL_SIMULATE_DEFAULT_WINDOW_NS;
}

static gboolean check_params(const TlScanner *s, const TlImage *mu, const TlSimulateParams *p,
                             GError **error) {
  const char *bad = NULL;
  gboolean singles = p->activity_bq > 0;
  if (!(p->events >= 0 && p->events <= 1e10) || !(p->decays >= 0 && p->decays <= 1e13))
    bad = "0 <= events <= 1e10 and 0 <= decays <= 1e13";
  else if (p->events == 0 && p->decays == 0 && !singles)
    bad = "events > 0 or decays > 0";
  else if (!(p->randoms_fraction >= 0 && p->randoms_fraction < 1))
    bad = "a randoms fraction in [0, 1)";
  if (bad) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "simulate: events %g, decays %g, randoms fraction %g: expected %s", p->events,
                p->decays, p->randoms_fraction, bad);
    return FALSE;
  }
  if (p->tof && s->tof_bins == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "simulate: TOF asked for, but scanner '%s' has no TOF bins (tof_bins = 0)", s->name);
    return FALSE;
  }
  if (p->scatter && !mu) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "simulate: scatter asked for without an attenuation map (photons scatter where "
                "mu > 0: give the map)");
    return FALSE;
  }
  if (!(p->efficiency_spread >= 0 && p->efficiency_spread <= TL_SIMULATE_MAX_EFFICIENCY_SPREAD)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "simulate: efficiency spread %g (expected a relative spread in [0, %g])",
                p->efficiency_spread, TL_SIMULATE_MAX_EFFICIENCY_SPREAD);
    return FALSE;
  }
  for (guint i = 0; p->efficiencies && i < s->n_crystals; i++)
    if (!(p->efficiencies[i] > 0) || !isfinite(p->efficiencies[i])) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "simulate: efficiency of crystal %u is %g (expected finite and > 0)", i,
                  p->efficiencies[i]);
      return FALSE;
    }
  if (p->activity_bq != 0 || p->duration_s != 0) {
    if (!(p->activity_bq > 0 && p->activity_bq <= 1e12 && p->duration_s > 0 &&
          p->duration_s <= 1e6 && p->activity_bq * p->duration_s <= 1e13))
      bad = "activity in (0, 1e12] Bq, duration in (0, 1e6] s, at most 1e13 decays";
    else if (p->events != 0 || p->decays != 0)
      bad = "events = decays = 0 (the decays are activity x duration)";
    else if (p->randoms_fraction != 0)
      bad = "randoms fraction 0 (the randoms come from the singles)";
    else if (!(p->coincidence_window_ns > 0 && p->coincidence_window_ns <= 1000))
      bad = "a coincidence window in (0, 1000] ns";
    if (bad) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "simulate: randoms from singles with activity %g Bq, duration %g s, window %g ns, "
                  "events %g, decays %g, randoms fraction %g: expected %s", p->activity_bq,
                  p->duration_s, p->coincidence_window_ns, p->events, p->decays,
                  p->randoms_fraction, bad);
      return FALSE;
    }
  }
  return TRUE;
}

static guint64 draw_count(TlRng *r, double mean, gboolean exact) {
  return exact ? (guint64)llround(mean) : tl_rng_poisson(r, mean);
}

/* The efficiencies in use (NULL: none): the caller's map, or 1 + spread N(0, 1) drawn again
 * below MIN_EFFICIENCY (a normal truncated there: the realised spread is a little smaller
 * for large spreads), from its own stream of (efficiency_seed or seed). */
static float *efficiencies(const TlScanner *s, const TlSimulateParams *p) {
  if (p->efficiencies) return g_memdup2(p->efficiencies, sizeof(float) * s->n_crystals);
  if (p->efficiency_spread <= 0) return NULL;
  float *e = g_new(float, s->n_crystals);
  TlRng r;
  tl_rng_init(&r, p->efficiency_seed ? p->efficiency_seed : p->seed, STREAM_EFFICIENCY);
  for (guint i = 0; i < s->n_crystals; i++) {
    double v;
    do v = 1.0 + p->efficiency_spread * tl_rng_normal(&r);
    while (v < MIN_EFFICIENCY);
    e[i] = (float)v;
  }
  return e;
}

/* Random coincidences: uniform over the allowed crystal pairs, TOF bin uniform. */
static gboolean add_randoms(const Sim *sim, guint64 n, GArray *out, GError **error) {
  TlRng r;
  tl_rng_init(&r, sim->seed, STREAM_RANDOMS);
  const TlScanner *s = sim->scanner;
  for (guint64 i = 0; i < n; i++) {
    TlEvent e = {0, 0, 0};
    guint tries = 0;
    do {
      if (++tries > 1000000) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                    "simulate: scanner '%s' has (almost) no allowed crystal pairs for randoms", s->name);
        return FALSE;
      }
      e.a = tl_rng_below(&r, s->n_crystals);
      e.b = tl_rng_below(&r, s->n_crystals);
    } while (!tl_scanner_pair_allowed(s, e.a, e.b));
    if (sim->tof) e.tof_bin = (gint32)tl_rng_below(&r, 2 * sim->tof_half + 1) - sim->tof_half;
    g_array_append_val(out, e);
  }
  return TRUE;
}

/* Sum over the allowed unordered pairs of w_i w_j, through fan sums: for each i, the sum of
 * w_j over the crystals of other groups within the ring difference = (all rings in the
 * window) - (its own group in the window), from per-ring and per-(group, ring) prefix sums. */
static gboolean allowed_pair_sum(const TlScanner *s, const double *w, double *sum, GError **error) {
  guint groups = 0, R = s->n_rings, W = R + 1;
  for (guint i = 0; i < s->n_crystals; i++) groups = MAX(groups, s->crystals[i].group + 1);
  if ((guint64)groups * W > (1u << 26)) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "simulate: randoms from singles: scanner "
                "'%s' has %u groups x %u rings, more than the 2^26 entries of the fan-sum table",
                s->name, groups, R);
    return FALSE;
  }
  double *ring = g_new0(double, W), *grp = g_new0(double, (gsize)groups * W);
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *c = &s->crystals[i];
    ring[c->ring + 1] += w[i];
    grp[(gsize)c->group * W + c->ring + 1] += w[i];
  }
  for (guint r = 1; r < W; r++) ring[r] += ring[r - 1];
  for (guint g = 0; g < groups; g++)
    for (guint r = 1; r < W; r++) grp[(gsize)g * W + r] += grp[(gsize)g * W + r - 1];
  double total = 0;
  guint d = s->max_ring_difference;
  for (guint i = 0; i < s->n_crystals; i++) {
    const TlCrystal *c = &s->crystals[i];
    guint lo = c->ring > d ? c->ring - d : 0, hi = MIN(R - 1, c->ring + d);
    const double *gp = grp + (gsize)c->group * W;
    total += w[i] * ((ring[hi + 1] - ring[lo]) - (gp[hi + 1] - gp[lo]));
  }
  g_free(ring);
  g_free(grp);
  *sum = 0.5 * total; /* every pair seen from both ends */
  return TRUE;
}

/* Vose alias table over weights w (n entries, some > 0). */
typedef struct {
  double *prob;
  guint32 *alias;
  guint n;
} Alias;

static void alias_init(Alias *t, const double *w, guint n) {
  double total = 0;
  for (guint i = 0; i < n; i++) total += w[i];
  t->n = n;
  t->prob = g_new(double, n);
  t->alias = g_new(guint32, n);
  guint32 *small = g_new(guint32, n), *large = g_new(guint32, n);
  guint ns = 0, nl = 0;
  for (guint i = 0; i < n; i++) {
    t->prob[i] = w[i] * n / total;
    t->alias[i] = i;
    if (t->prob[i] < 1.0) small[ns++] = i; else large[nl++] = i;
  }
  while (ns && nl) {
    guint32 s = small[--ns], l = large[nl - 1];
    t->alias[s] = l;
    t->prob[l] -= 1.0 - t->prob[s];
    if (t->prob[l] < 1.0) {
      nl--;
      small[ns++] = l;
    }
  }
  while (nl) t->prob[large[--nl]] = 1.0;
  while (ns) t->prob[small[--ns]] = 1.0; /* round-off */
  g_free(small);
  g_free(large);
}

static guint alias_draw(const Alias *t, TlRng *r) {
  double x = tl_rng_uniform(r) * t->n;
  guint i = MIN((guint)x, t->n - 1);
  return x - i < t->prob[i] ? i : t->alias[i];
}

/* Randoms from singles (Casey & Hoffman 1986): crystal i detects S_i single photons per
 * second, n_i in the simulated decays D, i.e. S_i = n_i / T_sim with T_sim = D / activity the
 * time the simulation stands for. Two singles fall within the coincidence window 2 tau at the
 * rate 2 tau S_i S_j, so pair (i, j) holds Poisson(2 tau S_i S_j T) randoms over the
 * acquisition's T seconds; summed over the allowed pairs that is Poisson(R), and given the
 * total the pairs are multinomial with p_ij proportional to S_i S_j: i and j drawn by their
 * singles (alias table), the pair drawn again unless allowed. The prompt window and the
 * delayed window see the same process independently: two draws from two streams. */
static gboolean singles_randoms(const Sim *sim, const TlSimulateParams *p, double decays,
                                TlRng *master, GArray *prompts, GArray *delayed, double *expected,
                                GError **error) {
  const TlScanner *s = sim->scanner;
  guint n = s->n_crystals;
  double *S = g_new(double, n), pairs, tsim = decays / p->activity_bq;
  double total = 0;
  for (guint i = 0; i < n; i++) total += (S[i] = sim->singles[i] / tsim);
  gboolean ok = allowed_pair_sum(s, S, &pairs, error);
  if (!ok) goto out;
  *expected = p->coincidence_window_ns * 1e-9 * pairs * p->duration_s;
  if (*expected <= 0) goto out;
  double accept = 2.0 * pairs / (total * total); /* of (i, j) drawn by singles */
  if (accept < 1e-6) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "simulate: randoms from singles: only "
                "%.2g of the singles products fall in pairs scanner '%s' allows", accept, s->name);
    ok = FALSE;
    goto out;
  }
  Alias t;
  alias_init(&t, S, n);
  GArray *out[2] = {prompts, delayed};
  for (int k = 0; k < 2; k++) {
    TlRng r;
    tl_rng_init(&r, sim->seed, k ? STREAM_DELAYED : STREAM_RANDOMS);
    guint64 count = draw_count(k ? &r : master, *expected, p->exact_count);
    for (guint64 i = 0; i < count; i++) {
      TlEvent e = {0, 0, 0};
      do {
        e.a = alias_draw(&t, &r);
        e.b = alias_draw(&t, &r);
      } while (!tl_scanner_pair_allowed(s, e.a, e.b));
      if (sim->tof) e.tof_bin = (gint32)tl_rng_below(&r, 2 * sim->tof_half + 1) - sim->tof_half;
      g_array_append_val(out[k], e);
    }
  }
  g_free(t.prob);
  g_free(t.alias);
out:
  g_free(S);
  return ok;
}

static gboolean run_blocks(Sim *sim, Block *blocks, guint n_blocks, guint n_threads,
                           guint64 expected, TlSimulateProgress progress, gpointer user_data,
                           GCancellable *cancel, GError **error) {
  GThreadPool *pool = g_thread_pool_new(run_block, sim, (int)n_threads, TRUE, error);
  if (!pool) return FALSE;
  for (guint i = 0; i < n_blocks; i++) g_thread_pool_push(pool, &blocks[i], NULL);
  g_mutex_lock(&sim->lock);
  while (sim->blocks_done < n_blocks) {
    g_cond_wait_until(&sim->cond, &sim->lock, g_get_monotonic_time() + 100000);
    if (cancel && g_cancellable_is_cancelled(cancel)) g_atomic_int_set(&sim->stop, 1);
    guint64 ev = sim->events_done;
    double f = sim->events_mode ? (expected ? (double)ev / expected : 1.0)
                                : (double)sim->blocks_done / n_blocks;
    if (progress) {
      g_mutex_unlock(&sim->lock);
      progress(MIN(f, 1.0), ev, user_data);
      g_mutex_lock(&sim->lock);
    }
  }
  g_mutex_unlock(&sim->lock);
  g_thread_pool_free(pool, FALSE, TRUE);
  if (g_cancellable_set_error_if_cancelled(cancel, error)) return FALSE;
  return TRUE;
}

static void fill_stats(TlSimulateStats *st, const Sim *sim, const Block *blocks, guint n) {
  for (guint i = 0; i < n; i++) {
    const Block *b = &blocks[i];
    st->sampled += b->sampled;
    st->geometric += b->geometric;
    st->attenuated += b->attenuated;
    st->tof_outside += b->tof_outside;
    st->scattered += b->scattered;
    st->trues += b->events->len - b->scattered;
    st->photons += b->photons;
    st->interacted += b->interacted;
    st->absorbed += b->absorbed;
    st->missed += b->missed;
    st->energy_rejected += b->energy_rejected;
    st->efficiency_rejected += b->efficiency_rejected;
    st->singles += b->singles;
  }
  st->cone_cos = sim->cone_cos;
  st->decays = st->sampled / sim->cone_cos;
}

TlListmode *tl_simulate(const TlScanner *scanner, const TlImage *activity, const TlImage *mu,
                        const TlSimulateParams *params, TlSimulateProgress progress,
                        gpointer user_data, GCancellable *cancel, TlSimulateStats *stats,
                        GError **error) {
  gint64 t0 = g_get_monotonic_time();
  if (!tl_scanner_validate(scanner, error) || !check_params(scanner, mu, params, error) ||
      !tl_image_check_nonnegative(activity, "activity image", error) ||
      (mu && !tl_image_check_nonnegative(mu, "attenuation map", error)))
    return NULL;
  gboolean from_singles = params->activity_bq > 0;
  Sim sim = {.scanner = scanner, .grid = activity->grid, .seed = params->seed,
             .events_mode = params->events > 0, .tof = params->tof, .scatter = params->scatter};
  sim.count_singles = from_singles || params->singles_out;
  sim.per_photon = sim.scatter || sim.count_singles;
  TlListmode *lm = NULL;
  Block *blocks = NULL;
  guint n_blocks = 0;
  TlSimulateStats st = {0};
  GArray *all = NULL, *delayed = NULL;
  GByteArray *tags = NULL;
  float *eff = efficiencies(scanner, params);
  g_mutex_init(&sim.lock);
  g_cond_init(&sim.cond);
  sim.det = tl_detector_new(scanner, error);
  if (!sim.det) goto out;
  st.outside_fraction = build_sources(&sim, activity);
  if (st.outside_fraction < 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "simulate: the activity image holds no activity inside scanner '%s'", scanner->name);
    goto out;
  }
  sim.mu = mu ? tl_image_crop_to_support(mu) : NULL;
  if (sim.scatter && !sim.mu) sim.scatter = FALSE; /* an all-zero map: nothing to scatter in */
  if (sim.mu) {
    const TlImageGrid *mg = &sim.mu->grid;
    for (guint64 i = 0; i < tl_image_grid_n_voxels(mg); i++) sim.mu_max = MAX(sim.mu_max, sim.mu->data[i]);
    for (int k = 0; k < 3; k++) {
      sim.mu_lo[k] = mg->origin_mm[k] - 0.5 * mg->voxel_mm[k];
      sim.mu_hi[k] = sim.mu_lo[k] + mg->dims[k] * (double)mg->voxel_mm[k];
      sim.mu_inv_vox[k] = 1.0 / mg->voxel_mm[k];
    }
    if (!(sim.mu_max > 0)) sim.scatter = FALSE; /* no positive mu: nothing to scatter in */
  }
  sim.cone_cos = cone_cos(&sim, activity, sim.count_singles);
  tl_scanner_energy(scanner, sim.window, &sim.resolution);
  sim.sigma_511 = tl_klein_nishina_total(ANNIHILATION_KEV);
  if (eff) {
    float mx = 0;
    for (guint i = 0; i < scanner->n_crystals; i++) mx = MAX(mx, eff[i]);
    sim.keep = g_new(float, scanner->n_crystals);
    for (guint i = 0; i < scanner->n_crystals; i++) sim.keep[i] = eff[i] / mx;
  }
  if (sim.count_singles) sim.singles = g_new0(guint64, scanner->n_crystals);
  if (sim.tof) {
    sim.tof_sigma = tl_scanner_tof_sigma_mm(scanner);
    sim.tof_bin = scanner->tof_bin_mm;
    sim.tof_half = (gint32)(scanner->tof_bins - 1) / 2;
  }
  /* totals: trues ~ Poisson(N (1 - f)), randoms ~ Poisson(N f) in events mode; the decays
   * of the acquisition with randoms from singles */
  TlRng master;
  tl_rng_init(&master, params->seed, 0);
  double f = params->randoms_fraction;
  double decays = from_singles ? params->activity_bq * params->duration_s : params->decays;
  guint64 total = sim.events_mode ? draw_count(&master, params->events * (1 - f), params->exact_count)
                                  : draw_count(&master, decays * sim.cone_cos, params->exact_count);
  guint64 per = sim.events_mode ? BLOCK_TRUES : BLOCK_DECAYS;
  n_blocks = (guint)((total + per - 1) / per);
  blocks = g_new0(Block, MAX(n_blocks, 1));
  for (guint i = 0; i < n_blocks; i++) {
    blocks[i].index = i;
    blocks[i].quota = MIN(per, total - (guint64)i * per);
  }
  guint threads = params->n_threads ? params->n_threads : g_get_num_processors();
  if (!run_blocks(&sim, blocks, n_blocks, MAX(threads, 1), sim.events_mode ? total : 0, progress,
                  user_data, cancel, error))
    goto out;
  fill_stats(&st, &sim, blocks, n_blocks);
  for (guint i = 0; i < n_blocks; i++)
    if (blocks[i].starved) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "simulate: only %u events detected from %" G_GUINT64_FORMAT " annihilations in "
                  "block %u: the activity hardly reaches scanner '%s'",
                  blocks[i].events->len, blocks[i].sampled, i, scanner->name);
      goto out;
    }
  guint64 prompts = st.trues + st.scattered;
  all = g_array_sized_new(FALSE, FALSE, sizeof(TlEvent), prompts + 1024);
  tags = g_byte_array_sized_new(prompts + 1024);
  for (guint i = 0; i < n_blocks; i++) {
    g_array_append_vals(all, blocks[i].events->data, blocks[i].events->len);
    g_byte_array_append(tags, blocks[i].tags->data, blocks[i].tags->len);
  }
  if (from_singles) {
    delayed = g_array_new(FALSE, FALSE, sizeof(TlEvent));
    if (!singles_randoms(&sim, params, st.decays, &master, all, delayed, &st.randoms_expected,
                         error))
      goto out;
    st.delayed = delayed->len;
  } else {
    guint64 n_randoms = sim.events_mode ? draw_count(&master, params->events * f, params->exact_count)
                                        : draw_count(&master, prompts * f / (1 - f), params->exact_count);
    if (!add_randoms(&sim, n_randoms, all, error)) goto out;
  }
  st.randoms = all->len - prompts;
  static const guint8 random_tag = TL_TAG_RANDOM;
  for (guint64 i = prompts; i < all->len; i++) g_byte_array_append(tags, &random_tag, 1);
  /* one random order (Fisher-Yates): randoms and blocks mixed like a real acquisition */
  TlRng sh;
  tl_rng_init(&sh, params->seed, STREAM_SHUFFLE);
  TlEvent *ev = (TlEvent *)all->data;
  guint8 *tg = tags->data;
  for (guint64 i = all->len; i > 1; i--) {
    guint64 j = tl_rng_next(&sh) % i;
    TlEvent t = ev[i - 1];
    ev[i - 1] = ev[j];
    ev[j] = t;
    guint8 u = tg[i - 1];
    tg[i - 1] = tg[j];
    tg[j] = u;
  }
  TlScanner *copy = tl_scanner_copy(scanner);
  if (!params->tof) copy->tof_bins = 0, copy->tof_bin_mm = 0, copy->tof_fwhm_ps = 0;
  lm = g_new0(TlListmode, 1);
  lm->scanner = copy;
  lm->n_events = all->len;
  lm->has_tof = params->tof;
  lm->events = (TlEvent *)g_array_free(g_steal_pointer(&all), FALSE);
  lm->tags = g_byte_array_free(g_steal_pointer(&tags), FALSE);
  if (delayed) {
    lm->n_delayed = delayed->len;
    lm->delayed = (TlEvent *)g_array_free(g_steal_pointer(&delayed), lm->n_delayed == 0);
    lm->duration_s = params->duration_s;
  }
  if (from_singles) {
    /* the singles rates the randoms were drawn from (singles_randoms: S_i = n_i / T_sim with
     * T_sim = decays / activity), so the data carry their singles model */
    lm->singles = g_new(double, scanner->n_crystals);
    for (guint i = 0; i < scanner->n_crystals; i++)
      lm->singles[i] = (double)sim.singles[i] * params->activity_bq / st.decays;
    lm->coincidence_window_ns = params->coincidence_window_ns;
  }
  { /* a scope of its own: the gotos above must not jump over these g_autofree */
    g_autofree char *rnd = from_singles
        ? g_strdup_printf("randoms=singles activity=%g duration=%g window_ns=%g",
                          params->activity_bq, params->duration_s, params->coincidence_window_ns)
        : g_strdup_printf("randoms=%g", f);
    g_autofree char *phys = g_strdup_printf(
        "%s%s", sim.scatter ? " scatter=1" : "",
        eff ? (params->efficiencies ? " efficiencies=given" : " efficiencies=drawn") : "");
    lm->description = g_strdup_printf(
        "%s%sseed=%" G_GUINT64_FORMAT " decays=%.6g attenuation=%d tof=%d %s%s",
        params->description ? params->description : "", params->description ? " " : "",
        params->seed, st.decays, mu != NULL, params->tof, rnd, phys);
    if (eff && params->efficiency_spread > 0 && !params->efficiencies) {
      char *d = lm->description;
      lm->description = g_strdup_printf("%s spread=%g efficiency_seed=%" G_GUINT64_FORMAT, d,
                                        params->efficiency_spread,
                                        params->efficiency_seed ? params->efficiency_seed : params->seed);
      g_free(d);
    }
  }
  if (params->efficiencies_out)
    for (guint i = 0; i < scanner->n_crystals; i++) params->efficiencies_out[i] = eff ? eff[i] : 1.0f;
  if (params->singles_out)
    for (guint i = 0; i < scanner->n_crystals; i++) params->singles_out[i] = (double)sim.singles[i];
out:
  for (guint i = 0; i < n_blocks; i++) {
    if (blocks[i].events) g_array_unref(blocks[i].events);
    if (blocks[i].tags) g_byte_array_unref(blocks[i].tags);
  }
  if (all) g_array_unref(all);
  if (delayed) g_array_unref(delayed);
  if (tags) g_byte_array_unref(tags);
  g_free(blocks);
  tl_detector_free(sim.det);
  tl_image_free(sim.mu);
  g_free(sim.vox);
  g_free(sim.src);
  g_free(sim.keep);
  g_free(sim.singles);
  g_free(eff);
  g_mutex_clear(&sim.lock);
  g_cond_clear(&sim.cond);
  st.seconds = (g_get_monotonic_time() - t0) / 1e6;
  if (stats) *stats = st;
  return lm;
}

gboolean tl_simulate_save_efficiencies(const TlScanner *scanner, const float *eff,
                                       const TlSimulateParams *params, const char *path,
                                       GError **error) {
  float mx = 0;
  for (guint i = 0; i < scanner->n_crystals; i++) mx = MAX(mx, eff[i]);
  g_autofree char *name = g_strdup(scanner->name);
  g_strdelimit(name, "\r\n", ' ');
  GString *t = g_string_new("# tomolab crystal efficiencies 1 (docs/formats.md)\n");
  g_string_append_printf(t, "# scanner = %s\n# crystals = %u\n", name, scanner->n_crystals);
  if (params && params->efficiencies)
    g_string_append(t, "# source = given\n");
  else if (params)
    g_string_append_printf(t, "# spread = %g\n# seed = %" G_GUINT64_FORMAT "\n",
                           params->efficiency_spread,
                           params->efficiency_seed ? params->efficiency_seed : params->seed);
  char b[32];
  tl_format_float(b, mx);
  g_string_append_printf(t, "# max = %s (a photon reaching crystal i is kept with probability "
                         "efficiency_i / max)\n# one value per crystal id, from 0\n", b);
  for (guint i = 0; i < scanner->n_crystals; i++) {
    tl_format_float(b, eff[i]);
    g_string_append_printf(t, "%s\n", b);
  }
  gboolean ok = tl_file_write_text(path, t->str, error);
  g_string_free(t, TRUE);
  return ok;
}
