/* Monte-Carlo simulator: fixed blocks of work on a GThreadPool, one random stream per block. */
#include "tl-simulate.h"
#include "tl-detect.h"
#include "image/tl-ray-integral.h"
#include "image/tl-rng.h"
#include <math.h>
#include <string.h>

#define BLOCK_TRUES 8192   /* events mode: detected events per block */
#define BLOCK_DECAYS 65536 /* decays mode: sampled annihilations per block */
#define STREAM_RANDOMS (G_GUINT64_CONSTANT(1) << 40)
#define STREAM_SHUFFLE (G_GUINT64_CONSTANT(1) << 41)

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
  double cone_cos;
  gboolean events_mode, tof;
  double tof_sigma, tof_bin;
  gint32 tof_half;
  guint64 seed;
  gint stop;         /* atomic: cancel */
  GMutex lock;
  GCond cond;
  guint blocks_done;
  guint64 events_done;
} Sim;

typedef struct {
  guint64 index, quota;
  GArray *events;
  guint64 sampled, geometric, attenuated, tof_outside;
  gboolean starved;
} Block;

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
 * decays it stands for) skips directions that can never be detected. */
static double cone_cos(const Sim *sim, const TlImage *act) {
  const TlScanner *s = sim->scanner;
  double r_in = G_MAXDOUBLE, zlo = G_MAXDOUBLE, zhi = -G_MAXDOUBLE, r_max = 0;
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
    tl_image_grid_voxel_centre(g, i % g->dims[0], i / g->dims[0] % g->dims[1], 0, c);
    double r = hypot(fabs(c[0]) + 0.5 * g->voxel_mm[0], fabs(c[1]) + 0.5 * g->voxel_mm[1]);
    r_max = MAX(r_max, r);
  }
  if (r_in - r_max <= 1.0) return 1.0;
  double kappa = (zhi - zlo) / (2.0 * (r_in - r_max));
  return MIN(1.0, kappa / sqrt(1.0 + kappa * kappa));
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
    double survive = 1.0 - tl_rng_uniform(&rng); /* drawn always: same streams with or without mu */
    double ha[3], hb[3];
    gint64 a = tl_detector_cast(sim->det, p, d, ha);
    if (a < 0) continue;
    gint64 c = tl_detector_cast(sim->det, p, nd, hb);
    if (c < 0) continue;
    /* tl_scanner_pair_allowed, inlined: groups differ, rings close enough */
    guint ra = cr[a].ring, rc = cr[c].ring;
    if (cr[a].group == cr[c].group || (ra > rc ? ra - rc : rc - ra) > sim->scanner->max_ring_difference)
      continue;
    b->geometric++;
    /* seed 000 eq. 6: alpha = exp(-sum_n l(A; r_n) mu_n); the pair survives with that
     * probability, i.e. when -ln(u) exceeds the line integral between the two hits */
    if (sim->mu && tl_ray_integral(sim->mu, ha, hb, -log(survive)) > -log(survive)) {
      b->attenuated++;
      continue;
    }
    gint32 bin = 0;
    if (sim->tof) {
      /* position along the LOR from its midpoint, positive towards crystal b (docs/formats.md) */
      const float *A = cr[a].centre, *B = cr[c].centre;
      double u[3] = {B[0] - A[0], B[1] - A[1], B[2] - A[2]};
      double len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), s = 0;
      for (int k = 0; k < 3; k++) s += (p[k] - 0.5 * (A[k] + B[k])) * u[k] / len;
      s += sim->tof_sigma * tl_rng_normal(&rng);
      double fb = floor(s / sim->tof_bin + 0.5);
      if (fabs(fb) > sim->tof_half) {
        b->tof_outside++;
        continue;
      }
      bin = (gint32)fb;
    }
    TlEvent e = {(guint32)a, (guint32)c, bin};
    g_array_append_val(b->events, e);
  }
  g_mutex_lock(&sim->lock);
  sim->blocks_done++;
  sim->events_done += b->events->len;
  g_cond_signal(&sim->cond);
  g_mutex_unlock(&sim->lock);
}

void tl_simulate_params_init(TlSimulateParams *p) {
  memset(p, 0, sizeof *p);
  p->events = 1e6;
  p->seed = 1;
}

static gboolean check_params(const TlScanner *s, const TlSimulateParams *p, GError **error) {
  const char *bad = NULL;
  if (!(p->events >= 0 && p->events <= 1e10) || !(p->decays >= 0 && p->decays <= 1e13))
    bad = "0 <= events <= 1e10 and 0 <= decays <= 1e13";
  else if (p->events == 0 && p->decays == 0)
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
  return TRUE;
}

static guint64 draw_count(TlRng *r, double mean, gboolean exact) {
  return exact ? (guint64)llround(mean) : tl_rng_poisson(r, mean);
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
    st->sampled += blocks[i].sampled;
    st->geometric += blocks[i].geometric;
    st->attenuated += blocks[i].attenuated;
    st->tof_outside += blocks[i].tof_outside;
    st->trues += blocks[i].events->len;
  }
  st->cone_cos = sim->cone_cos;
  st->decays = st->sampled / sim->cone_cos;
}

TlListmode *tl_simulate(const TlScanner *scanner, const TlImage *activity, const TlImage *mu,
                        const TlSimulateParams *params, TlSimulateProgress progress,
                        gpointer user_data, GCancellable *cancel, TlSimulateStats *stats,
                        GError **error) {
  gint64 t0 = g_get_monotonic_time();
  if (!tl_scanner_validate(scanner, error) || !check_params(scanner, params, error) ||
      !tl_image_check_nonnegative(activity, "activity image", error) ||
      (mu && !tl_image_check_nonnegative(mu, "attenuation map", error)))
    return NULL;
  Sim sim = {.scanner = scanner, .grid = activity->grid, .seed = params->seed,
             .events_mode = params->events > 0, .tof = params->tof};
  TlListmode *lm = NULL;
  Block *blocks = NULL;
  guint n_blocks = 0;
  TlSimulateStats st = {0};
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
  sim.cone_cos = cone_cos(&sim, activity);
  if (sim.tof) {
    sim.tof_sigma = tl_scanner_tof_sigma_mm(scanner);
    sim.tof_bin = scanner->tof_bin_mm;
    sim.tof_half = (gint32)(scanner->tof_bins - 1) / 2;
  }
  /* totals: trues ~ Poisson(N (1 - f)), randoms ~ Poisson(N f) in events mode */
  TlRng master;
  tl_rng_init(&master, params->seed, 0);
  double f = params->randoms_fraction;
  guint64 total = sim.events_mode ? draw_count(&master, params->events * (1 - f), params->exact_count)
                                  : draw_count(&master, params->decays * sim.cone_cos, params->exact_count);
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
  guint64 n_randoms = sim.events_mode ? draw_count(&master, params->events * f, params->exact_count)
                                      : draw_count(&master, st.trues * f / (1 - f), params->exact_count);
  GArray *all = g_array_sized_new(FALSE, FALSE, sizeof(TlEvent), st.trues + n_randoms);
  for (guint i = 0; i < n_blocks; i++) g_array_append_vals(all, blocks[i].events->data, blocks[i].events->len);
  if (!add_randoms(&sim, n_randoms, all, error)) {
    g_array_unref(all);
    goto out;
  }
  st.randoms = n_randoms;
  /* one random order (Fisher-Yates): randoms and blocks mixed like a real acquisition */
  TlRng sh;
  tl_rng_init(&sh, params->seed, STREAM_SHUFFLE);
  TlEvent *ev = (TlEvent *)all->data;
  for (guint64 i = all->len; i > 1; i--) {
    guint64 j = tl_rng_next(&sh) % i;
    TlEvent t = ev[i - 1];
    ev[i - 1] = ev[j];
    ev[j] = t;
  }
  TlScanner *copy = tl_scanner_copy(scanner);
  if (!params->tof) copy->tof_bins = 0, copy->tof_bin_mm = 0, copy->tof_fwhm_ps = 0;
  lm = g_new0(TlListmode, 1);
  lm->scanner = copy;
  lm->n_events = all->len;
  lm->has_tof = params->tof;
  lm->events = (TlEvent *)g_array_free(all, FALSE);
  lm->description = g_strdup_printf(
      "%s%sseed=%" G_GUINT64_FORMAT " decays=%.6g attenuation=%d tof=%d randoms=%g",
      params->description ? params->description : "", params->description ? " " : "",
      params->seed, st.decays, mu != NULL, params->tof, f);
out:
  for (guint i = 0; i < n_blocks; i++)
    if (blocks[i].events) g_array_unref(blocks[i].events);
  g_free(blocks);
  tl_detector_free(sim.det);
  tl_image_free(sim.mu);
  g_free(sim.vox);
  g_free(sim.src);
  g_mutex_clear(&sim.lock);
  g_cond_clear(&sim.cond);
  st.seconds = (g_get_monotonic_time() - t0) / 1e6;
  if (stats) *stats = st;
  return lm;
}
