/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/pet-extensions: van Gendt et al. 2021's algorithmic extensions on the device.
 *
 *   bench/pet-extensions [--events 1e6] [--repeat 3] [--projector joseph] [--subsets 4]
 *                        [--skip-table] [--skip-tof]
 *
 * Part 1, the PET-extensions reference case at the CPU size (../shared/reference-cases.md):
 * the rows of van Gendt et al. 2021's Table 3 on the DMI scanner, an image of 67 x 43 x 290 voxels
 * of
 * 6 x 6 x 0.67 mm (402 x 258 x 194 mm: a torso-sized transaxial field over the whole axial
 * field of view of the DMI, z the long axis in voxels) and the NEMA IEC body phantom (its
 * 294 x 224 x 180 mm interior fits inside), events simulated with TOF and attenuation. Each
 * row: a TlRecon is created (its sensitivity image read from the disk cache, filled once
 * before the rows and timed there), one sub-iteration warms up its pipelines, then 4
 * iterations are timed. Rows run in turn, --repeat times, best kept. Each image is checked
 * against the phantom (RMSE, and the largest value near the scanner axis).
 *
 * Part 2, PET-DMI TOF against non-TOF: the PET-DMI case (215 x 215 x 71 voxels of 2.78 mm,
 * NEMA, 10^6 events with TOF: 29 bins of 25.37 mm, sigma 24.50 mm, 3 sigma), events per second
 * of forward and back projection through TlProjector with TlLors.tof set and NULL, against
 * the same projectors with the same TOF kernel in plain C + OpenMP (pet-cpu.c), alternating,
 * best of --repeat. */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pet-common.h"
#include "pet-cpu.h"
#include "pet/tl-recon.h"
#include "pet/project/tl-sensitivity.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define ITERATIONS 4

static void progress(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void progress(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%s] ", g_get_prgname());
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void print_machine(TlContext *ctx, int repeat) {
  printf("device: %s", tl_context_info(ctx)->name);
#ifdef _OPENMP
  printf("; C/OpenMP: %d threads", omp_get_max_threads());
#endif
  double load[3] = {0};
  if (getloadavg(load, 3) > 0) printf("; load average %.2f", load[0]);
  printf("; best of %d\n", repeat);
}

/* ---- Part 1: van Gendt et al. 2021 Table 3 ---- */

typedef struct {
  const char *name;
  TlReconAlgo algo;
  gboolean uniform, atten, tof, median;
  double v100, qetir; /* van Gendt et al. 2021 Table 3, seconds (Tesla V100, QETIR on a CPU); 0 =
                         N/A */
} Row;

/* Rows 4-7 use the sensitivity image: with s = 1 the a_j cancel and attenuation correction
 * would change nothing (docs/pet.md, Attenuation). */
static const Row rows[] = {
    {"baseline MLEM (s = 1)", TL_RECON_MLEM, TRUE, FALSE, FALSE, FALSE, 0.97, 87.46},
    {"MLEM + sensitivity", TL_RECON_MLEM, FALSE, FALSE, FALSE, FALSE, 0.99, 89.65},
    {"OSEM (s = 1)", TL_RECON_OSEM, TRUE, FALSE, FALSE, FALSE, 0.60, 43.16},
    {"MLEM + attenuation", TL_RECON_MLEM, FALSE, TRUE, FALSE, FALSE, 1.31, 93.60},
    {"MLEM + TOF", TL_RECON_MLEM, FALSE, FALSE, TRUE, FALSE, 1.27, 0},
    {"MLEM + median3 each iteration", TL_RECON_MLEM, FALSE, FALSE, FALSE, TRUE, 1.04, 120.89},
    {"OSEM + TOF + atten. + median3", TL_RECON_OSEM, FALSE, TRUE, TRUE, TRUE, 1.17, 0},
};
#define N_ROWS G_N_ELEMENTS(rows)

typedef struct {
  TlContext *ctx;
  PetNema sim;
  TlImageGrid grid;
  const char *projector;
  guint subsets;
} Table;

typedef struct {
  BenchBest setup, iter;
  double warm, rmse, axis_max;
} RowResult;

static void row_options(const Table *t, const Row *row, TlReconOptions *o) {
  tl_recon_options_init(o);
  o->algo = row->algo;
  o->subsets = row->algo == TL_RECON_OSEM ? t->subsets : 1;
  o->iterations = ITERATIONS + 1;
  o->projector = t->projector;
  o->loglik = TL_LOGLIK_NEVER;
  o->uniform_sensitivity = row->uniform;
  o->attenuation = row->atten ? t->sim.mu : NULL;
  o->tof = row->tof;
  o->tof_n_sigma = TL_TOF_N_SIGMA;
  if (row->median) {
    o->filter.kind = TL_FILTER_MEDIAN3;
    o->filter_every = o->subsets; /* once per iteration */
  }
}

/* Image checks, the image scaled to the truth's total, in units of the background activity
 * (1): RMSE inside the phantom (mu > 0) farther than AXIS_MM from the scanner axis, and the
 * largest value within AXIS_MM of it (the truth there is the cold lung insert, 0). The axis
 * is kept apart because 0.67 mm slices sample it more finely than the rings (README.md). */
#define AXIS_MM 30.0

static void image_checks(const TlImage *img, const Table *t, double *rmse, double *axis_max) {
  const float *f = img->data, *a = t->sim.act->data, *mu = t->sim.mu->data;
  const TlImageGrid *g = &t->grid;
  guint64 nv = tl_image_grid_n_voxels(g), m = 0;
  double sf = 0, sa = 0, e = 0;
  for (guint64 i = 0; i < nv; i++) sf += f[i], sa += a[i];
  double k = sf > 0 ? sa / sf : 0;
  *axis_max = 0;
  for (guint64 i = 0; i < nv; i++) {
    double x = g->origin_mm[0] + (double)(i % g->dims[0]) * g->voxel_mm[0];
    double y = g->origin_mm[1] + (double)(i / g->dims[0] % g->dims[1]) * g->voxel_mm[1];
    if (hypot(x, y) <= AXIS_MM)
      *axis_max = MAX(*axis_max, k * f[i]);
    else if (mu[i] > 0)
      e += (k * f[i] - a[i]) * (k * f[i] - a[i]), m++;
  }
  *rmse = sqrt(e / MAX(m, 1));
}

static void run_row(const Table *t, const Row *row, RowResult *res) {
  GError *error = NULL;
  TlReconOptions o;
  row_options(t, row, &o);
  double t0 = bench_now(), c0 = bench_cpu_now();
  g_autoptr(TlRecon) r = tl_recon_new_listmode(t->ctx, t->sim.lm, &t->grid, &o, &error);
  if (!r) bench_die(error);
  bench_keep(&res->setup, bench_now() - t0, bench_cpu_now() - c0, 0);
  t0 = bench_now();
  if (!tl_recon_step(r, &error)) bench_die(error); /* compiles this row's pipelines */
  res->warm = bench_now() - t0;
  guint steps = ITERATIONS * o.subsets;
  t0 = bench_now(), c0 = bench_cpu_now();
  for (guint k = 0; k < steps; k++)
    if (!tl_recon_step(r, &error)) bench_die(error);
  bench_keep(&res->iter, bench_now() - t0, bench_cpu_now() - c0, 0);
  g_autoptr(TlImage) img = tl_recon_image(r, &error);
  if (!img) bench_die(error);
  image_checks(img, t, &res->rmse, &res->axis_max);
}

/* The one-off sensitivity image for the grid and projector, with or without the mu-map,
 * filled into the disk cache where TlRecon finds it. */
static void sensitivity_once(const Table *t, gboolean atten) {
  GError *error = NULL;
  const TlScanner *scanner = t->sim.lm->scanner;
  g_autoptr(TlProjector) p = tl_projector_new(t->ctx, t->projector, &t->grid, &error);
  g_autoptr(TlStream) st = p ? tl_stream_new(t->ctx, &error) : NULL;
  g_autoptr(TlArray) crystals = st ? tl_scanner_upload(scanner, t->ctx, &error) : NULL;
  if (!crystals) bench_die(error);
  g_autoptr(TlArray) mu = NULL;
  g_autofree char *hash = NULL;
  if (atten) {
    mu = tl_array_new_float(t->ctx, tl_image_grid_n_voxels(&t->grid), &error);
    if (!mu || !tl_array_upload(mu, t->sim.mu->data, &error)) bench_die(error);
    hash = tl_sensitivity_mu_hash(t->sim.mu);
  }
  progress("sensitivity image (%s%s): reading the cache or computing (minutes)...",
           t->projector, atten ? ", attenuated" : "");
  gboolean hit = FALSE;
  double t0 = bench_now();
  g_autoptr(TlArray) s = tl_sensitivity_image_atten(p, st, scanner, crystals, 1, 0, mu, hash,
                                                    TRUE, &hit, &error);
  if (!s || !tl_stream_finish(st, &error)) bench_die(error);
  printf("  sensitivity image, %s%s: %.1f s (%s)\n", t->projector,
         atten ? ", attenuated (eq. 7)" : "", bench_now() - t0,
         hit ? "read from the cache" : "computed and cached");
}

static void table3(TlContext *ctx, double events, int repeat, const char *projector,
                   guint subsets) {
  GError *error = NULL;
  Table t = {.ctx = ctx, .projector = projector, .subsets = subsets,
             .grid = tl_image_grid_centred(67, 43, 290, 6.0f, 6.0f, 0.67f)};
  progress("part 1: simulating %.3g TOF events with attenuation...", events);
  if (!pet_nema_simulate(&t.sim, &t.grid, events, TRUE, &error)) bench_die(error);
  printf("PET-extensions (van Gendt et al. 2021 Table 3, CPU size): DMI scanner, 67 x 43 x 290 voxels of "
         "6 x 6 x 0.67 mm,\n  NEMA IEC body, %" G_GUINT64_FORMAT " events with TOF and "
         "attenuation (simulated in %.1f s); %s projector;\n  %d iterations per row, OSEM with "
         "%u subsets; median3 once per iteration\n",
         t.sim.lm->n_events, t.sim.seconds, projector, ITERATIONS, subsets);
  print_machine(ctx, repeat);
  sensitivity_once(&t, FALSE);
  sensitivity_once(&t, TRUE);

  RowResult res[N_ROWS];
  for (guint i = 0; i < N_ROWS; i++) res[i].setup = res[i].iter = BENCH_BEST_INIT;
  for (int r = 0; r < repeat; r++)
    for (guint i = 0; i < N_ROWS; i++) {
      progress("part 1, run %d/%d, row %u/%u: %s...", r + 1, repeat, i + 1, (guint)N_ROWS,
               rows[i].name);
      run_row(&t, &rows[i], &res[i]);
      progress("  setup %.2f s, warm-up sub-iteration %.2f s, %d iterations %.2f s",
               res[i].setup.wall, res[i].warm, ITERATIONS, res[i].iter.wall);
    }

  printf("\n%-30s %7s %8s %9s %7s %7s %8s %6s %8s\n", "", "setup s", "4 it. s", "slowdown",
         "V100 s", "V100 x", "QETIR x", "RMSE", "axis max");
  double base = res[0].iter.wall;
  for (guint i = 0; i < N_ROWS; i++) {
    const Row *w = &rows[i];
    printf("%-30s %7.2f %8.2f %8.2fx %7.2f %6.2fx", w->name, res[i].setup.wall, res[i].iter.wall,
           res[i].iter.wall / base, w->v100, w->v100 / rows[0].v100);
    if (w->qetir > 0)
      printf(" %7.2fx", w->qetir / rows[0].qetir);
    else
      printf(" %8s", "N/A");
    printf(" %6.3f %8.3g\n", res[i].rmse, res[i].axis_max);
  }
  printf("setup: TlRecon creation, sensitivity image from the cache, attenuation factors; "
         "RMSE: inside the\nphantom beyond %.0f mm of the axis, axis max: largest value within "
         "it (truth 0), both / background\n", AXIS_MM);
  pet_nema_clear(&t.sim);
}

/* ---- Part 2: PET-DMI TOF against non-TOF ---- */

typedef struct {
  BenchBest dev, c;
} Pair;

static void print_pair(const char *proj, const char *what, const Pair *p, guint64 n, gboolean cpu) {
  printf("%-8s %-20s %13.3g", proj, what, n / p->dev.wall);
  if (cpu)
    printf(" %13.3g %8.2fx %10.2fx\n", n / p->c.wall, p->c.wall / p->dev.wall,
           p->c.cpu / p->dev.cpu);
  else
    printf(" %13s %9s %11s\n", "-", "-", "-");
}

static void print_ratio(const Pair *tof, const Pair *plain, gboolean cpu) {
  printf("%-8s %-20s %12.2fx", "", "  TOF / non-TOF", plain->dev.wall / tof->dev.wall);
  if (cpu) printf(" %12.2fx", plain->c.wall / tof->c.wall);
  printf("\n");
}

static void tof_compare(TlContext *ctx, double events, int repeat, const char *only) {
  GError *error = NULL;
  TlImageGrid grid = tl_image_grid_centred(215, 215, 71, 2.78f, 2.78f, 2.78f);
  PetNema sim;
  progress("part 2: simulating %.3g TOF events...", events);
  if (!pet_nema_simulate(&sim, &grid, events, TRUE, &error)) bench_die(error);
  const TlListmode *lm = sim.lm;
  guint64 n = lm->n_events, nv = tl_image_grid_n_voxels(&grid);
  tl_events_group_by_axis(lm->events, n, lm->scanner, &grid);
  TlTof tof;
  if (!tl_tof_init(&tof, lm->scanner, TL_TOF_N_SIGMA, &error)) bench_die(error);
  printf("\nPET-DMI TOF: %" G_GUINT64_FORMAT " events with TOF (NEMA, simulated in %.1f s), "
         "215 x 215 x 71 voxels of 2.78 mm;\n  TOF %u bins of %.2f mm, sigma %.2f mm, kernel "
         "truncated at %.0f sigma\n", n, sim.seconds, lm->scanner->tof_bins, tof.bin_mm,
         tof.sigma_mm, tof.n_sigma);
  print_machine(ctx, repeat);

  g_autoptr(TlArray) crystals = tl_scanner_upload(lm->scanner, ctx, &error);
  g_autoptr(TlArray) ev = crystals ? tl_listmode_upload(lm, ctx, 0, n, &error) : NULL;
  g_autoptr(TlArray) x = ev ? tl_array_new_float(ctx, nv, &error) : NULL;
  g_autoptr(TlArray) c = x ? tl_array_new_float(ctx, nv, &error) : NULL;
  g_autoptr(TlArray) img = c ? tl_array_new_float(ctx, nv, &error) : NULL;
  g_autoptr(TlArray) y = img ? tl_array_new_float(ctx, n, &error) : NULL;
  if (!y || !tl_array_upload(x, sim.act->data, &error)) bench_die(error);
  printf("\n%-8s %-20s %13s %13s %9s %11s\n", "", "", "device ev/s", "C/OpenMP ev/s", "dev / C",
         "core-time");

  const char *names[] = {"siddon", "joseph", "tor"};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
    if (only ? strcmp(only, names[k]) != 0 : k == 2) continue;
    g_autoptr(TlProjector) p = tl_projector_new(ctx, names[k], &grid, &error);
    if (!p) bench_die(error);
    gboolean cpu = k < 2;
    PetCpuKind ck = k == 0 ? PET_CPU_SIDDON : PET_CPU_JOSEPH;
    PetDevice dn = {ctx, p,
                    {.kind = TL_LORS_EVENTS, .records = ev, .crystals = crystals, .count = n},
                    x, y, img, c, NULL};
    PetDevice dt = dn;
    dt.lors.tof = &tof;
    progress("part 2, %s: warming up...", names[k]);
    for (PetOp op = PET_OP_FORWARD; op <= PET_OP_BACK; op++) {
      pet_device_run(&dn, op, &BENCH_BEST_INIT);
      pet_device_run(&dt, op, &BENCH_BEST_INIT);
    }
    g_autofree float *cy = g_new(float, n), *dy = g_new(float, n), *cimg = g_new0(float, nv);
    Pair fn = {BENCH_BEST_INIT, BENCH_BEST_INIT}, ft = fn, bn = fn, bt = fn;
    struct {
      PetDevice *d;
      PetOp op;
      const TlTof *tof;
      Pair *pair;
    } runs[] = {{&dn, PET_OP_FORWARD, NULL, &fn}, {&dn, PET_OP_BACK, NULL, &bn},
                {&dt, PET_OP_BACK, &tof, &bt}, {&dt, PET_OP_FORWARD, &tof, &ft}};
    for (int r = 0; r < repeat; r++)
      for (guint j = 0; j < G_N_ELEMENTS(runs); j++) {
        progress("part 2, %s, run %d/%d: %s %s", names[k], r + 1, repeat,
                 runs[j].op == PET_OP_FORWARD ? "forward" : "back",
                 runs[j].tof ? "TOF" : "non-TOF");
        pet_device_run(runs[j].d, runs[j].op, &runs[j].pair->dev);
        if (!cpu) continue;
        double a = bench_now(), ca = bench_cpu_now();
        if (runs[j].op == PET_OP_FORWARD) {
          pet_cpu_forward_tof(ck, &grid, lm->scanner, lm->events, n, runs[j].tof,
                              sim.act->data, cy);
        } else {
          memset(cimg, 0, nv * sizeof(float));
          pet_cpu_back_tof(ck, &grid, lm->scanner, lm->events, n, runs[j].tof, NULL, cimg);
        }
        bench_keep(&runs[j].pair->c, bench_now() - a, bench_cpu_now() - ca, 0);
      }
    print_pair(names[k], "forward non-TOF", &fn, n, cpu);
    print_pair("", "forward TOF", &ft, n, cpu);
    print_ratio(&ft, &fn, cpu);
    print_pair("", "back non-TOF", &bn, n, cpu);
    print_pair("", "back TOF", &bt, n, cpu);
    print_ratio(&bt, &bn, cpu);
    if (cpu) { /* the last forward runs were TOF on both sides */
      if (!tl_array_download(y, dy, &error)) bench_die(error);
      double md = 0, mx = 0;
      for (guint64 i = 0; i < n; i++) {
        md = MAX(md, fabs(dy[i] - cy[i]));
        mx = MAX(mx, fabs(cy[i]));
      }
      printf("%-8s   TOF forward, device vs C: max difference %.2g of %.3g\n", "", md, mx);
    }
  }
  pet_nema_clear(&sim);
}

int main(int argc, char **argv) {
  double events = 1e6;
  int repeat = 3, subsets = 4;
  gboolean skip_table = FALSE, skip_tof = FALSE;
  g_autofree char *projector = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "Events to simulate (default 1e6)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Runs per figure, best kept (default 3)", "R"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &projector,
       "siddon, joseph or tor (default: joseph for the table; siddon and joseph for TOF)", "NAME"},
      {"subsets", 's', 0, G_OPTION_ARG_INT, &subsets, "OSEM subsets (default 4)", "S"},
      {"skip-table", 0, 0, G_OPTION_ARG_NONE, &skip_table, "Skip part 1 (Table 3 rows)", NULL},
      {"skip-tof", 0, 0, G_OPTION_ARG_NONE, &skip_tof, "Skip part 2 (TOF vs non-TOF)", NULL},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- van Gendt et al. 2021 Table 3 and PET-DMI TOF");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  if (!(events >= 1) || repeat < 1 || subsets < 1) {
    fprintf(stderr, "%s: --events >= 1, --repeat >= 1 and --subsets >= 1 expected\n",
            g_get_prgname());
    return 2;
  }
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  double t0 = bench_now();
  if (!skip_table) table3(ctx, events, repeat, projector ? projector : "joseph", (guint)subsets);
  if (!skip_tof) tof_compare(ctx, events, repeat, projector);
  printf("\ntotal run time %.0f s\n", bench_now() - t0);
  return 0;
}
