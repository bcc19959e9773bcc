/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The CPU plane path of Joseph's EM sub-iteration (compute/pet/tl-projector-planes.c): its
 * correction image c_n = sum_j a_jn m_j / (A x)_j against a double-precision C reference
 * (pet-ref.c) and against the fused kernel, over several chunks of LORs of every direction
 * (z-dominant ones included) on a grid whose sides are not multiples of a slab; with TOF
 * events and attenuation factors; its log-likelihood partials; the same bits on a second run;
 * a clear refusal where it cannot run; and the order TlRecon gives events on CPU devices
 * (tl_events_order_by_line). Event counts at and one off multiples of the path's chunks, on
 * the examples' 768-crystal ring and the small ring, TOF and not: every event counted (the
 * image total is exact), each voxel as close to the reference as the fused kernel's. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "pet/project/tl-projector.h"

static TlContext *ctx;

typedef struct {
  float p0[3], p1[3];
} Lor;

/* 37 x 23 x 9 voxels of 2 x 2.5 x 3 mm: more x planes than y planes, none a multiple of the
 * 16-plane slabs. */
static TlImageGrid grid_odd(void) { return fx_grid(37, 23, 9, 2.0f, 2.5f, 3.0f); }

/* n LORs of 120 mm through random points within 12 mm of the image's centre (none grazes the
 * image, where 1 / (A x)_j would magnify a float rounding), in random directions; every fourth
 * one steep in z (dominant axis z), every tenth along an axis. */
static Lor *random_lors(guint n, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  Lor *l = g_new(Lor, n);
  for (guint i = 0; i < n; i++) {
    double c[3], u[3];
    fx_random_unit(r, c);
    fx_random_unit(r, u);
    double rc = 12 * g_rand_double(r);
    if (i % 4 == 1) {
      u[2] = 2.5;
      double nn = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
      for (int k = 0; k < 3; k++) u[k] /= nn;
    }
    if (i % 10 == 3) {
      for (int k = 0; k < 3; k++) u[k] = 0;
      u[i / 10 % 3] = 1;
    }
    for (int k = 0; k < 3; k++) {
      l[i].p0[k] = (float)(rc * c[k] - 60 * u[k]);
      l[i].p1[k] = (float)(rc * c[k] + 60 * u[k]);
    }
  }
  return l;
}

/* The correction image of `method`, and the log-likelihood of its partials. */
static float *em_with(TlProjector *p, TlEmMethod method, const TlLors *l, const TlArray *img,
                      double *loglik) {
  GError *error = NULL;
  tl_projector_set_em_method(p, method);
  g_autoptr(TlArray) out = tl_array_new_float(ctx, fx_voxels(tl_projector_grid(p)), &error);
  guint64 np = tl_projector_loglik_partials(p, l);
  g_autoptr(TlArray) part = tl_array_new_host(ctx, np, sizeof(float), TRUE, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_zero(out, &error));
  gboolean ok = tl_projector_em_loglik(p, s, l, img, out, part, &error);
  if (!ok && method == TL_EM_PLANES) {
    /* a CPU path (docs/pet.md): a GPU's subgroups of 32 do not fit its records. Where the
     * device lacks what it needs the refusal must say so; the comparisons cannot run. */
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_assert_true(strstr(error->message, "subgroup") || strstr(error->message, "lacks"));
    g_assert_true(tl_context_info(ctx)->type != VK_PHYSICAL_DEVICE_TYPE_CPU);
    g_test_skip(error->message);
    g_clear_error(&error);
    return NULL;
  }
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  const float *pf = tl_array_map(part);
  *loglik = 0;
  for (guint64 i = 0; i < np; i++) *loglik += pf[i];
  return fx_download(out);
}

static double max_diff(const float *a, const double *b, guint64 n) {
  double d = 0;
  for (guint64 i = 0; i < n; i++) d = MAX(d, fabs(a[i] - b[i]));
  return d;
}

static double max_diff_f(const float *a, const float *b, guint64 n) {
  double d = 0;
  for (guint64 i = 0; i < n; i++) d = MAX(d, fabs((double)a[i] - b[i]));
  return d;
}

/* Plane path against the reference and the fused kernel; c is the reference correction,
 * rll its log-likelihood. */
static void check(TlProjector *p, const TlLors *l, const TlArray *dx, const double *c,
                  double rll, const char *what) {
  guint64 nv = fx_voxels(tl_projector_grid(p));
  double ll_planes, ll_again, ll_fused;
  g_autofree float *planes = em_with(p, TL_EM_PLANES, l, dx, &ll_planes);
  if (!planes) return; /* not on this device (em_with says why) */
  g_autofree float *again = em_with(p, TL_EM_PLANES, l, dx, &ll_again);
  g_autofree float *fused = em_with(p, TL_EM_FUSED, l, dx, &ll_fused);
  double m = fx_max_abs(c, nv), e_ref = max_diff(planes, c, nv);
  double e_fused = max_diff_f(planes, fused, nv);
  g_test_message("%s: plane path vs double reference %.3g of %.3g, vs fused kernel %.3g; "
                 "log-likelihood %.9g (reference %.9g, fused %.9g)",
                 what, e_ref, m, e_fused, ll_planes, rll, ll_fused);
  g_assert_cmpfloat(m, >, 0);
  g_assert_cmpfloat(e_ref, <=, 1e-5 * m);
  g_assert_cmpfloat(e_fused, <=, 1e-5 * m);
  /* one writer per voxel, records in order: the sums do not depend on the thread schedule */
  g_assert_cmpmem(planes, nv * sizeof(float), again, nv * sizeof(float));
  g_assert_cmpfloat(ll_planes, ==, ll_again);
  g_assert_cmpfloat(fabs(ll_planes - rll), <=, 1e-5 * fabs(rll));
  g_assert_cmpfloat(fabs(ll_planes - ll_fused), <=, 1e-5 * fabs(rll));
}

/* 150 000 end-point LORs (three chunks), a positive image with a few zero voxels. */
static void test_end_points(void) {
  GError *error = NULL;
  TlImageGrid g = grid_odd();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  guint n = 150000;
  g_autofree Lor *lors = random_lors(n, 1);
  g_autofree float *x = fx_random_floats(nv, 2, 0.1, 1.0);
  for (guint64 i = 0; i < nv; i += 7) x[i] = 0;
  g_autoptr(TlArray) rec = fx_upload(ctx, lors, n, sizeof(Lor));
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  TlLors l = {.kind = TL_LORS_END_POINTS, .records = rec, .first = 7, .count = n - 7};
  g_autofree double *c = g_new0(double, nv);
  double rll = 0;
  guint axes[3] = {0};
  for (guint i = l.first; i < n; i++) {
    double p0[3], p1[3], d[3];
    for (int k = 0; k < 3; k++) {
      p0[k] = lors[i].p0[k];
      p1[k] = lors[i].p1[k];
      d[k] = fabs(p1[k] - p0[k]) / g.voxel_mm[k];
    }
    double f = tl_ref_forward(TL_REF_JOSEPH, &g, p0, p1, x);
    if (!(f > 0)) { /* the log-likelihood floors ybar at 1e-30, as the solver's objective */
      rll += log(1e-30);
      continue;
    }
    axes[d[0] >= d[1] && d[0] >= d[2] ? 0 : d[1] >= d[2] ? 1 : 2]++;
    rll += log(f);
    tl_ref_back(TL_REF_JOSEPH, &g, p0, p1, 1.0 / f, c);
  }
  g_test_message("LORs through the image by dominant axis: x %u, y %u, z %u", axes[0], axes[1],
                 axes[2]);
  for (int k = 0; k < 3; k++) g_assert_cmpuint(axes[k], >, 1000);
  check(p, &l, dx, c, rll, "end points");
}

/* TOF list-mode events on a ring scanner, with attenuation factors a_j: the forward model is
 * a_j (A x)_j and the back projection carries a_j too, so c_n = sum_j a_jn / (A x)_j. */
static void test_tof_events(void) {
  GError *error = NULL;
  /* 80 x 80 mm: every LOR of the ring lies inside the image (none grazes it); 40 x planes,
   * two TOF slabs of 32 */
  TlImageGrid g = fx_grid(40, 40, 12, 2.0f, 2.0f, 2.5f);
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  sc->tof_bins = 25;
  sc->tof_bin_mm = 8.0f;
  sc->tof_fwhm_ps = (float)(8.0 * 2 * sqrt(2 * G_LN2) * 2 / 0.299792458); /* sigma 8 mm */
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", &g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(&g);
  guint n = 80000;
  g_autoptr(GRand) r = g_rand_new_with_seed(3);
  g_autofree TlEvent *ev = g_new0(TlEvent, n);
  for (guint i = 0; i < n; i++) {
    ev[i].a = g_rand_int_range(r, 0, sc->n_crystals);
    ev[i].b = g_rand_int_range(r, 0, sc->n_crystals);
    ev[i].tof_bin = g_rand_int_range(r, -5, 6);
  }
  g_autofree float *x = fx_random_floats(nv, 4, 0.1, 1.0);
  g_autofree float *att = fx_random_floats(n, 5, 0.2, 1.0);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, n, sizeof(TlEvent));
  g_autoptr(TlArray) da = fx_upload(ctx, att, n, 4);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  TlLors l = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = n,
              .atten = da, .tof = &tof};
  g_autofree double *c = g_new0(double, nv);
  double rll = 0;
  for (guint i = 0; i < n; i++) {
    const float *a = sc->crystals[ev[i].a].centre, *b = sc->crystals[ev[i].b].centre;
    double p0[3] = {a[0], a[1], a[2]}, p1[3] = {b[0], b[1], b[2]};
    TlRefTof rt = {tof.sigma_mm, tof.bin_mm, tof.n_sigma, ev[i].tof_bin};
    TlRefModel m = {.kind = TL_REF_JOSEPH, .tof = &rt};
    double y = att[i] * tl_ref_forward_model(&m, &g, p0, p1, x);
    if (!(y > 0)) { /* floored at 1e-30, as the solver's objective */
      rll += log(1e-30);
      continue;
    }
    rll += log(y);
    tl_ref_back_model(&m, &g, p0, p1, att[i] / y, c);
  }
  check(p, &l, dx, c, rll, "TOF events with attenuation");
}

/* Relative L2 distance |a - b| / |b|, and the largest |a_n - b_n| over max |b_n|. */
static double rel_l2(const float *a, const double *b, guint64 n) {
  double num = 0, den = 0;
  for (guint64 i = 0; i < n; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += b[i] * b[i];
  }
  return sqrt(num / den);
}

static double rel_max(const float *a, const double *b, guint64 n) {
  return max_diff(a, b, n) / fx_max_abs(b, n);
}

/* Ring events on `g`, with or without TOF, only events whose LOR meets the image (so that each
 * one counts, wherever a chunk puts it), in TlRecon's order on CPU devices; for each of
 * `counts` (increasing), the plane path's correction image against the fused kernel's and
 * the double reference, in total and per voxel. The total has an exact value:
 * sum_n x_n c_n = sum_j (A x)_j / (A x)_j = the number of events. The plane path's chunks are
 * powers of two up to 65 536 events (tl-projector-planes.c), so 65 535, 65 536, 65 537 and
 * 2 x 65 536 are at, or one off, a multiple of them; on the landed tree (chunks of 65 536) the
 * path dropped the last event of every full chunk (issue 32): 1 / n of the total, 1e-5 here. */
static void check_chunks(TlScanner *sc, const TlImageGrid *g, gboolean with_tof,
                         const guint *counts, guint n_counts, const char *what) {
  GError *error = NULL;
  TlTof tof;
  if (with_tof) {
    sc->tof_bins = 21;
    sc->tof_bin_mm = 10.0f;
    sc->tof_fwhm_ps = (float)(10.0 * 2 * sqrt(2 * G_LN2) * 2 / 0.299792458); /* sigma 10 mm */
    g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  }
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", g, &error);
  g_assert_no_error(error);
  guint64 nv = fx_voxels(g);
  guint n_max = counts[n_counts - 1];
  g_autofree float *x = fx_random_floats(nv, 12, 0.2, 1.0);
  g_autoptr(GRand) r = g_rand_new_with_seed(11);
  g_autofree TlEvent *ev = g_new0(TlEvent, n_max);
  for (guint i = 0; i < n_max; i++) {
    for (;;) {
      guint a = (guint)g_rand_int_range(r, 0, (gint32)sc->n_crystals);
      guint b = (guint)g_rand_int_range(r, 0, (gint32)sc->n_crystals);
      int bin = with_tof ? g_rand_int_range(r, -4, 5) : 0;
      if (a == b || !fx_pair_allowed(sc, a, b)) continue;
      const float *ca = sc->crystals[a].centre, *cb = sc->crystals[b].centre;
      double p0[3] = {ca[0], ca[1], ca[2]}, p1[3] = {cb[0], cb[1], cb[2]};
      TlRefTof rt = {with_tof ? tof.sigma_mm : 0, with_tof ? tof.bin_mm : 0,
                     with_tof ? tof.n_sigma : 0, bin};
      TlRefModel m = {.kind = TL_REF_JOSEPH, .tof = with_tof ? &rt : NULL};
      /* well inside the image's reach: no float rounding decides whether it counts */
      if (tl_ref_forward_model(&m, g, p0, p1, x) > 1e-3 * g->voxel_mm[0]) {
        ev[i] = (TlEvent){a, b, bin};
        break;
      }
    }
  }
  tl_events_order_by_line(ev, n_max, sc, g);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, n_max, sizeof(TlEvent));
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_assert_no_error(error);
  /* the reference, event by event, read off at each count */
  g_autofree double *c = g_new0(double, nv);
  guint done = 0;
  double rll = 0;
  for (guint k = 0; k < n_counts; k++) {
    guint n = counts[k];
    for (; done < n; done++) {
      const float *a = sc->crystals[ev[done].a].centre, *b = sc->crystals[ev[done].b].centre;
      double p0[3] = {a[0], a[1], a[2]}, p1[3] = {b[0], b[1], b[2]};
      TlRefTof rt = {with_tof ? tof.sigma_mm : 0, with_tof ? tof.bin_mm : 0,
                     with_tof ? tof.n_sigma : 0, ev[done].tof_bin};
      TlRefModel m = {.kind = TL_REF_JOSEPH, .tof = with_tof ? &rt : NULL};
      double y = tl_ref_forward_model(&m, g, p0, p1, x);
      rll += log(y);
      tl_ref_back_model(&m, g, p0, p1, 1.0 / y, c);
    }
    TlLors l = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = n,
                .tof = with_tof ? &tof : NULL};
    double ll_planes, ll_fused;
    g_autofree float *planes = em_with(p, TL_EM_PLANES, &l, dx, &ll_planes);
    if (!planes) return; /* not on this device (em_with says why) */
    g_autofree float *fused = em_with(p, TL_EM_FUSED, &l, dx, &ll_fused);
    /* the automatic choice, by measurement (tl_planes_em_chosen): on a CPU device the plane
     * path without TOF, the one-kernel pass with TOF */
    double ll_auto;
    g_autofree float *chosen = em_with(p, TL_EM_AUTO, &l, dx, &ll_auto);
    gboolean cpu = tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    g_assert_cmpmem(chosen, nv * sizeof(float), cpu && !with_tof ? planes : fused,
                    nv * sizeof(float));
    g_assert_cmpstr(tl_projector_kernels(p, TL_PROJECTOR_EM, &l)[0], ==,
                    cpu && !with_tof ? "pet_em_rec" : "pet_em");
    double t_planes = 0, t_fused = 0, t_ref = 0;
    for (guint64 i = 0; i < nv; i++) {
      t_planes += (double)x[i] * planes[i];
      t_fused += (double)x[i] * fused[i];
      t_ref += x[i] * c[i];
    }
    g_autofree double *fused_d = g_new(double, nv);
    for (guint64 i = 0; i < nv; i++) fused_d[i] = fused[i];
    double l2_ref = rel_l2(planes, c, nv), l2_fused = rel_l2(fused, c, nv);
    double max_ref = rel_max(planes, c, nv), max_fused = rel_max(fused, c, nv);
    double l2_pf = rel_l2(planes, fused_d, nv);
    g_test_message("%s, %u events: totals plane path %.9g, fused kernel %.9g, reference %.9g; "
                   "vs the reference, relative L2 / max: plane path %.3g / %.3g, fused kernel "
                   "%.3g / %.3g; plane path vs fused kernel %.3g",
                   what, n, t_planes, t_fused, t_ref, l2_ref, max_ref, l2_fused, max_fused,
                   l2_pf);
    g_assert_cmpfloat(fabs(t_ref - n), <=, 1e-9 * n);
    /* every event counted: one missing is 1 / n, 5e-6 to 1.5e-5 here */
    g_assert_cmpfloat(fabs(t_planes - n), <=, 1e-6 * n);
    g_assert_cmpfloat(fabs(t_fused - n), <=, 1e-6 * n);
    /* one operator (issue 32): the plane path, summing in double (pet_pairs.glsl), and the
     * fused kernel, summing exactly in fixed point (core/tl-fixed.h), are both within 1e-6
     * relative L2 of the double reference, what is left being the walk's float rounding, and
     * of each other (in float sums the plane path was 0.4-8e-6 from the reference); per voxel
     * within 1e-5 of the maximum, where a dropped event moves single voxels by 1e-4 to 1e-2 */
    g_assert_cmpfloat(l2_ref, <=, 1e-6);
    g_assert_cmpfloat(max_ref, <=, 1e-5);
    g_assert_cmpfloat(max_fused, <=, 1e-5);
    g_assert_cmpfloat(l2_fused, <=, 1e-6);
    g_assert_cmpfloat(l2_pf, <=, 1e-6);
    g_assert_cmpfloat(fabs(ll_planes - rll), <=, 1e-6 * fabs(rll));
    g_assert_cmpfloat(fabs(ll_fused - rll), <=, 1e-6 * fabs(rll));
  }
}

/* The examples' ring (examples/python/common.py: 8 rings of 12 sides x 8 crystals, 70 mm,
 * 768 crystals) on their 32 x 32 x 8 grid of 3.5 x 3.5 x 4 mm: counts at and one off
 * multiples of every chunk, and several chunks with a remainder. */
static const guint example_counts[] = {65535, 65536, 65537, 2 * 65536, 3 * 65536 + 4321};

static TlScanner *example_ring(void) {
  TlScanner *fx = fx_ring_scanner(8, 12, 8, 4.0f, 70.0f, 4.0f, 7);
  TlScanner *sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  return sc;
}

static void test_chunks_example(void) {
  g_autoptr(TlScanner) sc = example_ring();
  TlImageGrid g = fx_grid(32, 32, 8, 3.5f, 3.5f, 4.0f);
  check_chunks(sc, &g, FALSE, example_counts, G_N_ELEMENTS(example_counts), "example ring");
}

static void test_chunks_example_tof(void) {
  g_autoptr(TlScanner) sc = example_ring();
  TlImageGrid g = fx_grid(32, 32, 8, 3.5f, 3.5f, 4.0f);
  check_chunks(sc, &g, TRUE, example_counts, G_N_ELEMENTS(example_counts),
               "example ring, TOF");
}

/* The TOF test's small ring on its grid, and on the end-point test's odd grid: fewer counts,
 * to keep the test short. */
static void test_chunks_small_ring(void) {
  static const guint counts[] = {65536, 65537, 2 * 65536 + 4321};
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  TlImageGrid g = fx_grid(40, 40, 12, 2.0f, 2.0f, 2.5f);
  check_chunks(sc, &g, TRUE, counts, G_N_ELEMENTS(counts), "small ring, TOF");
  TlImageGrid odd = grid_odd();
  check_chunks(sc, &odd, FALSE, counts, G_N_ELEMENTS(counts), "small ring, odd grid");
}

/* Asked for where it cannot run: an error that says why, nothing written. */
static void test_refused(void) {
  GError *error = NULL;
  TlImageGrid g = grid_odd();
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "siddon", &g, &error);
  g_autofree Lor *lors = random_lors(10, 6);
  g_autoptr(TlArray) rec = fx_upload(ctx, lors, 10, sizeof(Lor));
  g_autoptr(TlArray) img = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  TlLors l = {.kind = TL_LORS_END_POINTS, .records = rec, .count = 10};
  tl_projector_set_em_method(p, TL_EM_PLANES);
  g_assert_false(tl_projector_em(p, s, &l, img, img, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "Joseph"));
  g_clear_error(&error);
}

static int cmp_event(const void *x, const void *y) {
  return memcmp(x, y, sizeof(TlEvent));
}

/* Dominant axis in voxel units and transaxial direction in [0, pi), written from the
 * function's documented key, not its code. */
static int event_axis(const TlScanner *s, const TlImageGrid *g, const TlEvent *e,
                      double *phi) {
  const float *a = s->crystals[e->a].centre, *b = s->crystals[e->b].centre;
  double d[3];
  for (int k = 0; k < 3; k++) d[k] = fabs((double)b[k] - a[k]) / g->voxel_mm[k];
  double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1];
  *phi = fmod(atan2(dy, dx) + G_PI, G_PI);
  if (*phi >= G_PI - 1e-12) *phi = 0; /* a line along x either way */
  return d[0] >= d[1] && d[0] >= d[2] ? 0 : d[1] >= d[2] ? 1 : 2;
}

/* tl_events_order_by_line: the same events, grouped by dominant axis as
 * tl_events_group_by_axis groups them, within a group by direction (its bins are 1/512 of a
 * half turn: no event more than one bin behind the one before), and the same order again
 * when run twice (ties keep their order). */
static void test_order_by_line(void) {
  TlScanner *sc = fx_ring_scanner(6, 12, 8, 4.0f, 60.0f, 4.0f, 5);
  TlImageGrid g = fx_grid(30, 30, 6, 4.0f, 4.0f, 4.0f);
  const guint n = 20000;
  g_autoptr(GRand) r = g_rand_new_with_seed(17);
  g_autofree TlEvent *ev = g_new(TlEvent, n);
  for (guint i = 0; i < n; i++) {
    guint a, b;
    do {
      a = (guint)g_rand_int_range(r, 0, (gint32)sc->n_crystals);
      b = (guint)g_rand_int_range(r, 0, (gint32)sc->n_crystals);
    } while (a == b || !fx_pair_allowed(sc, a, b));
    ev[i] = (TlEvent){a, b, g_rand_int_range(r, -3, 4)};
  }
  g_autofree TlEvent *line = g_memdup2(ev, n * sizeof *ev);
  g_autofree TlEvent *axis = g_memdup2(ev, n * sizeof *ev);
  tl_events_order_by_line(line, n, sc, &g);
  tl_events_group_by_axis(axis, n, sc, &g);
  int last_axis = 0;
  double last_phi = 0;
  guint turns = 0;
  for (guint i = 0; i < n; i++) {
    double phi, phi_a;
    int m = event_axis(sc, &g, &line[i], &phi);
    g_assert_cmpint(m, ==, event_axis(sc, &g, &axis[i], &phi_a)); /* the same groups */
    g_assert_cmpint(m, >=, last_axis);
    if (m != last_axis) last_phi = 0;
    g_assert_cmpfloat(phi, >=, last_phi - G_PI / 512);
    turns += phi < last_phi;
    last_axis = m;
    last_phi = phi;
  }
  g_test_message("%u of %u steps back within a direction bin", turns, n);
  /* the same events */
  g_autofree TlEvent *s1 = g_memdup2(line, n * sizeof *ev);
  qsort(s1, n, sizeof *s1, cmp_event);
  qsort(ev, n, sizeof *ev, cmp_event);
  g_assert_cmpmem(s1, n * sizeof *ev, ev, n * sizeof *ev);
  /* deterministic, and ordered already: unchanged */
  g_autofree TlEvent *again = g_memdup2(line, n * sizeof *ev);
  tl_events_order_by_line(again, n, sc, &g);
  g_assert_cmpmem(again, n * sizeof *ev, line, n * sizeof *ev);
  fx_scanner_free(sc);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/pet/em-planes/end-points", test_end_points);
  g_test_add_func("/pet/em-planes/tof-events", test_tof_events);
  g_test_add_func("/pet/em-planes/chunks-example", test_chunks_example);
  g_test_add_func("/pet/em-planes/chunks-example-tof", test_chunks_example_tof);
  g_test_add_func("/pet/em-planes/chunks-small-ring", test_chunks_small_ring);
  g_test_add_func("/pet/em-planes/refused", test_refused);
  g_test_add_func("/pet/em-planes/order-by-line", test_order_by_line);
  return g_test_run();
}
