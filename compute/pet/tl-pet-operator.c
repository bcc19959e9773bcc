/* SPDX-License-Identifier: GPL-3.0-or-later */
/* PET list-mode and binned operators (see tl-pet-operator.h for the model and data order). */
#include "tl-pet-operator.h"
#include <math.h>
#include <string.h>
#include "expr/tl-expr.h"
#include "pet/project/tl-sensitivity.h"

typedef struct {
  TlScanner *scanner;     /* copy: sensitivity images iterate its pairs */
  char *projector_name;
  TlProjector *proj;
  TlArray *crystals;
  TlArray *records;       /* in data order (subset after subset) */
  TlArray *counts;        /* binned: the bins' counts in data order (counts()); else NULL */
  TlLorKind kind;
  gboolean tof_on;
  TlTof tof;
  TlArray *mu;            /* mu-map (mm^-1) or NULL */
  char *mu_hash;          /* its SHA-256: part of the sensitivity cache key */
  TlNorm *norm;           /* normalisation (copy) or NULL */
  TlArray *norm_table;    /* its device tables (tl_norm_upload) */
  TlArray *norm_rec;      /* n of each record in data order: combined into D, then freed */
  gboolean use_cache;
  TlArray *sens;          /* all pairs (list mode; binned with one subset); lazily made */
  TlArray **sens_sub;     /* binned, S > 1: each subset's own pairs; lazily made */
  guint n_made, n_cached; /* sensitivity images made so far, and of those read from disk */
  double total_counts;
  guint parts, part;      /* list mode: the share of the sensitivity pairs (1, 0 = all) */
  guint sens_chunks;      /* list mode: > 1 = summed from fixed pair chunks in double */
} PetOp;

static PetOp *priv(const TlOperator *op) { return op->priv; }

void tl_pet_operator_options_init(TlPetOperatorOptions *o) {
  *o = (TlPetOperatorOptions){.projector = "siddon",
                              .params = {.tor_fwhm_mm = TL_TOR_FWHM_DEFAULT},
                              .subsets = 1, .scatter = TL_SCATTER_AUTO, .use_cache = TRUE};
}

static void pet_finalize(TlOperator *op) {
  PetOp *p = priv(op);
  if (!p) return;
  if (p->sens_sub)
    for (guint k = 0; k < op->n_subsets; k++) tl_array_free(p->sens_sub[k]);
  g_free(p->sens_sub);
  tl_array_free(p->sens);
  tl_array_free(p->mu);
  g_free(p->mu_hash);
  tl_norm_free(p->norm);
  tl_array_free(p->norm_table);
  tl_array_free(p->norm_rec);
  tl_array_free(p->counts);
  tl_array_free(p->records);
  tl_array_free(p->crystals);
  tl_projector_free(p->proj);
  g_free(p->projector_name);
  tl_scanner_free(p->scanner);
  g_free(p);
  op->priv = NULL;
}

TlLors tl_pet_operator_lors(const TlOperator *op, guint subset) {
  PetOp *p = priv(op);
  gboolean all = subset == G_MAXUINT;
  return (TlLors){.kind = p->kind, .records = p->records, .crystals = p->crystals,
                  .first = all ? 0 : tl_operator_subset_first(op, subset),
                  .count = all ? tl_operator_n_data(op) : tl_operator_subset_length(op, subset),
                  .atten = op->diag, .tof = p->tof_on ? &p->tof : NULL};
}

/* The records in data order on the host (3 words each: a, b, TOF bin); NULL + GError. */
static guint32 *download_records(TlOperator *op, GError **error) {
  PetOp *p = priv(op);
  guint64 n = tl_operator_n_data(op);
  /* events and bins both start with the two crystal ids (TlEvent, TlBin: 12 bytes) */
  G_STATIC_ASSERT(sizeof(TlEvent) == sizeof(TlBin));
  guint32 *rec = g_try_new(guint32, 3 * MAX(n, 1));
  if (!rec) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "%" G_GUINT64_FORMAT " records do not "
                "fit in host memory", n);
    return NULL;
  }
  if (n && !tl_array_download(p->records, rec, error)) g_clear_pointer(&rec, g_free);
  return rec;
}

float *tl_pet_operator_additive(TlOperator *op, const TlRandoms *randoms,
                                const TlScatterEstimate *scatter, TlPairFactorFunc pair_factor,
                                gpointer pair_factor_data, GError **error) {
  PetOp *p = priv(op);
  if (randoms && randoms->n_crystals != p->scanner->n_crystals) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "randoms for %u crystals, but the "
                "scanner '%s' has %u", randoms->n_crystals, p->scanner->name,
                p->scanner->n_crystals);
    return NULL;
  }
  if (scatter) {
    if (!tl_scatter_estimate_check_scanner(scatter, p->scanner, "scatter correction", error))
      return NULL;
    if (p->tof_on && scatter->n_bins != p->scanner->tof_bins) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "scatter correction: the estimate has "
                  "%u TOF bins but the TOF reconstruction uses the scanner's %u (estimate it "
                  "with TOF)", scatter->n_bins, p->scanner->tof_bins);
      return NULL;
    }
  }
  guint64 n = tl_operator_n_data(op);
  g_autofree guint32 *rec = download_records(op, error);
  float *a = rec ? g_try_new(float, MAX(n, 1)) : NULL;
  if (!a) {
    if (rec) g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "additive term: %"
                         G_GUINT64_FORMAT " records do not fit in host memory", n);
    return NULL;
  }
  double per_bin = p->tof_on ? 1.0 / p->scanner->tof_bins : 1.0;
  for (guint64 j = 0; j < n; j++) {
    guint ca = rec[3 * j], cb = rec[3 * j + 1];
    double v = randoms ? tl_randoms_pair(randoms, ca, cb) * per_bin : 0.0;
    if (scatter) {
      double s = p->tof_on ? tl_scatter_estimate_pair_tof(scatter, ca, cb, (gint32)rec[3 * j + 2])
                           : tl_scatter_estimate_pair(scatter, ca, cb);
      v += (pair_factor ? pair_factor(ca, cb, pair_factor_data) : 1.0) * s;
    }
    a[j] = (float)v;
  }
  return a;
}

TlArray *tl_pet_operator_randoms(TlOperator *op, const TlRandoms *randoms, GError **error) {
  guint64 n = tl_operator_n_data(op);
  g_autofree float *a = tl_pet_operator_additive(op, randoms, NULL, NULL, NULL, error);
  if (!a) return NULL;
  g_autoptr(TlArray) out = tl_array_new_float(op->ctx, MAX(n, 1), error);
  if (!out || (n && !tl_array_upload(out, a, error))) return NULL;
  return g_steal_pointer(&out);
}

static int cmp_bin(const void *x, const void *y) {
  const TlBin *a = x, *b = y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return (a->b > b->b) - (a->b < b->b);
}

GArray *tl_pet_operator_pair_counts(TlOperator *op, GError **error) {
  PetOp *p = priv(op);
  guint64 n = tl_operator_n_data(op);
  g_autofree guint32 *rec = download_records(op, error);
  if (!rec) return NULL;
  g_autofree float *cnt = NULL;
  if (p->counts) {
    cnt = g_new(float, MAX(n, 1));
    if (n && !tl_array_download(p->counts, cnt, error)) return NULL;
  }
  g_autofree TlBin *b = g_new(TlBin, MAX(n, 1));
  for (guint64 j = 0; j < n; j++) {
    guint x = rec[3 * j], y = rec[3 * j + 1];
    b[j] = (TlBin){MIN(x, y), MAX(x, y), cnt ? cnt[j] : 1.0f};
  }
  qsort(b, n, sizeof *b, cmp_bin);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(TlBin));
  for (guint64 j = 0; j < n;) {
    TlBin sum = b[j];
    double c = 0;
    guint64 k = j;
    for (; k < n && b[k].a == sum.a && b[k].b == sum.b; k++) c += b[k].count;
    sum.count = (float)c;
    g_array_append_val(out, sum);
    j = k;
  }
  return out;
}

/* y = D_s A_s x: D is the kernels' per-record factor (TlLors.atten, record first + i). */
static gboolean pet_forward(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                            TlArray *y, GError **error) {
  TlLors l = tl_pet_operator_lors(op, subset);
  return tl_projector_forward(priv(op)->proj, s, &l, x, y, error);
}

/* x += A_s^T D_s w: the back kernel multiplies w_i by the same factor. */
static gboolean pet_adjoint(TlOperator *op, TlStream *s, guint subset, const TlArray *w,
                            TlArray *x, GError **error) {
  TlLors l = tl_pet_operator_lors(op, subset);
  return tl_projector_back(priv(op)->proj, s, &l, w, x, error);
}

/* The fused pass of van Gendt et al. 2021 Listing 1 (shaders/pet/pet_em.glsl), with the
 * log-likelihood
 * partial sums from the same forward values when asked for. */
static gboolean pet_em(TlOperator *op, TlStream *s, guint subset, const TlArray *x,
                       TlArray *corr, TlArray *partials, GError **error) {
  TlLors l = tl_pet_operator_lors(op, subset);
  PetOp *p = priv(op);
  if (partials && l.count == 0) {
    /* an empty subset (few bins, many subsets) dispatches nothing: its one partial is 0 */
    g_autoptr(TlArray) first = tl_array_new_view(partials, 0, 1, error);
    return first && tl_stream_zero(s, first, error);
  }
  return partials ? tl_projector_em_loglik(p->proj, s, &l, x, corr, partials, error)
                  : tl_projector_em(p->proj, s, &l, x, corr, error);
}

static void add_kernels(GPtrArray *runs, const char *const *k) {
  for (guint i = 0; k && k[i]; i++)
    if (!g_ptr_array_find_with_equal_func(runs, k[i], g_str_equal, NULL))
      g_ptr_array_add(runs, (gpointer)k[i]);
}

/* em: the projector's EM pass; else its forward and back projections */
static gboolean pet_kernel_used(const TlOperator *op, guint subset, gboolean em, const char *name,
                                GPtrArray *runs) {
  TlLors l = tl_pet_operator_lors(op, subset);
  const TlProjector *pr = priv((TlOperator *)op)->proj;
  if (em) {
    add_kernels(runs, tl_projector_kernels(pr, TL_PROJECTOR_EM, &l));
    return tl_projector_kernel_used(pr, TL_PROJECTOR_EM, &l, name);
  }
  add_kernels(runs, tl_projector_kernels(pr, TL_PROJECTOR_FORWARD, &l));
  add_kernels(runs, tl_projector_kernels(pr, TL_PROJECTOR_BACK, &l));
  return tl_projector_kernel_used(pr, TL_PROJECTOR_FORWARD, &l, name) ||
         tl_projector_kernel_used(pr, TL_PROJECTOR_BACK, &l, name);
}

/* At least 1: 0 would say "no log-likelihood" (tl-operator.h). */
static guint64 pet_em_partials(TlOperator *op, guint subset) {
  TlLors l = tl_pet_operator_lors(op, subset);
  return MAX(tl_projector_loglik_partials(priv(op)->proj, &l), 1);
}

/* Pairs p with p mod stride = offset; van Gendt et al. 2021 eq. 7 with n_j a_j (s_n = sum_p n_p
 * a_p a_pn)
 * with a mu-map and a normalisation. */
static TlArray *sens_image(TlOperator *op, TlStream *s, guint stride, guint offset,
                           GError **error) {
  PetOp *p = priv(op);
  gboolean hit = FALSE;
  TlSensNorm sn = {.norm = p->norm, .table = p->norm_table};
  TlArray *img = tl_sensitivity_image_norm(p->proj, s, p->scanner, p->crystals, stride, offset,
                                           p->mu, p->mu_hash, p->norm ? &sn : NULL,
                                           p->use_cache, &hit, error);
  if (!img) return NULL;
  p->n_made++;
  p->n_cached += hit;
  return img;
}

/* The chunks c mod parts = part of the pairs p mod chunks = c, each a float image (cached),
 * summed in double: the same sum whatever `parts` is. */
static TlArray *sens_chunked(TlOperator *op, TlStream *s, GError **error) {
  PetOp *p = priv(op);
  guint64 nv = tl_operator_n_voxels(op);
  g_autofree double *acc = g_new0(double, nv);
  g_autofree float *h = g_new(float, nv);
  for (guint c = p->part; c < p->sens_chunks; c += p->parts) {
    g_autoptr(TlArray) img = sens_image(op, s, p->sens_chunks, c, error);
    if (!img || !tl_array_download(img, h, error)) return NULL;
    for (guint64 i = 0; i < nv; i++) acc[i] += h[i];
  }
  for (guint64 i = 0; i < nv; i++) h[i] = (float)acc[i];
  g_autoptr(TlArray) out = tl_array_new_float(op->ctx, nv, error);
  if (!out || !tl_array_upload(out, h, error)) return NULL;
  return g_steal_pointer(&out);
}

/* List mode: subset s is an interleaved 1/S sample of the events, so its expected share of
 * the all-pairs sensitivity is s_n / S (van Gendt et al. 2021 sec. 2.3 OSEM on list mode). */
static gboolean listmode_sensitivity(TlOperator *op, TlStream *s, guint subset, TlArray *out,
                                     GError **error) {
  PetOp *p = priv(op);
  if (!p->sens && !(p->sens = p->sens_chunks > 1 ? sens_chunked(op, s, error)
                                                 : sens_image(op, s, p->parts, p->part, error)))
    return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "o", out);
  tl_expr_args_array(args, "s", p->sens);
  tl_expr_args_scalar(args, "k", (float)op->n_subsets);
  tl_expr_args_set_label(args, "sensitivity / S");
  return tl_expr_assign(op->ctx, s, "o = s / k", args, error);
}

/* Binned: the subset's own detectable pairs, counted or not (Chou et al. 2012 eq. 4,
 * sum_{i in S_k} H_ij). */
static gboolean binned_sensitivity(TlOperator *op, TlStream *s, guint subset, TlArray *out,
                                   GError **error) {
  PetOp *p = priv(op);
  guint S = op->n_subsets;
  TlArray **img = &p->sens;
  if (S > 1) {
    if (!p->sens_sub) p->sens_sub = g_new0(TlArray *, S);
    img = &p->sens_sub[subset];
  }
  if (!*img && !(*img = sens_image(op, s, S, subset, error))) return FALSE;
  return tl_stream_copy(s, *img, 0, out, 0, tl_array_size_bytes(out), error);
}

static gboolean listmode_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "m", m);
  tl_expr_args_set_label(args, "counts");
  return tl_expr_assign(op->ctx, s, "m = 1", args, error);
}

static gboolean binned_counts(TlOperator *op, TlStream *s, TlArray *m, GError **error) {
  PetOp *p = priv(op);
  return tl_stream_copy(s, p->counts, 0, m, 0, tl_array_size_bytes(m), error);
}

const TlOperatorClass tl_pet_listmode_operator_class = {
    .name = "pet-listmode",
    .modality = "pet",
    .summary = "PET list mode: one datum per event (count 1), subsets interleaved by event",
    .flags = TL_OPERATOR_LISTMODE | TL_OPERATOR_NATIVE_DIAG,
    .finalize = pet_finalize,
    .forward = pet_forward,
    .adjoint = pet_adjoint,
    .sensitivity = listmode_sensitivity,
    .counts = listmode_counts,
    .em = pet_em,
    .em_partials = pet_em_partials,
    .kernel_used = pet_kernel_used,
};

const TlOperatorClass tl_pet_binned_operator_class = {
    .name = "pet-binned",
    .modality = "pet",
    .summary = "PET binned: one datum per crystal-pair bin, subsets by pair index mod S",
    .flags = TL_OPERATOR_NATIVE_DIAG,
    .finalize = pet_finalize,
    .forward = pet_forward,
    .adjoint = pet_adjoint,
    .sensitivity = binned_sensitivity,
    .counts = binned_counts,
    .em = pet_em,
    .em_partials = pet_em_partials,
    .kernel_used = pet_kernel_used,
};

gboolean tl_is_pet_operator(const TlOperator *op) {
  return op && (op->klass == &tl_pet_listmode_operator_class ||
                op->klass == &tl_pet_binned_operator_class);
}

TlProjector *tl_pet_operator_projector(TlOperator *op) { return priv(op)->proj; }
const TlScanner *tl_pet_operator_scanner(const TlOperator *op) { return priv(op)->scanner; }
double tl_pet_operator_total_counts(const TlOperator *op) { return priv(op)->total_counts; }
gboolean tl_pet_operator_sensitivity_cached(const TlOperator *op) {
  PetOp *p = priv(op);
  return p->n_made > 0 && p->n_cached == p->n_made;
}

/* Checks shared by both constructors; fills *o with the defaults where opt is NULL. */
static gboolean check_options(const TlPetOperatorOptions *opt, const TlImageGrid *grid,
                              TlPetOperatorOptions *o, GError **error) {
  if (opt)
    *o = *opt;
  else
    tl_pet_operator_options_init(o);
  if (!o->projector) o->projector = "siddon";
  if (o->parts == 0) o->parts = 1;
  if (o->sens_chunks > 4096) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u sensitivity chunks: expected at "
                "most 4096", o->sens_chunks);
    return FALSE;
  }
  if (o->part >= o->parts) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "sensitivity share %u of %u: expected "
                "0 to %u", o->part, o->parts, o->parts - 1);
    return FALSE;
  }
  if (o->subsets == 0 || o->subsets > 1000) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "%u subsets: expected 1 to 1000",
                o->subsets);
    return FALSE;
  }
  if (!grid || !tl_image_grid_validate(grid, error)) {
    if (!grid) g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no image grid");
    return FALSE;
  }
  return !o->attenuation || tl_pet_check_attenuation(o->attenuation, grid, error);
}

/* The common part: projector, scanner copy, crystal table, mu-map (records come next). */
static TlOperator *pet_new(TlContext *ctx, const TlOperatorClass *klass,
                           const TlScanner *scanner, const TlImageGrid *grid,
                           const TlPetOperatorOptions *o, const guint64 *lengths,
                           GError **error) {
  g_autoptr(TlOperator) op = g_new0(TlOperator, 1);
  tl_operator_init(op, klass, ctx, grid, o->subsets, lengths);
  PetOp *p = g_new0(PetOp, 1);
  op->priv = p;
  p->use_cache = o->use_cache;
  p->parts = o->parts;
  p->part = o->part;
  p->sens_chunks = o->sens_chunks;
  p->scanner = tl_scanner_copy(scanner);
  p->projector_name = g_strdup(o->projector);
  if (o->tof && !tl_tof_init(&p->tof, scanner, o->tof_n_sigma, error)) return NULL;
  p->tof_on = o->tof;
  p->proj = tl_projector_new_with(ctx, p->projector_name, grid, &o->params, error);
  if (!p->proj) return NULL;
  tl_projector_set_scatter(p->proj, o->scatter);
  p->crystals = tl_scanner_upload(scanner, ctx, error);
  if (!p->crystals) return NULL;
  if (o->attenuation) {
    p->mu = tl_array_new_float(ctx, tl_image_grid_n_voxels(grid), error);
    if (!p->mu || !tl_array_upload(p->mu, o->attenuation->data, error)) return NULL;
    p->mu_hash = tl_sensitivity_mu_hash(o->attenuation);
  }
  if (o->norm) {
    if (!tl_norm_check_scanner(o->norm, scanner, "normalisation", error)) return NULL;
    p->norm = tl_norm_copy(o->norm);
    if (!(p->norm_table = tl_norm_upload(p->norm, ctx, error))) return NULL;
    guint64 nd = 0;
    for (guint k = 0; k < o->subsets; k++) nd += lengths[k];
    if (!(p->norm_rec = tl_array_new_float(ctx, MAX(nd, 1), error))) return NULL;
  }
  g_autofree char *key = tl_projector_key(p->proj);
  g_autofree char *label = g_strdup_printf("%s %s%s, %u subset%s%s%s", klass->name, key,
                                           o->tof ? " TOF" : "", o->subsets,
                                           o->subsets == 1 ? "" : "s",
                                           o->attenuation ? ", attenuation" : "",
                                           o->norm ? ", normalisation" : "");
  tl_operator_set_label(op, label);
  return g_steal_pointer(&op);
}

/* van Gendt et al. 2021 sec. 2.3, eq. 6: "The attenuation factor of a LOR can be computed as
 *   alpha_j = exp(-sum_{n=1}^{N} l(A_j; r_n) mu'_n)            (6)"
 * once per dataset: one forward projection of the mu-map over every record with this
 * projector's weights, a = exp(-a), and D = a (the records are the data order). */
static gboolean set_attenuation(TlOperator *op, GError **error) {
  PetOp *p = priv(op);
  if (!p->mu) return TRUE;
  TlLors all = tl_pet_operator_lors(op, G_MAXUINT);
  all.atten = NULL;
  all.tof = NULL; /* both photons cross the whole line, whatever the TOF bin */
  g_autoptr(TlStream) s = tl_stream_new(op->ctx, error);
  g_autoptr(TlArray) a = s ? tl_array_new_float(op->ctx, all.count, error) : NULL;
  if (!a) return FALSE;
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  tl_expr_args_array(args, "a", a);
  tl_expr_args_set_label(args, "attenuation factors");
  return tl_projector_forward(p->proj, s, &all, p->mu, a, error) &&
         tl_expr_assign(op->ctx, s, "a = exp(-a)", args, error) &&
         tl_stream_finish(s, error) && tl_operator_set_diag(op, a, FALSE, error);
}

/* D = n a: the records' normalisation factors (filled while the records were uploaded)
 * multiplied into the attenuation factors, or D = n without a mu-map. */
static gboolean set_norm(TlOperator *op, GError **error) {
  PetOp *p = priv(op);
  if (!p->norm) return TRUE;
  gboolean ok = tl_operator_set_diag(op, p->norm_rec, TRUE, error);
  g_clear_pointer(&p->norm_rec, tl_array_free);
  return ok;
}

/* A record's crystals in the orientation tl_pair_decode gives its pair, the one the
 * sensitivity image traces: a ray projector's walk may assign a line lying on a voxel plane to
 * either side depending on its direction, so (a, b) and (b, a) of one pair would project
 * differently, and list mode (events as detected), bins (as given) and the sensitivity would
 * disagree. Swapping the crystals mirrors the TOF bin (docs/formats.md: s > 0 towards b). */
static void orient(guint n, guint32 *a, guint32 *b, gint32 *tof_bin) {
  guint ca, cb;
  tl_pair_decode(n, tl_pair_index(n, *a, *b), &ca, &cb);
  if (ca == *a) return;
  *a = ca;
  *b = cb;
  if (tof_bin) *tof_bin = -*tof_bin;
}

/* Interleaved subsets (event j -> subset j mod S) stored one after the other, uploaded in
 * pieces so the host needs no second copy of the whole list; within a piece events are
 * grouped by dominant axis (tl_events_group_by_axis), and on a CPU device ordered by line
 * within a group (tl_events_order_by_line). */
TlOperator *tl_pet_operator_new_listmode(TlContext *ctx, const TlListmode *lm,
                                         const TlImageGrid *grid,
                                         const TlPetOperatorOptions *opt, GError **error) {
  TlPetOperatorOptions o;
  if (!lm) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no list-mode data");
    return NULL;
  }
  if (!tl_listmode_validate(lm, "list-mode data", error) ||
      !check_options(opt, grid, &o, error))
    return NULL;
  if (lm->n_events == 0) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "the list-mode data hold no events");
    return NULL;
  }
  if (o.tof && !lm->has_tof) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF reconstruction asked for, but the list-mode data carry no TOF bins "
                "(header: tof = 0)");
    return NULL;
  }
  guint S = o.subsets;
  guint64 n = lm->n_events;
  g_autofree guint64 *lengths = g_new(guint64, S);
  for (guint k = 0; k < S; k++) lengths[k] = n > k ? (n - k + S - 1) / S : 0;
  g_autoptr(TlOperator) op = pet_new(ctx, &tl_pet_listmode_operator_class, lm->scanner, grid,
                                     &o, lengths, error);
  if (!op) return NULL;
  PetOp *p = priv(op);
  p->kind = TL_LORS_EVENTS;
  p->total_counts = (double)n;
  p->records = tl_array_new(ctx, n, sizeof(TlEvent), error);
  if (!p->records) return NULL;
  const guint64 piece = 1 << 20;
  gboolean by_line = tl_context_info(ctx)->type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  g_autofree TlEvent *buf = g_new(TlEvent, MIN(piece, n));
  g_autofree float *nbuf = p->norm ? g_new(float, MIN(piece, n)) : NULL;
  guint64 at = 0;
  for (guint k = 0; k < S; k++) {
    g_assert(at == tl_operator_subset_first(op, k));
    guint64 m = 0;
    for (guint64 j = k; j < n; j += S) {
      buf[m] = lm->events[j];
      orient(lm->scanner->n_crystals, &buf[m].a, &buf[m].b, &buf[m].tof_bin);
      m++;
      if (m == piece || j + S >= n) {
        if (by_line)
          tl_events_order_by_line(buf, m, lm->scanner, grid);
        else
          tl_events_group_by_axis(buf, m, lm->scanner, grid);
        if (!tl_array_upload_range(p->records, at, m, buf, error)) return NULL;
        if (nbuf) {
          tl_norm_records(p->norm, (const guint32 *)buf, m, nbuf);
          if (!tl_array_upload_range(p->norm_rec, at, m, nbuf, error)) return NULL;
        }
        at += m;
        m = 0;
      }
    }
  }
  if (!set_attenuation(op, error) || !set_norm(op, error)) return NULL;
  return g_steal_pointer(&op);
}

typedef struct {
  guint64 key; /* subset, then pair index: keeps each subset's bins together */
  TlBin bin;
} KeyedBin;

static int cmp_keyed(const void *a, const void *b) {
  guint64 x = ((const KeyedBin *)a)->key, y = ((const KeyedBin *)b)->key;
  return (x > y) - (x < y);
}

TlOperator *tl_pet_operator_new_binned(TlContext *ctx, const TlScanner *scanner,
                                       const TlBin *bins, guint64 n_bins,
                                       const TlImageGrid *grid,
                                       const TlPetOperatorOptions *opt, GError **error) {
  TlPetOperatorOptions o;
  if (!scanner) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "no scanner");
    return NULL;
  }
  if (!tl_scanner_validate(scanner, error) || !check_options(opt, grid, &o, error)) return NULL;
  if (o.tof) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "TOF reconstruction needs list-mode data: binned counts carry no TOF bins");
    return NULL;
  }
  if (o.parts > 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "a share of the sensitivity pairs (%u of %u) needs list-mode data: binned "
                "subsets have their own pairs", o.part, o.parts);
    return NULL;
  }
  guint n = scanner->n_crystals;
  double total = 0;
  for (guint64 i = 0; i < n_bins; i++) {
    const TlBin *b = &bins[i];
    if (b->a >= n || b->b >= n || !tl_scanner_pair_allowed(scanner, b->a, b->b)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "bin %" G_GUINT64_FORMAT ": crystals %u and %u are not a detectable pair of "
                  "the %u-crystal scanner", i, b->a, b->b, n);
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
  guint S = o.subsets;
  guint64 pairs = tl_pair_count(n);
  g_autofree KeyedBin *kb = g_new(KeyedBin, n_bins);
  g_autofree guint64 *lengths = g_new0(guint64, S);
  for (guint64 i = 0; i < n_bins; i++) {
    guint64 pi = tl_pair_index(n, bins[i].a, bins[i].b);
    kb[i].key = (pi % S) * pairs + pi;
    kb[i].bin = bins[i];
    lengths[pi % S]++;
  }
  qsort(kb, n_bins, sizeof *kb, cmp_keyed);
  g_autofree TlBin *sorted = g_new(TlBin, n_bins);
  g_autofree float *counts = g_new(float, n_bins);
  for (guint64 i = 0; i < n_bins; i++) {
    sorted[i] = kb[i].bin;
    orient(n, &sorted[i].a, &sorted[i].b, NULL);
    counts[i] = kb[i].bin.count;
  }
  g_autoptr(TlOperator) op = pet_new(ctx, &tl_pet_binned_operator_class, scanner, grid, &o,
                                     lengths, error);
  if (!op) return NULL;
  PetOp *p = priv(op);
  p->kind = TL_LORS_BINS;
  p->total_counts = total;
  p->records = tl_array_new(ctx, n_bins, sizeof(TlBin), error);
  if (!p->records || !tl_array_upload(p->records, sorted, error)) return NULL;
  p->counts = tl_array_new_float(ctx, n_bins, error);
  if (!p->counts || !tl_array_upload(p->counts, counts, error)) return NULL;
  if (p->norm) {
    /* the bins' factors in data order, through the counts' host copy */
    tl_norm_records(p->norm, (const guint32 *)sorted, n_bins, counts);
    if (!tl_array_upload(p->norm_rec, counts, error)) return NULL;
  }
  if (!set_attenuation(op, error) || !set_norm(op, error)) return NULL;
  return g_steal_pointer(&op);
}
