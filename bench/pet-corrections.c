/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/pet-corrections (PET module, issue 13): on the PET-DMI case (the NEMA IEC body on the
 * DMI, 215 x 215 x 71 voxels of 2.78 mm), the seconds of one single scatter simulation
 * (tl_sss_estimate: legs, pairs; non-TOF and, with --tof, TOF), of its tail fit over every
 * crystal pair, of the scatter term for every event (tl_recon_set_scatter), and the time of
 * one OSEM sub-iteration with every correction this branch has (attenuation, randoms and
 * scatter as the additive term) against the bare one (no attenuation, no additive term: the
 * fused EM pass), in the same run, best of --repeat.
 *
 *   ./build/bench/pet-corrections [--events 1e6] [--tof] [--repeat 3] [--detector-mm 40]
 *       [--voxel-mm 10] [--scatter-mm 20] [--threads 0] */
#include "pet-common.h"
#include "pet/tl-recon.h"
#include "pet/correct/tl-sss.h"
#include <math.h>
#include <stdio.h>

static TlContext *bctx;

static TlRecon *make(const PetNema *n, const TlImageGrid *g, gboolean corrected,
                     const TlRandoms *rnd, gboolean tof) {
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 10;
  o.loglik = TL_LOGLIK_NEVER;
  o.tof = tof;
  if (corrected) {
    o.attenuation = n->mu;
    o.randoms = rnd;
  }
  GError *error = NULL;
  double t0 = bench_now();
  TlRecon *r = tl_recon_new_listmode(bctx, n->lm, g, &o, &error);
  if (!r) bench_die(error);
  printf("  set-up (%s): %.2f s (sensitivity %s)\n", corrected ? "corrections" : "bare",
         bench_now() - t0, tl_recon_sensitivity_cached(r) ? "from the cache" : "computed");
  return r;
}

int main(int argc, char **argv) {
  double events = 1e6, detector_mm = 40, voxel_mm = 10, scatter_mm = 20;
  int repeat = 3, threads = 0;
  gboolean tof = FALSE;
  GOptionEntry entries[] = {
      {"events", 0, 0, G_OPTION_ARG_DOUBLE, &events, "Simulated events (default 1e6)", "N"},
      {"tof", 0, 0, G_OPTION_ARG_NONE, &tof, "TOF data, TOF-SSS and TOF reconstruction", NULL},
      {"repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "Best of (default 3)", "N"},
      {"detector-mm", 0, 0, G_OPTION_ARG_DOUBLE, &detector_mm, "SSS detector sampling", "MM"},
      {"voxel-mm", 0, 0, G_OPTION_ARG_DOUBLE, &voxel_mm, "SSS coarse voxels", "MM"},
      {"scatter-mm", 0, 0, G_OPTION_ARG_DOUBLE, &scatter_mm, "SSS scatter points", "MM"},
      {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "SSS threads (0 = all)", "N"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- SSS and the corrected sub-iteration");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  g_set_prgname("pet-corrections");
  setvbuf(stdout, NULL, _IOLBF, 0);
  TlImageGrid g = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  PetNema n;
  if (!pet_nema_simulate(&n, &g, events, tof, &error)) bench_die(error);
  const TlScanner *sc = n.lm->scanner;
  printf("PET-DMI: %" G_GUINT64_FORMAT " events (NEMA IEC body, %s) simulated in %.1f s; %u "
         "cores\n", n.lm->n_events, tof ? "TOF" : "non-TOF", n.seconds, g_get_num_processors());

  TlSssParams p;
  tl_sss_params_init(&p);
  p.detector_mm = detector_mm;
  p.voxel_mm = voxel_mm;
  p.scatter_mm = scatter_mm;
  p.n_threads = (guint)threads;
  g_autoptr(TlScatterEstimate) est = NULL;
  for (int t = 0; t <= tof; t++) {
    p.tof = t;
    double best = G_MAXDOUBLE;
    TlSssStats st = {0};
    for (int i = 0; i < repeat; i++) {
      double t0 = bench_now();
      TlSssStats s1;
      TlScatterEstimate *e = tl_sss_estimate(sc, n.act, n.mu, &p, NULL, &s1, &error);
      if (!e) bench_die(error);
      double w = bench_now() - t0;
      if (w < best) best = w, st = s1;
      if (t == tof && !est) est = e;
      else tl_scatter_estimate_free(e);
    }
    printf("SSS %s: %u scatter points on %ux%ux%u voxels of %g mm, %u x %u detectors "
           "(%" G_GUINT64_FORMAT " sampled pairs): %.2f s (legs %.2f s, pairs %.2f s), best of "
           "%d\n", t ? "TOF" : "non-TOF", st.scatter_points, st.coarse_dims[0], st.coarse_dims[1],
           st.coarse_dims[2], st.coarse_mm[0], st.n_t, st.n_r,
           (guint64)st.n_t * st.n_r * (st.n_t * st.n_r + 1) / 2, best, st.seconds_legs,
           st.seconds_pairs, repeat);
  }

  /* randoms: 10 % of the prompts, uniform singles (for the timing only) */
  TlRandoms rnd = {.n_crystals = sc->n_crystals, .factor = g_new(double, sc->n_crystals)};
  double pairs = (double)sc->n_crystals * sc->n_crystals / 2; /* roughly: timing only */
  for (guint i = 0; i < sc->n_crystals; i++) rnd.factor[i] = sqrt(0.1 * n.lm->n_events / pairs);

  g_autoptr(GArray) counts = tl_listmode_histogram(n.lm);
  TlTailParams tp;
  tl_tail_params_init(&tp);
  tp.min_counts = 0;
  TlTailFit fit;
  double t0 = bench_now();
  if (!tl_scatter_tail_fit(est, n.mu, (TlBin *)counts->data, counts->len, &rnd, &tp, &fit, &error))
    bench_die(error);
  printf("tail fit over every allowed pair: %.2f s (%" G_GUINT64_FORMAT " tail pairs)\n",
         bench_now() - t0, fit.tail_pairs);
  est->scale = 1e-3 * n.lm->n_events / MAX(fit.total_estimate, 1e-30);

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  bctx = ctx;
  g_autoptr(TlRecon) bare = make(&n, &g, FALSE, NULL, tof);
  g_autoptr(TlRecon) split = make(&n, &g, FALSE, NULL, tof);
  g_autoptr(TlRecon) corr = make(&n, &g, TRUE, &rnd, tof);
  /* the bare model with an additive term of zeros: forward, ratio and back as separate passes
   * (what any additive term costs) without the corrections' own work */
  g_autoptr(TlScatterEstimate) zero = tl_scatter_estimate_copy(est);
  zero->scale = 0;
  if (!tl_recon_set_scatter(split, zero, &error)) bench_die(error);
  t0 = bench_now();
  if (!tl_recon_set_scatter(corr, est, &error)) bench_die(error);
  printf("scatter term of %" G_GUINT64_FORMAT " events (interpolated per event, uploaded): %.2f s\n",
         n.lm->n_events, bench_now() - t0);
  double tb = G_MAXDOUBLE, ts = G_MAXDOUBLE, tc = G_MAXDOUBLE;
  for (int i = 0; i < 2 * repeat; i++) { /* alternating, best of 2 x --repeat */
    double a = bench_now();
    if (!tl_recon_step(bare, &error)) bench_die(error);
    double b = bench_now();
    if (!tl_recon_step(split, &error)) bench_die(error);
    double c = bench_now();
    if (!tl_recon_step(corr, &error)) bench_die(error);
    double d = bench_now();
    tb = MIN(tb, b - a);
    ts = MIN(ts, c - b);
    tc = MIN(tc, d - c);
  }
  printf("OSEM sub-iteration (10 subsets, Siddon%s): bare (fused EM pass) %.3f s, bare with an "
         "additive term of zeros (separate passes) %.3f s, attenuation + randoms + scatter "
         "%.3f s: %.2fx the bare one\n", tof ? ", TOF" : "", tb, ts, tc, tc / tb);
  g_free(rnd.factor);
  pet_nema_clear(&n);
  return 0;
}
