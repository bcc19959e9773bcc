/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlJob: one reconstruction as the window's worker sees it. The runner only calls
 * these hooks (always on its worker thread), so a CT solver plugs in by providing
 * another vtable; nothing in the window knows about TlRecon. */
#pragma once
#include <gio/gio.h>
#include "tl-profiler.h"
#include "tl-array.h"
#include "image/tl-image.h"
#include "image/tl-filter.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/correct/tl-norm.h"
#include "pet/correct/tl-sss.h"
#include "ct/tl-ct-data.h"
#include "recon/tl-solver.h"
#include "run/tl-run-spec.h"

G_BEGIN_DECLS

/* What one sub-iteration reports. */
typedef struct {
  guint sub_iterations;  /* done so far, this one included */
  guint iteration, subset, n_subsets;
  double loglik, rmse;   /* the plotted objective (PET: log-likelihood; CT: the solver's
                            objective, tl_ct_job_objective_label) and RMSE; NAN when not known */
  double seconds;
  gboolean filtered;     /* PET: the filter between iterations ran on this image */
  TlProfile *profile;    /* GPU time of this sub-iteration only (owned by the step) */
  guint scatter_round;   /* PET: a new scatter estimate (round n, from 1) came before this
                            sub-iteration; 0 = none */
  char *note;            /* what else happened (the scatter round's fit), for the status line;
                            owned, NULL = nothing */
} TlJobStep;

void tl_job_step_clear(TlJobStep *s);

typedef struct _TlJob TlJob;

/* The model of the expected counts a PET job uses, ybar = D A x + a (tl-recon.h), as host
 * copies taken between two steps: what the data view predicts the counts with, and what the
 * tests check the job against. */
typedef struct {
  TlImage *image;             /* the iterate x (unfiltered, counts per unit sensitivity) */
  char projector[16];
  TlImage *mu;                /* D's attenuation (NULL = none) */
  TlNorm *norm;               /* D's efficiencies (NULL = none) */
  TlRandoms *randoms;         /* a's randoms (NULL = none) */
  TlScatterEstimate *scatter; /* a's scatter, scaled (NULL = none yet) */
  gboolean tof;
  double additive_sum;        /* sum over the data of the additive term on the device (0 without) */
  guint64 n_data;             /* records (events or bins) */
  guint scatter_rounds;       /* scatter estimates made by this job (SSS) */
  TlTailFit fit;              /* the last one's tail fit */
} TlJobModel;

void tl_job_model_clear(TlJobModel *m);

typedef struct {
  /* One sub-iteration; FALSE + G_IO_ERROR_CANCELLED leaves the last complete image. */
  gboolean (*step)(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error);
  /* The current image on the device, on `grid`. */
  const TlArray *(*image)(TlJob *job);
  void (*free)(TlJob *job);
  /* Optional: a new prior (name "" = none), beta and gamma, used from the next step on;
   * called on the worker between steps. */
  gboolean (*set_prior)(TlJob *job, const char *prior, double beta, double gamma,
                        GError **error);
  /* Optional: the iterate itself (a host copy; PET's post-filter is not applied), and a new
   * starting image for the next step (steering: a new job takes the old one's image;
   * restarting from a snapshot). Both on the worker between steps. */
  TlImage *(*get_iterate)(TlJob *job, GError **error);
  gboolean (*set_image)(TlJob *job, const TlImage *image, GError **error);
  /* Optional (PET): the model of the expected counts (copies; clear with tl_job_model_clear),
   * on the worker between steps. */
  gboolean (*get_model)(TlJob *job, TlJobModel *out, GError **error);
  /* Optional: whether an edit of built-in kernel `name` would change the next steps (their
   * configured path, tl_solver_check_kernel); FALSE + why not. Between steps. */
  gboolean (*check_kernel)(TlJob *job, const char *name, GError **error);
} TlJobVTable;

struct _TlJob {
  const TlJobVTable *vt;
  TlImageGrid grid;
  guint sub_iterations_per_iteration;
  double events;         /* measurements per full pass (for events/s) */
  char unit[TL_IMAGE_UNIT_MAX]; /* of the image shown and saved ("" = arbitrary: counts per
                                   unit sensitivity; "Bq/mL" calibrated; an opened image's;
                                   TL_PET_TRUTH_UNIT for a simulation, scaled to its truth) */
};

/* The unit of a simulated phantom's activity (its truth has none of its own). */
#define TL_PET_TRUTH_UNIT "phantom units"

void tl_job_free(TlJob *job);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlJob, tl_job_free)

/* Applies a prior change to a job's solver (shared by the PET and CT jobs). */
gboolean tl_job_solver_set_prior(TlSolver *sv, const char *prior, double beta, double gamma,
                                 GError **error);

/* PET: list-mode reconstruction with any list-mode algorithm of the registry (tl-pet-job.c). */
typedef enum {
  TL_PET_MU_NONE,     /* no attenuation correction */
  TL_PET_MU_PHANTOM,  /* the simulated phantom's mu-map (TlDocument.mu) */
  TL_PET_MU_FILE,     /* a mu-map image file (mu_path), read when the job is made */
} TlPetMu;

typedef enum {
  TL_PET_RANDOMS_OFF,
  TL_PET_RANDOMS_DELAYEDS, /* estimated from the data's delayed coincidences (fan sums) */
  TL_PET_RANDOMS_FILE,     /* a randoms file (randoms_path), read when the job is made */
  TL_PET_RANDOMS_SINGLES,  /* from the data's singles rates (2 tau S_i S_j T) */
} TlPetRandoms;

typedef enum {
  TL_PET_SCATTER_OFF,
  TL_PET_SCATTER_SSS,      /* single scatter simulation of the current image (needs mu), tail
                              fitted, re-estimated between iterations for scatter_rounds rounds */
  TL_PET_SCATTER_FILE,     /* a scatter estimate file (scatter_path), used as it is */
} TlPetScatter;

/* The side panel's PET settings: a form, not what a job is made from. Every job is made from a
 * TlRunSpec (tl_pet_job_options_to_run below), as the CLI's and Python's runs are, so the window
 * cannot run a setting the other doors would read differently. */
typedef struct {
  char algorithm[16];    /* a registry algorithm for list mode: mlem, osem, osl, bsrem */
  gboolean osem;         /* it takes subsets */
  guint subsets;
  char prior[16];        /* osl / bsrem: quadratic, rdp, tv, or "" */
  double beta, gamma;
  char projector[16];    /* "siddon", "joseph" or "tor" */
  double tor_fwhm_mm;    /* "tor": FWHM across the tube */
  gboolean tof;          /* weight events by their TOF bins (data with TOF only) */
  TlPetRandoms randoms;  /* the randoms in the model's additive term */
  char *randoms_path;    /* TL_PET_RANDOMS_FILE: a randoms file (tl_randoms_load); owned */
  char *norm_path;       /* a normalisation (.tln, tl_norm_load) or NULL: none; owned; read and
                            checked against the data's scanner when the job is made */
  TlPetScatter scatter;  /* the scatter in the additive term */
  guint scatter_rounds;  /* TL_PET_SCATTER_SSS: estimates, one after every `iterations` full
                            iterations, the run's (1 + N) x iterations in all (a job started
                            from an image: before its first step, then on the same schedule) */
  gboolean scatter_restart; /* TL_PET_SCATTER_SSS: the last estimate's iterations start again
                               from the uniform image (run key scatter-restart) */
  char *scatter_path;    /* TL_PET_SCATTER_FILE: a scatter estimate (.tlsc); owned */
  /* Images in Bq/mL (pet/tl-units.h): the image shown and saved times DC / (T F beta).
   * duration_s <= 0: the data's (their duration_s). */
  gboolean quant;
  double calibration, frame_start_s, duration_s;
  char isotope[16];      /* a tl_isotope_find name ("none": no decay) */
  TlPetMu mu;
  char *mu_path;         /* TL_PET_MU_FILE; owned (tl_pet_job_options_clear) */
  TlFilter filter;       /* TL_FILTER_NONE = none */
  /* 0: the filter applies to what is shown and saved, a copy of the current image, while
   * the iterations go on unfiltered (post-reconstruction filtering, whenever the run
   * ends); N: inside the reconstruction after every N-th sub-iteration. */
  guint filter_every;
  /* sinograms whose bins can be lines: rays per line (run keys rays-tangential, rays-axial),
   * 0 = 1 */
  guint rays_tangential, rays_axial;
  /* run keys sensitivity, sensitivity-out: an image used instead of the computed sensitivity,
   * a file the run's sensitivity is written to; NULL = none; owned */
  char *sensitivity_path, *sensitivity_out_path;
} TlPetJobOptions;

void tl_pet_job_options_clear(TlPetJobOptions *o);

/* The window's PET settings as a run (compute/run/tl-run-spec.h: the text form the CLI's
 * --run reads) and back. to_run: data, iterations and the options into `s` (its other keys
 * stay); the phantom's mu-map is no file, so a run cannot name it (GError). from_run: the
 * run's keys into `o` (cleared first; validated); *ignored (may be NULL; g_free) lists the
 * run's keys with values the window has no row for ("binned, start"), or NULL. */
gboolean tl_pet_job_options_to_run(const TlPetJobOptions *o, const char *data, guint iterations,
                                   TlRunSpec *s, GError **error);
gboolean tl_pet_job_options_from_run(const TlRunSpec *s, TlPetJobOptions *o, guint *iterations,
                                     char **ignored, GError **error);

/* The job of a run (compute/run/tl-run-spec.h): the same description `tomolab-cli recon --run`
 * reads, turned into TlReconOptions by the same tl_run_spec_to_recon_options, with the
 * corrections the run names read here (norm, randoms, scatter file) as the CLI reads them.
 * `bins` (TlBin of lm's scanner, borrowed) or NULL: lm's events. `mu` (attenuation, mm^-1) and
 * `truth` (both may be NULL) must be on `grid`: the caller reads the run's attenuation file or
 * passes a simulated phantom's. The run's subsets must be resolved (not 0 = auto where the
 * algorithm takes subsets). Copies what it needs. Slow (sensitivity image): call on the worker. */
TlJob *tl_pet_job_new(TlContext *ctx, const TlListmode *lm, const GArray *bins,
                      const TlSinogram *arc, const TlImage *truth, const TlImage *mu, const TlImageGrid *grid,
                      const TlRunSpec *run, GError **error);

/* CT: the side panel's CT settings (the form the run is made from, tl_ct_job_options_to_run). */
typedef struct {
  char algo[16];         /* a registry algorithm ("sirt", "os-sart", "cgls", "mlem", "osem",
                            "osl", "bsrem") or "fdk" */
  guint subsets;         /* the algorithms with subsets, and mlem (= osem) */
  char prior[16];        /* osl / bsrem: quadratic, rdp, tv, or "" */
  double beta, gamma;
  char projector[16];    /* "joseph", "siddon" or "raycast" */
  double centre;         /* parallel beam: the column of the rotation axis; NAN: the dataset's */
  TlCtFilter fdk_filter; /* fdk / fbp: the ramp filter's window */
} TlCtJobOptions;

/* The window's CT settings as a run (modality ct; `data` may be NULL: simulated). */
gboolean tl_ct_job_options_to_run(const TlCtJobOptions *o, const char *data, guint iterations,
                                  TlRunSpec *s, GError **error);

/* The job of a CT run: FDK / FBP (the run's fdk-filter and batch) as a one-step job, or the
 * iterative solver from tl_run_spec_to_ct_options (the CLI's conversion); the run's subsets
 * resolved. `data` (its geometry at the centre the run asks for) and `truth` (may be NULL, on
 * `grid`) are only read here. Call on the worker. */
TlJob *tl_ct_job_new(TlContext *ctx, const TlCtData *data, const TlImage *truth,
                     const TlImageGrid *grid, const TlRunSpec *run, GError **error);
/* What the convergence plot shows for this algorithm: CT's least-squares objective
 * 1/2 |Ax - y|^2 falls, MLEM's Poisson log-likelihood rises. */
const char *tl_ct_job_objective_label(const char *algo);

G_END_DECLS
