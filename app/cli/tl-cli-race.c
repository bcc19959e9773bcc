/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli race: 2 to 8 algorithm configurations on the same PET data, one update each in
 * turn on the device (recon/tl-race.h), judged by PETRIC's metrics against a reference image
 * (recon/tl-metrics.h); prints each one's time to target, writes every update as CSV. The
 * options are the keys of a race description (run/tl-run-race-spec.h) and the race is run by
 * run/tl-run-race-session.h, as the window runs its Race dialog's and `tomolab --race`. */
#include "tl-cli.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-race.h"
#include "run/tl-run-race-session.h"
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

int tl_cli_race(int argc, char **argv) {
  g_auto(GStrv) algos = NULL, vois = NULL;
  g_autofree char *reference = NULL, *reference_algo = NULL, *object = NULL, *background = NULL,
                  *csv = NULL, *grid_text = NULL, *device = NULL, *kappa = NULL, *seed = NULL, *randoms = NULL,
                  *race_file = NULL, *updates = NULL, *reference_updates = NULL,
                  *tolerance = NULL;
  gboolean until_target = FALSE, objective = FALSE, nema = FALSE;
  GOptionEntry entries[] = {
      {"race", 0, 0, G_OPTION_ARG_FILENAME, &race_file,
       "A race file (docs/formats.md, \"Race files\": the keys below); options over it", "FILE"},
      {"algo", 'a', 0, G_OPTION_ARG_STRING_ARRAY, &algos,
       "An entrant: ALGORITHM[:KEY=VALUE,...] (keys subsets, projector, prior, beta, gamma, "
       "epsilon, relaxation, tof, tof-nsigma, tor-fwhm, binned, seed, osem-epochs); 1 to 8 of "
       "them (race key algos)", "SPEC"},
      {"kappa", 0, 0, G_OPTION_ARG_FILENAME, &kappa,
       "Every prior's per-voxel weights (PETRIC's kappa image, on the grid; run key kappa)",
       "IMAGE"},
      {"randoms", 0, 0, G_OPTION_ARG_STRING, &randoms,
       "Every entrant's randoms: none (default) or delayeds, estimated from the data's delayed "
       "events (run key randoms)", "KIND"},
      {"seed", 0, 0, G_OPTION_ARG_STRING, &seed,
       "The stochastic entrants' subset order seed (svrg, saga; run key seed; default 1; an "
       "entrant's seed= wins)", "N"},
      {"reference", 'r', 0, G_OPTION_ARG_FILENAME, &reference,
       "The converged reference image (required); made first with --reference-algo", "IMAGE"},
      {"reference-algo", 0, 0, G_OPTION_ARG_STRING, &reference_algo,
       "Make the reference: this entrant run to --tolerance and saved as --reference", "SPEC"},
      {"reference-updates", 0, 0, G_OPTION_ARG_STRING, &reference_updates,
       "At most this many updates for the reference (default 1000)", "N"},
      {"tolerance", 0, 0, G_OPTION_ARG_STRING, &tolerance,
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
      {"updates", 'n', 0, G_OPTION_ARG_STRING, &updates,
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
  if (!tl_cli_parse_options("[DATA] - race reconstruction algorithms", entries, description,
                            &argc, &argv, &error))
    return tl_cli_usage_error("race", error);
  g_autoptr(TlRaceSpec) spec = race_file ? tl_race_spec_load(race_file, &error) : tl_race_spec_new();
  if (!spec) return tl_cli_usage_error("race", error);
  if (argc > 2 || (argc < 2 && !spec->data)) {
    fprintf(stderr, "tomolab-cli race: one data file is required (see --help)\n");
    return 2;
  }
  /* the options are the race description's keys, over the race file's */
  g_autofree char *algo_list = algos ? g_strjoinv("; ", algos) : NULL;
  g_autofree char *voi_list = vois ? g_strjoinv("; ", vois) : NULL;
  const char *keys[][2] = {{"data", argc == 2 ? argv[1] : NULL},
                           {"algos", algo_list},
                           {"kappa", kappa},
                           {"randoms", randoms},
                           {"seed", seed},
                           {"reference", reference},
                           {"reference-algo", reference_algo},
                           {"reference-updates", reference_updates},
                           {"tolerance", tolerance},
                           {"object", object},
                           {"background", background},
                           {"vois", voi_list},
                           {"nema", nema ? "true" : NULL},
                           {"updates", updates},
                           {"until-target", until_target ? "true" : NULL},
                           {"objective", objective ? "true" : NULL},
                           {"grid", grid_text},
                           {"device", device},
                           {"csv", csv}};
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    if (keys[i][1] && !tl_race_spec_set(spec, keys[i][0], keys[i][1], &error)) {
      g_prefix_error(&error, "--%s: ", keys[i][0]);
      return tl_cli_usage_error("race", error);
    }
  if (spec->algos && g_strv_length(spec->algos) > TL_RACE_MAX_ENTRANTS) {
    fprintf(stderr, "tomolab-cli race: %u --algo given: expected 1 to %d\n",
            g_strv_length(spec->algos), TL_RACE_MAX_ENTRANTS);
    return 2;
  }
  if (!spec->reference) { /* the window may make one in memory; the CLI keeps it in a file */
    fprintf(stderr, "tomolab-cli race: --reference IMAGE is required (with --reference-algo "
            "to make it)\n");
    return 2;
  }
  if (!tl_race_spec_validate(spec, &error)) return tl_cli_usage_error("race", error);
  gboolean make_reference = spec->reference_algo != NULL;
  if (!make_reference && !g_file_test(spec->reference, G_FILE_TEST_EXISTS)) {
    fprintf(stderr, "tomolab-cli race: --reference %s: no such file (give --reference-algo to "
            "make it)\n", spec->reference);
    return 2;
  }
  if (!tl_cli_check_outputs((const TlCliFile[]){{"data", spec->data}}, 1,
                            (const TlCliFile[]){{"--csv", spec->csv},
                                                {"--reference",
                                                 make_reference ? spec->reference : NULL}},
                            2, &error))
    return tl_cli_usage_error("race", error);

  g_autoptr(TlContext) ctx = tl_context_new(spec->device, &error);
  if (!ctx) return fail(error);
  g_autoptr(GCancellable) cancel = g_cancellable_new();
  TlCliInterrupt *it = tl_cli_interrupt_begin(cancel);
  g_autoptr(TlRaceSession) session = tl_race_session_new(ctx, spec, NULL, cancel, &error);
  if (!session) {
    tl_cli_interrupt_end(it);
    return fail(error);
  }
  if (make_reference) {
    guint made;
    double seconds, phi;
    tl_race_session_reference_run(session, &made, &seconds, &phi);
    printf("reference: %s, %u updates in %.2f s, objective %.10g, saved as %s\n",
           spec->reference_algo, made, seconds, phi, spec->reference);
  }
  TlRace *race = tl_race_session_race(session);
  guint n_algos = tl_race_n_entrants(race);
  tl_race_set_callback(race, on_record, race);
  gboolean ok = tl_race_session_run(session, spec->updates, &error);
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
  if (spec->csv && !tl_race_save_csv(race, spec->csv, &error)) return fail(error);
  return interrupted ? 130 : 0;
}
