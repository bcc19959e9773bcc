/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRunSpec: one reconstruction run described once, for every front end (issue 32): the data,
 * the algorithm and its parameters, the projector, the prior, every correction, the filters,
 * the grid, the start image, the device and the outputs, for PET and CT runs. The CLI's recon
 * and ct-recon fill one from their options (and from `--run FILE`), and the run is made from it;
 * tl_run_spec_to_recon_options / tl_run_spec_to_ct_options give the modality's options.
 *
 * Text form (docs/formats.md, "Run files"): one `key = value` per line, `#` starts a comment;
 * every key at most once; unknown keys, bad numbers, values out of range and names that no
 * registry knows (algorithms, priors, projectors) are refused with the line, key and value.
 * tl_run_spec_to_text writes every key, so a file written and read back gives the same spec.
 *
 * A value that files leave to the run ("auto") is stored as 0 for counts, NAN for numbers and
 * NULL for paths and names; the keys' table (tl_run_keys) gives each key's type, default, unit
 * and meaning, and is what docs/formats.md lists. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "image/tl-filter.h"
#include "pet/tl-recon.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-fdk.h"

G_BEGIN_DECLS

typedef enum { TL_RUN_PET, TL_RUN_CT } TlRunModality;
typedef enum { TL_RUN_RANDOMS_NONE, TL_RUN_RANDOMS_DELAYEDS, TL_RUN_RANDOMS_SINGLES,
               TL_RUN_RANDOMS_FILE } TlRunRandoms;
typedef enum { TL_RUN_SCATTER_NONE, TL_RUN_SCATTER_SSS, TL_RUN_SCATTER_FILE } TlRunScatter;
typedef enum { TL_RUN_OBJECTIVE_NEVER, TL_RUN_OBJECTIVE_ITERATION,
               TL_RUN_OBJECTIVE_SUBITERATION } TlRunObjective;

typedef struct {
  TlRunModality modality;  /* modality = pet | ct */
  char *data;              /* the measured data (list mode, sinogram, CT projections) */
  char *algorithm;         /* a registry algorithm; CT also "fdk"; NULL = pet mlem, ct fdk */
  guint subsets;           /* 0 = the algorithm's default (10 with subsets, else 1) */
  guint iterations;        /* 0 = the modality's default (PET 3, CT 10) */
  char *projector;         /* PET: tl_projector_names or srm; CT: joseph, siddon, raycast;
                              NULL = PET siddon, CT joseph */
  char *prior;             /* a registry prior, NULL = none */
  double beta;             /* prior strength (>= 0) */
  double gamma;            /* rdp edge preservation (>= 0) */
  double epsilon;          /* rdp / tv smoothing (> 0); NAN = auto (PET rdp: from OSEM, PETRIC) */
  double relaxation;       /* bsrem alpha_0, sirt / os-sart lambda */
  guint seed;              /* svrg / saga: the seed of the random subset order */
  char *kappa;             /* PET, prior: per-voxel prior weights (an image); NULL = none */
  guint osem_epochs;       /* PET: OSEM epochs before the algorithm (warm start); 0 = none */
  TlRunObjective objective;/* when the log-likelihood (PET) / objective (CT) is computed */
  gboolean binned;         /* PET: histogram the events into crystal pairs */
  gboolean tof;            /* PET: time of flight */
  double tof_nsigma;       /* PET: TOF kernel truncation (sigmas) */
  double tor_fwhm_mm;      /* PET, projector tor: the tube's FWHM */
  char *attenuation;       /* PET: mu-map (mm^-1) on the grid; NULL = none */
  char *norm;              /* PET: normalisation (.tln); NULL = none */
  TlRunRandoms randoms;
  char *randoms_file;      /* randoms = file: the estimate to read */
  char *randoms_out;       /* write the randoms estimate used */
  TlRunScatter scatter;
  guint scatter_rounds;    /* scatter = sss: rounds (1..100) */
  gboolean scatter_restart;/* scatter = sss: the last round starts from the uniform image */
  char *scatter_file;      /* scatter = file: the estimate to read */
  char *scatter_out;       /* scatter = sss: write the last estimate */
  TlFilter filter;         /* PET: post filter, or between iterations with filter_every */
  guint filter_every;      /* 0 = post filter only */
  guint start_subset;      /* PET: the first sub-iteration's subset (STIR's start subset) */
  gboolean zero_end_planes;/* PET: data of the first and last direct planes left out (STIR) */
  double calibration;      /* PET: Bq/mL calibration factor, NAN = none */
  char *isotope;           /* with calibration: decay correction; NULL = none */
  double duration_s;       /* with calibration: the frame's duration, NAN = the file's */
  double frame_start_s;    /* with calibration: the frame's start, NAN = the file's */
  TlCtFilter fdk_filter;   /* CT, fdk: ramp filter window */
  gboolean nonnegative;    /* CT sirt / sart: clamp at 0 */
  char *centre;            /* CT parallel beam: "auto" or a column; NULL = the file's */
  double pixel_size_mm;    /* CT parallel beam: detector pixel size, NAN = the file's */
  char *slices;            /* CT parallel beam: FIRST:END detector rows; NULL = all */
  guint batch;             /* CT fdk: views per batch, 0 = auto */
  char *grid;              /* NXxNYxNZ@MM (centred); NULL = the truth's, mu-map's, data's */
  char *truth;             /* ground truth image (RMSE), NULL = none */
  char *start;             /* start image on the grid, NULL = the algorithm's */
  char *device;            /* device index or name substring; NULL = $TOMOLAB_DEVICE / best */
  gboolean cache;          /* PET: sensitivity image cache on disk */
  char **kernels;          /* NAME=FILE replacements of built-in kernels (NULL-terminated) */
  char *output;            /* the image to write */
  char *checkpoint;        /* PET: checkpoint file */
  guint checkpoint_every;  /* 0 = every iteration */
  char *resume;            /* PET: checkpoint to go on from */
  gboolean profile;        /* print GPU time per kernel */
  gboolean quiet;          /* no progress on stderr */
  /* PET, arc-corrected sinograms: rays per line (STIR's "number of rays in tangential
   * direction"), 1 to 8 each, at most TL_SINOGRAM_ARC_MAX_RAYS together */
  guint rays_tangential, rays_axial;
  char *sensitivity;       /* PET: the sensitivity image to use (STIR's sensitivity filename) */
  char *sensitivity_out;   /* PET: write the sensitivity image used */
} TlRunSpec;

/* Every key with its defaults (all "auto"; cache on). */
TL_API void tl_run_spec_init(TlRunSpec *s);
TL_API void tl_run_spec_clear(TlRunSpec *s);
TL_API TlRunSpec *tl_run_spec_new(void);
TL_API void tl_run_spec_free(TlRunSpec *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRunSpec, tl_run_spec_free)
TL_API TlRunSpec *tl_run_spec_copy(const TlRunSpec *s);
TL_API gboolean tl_run_spec_equal(const TlRunSpec *a, const TlRunSpec *b);

/* The keys' table, for documentation and front ends. */
typedef enum { TL_RUN_KEY_TEXT, TL_RUN_KEY_PATH, TL_RUN_KEY_COUNT, TL_RUN_KEY_NUMBER,
               TL_RUN_KEY_BOOL, TL_RUN_KEY_CHOICE, TL_RUN_KEY_LIST } TlRunKeyType;
typedef struct {
  const char *key;
  TlRunKeyType type;
  const char *values;   /* what is accepted, in words ("0 to 65535", "pet | ct", ...) */
  const char *def;      /* the default's text */
  const char *unit;     /* "" = none */
  const char *doc;
} TlRunKeyInfo;
/* NULL-key-terminated. */
TL_API const TlRunKeyInfo *tl_run_keys(void);

/* One key from its text value: type, range and names checked (GError naming key and value
 * and what was expected). "" or "auto" (or "none" where documented) = the default. */
TL_API gboolean tl_run_spec_set(TlRunSpec *s, const char *key, const char *value, GError **error);
/* The text of one key's value (g_free); NULL for an unknown key. */
TL_API char *tl_run_spec_get(const TlRunSpec *s, const char *key);

/* `key = value` lines into s (keys not named keep their value); `source` names the text in
 * messages ("run.txt"), which name its line. Refuses a key given twice and unknown keys. */
TL_API gboolean tl_run_spec_parse(TlRunSpec *s, const char *text, const char *source, GError **error);
/* A run file: the text form, or a provenance sidecar (JSON, tl-run-sidecar.h) whose run part
 * is read. */
TL_API TlRunSpec *tl_run_spec_load(const char *path, GError **error);
/* Every key, one per line, with a heading comment. */
TL_API char *tl_run_spec_to_text(const TlRunSpec *s);
/* Written atomically. */
TL_API gboolean tl_run_spec_save(const TlRunSpec *s, const char *path, GError **error);

/* The combination checks: a key that needs another ("tof-nsigma needs tof = true"), PET keys in
 * a CT run and the reverse, names against the registries for the modality. */
TL_API gboolean tl_run_spec_validate(const TlRunSpec *s, GError **error);

/* Defaults resolved. */
/* CT's direct methods, FDK (cone or parallel beam) and FBP (parallel beam): no solver. */
TL_API gboolean tl_run_algorithm_direct(const char *algo);
TL_API const char *tl_run_spec_algorithm(const TlRunSpec *s);
TL_API const char *tl_run_spec_projector(const TlRunSpec *s);
TL_API guint tl_run_spec_iterations(const TlRunSpec *s);
TL_API guint tl_run_spec_subsets(const TlRunSpec *s);
/* The full iterations the run makes: a scatter = sss run makes `iterations` without the scatter
 * term, then scatter-rounds rounds of an estimate followed by `iterations` more, (1 + rounds) x
 * iterations in all; any other run, `iterations`. Every door runs this schedule. */
TL_API guint tl_run_spec_total_iterations(const TlRunSpec *s);
/* Whether a scatter estimate is due after `iterations_done` full iterations (before the next):
 * after each multiple of `iterations` up to the last round; *round gets its number (1-based),
 * *restart whether the image starts again from the uniform image after it (scatter-restart,
 * the last round). FALSE for runs without scatter = sss. */
TL_API gboolean tl_run_spec_scatter_due(const TlRunSpec *s, guint iterations_done, guint *round,
                                        gboolean *restart);

/* The PET options of the run (validated first): everything but the inputs read from files
 * (attenuation, norm, randoms, scatter estimate), which the caller loads and sets. Strings in
 * `o` point into s. The post filter (the filter when filter_every is 0) goes to *post. */
TL_API gboolean tl_run_spec_to_recon_options(const TlRunSpec *s, TlReconOptions *o, TlFilter *post,
                                      GError **error);
/* The run's kappa image (the key `kappa`: the prior's per-voxel weights), read and set on the
 * solver (tl_solver_set_kappa); nothing without one. GError naming the key and the file. */
/* The run's sensitivity image (the key `sensitivity`), read into *out and checked against
 * the run's image grid: refused with a GError naming the file, the grid found and the grid
 * expected. *out NULL and TRUE without one. */
TL_API gboolean tl_run_spec_load_sensitivity(const TlRunSpec *s, const TlImageGrid *grid,
                                             TlImage **out, GError **error);
/* `sensitivity-out`: the reconstruction's sensitivity image (all subsets), downloaded and
 * written; nothing without the key. GError naming the key and the file. */
TL_API gboolean tl_run_spec_write_sensitivity(const TlRunSpec *s, TlRecon *r, GError **error);
TL_API gboolean tl_run_spec_apply_kappa(const TlRunSpec *s, TlSolver *sv, GError **error);
/* The CT options of an iterative run (validated first; GError for fdk: no TlCtReconOptions). */
TL_API gboolean tl_run_spec_to_ct_options(const TlRunSpec *s, TlCtReconOptions *o, GError **error);

/* "NXxNYxNZ@V" or "NXxNYxNZ@VX,VY,VZ" (mm), centred on the origin; sizes 1..65535, voxels
 * 1e-6..1e6 mm. */
TL_API gboolean tl_run_parse_grid(const char *text, TlImageGrid *g, GError **error);
/* The same without the 2^28-voxel bound of one TlImage (CT's fdk and fbp: any grid memory
 * allows, checked by tl_run_ct_direct_check); tl_run_spec_validate refuses such a grid for
 * every other run. */
TL_API gboolean tl_run_parse_grid_any(const char *text, TlImageGrid *g, GError **error);
/* Tomolab's version ("0.1.0"). */
TL_API const char *tl_run_version(void);

G_END_DECLS
