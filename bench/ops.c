/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/ops: the "Array operations" reference case (/work/shared/reference-cases.md,
 * Petit 2020 Tables A.2 and B.1): the thesis' expressions and the fused reductions on
 * float arrays of edge^3 elements, in GB/s, against a plain C triad (OpenMP, all
 * cores) measured in the same run as the machine's attainable memory bandwidth.
 *
 *   meson compile -C build && ./build/bench/ops [--sizes 256,512] [--reps 10] [--copy]
 *
 * --copy also measures the device's own copy bandwidth: y copied into x by vkCmdCopyBuffer
 * (tl_stream_copy), 8 bytes per element (one read, one write), timed the same way; every row
 * then shows its GB/s divided by that copy's as well (/copy). On a GPU the host triad says
 * nothing about the card: the copy is the card's attainable bandwidth in the same run.
 *
 * Bytes per element count what an ideal fused kernel must move: each distinct
 * array read once, the target written once (y = a*x + y: 12 B). Times are wall
 * clock around one call with an internal stream (record, submit, wait), so they
 * include every fixed cost a caller pays. GB/s come from the best of --reps runs
 * after one warm-up call that compiles the pipeline (the median is printed too):
 * the machine is shared, and the best run is the one least disturbed by others. */
#include "tomolab-compute.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  const char *expr;
  guint bytes; /* per element */
  gboolean reduce;
} Case;

static const Case tl_cases[] = {
  { "y = a*x + y", 12, FALSE },
  { "x = x*y", 12, FALSE },
  { "x = x*y + y", 12, FALSE },
  { "x = x*y + y/z", 16, FALSE },
  { "x = x*y + y/z + x*z", 16, FALSE },
  { "l2norm(a*x + y)", 8, TRUE },
  { "dot(x, y)", 8, TRUE },
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
  qsort(t, n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* STREAM-style triad a = b + s*c: 12 bytes per element, all cores. */
static double triad_seconds(gsize n, int reps, double *best) {
  float *a = g_malloc(n * sizeof(float)), *b = g_malloc(n * sizeof(float)),
        *c = g_malloc(n * sizeof(float));
  const float s = 0.5f;
#pragma omp parallel for schedule(static)
  for (gsize i = 0; i < n; i++) a[i] = 0.0f, b[i] = 1.0f, c[i] = 2.0f; /* first touch */
  double *t = g_new(double, reps);
  for (int r = -1; r < reps; r++) {
    gint64 t0 = g_get_monotonic_time();
#pragma omp parallel for schedule(static)
    for (gsize i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    if (r >= 0) t[r] = (g_get_monotonic_time() - t0) / 1e6;
  }
  volatile float sink = a[n / 2]; /* keep the loop */
  (void)sink;
  double m = median(t, reps);
  qsort(t, reps, sizeof *t, cmp_double);
  *best = t[0];
  g_free(t), g_free(a), g_free(b), g_free(c);
  return m;
}

static void die(GError *error) {
  fprintf(stderr, "ops: %s\n", error->message);
  exit(1);
}

static char *cpu_model(void) {
  g_autofree char *info = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &info, NULL, NULL)) {
    const char *m = strstr(info, "model name");
    const char *colon = m ? strchr(m, ':') : NULL;
    if (colon) return g_strstrip(g_strndup(colon + 1, strcspn(colon + 1, "\n")));
  }
  return g_strdup("unknown CPU");
}

int main(int argc, char **argv) {
  g_autofree char *sizes_opt = NULL;
  int reps = 10;
  gboolean copy = FALSE;
  GOptionEntry entries[] = {
    { "sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_opt, "cube edges, comma separated (256,512)", "LIST" },
    { "reps", 0, 0, G_OPTION_ARG_INT, &reps, "timed runs per case (10)", "N" },
    { "copy", 0, 0, G_OPTION_ARG_NONE, &copy,
      "also time a device buffer copy (vkCmdCopyBuffer) and divide by it", NULL },
    { NULL },
  };
  g_autoptr(GOptionContext) oc = g_option_context_new("- fused array expressions vs a C triad");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) die(error);
  reps = CLAMP(reps, 1, 1000);
  g_auto(GStrv) edges = g_strsplit(sizes_opt ? sizes_opt : "256,512", ",", -1);

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) die(error);
  const TlDeviceInfo *info = tl_context_info(ctx);
  g_autofree char *cpu = cpu_model();
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  printf("device: %s (%s, %s)\n", info->name, tl_device_type_name(info->type), info->driver_info);
  printf("host:   %s, %u CPUs, C triad with %d OpenMP threads\n", cpu, g_get_num_processors(),
         threads);
  const char *ls = g_getenv("TOMOLAB_EXPR_LOCAL_SIZE"), *it = g_getenv("TOMOLAB_EXPR_ITEMS");
  const char *gr = g_getenv("TOMOLAB_EXPR_GROUPS");
  printf("tuning: TOMOLAB_EXPR_LOCAL_SIZE=%s TOMOLAB_EXPR_ITEMS=%s TOMOLAB_EXPR_GROUPS=%s\n",
         ls ? ls : "(default)", it ? it : "(default)", gr ? gr : "(default)");
  printf("%d runs after one warm-up; GB/s = bytes moved per element x n / best time\n\n", reps);

  for (int e = 0; edges[e]; e++) {
    guint64 edge = g_ascii_strtoull(edges[e], NULL, 10);
    if (edge == 0 || edge > 1024) {
      fprintf(stderr, "ops: bad size '%s'\n", edges[e]);
      return 2;
    }
    gsize n = edge * edge * edge;
    double triad_best, triad = triad_seconds(n, reps, &triad_best);
    double triad_gbs = 12.0 * n / triad_best / 1e9;

    g_autoptr(TlArray) x = tl_array_new_float(ctx, n, &error);
    g_autoptr(TlArray) y = x ? tl_array_new_float(ctx, n, &error) : NULL;
    g_autoptr(TlArray) z = y ? tl_array_new_float(ctx, n, &error) : NULL;
    if (!z) die(error);
    g_autoptr(TlExprArgs) args = tl_expr_args_new();
    tl_expr_args_array(args, "x", x);
    tl_expr_args_array(args, "y", y);
    tl_expr_args_array(args, "z", z);
    tl_expr_args_scalar(args, "a", 0.5f);
    /* x = 1.5, y = 1 (reset before every run) and z = 2 keep x finite and normal
     * (denormals would slow a CPU down and measure the wrong thing). */
    if (!tl_expr_assign(ctx, NULL, "z = 2", args, &error)) die(error);

    printf("n = %" G_GUINT64_FORMAT "^3 = %zu floats (%.0f MiB per array)\n", edge, n,
           n * 4.0 / (1 << 20));
    double *t = g_new(double, reps);
    double copy_gbs = 0, copy_best = 0, copy_med = 0;
    if (copy) {
      /* the device's copy: y -> x, one vkCmdCopyBuffer, wall time around record + wait */
      g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
      if (!st) die(error);
      for (int r = -1; r < reps; r++) {
        gint64 t0 = g_get_monotonic_time();
        if (!tl_stream_copy(st, y, 0, x, 0, n * sizeof(float), &error) ||
            !tl_stream_finish(st, &error))
          die(error);
        if (r >= 0) t[r] = (g_get_monotonic_time() - t0) / 1e6;
      }
      copy_med = median(t, reps), copy_best = t[0];
      copy_gbs = 8.0 * n / copy_best / 1e9;
      printf("  %-24s %5s %10s %10s %8s %8s %8s\n", "expression", "B/el", "best ms", "median ms",
             "GB/s", "/triad", "/copy");
      printf("  %-24s %5d %10.2f %10.2f %8.2f %8.2f %8.2f\n", "C triad a = b + s*c", 12,
             triad_best * 1e3, triad * 1e3, triad_gbs, 1.0, triad_gbs / copy_gbs);
      printf("  %-24s %5d %10.2f %10.2f %8.2f %8.2f %8.2f\n", "device copy x <- y", 8,
             copy_best * 1e3, copy_med * 1e3, copy_gbs, copy_gbs / triad_gbs, 1.0);
    } else {
      printf("  %-24s %5s %10s %10s %8s %8s\n", "expression", "B/el", "best ms", "median ms",
             "GB/s", "/triad");
      printf("  %-24s %5d %10.2f %10.2f %8.2f %8.2f\n", "C triad a = b + s*c", 12,
             triad_best * 1e3, triad * 1e3, triad_gbs, 1.0);
    }
    for (gsize k = 0; k < G_N_ELEMENTS(tl_cases); k++) {
      const Case *c = &tl_cases[k];
      double result = 0;
      for (int r = -1; r < reps; r++) {
        if (!tl_expr_assign(ctx, NULL, "x = 1.5", args, &error) ||
            !tl_expr_assign(ctx, NULL, "y = 1", args, &error))
          die(error);
        gint64 t0 = g_get_monotonic_time();
        gboolean ok = c->reduce ? tl_expr_reduce(ctx, NULL, c->expr, args, &result, &error)
                                : tl_expr_assign(ctx, NULL, c->expr, args, &error);
        if (!ok) die(error);
        if (r >= 0) t[r] = (g_get_monotonic_time() - t0) / 1e6;
      }
      double med = median(t, reps), best = t[0]; /* sorted by median() */
      double gbs = (double)c->bytes * n / best / 1e9;
      if (copy)
        printf("  %-24s %5u %10.2f %10.2f %8.2f %8.2f %8.2f\n", c->expr, c->bytes, best * 1e3,
               med * 1e3, gbs, gbs / triad_gbs, gbs / copy_gbs);
      else
        printf("  %-24s %5u %10.2f %10.2f %8.2f %8.2f\n", c->expr, c->bytes, best * 1e3,
               med * 1e3, gbs, gbs / triad_gbs);
      if (c->reduce) {
        /* sanity: x = 1.5, y = 1, a = 0.5 */
        double want = strstr(c->expr, "l2norm") ? 1.75 * sqrt((double)n) : 1.5 * n;
        if (fabs(result - want) > 1e-6 * want) {
          fprintf(stderr, "ops: %s = %.9g, expected %.9g\n", c->expr, result, want);
          return 1;
        }
      }
    }
    g_free(t);
    printf("\n");
  }
  guint compiles, hits;
  tl_expr_cache_stats(ctx, &compiles, &hits);
  printf("pipeline cache: %u compiles, %u hits\n", compiles, hits);
  return 0;
}
