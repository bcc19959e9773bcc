/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Race entrants from "ALGORITHM[:KEY=VALUE,...]" (tl-run-race.h). */
#include "tl-run-race.h"
#include "run/tl-run-spec.h"
#include "pet/correct/tl-randoms.h"
#include "tl-error.h"
#include <string.h>

/* The keys that shape a solver on the dataset's own data model. */
static const char *const solver_keys[] = {"subsets", "projector", "prior", "beta", "gamma",
                                          "epsilon", "relaxation", "tof", "tof-nsigma",
                                          "tor-fwhm", "binned", "seed", "osem-epochs", NULL};

static gboolean parse(TlRunSpec *sp, const char *spec, GError **error) {
  const char *colon = strchr(spec, ':');
  g_autofree char *algo = colon ? g_strndup(spec, colon - spec) : g_strdup(spec);
  if (!tl_run_spec_set(sp, "algorithm", g_strstrip(algo), error)) return FALSE;
  if (!colon) return TRUE;
  g_auto(GStrv) pairs = g_strsplit(colon + 1, ",", -1);
  for (guint i = 0; pairs[i]; i++) {
    char *eq = strchr(pairs[i], '=');
    if (!eq) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "'%s': expected KEY=VALUE, e.g. subsets=10", pairs[i]);
      return FALSE;
    }
    *eq = 0;
    const char *key = g_strstrip(pairs[i]), *value = g_strstrip(eq + 1);
    if (!g_strv_contains(solver_keys, key)) {
      g_autofree char *known = g_strjoinv(", ", (char **)solver_keys);
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "key '%s': a race entrant takes only %s (every entrant sees the same data)",
                  key, known);
      return FALSE;
    }
    if (!tl_run_spec_set(sp, key, value, error)) return FALSE;
  }
  return TRUE;
}

TlRecon *tl_run_race_entrant(TlContext *ctx, const TlDataset *ds, const TlImageGrid *grid,
                             const TlRunSpec *base, const char *spec, GError **error) {
  if (!ds || (ds->kind != TL_DATASET_PET_LISTMODE && ds->kind != TL_DATASET_PET_BINS)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "race: %s holds %s: expected PET list mode or a sinogram",
                ds && ds->path ? ds->path : "the data",
                ds ? tl_dataset_kind_name(ds->kind) : "nothing");
    return NULL;
  }
  g_autoptr(TlRunSpec) sp = base ? tl_run_spec_copy(base) : tl_run_spec_new();
  TlReconOptions o;
  TlFilter post;
  gboolean ok = parse(sp, spec ? spec : "", error);
  if (ok && !sp->prior) g_clear_pointer(&sp->kappa, g_free); /* the race's kappa: priors only */
  if (!ok || !tl_run_spec_to_recon_options(sp, &o, &post, error)) {
    g_prefix_error(error, "race entrant '%s': ", spec ? spec : "");
    return NULL;
  }
  if (!sp->subsets && o.subsets > 1) o.subsets = ds->subsets; /* auto: the dataset's */
  o.loglik = TL_LOGLIK_NEVER;
  /* randoms from the delayeds: the additive term that bounds the Poisson term's curvature
   * where D A x -> 0 (bench/README.md, "SVRG against BSREM"); the recon keeps its own copy */
  g_autoptr(TlRandoms) randoms = NULL;
  if (sp->randoms == TL_RUN_RANDOMS_DELAYEDS) {
    if (!ds->lm || ds->lm->n_delayed == 0) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race entrant '%s': randoms = delayeds, "
                  "but %s has no delayed events: expected list mode with delayeds",
                  spec ? spec : "", ds->path ? ds->path : "the data");
      return NULL;
    }
    randoms = tl_randoms_from_delayeds(ds->lm->scanner, ds->lm->delayed, ds->lm->n_delayed, error);
    if (!randoms) {
      g_prefix_error(error, "race entrant '%s', randoms from %s: ", spec ? spec : "",
                     ds->path ? ds->path : "the data");
      return NULL;
    }
    o.randoms = randoms;
  } else if (sp->randoms != TL_RUN_RANDOMS_NONE) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race entrant '%s': randoms from singles "
                "or a file are not offered in a race (expected none or delayeds)", spec ? spec : "");
    return NULL;
  }
  TlRecon *r;
  if (ds->kind == TL_DATASET_PET_BINS || sp->binned) {
    g_autoptr(GArray) own = ds->kind == TL_DATASET_PET_BINS ? NULL : tl_listmode_histogram(ds->lm);
    GArray *bins = own ? own : ds->bins;
    r = tl_recon_new_binned(ctx, ds->lm->scanner, (const TlBin *)bins->data, bins->len, grid, &o,
                            error);
  } else {
    r = tl_recon_new_listmode(ctx, ds->lm, grid, &o, error);
  }
  if (r && !tl_run_spec_apply_kappa(sp, tl_recon_solver(r), error)) g_clear_pointer(&r, tl_recon_free);
  if (!r) g_prefix_error(error, "race entrant '%s': ", spec);
  return r;
}
