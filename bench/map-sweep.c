/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/map-sweep: penalised reconstruction of a simulated NEMA IEC body scan on the DMI
 * scanner for a sweep of prior strengths beta: the background coefficient of variation (noise)
 * and the contrast recovery of the 37 mm and 17 mm hot spheres (resolution) per beta, for
 * docs/recon.md's table.
 *
 *   bench/map-sweep [--events 2e6] [--prior rdp] [--algo bsrem] [--betas 0,0.1,...]
 *                   [--iterations 4] [--subsets 10] [--voxel 5.56]
 *
 * Background ROI: voxels whose true activity is the background's and whose whole 5 x 5 x 5
 * neighbourhood is too (away from spheres, lung insert and edges), within 30 mm of the spheres'
 * plane. CoV = standard deviation / mean over it. CRC of a sphere (4:1) = (mean in the sphere's
 * inner half radius / background mean - 1) / (4 - 1). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pet-common.h"
#include "pet/tl-recon.h"

static double sphere_mean(const TlImage *im, double cx, double cy, double cz, double r) {
  const TlImageGrid *g = &im->grid;
  double s = 0;
  guint64 n = 0;
  for (guint k = 0; k < g->dims[2]; k++)
    for (guint j = 0; j < g->dims[1]; j++)
      for (guint i = 0; i < g->dims[0]; i++) {
        double x = g->origin_mm[0] + i * g->voxel_mm[0], y = g->origin_mm[1] + j * g->voxel_mm[1],
               z = g->origin_mm[2] + k * g->voxel_mm[2];
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz) > r * r) continue;
        s += im->data[i + (guint64)g->dims[0] * (j + (guint64)g->dims[1] * k)];
        n++;
      }
  return n ? s / n : NAN;
}

int main(int argc, char **argv) {
  double events = 2e6, voxel = 5.56;
  int iterations = 4, subsets = 10;
  g_autofree char *prior = NULL, *algo = NULL, *betas_text = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "Events (default 2e6)", "N"},
      {"prior", 0, 0, G_OPTION_ARG_STRING, &prior, "rdp (default), quadratic, tv", "NAME"},
      {"algo", 'a', 0, G_OPTION_ARG_STRING, &algo, "bsrem (default) or osl", "ALGO"},
      {"betas", 'b', 0, G_OPTION_ARG_STRING, &betas_text, "Comma-separated betas", "LIST"},
      {"iterations", 'i', 0, G_OPTION_ARG_INT, &iterations, "Iterations (default 4)", "N"},
      {"subsets", 's', 0, G_OPTION_ARG_INT, &subsets, "Subsets (default 10)", "S"},
      {"voxel", 0, 0, G_OPTION_ARG_DOUBLE, &voxel, "Voxel size in mm (default 5.56)", "MM"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- MAP beta sweep on NEMA / DMI");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  g_auto(GStrv) bt = g_strsplit(betas_text ? betas_text : "0,0.03,0.1,0.3,1,3", ",", -1);

  guint nxy = (guint)ceil(600.0 / voxel), nz = (guint)ceil(197.0 / voxel);
  TlImageGrid grid = tl_image_grid_centred(nxy, nxy, nz, (float)voxel, (float)voxel, (float)voxel);
  PetNema sim;
  if (!pet_nema_simulate(&sim, &grid, events, FALSE, &error)) bench_die(error);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);

  /* background ROI from the truth */
  const TlImageGrid *g = &grid;
  guint64 nv = tl_image_grid_n_voxels(g);
  g_autofree gboolean *roi = g_new0(gboolean, nv);
  guint64 nroi = 0;
  int R = 2;
  for (guint k = R; k + R < g->dims[2]; k++)
    for (guint j = R; j + R < g->dims[1]; j++)
      for (guint i = R; i + R < g->dims[0]; i++) {
        double z = g->origin_mm[2] + k * g->voxel_mm[2];
        if (fabs(z - 20.0) > 30.0) continue;
        gboolean all = TRUE;
        for (int c = -R; c <= R && all; c++)
          for (int b = -R; b <= R && all; b++)
            for (int a = -R; a <= R && all; a++)
              all = sim.act->data[(i + a) + g->dims[0] * ((j + b) + (guint64)g->dims[1] * (k + c))] == 1.0f;
        guint64 v = i + g->dims[0] * (j + (guint64)g->dims[1] * k);
        roi[v] = all;
        nroi += all;
      }
  printf("NEMA IEC body on DMI: %.3g events, %u x %u x %u voxels of %.2f mm, %s + %s, %d "
         "iterations x %d subsets; background ROI %" G_GUINT64_FORMAT " voxels\n",
         events, nxy, nxy, nz, voxel, algo ? algo : "bsrem", prior ? prior : "rdp", iterations,
         subsets, nroi);
  printf("| beta | background CoV | CRC 37 mm | CRC 17 mm | seconds |\n|---:|---:|---:|---:|---:|\n");
  for (guint b = 0; bt[b]; b++) {
    double beta = g_ascii_strtod(bt[b], NULL);
    TlReconOptions o;
    tl_recon_options_init(&o);
    o.algorithm = algo ? algo : "bsrem";
    o.algo = TL_RECON_OSEM;
    o.subsets = (guint)subsets;
    o.iterations = (guint)iterations;
    o.loglik = TL_LOGLIK_NEVER;
    o.prior = prior ? prior : "rdp";
    o.beta = beta;
    double t0 = bench_now();
    g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, sim.lm, &grid, &o, &error);
    if (!r || !tl_recon_run(r, &error)) bench_die(error);
    g_autoptr(TlImage) im = tl_recon_image(r, &error);
    if (!im) bench_die(error);
    double s = 0, s2 = 0;
    for (guint64 v = 0; v < nv; v++)
      if (roi[v]) s += im->data[v], s2 += (double)im->data[v] * im->data[v];
    double mean = s / nroi, sd = sqrt(MAX(s2 / nroi - mean * mean, 0));
    /* spheres: diameters 37, 28, 22, 17, 13, 10 mm on a 57.2 mm circle at z = 20 (phantom) */
    double crc[2];
    const double diam[2] = {37, 17};
    const int idx[2] = {0, 3};
    for (int q = 0; q < 2; q++) {
      double a = G_PI * (180.0 + 60.0 * idx[q]) / 180.0;
      double m = sphere_mean(im, 57.2 * cos(a), 57.2 * sin(a), 20.0, 0.25 * diam[q]);
      crc[q] = (m / mean - 1) / 3.0;
    }
    printf("| %s | %.4f | %.3f | %.3f | %.1f |\n", bt[b], sd / mean, crc[0], crc[1],
           bench_now() - t0);
    fflush(stdout);
  }
  pet_nema_clear(&sim);
  return 0;
}
