/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Time of flight in the PET projectors (tl-projector.h, TlTof) and in TlRecon: adjointness
 * with random TOF bins, agreement with the C reference of pet-ref.c (its own erf-based
 * h_b(x)), the bins of one LOR adding up to the non-TOF weights, TOF OSEM beating non-TOF
 * OSEM on the same simulated data, and the refusals of bad input. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "image/tl-phantom.h"
#include "pet/project/tl-projector.h"
#include "pet/tl-recon.h"
#include "pet/simulate/tl-simulate.h"

static TlContext *ctx;

#define C_MM_PER_PS 0.299792458

/* 3 rings of an octagon (4 crystals of 4 mm a side, apothem 40 mm) around grid_small(); TOF:
 * `bins` bins of bin_mm and a timing FWHM giving sigma_mm along the LOR (fwhm = 2 sigma
 * 2.3548 / c). 25 bins of 8 mm span +-100 mm: every point of a LOR (at most 41 mm from its
 * midpoint) lies more than 3 sigma inside the bins. */
static TlScanner *tof_scanner(guint bins, double bin_mm, double sigma_mm) {
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  TlScanner *s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  s->tof_bins = bins;
  s->tof_bin_mm = (float)bin_mm;
  s->tof_fwhm_ps = (float)(sigma_mm * 2 * sqrt(2 * G_LN2) * 2 / C_MM_PER_PS);
  return s;
}

/* 20 x 16 x 12 voxels of 2 x 2 x 2.5 mm (anisotropic on purpose). */
static TlImageGrid grid_small(void) { return fx_grid(20, 16, 12, 2.0f, 2.0f, 2.5f); }

/* n events on random crystal pairs (a == b now and then: a zero-length LOR must be harmless)
 * with random bins: mostly within +-40 mm of the midpoint (where LORs cross the image), every
 * fifth anywhere in [-(B-1)/2, (B-1)/2]. */
static TlEvent *random_events(const TlScanner *sc, guint n, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  TlEvent *ev = g_new0(TlEvent, n);
  gint32 half = (gint32)(sc->tof_bins - 1) / 2;
  for (guint i = 0; i < n; i++) {
    ev[i].a = g_rand_int_range(r, 0, sc->n_crystals);
    ev[i].b = i % 97 == 0 ? ev[i].a : (guint32)g_rand_int_range(r, 0, sc->n_crystals);
    gint32 lim = i % 5 == 0 ? half : MIN(half, 5);
    ev[i].tof_bin = g_rand_int_range(r, -lim, lim + 1);
  }
  return ev;
}

/* y = A x and z = A^T w on the device (several submissions per call), downloaded. */
static void project(TlProjector *p, const TlLors *l, const float *x, const float *w, float **y,
                    float **z) {
  GError *error = NULL;
  guint64 nv = fx_voxels(tl_projector_grid(p));
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, l->count, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, l->count, &error);
  g_autoptr(TlArray) dz = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  tl_stream_set_submit_budget(s, 1 << 22);
  g_assert_true(tl_array_zero(dz, &error));
  g_assert_true(tl_projector_forward(p, s, l, dx, dy, &error));
  g_assert_true(tl_projector_back(p, s, l, dw, dz, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  *y = fx_download(dy);
  *z = fx_download(dz);
}

static TlRefKind ref_kind(const char *name) {
  return g_str_equal(name, "siddon") ? TL_REF_SIDDON : TL_REF_JOSEPH;
}

/* <A x, w> = <x, A^T w> with TOF, 5 * 10^4 events with random bins, random x and w. */
static void test_adjoint(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlScanner) sc = tof_scanner(25, 8.0, 8.0);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  g_assert_no_error(error);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_assert_no_error(error);
  guint ne = 50000;
  guint64 nv = fx_voxels(&g);
  g_autofree TlEvent *ev = random_events(sc, ne, 1);
  g_autofree float *x = fx_random_floats(nv, 2, 0, 1), *w = fx_random_floats(ne, 3, 0, 1);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, ne, sizeof(TlEvent));
  TlLors l = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = ne, .tof = &tof};
  g_autofree float *y = NULL, *z = NULL;
  project(p, &l, x, w, &y, &z);
  double ax_w = fx_dot(y, w, ne), x_atw = fx_dot(x, z, nv);
  guint hits = 0;
  for (guint i = 0; i < ne; i++) hits += y[i] > 0;
  g_test_message("%s TOF: <Ax,w> = %.9g, <x,A^T w> = %.9g, %u of %u events non-zero",
                 (char *)name, ax_w, x_atw, hits, ne);
  g_assert_cmpuint(hits, >, ne / 4); /* the far bins miss the image: many zeros, not all */
  g_assert_cmpuint(hits, <, ne);
  g_assert_cmpfloat(fabs(ax_w - x_atw), <=, 1e-5 * fabs(ax_w));
}

/* Device TOF forward and back projection equal the double-precision reference (TOF weight by
 * C's erf at the sample point) within 1e-5 of the largest value; and an event seen from the
 * other crystal with the opposite bin, (b, a, -k), projects like (a, b, k), which pins the sign
 * convention (positive towards crystal b) from the device side alone. */
static void test_reference(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlScanner) sc = tof_scanner(25, 8.0, 8.0);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 2.5, &error)); /* a non-default truncation */
  g_assert_cmpfloat(fabs(tof.sigma_mm - 8.0), <, 1e-4);
  g_assert_cmpfloat(tof.bin_mm, ==, 8.0f);
  g_assert_cmpfloat(tof.n_sigma, ==, 2.5f);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  guint ne = 20000;
  guint64 nv = fx_voxels(&g);
  g_autofree TlEvent *ev = random_events(sc, 2 * ne, 4);
  for (guint i = 0; i < ne; i++) /* second half: the first half seen from the other end */
    ev[ne + i] = (TlEvent){ev[i].b, ev[i].a, -ev[i].tof_bin};
  g_autofree float *x = fx_random_floats(nv, 5, 0, 1), *w = fx_random_floats(2 * ne, 6, 0, 1);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_autoptr(TlArray) rec = fx_upload(ctx, ev, 2 * ne, sizeof(TlEvent));
  TlLors l = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = ne, .tof = &tof};
  g_autofree float *y = NULL, *z = NULL, *y2 = NULL, *z2 = NULL;
  project(p, &l, x, w, &y, &z);
  l.first = ne;
  project(p, &l, x, w, &y2, &z2);

  g_autofree double *ry = g_new0(double, ne), *rz = g_new0(double, nv);
  for (guint i = 0; i < ne; i++) {
    const float *a = sc->crystals[ev[i].a].centre, *b = sc->crystals[ev[i].b].centre;
    double p0[3] = {a[0], a[1], a[2]}, p1[3] = {b[0], b[1], b[2]};
    TlRefTof rt = {tof.sigma_mm, tof.bin_mm, tof.n_sigma, ev[i].tof_bin};
    TlRefModel m = {.kind = ref_kind(name), .tof = &rt};
    ry[i] = tl_ref_forward_model(&m, &g, p0, p1, x);
    tl_ref_back_model(&m, &g, p0, p1, w[i], rz);
  }
  double ey = 0, ez = 0, es = 0;
  for (guint i = 0; i < ne; i++) {
    ey = MAX(ey, fabs(y[i] - ry[i]));
    es = MAX(es, fabs(y[i] - y2[i]));
  }
  for (guint64 n = 0; n < nv; n++) ez = MAX(ez, fabs(z[n] - rz[n]));
  double my = fx_max_abs(ry, ne), mz = fx_max_abs(rz, nv);
  g_test_message("%s TOF: forward error %.3g of %.3g, back %.3g of %.3g, swapped ends %.3g",
                 (char *)name, ey, my, ez, mz, es);
  g_assert_cmpfloat(my, >, 0);
  g_assert_cmpfloat(ey, <=, 1e-5 * my);
  g_assert_cmpfloat(ez, <=, 1e-5 * mz);
  g_assert_cmpfloat(es, <=, 1e-5 * my);
}

/* Summed over all bins the TOF weights of a LOR are its non-TOF weights (the h_b telescope to
 * 1 where the bins cover x +- n sigma, which holds on every LOR here): per LOR, the 25 TOF
 * forward projections add up to the plain one, for a random image and for single-voxel
 * images (whose projections are single weights a_jn), within 1e-4 of the largest value. */
static void test_bin_sum(gconstpointer name) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  const guint B = 25;
  g_autoptr(TlScanner) sc = tof_scanner(B, 8.0, 8.0);
  TlTof tof;
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  g_assert_cmpfloat(tof.n_sigma, ==, (float)TL_TOF_N_SIGMA);
  g_autoptr(TlProjector) p = tl_projector_new(ctx, name, &g, &error);
  g_autoptr(TlArray) cry = tl_scanner_upload(sc, ctx, &error);
  g_assert_no_error(error);
  /* every allowed pair, once per bin, then once more (for the plain projection) */
  g_autoptr(GArray) evs = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  for (guint a = 0; a < sc->n_crystals; a++)
    for (guint b = a + 1; b < sc->n_crystals; b++) {
      if (!tl_scanner_pair_allowed(sc, a, b)) continue;
      for (guint k = 0; k <= B; k++) {
        TlEvent e = {a, b, k < B ? (gint32)k - (gint32)(B - 1) / 2 : 0};
        g_array_append_val(evs, e);
      }
    }
  guint nl = evs->len / (B + 1);
  g_autoptr(TlArray) rec = fx_upload(ctx, evs->data, evs->len, sizeof(TlEvent));
  TlLors lt = {.kind = TL_LORS_EVENTS, .records = rec, .crystals = cry, .count = evs->len,
               .tof = &tof};
  TlLors lp = lt;
  lp.tof = NULL; /* the same records without TOF: the bin word is ignored */

  guint64 nv = fx_voxels(&g);
  /* the centre and two voxels near corners (the rings reach |z| <= 12 mm only) */
  const guint singles[3][3] = {{10, 8, 6}, {1, 1, 2}, {18, 14, 9}};
  for (guint img = 0; img < 4; img++) {
    g_autofree float *x = img == 0 ? fx_random_floats(nv, 8, 0, 1) : g_new0(float, nv);
    if (img > 0) {
      const guint *v = singles[img - 1];
      x[v[0] + g.dims[0] * (v[1] + g.dims[1] * v[2])] = 1.0f;
    }
    g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
    g_autoptr(TlArray) yt = tl_array_new_float(ctx, lt.count, &error);
    g_autoptr(TlArray) yp = tl_array_new_float(ctx, lp.count, &error);
    g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
    g_assert_true(tl_projector_forward(p, s, &lt, dx, yt, &error));
    g_assert_true(tl_projector_forward(p, s, &lp, dx, yp, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_no_error(error);
    g_autofree float *ht = fx_download(yt), *hp = fx_download(yp);
    double worst = 0, largest = 0, peak_share = 0;
    guint nonzero = 0;
    for (guint j = 0; j < nl; j++) {
      double sum = 0, plain = hp[j * (B + 1) + B], most = 0;
      for (guint k = 0; k < B; k++) {
        sum += ht[j * (B + 1) + k];
        most = MAX(most, ht[j * (B + 1) + k]);
      }
      worst = MAX(worst, fabs(sum - plain));
      largest = MAX(largest, plain);
      nonzero += plain > 0;
      if (plain > 0) peak_share = MAX(peak_share, most / plain);
    }
    g_test_message("%s image %u: %u LORs hit, |sum over bins - plain| <= %.3g of %.3g; largest "
                   "single-bin share %.3f", (char *)name, img, nonzero, worst, largest, peak_share);
    g_assert_cmpuint(nonzero, >, 0);
    g_assert_cmpfloat(worst, <=, 1e-4 * largest);
    g_assert_cmpfloat(peak_share, <, 0.9); /* TOF really spread it over several bins */
  }
}

/* A small NEMA-like phantom: a body cylinder (R 42 mm, activity 1), hot spheres (4:1) and a
 * cold insert, on 32 x 32 x 8 voxels of 3.5 x 3.5 x 4 mm. */
static TlImage *nema_like(const TlImageGrid *g) {
  GError *error = NULL;
  g_autoptr(TlPhantom) ph = tl_phantom_new("nema-like");
  TlShape body = {.kind = TL_SHAPE_CYLINDER, .radius = 42, .half_length = 16, .axis = 2,
                  .activity = 1, .flags = TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &body);
  const float sx[] = {22, -11, -11}, sy[] = {0, 19, -19}, sr[] = {9, 7, 5};
  for (guint i = 0; i < 3; i++) {
    TlShape sp = {.kind = TL_SHAPE_SPHERE, .centre = {sx[i], sy[i], 0}, .radius = sr[i],
                  .activity = 4, .flags = TL_SHAPE_SETS_ACTIVITY};
    tl_phantom_add(ph, &sp);
  }
  TlShape cold = {.kind = TL_SHAPE_CYLINDER, .radius = 8, .half_length = 16, .axis = 2,
                  .activity = 0, .flags = TL_SHAPE_SETS_ACTIVITY};
  tl_phantom_add(ph, &cold);
  TlImage *act = NULL;
  g_assert_true(tl_phantom_rasterise(ph, g, 4, &act, NULL, &error));
  g_assert_no_error(error);
  return act;
}

/* RMSE after each sub-iteration */
static void on_rmse(const TlReconProgress *p, gpointer data) {
  g_array_append_val((GArray *)data, p->rmse);
}

/* OSEM 4 subsets x 1 iteration; the RMSE after each sub-iteration. */
static GArray *osem_rmse(const TlListmode *lm, const TlImage *truth, const char *projector,
                         gboolean tof, const char *what) {
  GError *error = NULL;
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = TL_RECON_OSEM;
  o.subsets = 4;
  o.iterations = 1;
  o.projector = projector;
  o.loglik = TL_LOGLIK_NEVER;
  o.tof = tof;
  g_autoptr(TlRecon) r = tl_recon_new_listmode(ctx, lm, &truth->grid, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_set_truth(r, truth, &error));
  GArray *rmse = g_array_new(FALSE, FALSE, sizeof(double));
  tl_recon_set_callback(r, on_rmse, rmse);
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(tl_recon_run(r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(rmse->len, ==, 4);
  g_test_message("%s %s: RMSE %.4f %.4f %.4f %.4f (%.2f s)", projector, what,
                 g_array_index(rmse, double, 0), g_array_index(rmse, double, 1),
                 g_array_index(rmse, double, 2), g_array_index(rmse, double, 3),
                 (g_get_monotonic_time() - t0) * 1e-6);
  return rmse;
}

/* The same simulated TOF acquisition (sigma 12.7 mm = 200 ps FWHM, 21 bins of 8 mm; 3 * 10^5
 * events) reconstructed with and without TOF by OSEM, 4 subsets: TOF localises each event
 * along its LOR, so after each of the same sub-iterations its RMSE against the phantom is
 * lower (van Gendt et al. 2021 sec. 2.3; seen: about 0.7x). Compared in the first iteration, where
 * the
 * error is still mostly the unconverged image: later, at these counts, both images fill
 * with noise (the more converged TOF image sooner), and RMSE measures noise, not TOF.
 * Control: the same events with every bin negated (TOF pointing the wrong way along each
 * LOR) must do far worse, so simulator and projector agree on the sign convention. */
static void test_rmse(gconstpointer projector) {
  GError *error = NULL;
  TlScanner *fx = fx_ring_scanner(8, 24, 4, 4.5f, 70.0f, 4.0f, 7);
  g_autoptr(TlScanner) sc = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  sc->tof_bins = 21;
  sc->tof_bin_mm = 8;
  sc->tof_fwhm_ps = 200;
  TlImageGrid g = fx_grid(32, 32, 8, 3.5f, 3.5f, 4.0f);
  g_autoptr(TlImage) truth = nema_like(&g);
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = 300000;
  sp.exact_count = TRUE;
  sp.seed = 9;
  sp.tof = TRUE;
  g_autoptr(TlListmode) lm = tl_simulate(sc, truth, NULL, &sp, NULL, NULL, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(lm->has_tof);
  g_autoptr(GArray) plain = osem_rmse(lm, truth, projector, FALSE, "non-TOF");
  g_autoptr(GArray) tof = osem_rmse(lm, truth, projector, TRUE, "TOF");
  for (guint i = 0; i < 4; i++) {
    double p = g_array_index(plain, double, i), t = g_array_index(tof, double, i);
    g_assert_true(isfinite(p) && isfinite(t));
    g_assert_cmpfloat(t, <, 0.85 * p);
  }
  for (guint64 i = 0; i < lm->n_events; i++) lm->events[i].tof_bin = -lm->events[i].tof_bin;
  g_autoptr(GArray) wrong = osem_rmse(lm, truth, projector, TRUE, "TOF, bins negated");
  g_assert_cmpfloat(g_array_index(wrong, double, 3), >, 1.3 * g_array_index(tof, double, 3));
}

/* TOF needs TOF data, list mode, a TOF scanner and a sane truncation: each is a GError. */
static void test_bad_input(void) {
  GError *error = NULL;
  TlImageGrid g = grid_small();
  g_autoptr(TlScanner) sc = tof_scanner(25, 8.0, 8.0);
  g_autoptr(TlScanner) plain_sc = tl_scanner_copy(sc);
  plain_sc->tof_bins = 0;
  plain_sc->tof_bin_mm = plain_sc->tof_fwhm_ps = 0;
  TlTof tof;
  g_assert_false(tl_tof_init(&tof, plain_sc, 0, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_assert_true(tl_tof_init(&tof, sc, 10.0, &error)); /* the limit itself is allowed */
  g_assert_false(tl_tof_init(&tof, sc, 10.5, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);

  /* list mode without TOF bins */
  TlEvent ev[2] = {{0, 60, 0}, {5, 80, 0}}; /* allowed pairs (other sides) */
  TlListmode lm = {.scanner = plain_sc, .events = ev, .n_events = 2, .has_tof = FALSE};
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.use_cache = FALSE;
  o.tof = TRUE;
  g_assert_null(tl_recon_new_listmode(ctx, &lm, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "TOF"));
  g_clear_error(&error);
  /* TOF data, but a truncation beyond 10 sigma */
  TlListmode lt = {.scanner = sc, .events = ev, .n_events = 2, .has_tof = TRUE};
  o.tof_n_sigma = 12;
  g_assert_null(tl_recon_new_listmode(ctx, &lt, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  /* binned data carry no TOF */
  o.tof_n_sigma = 0;
  TlBin bins[2] = {{0, 60, 2.0f}, {5, 80, 1.0f}};
  g_assert_null(tl_recon_new_binned(ctx, sc, bins, 2, &g, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  /* the same TOF list mode is accepted */
  g_autoptr(TlRecon) ok = tl_recon_new_listmode(ctx, &lt, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_recon_step(ok, &error));
  g_assert_no_error(error);

  /* the projector: TOF only with event records */
  g_assert_true(tl_tof_init(&tof, sc, 0, &error));
  g_autoptr(TlProjector) p = tl_projector_new(ctx, "joseph", &g, &error);
  g_autoptr(TlArray) rec = tl_array_new(ctx, 4, 24, &error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlArray) out = tl_array_new_float(ctx, 4, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  TlLors le = {.kind = TL_LORS_END_POINTS, .records = rec, .count = 4, .tof = &tof};
  g_assert_false(tl_projector_forward(p, s, &le, img, out, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_test_message("%s", error->message);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(s, &error));
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  static const char *const kinds[] = {"siddon", "joseph"};
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
    char path[128];
    g_snprintf(path, sizeof path, "/pet/tof/adjoint/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_adjoint);
    g_snprintf(path, sizeof path, "/pet/tof/reference/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_reference);
    g_snprintf(path, sizeof path, "/pet/tof/bin-sum/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_bin_sum);
    g_snprintf(path, sizeof path, "/pet/tof/rmse/%s", kinds[i]);
    g_test_add_data_func(path, kinds[i], test_rmse);
  }
  g_test_add_func("/pet/tof/bad-input", test_bad_input);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
