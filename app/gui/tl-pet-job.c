/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlJob over TlRecon. TlRecon's profile accumulates since the start; the window wants
 * the cost of the last sub-iteration, so each step reports the difference. A filter "after
 * reconstruction" filters a copy of each new image (the run may end after any step), so
 * the views and saving see the filtered image while the iterations use the unfiltered one;
 * images in Bq/mL are that copy scaled (pet/tl-units.h), so the iterations, the expected counts
 * and steering keep the reconstruction's own units.
 *
 * The model is ybar = D A x + a (tl-recon.h): D = n a_j with the normalisation n (a .tln file)
 * and the attenuation, a = randoms + n S with the randoms (from the delayeds or a file) and the
 * scatter (a file, or single scatter simulation of the current image, tail fitted and
 * re-estimated between iterations: tl_recon_scatter_estimate replaces the term in place, so
 * the reconstruction is never rebuilt for it). */
#include <math.h>
#include "tl-job.h"
#include "expr/tl-expr.h"
#include "pet/tl-recon.h"
#include "pet/correct/tl-units.h"
#include "image/tl-file.h"
#include "tl-registry.h"

typedef struct {
  TlJob parent;
  TlRecon *recon;
  TlContext *ctx;
  TlFilter post;       /* filter of the shown image (TL_FILTER_NONE = none) */
  double scale;        /* Bq/mL: the shown image times this (tl_quant_scale); 0 = none */
  double truth_sum;    /* a simulation's truth total: the shown image is scaled to it at every
                          step (the truth's own units, as the RMSE is); 0 = not shown so */
  TlArray *shown, *scratch; /* the filtered / scaled copy and the filter's scratch, once made */
  gboolean shown_valid;     /* shown holds the last complete image, filtered and scaled */
  TlProfile *before;   /* the accumulated profile after the previous step */
  TlReconProgress last;
  gboolean have_last;
  /* the model, kept for tl_job_model (the data view, tests) and the scatter rounds */
  char projector[16];
  gboolean tof;
  TlImage *mu;                /* a copy, NULL = no attenuation correction */
  TlNorm *norm;
  TlRandoms *randoms;
  TlScatterEstimate *scatter; /* the term's current scatter (a file's, or the last SSS) */
  TlPetScatter scatter_kind;
  guint rounds_done;
  TlRunSpec *run;             /* the run's schedule: its rounds, when each is due, the restart */
  gboolean scatter_due;       /* SSS before the next step (a job started from an image) */
  guint steps;                /* steps done by this job */
  TlTailFit fit;
} TlPetJob;

void tl_job_step_clear(TlJobStep *s) {
  g_clear_pointer(&s->profile, tl_profile_free);
  g_clear_pointer(&s->note, g_free);
}

void tl_job_model_clear(TlJobModel *m) {
  g_clear_pointer(&m->image, tl_image_free);
  g_clear_pointer(&m->mu, tl_image_free);
  g_clear_pointer(&m->norm, tl_norm_free);
  g_clear_pointer(&m->randoms, tl_randoms_free);
  g_clear_pointer(&m->scatter, tl_scatter_estimate_free);
}

void tl_pet_job_options_clear(TlPetJobOptions *o) {
  g_clear_pointer(&o->mu_path, g_free);
  g_clear_pointer(&o->randoms_path, g_free);
  g_clear_pointer(&o->norm_path, g_free);
  g_clear_pointer(&o->scatter_path, g_free);
  g_clear_pointer(&o->sensitivity_path, g_free);
  g_clear_pointer(&o->sensitivity_out_path, g_free);
}

gboolean tl_pet_job_options_to_run(const TlPetJobOptions *o, const char *data, guint iterations,
                                   TlRunSpec *s, GError **error) {
  if (o->mu == TL_PET_MU_PHANTOM) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "attenuation: the simulated phantom's mu-map is no file a run can name (save it, "
                "or simulate with tomolab-cli simulate --mu, and choose the file)");
    return FALSE;
  }
  if (o->quant && !(isfinite(o->calibration) && o->calibration > 0)) {
    /* the form's text was no number: the run must not quietly drop Bq/mL */
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "Images in Bq/mL: calibration factor %g: "
                "expected a number > 0", o->calibration);
    return FALSE;
  }
  char num[32];
  struct {
    const char *key;
    char *value;
  } kv[32];
  guint n = 0;
#define KV(k, v) (kv[n].key = (k), kv[n++].value = (v))
  KV("modality", g_strdup("pet"));
  KV("data", g_strdup(data ? data : ""));
  KV("algorithm", g_strdup(o->algorithm));
  KV("subsets", g_strdup_printf("%u", o->osem ? o->subsets : 0));
  KV("iterations", g_strdup_printf("%u", iterations));
  KV("projector", g_strdup(o->projector));
  tl_format_double(num, o->tor_fwhm_mm);
  KV("tor-fwhm", g_strdup(g_str_equal(o->projector, "tor") ? num : "2"));
  KV("prior", g_strdup(o->prior));
  tl_format_double(num, o->prior[0] ? o->beta : 0);
  KV("beta", g_strdup(num));
  tl_format_double(num, o->prior[0] ? o->gamma : 2);
  KV("gamma", g_strdup(num));
  KV("tof", g_strdup(o->tof ? "true" : "false"));
  static const char *const randoms[] = {"none", "delayeds", "file", "singles"};
  KV("randoms", g_strdup(randoms[o->randoms]));
  KV("randoms-file", g_strdup(o->randoms == TL_PET_RANDOMS_FILE && o->randoms_path
                                  ? o->randoms_path : ""));
  KV("norm", g_strdup(o->norm_path ? o->norm_path : ""));
  static const char *const scatter[] = {"none", "sss", "file"};
  KV("scatter", g_strdup(scatter[o->scatter]));
  KV("scatter-rounds", g_strdup_printf("%u", o->scatter == TL_PET_SCATTER_SSS
                                                  ? MAX(o->scatter_rounds, 1) : 2));
  KV("scatter-restart", g_strdup(o->scatter == TL_PET_SCATTER_SSS && o->scatter_restart ? "true"
                                                                                     : "false"));
  KV("scatter-file", g_strdup(o->scatter == TL_PET_SCATTER_FILE && o->scatter_path
                                  ? o->scatter_path : ""));
  KV("attenuation", g_strdup(o->mu == TL_PET_MU_FILE && o->mu_path ? o->mu_path : ""));
  g_autofree char *f = o->filter.kind == TL_FILTER_NONE ? g_strdup("none")
                                                         : tl_filter_to_string(&o->filter);
  KV("filter", g_strdup(f));
  KV("filter-every", g_strdup_printf("%u", o->filter_every));
  KV("rays-tangential", g_strdup_printf("%u", MAX(o->rays_tangential, 1)));
  KV("rays-axial", g_strdup_printf("%u", MAX(o->rays_axial, 1)));
  KV("sensitivity", g_strdup(o->sensitivity_path ? o->sensitivity_path : ""));
  KV("sensitivity-out", g_strdup(o->sensitivity_out_path ? o->sensitivity_out_path : ""));
  if (o->quant && !isnan(o->calibration)) tl_format_double(num, o->calibration);
  KV("calibration", g_strdup(o->quant && !isnan(o->calibration) ? num : "none"));
  gboolean q = o->quant && !isnan(o->calibration);
  KV("isotope", g_strdup(q && o->isotope[0] ? o->isotope : "none"));
  tl_format_double(num, o->duration_s);
  KV("duration", g_strdup(q && o->duration_s > 0 ? num : "auto"));
  tl_format_double(num, o->frame_start_s);
  KV("frame-start", g_strdup(q ? num : "auto"));
#undef KV
  gboolean ok = TRUE;
  for (guint i = 0; i < n; i++) {
    if (ok && !tl_run_spec_set(s, kv[i].key, kv[i].value, error)) ok = FALSE;
    g_free(kv[i].value);
  }
  return ok;
}

gboolean tl_pet_job_options_from_run(const TlRunSpec *s, TlPetJobOptions *o, guint *iterations,
                                     char **ignored, GError **error) {
  if (ignored) *ignored = NULL;
  if (s->modality != TL_RUN_PET) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "modality = ct: not a PET run");
    return FALSE;
  }
  if (!tl_run_spec_validate(s, error)) return FALSE;
  const TlAlgorithmClass *ak = tl_registry_algorithm(tl_run_spec_algorithm(s), error);
  if (!ak) return FALSE;
  tl_pet_job_options_clear(o);
  *o = (TlPetJobOptions){0};
  g_strlcpy(o->algorithm, tl_algorithm_name(ak), sizeof o->algorithm);
  o->osem = (tl_algorithm_flags(ak) & TL_ALGO_SUBSETS) != 0;
  o->subsets = tl_run_spec_subsets(s);
  g_strlcpy(o->prior, s->prior ? s->prior : "", sizeof o->prior);
  o->beta = s->beta;
  o->gamma = s->gamma;
  g_strlcpy(o->projector, tl_run_spec_projector(s), sizeof o->projector);
  o->tor_fwhm_mm = s->tor_fwhm_mm;
  o->tof = s->tof;
  static const TlPetRandoms randoms[] = {TL_PET_RANDOMS_OFF, TL_PET_RANDOMS_DELAYEDS,
                                         TL_PET_RANDOMS_SINGLES, TL_PET_RANDOMS_FILE};
  o->randoms = randoms[s->randoms];
  o->randoms_path = g_strdup(s->randoms_file);
  o->norm_path = g_strdup(s->norm);
  static const TlPetScatter scatter[] = {TL_PET_SCATTER_OFF, TL_PET_SCATTER_SSS,
                                         TL_PET_SCATTER_FILE};
  o->scatter = scatter[s->scatter];
  o->scatter_rounds = s->scatter_rounds;
  o->scatter_restart = s->scatter_restart;
  o->scatter_path = g_strdup(s->scatter_file);
  o->quant = !isnan(s->calibration);
  o->calibration = s->calibration;
  o->frame_start_s = isnan(s->frame_start_s) ? 0 : s->frame_start_s;
  o->duration_s = isnan(s->duration_s) ? 0 : s->duration_s;
  g_strlcpy(o->isotope, s->isotope ? s->isotope : "none", sizeof o->isotope);
  o->mu = s->attenuation ? TL_PET_MU_FILE : TL_PET_MU_NONE;
  o->mu_path = g_strdup(s->attenuation);
  o->filter = s->filter;
  o->filter_every = s->filter_every;
  o->rays_tangential = s->rays_tangential;
  o->rays_axial = s->rays_axial;
  o->sensitivity_path = g_strdup(s->sensitivity);
  o->sensitivity_out_path = g_strdup(s->sensitivity_out);
  if (iterations) *iterations = tl_run_spec_iterations(s);
  /* what the window has no row for, named so the person knows it is not used */
  static const char *const unused[] = {"binned", "epsilon", "relaxation", "objective",
                                       "tof-nsigma", "randoms-out", "scatter-out", "grid",
                                       "truth", "start", "device", "cache", "kernels",
                                       "checkpoint", "checkpoint-every", "resume"};
  g_autoptr(TlRunSpec) d = tl_run_spec_new();
  GString *list = g_string_new(NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(unused); i++) {
    g_autofree char *a = tl_run_spec_get(s, unused[i]), *b = tl_run_spec_get(d, unused[i]);
    if (g_strcmp0(a, b) != 0) g_string_append_printf(list, "%s%s", list->len ? ", " : "", unused[i]);
  }
  if (ignored && list->len) *ignored = g_string_free(list, FALSE);
  else g_string_free(list, TRUE);
  return TRUE;
}

void tl_job_free(TlJob *job) {
  if (job)
    job->vt->free(job);
}

static void on_progress(const TlReconProgress *p, gpointer data) {
  TlPetJob *self = data;
  self->last = *p;
  self->have_last = TRUE;
}

/* shown = scale * post(current image), timed into `profile` (may be NULL). */
static gboolean refresh_shown(TlPetJob *self, TlProfile *profile, GError **error) {
  guint64 n = tl_image_grid_n_voxels(&self->parent.grid);
  if (!self->shown && !(self->shown = tl_array_new_float(self->ctx, n, error)))
    return FALSE;
  if (self->post.kind != TL_FILTER_NONE && !self->scratch &&
      !(self->scratch = tl_array_new_float(self->ctx, n, error)))
    return FALSE;
  g_autoptr(TlStream) s = tl_stream_new(self->ctx, error);
  if (!s)
    return FALSE;
  if (profile) tl_stream_set_profile(s, profile);
  if (!tl_stream_copy(s, tl_recon_image_array(self->recon), 0, self->shown, 0, n * sizeof(float), error) ||
      (self->post.kind != TL_FILTER_NONE &&
       !tl_filter_apply(self->ctx, s, &self->post, &self->parent.grid, self->shown, self->scratch, error)))
    return FALSE;
  double k = self->scale;
  if (self->truth_sum > 0) {
    /* x is in counts per unit sensitivity (arbitrary: the projector's weights); scaled to the
     * truth's total it reads in the phantom's units, which the simulator drew its events from */
    g_autoptr(TlExprArgs) sum_args = tl_expr_args_new();
    tl_expr_args_array(sum_args, "x", (TlArray *)tl_recon_image_array(self->recon));
    tl_expr_args_set_label(sum_args, "truth units");
    double total = 0;
    if (!tl_expr_reduce(self->ctx, s, "sum(x)", sum_args, &total, error))
      return FALSE;
    k = total > 0 ? self->truth_sum / total : 0;
    /* an image at the truth's total already (a snapshot restarted) stays bit for bit */
    if (fabs(k - 1) < 1e-6)
      k = 0;
  }
  if (k > 0) {
    g_autoptr(TlExprArgs) args = tl_expr_args_new();
    tl_expr_args_array(args, "v", self->shown);
    tl_expr_args_scalar(args, "k", (float)k);
    tl_expr_args_set_label(args, self->truth_sum > 0 ? "truth units" : "Bq/mL");
    if (!tl_expr_assign(self->ctx, s, "v = k * v", args, error))
      return FALSE;
  }
  return tl_stream_finish(s, error);
}

/* SSS of the current image, tail fitted, as the term's new scatter (in place); the step's
 * note says what it found. */
static gboolean scatter_round(TlPetJob *self, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlScatterRounds so;
  tl_scatter_rounds_init(&so);
  so.cancel = cancel;
  TlScatterRoundInfo info;
  TlScatterEstimate *e = tl_recon_scatter_estimate(self->recon, self->mu, &so, &info, error);
  if (!e)
    return FALSE;
  tl_scatter_estimate_free(self->scatter);
  self->scatter = e;
  self->fit = info.fit;
  self->rounds_done++;
  self->scatter_due = FALSE;
  double total = info.fit.scale * info.fit.total_estimate;
  out->scatter_round = self->rounds_done;
  /* scatter-restart: the last estimate's iterations start again from the uniform image, as
   * tl_recon_scatter_rounds's final_iterations do for the CLI */
  gboolean restart = self->run->scatter_restart && self->rounds_done == self->run->scatter_rounds;
  if (restart && !tl_solver_restart(tl_recon_solver(self->recon), error))
    return FALSE;
  out->note = g_strdup_printf(
      "scatter round %u/%u: SSS %.1f s (%u scatter points, %u × %u detectors), tail fit k = %.4g "
      "on %" G_GUINT64_FORMAT " pairs (%.0f prompts, %.0f randoms): scatter %.0f, %.1f %% of the "
      "counts%s", self->rounds_done, self->run->scatter_rounds, info.seconds, info.sss.scatter_points,
      info.sss.n_t, info.sss.n_r, info.fit.scale, info.fit.tail_pairs, info.fit.tail_counts,
      info.fit.tail_randoms, total, 100.0 * total / MAX(self->parent.events, 1),
      restart ? "; the image starts again from the uniform image" : "");
  return TRUE;
}

static gboolean pet_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlPetJob *self = (TlPetJob *)job;
  *out = (TlJobStep){0};
  tl_recon_set_cancellable(self->recon, cancel);
  /* SSS rounds on the run's schedule, the CLI's: after every `iterations` full iterations
   * (tl_run_spec_scatter_due); a job started from an image estimates before its first step:
   * that image is a reconstruction already */
  guint S = MAX(self->parent.sub_iterations_per_iteration, 1);
  if (self->scatter_kind == TL_PET_SCATTER_SSS && self->rounds_done < self->run->scatter_rounds &&
      (self->scatter_due ||
       (self->steps % S == 0 && tl_run_spec_scatter_due(self->run, self->steps / S, NULL, NULL))) &&
      !scatter_round(self, cancel, out, error)) {
    tl_job_step_clear(out);
    return FALSE;
  }
  self->have_last = FALSE;
  if (!tl_recon_step(self->recon, error)) {
    tl_job_step_clear(out);
    return FALSE;
  }
  self->steps++;
  g_assert(self->have_last);
  const TlProfile *now = tl_recon_profile(self->recon);
  out->sub_iterations = self->last.sub_iterations;
  out->iteration = self->last.iteration;
  out->subset = self->last.subset;
  out->n_subsets = self->last.n_subsets;
  out->loglik = self->last.loglik;
  out->rmse = self->last.rmse;
  out->seconds = self->last.seconds;
  out->filtered = self->last.filtered;
  out->profile = tl_profile_new_since(now, self->before);
  tl_profile_clear(self->before);
  tl_profile_merge(self->before, now);
  if (self->post.kind != TL_FILTER_NONE || self->scale > 0 || self->truth_sum > 0) {
    self->shown_valid = refresh_shown(self, out->profile, error);
    if (!self->shown_valid) {
      tl_job_step_clear(out);
      return FALSE;
    }
  }
  return TRUE;
}

static const TlArray *pet_image(TlJob *job) {
  TlPetJob *self = (TlPetJob *)job;
  /* Before the first step (the initial image) nothing has been filtered yet. */
  return self->shown_valid ? self->shown : tl_recon_image_array(self->recon);
}

static void pet_free(TlJob *job) {
  TlPetJob *self = (TlPetJob *)job;
  tl_recon_free(self->recon);
  g_clear_pointer(&self->shown, tl_array_free);
  g_clear_pointer(&self->scratch, tl_array_free);
  tl_profile_free(self->before);
  tl_image_free(self->mu);
  tl_norm_free(self->norm);
  tl_randoms_free(self->randoms);
  tl_scatter_estimate_free(self->scatter);
  tl_run_spec_free(self->run);
  g_free(self);
}

gboolean tl_job_solver_set_prior(TlSolver *sv, const char *prior, double beta, double gamma,
                                 GError **error) {
  TlPriorParams pp;
  tl_prior_params_init(&pp);
  pp.gamma = gamma;
  pp.epsilon = tl_solver_epsilon(sv); /* the run's (NAN: still automatic) */
  return tl_solver_set_prior(sv, prior && prior[0] ? prior : NULL, beta, &pp, error);
}

static gboolean pet_set_prior(TlJob *job, const char *prior, double beta, double gamma,
                              GError **error) {
  return tl_job_solver_set_prior(tl_recon_solver(((TlPetJob *)job)->recon), prior, beta, gamma,
                                 error);
}

static TlImage *pet_get_iterate(TlJob *job, GError **error) {
  return tl_recon_image(((TlPetJob *)job)->recon, error);
}

/* The shown copy is stale until refreshed (scaled images: at once, so no frame shows the
 * image unscaled). An image to start from is a reconstruction already: SSS estimates from it
 * before the next step. */
static gboolean pet_set_image(TlJob *job, const TlImage *image, GError **error) {
  TlPetJob *self = (TlPetJob *)job;
  self->shown_valid = FALSE;
  if (!tl_solver_set_image(tl_recon_solver(self->recon), image, error))
    return FALSE;
  if (self->scatter_kind == TL_PET_SCATTER_SSS && self->rounds_done < self->run->scatter_rounds)
    self->scatter_due = TRUE;
  if (self->scale > 0 || self->truth_sum > 0)
    return self->shown_valid = refresh_shown(self, NULL, error);
  return TRUE;
}

static gboolean pet_get_model(TlJob *job, TlJobModel *m, GError **error) {
  TlPetJob *self = (TlPetJob *)job;
  *m = (TlJobModel){0};
  if (!(m->image = tl_recon_image(self->recon, error)))
    return FALSE;
  g_strlcpy(m->projector, self->projector, sizeof m->projector);
  m->tof = self->tof;
  m->mu = self->mu ? tl_image_copy(self->mu) : NULL;
  m->norm = self->norm ? tl_norm_copy(self->norm) : NULL;
  m->randoms = self->randoms ? tl_randoms_copy(self->randoms) : NULL;
  m->scatter = self->scatter ? tl_scatter_estimate_copy(self->scatter) : NULL;
  m->scatter_rounds = self->rounds_done;
  m->fit = self->fit;
  m->n_data = tl_operator_n_data(tl_recon_operator(self->recon));
  /* what the solver really divides by: the device's term, summed there */
  const TlArray *a = tl_recon_additive(self->recon);
  if (a && m->n_data) {
    g_autoptr(TlExprArgs) args = tl_expr_args_new();
    tl_expr_args_array(args, "a", (TlArray *)a);
    if (!tl_expr_reduce(self->ctx, NULL, "sum(a)", args, &m->additive_sum, error)) {
      tl_job_model_clear(m);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean pet_check_kernel(TlJob *job, const char *name, GError **error) {
  return tl_solver_check_kernel(tl_recon_solver(((TlPetJob *)job)->recon), name, error);
}

static const TlJobVTable kPetJob = {pet_step,        pet_image,     pet_free,
                                    pet_set_prior,   pet_get_iterate, pet_set_image,
                                    pet_get_model,   pet_check_kernel};

/* The corrections' inputs, read (and checked against the data's scanner) before the
 * reconstruction is made; each error names the file. */
static gboolean read_corrections(const TlListmode *lm, const TlImage *mu, const TlRunSpec *opt,
                                 TlNorm **norm, TlRandoms **randoms, TlScatterEstimate **scatter,
                                 GError **error) {
  if (opt->norm && !(*norm = tl_norm_load(opt->norm, lm->scanner, error))) {
    g_prefix_error(error, "Normalisation: ");
    return FALSE;
  }
  switch (opt->randoms) {
  case TL_RUN_RANDOMS_DELAYEDS:
    if (lm->n_delayed == 0) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Randoms from the delayeds: "
                  "these data hold no delayed coincidences (choose a randoms file)");
      return FALSE;
    }
    if (!(*randoms = tl_randoms_from_delayeds(lm->scanner, lm->delayed, lm->n_delayed, error)))
      return FALSE;
    break;
  case TL_RUN_RANDOMS_SINGLES:
    if (!lm->singles) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Randoms from the singles: "
                  "these data hold no singles rates (choose the delayeds or a randoms file)");
      return FALSE;
    }
    if (!(*randoms = tl_randoms_from_singles(lm->scanner, lm->singles, lm->coincidence_window_ns,
                                             lm->duration_s, NULL, error))) {
      g_prefix_error(error, "Randoms: ");
      return FALSE;
    }
    break;
  case TL_RUN_RANDOMS_FILE:
    if (!opt->randoms_file) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Randoms: no randoms file chosen");
      return FALSE;
    }
    if (!(*randoms = tl_randoms_load(opt->randoms_file, lm->scanner, error))) {
      g_prefix_error(error, "Randoms: ");
      return FALSE;
    }
    break;
  default:
    break;
  }
  if (opt->scatter == TL_RUN_SCATTER_SSS && !mu) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Scatter by single scatter "
                "simulation needs attenuation correction (the μ-map is the scattering medium and "
                "gives the object's outline for the tail fit): choose a μ-map");
    return FALSE;
  }
  if (opt->scatter == TL_RUN_SCATTER_SSS && (opt->scatter_rounds < 1 || opt->scatter_rounds > 100)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "Scatter: %u rounds: expected 1 to 100", opt->scatter_rounds);
    return FALSE;
  }
  if (opt->scatter == TL_RUN_SCATTER_FILE) {
    if (!opt->scatter_file) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Scatter: no scatter estimate file chosen");
      return FALSE;
    }
    if (!(*scatter = tl_scatter_estimate_load(opt->scatter_file, error)) ||
        !tl_scatter_estimate_check_scanner(*scatter, lm->scanner, opt->scatter_file, error)) {
      g_prefix_error(error, "Scatter: ");
      return FALSE;
    }
  }
  return TRUE;
}

/* DC / (T F beta) of the run, the frame from the data where the run leaves it (as the CLI). */
static gboolean quant_scale(const TlListmode *lm, const TlRunSpec *run, double *scale,
                            GError **error) {
  TlQuant q = {.calibration = run->calibration,
               .duration_s = isnan(run->duration_s) ? lm->duration_s : run->duration_s,
               .frame_start_s = !isnan(run->frame_start_s) ? run->frame_start_s
                                : lm->duration_s > 0        ? lm->start_s
                                                            : 0};
  if (!(q.duration_s > 0)) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "Images in Bq/mL: these data "
                "state no duration: give the frame's duration");
    return FALSE;
  }
  if (!(q.isotope = tl_isotope_find(run->isotope ? run->isotope : "none", error)) ||
      !tl_quant_validate(&q, error)) {
    g_prefix_error(error, "Images in Bq/mL: ");
    return FALSE;
  }
  *scale = tl_quant_scale(&q);
  return TRUE;
}

TlJob *tl_pet_job_new(TlContext *ctx, const TlListmode *lm, const GArray *bins,
                      const TlSinogram *arc, const TlImage *truth, const TlImage *mu, const TlImageGrid *grid,
                      const TlRunSpec *run, GError **error) {
  if (run->modality != TL_RUN_PET) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "modality = ct: not a PET run");
    return NULL;
  }
  /* the CLI's conversion: the window cannot read a key differently */
  TlReconOptions o;
  TlFilter post;
  if (!tl_run_spec_to_recon_options(run, &o, &post, error))
    return NULL;
  gboolean quant = !isnan(run->calibration);
  /* the cheap checks first: a bad file fails before the sensitivity image is made */
  double scale = 0;
  if (quant && !quant_scale(lm, run, &scale, error))
    return NULL;
  g_autoptr(TlNorm) norm = NULL;
  g_autoptr(TlRandoms) randoms = NULL;
  g_autoptr(TlScatterEstimate) scatter = NULL;
  if (!read_corrections(lm, mu, run, &norm, &randoms, &scatter, error))
    return NULL;
  o.attenuation = mu;
  o.norm = norm;
  o.randoms = randoms;
  o.scatter_estimate = scatter;
  /* the run's sensitivity image (key `sensitivity`), on the grid, as the CLI reads it */
  g_autoptr(TlImage) sens = NULL;
  if (!tl_run_spec_load_sensitivity(run, grid, &sens, error))
    return NULL;
  o.sensitivity = sens;
  /* The convergence plot wants a point per sub-iteration. */
  o.loglik = TL_LOGLIK_SUBITERATION;
  double counts = (double)lm->n_events;
  TlRecon *recon;
  g_autoptr(GArray) histogram = NULL;
  if (!bins && run->binned) /* binned = true: the events as counts per crystal pair */
    bins = histogram = tl_listmode_histogram(lm);
  if (arc) { /* a sinogram whose bins are lines (the CLI's tl_recon_new_lines) */
    o.tof = FALSE;
    counts = 0;
    for (guint64 i = 0; i < arc->n_bins; i++) counts += arc->data[i];
    recon = tl_recon_new_lines(ctx, arc, grid, &o, error);
  } else if (bins) {
    if (!histogram) o.tof = FALSE; /* a sinogram has no TOF bins */
    counts = 0;
    for (guint i = 0; i < bins->len; i++) counts += g_array_index(bins, TlBin, i).count;
    recon = tl_recon_new_binned(ctx, lm->scanner, (const TlBin *)bins->data, bins->len, grid,
                                &o, error);
  } else {
    recon = tl_recon_new_listmode(ctx, lm, grid, &o, error);
  }
  if (!recon)
    return NULL;
  /* sensitivity-out: the image the run uses, written as the CLI writes it */
  if (!tl_run_spec_apply_kappa(run, tl_recon_solver(recon), error) ||
      !tl_run_spec_write_sensitivity(run, recon, error) ||
      (truth && !tl_recon_set_truth(recon, truth, error))) {
    tl_recon_free(recon);
    return NULL;
  }
  TlPetJob *self = g_new0(TlPetJob, 1);
  self->parent = (TlJob){&kPetJob, *grid, o.subsets, counts};
  if (quant) g_strlcpy(self->parent.unit, "Bq/mL", sizeof self->parent.unit);
  /* a simulation made in the window (its truth known, no calibration): shown in the truth's
   * units. A run's `truth =` file is the RMSE's reference only: the image stays the
   * reconstruction's, as the CLI and Python write it (the cross-door test) */
  if (truth && !run->truth && !quant && tl_image_grid_equal(&truth->grid, grid) &&
      tl_image_sum(truth) > 0) {
    self->truth_sum = tl_image_sum(truth);
    g_strlcpy(self->parent.unit, truth->unit[0] ? truth->unit : TL_PET_TRUTH_UNIT, sizeof self->parent.unit);
  }
  self->recon = recon;
  self->ctx = ctx;
  self->post = post;
  self->scale = scale;
  g_strlcpy(self->projector, o.projector, sizeof self->projector);
  self->tof = o.tof;
  self->mu = mu ? tl_image_copy(mu) : NULL;
  self->norm = g_steal_pointer(&norm);
  self->randoms = g_steal_pointer(&randoms);
  self->scatter = g_steal_pointer(&scatter);
  static const TlPetScatter kinds[] = {TL_PET_SCATTER_OFF, TL_PET_SCATTER_SSS,
                                       TL_PET_SCATTER_FILE};
  self->scatter_kind = kinds[run->scatter];
  self->run = tl_run_spec_copy(run);
  self->before = tl_profile_new();
  /* The set-up kernels (sensitivity, init) ran before the first step: not its cost. */
  tl_profile_merge(self->before, tl_recon_profile(recon));
  tl_recon_set_callback(recon, on_progress, self);
  /* Smaller submissions so Stop and closing the window answer quickly. */
  tl_recon_set_submit_budget(recon, 1u << 22);
  /* the initial image in Bq/mL (or the truth's units) too */
  if ((scale > 0 || self->truth_sum > 0) && !(self->shown_valid = refresh_shown(self, NULL, error))) {
    pet_free(&self->parent);
    return NULL;
  }
  return &self->parent;
}
