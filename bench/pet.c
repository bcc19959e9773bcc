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
#include <sys/resource.h>
#include "pet-cpu.h"
#include "pet/tl-phantom.h"
#include "pet/tl-projector.h"
#include "pet/tl-simulate.h"
#include "tomolab-compute.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) { return g_get_monotonic_time() * 1e-6; }

static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static void die(GError *error) {
  fprintf(stderr, "bench/pet: %s\n", error->message);
  exit(1);
}

typedef struct {
  double wall, cpu, gpu; /* best seen */
} Best;

static void keep(Best *b, double wall, double cpu, double gpu) {
  if (wall < b->wall) b->wall = wall, b->gpu = gpu;
  b->cpu = MIN(b->cpu, cpu);
}

typedef enum { OP_FORWARD, OP_BACK, OP_SUBITER } Op;

typedef struct {
  TlContext *ctx;
  TlProjector *p;
  TlLors lors;
  TlArray *x, *y, *img, *c, *s;
} Device;

/* One device run of op, from recording to completion. */
static void run_device(Device *d, Op op, Best *b) {
  GError *error = NULL;
  g_autoptr(TlProfile) prof = tl_profile_new();
  g_autoptr(TlStream) st = tl_stream_new(d->ctx, &error);
  if (!st) die(error);
  tl_stream_set_profile(st, prof);
  if (!tl_stream_zero(st, op == OP_BACK ? d->img : d->c, &error) || !tl_stream_finish(st, &error))
    die(error);
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "f", d->x);
  tl_expr_args_array(args, "c", d->c);
  tl_expr_args_array(args, "s", d->s);
  tl_expr_args_scalar(args, "k", 1.0f);
  tl_expr_args_set_label(args, "update");
  double t0 = now(), c0 = cpu_now();
  gboolean ok = op == OP_FORWARD ? tl_projector_forward(d->p, st, &d->lors, d->x, d->y, &error)
              : op == OP_BACK    ? tl_projector_back(d->p, st, &d->lors, NULL, d->img, &error)
                                 : tl_projector_em(d->p, st, &d->lors, d->x, d->c, &error) &&
                                    tl_expr_assign(d->ctx, st, "c = select(s > 0, f * c * k / s, 0)",
                                                   args, &error);
  if (!ok || !tl_stream_finish(st, &error)) die(error);
  keep(b, now() - t0, cpu_now() - c0, tl_profile_total_ms(prof) * 1e-3);
}

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
  if (!g_option_context_parse(oc, &argc, &argv, &error)) die(error);

  g_autoptr(TlScanner) scanner = tl_scanner_new_preset("dmi", &error);
  if (!scanner) die(error);
  TlImageGrid grid = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, &grid, &error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  if (!ph || !tl_phantom_rasterise(ph, &grid, 0, &act, &mu, &error)) die(error);
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.exact_count = TRUE;
  sp.seed = 1;
  double t0 = now();
  g_autoptr(TlListmode) lm = tl_simulate(scanner, act, mu, &sp, NULL, NULL, NULL, NULL, &error);
  if (!lm) die(error);
  guint64 n = lm->n_events, nv = tl_image_grid_n_voxels(&grid);
  tl_events_group_by_axis(lm->events, n, scanner, &grid);
  printf("PET-DMI non-TOF: %" G_GUINT64_FORMAT " events (NEMA, simulated in %.1f s), "
         "%u x %u x %u voxels of 2.78 mm\n", n, now() - t0, grid.dims[0], grid.dims[1],
         grid.dims[2]);

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) die(error);
  g_autoptr(TlArray) crystals = tl_scanner_upload(scanner, ctx, &error);
  g_autoptr(TlArray) ev = crystals ? tl_listmode_upload(lm, ctx, 0, n, &error) : NULL;
  if (!ev) die(error);
  g_autofree float *ones = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) ones[i] = 1.0f;
  g_autoptr(TlArray) x = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) s = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) c = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, n, &error);
  if (!y || !tl_array_upload(x, act->data, &error) || !tl_array_upload(s, ones, &error)) die(error);
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
    if (!p) die(error);
    Device d = {ctx, p, {.kind = TL_LORS_EVENTS, .records = ev, .crystals = crystals, .count = n},
                x, y, img, c, s};
    run_device(&d, OP_SUBITER, &(Best){G_MAXDOUBLE, G_MAXDOUBLE, 0}); /* compile, warm up */
    PetCpuKind ck = k == 0 ? PET_CPU_SIDDON : PET_CPU_JOSEPH;
    g_autofree float *cy = g_new(float, n), *dy = g_new(float, n), *cimg = g_new0(float, nv);
    Best df = {G_MAXDOUBLE, G_MAXDOUBLE, 0}, db = df, de = df, cf = df, cb = df;
    for (int r = 0; r < repeat; r++) {
      run_device(&d, OP_FORWARD, &df);
      double a = now(), ca = cpu_now();
      pet_cpu_forward(ck, &grid, scanner, lm->events, n, act->data, cy);
      keep(&cf, now() - a, cpu_now() - ca, 0);
      run_device(&d, OP_BACK, &db);
      memset(cimg, 0, nv * sizeof(float));
      a = now();
      ca = cpu_now();
      pet_cpu_back(ck, &grid, scanner, lm->events, n, NULL, cimg);
      keep(&cb, now() - a, cpu_now() - ca, 0);
      run_device(&d, OP_SUBITER, &de);
    }
    /* both sides compute the same thing */
    if (!tl_array_download(y, dy, &error)) die(error);
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
  return 0;
}
