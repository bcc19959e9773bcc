/* TlJob over TlRecon. TlRecon's profile accumulates since the start; the window wants
 * the cost of the last sub-iteration, so each step reports the difference. A filter "after
 * reconstruction" filters a copy of each new image (the run may end after any step), so
 * the views and saving see the filtered image while the iterations use the unfiltered one. */
#include <math.h>
#include "tl-job.h"
#include "pet/tl-recon.h"

typedef struct {
  TlJob parent;
  TlRecon *recon;
  TlContext *ctx;
  TlFilter post;       /* filter of the shown image (TL_FILTER_NONE = none) */
  TlArray *shown, *scratch; /* the filtered copy and the filter's scratch, once made */
  gboolean shown_valid;     /* shown holds the last complete image, filtered */
  TlProfile *before;   /* the accumulated profile after the previous step */
  TlReconProgress last;
  gboolean have_last;
} TlPetJob;

void tl_job_step_clear(TlJobStep *s) {
  g_clear_pointer(&s->profile, tl_profile_free);
}

void tl_pet_job_options_clear(TlPetJobOptions *o) {
  g_clear_pointer(&o->mu_path, g_free);
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

/* shown = post(current image), timed into `profile`. */
static gboolean post_filter(TlPetJob *self, TlProfile *profile, GError **error) {
  guint64 n = tl_image_grid_n_voxels(&self->parent.grid);
  if (!self->shown && !(self->shown = tl_array_new_float(self->ctx, n, error)))
    return FALSE;
  if (!self->scratch && !(self->scratch = tl_array_new_float(self->ctx, n, error)))
    return FALSE;
  g_autoptr(TlStream) s = tl_stream_new(self->ctx, error);
  if (!s)
    return FALSE;
  tl_stream_set_profile(s, profile);
  return tl_stream_copy(s, tl_recon_image_array(self->recon), 0, self->shown, 0, n * sizeof(float), error) &&
         tl_filter_apply(self->ctx, s, &self->post, &self->parent.grid, self->shown, self->scratch, error);
}

static gboolean pet_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  TlPetJob *self = (TlPetJob *)job;
  tl_recon_set_cancellable(self->recon, cancel);
  self->have_last = FALSE;
  if (!tl_recon_step(self->recon, error))
    return FALSE;
  g_assert(self->have_last);
  const TlProfile *now = tl_recon_profile(self->recon);
  *out = (TlJobStep){
    .sub_iterations = self->last.sub_iterations,
    .iteration = self->last.iteration,
    .subset = self->last.subset,
    .n_subsets = self->last.n_subsets,
    .loglik = self->last.loglik,
    .rmse = self->last.rmse,
    .seconds = self->last.seconds,
    .filtered = self->last.filtered,
    .profile = tl_profile_new_since(now, self->before),
  };
  tl_profile_clear(self->before);
  tl_profile_merge(self->before, now);
  if (self->post.kind != TL_FILTER_NONE) {
    self->shown_valid = post_filter(self, out->profile, error);
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
  g_free(self);
}

gboolean tl_job_solver_set_prior(TlSolver *sv, const char *prior, double beta, double gamma,
                                 GError **error) {
  TlPriorParams pp;
  tl_prior_params_init(&pp);
  pp.gamma = gamma;
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

/* The shown (post-filtered) copy is stale until the next step refreshes it. */
static gboolean pet_set_image(TlJob *job, const TlImage *image, GError **error) {
  TlPetJob *self = (TlPetJob *)job;
  self->shown_valid = FALSE;
  return tl_solver_set_image(tl_recon_solver(self->recon), image, error);
}

static const TlJobVTable kPetJob = {pet_step, pet_image, pet_free, pet_set_prior, pet_get_iterate,
                                    pet_set_image};

TlJob *tl_pet_job_new(TlContext *ctx, const TlListmode *lm, const TlImage *truth,
                      const TlImage *mu, const TlImageGrid *grid, const TlPetJobOptions *opt,
                      GError **error) {
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.algo = opt->osem ? TL_RECON_OSEM : TL_RECON_MLEM;
  o.algorithm = opt->algorithm[0] ? opt->algorithm : NULL;
  o.subsets = opt->osem ? MAX(opt->subsets, 1) : 1;
  o.prior = opt->prior[0] ? opt->prior : NULL;
  o.beta = o.prior ? opt->beta : 0;
  if (o.prior) o.prior_params.gamma = opt->gamma;
  o.projector = opt->projector;
  o.tor_fwhm_mm = opt->tor_fwhm_mm;
  o.tof = opt->tof;
  o.attenuation = mu;
  /* randoms from the delayeds (fan sums, pet/tl-randoms.h): read when the recon is made */
  g_autoptr(TlRandoms) randoms = NULL;
  if (opt->randoms && lm->n_delayed > 0) {
    if (!(randoms = tl_randoms_from_delayeds(lm->scanner, lm->delayed, lm->n_delayed, error)))
      return NULL;
    o.randoms = randoms;
  }
  if (opt->filter_every) {
    o.filter = opt->filter;
    o.filter_every = opt->filter_every;
  }
  /* The convergence plot wants a point per sub-iteration. */
  o.loglik = TL_LOGLIK_SUBITERATION;
  double counts = (double)lm->n_events;
  TlRecon *recon;
  if (opt->bins) {
    o.tof = FALSE; /* a sinogram has no TOF bins */
    counts = 0;
    for (guint i = 0; i < opt->bins->len; i++) counts += g_array_index(opt->bins, TlBin, i).count;
    recon = tl_recon_new_binned(ctx, lm->scanner, (const TlBin *)opt->bins->data, opt->bins->len,
                                grid, &o, error);
  } else {
    recon = tl_recon_new_listmode(ctx, lm, grid, &o, error);
  }
  if (!recon)
    return NULL;
  if (truth && !tl_recon_set_truth(recon, truth, error)) {
    tl_recon_free(recon);
    return NULL;
  }
  TlPetJob *self = g_new0(TlPetJob, 1);
  self->parent = (TlJob){&kPetJob, *grid, o.subsets, counts};
  self->recon = recon;
  self->ctx = ctx;
  self->post = opt->filter_every ? (TlFilter){TL_FILTER_NONE, 0} : opt->filter;
  self->before = tl_profile_new();
  /* The set-up kernels (sensitivity, init) ran before the first step: not its cost. */
  tl_profile_merge(self->before, tl_recon_profile(recon));
  tl_recon_set_callback(recon, on_progress, self);
  /* Smaller submissions so Stop and closing the window answer quickly. */
  tl_recon_set_submit_budget(recon, 1u << 22);
  return &self->parent;
}
