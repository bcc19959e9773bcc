/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A race from its description (tl-run-race-session.h): the steps `tomolab-cli race` used to
 * take itself, in the run layer so that every door takes them alike. */
#include "tl-run-race-session.h"
#include "run/tl-run-race.h"
#include "run/tl-run-spec.h"
#include "dataset/tl-formats.h"
#include "image/tl-nema.h"
#include "tl-error.h"
#include <math.h>
#include <string.h>

struct _TlRaceSession {
  TlRaceSpec *spec;
  TlDataset *own_ds;  /* opened from spec->data */
  const TlDataset *ds;
  TlImageGrid grid;
  TlImage *reference;
  guint ref_updates;
  double ref_seconds, ref_objective;
  TlMetrics *metrics;
  GPtrArray *recons;  /* TlRecon, one per entrant */
  TlRace *race;
  guint rounds;
};

void tl_race_session_free(TlRaceSession *s) {
  if (!s) return;
  g_clear_pointer(&s->race, tl_race_free);
  if (s->recons) g_ptr_array_unref(s->recons);
  g_clear_pointer(&s->metrics, tl_metrics_free);
  g_clear_pointer(&s->reference, tl_image_free);
  g_clear_pointer(&s->own_ds, tl_dataset_free);
  tl_race_spec_free(s->spec);
  g_free(s);
}

static TlImage *load_image(const char *key, const char *path, GError **error) {
  TlImage *im = tl_image_load(path, error);
  if (!im) g_prefix_error(error, "race key '%s' = %s: ", key, path);
  return im;
}

static gboolean set_mask(TlMetrics *m, const char *key, const char *path, GError **error) {
  if (!path) return TRUE;
  g_autoptr(TlImage) mask = load_image(key, path, error);
  gboolean ok = mask && (g_str_equal(key, "object") ? tl_metrics_set_object(m, mask, error)
                                                    : tl_metrics_set_background(m, mask, error));
  if (mask && !ok) g_prefix_error(error, "race key '%s' = %s: ", key, path);
  return ok;
}

/* "[NAME=]MASK": named after the file without a name */
static gboolean add_voi(TlMetrics *m, const char *text, GError **error) {
  const char *eq = strchr(text, '=');
  g_autofree char *name = eq ? g_strndup(text, eq - text) : g_path_get_basename(text);
  g_autoptr(TlImage) mask = load_image("vois", eq ? eq + 1 : text, error);
  if (!mask || !tl_metrics_add_voi(m, g_strstrip(name), mask, error)) {
    if (mask) g_prefix_error(error, "race key 'vois', %s: ", text);
    return FALSE;
  }
  return TRUE;
}

static gboolean make_metrics(TlRaceSession *s, GError **error) {
  const TlRaceSpec *sp = s->spec;
  s->metrics = tl_metrics_new(s->reference, error);
  if (!s->metrics || !set_mask(s->metrics, "object", sp->object, error) ||
      !set_mask(s->metrics, "background", sp->background, error))
    return FALSE;
  for (guint i = 0; sp->vois && sp->vois[i]; i++)
    if (!add_voi(s->metrics, sp->vois[i], error)) return FALSE;
  if (sp->nema) {
    TlNemaOptions no;
    TlNemaLayout layout;
    tl_nema_options_init(&no);
    if (!tl_nema_layout_init(&layout, &s->grid, &no, error) ||
        !tl_metrics_add_nema(s->metrics, &layout, error)) {
      g_prefix_error(error, "race key 'nema': ");
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean make_reference(TlRaceSession *s, TlContext *ctx, const TlRunSpec *base,
                               GCancellable *cancel, GError **error) {
  const TlRaceSpec *sp = s->spec;
  g_autoptr(TlRecon) r = tl_run_race_entrant(ctx, s->ds, &s->grid, base, sp->reference_algo, error);
  gint64 t0 = g_get_monotonic_time();
  if (!r || !tl_race_reference(tl_recon_solver(r), sp->reference_updates, sp->tolerance, cancel,
                               &s->ref_updates, &s->ref_objective, error) ||
      !(s->reference = tl_recon_image(r, error)))
    return FALSE;
  s->ref_seconds = (g_get_monotonic_time() - t0) * 1e-6;
  if (sp->reference) {
    const TlFormatClass *f = tl_format_for_output(sp->reference, TL_DATA_IMAGE, NULL, error);
    if (!f || !tl_format_save(f, s->reference, sp->reference, error)) {
      g_prefix_error(error, "race key 'reference' = %s: ", sp->reference);
      return FALSE;
    }
  }
  return TRUE;
}

TlRaceSession *tl_race_session_new(TlContext *ctx, const TlRaceSpec *spec, const TlDataset *ds,
                                   GCancellable *cancellable, GError **error) {
  if (!tl_race_spec_validate(spec, error)) return NULL;
  g_autoptr(TlRaceSession) s = g_new0(TlRaceSession, 1);
  s->spec = tl_race_spec_copy(spec);
  s->ref_objective = NAN;
  if (!ds) {
    if (!spec->data) {
      g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "race: no data (expected data = FILE)");
      return NULL;
    }
    if (!(s->own_ds = tl_dataset_open(spec->data, error))) return NULL;
    ds = s->own_ds;
  }
  s->ds = ds;
  /* the race's own run keys: every entrant's (and the reference's) starting values */
  g_autoptr(TlRunSpec) base = tl_run_spec_new();
  g_autofree char *seed = g_strdup_printf("%u", spec->seed);
  if ((spec->kappa && !tl_run_spec_set(base, "kappa", spec->kappa, error)) ||
      (spec->randoms && !tl_run_spec_set(base, "randoms", spec->randoms, error)) ||
      !tl_run_spec_set(base, "seed", seed, error)) {
    g_prefix_error(error, "race: ");
    return NULL;
  }
  gboolean make = spec->reference_algo != NULL;
  if (!make && !(s->reference = load_image("reference", spec->reference, error))) return NULL;
  s->grid = s->reference ? s->reference->grid : ds->grid;
  if (spec->grid && !tl_run_parse_grid(spec->grid, &s->grid, error)) {
    g_prefix_error(error, "race key 'grid': ");
    return NULL;
  }
  if (make && !make_reference(s, ctx, base, cancellable, error)) return NULL;
  if (!make && spec->objective) {
    /* a reference read from a file: its objective under the first entrant's model (a solver
     * of its own, so that no entrant starts from anything but its own start) */
    g_autoptr(TlRecon) r = tl_run_race_entrant(ctx, ds, &s->grid, base, spec->algos[0], error);
    if (!r || !tl_solver_set_image(tl_recon_solver(r), s->reference, error) ||
        !tl_solver_objective(tl_recon_solver(r), &s->ref_objective, error)) {
      g_prefix_error(error, "race key 'reference' = %s, its objective: ", spec->reference);
      return NULL;
    }
  }
  if (!make_metrics(s, error)) return NULL;
  s->race = tl_race_new(s->metrics);
  s->recons = g_ptr_array_new_with_free_func((GDestroyNotify)tl_recon_free);
  for (guint i = 0; spec->algos[i]; i++) {
    TlRecon *r = tl_run_race_entrant(ctx, ds, &s->grid, base, spec->algos[i], error);
    if (!r) return NULL;
    g_ptr_array_add(s->recons, r);
    if (!tl_race_add(s->race, spec->algos[i], tl_recon_solver(r), error)) return NULL;
  }
  tl_race_set_objective(s->race, spec->objective);
  tl_race_set_cancellable(s->race, cancellable);
  return g_steal_pointer(&s);
}

const TlRaceSpec *tl_race_session_spec(const TlRaceSession *s) { return s->spec; }
TlRace *tl_race_session_race(TlRaceSession *s) { return s->race; }
const TlMetrics *tl_race_session_metrics(const TlRaceSession *s) { return s->metrics; }
const TlImageGrid *tl_race_session_grid(const TlRaceSession *s) { return &s->grid; }
const TlImage *tl_race_session_reference(const TlRaceSession *s) { return s->reference; }
guint tl_race_session_rounds(const TlRaceSession *s) { return s->rounds; }

void tl_race_session_reference_run(const TlRaceSession *s, guint *updates, double *seconds,
                                   double *objective) {
  if (updates) *updates = s->ref_updates;
  if (seconds) *seconds = s->ref_seconds;
  if (objective) *objective = s->ref_objective;
}

double tl_race_session_reference_objective(const TlRaceSession *s) { return s->ref_objective; }

TlSolver *tl_race_session_solver(TlRaceSession *s, guint entrant) {
  return entrant < s->recons->len ? tl_recon_solver(s->recons->pdata[entrant]) : NULL;
}

gboolean tl_race_session_done(const TlRaceSession *s) {
  if (s->rounds >= s->spec->updates) return TRUE;
  if (!s->spec->until_target) return FALSE;
  for (guint i = 0; i < tl_race_n_entrants(s->race); i++)
    if (isnan(tl_race_time_to_target(s->race, i))) return FALSE;
  return TRUE;
}

gboolean tl_race_session_run(TlRaceSession *s, guint rounds, GError **error) {
  guint n = MIN(rounds, s->spec->updates - MIN(s->rounds, s->spec->updates));
  for (guint u = 0; u < n && !tl_race_session_done(s); u++) {
    if (!tl_race_run(s->race, 1, s->spec->until_target, error)) return FALSE;
    s->rounds++;
  }
  return TRUE;
}
