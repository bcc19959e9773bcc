/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/pet-nema-quant (PET module, issue 13): the NEMA IEC body phantom on the DMI simulated
 * with every physics effect of the simulator (attenuation, Compton scatter in the energy
 * window, crystal efficiencies, randoms from singles with delayeds), reconstructed with every
 * correction (the normalisation estimated from a separate simulated scan of a uniform cylinder
 * with the same crystal efficiencies, attenuation, randoms from the delayeds, SSS with the tail
 * fit iterated with the reconstruction), with attenuation correction only and with none: the
 * NEMA NU 2 contrast recovery per hot sphere (10, 13, 17, 22, 28, 37 mm, 4:1) and the
 * background variability (image/tl-nema.h), for docs/pet.md's table. Issue 26 item 5 adds a
 * trues-only row (the scan's trues-tagged prompts, normalisation and attenuation) and every
 * correction with the last SSS round restarted from the uniform image (tl_solver_restart) for
 * every image's iterations, the image STIR makes with the final estimate: every image has
 * iterations + rounds x round-iterations, and the done-when's differences to trues-only are
 * printed.
 *
 *   ./build/bench/pet-nema-quant [--background 5300] [--duration 4] [--norm-events 1e7]
 *       [--iterations 3] [--rounds 2] [--round-iterations 1] [--subsets 10] [--voxel 2.78] [--spread 0.1]
 *       [--bin 1] [--bin-rings 1] [--algorithm osem] [--binned] [--rows all,restart,...]
 *       [--nxy N] [--seed 1] [--scatter-profile] [--dump] [--expected [--noise]]
 *
 * --bin T --bin-rings R bins the DMI's crystals T x R (4 x 3 is test-pet-quant's scanner:
 * 1632 crystals, minutes instead of an hour on lavapipe). --algorithm runs every row with one
 * algorithm of the registry (issue 26: ab-emml against osem, the same for every row);
 * --binned histograms the prompts into every allowed crystal pair, zero counts kept (ab-emml
 * needs them: a zero count is a datum); --rows runs only the named rows (all, restart, trues,
 * atten, none; tr-rnd, tr-sc: the same scan's trues + randoms or trues + scattered prompts with
 * their one correction; a -nonorm suffix on trues, all, tr-rnd, tr-sc: without the
 * normalisation). --nxy sets the grid's width in voxels (odd: the axis inside a voxel),
 * --seed the scan's noise, --scatter-profile prints each SSS estimate against the scattered
 * prompts by line distance and ring difference, --dump the lung insert's voxels (issue 26
 * item 5: bench/README.md "The lung, found"). --expected replaces the scan by noiseless binned
 * data (expected_make) and allows the row all-known (every correction with the scatter term
 * the data were made with, from the first iteration): what is left between it and trues-only
 * is EM's convergence under an additive term, not an estimate; --noise draws them (Poisson,
 * --seed): the line model's noise without the simulator's physics (bench/README.md "The spheres
 * and the lung at equal iterations"). Each row also prints every sphere's mean over its whole
 * volume against the all-z background (spheres_3d): ~90 voxels for the 22 mm sphere where
 * NEMA's interior circle has ~12.
 *
 * The sensitivity images are cached ($XDG_CACHE_HOME/tomolab): with the normalisation and the
 * mu-map neither has the scanner's symmetries, so their first computation over the DMI's
 * 1.9e8 pairs takes minutes each on lavapipe. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pet-common.h"
#include "image/tl-nema.h"
#include "image/tl-rng.h"
#include "pet/tl-norm-estimate.h"
#include "pet/correct/tl-randoms.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"
#include "pet/correct/tl-sss.h"

#define EFFICIENCY_SEED 77

/* A row: which prompts (by simulation tag) and which corrections. Issue 26 item 5's
 * experiments add rows that drop one effect from the data (the same scan's trues + randoms,
 * trues + scattered) or one estimate from the corrections (no normalisation), so each effect
 * and each estimate is measured on the same realisation. */
enum { D_TRUE = 1 << TL_TAG_TRUE, D_SCAT = 1 << TL_TAG_SCATTERED, D_RAND = 1 << TL_TAG_RANDOM };
typedef struct {
  const char *key, *name;
  guint data;                       /* D_* of the prompts reconstructed */
  gboolean atten, norm, randoms, sss, restart;
  gboolean known; /* --expected: the scatter term the data were made with, from the start */
} RowSpec;
static const RowSpec row_spec[] = {
    {"all", "every correction", D_TRUE | D_SCAT | D_RAND, TRUE, TRUE, TRUE, TRUE, FALSE},
    {"restart", "every correction, last round restarted", D_TRUE | D_SCAT | D_RAND, TRUE, TRUE,
     TRUE, TRUE, TRUE},
    {"trues", "trues only", D_TRUE, TRUE, TRUE, FALSE, FALSE, FALSE},
    {"atten", "attenuation only", D_TRUE | D_SCAT | D_RAND, TRUE, FALSE, FALSE, FALSE, FALSE},
    {"none", "none", D_TRUE | D_SCAT | D_RAND, FALSE, FALSE, FALSE, FALSE, FALSE},
    {"tr-rnd", "trues + randoms, randoms corrected", D_TRUE | D_RAND, TRUE, TRUE, TRUE, FALSE,
     FALSE},
    {"tr-sc", "trues + scattered, SSS", D_TRUE | D_SCAT, TRUE, TRUE, FALSE, TRUE, FALSE},
    {"trues-nonorm", "trues only, no normalisation", D_TRUE, TRUE, FALSE, FALSE, FALSE, FALSE},
    {"all-nonorm", "every correction but the normalisation", D_TRUE | D_SCAT | D_RAND, TRUE,
     FALSE, TRUE, TRUE, FALSE},
    {"tr-rnd-nonorm", "trues + randoms, randoms corrected, no normalisation", D_TRUE | D_RAND,
     TRUE, FALSE, TRUE, FALSE, FALSE},
    {"tr-sc-nonorm", "trues + scattered, SSS, no normalisation", D_TRUE | D_SCAT, TRUE, FALSE,
     FALSE, TRUE, FALSE},
    {"all-known", "every correction, the true scatter from the start", D_TRUE | D_SCAT | D_RAND,
     TRUE, TRUE, TRUE, FALSE, FALSE, TRUE},
};
#define V_N G_N_ELEMENTS(row_spec)

/* The prompts of lm whose tag is in `data` (a new list mode on a copy of the scanner). */
static TlListmode *select_prompts(const TlListmode *lm, guint data) {
  guint64 n = 0;
  for (guint64 i = 0; i < lm->n_events; i++) n += (data >> lm->tags[i]) & 1;
  TlListmode *out = tl_listmode_new(tl_scanner_copy(lm->scanner), n);
  n = 0;
  for (guint64 i = 0; i < lm->n_events; i++)
    if ((data >> lm->tags[i]) & 1) out->events[n++] = lm->events[i];
  out->n_events = n;
  return out;
}

/* The reference row of row k: trues only with the same normalisation choice. */
static int reference_row(int k) {
  const char *want = row_spec[k].norm ? "trues" : "trues-nonorm";
  for (int j = 0; j < (int)V_N; j++)
    if (!strcmp(row_spec[j].key, want)) return j;
  return -1;
}

/* The DMI with its crystals binned t x r (transaxial x rings), without TOF. */
static TlScanner *binned_scanner(const TlScanner *dmi, guint t, guint r, GError **error) {
  TlScannerLayout l = *dmi->layout;
  if (l.crystals_per_side % t || l.module_rings % r) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "--bin %u --bin-rings %u: expected "
                "divisors of the DMI's %u crystals per side and %u rings per module", t, r,
                l.crystals_per_side, l.module_rings);
    return NULL;
  }
  l.n_rings /= r, l.module_rings /= r, l.crystals_per_side /= t;
  l.crystal_pitch_mm *= t, l.ring_pitch_mm *= r;
  g_autoptr(TlScanner) sc = tl_scanner_new_from_layout("dmi binned", &l, dmi, error);
  if (!sc) return NULL;
  sc->crystal_size[0] = (float)l.crystal_pitch_mm, sc->crystal_size[1] = (float)l.ring_pitch_mm;
  sc->tof_bins = 0, sc->tof_bin_mm = 0, sc->tof_fwhm_ps = 0;
  return tl_scanner_validate(sc, error) ? g_steal_pointer(&sc) : NULL;
}

/* The normalisation from a simulated scan of a uniform cylinder (r 360 mm, the whole axial
 * field) in air with the scanner's crystal efficiencies: every line of response the scanner
 * accepts crosses it, no attenuation (hence no scatter), no randoms. */
static TlNorm *estimate_norm(TlContext *ctx, const TlScanner *sc, double events, double spread,
                             GError **error) {
  double t0 = bench_now();
  guint nz = (guint)ceil(200.0 / 8.0);
  TlImageGrid g = tl_image_grid_centred(92, 92, nz, 8.0f, 8.0f, 8.0f);
  g_autoptr(TlPhantom) ph = tl_phantom_new("normalisation cylinder");
  tl_phantom_add(ph, &(TlShape){.kind = TL_SHAPE_CYLINDER, .radius = 360.0f,
                                .half_length = 0.5f * nz * 8.0f, .axis = 2, .activity = 1.0f,
                                .flags = TL_SHAPE_SETS_ACTIVITY});
  g_autoptr(TlImage) src = NULL;
  if (!tl_phantom_rasterise(ph, &g, 4, &src, NULL, error)) return NULL;
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.seed = 5;
  sp.efficiency_spread = spread;
  sp.efficiency_seed = EFFICIENCY_SEED;
  g_autoptr(TlListmode) lm = tl_simulate(sc, src, NULL, &sp, NULL, NULL, NULL, NULL, error);
  if (!lm) return NULL;
  double t1 = bench_now();
  g_autofree float *y = tl_norm_pair_counts(sc, lm->events, lm->n_events, NULL, error);
  if (!y) return NULL;
  g_autofree float *p = g_try_new(float, tl_pair_count(sc->n_crystals));
  if (!p) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "out of memory for the expected counts");
    return NULL;
  }
  if (!tl_norm_expected(ctx, "siddon", sc, src, NULL, p, error)) return NULL;
  double t2 = bench_now();
  TlNormReport rep;
  TlNorm *n = tl_norm_estimate(sc, y, p, NULL, &rep, error);
  if (!n) return NULL;
  g_autofree char *said = tl_norm_report_describe(&rep);
  printf("normalisation scan: %" G_GUINT64_FORMAT " events simulated in %.1f s, expected counts "
         "%.1f s, estimate %.1f s: %s\n", lm->n_events, t1 - t0, t2 - t1, bench_now() - t2, said);
  return n;
}

/* Every allowed crystal pair of sc with its count in lm (0 where none): n_out bins. */
static TlBin *every_pair(const TlScanner *sc, const TlListmode *lm, guint64 *n_out) {
  g_autoptr(GArray) h = tl_listmode_histogram(lm);
  GArray *all = g_array_new(FALSE, FALSE, sizeof(TlBin));
  guint i = 0;
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      TlBin bin = {a, b, 0};
      while (i < h->len && (g_array_index(h, TlBin, i).a < a ||
                            (g_array_index(h, TlBin, i).a == a && g_array_index(h, TlBin, i).b < b)))
        i++;
      if (i < h->len && g_array_index(h, TlBin, i).a == a && g_array_index(h, TlBin, i).b == b)
        bin.count = g_array_index(h, TlBin, i).count;
      g_array_append_val(all, bin);
    }
  *n_out = all->len;
  return (TlBin *)g_array_free(all, FALSE);
}

/* Noiseless data (--expected): per allowed pair (a < b, the order of every_pair's loop) the
 * expected trues c n_ab exp(-(A mu)_ab) (A x)_ab (the reconstruction's own model: Siddon, the
 * estimated normalisation), scattered k SSS(x, mu)_ab eps_a eps_b and randoms s_a s_b, c and k
 * from a short simulation's trues and scattered per second. A row's data are the sum of its
 * components, so the rows differ by the corrections' work alone, without noise (issue 26: is
 * the 22 mm sphere's excess systematic?). */
typedef struct {
  guint64 n;
  float *trues, *scat, *rand; /* per allowed pair, a < b */
  guint32 *a, *b;
  TlScatterEstimate *sss;     /* the scatter term of scat (scaled; times eps_a eps_b) */
} Expected;

static void expected_clear(Expected *e) {
  g_free(e->trues), g_free(e->scat), g_free(e->rand), g_free(e->a), g_free(e->b);
  if (e->sss) tl_scatter_estimate_free(e->sss);
}

static gboolean expected_make(TlContext *ctx, const TlScanner *sc, const TlImage *act,
                              const TlImage *mu, const TlNorm *norm, const TlRandoms *rnd,
                              double trues, double scattered, Expected *e, GError **error) {
  guint64 np = tl_pair_count(sc->n_crystals);
  g_autofree float *p = g_try_new(float, np);
  if (!p) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "out of memory for the expected counts");
    return FALSE;
  }
  if (!tl_norm_expected(ctx, "siddon", sc, act, mu, p, error)) return FALSE;
  TlSssParams sp;
  tl_sss_params_init(&sp);
  TlScatterEstimate *sss = tl_sss_estimate(sc, act, mu, &sp, NULL, NULL, error);
  if (!sss) return FALSE;
  guint64 n = 0;
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) n += tl_scanner_pair_allowed(sc, a, b);
  *e = (Expected){n, g_new(float, n), g_new(float, n), g_new(float, n), g_new(guint32, n),
                  g_new(guint32, n), sss};
  double st = 0, ss = 0;
  guint64 i = 0;
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      e->a[i] = a, e->b[i] = b;
      e->trues[i] = (float)(tl_norm_pair(norm, a, b) * p[tl_pair_index(sc->n_crystals, a, b)]);
      e->scat[i] = (float)(tl_scatter_estimate_pair(sss, a, b) * tl_norm_scatter_pair(norm, a, b));
      e->rand[i] = (float)tl_randoms_pair(rnd, a, b);
      st += e->trues[i], ss += e->scat[i];
      i++;
    }
  for (i = 0; i < n; i++) e->trues[i] *= (float)(trues / st), e->scat[i] *= (float)(scattered / ss);
  sss->scale *= scattered / ss;
  return TRUE;
}

/* --noise: each component drawn apart (the trues row reconstructs the same trues as the
 * others, as the scan's trues-tagged prompts are its own prompts' subset). */
static void expected_draw(Expected *e, guint64 seed) {
  TlRng g;
  tl_rng_init(&g, seed, 0);
  for (guint64 i = 0; i < e->n; i++) {
    e->trues[i] = (float)tl_rng_poisson(&g, e->trues[i]);
    e->scat[i] = (float)tl_rng_poisson(&g, e->scat[i]);
    e->rand[i] = (float)tl_rng_poisson(&g, e->rand[i]);
  }
}

/* The bins of a row's data (D_*) from the expected components; *total gets their sum. */
static TlBin *expected_bins(const Expected *e, guint data, double *total) {
  TlBin *bins = g_new(TlBin, e->n);
  double t = 0;
  for (guint64 i = 0; i < e->n; i++) {
    float c = (data & D_TRUE ? e->trues[i] : 0) + (data & D_SCAT ? e->scat[i] : 0) +
              (data & D_RAND ? e->rand[i] : 0);
    bins[i] = (TlBin){e->a[i], e->b[i], c};
    t += c;
  }
  *total = t;
  return bins;
}

/* One table row, the spheres from the smallest (the layout lists them from the largest); the
 * lung residual, the lung over every slice and the seconds when `seconds` >= 0. */
static void row(const char *name, const TlNemaResult *r, const double *values, double lung_z,
                double seconds) {
  printf("| %s |", name);
  for (int j = TL_NEMA_N_SPHERES - 1; j >= 0; j--) printf(" %.1f |", 100 * values[j]);
  if (seconds >= 0) printf(" %.1f | %.1f | %.0f |", 100 * r->lung_residual, 100 * lung_z, seconds);
  printf("\n");
}

/* The all-z figures' regions, voxel by voxel: the lung within 15 mm of the insert's axis over
 * |z| <= 70 mm (the insert is 180 mm long), the background (truth 1) 40-100 mm from the axis
 * with z in [-70, -10] mm, below the spheres (z 1.5-38.5 mm). Sums and counts of each. */
static void all_z_sums(const TlImageGrid *g, const TlImage *truth, const TlImage *im,
                       const double centre[3], double *sl, guint64 *nl, double *sb, guint64 *nb) {
  *sl = *sb = 0, *nl = *nb = 0;
  const guint *d = g->dims;
  for (guint k = 0; k < d[2]; k++)
    for (guint j = 0; j < d[1]; j++)
      for (guint i = 0; i < d[0]; i++) {
        double p[3];
        tl_image_grid_voxel_centre(g, i, j, k, p);
        double rr = hypot(p[0] - centre[0], p[1] - centre[1]), z = p[2] - centre[2];
        guint64 v = ((guint64)k * d[1] + j) * d[0] + i;
        if (rr <= 15 && fabs(z) <= 70) *sl += im->data[v], (*nl)++;
        else if (rr >= 40 && rr <= 100 && z >= -70 && z <= -10 && truth->data[v] == 1.0f)
          *sb += im->data[v], (*nb)++;
      }
}

/* A steadier lung figure than NEMA's one slice (which a 1 s scan leaves at +-0.1): the lung
 * region's mean over the background's (all_z_sums); *bg (may be NULL) gets the background's
 * mean, which spheres_3d divides by. */
static double lung_all_z(const TlImageGrid *g, const TlImage *truth, const TlImage *im,
                         const double centre[3], double *bg) {
  double sl, sb;
  guint64 nl, nb;
  all_z_sums(g, truth, im, centre, &sl, &nl, &sb, &nb);
  if (bg) *bg = nb && sb > 0 ? sb / nb : NAN;
  return nl && nb && sb > 0 ? (sl / nl) / (sb / nb) : NAN;
}

/* The hot spheres' contrast over their whole volume, a steadier figure than NEMA's one-slice
 * interior circles (~12 voxels for the 22 mm sphere at 4 mm): the mean of the voxels whose
 * centres lie inside each sphere (partial volume included: the rows compare with each other)
 * over the all-z background's mean bg (lung_all_z); largest sphere first, as the layout. */
static void spheres_3d(const TlImage *im, const TlPhantom *ph, double bg,
                       double out[TL_NEMA_N_SPHERES]) {
  guint ns = 0;
  for (guint i = 0; i < ph->shapes->len && ns < TL_NEMA_N_SPHERES; i++) {
    const TlShape *s = &g_array_index(ph->shapes, TlShape, i);
    if (s->kind != TL_SHAPE_SPHERE) continue;
    TlRoi roi = {TL_ROI_SPHERE, {s->centre[0], s->centre[1], s->centre[2]}, s->radius, 2};
    TlRoiStats st;
    tl_roi_stats(&roi, im, &st);
    out[ns++] = st.n && bg > 0 ? st.mean / bg : NAN;
  }
  while (ns < TL_NEMA_N_SPHERES) out[ns++] = NAN;
}

/* The SSS estimate (times the normalisation when given) against the scan's scattered prompts,
 * summed over the allowed pairs by the line's distance from the axis (transaxial, mm) and its
 * ring difference: where the estimate's shape differs from the simulation's (issue 26 item 5:
 * the totals agree, the lines through the lung insert may not). */
static void scatter_profile(const TlScanner *sc, const TlScatterEstimate *e, const TlNorm *norm,
                            const TlListmode *lm) {
  static const double edge[] = {0, 10, 20, 30, 50, 100, 150, 200, 250, 300, 1000};
  enum { ND = G_N_ELEMENTS(edge) - 1, NR = 4 };
  static const guint ring_edge[NR + 1] = {0, 1, 3, 6, 1000};
  guint64 np = tl_pair_count(sc->n_crystals);
  g_autofree float *sim = g_new0(float, np);
  for (guint64 i = 0; i < lm->n_events; i++)
    if (lm->tags[i] == TL_TAG_SCATTERED)
      sim[tl_pair_index(sc->n_crystals, lm->events[i].a, lm->events[i].b)] += 1;
  double es[ND][NR] = {{0}}, ss[ND][NR] = {{0}};
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      const float *p = sc->crystals[a].centre, *q = sc->crystals[b].centre;
      double dx = q[0] - p[0], dy = q[1] - p[1];
      double dist = fabs((double)p[0] * q[1] - (double)q[0] * p[1]) / hypot(dx, dy);
      guint dr = (guint)abs((int)sc->crystals[a].ring - (int)sc->crystals[b].ring);
      int i = 0, j = 0;
      while (i < ND - 1 && dist >= edge[i + 1]) i++;
      while (j < NR - 1 && dr >= ring_edge[j + 1]) j++;
      es[i][j] += tl_scatter_estimate_pair(e, a, b) * (norm ? tl_norm_pair(norm, a, b) : 1);
      ss[i][j] += sim[tl_pair_index(sc->n_crystals, a, b)];
    }
  printf("\nSSS estimate / scattered prompts (scattered prompts) by the line's distance from "
         "the axis and ring difference\n\n| distance, mm | ring diff 0 | 1-2 | 3-5 | 6+ | all |\n"
         "|---|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < ND; i++) {
    printf("| %.0f-%.0f |", edge[i], edge[i + 1]);
    double te = 0, ts = 0;
    for (int j = 0; j < NR; j++) {
      printf(" %.3f (%.0f) |", ss[i][j] > 0 ? es[i][j] / ss[i][j] : NAN, ss[i][j]);
      te += es[i][j], ts += ss[i][j];
    }
    printf(" %.3f (%.0f) |\n", ts > 0 ? te / ts : NAN, ts);
  }
}

/* The 12 x 12 voxels about the lung ROI's centre on its slice, and their mean over |z| <= 70
 * mm, each / the 37 mm background mean: where in the insert the activity is. */
static void dump_patch(const TlImageGrid *g, const TlImage *im, const double c[3], double bg) {
  double f[3];
  for (int k = 0; k < 3; k++) f[k] = (c[k] - g->origin_mm[k]) / g->voxel_mm[k];
  int i0 = (int)floor(f[0]) - 5, j0 = (int)floor(f[1]) - 5, kc = (int)floor(f[2] + 0.5);
  /* the five largest voxels within 20 mm of the insert's axis, |z| <= 70 mm */
  double top[5] = {0};
  guint64 at[5] = {0};
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double p[3];
        tl_image_grid_voxel_centre(g, i, j, k, p);
        if (hypot(p[0] - c[0], p[1] - c[1]) > 20 || fabs(p[2]) > 70) continue;
        guint64 v = ((guint64)k * g->dims[1] + j) * g->dims[0] + i;
        double x = im->data[v] / bg;
        for (int t = 0; t < 5; t++)
          if (x > top[t]) {
            for (int u = 4; u > t; u--) top[u] = top[u - 1], at[u] = at[u - 1];
            top[t] = x, at[t] = v;
            break;
          }
      }
  printf("\nlargest voxels within 20 mm of the insert's axis (/ C_B,37mm, at i, j, k):");
  for (int t = 0; t < 5; t++)
    printf(" %.1f (%u, %u, %u)", top[t], (guint)(at[t] % g->dims[0]),
           (guint)(at[t] / g->dims[0] % g->dims[1]), (guint)(at[t] / g->dims[0] / g->dims[1]));
  printf("\n");
  for (int pass = 0; pass < 2; pass++) {
    printf("\n%s (x from voxel %d, y from %d):\n", pass ? "mean over |z| <= 70 mm" :
           "central slice", i0, j0);
    for (int j = 11; j >= 0; j--) {
      for (int i = 0; i < 12; i++) {
        double s = 0;
        int n = 0;
        for (int k = 0; k < (int)g->dims[2]; k++) {
          double z = g->origin_mm[2] + k * g->voxel_mm[2];
          if (pass ? fabs(z) > 70 : k != kc) continue;
          s += im->data[((guint64)k * g->dims[1] + (guint)(j0 + j)) * g->dims[0] + (guint)(i0 + i)];
          n++;
        }
        printf(" %5.2f", n ? s / n / bg : NAN);
      }
      printf("\n");
    }
  }
}

/* How near any crystal centre lies to a voxel plane of the grid (mm; per axis): a line with
 * both ends within the float walk's rounding (~3e-5 mm at 300 mm) of one plane is one the
 * sensitivity's double walk and the projectors' float walk may put on different sides. */
static void plane_clearance(const TlScanner *sc, const TlImageGrid *g) {
  double best[3] = {G_MAXDOUBLE, G_MAXDOUBLE, G_MAXDOUBLE};
  for (guint c = 0; c < sc->n_crystals; c++)
    for (int k = 0; k < 3; k++) {
      double lo = g->origin_mm[k] - 0.5 * g->voxel_mm[k];
      double f = (sc->crystals[c].centre[k] - lo) / g->voxel_mm[k];
      best[k] = MIN(best[k], fabs(f - floor(f + 0.5)) * g->voxel_mm[k]);
    }
  printf("crystal centres' least distance to a voxel plane: x %.3g mm, y %.3g mm, z %.3g mm\n",
         best[0], best[1], best[2]);
}

int main(int argc, char **argv) {
  double background = 5300, duration = 4, norm_events = 1e7, voxel = 2.78, spread = 0.1;
  int iterations = 3, rounds = 2, round_its = 1, subsets = 10, bin = 1, bin_rings = 1, nxy_opt = 0;
  char *algorithm = NULL, *rows = NULL;
  gboolean binned = FALSE, profile = FALSE, dump = FALSE, expected = FALSE, noise = FALSE;
  gint64 seed = 1;
  GOptionEntry entries[] = {
      {"background", 0, 0, G_OPTION_ARG_DOUBLE, &background,
       "Background concentration, Bq/mL (default 5300; spheres 4:1)", "BQML"},
      {"duration", 0, 0, G_OPTION_ARG_DOUBLE, &duration, "Acquisition, s (default 4)", "S"},
      {"norm-events", 0, 0, G_OPTION_ARG_DOUBLE, &norm_events,
       "Events of the normalisation scan (default 1e7)", "N"},
      {"iterations", 'i', 0, G_OPTION_ARG_INT, &iterations,
       "OSEM iterations before the scatter rounds (default 3)", "N"},
      {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "SSS rounds (default 2)", "N"},
      {"round-iterations", 0, 0, G_OPTION_ARG_INT, &round_its,
       "Iterations after each SSS estimate (default 1; recon --scatter sss: --iterations)", "N"},
      {"subsets", 's', 0, G_OPTION_ARG_INT, &subsets, "Subsets (default 10)", "S"},
      {"voxel", 0, 0, G_OPTION_ARG_DOUBLE, &voxel, "Voxel size, mm (default 2.78)", "MM"},
      {"nxy", 0, 0, G_OPTION_ARG_INT, &nxy_opt,
       "Voxels across (default: the scanner's field at --voxel); odd puts the axis in a voxel",
       "N"},
      {"spread", 0, 0, G_OPTION_ARG_DOUBLE, &spread, "Crystal efficiency spread (0.1)", "F"},
      {"bin", 0, 0, G_OPTION_ARG_INT, &bin, "Bin the crystals by T transaxially (1)", "T"},
      {"bin-rings", 0, 0, G_OPTION_ARG_INT, &bin_rings, "Bin the rings by R (1)", "R"},
      {"algorithm", 0, 0, G_OPTION_ARG_STRING, &algorithm, "Every row's algorithm; a list runs each (osem)", "A,B"},
      {"dump", 0, 0, G_OPTION_ARG_NONE, &dump,
       "Print each image's 12 x 12 voxels about the lung ROI's centre / C_B,37mm, and the "
       "mean over z of the same patch", NULL},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "The scan's random seed (default 1)", "N"},
      {"scatter-profile", 0, 0, G_OPTION_ARG_NONE, &profile,
       "After each SSS row: the estimate against the scattered prompts by line distance and "
       "ring difference", NULL},
      {"binned", 0, 0, G_OPTION_ARG_NONE, &binned, "Every allowed pair as a bin (zeros kept)", NULL},
      {"expected", 0, 0, G_OPTION_ARG_NONE, &expected,
       "Noiseless binned data: each row's expected trues, scattered and randoms (rates from a "
       "scan of min(1 s, --duration))", NULL},
      {"noise", 0, 0, G_OPTION_ARG_NONE, &noise,
       "With --expected: Poisson draws (--seed) of the expected trues, scattered and randoms: the "
       "line model's noise without the simulator's physics", NULL},
      {"rows", 0, 0, G_OPTION_ARG_STRING, &rows, "Rows to run: all,restart,trues,atten,none", "LIST"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- NEMA IEC contrast recovery with and "
                                                      "without the corrections on the DMI");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  if (iterations < 1 || rounds < 1 || round_its < 1 || subsets < 1 || bin < 1 || bin_rings < 1 || !(voxel > 0) || !(duration > 0) ||
      !(background > 0) || !(norm_events >= 1e5)) {
    fprintf(stderr, "pet-nema-quant: expected positive iterations, rounds, subsets, voxel, "
                    "duration, background and at least 1e5 normalisation events\n");
    return 2;
  }
  const int total_its = iterations + rounds * round_its; /* every image's */
  /* the rows first: a bad --rows is reported before minutes of simulation */
  if (noise && !expected) {
    fprintf(stderr, "pet-nema-quant: --noise needs --expected\n");
    return 2;
  }
  if (!expected && rows && strstr(rows, "all-known")) {
    fprintf(stderr, "pet-nema-quant: --rows all-known needs --expected (the known term)\n");
    return 2;
  }
  gboolean run[V_N];
  g_auto(GStrv) wanted = g_strsplit(rows ? rows : "all,restart,trues,atten,none", ",", -1);
  for (guint w = 0; wanted[w]; w++) {
    gboolean known = FALSE;
    for (guint k = 0; k < V_N; k++) known |= !strcmp(wanted[w], row_spec[k].key);
    if (!known) {
      fprintf(stderr, "pet-nema-quant: --rows: unknown row '%s'\n", wanted[w]);
      return 2;
    }
  }
  for (guint k = 0; k < V_N; k++)
    run[k] = g_strv_contains((const char *const *)wanted, row_spec[k].key);
  for (guint k = 0; k < V_N; k++)
    if (run[k] && !run[reference_row((int)k)]) {
      fprintf(stderr, "pet-nema-quant: --rows with %s must include %s (its reference)\n",
              row_spec[k].key, row_spec[reference_row((int)k)].key);
      return 2;
    }
  g_set_prgname("pet-nema-quant");
  setvbuf(stdout, NULL, _IOLBF, 0);
  double t_start = bench_now();
  g_autoptr(TlScanner) sc = tl_scanner_new_preset("dmi", &error);
  if (sc && (bin > 1 || bin_rings > 1)) {
    TlScanner *b = binned_scanner(sc, (guint)bin, (guint)bin_rings, &error);
    tl_scanner_free(sc);
    sc = b;
  }
  if (!sc) bench_die(error);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);

  g_autoptr(TlNorm) norm = estimate_norm(ctx, sc, norm_events, spread, &error);
  if (!norm) bench_die(error);

  /* the NEMA IEC body on the reconstruction grid: the DMI's (215 x 215 x 71 of 2.78 mm), or
   * the same extent in voxels of --voxel */
  TlImageGrid g0 = tl_scanner_default_grid(sc);
  guint nxy = nxy_opt > 0 ? (guint)nxy_opt
                         : (guint)ceil(g0.dims[0] * (double)g0.voxel_mm[0] / voxel - 1e-3);
  guint nz = (guint)ceil(g0.dims[2] * (double)g0.voxel_mm[2] / voxel - 1e-3);
  TlImageGrid grid = tl_image_grid_centred(nxy, nxy, nz, (float)voxel, (float)voxel, (float)voxel);
  plane_clearance(sc, &grid);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, &grid, &error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  if (!ph || !tl_phantom_rasterise(ph, &grid, 0, &act, &mu, &error)) bench_die(error);
  const float *v = grid.voxel_mm;
  double volume_ml = tl_image_sum(act) * v[0] * v[1] * v[2] / 1000.0; /* background units */
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 0;
  sp.seed = (guint64)seed;
  sp.scatter = TRUE;
  sp.efficiency_spread = spread;
  sp.efficiency_seed = EFFICIENCY_SEED;
  sp.activity_bq = background * volume_ml;
  /* --expected: a short scan gives the rates (trues, scattered) and the randoms' factors */
  double sim_duration = expected ? MIN(duration, 1.0) : duration;
  if (expected) binned = TRUE;
  sp.duration_s = sim_duration;
  TlSimulateStats st;
  double t0 = bench_now();
  g_autoptr(TlListmode) lm = tl_simulate(sc, act, mu, &sp, NULL, NULL, NULL, &st, &error);
  if (!lm) bench_die(error);
  printf("NEMA IEC body on the DMI, %u x %u x %u voxels of %.2f mm: background %.0f Bq/mL, "
         "spheres 4:1 (%.1f MBq) for %g s: %.4g decays -> %" G_GUINT64_FORMAT " prompts (%"
         G_GUINT64_FORMAT " trues, %" G_GUINT64_FORMAT " scattered: %.1f %% of trues + "
         "scattered, %" G_GUINT64_FORMAT " randoms: %.1f %% of the prompts), %" G_GUINT64_FORMAT
         " delayeds; simulated in %.0f s (%u cores)\n", nxy, nxy, nz, voxel, background,
         sp.activity_bq * 1e-6, duration, st.decays, lm->n_events, st.trues, st.scattered,
         100.0 * st.scattered / (st.trues + st.scattered), st.randoms,
         100.0 * st.randoms / lm->n_events, st.delayed, bench_now() - t0, g_get_num_processors());
  g_autoptr(TlRandoms) rnd = tl_randoms_from_delayeds(sc, lm->delayed, lm->n_delayed, &error);
  if (!rnd) bench_die(error);
  Expected ex = {0};
  if (expected) {
    double f = duration / sim_duration;
    for (guint c = 0; c < rnd->n_crystals; c++) rnd->factor[c] *= sqrt(f);
    rnd->total *= f;
    t0 = bench_now();
    if (!expected_make(ctx, sc, act, mu, norm, rnd, st.trues * f, st.scattered * f, &ex, &error))
      bench_die(error);
    if (noise) expected_draw(&ex, (guint64)seed);
    printf("%s data for %g s: %.4g trues, %.4g scattered, %.4g randoms per %" G_GUINT64_FORMAT
           " pairs (%.0f s)\n", noise ? "Poisson draws of the expected" : "expected", duration, st.trues * f, st.scattered * f, rnd->total, ex.n,
           bench_now() - t0);
  }

  TlNemaOptions no;
  tl_nema_options_init(&no);
  TlNemaLayout layout;
  if (!tl_nema_layout_init(&layout, &grid, &no, &error)) bench_die(error);
  TlNemaResult res[V_N], truth;
  double lung_z[V_N], sph3[V_N][TL_NEMA_N_SPHERES];
  tl_nema_analyse(&layout, act, &truth);
  double secs[V_N];
  g_auto(GStrv) algos = g_strsplit(algorithm ? algorithm : "osem", ",", -1);
  for (guint al = 0; algos[al]; al++) {
    const char *algo = algos[al];
    for (guint k = 0; k < V_N; k++) {
      if (!run[k]) continue;
      const RowSpec *rs = &row_spec[k];
      g_autoptr(TlListmode) data = select_prompts(lm, rs->data);
      guint64 n_bins = 0;
      double n_counts = (double)data->n_events;
      g_autofree TlBin *bins = expected ? (n_bins = ex.n, expected_bins(&ex, rs->data, &n_counts))
                               : binned ? every_pair(sc, data, &n_bins) : NULL;
      TlReconOptions o;
      tl_recon_options_init(&o);
      o.algo = TL_RECON_OSEM;
      o.algorithm = algo;
      o.subsets = (guint)subsets;
      o.iterations = (guint)(rs->sss ? iterations : total_its);
      o.loglik = TL_LOGLIK_NEVER;
      o.attenuation = rs->atten ? mu : NULL;
      o.norm = rs->norm ? norm : NULL;
      o.randoms = rs->randoms ? rnd : NULL;
      o.scatter_estimate = rs->known ? ex.sss : NULL;
      t0 = bench_now();
      g_autoptr(TlRecon) r = !binned
                                 ? tl_recon_new_listmode(ctx, data, &grid, &o, &error)
                                 : tl_recon_new_binned(ctx, sc, bins, n_bins, &grid, &o, &error);
      if (!r) bench_die(error);
      printf("%s (%.0f prompts%s): set-up %.0f s (sensitivity %s)", rs->name, n_counts,
             expected ? ", expected" : "", bench_now() - t0,
             tl_recon_sensitivity_cached(r) ? "from the cache" : "computed");
      if (!tl_recon_run(r, &error)) bench_die(error);
      if (rs->sss) {
        TlScatterRounds ro;
        tl_scatter_rounds_init(&ro);
        ro.rounds = (guint)rounds;
        ro.iterations = (guint)round_its;
        /* the last round from the uniform image: as many iterations as the other rows */
        ro.final_iterations = rs->restart ? (guint)total_its : 0;
        g_autoptr(TlScatterEstimate) e = tl_recon_scatter_rounds(r, mu, &ro, &error);
        if (!e) bench_die(error);
        double total = 0;
        for (guint a = 0; a < sc->n_crystals; a++)
          for (guint b = a + 1; b < sc->n_crystals; b++)
            if (tl_scanner_pair_allowed(sc, a, b))
              total += tl_scatter_estimate_pair(e, a, b) * (rs->norm ? tl_norm_pair(norm, a, b) : 1);
        printf("; scatter estimated %.0f (true %.0f)", total, st.scattered * duration / sim_duration);
        if (profile && !expected) scatter_profile(sc, e, rs->norm ? norm : NULL, lm);
      }
      if (rs->randoms)
        printf("; randoms %.0f (true %.0f)", rnd->total, st.randoms * duration / sim_duration);
      g_autoptr(TlImage) im = tl_recon_image(r, &error);
      if (!im) bench_die(error);
      tl_nema_analyse(&layout, im, &res[k]);
      double bg;
      lung_z[k] = lung_all_z(&grid, act, im, no.centre_mm, &bg);
      spheres_3d(im, ph, bg, sph3[k]);
      if (dump) dump_patch(&grid, im, layout.lung.centre_mm, res[k].background_mean[0]);
      secs[k] = bench_now() - t0;
      printf("; %.0f s in all\n", secs[k]);
    }
    printf("\nContrast recovery CR (%%, NU 2-2018 7.4, interior hot ROIs), lung residual (%%; "
           "central slice, NEMA's), lung over |z| <= 70 mm (%%; see lung_all_z), seconds; %s%s, "
           "%d subsets, %d iterations in every image (SSS rows: %d iterations, then %d SSS rounds "
           "of %d iteration(s); restarted: the last round's from the uniform image for %d); grid "
           "%u x %u x %u of %.2f mm\n\n", algo, binned ? " (binned)" : "", subsets,
           total_its, iterations, rounds, round_its, total_its, nxy, nxy, nz, voxel);
    printf("| corrections | 10 mm | 13 mm | 17 mm | 22 mm | 28 mm | 37 mm | lung | lung, all z "
           "| s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    row("(the truth)", &truth, truth.contrast_recovery, lung_all_z(&grid, act, act, no.centre_mm, NULL), 0);
    for (guint k = 0; k < V_N; k++)
      if (run[k]) row(row_spec[k].name, &res[k], res[k].contrast_recovery, lung_z[k], secs[k]);
    printf("\nBackground variability N (%%) per ROI size\n\n");
    printf("| corrections | 10 mm | 13 mm | 17 mm | 22 mm | 28 mm | 37 mm |\n"
           "|---|---:|---:|---:|---:|---:|---:|\n");
    for (guint k = 0; k < V_N; k++)
      if (run[k]) row(row_spec[k].name, &res[k], res[k].variability, 0, -1);
    /* issue 26's done-when: the lung / background ratio within 0.03 of trues-only, the hot
     * spheres' C_H / C_B within 3 % */
    printf("\nAgainst trues only (issue 26: lung within 0.03, hot spheres within 3 %%):\n");
    for (guint k = 0; k < V_N; k++) {
      int ref = reference_row((int)k);
      if ((int)k == ref || !run[k]) continue;
      double worst = 0;
      printf("- %s: lung %.3f vs %.3f (%+.3f), all z %.3f vs %.3f (%+.3f); hot C_H/C_B",
             row_spec[k].name, res[k].lung_residual, res[ref].lung_residual,
             res[k].lung_residual - res[ref].lung_residual, lung_z[k], lung_z[ref],
             lung_z[k] - lung_z[ref]);
      for (int j = TL_NEMA_N_SPHERES - 1; j >= 0; j--) {
        double a = res[k].hot[j].mean / res[k].background_mean[j];
        double t = res[ref].hot[j].mean / res[ref].background_mean[j];
        printf(" %.2f (%+.1f %%)", a, 100 * (a / t - 1));
        worst = MAX(worst, fabs(a / t - 1));
      }
      printf("; worst %.1f %%; whole spheres / all-z background", 100 * worst);
      for (int j = TL_NEMA_N_SPHERES - 1; j >= 0; j--)
        printf(" %.3f (%+.1f %%)", sph3[k][j], 100 * (sph3[k][j] / sph3[ref][j] - 1));
      printf("\n");
    }
  }
  expected_clear(&ex);
  printf("\ntotal %.0f s\n", bench_now() - t_start);
  return 0;
}
