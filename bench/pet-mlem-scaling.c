/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/pet-mlem-scaling: the PET-MLEM-scaling reference case (../shared/reference-cases.md;
 * van Gendt et al. 2021 Table 2): end-to-end seconds of 20 iterations of baseline list-mode MLEM
 * on images
 * of 32^3, 128^3 (and, on a GPU, 512^3) voxels spanning the same field of view, three line
 * sources, the PET-DMI scanner, 10^6 events.
 *
 *   bench/pet-mlem-scaling [--events 1e6] [--sizes 32,128] [--iterations 20] [--repeat 1]
 *                          [--projector joseph]
 *
 * van Gendt et al. 2021's baseline excludes sensitivity correction, so s = 1 (uniform_sensitivity)
 * and no
 * sensitivity image is computed. The events are simulated once (tl_simulate, seed 1, the
 * "lines" phantom: three line sources in air along z) on the PET-DMI image grid, 215 x 215 x 71
 * voxels of 2.78 mm, and reconstructed at every size: N^3 voxels spanning that same field of
 * view (597.7 x 597.7 x 197.4 mm), so voxels are anisotropic (the reference case fixes the
 * voxel counts only). The projector defaults to Joseph, the closest to van Gendt et al. 2021's
 * slice-based
 * ray tracing.
 *
 * End-to-end = TlRecon creation (events to the device) + the iterations + the image back to
 * the host, wall time, as van Gendt et al. 2021's "end-to-end reconstruction time" (the simulation
 * is not
 * part of it; it stands for reading the data). One untimed 1-iteration run at the first size
 * compiles the pipelines first, so no size pays for compilation. Best of --repeat. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pet-common.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"

/* van Gendt et al. 2021 Table 2 (seconds, 20 iterations): QETIR C++ on a CPU, basic and optimised
 * Julia on
 * a Tesla V100; 0 = not in the table */
typedef struct {
  guint edge;
  double qetir, v100_basic, v100_opt;
} PaperRow;
static const PaperRow van_gendt_table2[] = {{32, 21.52, 0.72, 1.45},
                                  {128, 109.68, 3.05, 4.48},
                                  {512, 2455.42, 57.17, 20.03}};

static const PaperRow *seed_row(guint edge) {
  for (gsize i = 0; i < G_N_ELEMENTS(van_gendt_table2); i++)
    if (van_gendt_table2[i].edge == edge) return &van_gendt_table2[i];
  return NULL;
}

typedef struct {
  double setup, iterations, download, total;
} Timing;

/* One reconstruction end to end; the image's maximum and sum go to *max / *sum. */
static void run_once(TlContext *ctx, const TlListmode *lm, const TlImageGrid *grid,
                     const char *projector, guint iterations, Timing *t, double *max,
                     double *sum) {
  GError *error = NULL;
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_MLEM;
  o.subsets = 1;
  o.iterations = iterations;
  o.projector = projector;
  o.loglik = TL_LOGLIK_NEVER;
  o.uniform_sensitivity = TRUE;
  double t0 = bench_now();
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, lm, grid, &o, &error);
  if (!r) bench_die(error);
  double t1 = bench_now();
  if (!tl_recon_run(r, &error)) bench_die(error);
  double t2 = bench_now();
  g_autoptr(TlImage) img = tl_recon_image(r, &error);
  if (!img) bench_die(error);
  double t3 = bench_now();
  *t = (Timing){t1 - t0, t2 - t1, t3 - t2, t3 - t0};
  guint64 nv = tl_image_grid_n_voxels(grid);
  *max = 0, *sum = 0;
  for (guint64 i = 0; i < nv; i++) {
    if (!isfinite(img->data[i])) {
      fprintf(stderr, "%s: voxel %" G_GUINT64_FORMAT " of the %u^3 image is %g\n",
              g_get_prgname(), i, grid->dims[0], img->data[i]);
      exit(1);
    }
    *max = MAX(*max, img->data[i]), *sum += img->data[i];
  }
}

int main(int argc, char **argv) {
  double events = 1e6;
  int repeat = 1, iterations = 20;
  g_autofree char *sizes_opt = NULL, *projector = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "Events to simulate (default 1e6)", "N"},
      {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_opt,
       "Image edges, comma separated (default 32,128; the GPU case adds 512)", "LIST"},
      {"iterations", 'i', 0, G_OPTION_ARG_INT, &iterations, "MLEM iterations (default 20)", "K"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Runs per size, best kept (default 1)", "R"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &projector, "siddon or joseph (default joseph)",
       "NAME"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- van Gendt et al. 2021 Table 2 (PET-MLEM-scaling)");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  if (!(events >= 1) || repeat < 1 || iterations < 1) {
    fprintf(stderr, "%s: --events >= 1, --repeat >= 1 and --iterations >= 1 expected\n",
            g_get_prgname());
    return 2;
  }
  if (!projector) projector = g_strdup("joseph");
  g_auto(GStrv) edges = g_strsplit(sizes_opt ? sizes_opt : "32,128", ",", -1);
  for (int e = 0; edges[e]; e++) {
    guint64 edge = g_ascii_strtoull(edges[e], NULL, 10);
    if (edge < 4 || edge > 1024) {
      fprintf(stderr, "%s: bad size '%s' (4 to 1024)\n", g_get_prgname(), edges[e]);
      return 2;
    }
  }

  /* the events: three line sources on the PET-DMI grid, simulated once */
  TlImageGrid sim_grid = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  g_autoptr(TlScanner) scanner = tl_scanner_new_preset("dmi", &error);
  if (!scanner) bench_die(error);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("lines", &po, &sim_grid, &error);
  TlImage *act = NULL;
  if (!ph || !tl_phantom_rasterise(ph, &sim_grid, 0, &act, NULL, &error)) bench_die(error);
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.exact_count = TRUE;
  sp.seed = 1;
  double t0 = bench_now();
  g_autoptr(TlListmode) lm = tl_simulate(scanner, act, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  double sim_s = bench_now() - t0;
  tl_image_free(act);
  if (!lm) bench_die(error);

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  float fov[3];
  for (int k = 0; k < 3; k++) fov[k] = sim_grid.dims[k] * sim_grid.voxel_mm[k];
  printf("PET-MLEM-scaling (van Gendt et al. 2021 Table 2): DMI scanner, three line sources, %" G_GUINT64_FORMAT
         " events (simulated in %.1f s);\n  %d MLEM iterations, s = 1, %s projector, field of view "
         "%.1f x %.1f x %.1f mm; best of %d\ndevice: %s\n\n", lm->n_events, sim_s, iterations,
         projector, fov[0], fov[1], fov[2], repeat, tl_context_info(ctx)->name);

  /* compile the pipelines (and warm the driver) before anything is timed */
  {
    guint64 edge = g_ascii_strtoull(edges[0], NULL, 10);
    TlImageGrid g = tl_image_grid_centred((guint)edge, (guint)edge, (guint)edge, fov[0] / edge,
                                          fov[1] / edge, fov[2] / edge);
    Timing t;
    double mx, sum;
    run_once(ctx, lm, &g, projector, 1, &t, &mx, &sum);
  }

  printf("%-8s %-22s %12s %10s %8s %9s %8s %8s %8s\n", "image", "voxel mm", "end-to-end s",
         "per it. s", "setup s", "image/max", "QETIR s", "V100 s", "V100o s");
  for (int e = 0; edges[e]; e++) {
    guint edge = (guint)g_ascii_strtoull(edges[e], NULL, 10);
    TlImageGrid g = tl_image_grid_centred(edge, edge, edge, fov[0] / edge, fov[1] / edge,
                                          fov[2] / edge);
    Timing best = {0, 0, 0, G_MAXDOUBLE};
    double mx = 0, sum = 0;
    for (int r = 0; r < repeat; r++) {
      Timing t;
      run_once(ctx, lm, &g, projector, (guint)iterations, &t, &mx, &sum);
      if (t.total < best.total) best = t;
    }
    if (!(mx > 0)) {
      fprintf(stderr, "%s: the %u^3 image is empty\n", g_get_prgname(), edge);
      return 1;
    }
    char vox[32], size[16];
    g_snprintf(vox, sizeof vox, "%.2f x %.2f x %.2f", g.voxel_mm[0], g.voxel_mm[1],
               g.voxel_mm[2]);
    g_snprintf(size, sizeof size, "%u^3", edge);
    /* image/max: the image's sum over its maximum, in voxels: a few hundred for three lines
     * (a sanity figure, not a quality metric) */
    printf("%-8s %-22s %12.2f %10.3f %8.2f %9.0f", size, vox, best.total,
           best.iterations / iterations, best.setup, sum / mx);
    const PaperRow *s = seed_row(edge);
    if (s)
      printf(" %8.2f %8.2f %8.2f\n", s->qetir, s->v100_basic, s->v100_opt);
    else
      printf(" %8s %8s %8s\n", "-", "-", "-");
  }
  printf("end-to-end: TlRecon creation + %d iterations + image download; QETIR s, V100 s, V100o "
         "s: van Gendt et al. 2021 Table 2\n(QETIR C++ on a CPU, basic and optimised Julia on a Tesla V100, "
         "20 iterations of its GATE line sources)\n", iterations);
  return 0;
}
