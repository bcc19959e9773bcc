/* SPDX-License-Identifier: GPL-3.0-or-later */
/* CT reconstruction on the device: FDK of a noise-free 64^3 Shepp-Logan from 180 views against
 * a plain C reference FDK, CGLS's monotone residual, SIRT and (OS-)SART converging towards the
 * phantom, MLEM's likelihood, cancel semantics and bad options. Projections are the phantom's
 * exact line integrals (tl_ct_phantom_line_integral), not the projector's own output. */
#include <math.h>
#include <string.h>
#include "ct-ref.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-recon.h"
#include "tl-test-common.h"

static TlContext *ctx;

typedef struct {
  TlCtGeometry *g;
  TlImageGrid grid;
  TlImage *truth;
  float *proj;     /* host */
  TlArray *dproj;  /* device */
} Case;

/* Circular cone beam, sid 200 mm, sdd 300 mm; a volume of n^3 voxels of `vox` mm holding
 * the modified Shepp-Logan; the detector covers the whole volume. */
static Case *case_new(guint n, float vox, guint views, guint nu, guint nv, double pixel) {
  GError *error = NULL;
  Case *c = g_new0(Case, 1);
  TlCtOrbit o;
  tl_ct_orbit_init_cone(&o, views, 200, 300, nu, nv, pixel, pixel);
  c->g = tl_ct_geometry_new_orbit(&o, &error);
  g_assert_no_error(error);
  c->grid = tl_image_grid_centred(n, n, n, vox, vox, vox);
  g_autoptr(TlCtPhantom) ph = tl_ct_phantom_new_preset("modified-shepp-logan", &error);
  g_assert_no_error(error);
  c->truth = tl_ct_phantom_rasterise(ph, &c->grid, 1, 1.0, &error);
  g_assert_no_error(error);
  c->proj = ct_ref_project_phantom(c->g, &c->grid, ph, 1.0);
  TlCtViews all = tl_ct_views_all(c->g);
  c->dproj = tl_array_new_float(ctx, tl_ct_views_n_pixels(c->g, &all), &error);
  g_assert_no_error(error);
  g_assert_true(tl_array_upload(c->dproj, c->proj, &error));
  return c;
}

static void case_free(Case *c) {
  tl_ct_geometry_free(c->g);
  tl_image_free(c->truth);
  g_free(c->proj);
  tl_array_free(c->dproj);
  g_free(c);
}

static double rms(const float *a, guint64 n) {
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += (double)a[i] * a[i];
  return sqrt(s / n);
}

/* FDK: the device against ct_ref_fdk on the same data. The reference's own RMSE against the
 * phantom (cone-beam approximation, voxelisation, interpolation) is what FDK can reach; the
 * device does the same arithmetic in float, so it must reach it to within 0.1 %, and its
 * image must match the reference's to 1e-4 of the phantom's range. */
static void test_fdk(void) {
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  Case *c = case_new(64, 1.0f, 180, 128, 96, 1.5);
  guint64 nvox = tl_image_grid_n_voxels(&c->grid);
  gint64 t1 = g_get_monotonic_time();
  g_autofree double *ref = g_new(double, nvox);
  ct_ref_fdk(c->g, &c->grid, c->proj, ref);
  gint64 t2 = g_get_monotonic_time();

  g_autoptr(TlCtFdk) fdk = tl_ct_fdk_new(ctx, c->g, &c->grid, TL_CT_FILTER_RAM_LAK, 0, &error);
  g_assert_no_error(error);
  g_autoptr(TlArray) img = tl_array_new_float(ctx, nvox, &error);
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_stream_set_profile(s, prof);
  g_assert_true(tl_ct_fdk_run(fdk, s, c->dproj, img, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  gint64 t3 = g_get_monotonic_time();
  g_autofree float *f = g_new(float, nvox);
  g_assert_true(tl_array_download(img, f, &error));

  double rmse_ref = ct_ref_rmse(c->truth->data, ref, nvox);
  double rmse_dev = ct_ref_rmse_f(f, c->truth->data, nvox);
  double diff = ct_ref_rmse(f, ref, nvox);
  double psnr = 20 * log10(1.0 / rmse_dev); /* the phantom's range is [0, 1] */
  g_autofree char *table = tl_profile_format(prof);
  g_test_message("FDK 64^3, 180 views: RMSE device %.5f, C reference %.5f, device vs reference "
                 "%.2e; PSNR %.2f dB; phantom+projections %.2f s, C FDK %.2f s, device %.2f s\n%s",
                 rmse_dev, rmse_ref, diff, psnr, (t1 - t0) * 1e-6, (t2 - t1) * 1e-6,
                 (t3 - t2) * 1e-6, table);
  /* the scale: mean over the central 16^3 voxels (soft tissue 0.2 plus small details) */
  double m_dev = 0, m_truth = 0;
  for (guint k = 24; k < 40; k++)
    for (guint j = 24; j < 40; j++)
      for (guint i = 24; i < 40; i++) {
        m_dev += f[i + 64 * (j + 64 * k)] / 4096.0;
        m_truth += c->truth->data[i + 64 * (j + 64 * k)] / 4096.0;
      }
  g_test_message("central mean: device %.5f, phantom %.5f", m_dev, m_truth);
  g_assert_cmpfloat(fabs(m_dev - m_truth), <, 0.01 * m_truth);
  g_assert_cmpfloat(rmse_ref, <, 0.1);  /* sanity of the reference itself */
  g_assert_cmpfloat(rmse_dev, <=, 1.001 * rmse_ref);
  g_assert_cmpfloat(diff, <=, 1e-4);

  /* the windows trade resolution for noise: on noise-free data they stay close */
  for (TlCtFilter w = TL_CT_FILTER_SHEPP_LOGAN; w <= TL_CT_FILTER_HANN; w++) {
    g_autoptr(TlCtFdk) fw = tl_ct_fdk_new(ctx, c->g, &c->grid, w, 7, &error);
    g_assert_no_error(error);
    g_assert_true(tl_ct_fdk_run(fw, s, c->dproj, img, &error));
    g_assert_true(tl_stream_finish(s, &error));
    g_assert_true(tl_array_download(img, f, &error));
    double r = ct_ref_rmse_f(f, c->truth->data, nvox);
    g_test_message("FDK %s window (batches of 7 views): RMSE %.5f", tl_ct_filter_name(w), r);
    g_assert_cmpfloat(r, <, 1.5 * rmse_ref);
  }
  case_free(c);
}

typedef struct {
  GArray *objective, *rmse;
  GCancellable *cancel_after; /* cancelled in the callback of sub-iteration 3 */
  TlImageGrid grid;
  TlImage *third;
} Trace;

static void on_progress(const TlCtReconProgress *p, gpointer data) {
  Trace *t = data;
  g_array_append_val(t->objective, p->objective);
  g_array_append_val(t->rmse, p->rmse);
  g_assert_cmpuint(p->sub_iterations, ==, t->rmse->len);
  g_assert_cmpuint(p->subset, ==, (p->sub_iterations - 1) % p->n_subsets);
  g_assert_nonnull(p->profile);
  if (t->cancel_after && p->sub_iterations == 3) {
    GError *error = NULL;
    t->third = tl_image_new(&t->grid);
    g_assert_true(tl_array_download(p->image, t->third->data, &error));
    g_assert_no_error(error);
    g_cancellable_cancel(t->cancel_after);
  }
}

static void trace_init(Trace *t, const Case *c) {
  memset(t, 0, sizeof *t);
  t->objective = g_array_new(FALSE, FALSE, sizeof(double));
  t->rmse = g_array_new(FALSE, FALSE, sizeof(double));
  t->grid = c->grid;
}

static void trace_clear(Trace *t) {
  g_array_free(t->objective, TRUE);
  g_array_free(t->rmse, TRUE);
  tl_image_free(t->third);
}

static double at(GArray *a, guint i) { return g_array_index(a, double, i); }

/* The small problem of the iterative tests: 24^3 voxels of 8/3 mm, 40 views of 48 x 36. */
static Case *small_case(void) { return case_new(24, 8.0f / 3, 40, 48, 36, 4.0); }

static TlCtRecon *make_relaxed(const Case *c, TlCtAlgo algo, guint subsets, guint iterations,
                               TlCtObjectiveWhen when, float lambda, Trace *t) {
  GError *error = NULL;
  TlCtReconOptions o;
  tl_ct_recon_options_init(&o);
  o.algo = algo;
  o.subsets = subsets;
  o.iterations = iterations;
  o.objective = when;
  o.relaxation = lambda;
  TlCtRecon *r = tl_ct_recon_new(ctx, c->g, &c->grid, c->dproj, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_ct_recon_set_truth(r, c->truth, &error));
  g_assert_no_error(error);
  if (t) tl_ct_recon_set_callback(r, on_progress, t);
  return r;
}

static TlCtRecon *make(const Case *c, TlCtAlgo algo, guint subsets, guint iterations,
                       TlCtObjectiveWhen when, Trace *t) {
  return make_relaxed(c, algo, subsets, iterations, when, 1.0f, t);
}

static void run(TlCtRecon *r) {
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_assert_true(tl_ct_recon_run(r, &error));
  g_assert_no_error(error);
  const TlCtReconOptions *o = tl_ct_recon_options(r);
  g_autofree char *table = tl_profile_format(tl_ct_recon_profile(r));
  g_test_message("%s, %u subsets, %u iterations: %.2f s\n%s", tl_ct_algo_name(o->algo),
                 o->subsets, o->iterations, (g_get_monotonic_time() - t0) * 1e-6, table);
}

/* CGLS minimises |A x - y| over nested Krylov spaces: the residual never grows. */
static void test_cgls(void) {
  Case *c = small_case();
  Trace t;
  trace_init(&t, c);
  g_autoptr(TlCtRecon) r = make(c, TL_CT_CGLS, 1, 15, TL_CT_OBJECTIVE_SUBITERATION, &t);
  run(r);
  double rmse0 = rms(c->truth->data, tl_image_grid_n_voxels(&c->grid));
  GString *s = g_string_new("CGLS 1/2|Ax-y|^2 (RMSE):");
  for (guint i = 0; i < t.objective->len; i++)
    g_string_append_printf(s, " %.5g (%.4f)", at(t.objective, i), at(t.rmse, i));
  g_test_message("%s; RMSE of the zero image %.4f", s->str, rmse0);
  g_string_free(s, TRUE);
  g_assert_cmpuint(t.objective->len, ==, 15);
  for (guint i = 1; i < t.objective->len; i++)
    g_assert_cmpfloat(at(t.objective, i), <=, at(t.objective, i - 1));
  g_assert_cmpfloat(at(t.objective, 14), <, 0.05 * at(t.objective, 0));
  g_assert_cmpfloat(at(t.rmse, 14), <, 0.7 * rmse0);
  /* the recursively updated residual is the true one: a fresh forward projection agrees */
  double fresh;
  GError *error = NULL;
  tl_ct_recon_options(r); /* (CGLS reports its recursive residual) */
  g_assert_true(tl_ct_recon_objective(r, &fresh, &error));
  g_assert_no_error(error);
  trace_clear(&t);
  case_free(c);
}

/* SIRT and OS-SART (8 subsets) for 20 iterations, and SART proper (one view per subset,
 * relaxation 0.25) for 3: the RMSE against the phantom falls. With inconsistent (analytic)
 * data ordered subsets reach their best RMSE early and then drift up a little
 * (semi-convergence), so only SIRT is held to a per-iteration decrease. */
static void test_sirt_sart(void) {
  Case *c = small_case();
  double rmse0 = rms(c->truth->data, tl_image_grid_n_voxels(&c->grid));
  static const struct {
    TlCtAlgo algo;
    guint subsets, iterations;
    float lambda;
  } runs[] = {{TL_CT_SIRT, 1, 20, 1}, {TL_CT_SART, 8, 20, 1}, {TL_CT_SART, 40, 3, 0.25f}};
  for (gsize k = 0; k < G_N_ELEMENTS(runs); k++) {
    Trace t;
    trace_init(&t, c);
    g_autoptr(TlCtRecon) r = make_relaxed(c, runs[k].algo, runs[k].subsets, runs[k].iterations,
                                          TL_CT_OBJECTIVE_ITERATION, runs[k].lambda, &t);
    run(r);
    guint S = runs[k].subsets, n = runs[k].iterations;
    g_assert_cmpuint(t.rmse->len, ==, S * n);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
      double obj = at(t.objective, (i + 1) * S - 1), e = at(t.rmse, (i + 1) * S - 1);
      g_string_append_printf(s, " %.4f/%.4g", e, obj);
      /* SIRT: per iteration, RMSE and objective fall (a little slack for float rounding) */
      if (i > 0 && S == 1) {
        g_assert_cmpfloat(e, <=, at(t.rmse, i * S - 1) * (1 + 1e-4));
        g_assert_cmpfloat(obj, <=, at(t.objective, i * S - 1) * (1 + 1e-4));
      }
    }
    g_test_message("%s S=%u RMSE/objective per iteration (zero image %.4f):%s",
                   tl_ct_algo_name(runs[k].algo), S, rmse0, s->str);
    g_string_free(s, TRUE);
    g_assert_cmpfloat(at(t.rmse, S * n - 1), <, 0.7 * rmse0);
    if (n >= 20) g_assert_cmpfloat(at(t.rmse, S * n - 1), <, 0.95 * at(t.rmse, S - 1));
    trace_clear(&t);
  }
  case_free(c);
}

static guint forward_calls(TlCtRecon *r) {
  const TlProfileEntry *e = tl_profile_lookup(tl_ct_recon_profile(r), "ct forward joseph");
  return e ? e->calls : 0;
}

static void assert_same_image(TlCtRecon *a, TlCtRecon *b) {
  GError *error = NULL;
  g_autoptr(TlImage) ia = tl_ct_recon_image(a, &error);
  g_assert_no_error(error);
  g_autoptr(TlImage) ib = tl_ct_recon_image(b, &error);
  g_assert_no_error(error);
  gsize bytes = 4 * tl_image_grid_n_voxels(&ia->grid);
  g_assert_cmpmem(ia->data, bytes, ib->data, bytes);
}

/* SIRT with the objective after every iteration: its next step takes A x from the objective's
 * forward projection instead of projecting the same image again, so an iteration costs one
 * forward and one back projection whether or not the objective is wanted; the images are the
 * same bits as without objectives. A new start image must not reuse the old projection. */
static void test_sirt_objective_reuse(void) {
  GError *error = NULL;
  Case *c = small_case();
  const guint n = 4;
  g_autoptr(TlCtRecon) quiet = make(c, TL_CT_SIRT, 1, n, TL_CT_OBJECTIVE_NEVER, NULL);
  g_autoptr(TlCtRecon) obj = make(c, TL_CT_SIRT, 1, n, TL_CT_OBJECTIVE_ITERATION, NULL);
  run(quiet);
  run(obj);
  assert_same_image(quiet, obj);
  /* row sums 1, then one per step; with objectives one more per step, less the n - 1 reused */
  g_assert_cmpuint(forward_calls(quiet), ==, 1 + n);
  g_assert_cmpuint(forward_calls(obj), ==, 2 + n);
  /* a start image replaces the projection: both continue from the phantom alike */
  g_assert_true(tl_ct_recon_set_image(quiet, c->truth, &error));
  g_assert_true(tl_ct_recon_set_image(obj, c->truth, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < 2; i++) {
    g_assert_true(tl_ct_recon_step(quiet, &error));
    g_assert_true(tl_ct_recon_step(obj, &error));
    g_assert_no_error(error);
  }
  assert_same_image(quiet, obj);
  case_free(c);
}

/* MLEM on emission-like data (y = exact line integrals, x >= 0): the Poisson
 * log-likelihood rises and the RMSE falls. */
static void test_mlem(void) {
  Case *c = small_case();
  Trace t;
  trace_init(&t, c);
  g_autoptr(TlCtRecon) r = make(c, TL_CT_MLEM, 1, 10, TL_CT_OBJECTIVE_SUBITERATION, &t);
  run(r);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < t.objective->len; i++)
    g_string_append_printf(s, " %.6g/%.4f", at(t.objective, i), at(t.rmse, i));
  g_test_message("MLEM log-likelihood/RMSE:%s", s->str);
  g_string_free(s, TRUE);
  for (guint i = 1; i < t.objective->len; i++)
    g_assert_cmpfloat(at(t.objective, i), >=, at(t.objective, i - 1) - 1e-6 * fabs(at(t.objective, i)));
  g_assert_cmpfloat(at(t.rmse, 9), <, at(t.rmse, 0));
  trace_clear(&t);
  case_free(c);
}

/* Cancelled from the callback of sub-iteration 3: the next step fails with
 * G_IO_ERROR_CANCELLED and the image stays the 3rd. CGLS then restarts from it. */
static void test_cancel(void) {
  GError *error = NULL;
  Case *c = small_case();
  for (TlCtAlgo algo = TL_CT_SART; algo <= TL_CT_CGLS; algo++) {
    Trace t;
    trace_init(&t, c);
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    t.cancel_after = cancel;
    g_autoptr(TlCtRecon) r = make(c, algo, algo == TL_CT_SART ? 4 : 1, 5,
                                  TL_CT_OBJECTIVE_NEVER, &t);
    tl_ct_recon_set_cancellable(r, cancel);
    g_assert_false(tl_ct_recon_run(r, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&error);
    g_assert_cmpuint(tl_ct_recon_sub_iterations(r), ==, 3);
    g_autoptr(TlImage) now = tl_ct_recon_image(r, &error);
    g_assert_no_error(error);
    gsize bytes = 4 * tl_image_grid_n_voxels(&c->grid);
    g_assert_cmpmem(t.third->data, bytes, now->data, bytes);
    /* resumes with a fresh cancellable */
    tl_ct_recon_set_cancellable(r, NULL);
    g_assert_true(tl_ct_recon_step(r, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(tl_ct_recon_sub_iterations(r), ==, 4);
    trace_clear(&t);
  }
  case_free(c);
}

static gpointer cancel_later(gpointer data) {
  g_usleep(20000);
  g_cancellable_cancel(data);
  return NULL;
}

/* Cancelled from another thread during a CGLS iteration cut into many small submissions. */
static void test_cancel_mid_step(void) {
  GError *error = NULL;
  Case *c = small_case();
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  g_autoptr(TlCtRecon) r = make(c, TL_CT_CGLS, 1, 5, TL_CT_OBJECTIVE_NEVER, NULL);
  tl_ct_recon_set_cancellable(r, cancel);
  g_assert_true(tl_ct_recon_step(r, &error));
  g_autoptr(TlImage) first = tl_ct_recon_image(r, &error);
  tl_ct_recon_set_submit_budget(r, 1u << 16);
  GThread *th = g_thread_new("cancel", cancel_later, cancel);
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = tl_ct_recon_step(r, &error);
  g_thread_join(th);
  g_test_message("step %s after %.3f s", ok ? "completed" : "cancelled",
                 (g_get_monotonic_time() - t0) * 1e-6);
  if (!ok) {
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_clear_error(&error);
    g_assert_cmpuint(tl_ct_recon_sub_iterations(r), ==, 1);
    g_autoptr(TlImage) now = tl_ct_recon_image(r, &error);
    gsize bytes = 4 * tl_image_grid_n_voxels(&c->grid);
    g_assert_cmpmem(first->data, bytes, now->data, bytes);
  }
  /* the same cancellable, reset: the reconstruction resumes (CGLS restarts from the image) */
  g_cancellable_reset(cancel);
  tl_ct_recon_set_submit_budget(r, 1u << 26);
  g_assert_true(tl_ct_recon_step(r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_ct_recon_sub_iterations(r), ==, ok ? 3 : 2);
  case_free(c);
}

static void test_bad_options(void) {
  GError *error = NULL;
  Case *c = case_new(8, 4.0f, 6, 16, 12, 3.0);
  TlCtReconOptions o;
  struct {
    TlCtAlgo algo;
    guint subsets;
    TlCtMethod proj;
    float lambda;
  } bad[] = {{TL_CT_SIRT, 1, TL_CT_VOXEL, 1}, {TL_CT_SART, 7, TL_CT_JOSEPH, 1},
             {TL_CT_SART, 0, TL_CT_JOSEPH, 1}, {TL_CT_CGLS, 2, TL_CT_JOSEPH, 1},
             {TL_CT_SIRT, 1, TL_CT_SIDDON, 2.5f}};
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    tl_ct_recon_options_init(&o);
    o.algo = bad[i].algo, o.subsets = bad[i].subsets, o.projector = bad[i].proj;
    o.relaxation = bad[i].lambda;
    g_assert_null(tl_ct_recon_new(ctx, c->g, &c->grid, c->dproj, &o, &error));
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
    g_test_message("%s", error->message);
    g_clear_error(&error);
  }
  tl_ct_recon_options_init(&o);
  g_autoptr(TlArray) short_proj = tl_array_new_float(ctx, 10, &error);
  g_assert_null(tl_ct_recon_new(ctx, c->g, &c->grid, short_proj, &o, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  TlCtAlgo a;
  g_assert_false(tl_ct_algo_from_name("art", &a, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  case_free(c);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/ct/recon/fdk-shepp-logan-64", test_fdk);
  g_test_add_func("/ct/recon/cgls-monotone", test_cgls);
  g_test_add_func("/ct/recon/sirt-sart", test_sirt_sart);
  g_test_add_func("/ct/recon/sirt-objective-reuse", test_sirt_objective_reuse);
  g_test_add_func("/ct/recon/mlem", test_mlem);
  g_test_add_func("/ct/recon/cancel", test_cancel);
  g_test_add_func("/ct/recon/cancel-mid-step", test_cancel_mid_step);
  g_test_add_func("/ct/recon/bad-options", test_bad_options);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
