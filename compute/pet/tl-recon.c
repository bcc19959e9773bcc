/* List-mode and binned MLEM/OSEM (see tl-recon.h for the equations). */
#include "tl-recon.h"
#include <math.h>
#include <string.h>
#include "expr/tl-expr.h"
#include "tl-sensitivity.h"

struct _TlRecon {
  TlContext *ctx;
  TlReconOptions opt;
  char *projector_name;
  TlProjector *proj;
  TlStream *stream;
  TlProfile *profile;
  GCancellable *cancellable;
  TlArray *crystals;
  TlArray *records;  /* grouped by subset: subset k is [sub_first[k], sub_first[k + 1]) */
  TlLorKind kind;
  guint64 *sub_first;
  TlArray *sens;     /* all pairs */
  TlArray **sens_sub; /* binned OSEM: the subsets' own sensitivity images; else NULL */
  gboolean cached;
  TlArray *f, *c;    /* image and correction (swapped after each update) */
  TlArray *truth;
  TlArray *mu;       /* attenuation: the mu-map (mm^-1) or NULL */
  TlArray *atten;    /* attenuation: a_j = exp(-integral of mu) per record, or NULL */
  char *mu_hash;     /* SHA-256 of the mu-map's bytes: part of the sensitivity cache key */
  TlTof tof;         /* opt.tof (list mode only): the kernel the LORs carry */
  TlArray *scratch;  /* the filter between iterations' temporary, or NULL */
  double truth_sum, total_counts;
  guint done;
  TlReconCallback cb;
  gpointer cb_data;
};

void tl_recon_options_init(TlReconOptions *o) {
  *o = (TlReconOptions){.algo = TL_RECON_MLEM, .subsets = 1, .iterations = 10,
                        .projector = "siddon", .loglik = TL_LOGLIK_ITERATION,
                        .use_cache = TRUE, .scatter = TL_SCATTER_AUTO,
                        .tor_fwhm_mm = TL_TOR_FWHM_DEFAULT,
                        .filter = {.kind = TL_FILTER_NONE}};
}

void tl_recon_free(TlRecon *r) {
  if (!r) return;
  tl_stream_free(r->stream); /* waits for in-flight work before the arrays go */
  if (r->sens_sub)
    for (guint k = 0; k < r->opt.subsets; k++) tl_array_free(r->sens_sub[k]);
  g_free(r->sens_sub);
  tl_array_free(r->sens);
  tl_array_free(r->f);
  tl_array_free(r->c);
  tl_array_free(r->truth);
  tl_array_free(r->mu);
  tl_array_free(r->atten);
  tl_array_free(r->scratch);
  g_free(r->mu_hash);
  tl_array_free(r->records);
  tl_array_free(r->crystals);
  g_free(r->sub_first);
  tl_projector_free(r->proj);
  tl_profile_free(r->profile);
  g_clear_object(&r->cancellable);
  g_free(r->projector_name);
  g_free(r);
}

gboolean tl_recon_check_attenuation(const TlImage *mu, const TlImageGrid *grid,
                                    GError **error) {
  if (!tl_image_grid_equal(&mu->grid, grid)) {
    g_autofree char *want = tl_image_grid_key(grid), *got = tl_image_grid_key(&mu->grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "attenuation map on grid %s, but the reconstruction is on %s (resample the "
                "mu-map to the image grid first)",
                got, want);
    return FALSE;
  }
  guint64 nv = tl_image_grid_n_voxels(grid);
  for (guint64 i = 0; i < nv; i++) {
    float v = mu->data[i];
    if (!isfinite(v) || v < 0.0f || v > TL_RECON_MU_MAX) {
      guint64 x = i % grid->dims[0], y = i / grid->dims[0] % grid->dims[1],
              z = i / grid->dims[0] / grid->dims[1];
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "attenuation map voxel (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                  ", %" G_GUINT64_FORMAT "): mu = %g mm^-1, expected a finite value in [0, %g] "
                  "(water is 0.0096 mm^-1 at 511 keV; a map in cm^-1 is 10x too large)",
                  x, y, z, (double)v, (double)TL_RECON_MU_MAX);
      return FALSE;
    }
  }
  return TRUE;
}

static TlRecon *recon_new(TlContext *ctx, const TlScanner *scanner, const TlImageGrid *grid,
                          const TlReconOptions *opt, GError **error) {
  TlReconOptions o;
  if (opt)
    o = *opt;
  else
    tl_recon_options_init(&o);
  if (o.algo == TL_RECON_MLEM) o.subsets = 1;
  if (o.subsets == 0 || o.subsets > 1000) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets: expected 1 to 1000",
                o.subsets);
    return NULL;
  }
  if (!tl_image_grid_validate(grid, error)) return NULL;
  if (o.attenuation && !tl_recon_check_attenuation(o.attenuation, grid, error)) return NULL;
  if (o.filter.kind == TL_FILTER_GAUSS &&
      (!isfinite(o.filter.fwhm_mm) || !(o.filter.fwhm_mm > 0))) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "filter between iterations: Gaussian FWHM %g mm, expected a finite value > 0",
                o.filter.fwhm_mm);
    return NULL;
  }
  g_autoptr(TlRecon) r = g_new0(TlRecon, 1);
  r->ctx = ctx;
  r->projector_name = g_strdup(o.projector ? o.projector : "siddon");
  o.projector = r->projector_name;
  r->opt = o;
  if (o.tof && !tl_tof_init(&r->tof, scanner, o.tof_n_sigma, error)) return NULL;
  r->opt.attenuation = NULL; /* the caller's map is copied below, not kept */
  if (o.attenuation) {
    r->mu = tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error);
    if (!r->mu || !tl_array_upload(r->mu, o.attenuation->data, error)) return NULL;
    r->mu_hash = tl_sensitivity_mu_hash(o.attenuation);
  }
  TlProjectorParams pp = {.tor_fwhm_mm = o.tor_fwhm_mm};
  r->proj = tl_projector_new_with(ctx, o.projector, grid, &pp, error);
  if (!r->proj) return NULL;
  tl_projector_set_scatter(r->proj, o.scatter);
  r->profile = tl_profile_new();
  r->stream = tl_stream_new(ctx, error);
  if (!r->stream) return NULL;
  tl_stream_set_profile(r->stream, r->profile);
  r->crystals = tl_scanner_upload(scanner, ctx, error);
  if (!r->crystals) return NULL;
  r->sub_first = g_new0(guint64, o.subsets + 1);
  if (o.filter.kind != TL_FILTER_NONE && o.filter_every > 0) {
    r->scratch = tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error);
    if (!r->scratch) return NULL;
  }
  return g_steal_pointer(&r);
}

/* Sensitivity image(s), the initial image f = total counts / sum(s) where s > 0 (so that the
 * expected total sum_n s_n f_n matches the data), and the correction buffer. */
static gboolean recon_prepare(TlRecon *r, const TlScanner *scanner, gboolean per_subset,
                              GError **error) {
  guint S = r->opt.subsets;
  if (r->mu) {
    /* Seed 000 sec. 2.3, eq. 6: "The attenuation factor of a LOR can be computed as
     *   alpha_j = exp(-sum_{n=1}^{N} l(A_j; r_n) mu'_n)            (6)
     * where mu'_n is the attenuation coefficient of the attenuation map in voxel r_n and
     * l(A_j; r_n) is the intersection length of the LOR inside voxel r_n", and eq. 7 (Hebert
     * and Leahy's attenuation-weighted MLEM)
     *   f_n^(k+1) = f_n^(k) 1/T sum_j p(A_j|r_n) / (alpha_j sum_n' p(A_j|r_n') S_n' f_n'^(k))
     * puts alpha_j into each LOR's forward value (with S the attenuated sensitivity).
     * Computed once per dataset: one forward projection of the mu-map over every record (the
     * sums of eq. 6 with this projector's weights), then a = exp(-a) in place. */
    guint64 n = r->sub_first[S];
    TlLors all = {.kind = r->kind, .records = r->records, .crystals = r->crystals,
                  .count = n};
    r->atten = tl_array_new_float(r->ctx, MAX(n, 1), error);
    if (!r->atten) return FALSE;
    g_autoptr(TlExprArgs) aa = tl_expr_args_new();
    tl_expr_args_array(aa, "a", r->atten);
    tl_expr_args_set_label(aa, "attenuation factors");
    if (!tl_projector_forward(r->proj, r->stream, &all, r->mu, r->atten, error) ||
        !tl_expr_assign(r->ctx, r->stream, "a = exp(-a)", aa, error))
      return FALSE;
  }
  gboolean all_cached = TRUE, hit;
  guint64 nv = tl_image_grid_n_voxels(tl_projector_grid(r->proj));
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  if (r->opt.uniform_sensitivity) {
    /* seed 000 Table 3's baseline: no sensitivity image at all (s = 1, and binned subsets
     * share it, since their per-subset images would be s / S) */
    r->sens = tl_array_new_float(r->ctx, nv, error);
    tl_expr_args_array(args, "s", r->sens);
    if (!r->sens || !tl_expr_assign(r->ctx, r->stream, "s = 1", args, error)) return FALSE;
  } else if (per_subset && S > 1) {
    r->sens_sub = g_new0(TlArray *, S);
    r->sens = tl_array_new_float(r->ctx, nv, error);
    if (!r->sens || !tl_stream_zero(r->stream, r->sens, error)) return FALSE;
    tl_expr_args_array(args, "s", r->sens);
    for (guint k = 0; k < S; k++) {
      /* seed 000 eq. 7: s'_n = sum_pairs a_p l_pn when there is a mu-map */
      r->sens_sub[k] = tl_sensitivity_image_atten(r->proj, r->stream, scanner, r->crystals, S,
                                                  k, r->mu, r->mu_hash, r->opt.use_cache, &hit,
                                                  error);
      if (!r->sens_sub[k]) return FALSE;
      all_cached &= hit;
      tl_expr_args_array(args, "sk", r->sens_sub[k]);
      if (!tl_expr_assign(r->ctx, r->stream, "s = s + sk", args, error)) return FALSE;
    }
  } else {
    r->sens = tl_sensitivity_image_atten(r->proj, r->stream, scanner, r->crystals, 1, 0, r->mu,
                                         r->mu_hash, r->opt.use_cache, &hit, error);
    if (!r->sens) return FALSE;
    all_cached = hit;
    tl_expr_args_array(args, "s", r->sens);
  }
  r->cached = all_cached;
  r->f = tl_array_new_float(r->ctx, nv, error);
  r->c = r->f ? tl_array_new_float(r->ctx, nv, error) : NULL;
  double ssum = 0;
  if (!r->c || !tl_expr_reduce(r->ctx, r->stream, "sum(s)", args, &ssum, error)) return FALSE;
  tl_expr_args_array(args, "f", r->f);
  tl_expr_args_scalar(args, "c0", ssum > 0 ? (float)(r->total_counts / ssum) : 0.0f);
  tl_expr_args_set_label(args, "init");
  return tl_expr_assign(r->ctx, r->stream, "f = select(s > 0, c0, 0)", args, error) &&
         tl_stream_finish(r->stream, error);
}

/* Interleaved subsets (event j -> subset j mod S) stored one after the other, uploaded in
 * pieces so the host needs no second copy of the whole list. Within a piece, events are
 * grouped by dominant axis (tl_events_group_by_axis): the sums of eq. 5 do not depend on the
 * order. */
TlRecon *tl_recon_new_listmode(TlContext *ctx, const TlListmode *lm, const TlImageGrid *grid,
                               const TlReconOptions *opt, GError **error) {
  if (!lm || !tl_listmode_validate(lm, "list-mode data", error)) {
    if (!lm) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no list-mode data");
    return NULL;
  }
  if (lm->n_events == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "the list-mode data hold no events");
    return NULL;
  }
  if (opt && opt->tof && !lm->has_tof) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF reconstruction asked for, but the list-mode data carry no TOF bins "
                "(header: tof = 0)");
    return NULL;
  }
  g_autoptr(TlRecon) r = recon_new(ctx, lm->scanner, grid, opt, error);
  if (!r) return NULL;
  guint S = r->opt.subsets;
  guint64 n = lm->n_events;
  r->kind = TL_LORS_EVENTS;
  r->total_counts = (double)n;
  r->records = tl_array_new(ctx, n, sizeof(TlEvent), error);
  if (!r->records) return NULL;
  /* pieces of up to 2^20 events, each grouped by dominant axis */
  const guint64 piece = 1 << 20;
  g_autofree TlEvent *buf = g_new(TlEvent, MIN(piece, n));
  guint64 at = 0;
  for (guint k = 0; k < S; k++) {
    r->sub_first[k] = at;
    guint64 m = 0;
    for (guint64 j = k; j < n; j += S) {
      buf[m++] = lm->events[j];
      if (m == piece || j + S >= n) {
        tl_events_group_by_axis(buf, m, lm->scanner, grid);
        if (!tl_array_upload_range(r->records, at, m, buf, error)) return NULL;
        at += m;
        m = 0;
      }
    }
  }
  r->sub_first[S] = at;
  if (!recon_prepare(r, lm->scanner, FALSE, error)) return NULL;
  return g_steal_pointer(&r);
}

typedef struct {
  guint64 key; /* subset, then pair index: keeps each subset's bins together */
  TlBin bin;
} KeyedBin;

static int cmp_keyed(const void *a, const void *b) {
  guint64 x = ((const KeyedBin *)a)->key, y = ((const KeyedBin *)b)->key;
  return (x > y) - (x < y);
}

TlRecon *tl_recon_new_binned(TlContext *ctx, const TlScanner *scanner, const TlBin *bins,
                             guint64 n_bins, const TlImageGrid *grid, const TlReconOptions *opt,
                             GError **error) {
  if (!scanner || !tl_scanner_validate(scanner, error)) {
    if (!scanner) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no scanner");
    return NULL;
  }
  if (opt && opt->tof) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF reconstruction needs list-mode data: binned counts carry no TOF bins");
    return NULL;
  }
  guint n = scanner->n_crystals;
  double total = 0;
  for (guint64 i = 0; i < n_bins; i++) {
    const TlBin *b = &bins[i];
    if (b->a >= n || b->b >= n || !tl_scanner_pair_allowed(scanner, b->a, b->b)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "bin %" G_GUINT64_FORMAT ": crystals %u and %u are not a detectable pair of "
                  "the %u-crystal scanner",
                  i, b->a, b->b, n);
      return NULL;
    }
    if (!isfinite(b->count) || b->count < 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "bin %" G_GUINT64_FORMAT ": count %g, expected a finite value >= 0", i,
                  b->count);
      return NULL;
    }
    total += b->count;
  }
  if (n_bins == 0 || total <= 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "the binned data hold no counts");
    return NULL;
  }
  g_autoptr(TlRecon) r = recon_new(ctx, scanner, grid, opt, error);
  if (!r) return NULL;
  guint S = r->opt.subsets;
  r->kind = TL_LORS_BINS;
  r->total_counts = total;
  g_autofree KeyedBin *kb = g_new(KeyedBin, n_bins);
  for (guint64 i = 0; i < n_bins; i++) {
    guint64 p = tl_pair_index(n, bins[i].a, bins[i].b);
    kb[i].key = (p % S) * tl_pair_count(n) + p;
    kb[i].bin = bins[i];
  }
  qsort(kb, n_bins, sizeof *kb, cmp_keyed);
  g_autofree TlBin *sorted = g_new(TlBin, n_bins);
  for (guint64 i = 0; i < n_bins; i++) {
    sorted[i] = kb[i].bin;
    guint k = (guint)(kb[i].key / tl_pair_count(n));
    r->sub_first[k + 1] = i + 1; /* ends of non-empty subsets; filled forward below */
  }
  for (guint k = 1; k <= S; k++) r->sub_first[k] = MAX(r->sub_first[k], r->sub_first[k - 1]);
  r->records = tl_array_new(ctx, n_bins, sizeof(TlBin), error);
  if (!r->records || !tl_array_upload(r->records, sorted, error)) return NULL;
  if (!recon_prepare(r, scanner, TRUE, error)) return NULL;
  return g_steal_pointer(&r);
}

gboolean tl_recon_set_truth(TlRecon *r, const TlImage *truth, GError **error) {
  const TlImageGrid *g = tl_projector_grid(r->proj);
  if (!tl_image_grid_equal(&truth->grid, g)) {
    g_autofree char *want = tl_image_grid_key(g), *got = tl_image_grid_key(&truth->grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "ground truth on grid %s, but the reconstruction is on %s", got, want);
    return FALSE;
  }
  if (!tl_image_check_nonnegative(truth, "ground truth", error)) return FALSE;
  g_clear_pointer(&r->truth, tl_array_free);
  r->truth = tl_array_new_float(r->ctx, tl_image_grid_n_voxels(g), error);
  if (!r->truth || !tl_array_upload(r->truth, truth->data, error)) {
    g_clear_pointer(&r->truth, tl_array_free);
    return FALSE;
  }
  r->truth_sum = tl_image_sum(truth);
  return TRUE;
}

void tl_recon_set_callback(TlRecon *r, TlReconCallback cb, gpointer user_data) {
  r->cb = cb;
  r->cb_data = user_data;
}

void tl_recon_set_cancellable(TlRecon *r, GCancellable *cancellable) {
  g_clear_object(&r->cancellable);
  if (cancellable) r->cancellable = g_object_ref(cancellable);
  tl_stream_set_cancellable(r->stream, cancellable);
}

void tl_recon_set_submit_budget(TlRecon *r, guint64 budget) {
  tl_stream_set_submit_budget(r->stream, budget);
}

gboolean tl_recon_loglik(TlRecon *r, double *loglik, GError **error) {
  TlLors all = {.kind = r->kind, .records = r->records, .crystals = r->crystals,
                .count = r->sub_first[r->opt.subsets], .atten = r->atten,
                .tof = r->opt.tof ? &r->tof : NULL};
  double data_term = 0, expected = 0;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "s", r->sens);
  tl_expr_args_array(args, "f", r->f);
  tl_expr_args_set_label(args, "loglik sum(s f)");
  if (!tl_projector_loglik(r->proj, r->stream, &all, r->f, &data_term, error) ||
      !tl_expr_reduce(r->ctx, r->stream, "dot(s, f)", args, &expected, error))
    return FALSE;
  *loglik = data_term - expected;
  return TRUE;
}

/* RMSE of the image scaled to the truth's total, over all voxels. */
static gboolean rmse(TlRecon *r, double *out, GError **error) {
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "f", r->f);
  tl_expr_args_array(args, "t", r->truth);
  tl_expr_args_set_label(args, "rmse");
  double fsum = 0, norm = 0;
  if (!tl_expr_reduce(r->ctx, r->stream, "sum(f)", args, &fsum, error)) return FALSE;
  tl_expr_args_scalar(args, "a", fsum > 0 ? (float)(r->truth_sum / fsum) : 0.0f);
  if (!tl_expr_reduce(r->ctx, r->stream, "l2norm(a*f - t)", args, &norm, error)) return FALSE;
  *out = norm / sqrt((double)tl_image_grid_n_voxels(tl_projector_grid(r->proj)));
  return TRUE;
}

/* After a failure (a cancel, mostly) part of the recording may be unsubmitted or in flight:
 * wait for it and reset the stream, so a later step (after g_cancellable_reset) starts clean.
 * What ran wrote only the correction buffer or partial sums, never the image. */
static gboolean drain(TlRecon *r) {
  tl_stream_finish(r->stream, NULL);
  return FALSE;
}

gboolean tl_recon_step(TlRecon *r, GError **error) {
  if (g_cancellable_set_error_if_cancelled(r->cancellable, error)) return FALSE;
  gint64 t0 = g_get_monotonic_time();
  guint S = r->opt.subsets, k = r->done % S;
  TlLors sub = {.kind = r->kind, .records = r->records, .crystals = r->crystals,
                .first = r->sub_first[k], .count = r->sub_first[k + 1] - r->sub_first[k],
                .atten = r->atten, .tof = r->opt.tof ? &r->tof : NULL};
  /* List mode: s^(k) = s / S, so the update multiplies by S / s; binned: 1 / s^(k). */
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "f", r->f);
  tl_expr_args_array(args, "c", r->c);
  tl_expr_args_array(args, "s", r->sens_sub ? r->sens_sub[k] : r->sens);
  tl_expr_args_scalar(args, "k", r->sens_sub ? 1.0f : (float)S);
  tl_expr_args_set_label(args, "update");
  /* seed 000's inter-iteration filtering: on the new image before it becomes current */
  gboolean filter = r->scratch && (r->done + 1) % r->opt.filter_every == 0;
  if (!tl_stream_zero(r->stream, r->c, error) ||
      !tl_projector_em(r->proj, r->stream, &sub, r->f, r->c, error) ||
      !tl_expr_assign(r->ctx, r->stream, "c = select(s > 0, f * c * k / s, 0)", args, error) ||
      (filter && !tl_filter_apply(r->ctx, r->stream, &r->opt.filter, tl_recon_grid(r), r->c,
                                  r->scratch, error)) ||
      !tl_stream_finish(r->stream, error))
    return drain(r); /* f still holds the last complete image */
  TlArray *t = r->f;
  r->f = r->c;
  r->c = t;
  r->done++;

  TlReconProgress p = {.iteration = (r->done - 1) / S + 1, .subset = k, .n_subsets = S,
                       .sub_iterations = r->done, .image = r->f, .loglik = NAN, .rmse = NAN,
                       .profile = r->profile, .filtered = filter};
  gboolean want_ll = r->opt.loglik == TL_LOGLIK_SUBITERATION ||
                     (r->opt.loglik == TL_LOGLIK_ITERATION && k == S - 1);
  if ((want_ll && !tl_recon_loglik(r, &p.loglik, error)) ||
      (r->truth && !rmse(r, &p.rmse, error)))
    return drain(r);
  p.seconds = (g_get_monotonic_time() - t0) * 1e-6;
  if (r->cb) r->cb(&p, r->cb_data);
  return TRUE;
}

gboolean tl_recon_run(TlRecon *r, GError **error) {
  while (r->done < r->opt.iterations * r->opt.subsets)
    if (!tl_recon_step(r, error)) return FALSE;
  return TRUE;
}

guint tl_recon_sub_iterations(const TlRecon *r) { return r->done; }
const TlImageGrid *tl_recon_grid(const TlRecon *r) { return tl_projector_grid(r->proj); }
const TlArray *tl_recon_image_array(const TlRecon *r) { return r->f; }
const TlArray *tl_recon_sensitivity(const TlRecon *r) { return r->sens; }
gboolean tl_recon_sensitivity_cached(const TlRecon *r) { return r->cached; }
const TlProfile *tl_recon_profile(const TlRecon *r) { return r->profile; }
TlProjector *tl_recon_projector(TlRecon *r) { return r->proj; }

TlImage *tl_recon_image(TlRecon *r, GError **error) {
  g_autoptr(TlImage) im = tl_image_new(tl_projector_grid(r->proj));
  if (!tl_array_download(r->f, im->data, error)) return NULL;
  return g_steal_pointer(&im);
}
