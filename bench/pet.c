/* bench/pet: the PET-DMI reference case (non-TOF, ../shared/reference-cases.md): events per
 * second of forward projection, back projection and one fused list-mode sub-iteration (EM
 * kernel + update expression) on the Vulkan device, against the same projectors in plain
 * C + OpenMP (pet-cpu.c) in the same run, and the device bytes per event.
 *
 *   bench/pet [--events 1e6] [--repeat 5] [--projector siddon|joseph]
 *
 * The events are simulated from the NEMA IEC body phantom at the centre of the DMI scanner
 * (seed 1) and grouped by dominant axis as TlRecon uploads them (the C code sees the same
 * order). Device and C runs alternate and the best of each is kept, so a burst of load from
 * other processes does not land on one side only; core-seconds (getrusage: lavapipe's and
 * OpenMP's threads) are printed too, being less sensitive to that load than wall time. The
 * sub-iteration divides by a sensitivity image of ones: the DMI sensitivity image (2 x 10^8
 * pairs) is a one-off cached cost, not part of a sub-iteration. */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pet-common.h"
#include "pet-cpu.h"
#ifdef _OPENMP
#include <omp.h>
#endif

int main(int argc, char **argv) {
  double events = 1e6;
  int repeat = 5;
  g_autofree char *only = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "Events to simulate (default 1e6)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Runs per figure, best kept (default 5)", "R"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &only, "siddon or joseph (default both)", "NAME"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- PET-DMI projector benchmark");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);

  TlImageGrid grid = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  PetNema sim;
  if (!pet_nema_simulate(&sim, &grid, events, FALSE, &error)) bench_die(error);
  TlListmode *lm = sim.lm;
  const TlScanner *scanner = lm->scanner;
  TlImage *act = sim.act;
  guint64 n = lm->n_events, nv = tl_image_grid_n_voxels(&grid);
  tl_events_group_by_axis(lm->events, n, scanner, &grid);
  printf("PET-DMI non-TOF: %" G_GUINT64_FORMAT " events (NEMA, simulated in %.1f s), "
         "%u x %u x %u voxels of 2.78 mm\n", n, sim.seconds, grid.dims[0], grid.dims[1],
         grid.dims[2]);

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  g_autoptr(TlArray) crystals = tl_scanner_upload(scanner, ctx, &error);
  g_autoptr(TlArray) ev = crystals ? tl_listmode_upload(lm, ctx, 0, n, &error) : NULL;
  if (!ev) bench_die(error);
  g_autofree float *ones = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) ones[i] = 1.0f;
  g_autoptr(TlArray) x = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) s = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) c = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, n, &error);
  if (!y || !tl_array_upload(x, act->data, &error) || !tl_array_upload(s, ones, &error))
    bench_die(error);
  printf("device: %s; %.1f bytes per event on the device (the events; images and the crystal "
         "table do not grow with them)\n", tl_context_info(ctx)->name,
         (double)tl_array_size_bytes(ev) / n);
#ifdef _OPENMP
  printf("C/OpenMP: %d threads; best of %d alternating runs each\n", omp_get_max_threads(), repeat);
#endif
  double load[3] = {0};
  if (getloadavg(load, 3) > 0) printf("load average at the start: %.2f\n", load[0]);
  printf("\n%-8s %-20s %13s %13s %9s %11s\n", "", "", "device ev/s", "C/OpenMP ev/s", "dev / C",
         "core-time");

  const char *names[] = {"siddon", "joseph"};
  for (int k = 0; k < 2; k++) {
    if (only && strcmp(only, names[k]) != 0) continue;
    g_autoptr(TlProjector) p = tl_projector_new(ctx, names[k], &grid, &error);
    if (!p) bench_die(error);
    PetDevice d = {ctx, p,
                   {.kind = TL_LORS_EVENTS, .records = ev, .crystals = crystals, .count = n},
                   x, y, img, c, s};
    pet_device_run(&d, PET_OP_SUBITER, &BENCH_BEST_INIT); /* compile, warm up */
    PetCpuKind ck = k == 0 ? PET_CPU_SIDDON : PET_CPU_JOSEPH;
    g_autofree float *cy = g_new(float, n), *dy = g_new(float, n), *cimg = g_new0(float, nv);
    BenchBest df = BENCH_BEST_INIT, db = df, de = df, cf = df, cb = df;
    for (int r = 0; r < repeat; r++) {
      pet_device_run(&d, PET_OP_FORWARD, &df);
      double a = bench_now(), ca = bench_cpu_now();
      pet_cpu_forward(ck, &grid, scanner, lm->events, n, act->data, cy);
      bench_keep(&cf, bench_now() - a, bench_cpu_now() - ca, 0);
      pet_device_run(&d, PET_OP_BACK, &db);
      memset(cimg, 0, nv * sizeof(float));
      a = bench_now();
      ca = bench_cpu_now();
      pet_cpu_back(ck, &grid, scanner, lm->events, n, NULL, cimg);
      bench_keep(&cb, bench_now() - a, bench_cpu_now() - ca, 0);
      pet_device_run(&d, PET_OP_SUBITER, &de);
    }
    /* both sides compute the same thing */
    if (!tl_array_download(y, dy, &error)) bench_die(error);
    double md = 0, mx = 0;
    for (guint64 i = 0; i < n; i++) {
      md = MAX(md, fabs(dy[i] - cy[i]));
      mx = MAX(mx, fabs(cy[i]));
    }
    printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx\n", names[k], "forward", n / df.wall,
           n / cf.wall, cf.wall / df.wall, cf.cpu / df.cpu);
    printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx\n", "", "back", n / db.wall, n / cb.wall,
           cb.wall / db.wall, cb.cpu / db.cpu);
    printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx   (C: forward + back; target >= 1.0x)\n", "",
           "fused sub-iteration", n / de.wall, n / (cf.wall + cb.wall),
           (cf.wall + cb.wall) / de.wall, (cf.cpu + cb.cpu) / de.cpu);
    printf("%-8s   GPU timestamps: forward %.3f s, back %.3f s, sub-iteration %.3f s; device vs "
           "C forward: max difference %.2g of %.3g\n", "", df.gpu, db.gpu, de.gpu, md, mx);
  }
  pet_nema_clear(&sim);
  return 0;
}
