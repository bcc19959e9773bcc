/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/ct: the CT-cone reference case (../shared/reference-cases.md; Petit 2020 and Siegl et al.
 * 2011),
 * CPU size: circular cone beam, 496 views over 360 deg, flat detector 624 x 480, source-
 * isocentre 750 mm, source-detector 1200 mm, 256^3 voxels covering the field of view,
 * 3-D Shepp-Logan.
 *
 *   bench/ct [--views 16] [--cgls-views 31] [--repeat 2] [--no-fdk] [--size 256]
 *            [--detector 624x480] [--gpu] [--gather-views N] [--cgls-back LIST] [--compare]
 *
 * --compare runs only the device against C + OpenMP comparisons (issue 31's done-when): the
 * voxel-driven back projection, Joseph's forward and default back projection, FDK (with its
 * kernel profile and the spatial ramp beside the FFT), one SIRT and one CGLS iteration.
 *
 * --gpu selects the GPU size of the reference case: 512^3 voxels and a 1248 x 960 detector
 * (--size and --detector still override). Other detectors keep the panel (400 x 307 mm): the
 * pitch is 0.64 mm x 624 / U across and 0.64 mm x 480 / V along the axis.
 *
 * Figures: seconds and GUPS (voxels x views / second) of back projection (the voxel-driven
 * one of Siegl et al. 2011 eq. 1) and, for Joseph, Siddon and ray casting, of the forward
 * projection and
 * of the forms of its adjoint (TlCtBack: gather, scatter with float atomics, scatter with CAS,
 * Joseph's tiled scatter, the fixed-point scatter with 64-bit and with 32-bit atomics) on the
 * Vulkan device, against a plain C + OpenMP voxel-driven back projector (the same
 * eq. 1, float, x innermost as RabbitCT's CPU codes) in the same run; seconds per CGLS
 * iteration of each projector with each back projection of --cgls-back (default "auto", the
 * device's own choice; --gpu: "auto,scatter-tiled"; e.g. "scatter,gather"); FDK image quality (RMSE, PSNR against the
 * phantom). Plain C + OpenMP references of the same work (bench/ct-cpu.c: Joseph's forward and
 * back projection, FDK on the --views, one SIRT and one CGLS iteration on the --cgls-views)
 * run in the same run, alternating with the device, and a summary prints device / C per item.
 * The gathers run on the first --gather-views of the --views (default all of them;
 * --gpu: 1, since on a GPU they cost 35-400x the forward) and are scaled like the rest.
 *
 * lavapipe on two cores cannot do all 496 views of every projector in reasonable time, so the
 * projectors run on --views evenly spread views and the 496-view seconds are scaled from them
 * (work is linear in the views); CGLS runs on --cgls-views and is scaled the same way. FDK
 * runs on all 496 views. Device and C runs alternate and the best of --repeat is kept (the
 * machine is shared); core-seconds (getrusage: lavapipe's and OpenMP's threads) are printed
 * beside wall time. The detector pitch (0.64 mm, a 400 x 307 mm panel) and the voxel size
 * (0.96 mm: the volume spans the field of view's 246 mm diameter) are this bench's choices;
 * the reference case leaves them open. */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-simulate.h"
#include "ct-cpu.h"
#include "tomolab-compute.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define N_VIEWS 496

static double now(void) { return g_get_monotonic_time() * 1e-6; }

static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static void die(GError *error) {
  fprintf(stderr, "bench/ct: %s\n", error->message);
  exit(1);
}
#define CHECK(x) \
  do {           \
    if (!(x)) die(error); \
  } while (0)

typedef struct {
  double wall, cpu;
} Time;

static void keep_best(Time *best, double wall, double cpu) {
  if (best->wall == 0 || wall < best->wall) best->wall = wall, best->cpu = cpu;
}

static void print_row(const char *what, const Time *t, double voxel_views, guint measured) {
  double scale = (double)N_VIEWS / measured;
  printf("%-34s %8.3f %8.3f %10.2f %9.3f %9.4f\n", what, t->wall, t->cpu, t->wall * scale,
         voxel_views / t->wall * 1e-9, voxel_views / t->cpu * 1e-9);
}

int main(int argc, char **argv) {
  int views = 16, cgls_views = 31, repeat = 2, size = 0, gather_views = 0;
  gboolean no_fdk = FALSE, gpu = FALSE, compare = FALSE;
  g_autofree char *detector = NULL, *cgls_back = NULL;
  GOptionEntry entries[] = {
      {"views", 0, 0, G_OPTION_ARG_INT, &views, "Views the projectors run on (default 16)", "N"},
      {"cgls-views", 0, 0, G_OPTION_ARG_INT, &cgls_views, "Views CGLS runs on (default 31)", "N"},
      {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat, "Best of N (default 2)", "N"},
      {"size", 0, 0, G_OPTION_ARG_INT, &size, "Volume edge (default 256; --gpu: 512)", "N"},
      {"detector", 0, 0, G_OPTION_ARG_STRING, &detector,
       "Detector pixels, same panel (default 624x480; --gpu: 1248x960)", "UxV"},
      {"gpu", 0, 0, G_OPTION_ARG_NONE, &gpu, "The reference case's GPU size (512^3, 1248x960)",
       NULL},
      {"no-fdk", 0, 0, G_OPTION_ARG_NONE, &no_fdk, "Skip the full 496-view FDK", NULL},
      {"compare", 0, 0, G_OPTION_ARG_NONE, &compare,
       "Only the device against C + OpenMP (Joseph's default back projection, voxel-driven "
       "back projection, FDK, SIRT, CGLS): no other forms, projectors or CGLS tables", NULL},
      {"gather-views", 0, 0, G_OPTION_ARG_INT, &gather_views,
       "Views the gather adjoints run on (default --views; --gpu: 1)", "N"},
      {"cgls-back", 0, 0, G_OPTION_ARG_STRING, &cgls_back,
       "Back projections CGLS runs with: auto, gather, scatter, scatter-cas, comma-separated "
       "(default auto; --gpu: auto,scatter-tiled)", "LIST"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- the CT-cone reference case");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) die(error);
  views = CLAMP(views, 1, N_VIEWS), cgls_views = CLAMP(cgls_views, 1, N_VIEWS);
  gather_views = CLAMP(gather_views > 0 ? gather_views : gpu ? 1 : views, 1, views);
  /* --gpu: Joseph's tiled scatter too (the others run their plain scatter for it: skipped) */
  g_auto(GStrv) cgls_backs =
      g_strsplit(cgls_back ? cgls_back : gpu ? "auto,scatter-tiled" : "auto", ",", -1);
  for (char **b = cgls_backs; *b; b++) {
    TlCtBack mode;
    if (!tl_ct_back_from_name(*b, &mode, &error)) {
      fprintf(stderr, "bench/ct: --cgls-back: %s\n", error->message);
      return 2;
    }
  }
  if (size == 0) size = gpu ? 512 : 256;
  repeat = MAX(repeat, 1), size = CLAMP(size, 8, 1024);
  guint det_u = gpu ? 1248 : 624, det_v = gpu ? 960 : 480;
  if (detector) {
    char *end = NULL;
    guint64 u = g_ascii_strtoull(detector, &end, 10), v = 0;
    if (end && (*end == 'x' || *end == 'X')) v = g_ascii_strtoull(end + 1, &end, 10);
    if (!end || *end || u < 8 || v < 8 || u > 8192 || v > 8192) {
      fprintf(stderr, "bench/ct: --detector '%s': expected UxV, 8 to 8192 pixels each\n",
              detector);
      return 2;
    }
    det_u = (guint)u, det_v = (guint)v;
  }
  gboolean cpu_detector = det_u == 624 && det_v == 480;
  const char *case_size = gpu && det_u == 1248 && det_v == 960 && size == 512 ? "GPU size"
                          : cpu_detector                                     ? "CPU size"
                                                                             : "custom size";

  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  CHECK(ctx);
  TlCtOrbit o;
  /* 624.0 / det_u first: exactly 1 (the default pitch unchanged) or 0.5 (--gpu) */
  tl_ct_orbit_init_cone(&o, N_VIEWS, 750, 1200, det_u, det_v, 0.64 * (624.0 / det_u),
                        0.64 * (480.0 / det_v));
  g_autoptr(TlCtGeometry) g = tl_ct_geometry_new_orbit(&o, &error);
  CHECK(g);
  float vox = 0.96f * 256 / size;
  TlImageGrid grid = tl_image_grid_centred(size, size, size, vox, vox, vox);
  guint64 nvox = tl_image_grid_n_voxels(&grid), npix = (guint64)o.det_u * o.det_v;
  double load[3] = {0};
  getloadavg(load, 3);
  printf("CT-cone (%s): %u views, detector %u x %u of %.2f mm, sid %.0f, sdd %.0f mm, %u^3 "
         "voxels of %.3f mm\ndevice: %s; C + OpenMP: %d threads; load average %.2f\n",
         case_size, N_VIEWS, o.det_u, o.det_v, o.pixel_u_mm, o.sid_mm, o.sdd_mm, size, vox,
         tl_context_info(ctx)->name,
#ifdef _OPENMP
         omp_get_max_threads(),
#else
         1,
#endif
         load[0]);

  gint64 t0 = g_get_monotonic_time();
  g_autoptr(TlCtPhantom) ph = tl_ct_phantom_new_preset("shepp-logan", &error);
  g_autoptr(TlImage) truth = tl_ct_phantom_rasterise(ph, &grid, 1, 0.02, &error);
  CHECK(truth);
  /* a subset of views spread over the orbit, and their (exact) projections */
  g_autoptr(TlCtGeometry) gm = tl_ct_geometry_subset(g, 0, N_VIEWS / views, views, &error);
  CHECK(gm);
  TlCtSimOptions so;
  tl_ct_sim_options_init(&so);
  g_autoptr(TlCtData) dm = tl_ct_simulate_phantom(ctx, gm, ph, &grid, 0.02, &so, &error);
  CHECK(dm);
  printf("phantom and %d views of exact projections: %.1f s\n\n", views,
         (g_get_monotonic_time() - t0) * 1e-6);

  g_autoptr(TlArray) x = tl_array_new_float(ctx, nvox, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, npix * views, &error);
  CHECK(x && y && tl_array_upload(x, truth->data, &error) && tl_array_upload(y, dm->proj, &error));
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  CHECK(s);
  TlCtViews all = tl_ct_views_all(gm);
  double vv = (double)nvox * views;
  printf("%-34s %8s %8s %10s %9s %9s\n", "", "wall s", "core s", "s (496 v)", "GUPS",
         "GUPS/core");

  /* voxel-driven back projection: device vs C, alternating, after a warm-up */
  g_autofree float *cpu_out = g_new(float, nvox), *dev_out = g_new(float, nvox);
  Time t_dev = {0}, t_cpu = {0};
  g_autoptr(TlCtProjector) pv = tl_ct_projector_new(ctx, gm, &grid, TL_CT_VOXEL, &error);
  CHECK(pv);
  CtCpu cv;
  CHECK(ct_cpu_init(&cv, pv, &error));
  CHECK(tl_ct_projector_back(pv, s, &all, y, x, FALSE, &error) && tl_stream_finish(s, &error));
  for (int r = 0; r < repeat; r++) {
    double w0 = now(), c0 = cpu_now();
    CHECK(tl_ct_projector_back(pv, s, &all, y, x, FALSE, &error) && tl_stream_finish(s, &error));
    keep_best(&t_dev, now() - w0, cpu_now() - c0);
    w0 = now(), c0 = cpu_now();
    ct_cpu_bp(&cv, dm->proj, cpu_out);
    keep_best(&t_cpu, now() - w0, cpu_now() - c0);
  }
  ct_cpu_clear(&cv);
  /* ct_bp_voxel's two builds: four loads a bilinear sample, or two 64-bit ones
   * ($TOMOLAB_CT_BP_LOADS, where the device has shaderInt64) */
  Time t_loads[2] = {{0}};
  static const char *const loads[2] = {"4", "2"};
  for (int l = 0; l < (tl_context_info(ctx)->shader_int64 ? 2 : 0); l++) {
    g_setenv("TOMOLAB_CT_BP_LOADS", loads[l], TRUE);
    g_autoptr(TlCtProjector) pl = tl_ct_projector_new(ctx, gm, &grid, TL_CT_VOXEL, &error);
    g_unsetenv("TOMOLAB_CT_BP_LOADS");
    CHECK(pl);
    for (int r = 0; r < repeat + 1; r++) { /* the first: warm-up */
      double w0 = now(), c0 = cpu_now();
      CHECK(tl_ct_projector_back(pl, s, &all, y, x, FALSE, &error) && tl_stream_finish(s, &error));
      if (r > 0) keep_best(&t_loads[l], now() - w0, cpu_now() - c0);
    }
    char what[64];
    g_snprintf(what, sizeof what, "back voxel-driven, %s loads/sample", loads[l]);
    print_row(what, &t_loads[l], vv, views);
  }
  CHECK(tl_ct_projector_back(pv, s, &all, y, x, FALSE, &error) && tl_stream_finish(s, &error));
  CHECK(tl_array_download(x, dev_out, &error));
  double maxd = 0, maxr = 0;
  for (guint64 i = 0; i < nvox; i++) {
    maxd = MAX(maxd, fabs(dev_out[i] - cpu_out[i]));
    maxr = MAX(maxr, fabs(cpu_out[i]));
  }
  print_row("back voxel-driven (device)", &t_dev, vv, views);
  print_row("back voxel-driven (C+OpenMP)", &t_cpu, vv, views);

  /* ray-driven forward projections and the three forms of their adjoints, same data */
  static const TlCtMethod methods[] = {TL_CT_JOSEPH, TL_CT_SIDDON, TL_CT_RAYCAST};
  static const TlCtBack backs[] = {TL_CT_BACK_GATHER,        TL_CT_BACK_SCATTER,
                                   TL_CT_BACK_SCATTER_CAS,    TL_CT_BACK_SCATTER_TILED,
                                   TL_CT_BACK_SCATTER_FIXED,  TL_CT_BACK_SCATTER_FIXED32};
  gboolean has_fa = tl_context_info(ctx)->float32_atomic_add;
  gboolean has_i64 = tl_context_info(ctx)->buffer_int64_atomics;
  char ratios[G_N_ELEMENTS(methods)][512];
  /* the plain C + OpenMP references of the same work (Joseph): device / C speed-ups */
  Time c_fwd = {0}, c_back = {0}, d_fwd = {0}, d_back = {0};
  double fwd_diff = 0, back_diff = 0;
  for (gsize m = 0; m < G_N_ELEMENTS(methods); m++) {
    ratios[m][0] = 0;
    if (compare && methods[m] != TL_CT_JOSEPH) continue;
    g_autoptr(TlCtProjector) p = tl_ct_projector_new(ctx, gm, &grid, methods[m], &error);
    CHECK(p);
    TlCtBack chosen = tl_ct_projector_back_mode(p);
    CHECK(tl_array_upload(x, truth->data, &error));
    Time tf = {0};
    for (int r = 0; r < repeat; r++) {
      double w0 = now(), c0 = cpu_now();
      CHECK(tl_ct_projector_forward(p, s, &all, x, y, FALSE, &error) &&
            tl_stream_finish(s, &error));
      keep_best(&tf, now() - w0, cpu_now() - c0);
    }
    char what[64];
    g_snprintf(what, sizeof what, "forward %s", tl_ct_method_name(methods[m]));
    print_row(what, &tf, vv, views);
    if (methods[m] == TL_CT_JOSEPH) {
      /* C forward and back on the same data; device back: its default (chosen) form */
      CtCpu cc;
      CHECK(ct_cpu_init(&cc, p, &error));
      g_autofree float *cy = g_new(float, npix * views), *dy = g_new(float, npix * views);
      g_autofree float *cx = g_new(float, nvox);
      CHECK(tl_array_download(y, dy, &error));
      for (int r = 0; r < repeat; r++) {
        double w0 = now(), c0 = cpu_now();
        ct_cpu_forward(&cc, truth->data, cy);
        keep_best(&c_fwd, now() - w0, cpu_now() - c0);
      }
      double ymax = 0;
      for (guint64 i = 0; i < npix * views; i++) {
        fwd_diff = MAX(fwd_diff, fabs((double)cy[i] - dy[i]));
        ymax = MAX(ymax, fabs((double)cy[i]));
      }
      fwd_diff /= MAX(ymax, 1e-30);
      d_fwd = tf;
      print_row("forward joseph (C+OpenMP)", &c_fwd, vv, views);
      for (int r = 0; r < repeat; r++) {
        double w0 = now(), c0 = cpu_now();
        CHECK(tl_ct_projector_back(p, s, &all, y, x, FALSE, &error) &&
              tl_stream_finish(s, &error));
        keep_best(&d_back, now() - w0, cpu_now() - c0);
        w0 = now(), c0 = cpu_now();
        ct_cpu_back(&cc, dy, cx);
        keep_best(&c_back, now() - w0, cpu_now() - c0);
      }
      CHECK(tl_array_download(x, dev_out, &error));
      double xmax = 0;
      for (guint64 i = 0; i < nvox; i++) {
        back_diff = MAX(back_diff, fabs((double)cx[i] - dev_out[i]));
        xmax = MAX(xmax, fabs((double)cx[i]));
      }
      back_diff /= MAX(xmax, 1e-30);
      g_snprintf(what, sizeof what, "back joseph %s *", tl_ct_back_name(chosen));
      print_row(what, &d_back, vv, views);
      print_row("back joseph (C+OpenMP)", &c_back, vv, views);
      ct_cpu_clear(&cc);
      CHECK(tl_array_upload(x, truth->data, &error));
    }
    int n = g_snprintf(ratios[m], sizeof ratios[m], "%-8s back / forward:",
                       tl_ct_method_name(methods[m]));
    for (gsize b = 0; b < (compare ? 0 : G_N_ELEMENTS(backs)); b++) {
      if (backs[b] == TL_CT_BACK_SCATTER && !has_fa) continue; /* it would run the CAS kernel */
      if (backs[b] == TL_CT_BACK_SCATTER_TILED && (!has_fa || methods[m] != TL_CT_JOSEPH))
        continue; /* Joseph's only */
      if (backs[b] == TL_CT_BACK_SCATTER_FIXED && !has_i64) continue; /* it would run FIXED32 */
      CHECK(tl_ct_projector_set_back(p, backs[b], &error));
      gboolean gather = backs[b] == TL_CT_BACK_GATHER;
      TlCtViews sel = {.first = 0, .stride = 1, .count = gather ? (guint)gather_views : all.count};
      /* the gathers are the slowest: one pass unless they are cheap (CPU size, few views) */
      int reps = gather && (methods[m] == TL_CT_RAYCAST || gpu) ? 1 : repeat;
      Time tb = {0};
      for (int r = 0; r < reps; r++) {
        double w0 = now(), c0 = cpu_now();
        CHECK(tl_ct_projector_back(p, s, &sel, y, x, FALSE, &error) &&
              tl_stream_finish(s, &error));
        keep_best(&tb, now() - w0, cpu_now() - c0);
      }
      g_snprintf(what, sizeof what, "back %s %s%s", tl_ct_method_name(methods[m]),
                 tl_ct_back_name(backs[b]), backs[b] == chosen ? " *" : "");
      if (sel.count != all.count)
        g_snprintf(what + strlen(what), sizeof what - strlen(what), " (%u v)", sel.count);
      print_row(what, &tb, (double)nvox * sel.count, sel.count);
      double per_view = tb.wall / sel.count, fwd_per_view = tf.wall / views;
      n += g_snprintf(ratios[m] + n, sizeof ratios[m] - n, " %s %.2fx", tl_ct_back_name(backs[b]),
                      per_view / fwd_per_view);
    }
    if (gpu && has_fa) {
      /* the float-atomic scatter with the views fastest (TOMOLAB_CT_SCATTER_ORDER): whether
       * atomic contention between neighbouring rays matters on this device */
      g_setenv("TOMOLAB_CT_SCATTER_ORDER", "views", TRUE);
      CHECK(tl_ct_projector_set_back(p, TL_CT_BACK_GATHER, &error) &&
            tl_ct_projector_set_back(p, TL_CT_BACK_SCATTER, &error));
      g_unsetenv("TOMOLAB_CT_SCATTER_ORDER");
      Time tb = {0};
      for (int r = 0; r < repeat; r++) {
        double w0 = now(), c0 = cpu_now();
        CHECK(tl_ct_projector_back(p, s, &all, y, x, FALSE, &error) &&
              tl_stream_finish(s, &error));
        keep_best(&tb, now() - w0, cpu_now() - c0);
      }
      g_snprintf(what, sizeof what, "back %s scatter views-fast", tl_ct_method_name(methods[m]));
      print_row(what, &tb, vv, views);
      n += g_snprintf(ratios[m] + n, sizeof ratios[m] - n, " scatter-views-fast %.2fx",
                      tb.wall / tf.wall);
    }
  }
  printf("(* = the back projection this device gets by default)\n");
  for (gsize m = 0; m < G_N_ELEMENTS(methods); m++)
    if (ratios[m][0]) printf("%s\n", ratios[m]);
  printf("device vs C voxel-driven back projection: max |difference| %.2e of max %.3g; "
         "device/C speed %.2fx (wall), %.2fx (core-seconds)\n\n", maxd, maxr,
         t_cpu.wall / t_dev.wall, t_cpu.cpu / t_dev.cpu);

  /* FDK of the same --views (a scan of that many views), device against C, alternating */
  Time d_fdk = {0}, c_fdk = {0};
  double fdk_diff = 0;
  {
    g_autoptr(TlCtFdk) f = tl_ct_fdk_new(ctx, gm, &grid, TL_CT_FILTER_RAM_LAK, 0, &error);
    g_autoptr(TlCtProjector) pj = tl_ct_projector_new(ctx, gm, &grid, TL_CT_JOSEPH, &error);
    CHECK(f && pj && tl_array_upload(y, dm->proj, &error));
    CtCpu cc;
    CHECK(ct_cpu_init(&cc, pj, &error));
    /* the device's kernels of these runs, summed: where FDK's time goes */
    CHECK(tl_ct_fdk_run(f, s, y, x, &error) && tl_stream_finish(s, &error)); /* warm-up */
    g_autoptr(TlProfile) fprof = tl_profile_new();
    tl_stream_set_profile(s, fprof);
    for (int r = 0; r < repeat; r++) {
      double w0 = now(), c0 = cpu_now();
      CHECK(tl_ct_fdk_run(f, s, y, x, &error) && tl_stream_finish(s, &error));
      keep_best(&d_fdk, now() - w0, cpu_now() - c0);
      w0 = now(), c0 = cpu_now();
      ct_cpu_fdk(&cc, dm->proj, cpu_out);
      keep_best(&c_fdk, now() - w0, cpu_now() - c0);
    }
    CHECK(tl_array_download(x, dev_out, &error));
    double fmax = 0;
    for (guint64 i = 0; i < nvox; i++) {
      fdk_diff = MAX(fdk_diff, fabs((double)dev_out[i] - cpu_out[i]));
      fmax = MAX(fmax, fabs((double)cpu_out[i]));
    }
    fdk_diff /= MAX(fmax, 1e-30);
    char what[64];
    g_snprintf(what, sizeof what, "FDK %d views (device)", views);
    print_row(what, &d_fdk, vv, views);
    g_snprintf(what, sizeof what, "FDK %d views (C+OpenMP)", views);
    print_row(what, &c_fdk, vv, views);
    tl_stream_set_profile(s, NULL);
    g_autofree char *ftable = tl_profile_format(fprof);
    printf("FDK on the device, %d runs:\n%s\n", repeat, ftable);
    /* the same FDK with the ramp as the exact spatial convolution (TL_CT_RAMP_SPATIAL), after
     * a warm-up: which ramp filter suits this device at this row length */
    g_autoptr(TlCtFdk) fs =
        tl_ct_fdk_new_full(ctx, gm, &grid, TL_CT_FILTER_RAM_LAK, TL_CT_RAMP_SPATIAL, 0, &error);
    CHECK(fs && tl_ct_fdk_run(fs, s, y, x, &error) && tl_stream_finish(s, &error));
    Time d_fdk_sp = {0};
    for (int r = 0; r < repeat; r++) {
      double w0 = now(), c0 = cpu_now();
      CHECK(tl_ct_fdk_run(fs, s, y, x, &error) && tl_stream_finish(s, &error));
      keep_best(&d_fdk_sp, now() - w0, cpu_now() - c0);
    }
    g_snprintf(what, sizeof what, "FDK %d views, spatial ramp", views);
    print_row(what, &d_fdk_sp, vv, views);
    ct_cpu_clear(&cc);
  }
  g_clear_pointer(&y, tl_array_free);

  /* CGLS: seconds per iteration (one forward + one back projection + fused vector work), for
   * each projector with each back projection asked for */
  {
    g_autoptr(TlCtGeometry) gc = tl_ct_geometry_subset(g, 0, N_VIEWS / cgls_views, cgls_views,
                                                       &error);
    CHECK(gc);
    g_autoptr(TlCtData) dc = tl_ct_simulate_phantom(ctx, gc, ph, &grid, 0.02, &so, &error);
    CHECK(dc);
    g_autoptr(TlArray) yc = tl_ct_data_upload(ctx, dc, &error);
    CHECK(yc);
    for (gsize m = 0; m < (compare ? 0 : G_N_ELEMENTS(methods)); m++) {
      guint done = 0; /* resolved back projections already timed, as bits */
      for (char **b = cgls_backs; *b; b++) {
        TlCtBack mode;
        CHECK(tl_ct_back_from_name(*b, &mode, &error));
        TlCtReconOptions ro;
        tl_ct_recon_options_init(&ro);
        ro.algo = TL_CT_CGLS;
        ro.projector = methods[m];
        ro.objective = TL_CT_OBJECTIVE_SUBITERATION;
        double w0 = now();
        g_autoptr(TlCtRecon) r = tl_ct_recon_new(ctx, gc, &grid, yc, &ro, &error);
        CHECK(r);
        double setup = now() - w0;
        TlCtProjector *p = tl_ct_recon_projector(r);
        CHECK(tl_ct_projector_set_back(p, mode, &error));
        if (done & (1u << tl_ct_projector_back_mode(p))) continue;
        done |= 1u << tl_ct_projector_back_mode(p);
        Time t = {0};
        for (int i = 0; i < MAX(repeat, 2); i++) {
          double a = now(), c = cpu_now();
          CHECK(tl_ct_recon_step(r, &error));
          keep_best(&t, now() - a, cpu_now() - c);
        }
        g_autofree char *table = tl_profile_format(tl_ct_recon_profile(r));
        printf("CGLS (%s, back %s) on %d views: set-up %.2f s; best iteration %.3f s wall, "
               "%.2f core-s; scaled to 496 views: %.2f s per iteration\n%s\n",
               tl_ct_method_name(methods[m]), tl_ct_back_name(tl_ct_projector_back_mode(p)),
               cgls_views, setup, t.wall, t.cpu, t.wall * N_VIEWS / cgls_views, table);
      }
    }
    /* one SIRT and one CGLS iteration (Joseph, the default back projection, no objective)
     * against the C references of the same algebra, alternating; best of --repeat */
    Time d_it[2] = {{0}}, c_it[2] = {{0}};
    static const TlCtAlgo algos[2] = {TL_CT_SIRT, TL_CT_CGLS};
    TlCtBack it_back = TL_CT_BACK_AUTO;
    for (int a = 0; a < 2; a++) {
      TlCtReconOptions ro;
      tl_ct_recon_options_init(&ro);
      ro.algo = algos[a];
      ro.projector = TL_CT_JOSEPH;
      ro.nonnegative = algos[a] == TL_CT_SIRT;
      ro.objective = TL_CT_OBJECTIVE_NEVER;
      g_autoptr(TlCtRecon) r = tl_ct_recon_new(ctx, gc, &grid, yc, &ro, &error);
      CHECK(r);
      it_back = tl_ct_projector_back_mode(tl_ct_recon_projector(r));
      CtCpu cc;
      CHECK(ct_cpu_init(&cc, tl_ct_recon_projector(r), &error));
      guint64 nd = (guint64)cgls_views * npix;
      g_autofree float *rinv = NULL, *cinv = NULL, *cx = NULL, *q = NULL, *v = NULL;
      CtCpuCgls st = {0};
      if (algos[a] == TL_CT_SIRT) {
        rinv = g_new(float, nd), cinv = g_new(float, nvox), q = g_new(float, nd);
        cx = g_new0(float, nvox), v = g_new(float, nvox);
        ct_cpu_sirt_sums(&cc, rinv, cinv);
      } else {
        ct_cpu_cgls_start(&cc, dc->proj, &st);
      }
      CHECK(tl_ct_recon_step(r, &error)); /* the solver's set-up happens in its first step */
      for (int i = 0; i < repeat; i++) {
        double w0 = now(), c0 = cpu_now();
        CHECK(tl_ct_recon_step(r, &error));
        keep_best(&d_it[a], now() - w0, cpu_now() - c0);
        w0 = now(), c0 = cpu_now();
        if (algos[a] == TL_CT_SIRT)
          ct_cpu_sirt_step(&cc, dc->proj, rinv, cinv, cx, q, v);
        else
          ct_cpu_cgls_step(&cc, &st);
        keep_best(&c_it[a], now() - w0, cpu_now() - c0);
      }
      ct_cpu_cgls_clear(&st);
      ct_cpu_clear(&cc);
      char what[64];
      g_snprintf(what, sizeof what, "%s iteration (device)", tl_ct_algo_name(algos[a]));
      print_row(what, &d_it[a], (double)nvox * cgls_views, cgls_views);
      g_snprintf(what, sizeof what, "%s iteration (C+OpenMP)", tl_ct_algo_name(algos[a]));
      print_row(what, &c_it[a], (double)nvox * cgls_views, cgls_views);
    }
    double fwd_per_view = d_fwd.wall / views;
    printf("\nJoseph, device against plain C + OpenMP of the same work, best of %d (device/C "
           "speed, >= 1 means the device is faster):\n"
           "  forward %.2fx (images within %.1e of the largest)\n"
           "  back (%s) %.2fx (within %.1e; %.2fx the device's forward)\n"
           "  FDK, %d views %.2fx (within %.1e)\n"
           "  SIRT iteration, %d views %.2fx\n"
           "  CGLS iteration, %d views %.2fx; %.2fx its forward projection (%s)\n\n",
           repeat, c_fwd.wall / d_fwd.wall, fwd_diff, tl_ct_back_name(it_back),
           c_back.wall / d_back.wall, back_diff, d_back.wall / d_fwd.wall, views, c_fdk.wall / d_fdk.wall, fdk_diff,
           cgls_views, c_it[0].wall / d_it[0].wall, cgls_views, c_it[1].wall / d_it[1].wall,
           d_it[1].wall / (fwd_per_view * cgls_views), tl_ct_back_name(it_back));
  }

  if (!no_fdk) {
    /* FDK quality on every view: exact projections of the phantom, Ram-Lak */
    double w0 = now();
    g_autoptr(TlCtData) d = tl_ct_simulate_phantom(ctx, g, ph, &grid, 0.02, &so, &error);
    CHECK(d);
    double sim = now() - w0;
    g_autoptr(TlArray) yf = tl_ct_data_upload(ctx, d, &error);
    g_autoptr(TlCtFdk) f = tl_ct_fdk_new(ctx, g, &grid, TL_CT_FILTER_RAM_LAK, 0, &error);
    CHECK(yf && f);
    g_autoptr(TlProfile) prof = tl_profile_new();
    tl_stream_set_profile(s, prof);
    w0 = now();
    double c0 = cpu_now();
    CHECK(tl_ct_fdk_run(f, s, yf, x, &error) && tl_stream_finish(s, &error));
    double wall = now() - w0, core = cpu_now() - c0;
    CHECK(tl_array_download(x, dev_out, &error));
    /* RMSE over the phantom's support box and the whole volume; PSNR against the range */
    double se = 0, vmax = 0;
    for (guint64 i = 0; i < nvox; i++) {
      double e = dev_out[i] - truth->data[i];
      se += e * e;
      vmax = MAX(vmax, truth->data[i]);
    }
    double rmse = sqrt(se / nvox);
    g_autofree char *table = tl_profile_format(prof);
    printf("FDK, 496 views (projections simulated in %.1f s): %.1f s wall, %.1f core-s; "
           "RMSE %.3e mm^-1 (%.2f %% of the phantom's maximum %.3g), PSNR %.2f dB\n%s",
           sim, wall, core, rmse, 100 * rmse / vmax, vmax, 20 * log10(vmax / rmse), table);
  }
  return 0;
}
