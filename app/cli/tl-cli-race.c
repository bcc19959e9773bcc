/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli race: 2 to 8 algorithm configurations on the same PET data, one update each in
 * turn on the device (recon/tl-race.h), judged by PETRIC's metrics against a reference image
 * (recon/tl-metrics.h); prints each one's time to target, writes every update as CSV. */
#include "tl-cli.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-race.h"
#include "run/tl-run-race.h"
#include <math.h>
#include <string.h>

static int fail(GError *error) {
  fprintf(stderr, "tomolab-cli race: %s\n", error->message);
  g_error_free(error);
  return 1;
}

static void on_record(const TlRaceRecord *r, gpointer data) {
  TlRace *race = data;
  if (r->update % 10 == 0)
    fprintf(stderr, "race: %-28s update %4u  %8.3f s  epoch %7.2f  rmse %.4g%s\n",
            tl_race_label(race, r->entrant), r->update, r->seconds, r->epoch,
            r->metrics ? r->metrics[0] : NAN, isnan(r->time_to_target) ? "" : "  (target reached)");
}

/* --voi NAME=FILE or FILE (named after the file) */
static gboolean add_voi(TlMetrics *m, const char *text, GError **error) {
  const char *eq = strchr(text, '=');
  g_autofree char *name = eq ? g_strndup(text, eq - text) : g_path_get_basename(text);
  const char *path = eq ? eq + 1 : text;
  g_autoptr(TlImage) mask = tl_cli_load_image(path, error);
  if (!mask || !tl_metrics_add_voi(m, name, mask, error)) {
    g_prefix_error(error, "--voi %s: ", text);
    return FALSE;
  }
  return TRUE;
}

static gboolean set_mask(TlMetrics *m, const char *option, const char *path, GError **error) {
  if (!path) return TRUE;
  g_autoptr(TlImage) mask = tl_cli_load_image(path, error);
  gboolean ok = mask && (g_str_equal(option, "--object") ? tl_metrics_set_object(m, mask, error)
                                                         : tl_metrics_set_background(m, mask, error));
  if (!ok) g_prefix_error(error, "%s %s: ", option, path);
  return ok;
}

int tl_cli_race(int argc, char **argv) {
  g_auto(GStrv) algos = NULL, vois = NULL;
  g_autofree char *reference = NULL, *reference_algo = NULL, *object = NULL, *background = NULL,
                  *csv = NULL, *grid_text = NULL, *device = NULL, *kappa = NULL, *seed = NULL;
  gint updates = 50, reference_updates = 1000;
  double tolerance = 1e-7;
  gboolean until_target = FALSE, objective = FALSE, nema = FALSE;
  GOptionEntry entries[] = {
      {"algo", 'a', 0, G_OPTION_ARG_STRING_ARRAY, &algos,
       "An entrant: ALGORITHM[:KEY=VALUE,...] (keys subsets, projector, prior, beta, gamma, "
       "epsilon, relaxation, tof, tof-nsigma, tor-fwhm, binned, seed, osem-epochs); 1 to 8 of "
       "them", "SPEC"},
      {"kappa", 0, 0, G_OPTION_ARG_FILENAME, &kappa,
       "Every prior's per-voxel weights (PETRIC's kappa image, on the grid; run key kappa)",
       "IMAGE"},
      {"seed", 0, 0, G_OPTION_ARG_STRING, &seed,
       "The stochastic entrants' subset order seed (svrg, saga; run key seed; default 1; an "
       "entrant's seed= wins)", "N"},
      {"reference", 'r', 0, G_OPTION_ARG_FILENAME, &reference,
       "The converged reference image (required); made first with --reference-algo", "IMAGE"},
      {"reference-algo", 0, 0, G_OPTION_ARG_STRING, &reference_algo,
       "Make the reference: this entrant run to --tolerance and saved as --reference", "SPEC"},
      {"reference-updates", 0, 0, G_OPTION_ARG_INT, &reference_updates,
       "At most this many updates for the reference (default 1000)", "N"},
      {"tolerance", 0, 0, G_OPTION_ARG_DOUBLE, &tolerance,
       "The reference stops when its objective changes by at most this fraction over a pass "
       "of subsets (default 1e-7)", "T"},
      {"object", 0, 0, G_OPTION_ARG_FILENAME, &object,
       "Whole-object mask (non-zero voxels; default every voxel)", "IMAGE"},
      {"background", 0, 0, G_OPTION_ARG_FILENAME, &background,
       "Background mask: the metrics are relative to the reference's mean there", "IMAGE"},
      {"voi", 0, 0, G_OPTION_ARG_STRING_ARRAY, &vois,
       "A volume of interest: [NAME=]MASK (repeatable)", "MASK"},
      {"nema", 0, 0, G_OPTION_ARG_NONE, &nema,
       "The NEMA IEC phantom's regions: each hot sphere a VOI, the background ROIs the "
       "background mask (a scan of the phantom centred in the scanner)", NULL},
      {"updates", 'n', 0, G_OPTION_ARG_INT, &updates,
       "Updates (sub-iterations) per entrant (default 50)", "N"},
      {"until-target", 0, 0, G_OPTION_ARG_NONE, &until_target,
       "An entrant that reached the target stops", NULL},
      {"objective", 0, 0, G_OPTION_ARG_NONE, &objective,
       "The objective after every update (untimed; a projection of all data each)", NULL},
      {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv, "Every update of every entrant as CSV", "FILE"},
      {"grid", 'g', 0, G_OPTION_ARG_STRING, &grid_text,
       "NXxNYxNZ@V[,VY,VZ] (default the reference's grid, else the dataset's)", "GRID"},
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device, "Device index or name substring", "DEV"},
      {NULL}};
  static const char description[] =
      "The entrants run in turn, one update each, on the same data and device; each is timed\n"
      "alone. After each update: PETRIC's whole-object and background RMSE and each VOI's mean\n"
      "error, relative to the reference's background mean; time to target = the first time all\n"
      "are within 1 %, 1 % and 0.5 % for 10 updates in a row (docs/recon.md, Races). Epochs are\n"
      "data passes: a projection of all data forward and back is 1, a subset's 1/S (SVRG's full\n"
      "gradient 1, each of its steps 2/S). E.g.\n"
      "  tomolab-cli race scan.tlm --reference ref.nii --reference-algo bsrem:subsets=10,prior=rdp,beta=0.1 \\\n"
      "      --algo osem:subsets=10 --algo bsrem:subsets=10,prior=rdp,beta=0.1,osem-epochs=1 --csv race.csv";
  GError *error = NULL;
  if (!tl_cli_parse_options("DATA - race reconstruction algorithms", entries, description, &argc,
                            &argv, &error))
    return tl_cli_usage_error("race", error);
  if (argc != 2) {
    fprintf(stderr, "tomolab-cli race: one data file is required (see --help)\n");
    return 2;
  }
  guint n_algos = algos ? g_strv_length(algos) : 0;
  if (n_algos < 1 || n_algos > TL_RACE_MAX_ENTRANTS) {
    fprintf(stderr, "tomolab-cli race: %u --algo given: expected 1 to %d\n", n_algos,
            TL_RACE_MAX_ENTRANTS);
    return 2;
  }
  if (!reference) {
    fprintf(stderr, "tomolab-cli race: --reference IMAGE is required (with --reference-algo "
            "to make it)\n");
    return 2;
  }
  if (updates < 1 || reference_updates < 1 || !(tolerance >= 0)) {
    fprintf(stderr, "tomolab-cli race: --updates %d, --reference-updates %d, --tolerance %g: "
            "expected counts >= 1 and a tolerance >= 0\n", updates, reference_updates, tolerance);
    return 2;
  }
  gboolean make_reference = reference_algo != NULL;
  if (!make_reference && !g_file_test(reference, G_FILE_TEST_EXISTS)) {
    fprintf(stderr, "tomolab-cli race: --reference %s: no such file (give --reference-algo to "
            "make it)\n", reference);
    return 2;
  }
  /* the race's own run keys: every entrant's starting values */
  g_autoptr(TlRunSpec) keys_of_race = tl_run_spec_new();
  const char *keys[][2] = {{"kappa", kappa}, {"seed", seed}};
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    if (keys[i][1] && !tl_run_spec_set(keys_of_race, keys[i][0], keys[i][1], &error)) {
      g_prefix_error(&error, "--%s: ", keys[i][0]);
      return tl_cli_usage_error("race", error);
    }
  if (!tl_cli_check_outputs((const TlCliFile[]){{"data", argv[1]}}, 1,
                            (const TlCliFile[]){{"--csv", csv},
                                                {"--reference", make_reference ? reference : NULL}},
                            2, &error))
    return tl_cli_usage_error("race", error);

  g_autoptr(TlDataset) ds = tl_dataset_open(argv[1], &error);
  if (!ds) return fail(error);
  g_autoptr(TlImage) ref = make_reference ? NULL : tl_cli_load_image(reference, &error);
  if (!make_reference && !ref) return fail(error);
  TlImageGrid grid = ref ? ref->grid : ds->grid;
  if (grid_text && !tl_cli_parse_grid(grid_text, &grid, &error))
    return tl_cli_usage_error("race", error);
  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return fail(error);
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  TlCliInterrupt *it = tl_cli_interrupt_begin(cancel);

  if (make_reference) {
    g_autoptr(TlRecon) r = tl_run_race_entrant(ctx, ds, &grid, keys_of_race, reference_algo, &error);
    guint made = 0;
    double phi = NAN;
    gint64 t0 = g_get_monotonic_time();
    if (!r || !tl_race_reference(tl_recon_solver(r), (guint)reference_updates, tolerance, cancel,
                                 &made, &phi, &error) ||
        !(ref = tl_recon_image(r, &error)) || !tl_cli_save_image(ref, reference, &error)) {
      tl_cli_interrupt_end(it);
      return fail(error);
    }
    printf("reference: %s, %u updates in %.2f s, objective %.10g, saved as %s\n", reference_algo,
           made, (g_get_monotonic_time() - t0) * 1e-6, phi, reference);
  }
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, &error);
  gboolean ok = m && set_mask(m, "--object", object, &error) &&
                set_mask(m, "--background", background, &error);
  for (guint i = 0; ok && vois && vois[i]; i++) ok = add_voi(m, vois[i], &error);
  if (ok && nema) {
    TlNemaOptions no;
    TlNemaLayout layout;
    tl_nema_options_init(&no);
    ok = tl_nema_layout_init(&layout, &grid, &no, &error) && tl_metrics_add_nema(m, &layout, &error);
    if (!ok) g_prefix_error(&error, "--nema: ");
  }
  if (!ok) {
    tl_cli_interrupt_end(it);
    return tl_cli_usage_error("race", error);
  }
  g_autoptr(TlRace) race = tl_race_new(m);
  g_autoptr(GPtrArray) recons = g_ptr_array_new_with_free_func((GDestroyNotify)tl_recon_free);
  for (guint i = 0; i < n_algos; i++) {
    TlRecon *r = tl_run_race_entrant(ctx, ds, &grid, keys_of_race, algos[i], &error);
    if (!r) {
      tl_cli_interrupt_end(it);
      return fail(error);
    }
    g_ptr_array_add(recons, r);
    if (!tl_race_add(race, algos[i], tl_recon_solver(r), &error)) {
      tl_cli_interrupt_end(it);
      return tl_cli_usage_error("race", error);
    }
  }
  tl_race_set_objective(race, objective);
  tl_race_set_cancellable(race, cancel);
  tl_race_set_callback(race, on_record, race);
  ok = tl_race_run(race, (guint)updates, until_target, &error);
  gboolean interrupted = tl_cli_interrupt_end(it);
  if (!ok && !(interrupted && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)))
    return fail(error);
  g_clear_error(&error);
  /* the results so far, also after Ctrl-C */
  const char *base = tl_race_label(race, 0);
  double t_base = NAN;
  for (guint i = 0; i < n_algos; i++)
    if (g_str_has_prefix(tl_race_label(race, i), "bsrem")) {
      base = tl_race_label(race, i);
      t_base = tl_race_time_to_target(race, i);
      break;
    }
  printf("(epochs: data passes, a projection of all data forward and back = 1)\n");
  printf("%-32s %7s %10s %8s %12s %12s %10s\n", "entrant", "updates", "seconds", "epochs",
         "s to target", "ep. to target", "rmse");
  for (guint i = 0; i < n_algos; i++) {
    guint n = tl_race_n_records(race, i);
    const TlRaceRecord *last = n ? tl_race_record(race, i, n - 1) : NULL;
    double t = tl_race_time_to_target(race, i);
    char ts[32] = "not reached", es[32] = "-";
    if (!isnan(t)) {
      g_snprintf(ts, sizeof ts, "%.3f", t);
      g_snprintf(es, sizeof es, "%.2f", tl_race_epoch_to_target(race, i));
    }
    printf("%-32s %7u %10.3f %8.2f %12s %12s %10.4g", tl_race_label(race, i), n,
           last ? last->seconds : 0.0, last ? last->epoch : 0.0, ts, es,
           last ? last->metrics[0] : NAN);
    if (!isnan(t) && !isnan(t_base) && base != tl_race_label(race, i))
      printf("  (%.2fx %s's time)", t / t_base, base);
    printf("\n");
  }
  if (csv && !tl_race_save_csv(race, csv, &error)) return fail(error);
  return interrupted ? 130 : 0;
}
