/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET operators (pet/tl-pet-operator.h) as TlOperator: for list mode and bins, Siddon,
 * Joseph and TOR, with and without attenuation D, with and without TOF (list mode), subset by
 * subset on views of whole data vectors: the regrouping of the records, D = exp(-A mu) and the
 * forward projection against the plain C reference (tests/pet-ref.c), adjointness of D A,
 * the fused EM pass against the explicit forward / ratio / adjoint, its log-likelihood
 * partials against sum m log ybar from a separate projection (and tl_projector_loglik), the
 * sensitivity images against the reference's sum over every allowed pair, the counts, and
 * bad input. */
#include <math.h>
#include <string.h>
#include "pet-fixture.h"
#include "pet-ref.h"
#include "pet/tl-pet-operator.h"
#include "recon/tl-solver.h"

static TlContext *ctx;

#define C_MM_PER_PS 0.299792458
#define S 3
#define N_EVENTS 3000
#define TOF_SIGMA_MM 8.0
#define TOF_BIN_MM 8.0

/* 3 rings of an octagon (4 crystals of 4 mm a side, apothem 40 mm) with 25 TOF bins of 8 mm
 * and a timing resolution giving sigma 8 mm along the LOR. */
static TlScanner *scanner(void) {
  TlScanner *fx = fx_ring_scanner(3, 8, 4, 4.0f, 40.0f, 12.0f, 2);
  TlScanner *s = tl_scanner_copy(fx);
  fx_scanner_free(fx);
  s->tof_bins = 25;
  s->tof_bin_mm = (float)TOF_BIN_MM;
  s->tof_fwhm_ps = (float)(TOF_SIGMA_MM * 2 * sqrt(2 * G_LN2) * 2 / C_MM_PER_PS);
  return s;
}

/* 20 x 16 x 12 voxels of 2 x 2 x 2.5 mm inside the ring (anisotropic on purpose). */
static TlImageGrid grid(void) { return fx_grid(20, 16, 12, 2.0f, 2.0f, 2.5f); }

/* N_EVENTS events on random allowed pairs with TOF bins mostly within +-5 bins. */
static TlListmode *listmode(void) {
  TlListmode *lm = tl_listmode_new(scanner(), N_EVENTS);
  lm->has_tof = TRUE;
  g_autoptr(GRand) r = g_rand_new_with_seed(21);
  const TlScanner *sc = lm->scanner;
  for (guint i = 0; i < N_EVENTS; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, sc->n_crystals);
      e->b = g_rand_int_range(r, 0, sc->n_crystals);
    } while (!tl_scanner_pair_allowed(sc, e->a, e->b));
    e->tof_bin = g_rand_int_range(r, i % 5 ? -5 : -12, i % 5 ? 6 : 13);
  }
  return lm;
}

/* The histogram of the events with random counts 0..4 (zeros included on purpose). */
static GArray *bins_of(const TlListmode *lm) {
  GArray *bins = tl_listmode_histogram(lm);
  g_autoptr(GRand) r = g_rand_new_with_seed(22);
  for (guint i = 0; i < bins->len; i++)
    g_array_index(bins, TlBin, i).count = (float)g_rand_int_range(r, 0, 5);
  return bins;
}

static TlImage *mu_map(const TlImageGrid *g) {
  TlImage *mu = tl_image_new(g);
  g_autofree float *v = fx_random_floats(fx_voxels(g), 23, 0.0, 0.02);
  memcpy(mu->data, v, fx_voxels(g) * sizeof(float));
  return mu;
}

typedef struct {
  gboolean binned;
  const char *projector;
  gboolean atten, tof;
} Case;

static TlRefModel ref_model(const Case *c, const TlRefTof *tof) {
  TlRefKind k = g_str_equal(c->projector, "siddon")   ? TL_REF_SIDDON
                : g_str_equal(c->projector, "joseph") ? TL_REF_JOSEPH
                                                      : TL_REF_TOR;
  return (TlRefModel){.kind = k, .tor_fwhm_mm = TL_TOR_FWHM_DEFAULT, .tof = tof};
}

static void ends(const TlScanner *sc, guint a, guint b, double p0[3], double p1[3]) {
  for (int k = 0; k < 3; k++) {
    p0[k] = sc->crystals[a].centre[k];
    p1[k] = sc->crystals[b].centre[k];
  }
}

static int cmp_u64(const void *a, const void *b) {
  guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
  return (x > y) - (x < y);
}

static guint64 event_key(const TlEvent *e) {
  return ((guint64)e->a << 40) | ((guint64)e->b << 16) | (guint64)(e->tof_bin + 1000);
}

/* An event as the operator stores it: b = a + d (mod n) with d < n/2, or d = n/2 and a < b
 * (the orientation the sensitivity traces each pair in); swapped crystals mirror the TOF bin. */
static guint64 stored_key(const TlEvent *e, guint n) {
  guint d = (e->b + n - e->a) % n;
  if (2 * d < n || (2 * d == n && e->a < e->b)) return event_key(e);
  TlEvent t = {e->b, e->a, -e->tof_bin};
  return event_key(&t);
}

/* The stored records are the promised partition: list mode subset s holds exactly the events
 * j = s mod S (each in its pair's stored orientation); binned subset s the bins with pair index = s mod S, ascending. */
static void check_records(const Case *c, const TlOperator *op, const TlListmode *lm,
                          const GArray *bins, const TlEvent *rec) {
  guint n = lm->scanner->n_crystals;
  if (c->binned) { /* the same bins: (pair, count) as multisets */
    guint64 nb = bins->len;
    g_autofree guint64 *want = g_new(guint64, nb), *got = g_new(guint64, nb);
    const TlBin *in = (const TlBin *)bins->data, *out = (const TlBin *)rec;
    for (guint64 i = 0; i < nb; i++) {
      want[i] = tl_pair_index(n, in[i].a, in[i].b) << 8 | (guint64)in[i].count;
      got[i] = tl_pair_index(n, out[i].a, out[i].b) << 8 | (guint64)out[i].count;
    }
    qsort(want, nb, sizeof *want, cmp_u64);
    qsort(got, nb, sizeof *got, cmp_u64);
    g_assert_cmpmem(want, nb * sizeof *want, got, nb * sizeof *got);
  }
  for (guint s = 0; s < S; s++) {
    guint64 first = tl_operator_subset_first(op, s), len = tl_operator_subset_length(op, s);
    if (c->binned) {
      for (guint64 i = first; i < first + len; i++) {
        guint64 p = tl_pair_index(n, rec[i].a, rec[i].b);
        g_assert_cmpuint(p % S, ==, s);
        if (i > first) g_assert_cmpuint(p, >, tl_pair_index(n, rec[i - 1].a, rec[i - 1].b));
      }
      continue;
    }
    g_autofree guint64 *want = g_new(guint64, len), *got = g_new(guint64, len);
    guint64 m = 0;
    for (guint64 j = s; j < lm->n_events; j += S) want[m++] = stored_key(&lm->events[j], n);
    g_assert_cmpuint(m, ==, len);
    for (guint64 i = 0; i < len; i++) got[i] = event_key(&rec[first + i]);
    qsort(want, len, sizeof *want, cmp_u64);
    qsort(got, len, sizeof *got, cmp_u64);
    g_assert_cmpmem(want, len * sizeof *want, got, len * sizeof *got);
  }
  g_assert_cmpuint(tl_operator_n_data(op), ==, c->binned ? bins->len : lm->n_events);
}

static double rel_max(const float *a, const double *ref, guint64 n) {
  double e = 0;
  for (guint64 i = 0; i < n; i++) e = MAX(e, fabs(a[i] - ref[i]));
  double m = fx_max_abs(ref, n);
  g_assert_cmpfloat(m, >, 0);
  return e / m;
}

static void test_case(gconstpointer data) {
  const Case *c = data;
  GError *error = NULL;
  TlImageGrid g = grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(GArray) bins = bins_of(lm);
  g_autoptr(TlImage) mu = mu_map(&g);
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = c->projector;
  o.subsets = S;
  o.tof = c->tof;
  o.tof_n_sigma = 3.0;
  o.attenuation = c->atten ? mu : NULL;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) op =
      c->binned ? tl_pet_operator_new_binned(ctx, lm->scanner, (TlBin *)bins->data, bins->len,
                                             &g, &o, &error)
                : tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_true(tl_is_pet_operator(op));
  g_assert_cmpuint(tl_operator_n_subsets(op), ==, S);
  g_assert_cmpint(tl_operator_is_listmode(op), ==, !c->binned);
  g_assert_true(tl_operator_has_em(op) && tl_operator_has_counts(op));
  g_assert_true((tl_operator_diag(op) != NULL) == c->atten);
  const TlScanner *sc = tl_pet_operator_scanner(op);
  guint64 nd = tl_operator_n_data(op);

  TlLors all = tl_pet_operator_lors(op, G_MAXUINT);
  g_autofree TlEvent *rec = g_new(TlEvent, nd); /* TlBin has the same 12-byte layout */
  g_assert_true(tl_array_download(all.records, rec, &error));
  check_records(c, op, lm, bins, rec);

  /* the reference: d_j = exp(-A mu) along the whole LOR and a_j = (A x)_j with TOF */
  g_autofree float *x = fx_random_floats(nv, 24, 0, 1);
  for (guint64 n = 0; n < nv; n += 7) x[n] = 0; /* some zero voxels */
  g_autofree float *w = fx_random_floats(nd, 25, 0, 1);
  g_autofree double *rd = g_new(double, nd), *ry = g_new(double, nd);
  for (guint64 i = 0; i < nd; i++) {
    double p0[3], p1[3];
    ends(sc, rec[i].a, rec[i].b, p0, p1);
    TlRefTof rt = {TOF_SIGMA_MM, TOF_BIN_MM, 3.0, rec[i].tof_bin};
    TlRefModel plain = ref_model(c, NULL), m = ref_model(c, c->tof ? &rt : NULL);
    rd[i] = c->atten ? exp(-tl_ref_forward_model(&plain, &g, p0, p1, mu->data)) : 1.0;
    ry[i] = rd[i] * tl_ref_forward_model(&m, &g, p0, p1, x);
  }
  if (c->atten) {
    g_autofree float *d = fx_download(tl_operator_diag(op));
    double e = 0;
    for (guint64 i = 0; i < nd; i++) e = MAX(e, fabs(d[i] - rd[i]) / rd[i]);
    g_test_message("D = exp(-A mu): max relative error %.3g", e);
    g_assert_cmpfloat(e, <=, 1e-5);
  }

  /* whole data vectors; each subset works on views of them */
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) dw = fx_upload(ctx, w, nd, 4);
  g_autoptr(TlArray) dy = tl_array_new_float(ctx, nd, &error);
  g_autoptr(TlArray) dm = tl_array_new_float(ctx, nd, &error);
  g_assert_no_error(error);
  tl_stream_set_submit_budget(st, 1 << 20); /* several submissions per call */
  g_assert_true(tl_operator_counts(op, st, dm, &error));
  TlArray *dz[S], *dc[S], *de[S], *dp[S];
  for (guint s = 0; s < S; s++) {
    g_autoptr(TlArray) yv = tl_array_new_view(dy, tl_operator_subset_first(op, s),
                                              tl_operator_subset_length(op, s), &error);
    g_autoptr(TlArray) wv = tl_array_new_view(dw, tl_operator_subset_first(op, s),
                                              tl_operator_subset_length(op, s), &error);
    dz[s] = tl_array_new_float(ctx, nv, &error);
    dc[s] = tl_array_new_float(ctx, nv, &error);
    de[s] = tl_array_new_float(ctx, nv, &error);
    guint64 np = tl_operator_em_partials(op, s);
    g_assert_cmpuint(np, >, 0);
    dp[s] = tl_array_new_float(ctx, np, &error);
    g_assert_no_error(error);
    g_assert_true(tl_stream_zero(st, dz[s], &error) && tl_stream_zero(st, dc[s], &error) &&
                  tl_stream_zero(st, de[s], &error));
    g_assert_true(tl_operator_forward(op, st, s, dx, yv, &error));
    g_assert_true(tl_operator_adjoint(op, st, s, wv, dz[s], &error));
    g_assert_true(tl_operator_em(op, st, s, dx, dc[s], dp[s], &error));
    g_assert_no_error(error);
  }
  g_assert_true(tl_stream_finish(st, &error));
  g_autofree float *y = fx_download(dy), *m = fx_download(dm);

  /* counts: 1 per event; the bins' own counts in the stored order */
  const TlBin *rb = (const TlBin *)rec;
  double total = 0;
  for (guint64 i = 0; i < nd; i++) {
    g_assert_cmpfloat(m[i], ==, c->binned ? rb[i].count : 1.0f);
    total += m[i];
  }
  g_assert_cmpfloat(total, ==, tl_pet_operator_total_counts(op));

  /* the explicit EM path: r = m / ybar where ybar > 0 (host), then A^T D r */
  g_autofree float *r = g_new0(float, nd);
  for (guint64 i = 0; i < nd; i++) r[i] = y[i] > 0 && m[i] != 0 ? m[i] / y[i] : 0.0f;
  g_autoptr(TlArray) dr = fx_upload(ctx, r, nd, 4);
  for (guint s = 0; s < S; s++) {
    g_autoptr(TlArray) rv = tl_array_new_view(dr, tl_operator_subset_first(op, s),
                                              tl_operator_subset_length(op, s), &error);
    g_assert_true(tl_operator_adjoint(op, st, s, rv, de[s], &error));
  }
  g_assert_true(tl_stream_finish(st, &error));
  g_assert_no_error(error);

  double ef = rel_max(y, ry, nd);
  g_test_message("%s: forward vs reference %.3g", tl_operator_label(op), ef);
  g_assert_cmpfloat(ef, <=, 1e-5);
  for (guint s = 0; s < S; s++) {
    guint64 f = tl_operator_subset_first(op, s), len = tl_operator_subset_length(op, s);
    g_autofree float *z = fx_download(dz[s]), *cc = fx_download(dc[s]), *ce = fx_download(de[s]);
    g_autofree float *part = fx_download(dp[s]);
    /* <D A x, w> = <x, A^T D w> */
    double axw = 0, xatw = 0;
    for (guint64 i = f; i < f + len; i++) axw += (double)y[i] * w[i];
    xatw = fx_dot(x, z, nv);
    /* em = the explicit path */
    g_autofree double *ced = g_new(double, nv);
    for (guint64 n = 0; n < nv; n++) ced[n] = ce[n];
    double eem = rel_max(cc, ced, nv);
    /* log-likelihood: partials of the pass, sum m log ybar from the forward, and the
     * projector's own log-likelihood kernel */
    double ll_pass = 0, ll_fwd = 0, ll_proj = 0;
    for (guint64 k = 0; k < tl_operator_em_partials(op, s); k++) ll_pass += part[k];
    for (guint64 i = f; i < f + len; i++)
      if (m[i] != 0) ll_fwd += m[i] * log(MAX((double)y[i], 1e-30)); /* floored as the solver */
    TlLors l = tl_pet_operator_lors(op, s);
    g_assert_true(tl_projector_loglik(tl_pet_operator_projector(op), st, &l, dx, &ll_proj,
                                      &error));
    g_assert_no_error(error);
    g_test_message("subset %u (%" G_GUINT64_FORMAT " data): <DAx,w> %.9g <x,A'Dw> %.9g; em vs "
                   "explicit %.3g; loglik pass %.9g forward %.9g kernel %.9g",
                   s, len, axw, xatw, eem, ll_pass, ll_fwd, ll_proj);
    g_assert_cmpfloat(fabs(axw), >, 0);
    g_assert_cmpfloat(fabs(axw - xatw), <=, 1e-5 * fabs(axw));
    g_assert_cmpfloat(eem, <=, 1e-5);
    g_assert_cmpfloat(fabs(ll_fwd), >, 0);
    g_assert_cmpfloat(fabs(ll_pass - ll_fwd), <=, 1e-5 * fabs(ll_fwd));
    g_assert_cmpfloat(fabs(ll_pass - ll_proj), <=, 1e-5 * fabs(ll_fwd));
  }
  for (guint s = 0; s < S; s++) {
    tl_array_free(dz[s]);
    tl_array_free(dc[s]);
    tl_array_free(de[s]);
    tl_array_free(dp[s]);
  }
}

/* Sensitivity images against the reference sum over every allowed pair p of d_p a_p
 * (d_p = exp(-A mu) with a mu-map, van Gendt et al. 2021 eq. 7): list mode s / S for every subset;
 * binned
 * each subset's own pairs (p mod S), which add up to the all-pairs image. */
static void test_sensitivity(gconstpointer data) {
  const Case *c = data;
  GError *error = NULL;
  TlImageGrid g = grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(GArray) bins = bins_of(lm);
  g_autoptr(TlImage) mu = mu_map(&g);
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = c->projector;
  o.subsets = S;
  o.attenuation = c->atten ? mu : NULL;
  g_autoptr(TlOperator) op =
      c->binned ? tl_pet_operator_new_binned(ctx, lm->scanner, (TlBin *)bins->data, bins->len,
                                             &g, &o, &error)
                : tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  const TlScanner *sc = lm->scanner;
  guint n = sc->n_crystals;
  TlRefModel model = ref_model(c, NULL);
  g_autofree double *ref = g_new0(double, (S + 1) * nv); /* subsets, then all */
  for (guint a = 0; a < n; a++)
    for (guint b = a + 1; b < n; b++) {
      if (!fx_pair_allowed(sc, a, b)) continue;
      double p0[3], p1[3];
      ends(sc, a, b, p0, p1);
      double d = c->atten ? exp(-tl_ref_forward_model(&model, &g, p0, p1, mu->data)) : 1.0;
      guint s = (guint)(tl_pair_index(n, a, b) % S);
      tl_ref_back_model(&model, &g, p0, p1, d, ref + s * nv);
      tl_ref_back_model(&model, &g, p0, p1, d, ref + S * nv);
    }
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) out = tl_array_new_float(ctx, nv, &error);
  g_assert_no_error(error);
  g_autofree double *sum = g_new0(double, nv), *scaled = g_new(double, nv);
  for (guint s = 0; s < S; s++) {
    g_assert_true(tl_operator_sensitivity(op, st, s, out, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    g_autofree float *h = fx_download(out);
    for (guint64 v = 0; v < nv; v++) sum[v] += h[v];
    double e;
    if (c->binned) {
      e = rel_max(h, ref + s * nv, nv);
    } else {
      for (guint64 v = 0; v < nv; v++) scaled[v] = ref[S * nv + v] / S;
      e = rel_max(h, scaled, nv);
    }
    g_test_message("%s subset %u: sensitivity vs reference %.3g", tl_operator_label(op), s, e);
    g_assert_cmpfloat(e, <=, 1e-5);
  }
  double es = 0, ms = fx_max_abs(ref + S * nv, nv);
  for (guint64 v = 0; v < nv; v++) es = MAX(es, fabs(sum[v] - ref[S * nv + v]));
  g_test_message("sum over subsets vs all pairs %.3g", es / ms);
  g_assert_cmpfloat(es, <=, 1e-5 * ms);

  /* the same operator again finds every image in the disk cache */
  g_autoptr(TlOperator) again =
      c->binned ? tl_pet_operator_new_binned(ctx, lm->scanner, (TlBin *)bins->data, bins->len,
                                             &g, &o, &error)
                : tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_assert_false(tl_pet_operator_sensitivity_cached(again)); /* none made yet */
  for (guint s = 0; s < S; s++) g_assert_true(tl_operator_sensitivity(again, st, s, out, &error));
  g_assert_true(tl_stream_finish(st, &error));
  g_assert_no_error(error);
  g_assert_true(tl_pet_operator_sensitivity_cached(again));
}

/* The compare-and-swap kernel (pet_em_cas, built without the float-atomic capability, what
 * devices lacking it run) gives the float-atomic pass's correction image and log-likelihood. */
static void test_em_cas(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(GArray) bins = bins_of(lm);
  g_autoptr(TlImage) mu = mu_map(&g);
  g_autofree float *x = fx_random_floats(nv, 26, 0, 1);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = "joseph";
  o.subsets = S;
  o.attenuation = mu;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) fa = tl_pet_operator_new_binned(ctx, lm->scanner, (TlBin *)bins->data,
                                                        bins->len, &g, &o, &error);
  o.scatter = TL_SCATTER_CAS_PORTABLE;
  g_autoptr(TlOperator) cas = tl_pet_operator_new_binned(ctx, lm->scanner, (TlBin *)bins->data,
                                                         bins->len, &g, &o, &error);
  g_assert_no_error(error);
  for (guint s = 0; s < S; s++) {
    guint64 np = tl_operator_em_partials(fa, s);
    g_assert_cmpuint(np, ==, tl_operator_em_partials(cas, s));
    g_autoptr(TlArray) c1 = tl_array_new_float(ctx, nv, &error);
    g_autoptr(TlArray) c2 = tl_array_new_float(ctx, nv, &error);
    g_autoptr(TlArray) p1 = tl_array_new_float(ctx, np, &error);
    g_autoptr(TlArray) p2 = tl_array_new_float(ctx, np, &error);
    g_assert_true(tl_stream_zero(st, c1, &error) && tl_stream_zero(st, c2, &error));
    g_assert_true(tl_operator_em(fa, st, s, dx, c1, p1, &error));
    g_assert_true(tl_operator_em(cas, st, s, dx, c2, p2, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    g_autofree float *h1 = fx_download(c1), *h2 = fx_download(c2);
    g_autofree float *q1 = fx_download(p1), *q2 = fx_download(p2);
    g_autofree double *r1 = g_new(double, nv);
    for (guint64 n = 0; n < nv; n++) r1[n] = h1[n];
    double l1 = 0, l2 = 0;
    for (guint64 k = 0; k < np; k++) l1 += q1[k], l2 += q2[k];
    double e = rel_max(h2, r1, nv);
    g_test_message("subset %u: CAS vs float atomics %.3g; loglik %.9g vs %.9g", s, e, l2, l1);
    g_assert_cmpfloat(e, <=, 1e-5);
    g_assert_cmpfloat(fabs(l1), >, 0);
    g_assert_cmpfloat(l2, ==, l1); /* the same forward values, summed in the same order */
  }
}

/* More subsets than bins: the empty subsets take empty views, and their EM pass writes a
 * log-likelihood of 0 into its one partial sum and nothing into the correction image. */
static void test_empty_subset(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  guint64 nv = fx_voxels(&g);
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(GArray) bins = bins_of(lm);
  /* two bins whose LORs cross the image */
  TlBin two[2];
  guint got = 0;
  g_autoptr(TlImage) ones = tl_image_new(&g);
  for (guint64 n = 0; n < nv; n++) ones->data[n] = 1;
  for (guint i = 0; i < bins->len && got < 2; i++) {
    TlBin b = g_array_index(bins, TlBin, i);
    double p0[3], p1[3];
    ends(lm->scanner, b.a, b.b, p0, p1);
    if (tl_ref_forward(TL_REF_SIDDON, &g, p0, p1, ones->data) > 1.0) two[got++] = b;
  }
  g_assert_cmpuint(got, ==, 2);
  two[0].count = two[1].count = 2;
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.subsets = 7;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) op = tl_pet_operator_new_binned(ctx, lm->scanner, two, 2, &g, &o, &error);
  g_assert_no_error(error);
  g_autofree float *x = fx_random_floats(nv, 27, 0.5, 1);
  g_autoptr(TlArray) dx = fx_upload(ctx, x, nv, 4);
  g_autoptr(TlArray) c = tl_array_new_float(ctx, nv, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, 2, &error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  guint empty = 0;
  double ll = 0;
  for (guint s = 0; s < 7; s++) {
    guint64 np = tl_operator_em_partials(op, s);
    g_assert_cmpuint(np, >=, 1);
    g_autofree float *junk = g_new(float, np);
    for (guint64 k = 0; k < np; k++) junk[k] = 123.0f;
    g_autoptr(TlArray) part = fx_upload(ctx, junk, np, 4);
    g_autoptr(TlArray) yv = tl_array_new_view(y, 0, tl_operator_subset_length(op, s), &error);
    g_assert_true(tl_stream_zero(st, c, &error));
    g_assert_true(tl_operator_forward(op, st, s, dx, yv, &error));
    g_assert_true(tl_operator_em(op, st, s, dx, c, part, &error));
    g_assert_true(tl_stream_finish(st, &error));
    g_assert_no_error(error);
    g_autofree float *hp = fx_download(part), *hc = fx_download(c);
    double sum = 0, csum = 0;
    for (guint64 k = 0; k < np; k++) sum += hp[k];
    for (guint64 n = 0; n < nv; n++) csum += hc[n];
    if (tl_operator_subset_length(op, s) == 0) {
      empty++;
      g_assert_cmpfloat(sum, ==, 0);
      g_assert_cmpfloat(csum, ==, 0);
    } else {
      g_assert_cmpfloat(csum, >, 0);
      ll += sum;
    }
  }
  g_assert_cmpuint(empty, >=, 5);
  g_assert_cmpfloat(ll, !=, 0);
}

#define REFUSE(call)                                          \
  do {                                                        \
    g_assert_null(call);                                      \
    g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);    \
    g_test_message("refused: %s", error->message);            \
    g_clear_error(&error);                                    \
  } while (0)

static void test_bad_input(void) {
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlListmode) lm = listmode();
  g_autoptr(GArray) bins = bins_of(lm);
  const TlBin *b = (const TlBin *)bins->data;
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.use_cache = FALSE;

  o.projector = "pixel-driven";
  REFUSE(tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error));
  o.projector = "siddon";
  o.subsets = 0;
  REFUSE(tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error));
  o.subsets = 1001;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, b, bins->len, &g, &o, &error));
  o.subsets = 2;
  o.tof = TRUE;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, b, bins->len, &g, &o, &error));
  lm->has_tof = FALSE;
  for (guint64 i = 0; i < lm->n_events; i++) lm->events[i].tof_bin = 0;
  REFUSE(tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error));
  o.tof = FALSE;
  REFUSE(tl_pet_operator_new_listmode(ctx, NULL, &g, &o, &error));

  /* mu-maps: another grid, cm^-1 units, NaN */
  TlImageGrid g2 = fx_grid(10, 16, 12, 2.0f, 2.0f, 2.5f);
  g_autoptr(TlImage) mu_other = tl_image_new(&g2);
  o.attenuation = mu_other;
  REFUSE(tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error));
  g_autoptr(TlImage) mu = tl_image_new(&g);
  mu->data[5] = 0.096f;
  o.attenuation = mu;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, b, bins->len, &g, &o, &error));
  mu->data[5] = NAN;
  REFUSE(tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error));
  o.attenuation = NULL;

  /* bins: a pair in one group, a negative count, no counts at all */
  g_autofree TlBin *bad = g_memdup2(b, bins->len * sizeof(TlBin));
  bad[3].b = bad[3].a;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, bad, bins->len, &g, &o, &error));
  bad[3] = b[3];
  bad[4].count = -1;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, bad, bins->len, &g, &o, &error));
  for (guint i = 0; i < bins->len; i++) bad[i].count = 0;
  REFUSE(tl_pet_operator_new_binned(ctx, lm->scanner, bad, bins->len, &g, &o, &error));

  /* calls: too short partial sums, a data array of the wrong length, a subset past S */
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  g_autoptr(TlStream) st = tl_stream_new(ctx, &error);
  g_autoptr(TlArray) x = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlArray) cc = tl_array_new_float(ctx, fx_voxels(&g), &error);
  g_autoptr(TlArray) part = tl_array_new_float(ctx, tl_operator_em_partials(op, 0) - 1, &error);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, tl_operator_subset_length(op, 0) + 1, &error);
  g_assert_no_error(error);
  g_assert_false(tl_operator_em(op, st, 0, x, cc, part, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_operator_forward(op, st, 0, x, y, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_false(tl_operator_sensitivity(op, st, 2, cc, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_true(tl_stream_finish(st, &error));
}

/* The kernels a run calls, from its configured path (tl_solver_check_kernel, what the kernel
 * editor, recon --kernel and Python's Solver.set_kernel refuse by), against what a
 * sub-iteration really ran (its profile's built-in kernels): each kernel that ran passes the
 * check; of the PET projection kernels, those that did not run are refused with the message
 * naming what runs (issue 32). Except pet_em for Joseph's plane path: its edit replaces the
 * path. OSEM without (the EM pass) and with an additive term (forward and back projections
 * apart), each projector, TOF or not. */
static void test_kernels_called(void) {
  static const char *const projection[] = {"pet_forward", "pet_back", "pet_back_cas", "pet_em",
                                           "pet_em_cas", "pet_em_rec", "pet_back_slabs",
                                           "pet_pairs", NULL};
  static const char *const projectors[] = {"siddon", "joseph", "tor"};
  GError *error = NULL;
  TlImageGrid g = grid();
  g_autoptr(TlListmode) lm = listmode();
  for (guint k = 0; k < G_N_ELEMENTS(projectors) * 4; k++) {
    /* odd k: an additive term (randoms), so the EM step projects forward and back apart */
    gboolean additive = k % 2;
    const char *algo = "osem";
    gboolean tof = (k / 2) % 2;
    TlPetOperatorOptions o;
    tl_pet_operator_options_init(&o);
    o.projector = projectors[k / 4];
    o.subsets = S;
    o.tof = tof;
    o.tof_n_sigma = 3.0;
    o.use_cache = FALSE;
    g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
    g_assert_no_error(error);
    guint64 nd = tl_operator_n_data(op);
    g_autofree float *a = fx_random_floats(nd, 31, 0.01, 0.1);
    g_autoptr(TlArray) da = additive ? fx_upload(ctx, a, nd, 4) : NULL;
    TlProblem pb = {.op = op, .additive = da};
    TlSolverOptions so;
    tl_solver_options_init(&so);
    so.iterations = 1;
    g_autoptr(TlSolver) sv = tl_solver_new(ctx, algo, &pb, &so, &error);
    g_assert_no_error(error);
    g_autoptr(TlProfile) before = tl_profile_new();
    tl_profile_merge(before, tl_solver_profile(sv));
    g_assert_true(tl_solver_step(sv, &error));
    g_assert_no_error(error);
    g_autoptr(TlProfile) step = tl_profile_new_since(tl_solver_profile(sv), before);
    g_auto(GStrv) ran = tl_profile_kernels(step);
    g_autofree char *list = g_strjoinv(" ", ran);
    g_test_message("%s%s %s%s: the sub-iteration ran %s", algo, additive ? " + randoms" : "",
                   o.projector, tof ? " TOF" : "", list);
    g_assert_nonnull(ran[0]);
    for (guint i = 0; ran[i]; i++) {
      g_assert_true(tl_solver_check_kernel(sv, ran[i], &error));
      g_assert_no_error(error);
    }
    gboolean planes = g_strv_contains((const char *const *)ran, "pet_back_slabs");
    for (guint i = 0; projection[i]; i++) {
      const char *name = projection[i];
      if (g_strv_contains((const char *const *)ran, name)) continue;
      gboolean ok = tl_solver_check_kernel(sv, name, &error);
      if (planes && g_str_has_prefix(name, "pet_em") && !g_str_equal(name, "pet_em_rec")) {
        g_clear_error(&error); /* the edited one-kernel pass would replace the plane path */
        continue;
      }
      g_assert_false(ok);
      g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
      g_autofree char *expect = g_strdup_printf("%s is not called by this run", name);
      g_assert_nonnull(strstr(error->message, expect));
      g_assert_nonnull(strstr(error->message, ran[0]));
      g_clear_error(&error);
    }
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  static const char *const projectors[] = {"siddon", "joseph", "tor"};
  static Case cases[3 * 6];
  guint nc = 0;
  for (guint p = 0; p < 3; p++)
    for (guint k = 0; k < 6; k++) {
      /* list mode: atten x tof; binned: atten only */
      Case c = {.binned = k >= 4, .projector = projectors[p], .atten = k & 1,
                .tof = k < 4 && (k & 2)};
      cases[nc] = c;
      char path[128];
      g_snprintf(path, sizeof path, "/pet/operator/%s/%s%s%s", c.binned ? "binned" : "listmode",
                 c.projector, c.atten ? "-atten" : "", c.tof ? "-tof" : "");
      g_test_add_data_func(path, &cases[nc], test_case);
      if (!c.tof) {
        g_snprintf(path, sizeof path, "/pet/operator/sensitivity/%s/%s%s",
                   c.binned ? "binned" : "listmode", c.projector, c.atten ? "-atten" : "");
        g_test_add_data_func(path, &cases[nc], test_sensitivity);
      }
      nc++;
    }
  g_test_add_func("/pet/operator/em-cas", test_em_cas);
  g_test_add_func("/pet/operator/kernels-called", test_kernels_called);
  g_test_add_func("/pet/operator/empty-subset", test_empty_subset);
  g_test_add_func("/pet/operator/bad-input", test_bad_input);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
