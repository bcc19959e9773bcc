/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRunSpec: the run description, its key table, text form and checks (tl-run-spec.h). */
#include "tl-run-spec.h"
#include "tl-run-sidecar.h"
#include "dataset/tl-dataset.h"
#include "image/tl-file.h"
#include "pet/project/tl-projector.h"
#include "pet/correct/tl-units.h"
#include "pet/data/tl-sinogram-arc.h"
#include "ct/tl-ct-projector.h"
#include "recon/tl-recon-registry.h"
#include "tl-registry.h"
#include "tl-error.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- the key table: one row per key, the one place a new run setting is added ---- */

enum { PET = 1, CT = 2, BOTH = 3 };
typedef enum { V_STR, V_PATH, V_UINT, V_DOUBLE, V_BOOL, V_ENUM, V_FILTER, V_FDK_FILTER,
               V_LIST } VType;

typedef struct {
  TlRunKeyInfo info;
  VType v;
  gsize offset;
  double min, max;            /* V_UINT, V_DOUBLE */
  gboolean min_open;          /* V_DOUBLE: min itself refused */
  gboolean autoable;          /* V_DOUBLE: "auto" = NAN; V_STR/V_PATH: "" = NULL */
  const char *const *choices; /* V_ENUM */
  guint modalities;           /* where a non-default value makes sense */
  /* names checked against a registry (V_STR) */
  gboolean (*check)(const char *value, GError **error);
} Key;

static const char *const modality_names[] = {"pet", "ct", NULL};
static const char *const randoms_names[] = {"none", "delayeds", "singles", "file", NULL};
static const char *const scatter_names[] = {"none", "sss", "file", NULL};
static const char *const objective_names[] = {"never", "iteration", "subiteration", NULL};

gboolean tl_run_algorithm_direct(const char *algo) {
  return g_str_equal(algo, "fdk") || g_str_equal(algo, "fbp");
}

static gboolean check_algorithm(const char *v, GError **error) {
  if (tl_run_algorithm_direct(v)) return TRUE;
  return tl_recon_find_algorithm(v, error) != NULL;
}
static gboolean check_prior(const char *v, GError **error) {
  return tl_recon_find_prior(v, error) != NULL;
}
/* PET projectors from the registry (the ray projectors and the dual-head "srm"), CT's methods */
static gboolean check_projector(const char *v, GError **error) {
  TlCtMethod m;
  if (tl_registry_projector(v, NULL) || tl_ct_method_from_name(v, &m, NULL)) return TRUE;
  g_autofree char *pet = tl_registry_projector_help(0);
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
              "unknown projector '%s' (PET: %s; CT: joseph, siddon, raycast)", v, pet);
  return FALSE;
}
static gboolean check_isotope(const char *v, GError **error) {
  return tl_isotope_find(v, error) != NULL;
}
static gboolean check_grid(const char *v, GError **error) {
  TlImageGrid g; /* the voxel count by the run's kind: tl_run_spec_validate */
  return tl_run_parse_grid_any(v, &g, error);
}
static gboolean check_centre(const char *v, GError **error) {
  if (g_str_equal(v, "auto")) return TRUE;
  char *end = NULL;
  double c = g_ascii_strtod(v, &end);
  if (end != v && !*end && isfinite(c)) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "expected 'auto' or a column number");
  return FALSE;
}
static gboolean check_slices(const char *v, GError **error) {
  char *end = NULL;
  guint64 a = g_ascii_strtoull(v, &end, 10), b = 0;
  gboolean ok = end != v && g_ascii_isdigit(*v) && *end == ':';
  if (ok) {
    const char *t = end + 1;
    b = g_ascii_strtoull(t, &end, 10);
    ok = end != t && g_ascii_isdigit(*t) && !*end && a < b && b <= G_MAXUINT32;
  }
  if (!ok)
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "expected FIRST:END detector rows with FIRST < END");
  return ok;
}
static gboolean check_kernel(const char *v, GError **error) {
  const char *eq = strchr(v, '=');
  if (eq && eq != v && eq[1]) return TRUE;
  g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "expected NAME=FILE");
  return FALSE;
}

#define OFF(f) offsetof(TlRunSpec, f)
#define INFO(k, t, vals, d, u, doc) {k, t, vals, d, u, doc}
static const Key keys[] = {
    {INFO("modality", TL_RUN_KEY_CHOICE, "pet | ct", "pet", "", "the kind of run"), V_ENUM,
     OFF(modality), .choices = modality_names, .modalities = BOTH},
    {INFO("data", TL_RUN_KEY_PATH, "a file", "(none: required)", "",
          "the measured data: PET list mode or sinogram, CT projections"),
     V_PATH, OFF(data), .autoable = TRUE, .modalities = BOTH},
    {INFO("algorithm", TL_RUN_KEY_TEXT, "a registry algorithm (tomolab-cli info); CT also fdk, fbp",
          "auto (PET mlem, CT fdk)", "", "the reconstruction algorithm"),
     V_STR, OFF(algorithm), .autoable = TRUE, .modalities = BOTH, .check = check_algorithm},
    {INFO("subsets", TL_RUN_KEY_COUNT, "0 (auto) to 65535", "0 (auto: 10 for algorithms with "
          "subsets, else 1)", "", "ordered subsets"),
     V_UINT, OFF(subsets), 0, 65535, .modalities = BOTH},
    {INFO("iterations", TL_RUN_KEY_COUNT, "0 (auto) to 1000000", "0 (auto: PET 3, CT 10)", "",
          "full passes over the data"),
     V_UINT, OFF(iterations), 0, 1000000, .modalities = BOTH},
    {INFO("projector", TL_RUN_KEY_TEXT, "PET: the projector table's names, srm (binned "
          "dual-head); CT: joseph, siddon, raycast", "auto (PET siddon, CT joseph)", "",
          "the system model"),
     V_STR, OFF(projector), .autoable = TRUE, .modalities = BOTH, .check = check_projector},
    {INFO("prior", TL_RUN_KEY_TEXT, "none or a registry prior (osl, bsrem)", "none", "",
          "the penalty of MAP algorithms"),
     V_STR, OFF(prior), .autoable = TRUE, .modalities = BOTH, .check = check_prior},
    {INFO("beta", TL_RUN_KEY_NUMBER, ">= 0", "0", "", "prior strength, relative to the data (docs/recon.md: about 1e-3 to 0.1 for rdp)"), V_DOUBLE, OFF(beta), 0,
     1e300, .modalities = BOTH},
    {INFO("gamma", TL_RUN_KEY_NUMBER, ">= 0", "2", "", "rdp: edge preservation"), V_DOUBLE,
     OFF(gamma), 0, 1e300, .modalities = BOTH},
    {INFO("epsilon", TL_RUN_KEY_NUMBER, "auto or > 0",
          "auto (rdp on PET: 1e-3 x the largest voxel of an OSEM image, as PETRIC; else 0.001)",
          "image units (tv: per mm)", "rdp / tv: smoothing"),
     V_DOUBLE, OFF(epsilon), 0, 1e300, TRUE, TRUE, .modalities = BOTH},
    {INFO("relaxation", TL_RUN_KEY_NUMBER, "> 0 (bsrem (0, 1], sirt / os-sart (0, 2))", "1", "",
          "bsrem alpha_0, sirt / os-sart lambda"),
     V_DOUBLE, OFF(relaxation), 0, 2, TRUE, .modalities = BOTH},
    {INFO("seed", TL_RUN_KEY_COUNT, "0 to 4294967295", "1", "",
          "svrg / saga: the seed of the random subset order"),
     V_UINT, OFF(seed), 0, 4294967295.0, .modalities = BOTH},
    {INFO("kappa", TL_RUN_KEY_PATH, "none or an image on the grid", "none", "",
          "PET, prior: per-voxel weights of the prior (PETRIC's kappa image)"),
     V_PATH, OFF(kappa), .autoable = TRUE, .modalities = PET},
    {INFO("osem-epochs", TL_RUN_KEY_COUNT, "0 to 1000", "0", "",
          "PET: OSEM epochs before the algorithm, its warm start (as PETRIC's entrants)"),
     V_UINT, OFF(osem_epochs), 0, 1000, .modalities = PET},
    {INFO("objective", TL_RUN_KEY_CHOICE, "never | iteration | subiteration", "iteration", "",
          "when the log-likelihood (PET) or objective (CT) is computed"),
     V_ENUM, OFF(objective), .choices = objective_names, .modalities = BOTH},
    {INFO("binned", TL_RUN_KEY_BOOL, "true | false", "false", "",
          "PET: histogram the events per crystal pair and reconstruct the bins"),
     V_BOOL, OFF(binned), .modalities = PET},
    {INFO("tof", TL_RUN_KEY_BOOL, "true | false", "false", "", "PET: time of flight"), V_BOOL,
     OFF(tof), .modalities = PET},
    {INFO("tof-nsigma", TL_RUN_KEY_NUMBER, "> 0", "3", "sigmas",
          "PET, tof: truncation of the TOF kernel"),
     V_DOUBLE, OFF(tof_nsigma), 0, 1e3, TRUE, .modalities = PET},
    {INFO("tor-fwhm", TL_RUN_KEY_NUMBER, "0 to 1000", "2", "mm",
          "PET, projector tor: FWHM across the tube (0 = Joseph)"),
     V_DOUBLE, OFF(tor_fwhm_mm), 0, 1000, .modalities = PET},
    {INFO("attenuation", TL_RUN_KEY_PATH, "none or an image", "none", "mm^-1",
          "PET: attenuation correction with this mu-map, on the grid"),
     V_PATH, OFF(attenuation), .autoable = TRUE, .modalities = PET},
    {INFO("norm", TL_RUN_KEY_PATH, "none or a .tln file", "none", "",
          "PET: normalisation for the data's scanner"),
     V_PATH, OFF(norm), .autoable = TRUE, .modalities = PET},
    {INFO("randoms", TL_RUN_KEY_CHOICE, "none | delayeds | singles | file", "none", "",
          "PET: randoms from the delayed coincidences (fan sums), from the singles rates "
          "(2 tau S_i S_j T), or from randoms-file"),
     V_ENUM, OFF(randoms), .choices = randoms_names, .modalities = PET},
    {INFO("randoms-file", TL_RUN_KEY_PATH, "a randoms file", "none", "",
          "PET, randoms = file: the estimate"),
     V_PATH, OFF(randoms_file), .autoable = TRUE, .modalities = PET},
    {INFO("randoms-out", TL_RUN_KEY_PATH, "a file to write", "none", "",
          "PET: write the randoms estimate used"),
     V_PATH, OFF(randoms_out), .autoable = TRUE, .modalities = PET},
    {INFO("scatter", TL_RUN_KEY_CHOICE, "none | sss | file", "none", "",
          "PET: scatter by single scatter simulation (needs attenuation) or from scatter-file"),
     V_ENUM, OFF(scatter), .choices = scatter_names, .modalities = PET},
    {INFO("scatter-rounds", TL_RUN_KEY_COUNT, "1 to 100", "2", "",
          "PET, scatter = sss: rounds of estimate + iterations"),
     V_UINT, OFF(scatter_rounds), 1, 100, .modalities = PET},
    {INFO("scatter-restart", TL_RUN_KEY_BOOL, "true | false", "false", "",
          "PET, scatter = sss: after the last estimate, start the image again from the uniform "
          "image for its iterations (the image STIR and SIRF users reconstruct after their "
          "scatter estimation); false: continue from the current image"),
     V_BOOL, OFF(scatter_restart), .modalities = PET},
    {INFO("scatter-file", TL_RUN_KEY_PATH, "a scatter estimate file", "none", "",
          "PET, scatter = file: the estimate"),
     V_PATH, OFF(scatter_file), .autoable = TRUE, .modalities = PET},
    {INFO("scatter-out", TL_RUN_KEY_PATH, "a file to write", "none", "",
          "PET, scatter = sss: write the last estimate"),
     V_PATH, OFF(scatter_out), .autoable = TRUE, .modalities = PET},
    {INFO("filter", TL_RUN_KEY_TEXT, "none | median3 | median5 | gauss:FWHM | metz:FWHM:N", "none",
          "mm (FWHM)",
          "PET: filter of the final image, or between iterations with filter-every"),
     V_FILTER, OFF(filter), .modalities = PET},
    {INFO("filter-every", TL_RUN_KEY_COUNT, "0 to 1000000", "0 (the final image only)", "",
          "PET: filter inside the reconstruction after every N-th sub-iteration"),
     V_UINT, OFF(filter_every), 0, 1000000, .modalities = PET},
    {INFO("start-subset", TL_RUN_KEY_COUNT, "0 to subsets - 1", "0", "",
          "PET: the subset of the first sub-iteration (STIR's start subset); the order goes on "
          "cyclically from it"),
     V_UINT, OFF(start_subset), 0, 999, .modalities = PET},
    {INFO("zero-end-planes", TL_RUN_KEY_BOOL, "true | false", "false", "",
          "PET: leave out the data of the first and the last direct plane, both crystals in the "
          "first or both in the last ring (STIR's zero end planes of segment 0); the sensitivity "
          "keeps them"),
     V_BOOL, OFF(zero_end_planes), .modalities = PET},
    {INFO("rays-tangential", TL_RUN_KEY_COUNT, "1 to 8", "1", "rays",
          "PET sinograms (arc-corrected, or crystal pairs of span 1 without view mashing): "
          "rays per line across the bin (STIR's number of rays in tangential direction), for "
          "the projections and the sensitivity; list mode refuses more than 1"),
     V_UINT, OFF(rays_tangential), 1, 8, .modalities = PET},
    {INFO("rays-axial", TL_RUN_KEY_COUNT, "1 to 8", "1", "rays",
          "PET sinograms (as rays-tangential): rays per line across a ring's width (axially)"),
     V_UINT, OFF(rays_axial), 1, 8, .modalities = PET},
    {INFO("sensitivity", TL_RUN_KEY_PATH, "none or an image on the grid", "none (computed)", "",
          "PET: the sensitivity image to use instead of computing it (STIR's sensitivity "
          "filename); with S subsets each subset's is this image / S"),
     V_PATH, OFF(sensitivity), .autoable = TRUE, .modalities = PET},
    {INFO("sensitivity-out", TL_RUN_KEY_PATH, "none or an image file to write", "none", "",
          "PET: write the sensitivity image the run uses (all subsets)"),
     V_PATH, OFF(sensitivity_out), .autoable = TRUE, .modalities = PET},
    {INFO("calibration", TL_RUN_KEY_NUMBER, "none or > 0", "none", "(image / s) / (Bq/mL)",
          "PET: write the image in Bq/mL with this calibration factor"),
     V_DOUBLE, OFF(calibration), 0, 1e300, TRUE, TRUE, .modalities = PET},
    {INFO("isotope", TL_RUN_KEY_TEXT, "none or an isotope (F18, C11, ...)", "none", "",
          "PET, calibration: decay correction and positron fraction"),
     V_STR, OFF(isotope), .autoable = TRUE, .modalities = PET, .check = check_isotope},
    {INFO("duration", TL_RUN_KEY_NUMBER, "auto or 0 to 1e9", "auto (the file's)", "s",
          "PET, calibration: the frame's duration"),
     V_DOUBLE, OFF(duration_s), 0, 1e9, FALSE, TRUE, .modalities = PET},
    {INFO("frame-start", TL_RUN_KEY_NUMBER, "auto or 0 to 1e9", "auto (the file's, else 0)", "s",
          "PET, calibration: the frame's start after the reference time"),
     V_DOUBLE, OFF(frame_start_s), 0, 1e9, FALSE, TRUE, .modalities = PET},
    {INFO("fdk-filter", TL_RUN_KEY_CHOICE, "ram-lak | shepp-logan | hann | cosine", "ram-lak",
          "", "CT, fdk and fbp: ramp filter window"),
     V_FDK_FILTER, OFF(fdk_filter), .modalities = CT},
    {INFO("nonnegative", TL_RUN_KEY_BOOL, "true | false", "false", "",
          "CT, sirt / sart: clamp the image at 0"),
     V_BOOL, OFF(nonnegative), .modalities = CT},
    {INFO("centre", TL_RUN_KEY_TEXT, "auto (search) or a column", "none (the file's geometry)",
          "detector pixels", "CT, parallel beam: the column the rotation axis projects onto"),
     V_STR, OFF(centre), .autoable = TRUE, .modalities = CT, .check = check_centre},
    {INFO("pixel-size", TL_RUN_KEY_NUMBER, "auto or > 0", "auto (the file's)", "mm",
          "CT, parallel beam: detector pixel size"),
     V_DOUBLE, OFF(pixel_size_mm), 0, 1e6, TRUE, TRUE, .modalities = CT},
    {INFO("slices", TL_RUN_KEY_TEXT, "FIRST:END", "all", "detector rows",
          "CT, parallel beam: reconstruct rows FIRST to END-1 only"),
     V_STR, OFF(slices), .autoable = TRUE, .modalities = CT, .check = check_slices},
    {INFO("batch", TL_RUN_KEY_COUNT, "0 (auto) to 1000000", "0 (auto)", "views",
          "CT, fdk: views per batch"),
     V_UINT, OFF(batch), 0, 1000000, .modalities = CT},
    {INFO("grid", TL_RUN_KEY_TEXT, "auto or NXxNYxNZ@MM or NXxNYxNZ@VX,VY,VZ (centred)",
          "auto (the truth's, else the mu-map's, else the data's)", "mm",
          "the image grid"),
     V_STR, OFF(grid), .autoable = TRUE, .modalities = BOTH, .check = check_grid},
    {INFO("truth", TL_RUN_KEY_PATH, "none or an image", "none", "",
          "ground truth: RMSE after each sub-iteration"),
     V_PATH, OFF(truth), .autoable = TRUE, .modalities = BOTH},
    {INFO("start", TL_RUN_KEY_PATH, "none or an image on the grid", "none (the algorithm's)", "",
          "the start image"),
     V_PATH, OFF(start), .autoable = TRUE, .modalities = BOTH},
    {INFO("device", TL_RUN_KEY_TEXT, "auto, an index or a name substring",
          "auto ($TOMOLAB_DEVICE, else the best ranked)", "", "the Vulkan device"),
     V_STR, OFF(device), .autoable = TRUE, .modalities = BOTH},
    {INFO("cache", TL_RUN_KEY_BOOL, "true | false", "true", "",
          "PET: sensitivity images cached in $XDG_CACHE_HOME/tomolab"),
     V_BOOL, OFF(cache), .modalities = PET},
    {INFO("kernels", TL_RUN_KEY_LIST, "none or NAME=FILE; NAME=FILE ...", "none", "",
          "replacements of built-in kernels (tomolab-cli kernel)"),
     V_LIST, OFF(kernels), .modalities = BOTH, .check = check_kernel},
    {INFO("output", TL_RUN_KEY_PATH, "an image file to write", "(none: required)", "",
          "the reconstructed image (.nii, .nii.gz, .raw, ...); a .json sidecar beside it"),
     V_PATH, OFF(output), .autoable = TRUE, .modalities = BOTH},
    {INFO("checkpoint", TL_RUN_KEY_PATH, "none or a file to write", "none", "",
          "PET: write the image and progress there"),
     V_PATH, OFF(checkpoint), .autoable = TRUE, .modalities = PET},
    {INFO("checkpoint-every", TL_RUN_KEY_COUNT, "0 (auto) to 1000000", "0 (every iteration)",
          "sub-iterations", "PET, checkpoint: how often"),
     V_UINT, OFF(checkpoint_every), 0, 1000000, .modalities = PET},
    {INFO("resume", TL_RUN_KEY_PATH, "none or a checkpoint", "none", "",
          "PET: go on from a checkpoint of the same run"),
     V_PATH, OFF(resume), .autoable = TRUE, .modalities = PET},
    {INFO("profile", TL_RUN_KEY_BOOL, "true | false", "false", "",
          "print GPU time per kernel at the end"),
     V_BOOL, OFF(profile), .modalities = BOTH},
    {INFO("quiet", TL_RUN_KEY_BOOL, "true | false", "false", "", "no progress on stderr"),
     V_BOOL, OFF(quiet), .modalities = BOTH},
};

const TlRunKeyInfo *tl_run_keys(void) {
  static TlRunKeyInfo infos[G_N_ELEMENTS(keys) + 1];
  static gsize done = 0;
  if (g_once_init_enter(&done)) { /* front ends may ask from several threads */
    for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) infos[i] = keys[i].info;
    g_once_init_leave(&done, 1);
  }
  return infos;
}

static const Key *find_key(const char *key) {
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
    if (g_str_equal(keys[i].info.key, key)) return &keys[i];
  return NULL;
}

#define FIELD(s, k, T) ((T *)((char *)(s) + (k)->offset))

/* ---- life cycle ---- */

void tl_run_spec_init(TlRunSpec *s) {
  *s = (TlRunSpec){.modality = TL_RUN_PET, .gamma = 2.0, .epsilon = NAN, .relaxation = 1.0, .seed = 1,
                   .objective = TL_RUN_OBJECTIVE_ITERATION, .tof_nsigma = TL_TOF_N_SIGMA,
                   .tor_fwhm_mm = TL_TOR_FWHM_DEFAULT, .scatter_rounds = 2,
                   .filter = {TL_FILTER_NONE, 0}, .calibration = NAN, .duration_s = NAN,
                   .frame_start_s = NAN, .fdk_filter = TL_CT_FILTER_RAM_LAK,
                   .pixel_size_mm = NAN, .cache = TRUE, .rays_tangential = 1,
                   .rays_axial = 1};
}

void tl_run_spec_clear(TlRunSpec *s) {
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    if (keys[i].v == V_STR || keys[i].v == V_PATH) g_clear_pointer(FIELD(s, &keys[i], char *), g_free);
    if (keys[i].v == V_LIST) g_clear_pointer(FIELD(s, &keys[i], char **), g_strfreev);
  }
}

TlRunSpec *tl_run_spec_new(void) {
  TlRunSpec *s = g_new(TlRunSpec, 1);
  tl_run_spec_init(s);
  return s;
}

void tl_run_spec_free(TlRunSpec *s) {
  if (!s) return;
  tl_run_spec_clear(s);
  g_free(s);
}

TlRunSpec *tl_run_spec_copy(const TlRunSpec *s) {
  TlRunSpec *c = g_new(TlRunSpec, 1);
  *c = *s;
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    if (keys[i].v == V_STR || keys[i].v == V_PATH) {
      char **f = FIELD(c, &keys[i], char *);
      *f = g_strdup(*f);
    }
    if (keys[i].v == V_LIST) {
      char ***f = FIELD(c, &keys[i], char **);
      *f = g_strdupv(*f);
    }
  }
  return c;
}

gboolean tl_run_spec_equal(const TlRunSpec *a, const TlRunSpec *b) {
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *x = tl_run_spec_get(a, keys[i].info.key);
    g_autofree char *y = tl_run_spec_get(b, keys[i].info.key);
    if (g_strcmp0(x, y) != 0) return FALSE;
  }
  return TRUE;
}

/* ---- one key ---- */

static gboolean is_default_word(const char *v) {
  return !*v || g_str_equal(v, "auto") || g_str_equal(v, "none");
}

static gboolean parse_bool(const char *v, gboolean *out) {
  if (g_str_equal(v, "true") || g_str_equal(v, "yes") || g_str_equal(v, "1")) *out = TRUE;
  else if (g_str_equal(v, "false") || g_str_equal(v, "no") || g_str_equal(v, "0")) *out = FALSE;
  else return FALSE;
  return TRUE;
}

/* The value's text is written back into files and messages: one line, no comment sign. */
static gboolean check_text(const char *key, const char *value, gboolean path, GError **error) {
  for (const char *p = value; *p; p++)
    if (*p == '#' || *p == '\n' || *p == '\r' || (guchar)*p < 0x20) {
      g_autofree char *q = tl_text_quote(value, -1, 80);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "key '%s': value '%s' holds a '#' or a control character (run files cannot "
                  "write it back)", key, q);
      return FALSE;
    }
  /* file names are bytes on POSIX: a path need not be UTF-8 (its sidecar shows it made valid) */
  if (!path && !g_utf8_validate(value, -1, NULL)) {
    g_autofree char *q = tl_text_quote(value, -1, 80);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s' is not UTF-8", key,
                q);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_run_spec_set(TlRunSpec *s, const char *key, const char *value_in, GError **error) {
  const Key *k = find_key(key);
  if (!k) {
    g_autofree char *q = tl_text_quote(key, -1, 60);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "unknown key '%s' (the keys: docs/formats.md, \"Run files\")", q);
    return FALSE;
  }
  if (!check_text(key, value_in, k->v == V_PATH, error)) return FALSE;
  g_autofree char *value = g_strstrip(g_strdup(value_in));
  g_autofree char *q = tl_text_quote(value, -1, 80);
  switch (k->v) {
  case V_STR:
  case V_PATH: {
    char **f = FIELD(s, k, char *);
    gboolean dflt = !*value || (k->v == V_STR ? is_default_word(value)
                                              : g_str_equal(value, "none"));
    /* "auto" is a name, not a default, for the centre (search) */
    if (k->check == check_centre && g_str_equal(value, "auto")) dflt = FALSE;
    if (!dflt && k->check) {
      GError *e = NULL;
      if (!k->check(value, &e)) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s': %s", key, q,
                    e->message);
        g_error_free(e);
        return FALSE;
      }
    }
    g_free(*f);
    *f = dflt ? NULL : g_strdup(value);
    /* one spelling per name, so files compare equal: "sart" is os-sart */
    if (*f && k->check == check_algorithm && !tl_run_algorithm_direct(*f)) {
      const TlAlgorithmClass *ak = tl_recon_find_algorithm(*f, NULL);
      if (ak) {
        g_free(*f);
        *f = g_strdup(tl_algorithm_name(ak));
      }
    }
    return TRUE;
  }
  case V_UINT: {
    guint64 v = 0;
    char *end = NULL;
    if (g_str_equal(value, "auto") && k->min == 0) v = 0;
    else {
      v = g_ascii_strtoull(value, &end, 10);
      if (!*value || !g_ascii_isdigit(*value) || *end || v < k->min || v > k->max) {
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                    "key '%s': value '%s': expected a whole number from %.0f to %.0f", key, q,
                    k->min, k->max);
        return FALSE;
      }
    }
    *FIELD(s, k, guint) = (guint)v;
    return TRUE;
  }
  case V_DOUBLE: {
    double v = NAN;
    if (k->autoable && (g_str_equal(value, "auto") || g_str_equal(value, "none"))) {
      *FIELD(s, k, double) = NAN;
      return TRUE;
    }
    char *end = NULL;
    v = g_ascii_strtod(value, &end);
    /* decimal only: no nan, inf or hex */
    gboolean num = *value && end != value && !*end && isfinite(v) &&
                   !strpbrk(value, "xXnNiI");
    if (!num || v < k->min || v > k->max || (k->min_open && v == k->min)) {
      g_autofree char *hi = k->max < 1e299 ? g_strdup_printf(" and <= %g", k->max) : g_strdup("");
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "key '%s': value '%s': expected a number %s %g%s", key, q,
                  k->min_open ? ">" : ">=", k->min, hi);
      return FALSE;
    }
    *FIELD(s, k, double) = v;
    return TRUE;
  }
  case V_BOOL: {
    gboolean b;
    if (!parse_bool(value, &b)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "key '%s': value '%s': expected true or false", key, q);
      return FALSE;
    }
    *FIELD(s, k, gboolean) = b;
    return TRUE;
  }
  case V_ENUM:
    for (int i = 0; k->choices[i]; i++)
      if (g_str_equal(k->choices[i], value)) {
        *FIELD(s, k, int) = i;
        return TRUE;
      }
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s': expected %s", key,
                q, k->info.values);
    return FALSE;
  case V_FILTER: {
    TlFilter f = {TL_FILTER_NONE, 0};
    GError *e = NULL;
    if (!g_str_equal(value, "none") && *value && !tl_filter_parse(value, &f, &e)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s': %s", key, q,
                  e->message);
      g_error_free(e);
      return FALSE;
    }
    *FIELD(s, k, TlFilter) = f;
    return TRUE;
  }
  case V_FDK_FILTER: {
    TlCtFilter f = TL_CT_FILTER_RAM_LAK;
    GError *e = NULL;
    if (*value && !tl_ct_filter_from_name(value, &f, &e)) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s': %s", key, q,
                  e->message);
      g_error_free(e);
      return FALSE;
    }
    *FIELD(s, k, TlCtFilter) = f;
    return TRUE;
  }
  case V_LIST: {
    char ***f = FIELD(s, k, char **);
    g_auto(GStrv) parts = g_strsplit(value, ";", -1);
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; parts[i]; i++) {
      char *p = g_strstrip(parts[i]);
      if (!*p || (g_str_equal(p, "none") && !parts[1])) continue;
      GError *e = NULL;
      if (!k->check(p, &e)) {
        g_autofree char *qp = tl_text_quote(p, -1, 60);
        g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "key '%s': value '%s': %s", key, qp,
                    e->message);
        g_error_free(e);
        g_ptr_array_free(out, TRUE);
        return FALSE;
      }
      g_ptr_array_add(out, g_strdup(p));
    }
    g_strfreev(*f);
    *f = NULL;
    if (out->len) {
      g_ptr_array_add(out, NULL);
      *f = (char **)g_ptr_array_free(out, FALSE);
    } else {
      g_ptr_array_free(out, TRUE);
    }
    return TRUE;
  }
  }
  return FALSE;
}

char *tl_run_spec_get(const TlRunSpec *s, const char *key) {
  const Key *k = find_key(key);
  if (!k) return NULL;
  char buf[32];
  switch (k->v) {
  case V_STR:
  case V_PATH: {
    const char *v = *FIELD(s, k, char *);
    if (v) return g_strdup(v);
    return g_strdup(k->v == V_PATH || k->check == check_prior || k->check == check_isotope ||
                            k->check == check_centre || k->check == check_slices
                        ? "none"
                        : "auto");
  }
  case V_UINT:
    return g_strdup_printf("%u", *FIELD(s, k, guint));
  case V_DOUBLE: {
    double v = *FIELD(s, k, double);
    if (isnan(v)) return g_strdup(k->min_open && k->offset == OFF(calibration) ? "none" : "auto");
    tl_format_double(buf, v);
    return g_strdup(buf);
  }
  case V_BOOL:
    return g_strdup(*FIELD(s, k, gboolean) ? "true" : "false");
  case V_ENUM:
    return g_strdup(k->choices[*FIELD(s, k, int)]);
  case V_FILTER: {
    const TlFilter *f = FIELD(s, k, TlFilter);
    return f->kind == TL_FILTER_NONE ? g_strdup("none") : tl_filter_to_string(f);
  }
  case V_FDK_FILTER:
    return g_strdup(tl_ct_filter_name(*FIELD(s, k, TlCtFilter)));
  case V_LIST: {
    char **v = *FIELD(s, k, char **);
    return v ? g_strjoinv("; ", v) : g_strdup("none");
  }
  }
  return NULL;
}

/* ---- text form ---- */

gboolean tl_run_spec_parse(TlRunSpec *s, const char *text, const char *source, GError **error) {
  if (!tl_text_check(source, text, strlen(text), 1, error)) return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; lines[i]; i++) {
    char *key, *value;
    gboolean bad;
    if (!tl_kv_split(lines[i], &key, &value, &bad)) {
      if (bad) {
        g_autofree char *q = tl_text_quote(lines[i], -1, 60);
        g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                    "%s:%u: '%s': expected 'key = value' (or a # comment)", source, i + 1, q);
        return FALSE;
      }
      continue;
    }
    gpointer first = g_hash_table_lookup(seen, key);
    if (first) {
      g_autofree char *q = tl_text_quote(key, -1, 60);
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                  "%s:%u: key '%s' repeated (first on line %u): each key once", source, i + 1, q,
                  GPOINTER_TO_UINT(first));
      return FALSE;
    }
    g_hash_table_insert(seen, g_strdup(key), GUINT_TO_POINTER(i + 1));
    GError *e = NULL;
    if (!tl_run_spec_set(s, key, value, &e)) {
      g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s:%u: %s", source, i + 1, e->message);
      g_error_free(e);
      return FALSE;
    }
  }
  return TRUE;
}

char *tl_run_spec_to_text(const TlRunSpec *s) {
  GString *t = g_string_new("# Tomolab run (docs/formats.md, \"Run files\"); tomolab-cli recon "
                            "--run FILE\n");
  g_string_append_printf(t, "# written by Tomolab %s\n", tl_run_version());
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *v = tl_run_spec_get(s, keys[i].info.key);
    g_string_append_printf(t, "%s = %s\n", keys[i].info.key, v);
  }
  return g_string_free(t, FALSE);
}

gboolean tl_run_spec_save(const TlRunSpec *s, const char *path, GError **error) {
  g_autofree char *text = tl_run_spec_to_text(s);
  return tl_file_write_text(path, text, error);
}

TlRunSpec *tl_run_spec_load(const char *path, GError **error) {
  if (!tl_file_check_input(path, "run file", error)) return NULL;
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, error)) return NULL;
  if (strlen(text) != len) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "%s: a run file holds text, not NUL bytes",
                path);
    return NULL;
  }
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  const char *p = text;
  while (g_ascii_isspace(*p)) p++;
  gboolean ok = *p == '{' ? tl_run_sidecar_read_run(s, text, path, error)
                          : tl_run_spec_parse(s, text, path, error);
  return ok ? g_steal_pointer(&s) : NULL;
}

/* ---- checks and conversions ---- */

const char *tl_run_spec_algorithm(const TlRunSpec *s) {
  return s->algorithm ? s->algorithm : s->modality == TL_RUN_CT ? "fdk" : "mlem";
}
const char *tl_run_spec_projector(const TlRunSpec *s) {
  return s->projector ? s->projector : s->modality == TL_RUN_CT ? "joseph" : "siddon";
}
guint tl_run_spec_iterations(const TlRunSpec *s) {
  return s->iterations ? s->iterations
         : s->modality == TL_RUN_CT ? TL_DATASET_CT_ITERATIONS : TL_DATASET_PET_ITERATIONS;
}
guint tl_run_spec_total_iterations(const TlRunSpec *s) {
  guint n = tl_run_spec_iterations(s);
  return s->modality == TL_RUN_PET && s->scatter == TL_RUN_SCATTER_SSS
             ? n * (s->scatter_rounds + 1) : n;
}
gboolean tl_run_spec_scatter_due(const TlRunSpec *s, guint iterations_done, guint *round,
                                 gboolean *restart) {
  guint n = tl_run_spec_iterations(s);
  if (s->modality != TL_RUN_PET || s->scatter != TL_RUN_SCATTER_SSS || iterations_done == 0 ||
      iterations_done % n || iterations_done / n > s->scatter_rounds)
    return FALSE;
  if (round) *round = iterations_done / n;
  if (restart) *restart = s->scatter_restart && iterations_done / n == s->scatter_rounds;
  return TRUE;
}
guint tl_run_spec_subsets(const TlRunSpec *s) {
  if (s->subsets) return s->subsets;
  const char *a = tl_run_spec_algorithm(s);
  if (tl_run_algorithm_direct(a)) return 1;
  const TlAlgorithmClass *k = tl_recon_find_algorithm(a, NULL);
  /* CT's mlem keeps one subset by default (tl-cli-ct-recon's rule) */
  if (s->modality == TL_RUN_CT && g_str_equal(a, "mlem")) return 1;
  return k && (tl_algorithm_flags(k) & TL_ALGO_SUBSETS) ? 10 : 1;
}

static gboolean bad(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean bad(GError **error, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *m = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, TL_ERROR, TL_ERROR_INVALID_ARG, m);
  return FALSE;
}

gboolean tl_run_spec_validate(const TlRunSpec *s, GError **error) {
  gboolean ct = s->modality == TL_RUN_CT;
  /* a key of the other modality with a value other than its default is a mistake */
  TlRunSpec d;
  tl_run_spec_init(&d);
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    if (keys[i].modalities & (ct ? CT : PET)) continue;
    g_autofree char *v = tl_run_spec_get(s, keys[i].info.key);
    g_autofree char *dv = tl_run_spec_get(&d, keys[i].info.key);
    if (!g_str_equal(v, dv))
      return bad(error, "key '%s' = %s: a %s key in a %s run", keys[i].info.key, v,
                 ct ? "PET" : "CT", ct ? "CT" : "PET");
  }
  const char *algo = tl_run_spec_algorithm(s);
  gboolean fdk = tl_run_algorithm_direct(algo);
  if (fdk && !ct) return bad(error, "algorithm = %s: a CT method (modality = ct)", algo);
  const TlAlgorithmClass *ak = fdk ? NULL : tl_recon_find_algorithm(algo, error);
  if (!fdk && !ak) return FALSE;
  /* a grid beyond one TlImage: only FDK / FBP, which hold it in z-slabs (tl-run-ct-direct.h) */
  TlImageGrid lg;
  if (s->grid && tl_run_parse_grid_any(s->grid, &lg, NULL) &&
      tl_image_grid_n_voxels(&lg) > TL_IMAGE_MAX_VOXELS && !(ct && fdk))
    return bad(error, "grid = %s: %" G_GUINT64_FORMAT " voxels; %s runs hold the image in one "
               "array of at most 2^28 voxels (only CT's fdk and fbp run larger grids, in "
               "z-slabs)", s->grid, tl_image_grid_n_voxels(&lg), ct ? "iterative CT" : "PET");
  guint flags = ak ? tl_algorithm_flags(ak) : 0;
  if (s->subsets > 1 && !(flags & TL_ALGO_SUBSETS) && !(ct && g_str_equal(algo, "mlem")))
    return bad(error, "subsets = %u: algorithm %s uses all data at once", s->subsets, algo);
  const char *proj = tl_run_spec_projector(s);
  TlCtMethod m;
  if (ct && !tl_ct_method_from_name(proj, &m, NULL))
    return bad(error, "projector = %s: a CT run takes joseph, siddon or raycast", proj);
  if (!ct && !tl_registry_projector(proj, NULL)) {
    g_autofree char *names = tl_registry_projector_help(0);
    return bad(error, "projector = %s: a PET run takes %s", proj, names);
  }
  if (s->prior && !(flags & TL_ALGO_PRIOR))
    return bad(error, "prior = %s: needs an algorithm with a prior (osl, bsrem); %s takes none",
               s->prior, algo);
  if (!s->prior && (s->beta != 0 || s->gamma != d.gamma || !isnan(s->epsilon)))
    return bad(error, "beta, gamma and epsilon need a prior (prior = none)");
  if (!s->prior && s->kappa) return bad(error, "kappa = %s needs a prior (prior = none)", s->kappa);
  if (s->osem_epochs && !(flags & TL_ALGO_EMISSION))
    return bad(error, "osem-epochs = %u needs an emission algorithm; %s is none", s->osem_epochs,
               algo);
  if (!ct && (flags & TL_ALGO_NEEDS_DATA) && !s->binned)
    return bad(error, "algorithm = %s needs binned data (binned = true): list-mode events are "
               "no data vector", algo);
  if (g_str_equal(algo, "bsrem") && s->relaxation > 1)
    return bad(error, "relaxation = %g: bsrem's alpha_0 is in (0, 1]", s->relaxation);
  if (s->tof && s->binned) return bad(error, "tof = true needs list mode: binned data have no TOF");
  if (s->tof_nsigma != d.tof_nsigma && !s->tof)
    return bad(error, "tof-nsigma = %g needs tof = true", s->tof_nsigma);
  if (s->tor_fwhm_mm != d.tor_fwhm_mm && !g_str_equal(proj, "tor"))
    return bad(error, "tor-fwhm = %g needs projector = tor", s->tor_fwhm_mm);
  if (s->filter_every && s->filter.kind == TL_FILTER_NONE)
    return bad(error, "filter-every = %u needs a filter", s->filter_every);
  if (s->start_subset && s->start_subset >= tl_run_spec_subsets(s))
    return bad(error, "start-subset = %u: expected 0 to %u (subsets = %u)", s->start_subset,
               tl_run_spec_subsets(s) - 1, tl_run_spec_subsets(s));
  if (s->rays_tangential * s->rays_axial > TL_SINOGRAM_ARC_MAX_RAYS)
    return bad(error, "rays-tangential = %u, rays-axial = %u: %u rays per line (expected at "
               "most %u)", s->rays_tangential, s->rays_axial,
               s->rays_tangential * s->rays_axial, TL_SINOGRAM_ARC_MAX_RAYS);
  if (s->sensitivity && s->sensitivity_out && g_str_equal(s->sensitivity, s->sensitivity_out))
    return bad(error, "sensitivity-out = %s: the file sensitivity reads", s->sensitivity_out);
  if (s->randoms == TL_RUN_RANDOMS_FILE && !s->randoms_file)
    return bad(error, "randoms = file needs randoms-file");
  if (s->randoms != TL_RUN_RANDOMS_FILE && s->randoms_file)
    return bad(error, "randoms-file = %s needs randoms = file", s->randoms_file);
  if (s->randoms_out && s->randoms == TL_RUN_RANDOMS_NONE)
    return bad(error, "randoms-out needs randoms");
  if (s->scatter == TL_RUN_SCATTER_FILE && !s->scatter_file)
    return bad(error, "scatter = file needs scatter-file");
  if (s->scatter != TL_RUN_SCATTER_FILE && s->scatter_file)
    return bad(error, "scatter-file = %s needs scatter = file", s->scatter_file);
  if (s->scatter == TL_RUN_SCATTER_SSS && !s->attenuation)
    return bad(error, "scatter = sss needs attenuation (the mu-map gives the scattering medium "
               "and the object's outline for the tail fit)");
  if (s->scatter != TL_RUN_SCATTER_SSS &&
      (s->scatter_out || s->scatter_rounds != d.scatter_rounds || s->scatter_restart))
    return bad(error, "scatter-rounds, scatter-restart and scatter-out need scatter = sss");
  if (s->scatter_restart && s->start)
    return bad(error, "scatter-restart = true and start = %s: the restart begins again from "
               "the uniform image, not from a start image", s->start);
  if (s->scatter == TL_RUN_SCATTER_SSS && (s->checkpoint || s->resume))
    return bad(error, "checkpoint and resume do not go with scatter = sss (the scatter term "
               "changes between rounds); save the estimate with scatter-out and use scatter = "
               "file");
  if (s->start && s->resume)
    return bad(error, "start = %s and resume = %s: a resumed run goes on from its checkpoint's "
               "image", s->start, s->resume);
  if (s->checkpoint_every && !s->checkpoint)
    return bad(error, "checkpoint-every = %u needs checkpoint", s->checkpoint_every);
  if (isnan(s->calibration) && (s->isotope || !isnan(s->duration_s) || !isnan(s->frame_start_s)))
    return bad(error, "isotope, duration and frame-start need calibration");
  if (ct && s->nonnegative && !(g_str_equal(algo, "sirt") || g_str_equal(algo, "os-sart")))
    return bad(error, "nonnegative = true: for sirt and os-sart (algorithm = %s)", algo);
  if (ct && s->batch && !fdk) return bad(error, "batch = %u: for fdk and fbp", s->batch);
  if (ct && s->fdk_filter != d.fdk_filter && !fdk)
    return bad(error, "fdk-filter = %s: for fdk and fbp", tl_ct_filter_name(s->fdk_filter));
  return TRUE;
}

gboolean tl_run_spec_to_recon_options(const TlRunSpec *s, TlReconOptions *o, TlFilter *post,
                                      GError **error) {
  if (s->modality != TL_RUN_PET) return bad(error, "modality = ct: not a PET run");
  if (!tl_run_spec_validate(s, error)) return FALSE;
  tl_recon_options_init(o);
  const TlAlgorithmClass *ak = tl_recon_find_algorithm(tl_run_spec_algorithm(s), error);
  if (!ak) return FALSE;
  o->algorithm = tl_algorithm_name(ak);
  if (tl_algorithm_flags(ak) & TL_ALGO_SUBSETS) o->algo = TL_RECON_OSEM;
  o->subsets = tl_run_spec_subsets(s);
  o->iterations = tl_run_spec_iterations(s);
  o->projector = tl_run_spec_projector(s);
  o->loglik = s->objective == TL_RUN_OBJECTIVE_NEVER       ? TL_LOGLIK_NEVER
              : s->objective == TL_RUN_OBJECTIVE_ITERATION ? TL_LOGLIK_ITERATION
                                                           : TL_LOGLIK_SUBITERATION;
  o->use_cache = s->cache;
  o->prior = s->prior;
  o->beta = s->beta;
  o->prior_params.gamma = s->gamma;
  o->prior_params.epsilon = s->epsilon; /* NAN: automatic (TlSolverOptions.warm_epochs) */
  o->relaxation = (float)s->relaxation;
  o->seed = s->seed;
  o->start_subset = s->start_subset;
  o->zero_end_planes = s->zero_end_planes;
  o->warm_epochs = s->osem_epochs;
  o->tof = s->tof;
  o->tof_n_sigma = s->tof_nsigma;
  o->tor_fwhm_mm = s->tor_fwhm_mm;
  o->rays_tangential = s->rays_tangential;
  o->rays_axial = s->rays_axial;
  if (s->filter_every) {
    o->filter = s->filter;
    o->filter_every = s->filter_every;
  }
  if (post) *post = s->filter_every ? (TlFilter){TL_FILTER_NONE, 0} : s->filter;
  return TRUE;
}

gboolean tl_run_spec_apply_kappa(const TlRunSpec *s, TlSolver *sv, GError **error) {
  if (!s->kappa) return TRUE;
  g_autoptr(TlImage) k = tl_image_load(s->kappa, error);
  if (!k || !tl_solver_set_kappa(sv, k, error)) {
    g_prefix_error(error, "kappa = %s: ", s->kappa);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_run_spec_to_ct_options(const TlRunSpec *s, TlCtReconOptions *o, GError **error) {
  if (s->modality != TL_RUN_CT) return bad(error, "modality = pet: not a CT run");
  if (!tl_run_spec_validate(s, error)) return FALSE;
  const char *algo = tl_run_spec_algorithm(s);
  if (tl_run_algorithm_direct(algo)) return bad(error, "algorithm = %s: a direct method, no solver", algo);
  tl_ct_recon_options_init(o);
  const TlAlgorithmClass *ak = tl_recon_find_algorithm(algo, error);
  if (!ak) return FALSE;
  o->algorithm = tl_algorithm_name(ak);
  /* the old names keep their meaning: sart / mlem with subsets are OS-SART / OSEM */
  tl_ct_algo_from_name(o->algorithm, &o->algo, NULL);
  if (g_str_equal(o->algorithm, "os-sart")) o->algo = TL_CT_SART;
  o->iterations = tl_run_spec_iterations(s);
  o->subsets = tl_run_spec_subsets(s);
  if (!tl_ct_method_from_name(tl_run_spec_projector(s), &o->projector, error)) return FALSE;
  o->relaxation = (float)s->relaxation;
  o->seed = s->seed;
  o->nonnegative = s->nonnegative;
  o->objective = s->objective == TL_RUN_OBJECTIVE_NEVER       ? TL_CT_OBJECTIVE_NEVER
                 : s->objective == TL_RUN_OBJECTIVE_ITERATION ? TL_CT_OBJECTIVE_ITERATION
                                                              : TL_CT_OBJECTIVE_SUBITERATION;
  o->prior = s->prior;
  o->beta = s->beta;
  o->prior_params.gamma = s->gamma;
  o->prior_params.epsilon = isnan(s->epsilon) ? 1e-3 : s->epsilon; /* auto: PET's rdp only */
  return TRUE;
}

/* ---- grid ---- */

gboolean tl_run_parse_grid_any(const char *text, TlImageGrid *g, GError **error) {
  g_autofree char *q = tl_text_quote(text, -1, 60);
  const char *at = strchr(text, '@');
  g_autofree char *dims_text = at ? g_strndup(text, at - text) : NULL;
  g_auto(GStrv) dims = dims_text ? g_strsplit(dims_text, "x", -1) : NULL;
  g_auto(GStrv) sizes = at ? g_strsplit(at + 1, ",", -1) : NULL;
  guint nd = dims ? g_strv_length(dims) : 0, ns = sizes ? g_strv_length(sizes) : 0;
  guint64 n[3];
  double v[3];
  gboolean ok = nd == 3 && (ns == 1 || ns == 3);
  for (guint d = 0; ok && d < 3; d++) {
    char *end = NULL;
    n[d] = g_ascii_strtoull(dims[d], &end, 10);
    ok = g_ascii_isdigit(dims[d][0]) && !*end && n[d] >= 1 && n[d] <= 65535;
    const char *t = sizes[ns == 1 ? 0 : d];
    v[d] = g_ascii_strtod(t, &end);
    ok = ok && end != t && !*end && !strpbrk(t, "xXnNiI") && v[d] >= 1e-6 && v[d] <= 1e6;
  }
  if (!ok) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "grid '%s': expected NXxNYxNZ@VOXEL_MM or NXxNYxNZ@VX,VY,VZ (sizes 1 to 65535, "
                "voxels 1e-6 to 1e6 mm; e.g. 215x215x71@2.78)", q);
    return FALSE;
  }
  *g = tl_image_grid_centred((guint)n[0], (guint)n[1], (guint)n[2], (float)v[0], (float)v[1],
                             (float)v[2]);
  if (!tl_image_grid_validate_shape(g, error)) {
    g_prefix_error(error, "grid '%s': ", q);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_run_parse_grid(const char *text, TlImageGrid *g, GError **error) {
  if (!tl_run_parse_grid_any(text, g, error)) return FALSE;
  if (tl_image_grid_validate(g, error)) return TRUE;
  g_autofree char *q = tl_text_quote(text, -1, 60);
  g_prefix_error(error, "grid '%s': ", q);
  return FALSE;
}

/* "NXxNYxNZ voxels of VX x VY x VZ mm, origin (X, Y, Z) mm" */
static char *grid_words(const TlImageGrid *g) {
  return g_strdup_printf("%ux%ux%u voxels of %g x %g x %g mm, origin (%g, %g, %g) mm",
                         g->dims[0], g->dims[1], g->dims[2], g->voxel_mm[0], g->voxel_mm[1],
                         g->voxel_mm[2], g->origin_mm[0], g->origin_mm[1], g->origin_mm[2]);
}

gboolean tl_run_spec_load_sensitivity(const TlRunSpec *s, const TlImageGrid *grid, TlImage **out,
                                      GError **error) {
  *out = NULL;
  if (!s->sensitivity) return TRUE;
  g_autoptr(TlImage) im = tl_image_load(s->sensitivity, error);
  if (!im) {
    g_prefix_error(error, "sensitivity = %s: ", s->sensitivity);
    return FALSE;
  }
  if (!tl_image_grid_equal(&im->grid, grid)) {
    g_autofree char *found = grid_words(&im->grid), *want = grid_words(grid);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "sensitivity = %s: the image's grid is "
                "%s; expected the run's image grid %s", s->sensitivity, found, want);
    return FALSE;
  }
  *out = g_steal_pointer(&im);
  return TRUE;
}

gboolean tl_run_spec_write_sensitivity(const TlRunSpec *s, TlRecon *r, GError **error) {
  if (!s->sensitivity_out) return TRUE;
  const TlArray *a = tl_recon_sensitivity(r);
  g_autoptr(TlImage) im = a ? tl_image_new(tl_recon_grid(r)) : NULL;
  if (!a) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "sensitivity-out = %s: the run's "
                "algorithm uses no sensitivity image", s->sensitivity_out);
    return FALSE;
  }
  /* NIfTI and the other float formats keep the bits: a run reading it back is the same run */
  if (!tl_array_download(a, im->data, error) || !tl_image_save(im, s->sensitivity_out, error)) {
    g_prefix_error(error, "sensitivity-out = %s: ", s->sensitivity_out);
    return FALSE;
  }
  return TRUE;
}
