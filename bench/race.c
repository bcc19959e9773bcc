/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/race: seconds to the PETRIC target (recon/tl-metrics.h) per algorithm on the same data
 * and device, and each one's ratio to BSREM's, on the NEMA IEC phantom simulated for the DMI
 * (pet-common.c) and, with --mmr, on the shipped mMR list mode (../shared/data/mmr). The
 * reference is --reference-algo run to --tolerance; NEMA's regions are the VOIs and the
 * background (tl_metrics_add_nema); the mMR file has no phantom layout: whole-object RMSE over
 * the voxels above 5 % of the reference's maximum, normalised by their mean. The default is
 * quick (1e5 events, 12 mm voxels, 10 subsets); --events 1e6 --voxel 5.56 --tof is issue 29's
 * case (--tof: simulated with TOF bins and reconstructed with them, "tof = true").
 * Each entrant's time is its own steps only (tl-race.h); an entrant stops at its target. The
 * default entrants are issue 29's, all on rdp with --beta and an OSEM epoch's warm start
 * (osem-epochs=1, counted in their time and epochs): OSEM then BSREM, SVRG, SAGA (10 subsets)
 * and L-BFGS-B (all data); the reference is L-BFGS-B run to --tolerance. Epochs are data
 * passes (tl_solver_data_passes). */
#include "pet-common.h"
#include "dataset/tl-dataset.h"
#include "recon/tl-race.h"
#include "run/tl-run-race.h"
#include <math.h>
#include <stdio.h>

typedef struct {
  char **algos;
  const char *reference_algo;
  guint updates, reference_updates;
  double tolerance;
  gboolean tof; /* the NEMA DMI case simulated and reconstructed with TOF */
  guint trace;  /* print every entrant's metrics every this many updates (0: not) */
} Settings;

/* The worst |VOI mean error| of a record (values[2..]: tl_metrics_evaluate). */
static double worst_voi(const TlMetrics *m, const double *v) {
  double w = 0;
  for (guint i = 2; i < tl_metrics_n_values(m); i++) w = MAX(w, fabs(v[i]));
  return w;
}

static void race_one(TlContext *ctx, const char *name, TlDataset *ds, const TlImageGrid *grid,
                     gboolean nema, const Settings *s) {
  GError *error = NULL;
  double t0 = bench_now();
  /* the dataset's data model: randoms from its delayeds (the mMR's) as the additive term */
  g_autoptr(TlRunSpec) base = tl_run_spec_new();
  if ((ds->allows & TL_DATASET_ALLOWS_RANDOMS_DELAYEDS) &&
      !tl_run_spec_set(base, "randoms", "delayeds", &error))
    bench_die(error);
  if (s->tof && (ds->allows & TL_DATASET_ALLOWS_TOF) && !tl_run_spec_set(base, "tof", "true", &error))
    bench_die(error);
  printf("%s: TOF %s\n", name, base->tof ? "on" : "off");
  printf("%s: randoms %s\n", name, base->randoms == TL_RUN_RANDOMS_DELAYEDS
                                        ? "from the delayeds (additive term)" : "none");
  g_autoptr(TlRecon) rr = tl_run_race_entrant(ctx, ds, grid, base, s->reference_algo, &error);
  guint made = 0;
  double phi = NAN;
  if (!rr || !tl_race_reference(tl_recon_solver(rr), s->reference_updates, s->tolerance, NULL,
                                &made, &phi, &error))
    bench_die(error);
  g_autoptr(TlImage) ref = tl_recon_image(rr, &error);
  if (!ref) bench_die(error);
  printf("%s: reference %s, %u updates, %.1f s, objective %.10g\n", name, s->reference_algo,
         made, bench_now() - t0, phi);
  g_autoptr(TlMetrics) m = tl_metrics_new(ref, &error);
  if (nema) {
    TlNemaOptions no;
    TlNemaLayout layout;
    tl_nema_options_init(&no);
    if (!tl_nema_layout_init(&layout, grid, &no, &error) || !tl_metrics_add_nema(m, &layout, &error))
      bench_die(error);
  } else {
    float mx = 0;
    guint64 n = tl_image_grid_n_voxels(grid);
    for (guint64 i = 0; i < n; i++) mx = MAX(mx, ref->data[i]);
    g_autoptr(TlImage) obj = tl_image_new(grid);
    for (guint64 i = 0; i < n; i++) obj->data[i] = ref->data[i] > 0.05f * mx;
    if (!tl_metrics_set_object(m, obj, &error)) bench_die(error);
  }
  g_autoptr(TlRace) race = tl_race_new(m);
  g_autoptr(GPtrArray) recons = g_ptr_array_new_with_free_func((GDestroyNotify)tl_recon_free);
  for (guint i = 0; s->algos[i]; i++) {
    TlRecon *r = tl_run_race_entrant(ctx, ds, grid, base, s->algos[i], &error);
    if (!r) bench_die(error);
    g_ptr_array_add(recons, r);
    if (!tl_race_add(race, s->algos[i], tl_recon_solver(r), &error)) bench_die(error);
  }
  if (!tl_race_run(race, s->updates, TRUE, &error)) bench_die(error);
  double t_bsrem = NAN;
  for (guint i = 0; i < tl_race_n_entrants(race); i++)
    if (g_str_has_prefix(tl_race_label(race, i), "bsrem")) {
      t_bsrem = tl_race_time_to_target(race, i);
      break;
    }
  for (guint i = 0; s->trace && i < tl_race_n_entrants(race); i++)
    for (guint k = 0; k < tl_race_n_records(race, i); k++) {
      const TlRaceRecord *r = tl_race_record(race, i, k);
      if ((k + 1) % s->trace && k + 1 != tl_race_n_records(race, i)) continue;
      printf("trace %s: update %u, %.2f s, epoch %.2f: rmse %.4g, background %.4g, worst voi %.4g%s\n",
             tl_race_label(race, i), r->update, r->seconds, r->epoch, r->metrics[0],
             r->metrics[1], worst_voi(m, r->metrics), r->met ? " (met)" : "");
    }
  printf("(epochs: data passes, a projection of all data forward and back = 1)\n");
  printf("%-40s %8s %10s %12s %10s %12s\n", "entrant", "updates", "seconds", "s to target",
         "epochs", "vs bsrem");
  for (guint i = 0; i < tl_race_n_entrants(race); i++) {
    guint n = tl_race_n_records(race, i);
    const TlRaceRecord *last = tl_race_record(race, i, n - 1);
    double t = tl_race_time_to_target(race, i);
    printf("%-40s %8u %10.2f %12.2f %10.2f %12.2f  (rmse %.4g)\n", tl_race_label(race, i), n,
           last->seconds, t, tl_race_epoch_to_target(race, i), t / t_bsrem, last->metrics[0]);
  }
}

int main(int argc, char **argv) {
  double events = 1e5, voxel = 12;
  int updates = 100, reference_updates = 300, trace = 0;
  double tolerance = 1e-8, beta = 0.1;
  gboolean mmr = FALSE, tof = FALSE;
  g_auto(GStrv) algos = NULL;
  g_autofree char *reference_algo = NULL;
  GOptionEntry entries[] = {
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events, "NEMA DMI events (default 1e5)", "N"},
      {"voxel", 0, 0, G_OPTION_ARG_DOUBLE, &voxel, "Voxel size in mm (default 12)", "MM"},
      {"algo", 'a', 0, G_OPTION_ARG_STRING_ARRAY, &algos,
       "An entrant (default: bsrem, svrg, saga with 10 subsets and lbfgsb, each with rdp at "
       "--beta and osem-epochs=1)", "SPEC"},
      {"beta", 'b', 0, G_OPTION_ARG_DOUBLE, &beta, "rdp's beta of the default entrants and "
       "reference (default 0.1)", "B"},
      {"reference-algo", 0, 0, G_OPTION_ARG_STRING, &reference_algo,
       "The reference (default lbfgsb with rdp at --beta, osem-epochs=1)", "SPEC"},
      {"reference-updates", 0, 0, G_OPTION_ARG_INT, &reference_updates, "At most (default 300)", "N"},
      {"tolerance", 0, 0, G_OPTION_ARG_DOUBLE, &tolerance, "Reference tolerance (default 1e-8)", "T"},
      {"updates", 'u', 0, G_OPTION_ARG_INT, &updates, "Updates per entrant at most (default 100)", "N"},
      {"mmr", 0, 0, G_OPTION_ARG_NONE, &mmr, "Also the shipped mMR list mode", NULL},
      {"trace", 0, 0, G_OPTION_ARG_INT, &trace, "Print every entrant's metrics every N updates", "N"},
      {"tof", 0, 0, G_OPTION_ARG_NONE, &tof, "NEMA DMI with time of flight (issue 29's case)", NULL},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("- seconds to the PETRIC target per algorithm");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) bench_die(error);
  char map[64];
  g_snprintf(map, sizeof map, "prior=rdp,beta=%g,osem-epochs=1", beta);
  g_autofree char *d_bsrem = g_strdup_printf("bsrem:subsets=10,%s", map);
  g_autofree char *d_svrg = g_strdup_printf("svrg:subsets=10,%s", map);
  g_autofree char *d_saga = g_strdup_printf("saga:subsets=10,%s", map);
  g_autofree char *d_lbfgsb = g_strdup_printf("lbfgsb:subsets=1,%s", map);
  char *default_algos[] = {d_bsrem, d_svrg, d_saga, d_lbfgsb, NULL};
  Settings s = {.algos = algos ? algos : default_algos,
                .reference_algo = reference_algo ? reference_algo : d_lbfgsb,
                .updates = (guint)MAX(updates, 1), .reference_updates = (guint)MAX(reference_updates, 1),
                .tolerance = tolerance, .tof = tof,
                .trace = (guint)MAX(trace, 0)};
  g_autoptr(TlContext) ctx = tl_context_new(NULL, &error);
  if (!ctx) bench_die(error);
  printf("device: %s\n", tl_context_info(ctx)->name);

  guint nxy = (guint)ceil(600.0 / voxel), nz = (guint)ceil(197.0 / voxel);
  TlImageGrid grid = tl_image_grid_centred(nxy, nxy, nz, (float)voxel, (float)voxel, (float)voxel);
  PetNema sim;
  if (!pet_nema_simulate(&sim, &grid, events, tof, &error)) bench_die(error);
  printf("NEMA DMI%s: %.0f events on %ux%ux%u of %g mm (simulated in %.1f s; no attenuation "
         "correction: every entrant and the reference share the model)\n",
         tof ? " TOF" : "", events, nxy, nxy, nz, voxel, sim.seconds);
  g_autoptr(TlDataset) ds = tl_dataset_new_take(TL_DATA_PET_LISTMODE, g_steal_pointer(&sim.lm),
                                                "nema-dmi", &error);
  if (!ds) bench_die(error);
  race_one(ctx, "NEMA DMI", ds, &grid, TRUE, &s);
  pet_nema_clear(&sim);

  if (mmr) {
    const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
    g_autofree char *path = g_build_filename(root ? root : ".", "..", "shared", "data", "mmr",
                                             "PET_ACQ_small.l.hdr.STIR", NULL);
    g_autoptr(TlDataset) md = tl_dataset_open(path, &error);
    if (!md) bench_die(error);
    race_one(ctx, "mMR", md, &md->grid, FALSE, &s);
  }
  return 0;
}
