/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/ct-tooth: the real tooth scan (../shared/data/tooth/tooth.h5: 181 parallel-beam
 * views of 2 x 640, Data Exchange) reconstructed by FBP as a new user would, against
 * scikit-image's FBP (iradon, filter 'ramp', one slice per row) in the same run, and the ramp
 * filter alone by FFT (VkFFT) against the exact spatial convolution; then the automatic centre
 * search (--centre auto: the middle row, plans included), one OS-SART iteration (Joseph, the
 * CLI's 10 subsets) against one iteration of scikit-image's iradon_sart per slice, and one CGLS
 * iteration in FBP runs (issue 31's tooth checks); the iterations are the first after the set-up
 * (OS-SART's row and column sums, CGLS's r = y - Ax, s = A^T r), which is not timed.
 *
 *   bench/ct-tooth [--repeat 3] [--fft-only] [--no-skimage] [SCAN.h5]
 *
 * Each figure is the best of --repeat after one warm-up run, in wall seconds and, beside it, the
 * core-seconds of that run (getrusage: every thread of the process, lavapipe's included): on
 * a shared machine wall time is mostly waiting for a core, core-seconds are the work, and a
 * wall time far above core-seconds / threads with the machine idle would be the host and the
 * device waiting on each other. "FBP run" is the reconstruction
 * with the projections already on the device (weight, filter, back projection, finish);
 * "FBP end to end" adds what a call from a program costs: the plan (pipelines, VkFFT's
 * kernels), the upload of the projections, the download of the image. scikit-image's figure
 * is its iradon calls on the host arrays (bench/ct-tooth-skimage.py, run by this program with
 * $TL_BENCH_PYTHON, else /usr/bin/python3; skipped when scikit-image is not importable). FDK of a parallel-beam scan is this
 * same FBP (tl-ct-fdk.h), so one figure serves both. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>
#include <sys/resource.h>
#include "ct/tl-ct-centre.h"
#include "ct/tl-ct-data.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-simulate.h"
#include "ct/tl-ct-fdk.h"
#include "dataset/tl-formats.h"
#include "tomolab-compute.h"

static double now(void) { return g_get_monotonic_time() * 1e-6; }

/* CPU seconds of the whole process (lavapipe's threads included): wall time on a shared
 * machine is mostly waiting for a core, this is the work itself. */
static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* The best wall time of a figure and the core-seconds of that same run. */
typedef struct {
  double wall, cpu;
} Best;
#define BEST_INIT {INFINITY, NAN}
static void best_keep(Best *b, double wall, double cpu) {
  if (wall < b->wall) b->wall = wall, b->cpu = cpu;
}

static void die(GError *error) {
  fprintf(stderr, "bench/ct-tooth: %s\n", error->message);
  exit(1);
}
#define CHECK(x) \
  do {           \
    if (!(x)) die(error); \
  } while (0)

typedef struct {
  TlContext *ctx;
  TlCtData *d;
  TlArray *proj, *img;
  TlCtRampMethod ramp;
} Bench;

/* FBP with the data on the device; returns seconds, *cpu its core-seconds. */
static double fbp_run(Bench *b, TlCtFdk *f, double *cpu) {
  GError *error = NULL;
  g_autoptr(TlStream) s = tl_stream_new(b->ctx, &error);
  CHECK(s);
  double t = now(), c = cpu_now();
  CHECK(tl_ct_fdk_run(f, s, b->proj, b->img, &error) && tl_stream_finish(s, &error));
  *cpu = cpu_now() - c;
  return now() - t;
}

/* plan + upload + FBP + download; returns seconds. */
static double fbp_end_to_end(Bench *b, float *out) {
  GError *error = NULL;
  double t = now();
  g_autoptr(TlCtFdk) f = tl_ct_fdk_new_full(b->ctx, b->d->geometry, &b->d->grid,
                                            TL_CT_FILTER_RAM_LAK, b->ramp, 0, &error);
  CHECK(f);
  g_autoptr(TlArray) p = tl_ct_data_upload(b->ctx, b->d, &error);
  CHECK(p);
  g_autoptr(TlStream) s = tl_stream_new(b->ctx, &error);
  CHECK(s);
  CHECK(tl_ct_fdk_run(f, s, p, b->img, &error) && tl_stream_finish(s, &error) &&
        tl_array_download(b->img, out, &error));
  return now() - t;
}

/* The filter alone over every row of every view. */
static double filter_run(Bench *b, TlCtRamp *r, TlArray *dst) {
  GError *error = NULL;
  const TlCtGeometry *g = b->d->geometry;
  g_autoptr(TlStream) s = tl_stream_new(b->ctx, &error);
  CHECK(s);
  double t = now();
  CHECK(tl_ct_ramp_run(r, s, b->proj, dst, g->n_views * g->det_v, &error) &&
        tl_stream_finish(s, &error));
  return now() - t;
}

/* The automatic centre search as --centre auto runs it (the middle row), plans included. */
static double centre_run(Bench *b, TlCtCentre *c, double *cpu) {
  GError *error = NULL;
  double t = now(), c0 = cpu_now();
  CHECK(tl_ct_centre_search(b->ctx, b->d, b->d->geometry->det_v / 2, c, &error));
  *cpu = cpu_now() - c0;
  return now() - t;
}

/* One iteration of `algo` (all its subsets) after `warm` iterations, on the run's defaults
 * (Joseph; OS-SART with the CLI's 10 subsets); returns seconds of that iteration alone. */
static double iteration_run(Bench *b, TlCtAlgo algo, guint subsets, guint warm, double *cpu) {
  GError *error = NULL;
  TlCtReconOptions o;
  tl_ct_recon_options_init(&o);
  o.algo = algo;
  o.subsets = subsets;
  o.iterations = warm + 1;
  o.objective = TL_CT_OBJECTIVE_NEVER;
  g_autoptr(TlCtRecon) r = tl_ct_recon_new(b->ctx, b->d->geometry, &b->d->grid, b->proj, &o,
                                           &error);
  CHECK(r);
  for (guint i = 0; i < warm * subsets; i++) CHECK(tl_ct_recon_step(r, &error));
  double t = now(), c = cpu_now();
  for (guint i = 0; i < subsets; i++) CHECK(tl_ct_recon_step(r, &error));
  *cpu = cpu_now() - c;
  return now() - t;
}

static void cpu_model(char *buf, gsize n) {
  g_autofree char *text = NULL;
  g_strlcpy(buf, "?", n);
  if (!g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) return;
  char *p = strstr(text, "model name");
  if (!p || !(p = strchr(p, ':'))) return;
  p += 2;
  gsize k = strcspn(p, "\n");
  g_strlcpy(buf, p, MIN(n, k + 1));
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int repeat = 3;
  gboolean fft_only = FALSE, no_skimage = FALSE;
  GOptionEntry entries[] = {
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Timed runs after the warm-up (best kept)", "N"},
      {"fft-only", 0, 0, G_OPTION_ARG_NONE, &fft_only, "FBP with the FFT ramp only", NULL},
      {"no-skimage", 0, 0, G_OPTION_ARG_NONE, &no_skimage, "Do not run scikit-image", NULL},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("[SCAN.h5] - FBP of the tooth vs scikit-image");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) die(error);
  const char *path = argc > 1 ? argv[1] : "../shared/data/tooth/tooth.h5";
  repeat = MAX(repeat, 1);

  Bench b = {0};
  b.d = tl_format_load_kind(path, TL_DATA_CT, &error);
  CHECK(b.d);
  const TlCtGeometry *g = b.d->geometry;
  if (g->beam != TL_CT_PARALLEL || !b.d->has_grid) {
    fprintf(stderr, "bench/ct-tooth: %s: expected a parallel-beam scan with a suggested grid\n",
            path);
    return 1;
  }
  b.ctx = tl_context_new(NULL, &error);
  CHECK(b.ctx);
  b.proj = tl_ct_data_upload(b.ctx, b.d, &error);
  CHECK(b.proj);
  guint64 nvox = tl_image_grid_n_voxels(&b.d->grid);
  b.img = tl_array_new_float(b.ctx, nvox, &error);
  CHECK(b.img);
  g_autofree float *out = g_new(float, nvox);
  char cpu[128];
  cpu_model(cpu, sizeof cpu);
  printf("bench/ct-tooth: %s: %u views of %u x %u, grid %u x %u x %u; device %s; CPU %s, %u "
         "threads; best of %d after a warm-up\n", path, g->n_views, g->det_u, g->det_v,
         b.d->grid.dims[0], b.d->grid.dims[1], b.d->grid.dims[2], tl_context_info(b.ctx)->name,
         cpu, g_get_num_processors(), repeat);

  Best best_run[2] = {BEST_INIT, BEST_INIT};
  double best_e2e[2] = {INFINITY, INFINITY}, core;
  double best_filter[2] = {INFINITY, INFINITY};
  TlCtRampMethod methods[2] = {TL_CT_RAMP_FFT, TL_CT_RAMP_SPATIAL};
  const char *names[2] = {"FFT (VkFFT)", "spatial"};
  TlArray *filtered = tl_array_new_float(b.ctx, tl_array_length(b.proj), &error);
  CHECK(filtered);
  for (int m = 0; m < 2; m++) {
    if (methods[m] == TL_CT_RAMP_FFT && !tl_ct_ramp_have_fft()) continue;
    if (methods[m] == TL_CT_RAMP_SPATIAL && fft_only && tl_ct_ramp_have_fft()) continue;
    b.ramp = methods[m];
    g_autoptr(TlCtFdk) f = tl_ct_fdk_new_full(b.ctx, g, &b.d->grid, TL_CT_FILTER_RAM_LAK,
                                              b.ramp, 0, &error);
    CHECK(f);
    g_autoptr(TlCtRamp) r = tl_ct_ramp_new(b.ctx, TL_CT_FILTER_RAM_LAK, g->det_u,
                                           g->n_views * g->det_v, b.ramp, &error);
    CHECK(r);
    fbp_run(&b, f, &core), fbp_end_to_end(&b, out), filter_run(&b, r, filtered); /* warm-up */
    for (int i = 0; i < repeat; i++) {
      double w = fbp_run(&b, f, &core);
      best_keep(&best_run[m], w, core);
      best_e2e[m] = MIN(best_e2e[m], fbp_end_to_end(&b, out));
      best_filter[m] = MIN(best_filter[m], filter_run(&b, r, filtered));
    }
    printf("  ramp %-12s  FBP run %.4f s (%.2f core-s)   FBP end to end %.4f s   filter alone "
           "%.4f s\n", names[m], best_run[m].wall, best_run[m].cpu, best_e2e[m], best_filter[m]);
  }

  /* the centre search, one OS-SART and one CGLS iteration, same run */
  TlCtCentre c = {0};
  Best best_centre = BEST_INIT, best_sart = BEST_INIT, best_cgls = BEST_INIT;
  double best_slice = INFINITY;
  centre_run(&b, &c, &core); /* warm-up */
  for (int i = 0; i < repeat; i++) {
    double w = centre_run(&b, &c, &core);
    best_keep(&best_centre, w, core);
    /* one full-resolution slice with its own plan: the single-resolution search took 9 */
    double t = now();
    g_autofree float *slice = tl_ct_centre_slice(b.ctx, b.d, g->det_v / 2, c.centre, &error);
    CHECK(slice);
    best_slice = MIN(best_slice, now() - t);
    w = iteration_run(&b, TL_CT_SART, 10, 0, &core);
    best_keep(&best_sart, w, core);
    w = iteration_run(&b, TL_CT_CGLS, 1, 0, &core);
    best_keep(&best_cgls, w, core);
  }
  int fast0 = tl_ct_ramp_have_fft() ? 0 : 1;
  printf("  centre search (row %u): %.4f s (%.2f core-s), centre %.3f (%u slices, opposed views "
         "%.3f)\n", g->det_v / 2, best_centre.wall, best_centre.cpu, c.centre, c.evaluations,
         c.first_guess);
  printf("  one full slice (tl_ct_centre_slice, plan included): %.4f s\n", best_slice);
  printf("  OS-SART iteration (Joseph, 10 subsets): %.4f s (%.2f core-s)\n", best_sart.wall,
         best_sart.cpu);
  printf("  CGLS iteration (Joseph): %.4f s (%.2f core-s) = %.2f FBP runs in wall time, %.2f in "
         "core-s\n", best_cgls.wall, best_cgls.cpu, best_cgls.wall / best_run[fast0].wall,
         best_cgls.cpu / best_run[fast0].cpu);

  /* scikit-image on the same line integrals, same run */
  g_autofree char *dir = g_dir_make_tmp("tl-ct-tooth-XXXXXX", &error);
  CHECK(dir);
  g_autofree char *raw = g_build_filename(dir, "sino.f32", NULL);
  CHECK(g_file_set_contents(raw, (const char *)b.d->proj,
                            (gssize)((gsize)g->n_views * g->det_u * g->det_v * sizeof(float)),
                            &error));
  const char *src = g_getenv("TL_BENCH_SOURCE_DIR");
  g_autofree char *script = g_build_filename(src ? src : TL_BENCH_SOURCE_DIR,
                                             "ct-tooth-skimage.py", NULL);
  g_autofree char *sv = g_strdup_printf("%u", g->n_views), *sr = g_strdup_printf("%u", g->det_v),
                  *sc = g_strdup_printf("%u", g->det_u), *sn = g_strdup_printf("%d", repeat);
  /* Debian's python3 carries python3-skimage; a python3 first in PATH (pyenv) may not */
  const char *py = g_getenv("TL_BENCH_PYTHON");
  if (!py) py = g_file_test("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE) ? "/usr/bin/python3"
                                                                          : "python3";
  const char *args[] = {py, script, raw, sv, sr, sc, "180", sn, NULL};
  g_autofree char *so = NULL, *se = NULL;
  int status = 0;
  double sk = NAN, sk_sart = NAN, sk_cpu = NAN, sk_sart_cpu = NAN;
  char version[32] = "";
  if (!no_skimage && g_spawn_sync(NULL, (char **)args, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &so, &se, &status,
                   &error) && g_spawn_check_wait_status(status, NULL) && so &&
      sscanf(so, "skimage %lf %31s %lf %lf %lf", &sk, version, &sk_sart, &sk_cpu,
             &sk_sart_cpu) >= 2) {
    printf("  scikit-image %s iradon (ramp), %u slices: %.4f s (%.2f CPU s)\n", version,
           g->det_v, sk, sk_cpu);
    if (isfinite(sk_sart))
      printf("  scikit-image iradon_sart, one iteration of %u slices: %.4f s (%.2f CPU s); "
             "OS-SART %.2fx faster (%.2fx in core-s)\n", g->det_v, sk_sart, sk_sart_cpu,
             sk_sart / best_sart.wall, sk_sart_cpu / best_sart.cpu);
    int fast = tl_ct_ramp_have_fft() ? 0 : 1;
    printf("  speed-up over scikit-image: FBP run %.2fx (%.2fx in core-s), end to end %.2fx "
           "(ramp %s)\n", sk / best_run[fast].wall, sk_cpu / best_run[fast].cpu,
           sk / best_e2e[fast], names[fast]);
  } else {
    printf("  scikit-image: not run (%s)\n",
           no_skimage ? "--no-skimage" : error ? error->message : so && g_str_has_prefix(so, "skimage none") ? "not importable"
                                                                               : (se ? se : "?"));
    g_clear_error(&error);
  }
  if (tl_ct_ramp_have_fft() && isfinite(best_filter[1]))
    printf("  filter alone: FFT %.1fx the spatial convolution\n", best_filter[1] / best_filter[0]);
  g_unlink(raw);
  g_rmdir(dir);
  tl_array_free(filtered);
  tl_array_free(b.proj);
  tl_array_free(b.img);
  tl_ct_data_free(b.d);
  tl_context_free(b.ctx);
  return 0;
}
