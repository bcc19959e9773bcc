/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Races and the PETRIC metrics (recon/tl-race.h, recon/tl-metrics.h): the metrics of hand-made
 * images against a plain double loop over the mask images written here (PETRIC's formulas),
 * exact values on a case worked by hand, bad masks refused; time to target on a synthetic
 * sequence with a dip; a race of MLEM and OSEM on a CSR problem: update counts, epochs,
 * monotone times, MLEM's objective rising, the CSV, stop at target and cancel. */
#include <math.h>
#include <string.h>
#include "recon/tl-csr-operator.h"
#include "recon/tl-metrics.h"
#include "recon/tl-race.h"
#include "image/tl-phantom.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint32 rng_state = 0x2545f491u;
static float rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
  return (float)(rng_state >> 8) * 0x1p-24f;
}

/* PETRIC's metrics written out directly over mask images (no index lists) */
static double ref_region_mean(const float *im, const float *mask, guint n) {
  double s = 0, c = 0;
  for (guint i = 0; i < n; i++)
    if (mask[i] != 0) s += im[i], c++;
  return s / c;
}

static double ref_rmse(const float *x, const float *ref, const float *mask, guint n) {
  double s = 0, c = 0;
  for (guint i = 0; i < n; i++)
    if (mask[i] != 0) s += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]), c++;
  return sqrt(s / c);
}

static void test_metrics_reference(void) {
  GError *error = NULL;
  TlImageGrid g = tl_image_grid_centred(5, 4, 3, 2, 2, 2);
  guint n = 60;
  g_autoptr(TlImage) ref = tl_image_new(&g), x = tl_image_new(&g), obj = tl_image_new(&g),
                     bg = tl_image_new(&g), v1 = tl_image_new(&g), v2 = tl_image_new(&g);
  for (guint i = 0; i < n; i++) {
    ref->data[i] = 1 + 4 * rnd();
    x->data[i] = ref->data[i] * (0.9f + 0.2f * rnd());
    obj->data[i] = i % 7 != 0;
    bg->data[i] = obj->data[i] && i % 3 == 0 ? 2.0f : 0.0f; /* any non-zero value is in */
    v1->data[i] = i >= 20 && i < 26;
    v2->data[i] = i == 41;
  }
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, &error);
  g_assert_no_error(error);
  g_assert_true(tl_metrics_set_object(m, obj, &error));
  g_assert_true(tl_metrics_set_background(m, bg, &error));
  g_assert_true(tl_metrics_add_voi(m, "hot", v1, &error));
  g_assert_true(tl_metrics_add_voi(m, "one voxel", v2, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_metrics_n_values(m), ==, 4);
  g_assert_cmpstr(tl_metrics_voi_name(m, 1), ==, "one voxel");
  double norm = ref_region_mean(ref->data, bg->data, n);
  g_assert_cmpfloat(fabs(tl_metrics_norm(m) - norm), <=, 1e-12 * norm);
  double want[4] = {ref_rmse(x->data, ref->data, obj->data, n) / norm,
                    ref_rmse(x->data, ref->data, bg->data, n) / norm,
                    fabs(ref_region_mean(x->data, v1->data, n) - ref_region_mean(ref->data, v1->data, n)) / norm,
                    fabs((double)x->data[41] - ref->data[41]) / norm};
  double got[4];
  g_assert_true(tl_metrics_evaluate(m, x->data, n, got, &error));
  g_assert_no_error(error);
  for (guint k = 0; k < 4; k++) g_assert_cmpfloat(fabs(got[k] - want[k]), <=, 1e-12 * want[k]);
  g_assert_false(tl_metrics_met(m, got)); /* 10 % off everywhere */

  /* worked by hand: reference 2 everywhere; the image 2.02 on the 6 VOI voxels, 2 elsewhere.
   * norm = 2; whole object: 6 of the 52 object voxels off by 0.02 (v1's voxels 20..25 are all in
   * the object: none is a multiple of 7 except 21) */
  for (guint i = 0; i < n; i++) ref->data[i] = 2, x->data[i] = v1->data[i] ? 2.02f : 2.0f;
  g_autoptr(TlMetrics) h = tl_metrics_new(ref, &error);
  g_assert_true(tl_metrics_set_object(h, obj, &error));
  g_assert_true(tl_metrics_set_background(h, bg, &error));
  g_assert_true(tl_metrics_add_voi(h, "hot", v1, &error));
  g_assert_no_error(error);
  g_assert_true(tl_metrics_evaluate(h, x->data, n, got, &error));
  double d = (double)2.02f - 2; /* the float image's step */
  guint in_obj = 0, off = 0, bg_off = 0, bg_n = 0;
  for (guint i = 0; i < n; i++) {
    in_obj += obj->data[i] != 0, off += obj->data[i] != 0 && v1->data[i] != 0;
    bg_n += bg->data[i] != 0, bg_off += bg->data[i] != 0 && v1->data[i] != 0;
  }
  g_assert_cmpuint(in_obj, ==, 51);
  g_assert_cmpuint(off, ==, 5);
  g_assert_cmpfloat(fabs(got[0] - d * sqrt(5.0 / 51) / 2), <=, 1e-15);
  g_assert_cmpfloat(fabs(got[1] - d * sqrt((double)bg_off / bg_n) / 2), <=, 1e-15);
  g_assert_cmpfloat(fabs(got[2] - d / 2), <=, 1e-15); /* 1 %: above the VOI's 0.5 % */
  g_assert_false(tl_metrics_met(h, got));
  for (guint i = 0; i < n; i++) x->data[i] = v1->data[i] ? 2.01f : 2.0f; /* 0.5 %: met (<=)? */
  g_assert_true(tl_metrics_evaluate(h, x->data, n, got, &error));
  g_assert_cmpint(tl_metrics_met(h, got), ==, got[2] <= TL_METRICS_VOI_TARGET);

  /* a user's ROI: a sphere around voxel (2, 1, 1) of radius 1 voxel = that voxel and its 6
   * neighbours inside the image */
  double c[3];
  tl_image_grid_voxel_centre(&g, 2, 1, 1, c);
  TlRoi roi = {.kind = TL_ROI_SPHERE, .centre_mm = {c[0], c[1], c[2]}, .radius_mm = 2.0};
  g_assert_true(tl_metrics_add_roi(h, "sphere", &roi, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < n; i++) x->data[i] = 2;
  x->data[2 + 5 * (1 + 4 * 1)] = 2 + 7 * 0.5f; /* the centre voxel: mean + 0.5 over 7 voxels */
  double v4[4];
  g_assert_true(tl_metrics_evaluate(h, x->data, n, v4, &error));
  g_assert_cmpfloat(fabs(v4[3] - 0.25), <=, 1e-12);
}

/* NEMA regions: 6 sphere VOIs and a background; on the phantom's own truth (a NEMA image) the
 * background mean is the phantom's background activity and each VOI's mean the sphere's */
static void test_metrics_nema(void) {
  GError *error = NULL;
  TlImageGrid g = tl_image_grid_centred(70, 70, 30, 4, 4, 4);
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, &g, &error);
  g_assert_no_error(error);
  TlImage *t = NULL;
  g_assert_true(tl_phantom_rasterise(ph, &g, 0, &t, NULL, &error));
  g_autoptr(TlImage) truth = t;
  TlNemaLayout l;
  TlNemaOptions no;
  tl_nema_options_init(&no);
  g_assert_true(tl_nema_layout_init(&l, &g, &no, &error));
  g_autoptr(TlMetrics) m = tl_metrics_new(truth, &error);
  g_assert_true(tl_metrics_add_nema(m, &l, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_metrics_n_voi(m), ==, TL_NEMA_N_SPHERES);
  g_assert_cmpstr(tl_metrics_voi_name(m, 0), ==, "sphere 37 mm");
  /* the background ROIs lie in the uniform background: its mean is the background value */
  TlRoiStats st;
  tl_roi_stats(&l.background[0][0], truth, &st);
  g_assert_cmpfloat(fabs(tl_metrics_norm(m) - st.mean), <=, 1e-6 * st.mean);
  g_autoptr(TlImage) x = tl_image_copy(truth);
  double v[2 + TL_NEMA_N_SPHERES];
  g_assert_true(tl_metrics_evaluate(m, x->data, tl_image_grid_n_voxels(&g), v, &error));
  for (guint k = 0; k < 2 + TL_NEMA_N_SPHERES; k++) g_assert_cmpfloat(v[k], ==, 0);
  g_assert_true(tl_metrics_met(m, v));
  /* the 37 mm sphere's ROI 1 % hotter: that VOI's error is 1 % of its mean over the background
   * mean, every other VOI's 0 (the ROIs do not overlap) */
  TlRoiStats hot;
  tl_roi_stats(&l.hot[0], truth, &hot);
  g_assert_cmpfloat(hot.mean, >, 2 * st.mean); /* the sphere is hot: the ROI is inside it */
  const guint *d = g.dims;
  for (guint k = 0; k < d[2]; k++)
    for (guint j = 0; j < d[1]; j++)
      for (guint i = 0; i < d[0]; i++)
        if (tl_roi_contains(&l.hot[0], &g, i, j, k)) x->data[i + d[0] * (j + d[1] * k)] *= 1.01f;
  g_assert_true(tl_metrics_evaluate(m, x->data, tl_image_grid_n_voxels(&g), v, &error));
  g_assert_cmpfloat(fabs(v[2] - 0.01 * hot.mean / st.mean), <=, 1e-6 * v[2]);
  for (guint k = 3; k < 2 + TL_NEMA_N_SPHERES; k++) g_assert_cmpfloat(v[k], ==, 0);
  g_assert_false(tl_metrics_met(m, v));
}

static void test_metrics_bad(void) {
  GError *error = NULL;
  TlImageGrid g = tl_image_grid_centred(4, 4, 2, 1, 1, 1), g2 = tl_image_grid_centred(4, 4, 3, 1, 1, 1);
  g_autoptr(TlImage) ref = tl_image_new(&g), other = tl_image_new(&g2), empty = tl_image_new(&g),
                     bg = tl_image_new(&g);
  bg->data[3] = 1; /* the reference is 0 there */
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, &error);
  g_assert_nonnull(m);
  g_assert_false(tl_metrics_add_voi(m, "v", other, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "4x4x3"));
  g_clear_error(&error);
  g_assert_false(tl_metrics_set_object(m, empty, &error));
  g_assert_nonnull(strstr(error->message, "no voxel"));
  g_clear_error(&error);
  g_assert_false(tl_metrics_set_background(m, bg, &error));
  g_assert_nonnull(strstr(error->message, "expected > 0"));
  g_clear_error(&error);
  double v[2];
  g_assert_false(tl_metrics_evaluate(m, ref->data, 31, v, &error));
  g_assert_nonnull(strstr(error->message, "31 voxels"));
  g_clear_error(&error);
  g_assert_null(tl_metrics_new(NULL, &error));
  g_clear_error(&error);
  g_assert_cmpuint(tl_metrics_n_voi(m), ==, 0);
}

static void test_target(void) {
  /* met at 3..8 (6 in a row), a miss at 9, met from 10 on: the target is reached at the 10th
   * consecutive met evaluation (index 19), at the time of index 10; a later miss keeps it */
  TlTarget t;
  tl_target_init(&t, 10);
  for (guint i = 0; i < 30; i++) {
    gboolean met = (i >= 3 && i <= 8) || (i >= 10 && i != 24);
    gboolean reached = tl_target_push(&t, 0.5 * i, met);
    g_assert_cmpint(reached, ==, i >= 19);
    if (i < 19) g_assert_true(isnan(t.reached));
  }
  g_assert_cmpfloat(t.reached, ==, 5.0);
  /* metrics values through the thresholds, including one exactly at a threshold */
  TlImageGrid g = tl_image_grid_centred(2, 2, 1, 1, 1, 1);
  g_autoptr(TlImage) ref = tl_image_new(&g);
  for (guint i = 0; i < 4; i++) ref->data[i] = 1;
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, NULL);
  g_assert_true(tl_metrics_add_voi(m, "all", ref, NULL));
  const double seq[][3] = {{0.02, NAN, 0.001}, {0.01, NAN, 0.005}, {0.009, NAN, 0.006},
                           {0.005, NAN, 0.004}, {NAN, NAN, 0}};
  const gboolean want[] = {FALSE, TRUE, FALSE, TRUE, FALSE};
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) g_assert_cmpint(tl_metrics_met(m, seq[i]), ==, want[i]);
}

/* y = A x_true with a positive random A (consistent data: ML's solution is x_true) */
typedef struct {
  TlImageGrid grid;
  guint n, m;
  float *A, *x;
  TlArray *y;
  TlOperator *op1, *op4;
} Problem;

static void problem_init(Problem *p) {
  GError *error = NULL;
  p->grid = tl_image_grid_centred(4, 4, 2, 1, 1, 1);
  p->n = 32, p->m = 96;
  p->A = g_new(float, p->m * p->n);
  p->x = g_new(float, p->n);
  for (guint i = 0; i < p->m * p->n; i++) p->A[i] = i / p->n % p->n == i % p->n ? 1.0f : 0.05f * rnd(); /* a dominant diagonal per block of n rows: well conditioned, EM converges in tens of iterations */
  for (guint j = 0; j < p->n; j++) p->x[j] = 1 + 3 * rnd();
  float *y = g_new0(float, p->m);
  for (guint i = 0; i < p->m; i++)
    for (guint j = 0; j < p->n; j++) y[i] += p->A[i * p->n + j] * p->x[j];
  p->y = tl_array_new_float(ctx, p->m, &error);
  g_assert_true(tl_array_upload(p->y, y, &error));
  g_free(y);
  p->op1 = tl_csr_operator_new_dense(ctx, &p->grid, p->m, p->A, 1, &error);
  p->op4 = tl_csr_operator_new_dense(ctx, &p->grid, p->m, p->A, 4, &error);
  g_assert_no_error(error);
}

static void problem_clear(Problem *p) {
  tl_operator_free(p->op1);
  tl_operator_free(p->op4);
  tl_array_free(p->y);
  g_free(p->A);
  g_free(p->x);
}

static TlSolver *solver(Problem *p, const char *algo, TlOperator *op) {
  GError *error = NULL;
  TlSolverOptions o;
  tl_solver_options_init(&o);
  o.objective = TL_OBJECTIVE_NEVER;
  TlProblem pr = {.op = op, .data = p->y};
  TlSolver *sv = tl_solver_new(ctx, algo, &pr, &o, &error);
  g_assert_no_error(error);
  return sv;
}

typedef struct {
  guint calls;
  guint cancel_after;
  GCancellable *cancel;
} Seen;

static void on_record(const TlRaceRecord *r, gpointer data) {
  Seen *s = data;
  s->calls++;
  g_assert_cmpuint(r->update, >=, 1);
  if (s->cancel && s->calls == s->cancel_after) g_cancellable_cancel(s->cancel);
}

static void test_race_csr(void) {
  GError *error = NULL;
  Problem p;
  problem_init(&p);
  /* the reference: MLEM to a tolerance (ML of consistent data converges to x_true) */
  g_autoptr(TlSolver) rs = solver(&p, "mlem", p.op1);
  guint made = 0;
  double phi = NAN;
  g_assert_true(tl_race_reference(rs, 3000, 1e-9, NULL, &made, &phi, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(made, >, 1);
  g_assert_true(isfinite(phi));
  g_autoptr(TlImage) ref = tl_solver_image(rs, &error);
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, &error);
  g_assert_no_error(error);

  g_autoptr(TlSolver) mlem = solver(&p, "mlem", p.op1);
  g_autoptr(TlSolver) osem = solver(&p, "osem", p.op4);
  g_autoptr(TlRace) race = tl_race_new(m);
  g_assert_true(tl_race_add(race, "mlem", mlem, &error));
  g_assert_true(tl_race_add(race, "osem:subsets=4", osem, &error));
  g_assert_false(tl_race_add(race, "mlem", osem, &error)); /* a label twice */
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  tl_race_set_objective(race, TRUE);
  Seen seen = {0};
  tl_race_set_callback(race, on_record, &seen);
  g_assert_true(tl_race_run(race, 40, FALSE, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(seen.calls, ==, 80);
  for (guint e = 0; e < 2; e++) {
    guint S = e ? 4 : 1;
    g_assert_cmpuint(tl_race_n_records(race, e), ==, 40);
    double t = 0, obj = -INFINITY;
    for (guint k = 0; k < 40; k++) {
      const TlRaceRecord *r = tl_race_record(race, e, k);
      g_assert_cmpuint(r->entrant, ==, e);
      g_assert_cmpuint(r->update, ==, k + 1);
      g_assert_cmpfloat(r->seconds, >=, t);
      t = r->seconds;
      g_assert_cmpfloat(r->epoch, ==, (double)(k + 1) / S);
      g_assert_nonnull(r->metrics);
      g_assert_true(isfinite(r->metrics[0]) && isnan(r->metrics[1]));
      g_assert_true(isfinite(r->objective));
      if (e == 0) { /* MLEM raises the log-likelihood every iteration (float rounding aside) */
        g_assert_cmpfloat(r->objective, >=, obj - 1e-6 * fabs(obj));
        obj = r->objective;
        g_assert_cmpfloat(r->objective, <=, phi + 1e-6 * fabs(phi));
      }
    }
  }
  /* OSEM with 4 subsets reaches the 1 % target in fewer epochs than MLEM, if MLEM does */
  double eo = tl_race_epoch_to_target(race, 1), em = tl_race_epoch_to_target(race, 0);
  g_assert_false(isnan(eo));
  g_assert_true(isnan(em) || eo < em);
  g_assert_cmpfloat(tl_race_time_to_target(race, 1), ==,
                    tl_race_record(race, 1, (guint)(eo * 4) - 1)->seconds);

  g_autofree char *csv = tl_race_csv(race);
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 1 + 80 + 1); /* header, records, "" after the last \n */
  g_assert_cmpstr(lines[0], ==, "label,update,seconds,epoch,objective,rmse,background_rmse,met");
  g_assert_true(g_str_has_prefix(lines[1], "mlem,1,"));
  g_assert_true(g_str_has_prefix(lines[2], "osem:subsets=4,1,"));
  g_assert_true(g_str_has_suffix(lines[2], ",nan,0")); /* no background; not met after 1 */

  /* stop at target: the OSEM entrant stops after its target, MLEM goes on */
  g_autoptr(TlSolver) osem2 = solver(&p, "osem", p.op4);
  g_autoptr(TlRace) r2 = tl_race_new(m);
  g_assert_true(tl_race_add(r2, "osem", osem2, &error));
  g_assert_true(tl_race_run(r2, 200, TRUE, &error));
  guint reached_at = (guint)(tl_race_epoch_to_target(r2, 0) * 4) + TL_METRICS_CONSECUTIVE - 1;
  g_assert_cmpuint(tl_race_n_records(r2, 0), ==, reached_at);

  /* cancel from the callback after the 3rd record: the run stops with the 3 records */
  g_autoptr(TlSolver) a = solver(&p, "mlem", p.op1);
  g_autoptr(TlSolver) b = solver(&p, "osem", p.op4);
  g_autoptr(TlRace) r3 = tl_race_new(NULL);
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  Seen s3 = {.cancel_after = 3, .cancel = cancel};
  tl_race_set_callback(r3, on_record, &s3);
  tl_race_set_cancellable(r3, cancel);
  g_assert_true(tl_race_add(r3, "a", a, &error) && tl_race_add(r3, "b", b, &error));
  g_assert_false(tl_race_run(r3, 10, FALSE, &error));
  g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error(&error);
  g_assert_cmpuint(tl_race_n_records(r3, 0) + tl_race_n_records(r3, 1), ==, 3);
  g_assert_null(tl_race_record(r3, 0, 0)->metrics);
  g_assert_true(isnan(tl_race_time_to_target(r3, 0)));
  /* another grid than the reference's is refused */
  TlImageGrid g2 = tl_image_grid_centred(8, 4, 1, 1, 1, 1);
  g_autoptr(TlOperator) op2 = tl_csr_operator_new_dense(ctx, &g2, p.m, p.A, 1, &error);
  g_autoptr(TlSolver) c = solver(&p, "mlem", op2);
  g_assert_false(tl_race_add(race, "other grid", c, &error));
  g_assert_nonnull(strstr(error->message, "8x4x1"));
  g_clear_error(&error);
  g_clear_pointer(&a, tl_solver_free);
  g_clear_pointer(&b, tl_solver_free);
  g_clear_pointer(&c, tl_solver_free);
  g_clear_pointer(&osem2, tl_solver_free);
  g_clear_pointer(&mlem, tl_solver_free);
  g_clear_pointer(&osem, tl_solver_free);
  g_clear_pointer(&rs, tl_solver_free);
  g_clear_pointer(&op2, tl_operator_free);
  problem_clear(&p);
}

/* The race's epochs are data passes (tl_solver_data_passes): SVRG's full gradient is one, each
 * of its subset steps two subset gradients (2/S); an OSEM warm-up's steps 1/S each. The
 * warm-up then the algorithm (TlSolverOptions.warm_epochs) is bit for bit the algorithm
 * started from the OSEM image, and rdp's automatic epsilon is 1e-3 x that image's maximum. */
static TlSolver *map_solver(Problem *p, const char *algo, guint warm, double epsilon) {
  GError *error = NULL;
  TlSolverOptions o;
  tl_solver_options_init(&o);
  o.objective = TL_OBJECTIVE_NEVER;
  o.prior = "rdp";
  o.beta = 0.01;
  o.prior_params.epsilon = epsilon;
  o.warm_epochs = warm;
  TlProblem pr = {.op = p->op4, .data = p->y};
  TlSolver *sv = tl_solver_new(ctx, algo, &pr, &o, &error);
  g_assert_no_error(error);
  return sv;
}

static float image_max(TlSolver *sv) {
  g_autoptr(TlImage) im = tl_solver_image(sv, NULL);
  float m = 0;
  for (guint64 i = 0; i < tl_image_grid_n_voxels(&im->grid); i++) m = MAX(m, im->data[i]);
  return m;
}

static void test_race_passes(void) {
  GError *error = NULL;
  Problem p;
  problem_init(&p);
  g_autoptr(TlSolver) svrg = map_solver(&p, "svrg", 0, 1e-3);
  g_autoptr(TlSolver) bsrem = map_solver(&p, "bsrem", 1, NAN);
  g_autoptr(TlRace) race = tl_race_new(NULL);
  g_assert_true(tl_race_add(race, "svrg", svrg, &error) && tl_race_add(race, "osem+bsrem", bsrem, &error));
  g_assert_true(tl_race_run(race, 9, FALSE, &error));
  g_assert_no_error(error);
  /* svrg, S = 4: a first full-gradient step (1), then the anchor's (1 and Phi's forward
   * projection for the epoch check: 1.5) and again at epoch 2 (every second), else 2 subset
   * gradients (2/4), each epoch's first with the check's 1/2 */
  const double want[] = {1, 2.5, 3, 3.5, 4.5, 5, 5.5, 6, 7.5};
  for (guint k = 0; k < 9; k++) {
    g_assert_cmpfloat_with_epsilon(tl_race_record(race, 0, k)->epoch, want[k], 1e-12);
    g_assert_cmpfloat_with_epsilon(tl_race_record(race, 1, k)->epoch, (k + 1) / 4.0, 1e-12);
  }

  /* warm-up + bsrem against osem for one epoch, then bsrem from its image */
  g_autoptr(TlSolver) osem = solver(&p, "osem", p.op4);
  g_autoptr(TlSolver) warm = map_solver(&p, "bsrem", 1, NAN);
  for (guint k = 0; k < 4; k++) {
    g_assert_true(tl_solver_step(osem, &error) && tl_solver_step(warm, &error));
    g_assert_true(isnan(tl_solver_epsilon(warm)));
  }
  g_autoptr(TlImage) xo = tl_solver_image(osem, &error);
  g_autoptr(TlImage) xw = tl_solver_image(warm, &error);
  g_assert_cmpmem(xo->data, 32 * sizeof(float), xw->data, 32 * sizeof(float));
  double eps = 1e-3 * image_max(osem);
  g_autoptr(TlSolver) cold = map_solver(&p, "bsrem", 0, eps);
  g_assert_true(tl_solver_set_image(cold, xo, &error));
  g_assert_true(tl_solver_step(cold, &error) && tl_solver_step(warm, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(tl_solver_epsilon(warm), ==, eps);
  g_autoptr(TlImage) yc = tl_solver_image(cold, &error);
  g_autoptr(TlImage) yw = tl_solver_image(warm, &error);
  g_assert_cmpmem(yc->data, 32 * sizeof(float), yw->data, 32 * sizeof(float));
  g_assert_cmpuint(tl_solver_sub_iterations(warm), ==, 5);

  /* no warm-up: the automatic epsilon comes from one OSEM epoch (counted: 1 pass) and leaves
   * the start image as it was: the first step is that of a solver given epsilon */
  g_autoptr(TlSolver) a = map_solver(&p, "svrg", 0, NAN);
  g_autoptr(TlSolver) b = map_solver(&p, "svrg", 0, eps);
  g_assert_true(tl_solver_step(a, &error) && tl_solver_step(b, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(tl_solver_epsilon(a), ==, eps);
  g_assert_cmpfloat_with_epsilon(tl_solver_data_passes(a), 2.0, 1e-12);
  g_assert_cmpfloat_with_epsilon(tl_solver_data_passes(b), 1.0, 1e-12);
  g_autoptr(TlImage) ia = tl_solver_image(a, &error);
  g_autoptr(TlImage) ib = tl_solver_image(b, &error);
  g_assert_cmpmem(ia->data, 32 * sizeof(float), ib->data, 32 * sizeof(float));
  g_clear_pointer(&a, tl_solver_free);
  g_clear_pointer(&b, tl_solver_free);
  g_clear_pointer(&cold, tl_solver_free);
  g_clear_pointer(&warm, tl_solver_free);
  g_clear_pointer(&osem, tl_solver_free);
  g_clear_pointer(&svrg, tl_solver_free);
  g_clear_pointer(&bsrem, tl_solver_free);
  problem_clear(&p);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/race/metrics-reference", test_metrics_reference);
  g_test_add_func("/race/metrics-nema", test_metrics_nema);
  g_test_add_func("/race/metrics-bad", test_metrics_bad);
  g_test_add_func("/race/target", test_target);
  g_test_add_func("/race/csr", test_race_csr);
  g_test_add_func("/race/passes", test_race_passes);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
