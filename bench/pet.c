/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/pet: the PET-DMI reference case (non-TOF, ../shared/reference-cases.md): events per
 * second of forward projection, back projection and one fused list-mode sub-iteration (EM
 * kernel + update expression) on the Vulkan device, against the same projectors in plain
 * C + OpenMP (pet-cpu.c) in the same run, and the device bytes per event.
 *
 *   bench/pet [--events 1e6] [--repeat 5] [--projector siddon|joseph] [--tof]
 *             [--cpu-events N] [--order axis|line]
 *
 * --tof: the events are simulated with TOF and both sides project with the TOF kernel (29 bins,
 * 3 sigma; pet_cpu_*_tof), the PET-DMI TOF figures. --cpu-events N: the C reference runs on N
 * of the events only, every k-th (k = ceil(events / N), so the mix of directions and axial
 * positions is kept), and its events per second come from those; 0 skips it. For the GPU case
 * (4e7 events) the C side on all events would take most of the run; its rate does not depend
 * on the count. Default: all events, as before.
 *
 * The events are simulated from the NEMA IEC body phantom at the centre of the DMI scanner
 * (seed 1) and ordered as TlRecon uploads them: grouped by dominant axis, and on a CPU device
 * ordered by line within a group (tl_events_order_by_line); --order forces either. The C code
 * sees the same order. Device and C runs alternate and the best of each is kept, so a burst of load from
 * other processes does not land on one side only; core-seconds (getrusage: lavapipe's and
 * OpenMP's threads) are printed too, being less sensitive to that load than wall time. The
 * sub-iteration divides by a sensitivity image of ones: the DMI sensitivity image (2 x 10^8
 * pairs) is a one-off cached cost, not part of a sub-iteration. The sub-iteration is what
 * tl_projector_em picks for the device (for Joseph on a CPU device the plane path,
 * tl-projector-planes.c); there the one-kernel pass GPUs run is timed as well.
 * TL_BENCH_PROFILE=1 prints every run's kernel times to stderr. */
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
  double cpu_events = -1;
  gboolean tof_on = FALSE;
  g_autofree char *only = NULL;
  g_autofree char *order = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "Events to simulate (default 1e6)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Runs per figure, best kept (default 5)", "R"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &only, "siddon or joseph (default both)", "NAME"},
      {"tof", 0, 0, G_OPTION_ARG_NONE, &tof_on, "TOF events and projectors (default non-TOF)",
       NULL},
      {"cpu-events", 0, 0, G_OPTION_ARG_DOUBLE, &cpu_events,
       "C reference on N evenly spread events only, 0 = skip it (default: all)", "N"},
      {"order", 0, 0, G_OPTION_ARG_STRING, &order,
       "events grouped by axis, or by axis then line (default: as TlRecon, line on CPU devices)",
       "axis|line"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- PET-DMI projector benchmark");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  if (!(events >= 1) || repeat < 1 ||
      (order && g_strcmp0(order, "axis") != 0 && g_strcmp0(order, "line") != 0)) {
    fprintf(stderr, "%s: --events >= 1, --repeat >= 1 and --order axis or line expected\n",
            g_get_prgname());
    return 2;
  }

  TlImageGrid grid = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  PetNema sim;
  if (!pet_nema_simulate(&sim, &grid, events, tof_on, &error)) bench_die(error);
  TlListmode *lm = sim.lm;
  const TlScanner *scanner = lm->scanner;
  TlImage *act = sim.act;
  guint64 n = lm->n_events, nv = tl_image_grid_n_voxels(&grid);
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  gboolean by_line = order ? g_str_equal(order, "line")
                           : tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  double t_order = g_get_monotonic_time() * 1e-6;
  if (by_line)
    tl_events_order_by_line(lm->events, n, scanner, &grid);
  else
    tl_events_group_by_axis(lm->events, n, scanner, &grid);
  t_order = g_get_monotonic_time() * 1e-6 - t_order;
  printf("PET-DMI %s: %" G_GUINT64_FORMAT " events (NEMA, simulated in %.1f s), "
         "%u x %u x %u voxels of 2.78 mm; events %s (%.2f s on the host)\n",
         tof_on ? "TOF" : "non-TOF", n, sim.seconds, grid.dims[0], grid.dims[1], grid.dims[2],
         by_line ? "grouped by axis, ordered by line" : "grouped by axis", t_order);
  TlTof tof_kernel;
  const TlTof *tof = NULL;
  if (tof_on) {
    if (!tl_tof_init(&tof_kernel, scanner, TL_TOF_N_SIGMA, &error)) bench_die(error);
    tof = &tof_kernel;
    printf("TOF: %u bins of %.2f mm, sigma %.2f mm, kernel truncated at %.0f sigma\n",
           scanner->tof_bins, tof->bin_mm, tof->sigma_mm, tof->n_sigma);
  }
  /* the C reference's events: all, or every stride-th (same order as the device's) */
  guint64 stride = 1, cn = n;
  if (cpu_events >= 0) {
    cn = (guint64)MIN(cpu_events, (double)n);
    stride = cn ? (n + cn - 1) / cn : 0;
    cn = cn ? (n + stride - 1) / stride : 0;
  }
  g_autofree TlEvent *sub = NULL;
  const TlEvent *cev = lm->events;
  if (stride > 1) {
    sub = g_new(TlEvent, cn);
    for (guint64 j = 0; j < cn; j++) sub[j] = lm->events[j * stride];
    cev = sub;
  }

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
  if (cn == 0)
    printf("C/OpenMP reference skipped (--cpu-events 0)\n");
  else if (cn < n)
    printf("C/OpenMP reference on %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
           " events (every %" G_GUINT64_FORMAT "th, --cpu-events): its ev/s are from those\n",
           cn, n, stride);
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
                   {.kind = TL_LORS_EVENTS, .records = ev, .crystals = crystals, .count = n,
                    .tof = tof},
                   x, y, img, c, s};
    pet_device_run(&d, PET_OP_SUBITER, &BENCH_BEST_INIT); /* compile, warm up */
    PetCpuKind ck = k == 0 ? PET_CPU_SIDDON : PET_CPU_JOSEPH;
    g_autofree float *cy = g_new(float, MAX(cn, 1)), *dy = g_new(float, n),
                     *cimg = g_new0(float, nv);
    BenchBest df = BENCH_BEST_INIT, db = df, de = df, cf = df, cb = df, d1 = df;
    /* Joseph on a CPU device: the sub-iteration runs the plane path (tl-projector-planes.c);
     * the one-kernel EM pass that GPUs run is timed too */
    gboolean one_kernel = k == 1 && tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (one_kernel) {
      tl_projector_set_em_method(p, TL_EM_FUSED);
      pet_device_run(&d, PET_OP_SUBITER, &BENCH_BEST_INIT);
      tl_projector_set_em_method(p, TL_EM_PLANES);
      pet_device_run(&d, PET_OP_SUBITER, &BENCH_BEST_INIT);
    }
    for (int r = 0; r < repeat; r++) {
      pet_device_run(&d, PET_OP_FORWARD, &df);
      double a = bench_now(), ca = bench_cpu_now();
      if (cn) {
        pet_cpu_forward_tof(ck, &grid, scanner, cev, cn, tof, act->data, cy);
        bench_keep(&cf, bench_now() - a, bench_cpu_now() - ca, 0);
      }
      pet_device_run(&d, PET_OP_BACK, &db);
      if (cn) {
        memset(cimg, 0, nv * sizeof(float));
        a = bench_now();
        ca = bench_cpu_now();
        pet_cpu_back_tof(ck, &grid, scanner, cev, cn, tof, NULL, cimg);
        bench_keep(&cb, bench_now() - a, bench_cpu_now() - ca, 0);
      }
      if (!one_kernel) {
        pet_device_run(&d, PET_OP_SUBITER, &de);
      } else {
        /* the plane path and the one-kernel pass, in turn first (the later run of a pair
         * tends to find warm caches) */
        for (int j = 0; j < 2; j++) {
          gboolean planes = (j == 0) == (r % 2 == 0);
          tl_projector_set_em_method(p, planes ? TL_EM_PLANES : TL_EM_FUSED);
          pet_device_run(&d, PET_OP_SUBITER, planes ? &de : &d1);
        }
        tl_projector_set_em_method(p, TL_EM_AUTO);
      }
    }
    /* both sides compute the same thing (the C side's events are every stride-th) */
    if (!tl_array_download(y, dy, &error)) bench_die(error);
    double md = 0, mx = 0;
    for (guint64 j = 0; j < cn; j++) {
      md = MAX(md, fabs(dy[j * stride] - cy[j]));
      mx = MAX(mx, fabs(cy[j]));
    }
    /* rates per side: device on n events, C on cn; the ratios are of rates (= of times when
     * cn = n) */
    const char *fwd = tof ? "forward TOF" : "forward", *bck = tof ? "back TOF" : "back";
    const char *sub_name = one_kernel ? (tof ? "plane path TOF" : "plane path")
                           : tof      ? "fused sub-iter. TOF"
                                      : "fused sub-iteration";
    if (cn) {
      printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx\n", names[k], fwd, n / df.wall,
             cn / cf.wall, (n / df.wall) / (cn / cf.wall), (n / df.cpu) / (cn / cf.cpu));
      printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx\n", "", bck, n / db.wall, cn / cb.wall,
             (n / db.wall) / (cn / cb.wall), (n / db.cpu) / (cn / cb.cpu));
      printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx   (C: forward + back; target >= 1.0x)\n",
             "", sub_name, n / de.wall, cn / (cf.wall + cb.wall),
             (n / de.wall) / (cn / (cf.wall + cb.wall)),
             (n / de.cpu) / (cn / (cf.cpu + cb.cpu)));
      if (one_kernel)
        printf("%-8s %-20s %13.3g %13.3g %8.2fx %10.2fx   (the one-kernel EM pass of GPUs)\n", "",
               "one-kernel sub-iter.", n / d1.wall, cn / (cf.wall + cb.wall),
               (n / d1.wall) / (cn / (cf.wall + cb.wall)),
               (n / d1.cpu) / (cn / (cf.cpu + cb.cpu)));
      printf("%-8s   GPU timestamps: forward %.3f s, back %.3f s, sub-iteration %.3f s; device vs "
             "C forward: max difference %.2g of %.3g\n", "", df.gpu, db.gpu, de.gpu, md, mx);
    }
    if (one_kernel)
      printf("%-8s   wall s, best of %d: plane path %.3f, one-kernel pass %.3f (%.2fx); "
             "TL_EM_AUTO runs %s\n", "", repeat, de.wall, d1.wall, d1.wall / de.wall,
             tl_projector_kernels(p, TL_PROJECTOR_EM, &d.lors)[0]);
    if (!cn) {
      printf("%-8s %-20s %13.3g %13s %9s %11s\n", names[k], fwd, n / df.wall, "-", "-", "-");
      printf("%-8s %-20s %13.3g %13s %9s %11s\n", "", bck, n / db.wall, "-", "-", "-");
      printf("%-8s %-20s %13.3g %13s %9s %11s\n", "", sub_name, n / de.wall, "-", "-", "-");
      if (one_kernel)
        printf("%-8s %-20s %13.3g %13s %9s %11s\n", "", "one-kernel sub-iter.", n / d1.wall, "-",
               "-", "-");
      printf("%-8s   GPU timestamps: forward %.3f s, back %.3f s, sub-iteration %.3f s\n", "",
             df.gpu, db.gpu, de.gpu);
    }
  }
  pet_nema_clear(&sim);
  return 0;
}
