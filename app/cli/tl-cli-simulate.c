/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli simulate: a phantom on a scanner, Monte Carlo, into a list-mode file. */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno */
#include "tl-cli.h"
#include "pet/correct/tl-randoms.h"
#include "image/tl-phantom.h"
#include "pet/simulate/tl-simulate.h"
#include "dataset/tl-dataset.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  gint64 last_us;
  gboolean quiet, tty;
} Progress;

/* One updating line on a terminal; a line every few seconds into logs. */
static void on_progress(double fraction, guint64 events, gpointer data) {
  Progress *p = data;
  gint64 now = g_get_monotonic_time();
  if (p->quiet || (now - p->last_us < (p->tty ? 250000 : 5000000) && fraction < 1.0)) return;
  p->last_us = now;
  fprintf(stderr, "%ssimulate: %5.1f%%  %" G_GUINT64_FORMAT " events%s", p->tty ? "\r" : "",
          100.0 * fraction, events, p->tty ? "" : "\n");
  fflush(stderr);
}

/* A name that looks like a path, or names something that exists, is a file: a missing
 * scanner file is reported as missing, not as an "unknown scanner preset". */
static gboolean is_scanner_file(const char *name) {
  return !g_strv_contains(tl_scanner_preset_names(), name) &&
         (strchr(name, '/') || strchr(name, '.') || g_file_test(name, G_FILE_TEST_EXISTS));
}

static TlScanner *open_scanner(const char *name, GError **error) {
  if (is_scanner_file(name)) return tl_scanner_load(name, error);
  return tl_scanner_new_preset(name, error); /* names the presets in its error */
}

static int fail(GError *error) {
  fprintf(stderr, "tomolab-cli simulate: %s\n", error->message);
  g_error_free(error);
  return 1;
}

int tl_cli_simulate(int argc, char **argv) {
  g_autofree char *phantom = NULL, *scanner_name = NULL, *output = NULL, *grid_text = NULL;
  g_autofree char *truth = NULL, *mu_out = NULL, *axis_text = NULL, *eff_out = NULL;
  g_autofree char *randoms_out = NULL;
  g_autofree char *window_text = NULL;
  double events = TL_DATASET_SIM_EVENTS, decays = 0, randoms = 0, ratio = 4, resolution = -1, spread = 0;
  double activity = 0, duration = 0, cwindow = TL_SIMULATE_DEFAULT_WINDOW_NS;
  gint64 seed = 1, eff_seed = 0;
  int threads = 0, mrd = -1;
  gboolean no_att = FALSE, tof = FALSE, quiet = FALSE, exact = FALSE, scatter = FALSE;
  GOptionEntry entries[] = {
      {"phantom", 'p', 0, G_OPTION_ARG_STRING, &phantom,
       "nema (default), cylinder, lines, derenzo, derenzo-clinical or point", "NAME"},
      {"scanner", 's', 0, G_OPTION_ARG_STRING, &scanner_name,
       "dmi (default), small-animal, dual-head, or a scanner description file", "NAME|FILE"},
      {"events", 'n', 0, G_OPTION_ARG_DOUBLE, &events,
       "Expected detected events; the total is Poisson (default 1e6)", "N"},
      {"decays", 0, 0, G_OPTION_ARG_DOUBLE, &decays,
       "Expected annihilations instead of --events", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "List-mode file to write (required)", "FILE"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed (default 1)", "N"},
      {"grid", 'g', 0, G_OPTION_ARG_FILENAME, &grid_text, /* bytes as given: quoted in messages */
       "Image grid, e.g. 215x215x71@2.78 (default: the scanner's)", "NXxNYxNZ@MM"},
      {"no-attenuation", 0, 0, G_OPTION_ARG_NONE, &no_att, "No attenuation", NULL},
      {"tof", 0, 0, G_OPTION_ARG_NONE, &tof, "Record TOF bins (TOF scanners)", NULL},
      {"randoms", 0, 0, G_OPTION_ARG_DOUBLE, &randoms, "Share of random coincidences, [0, 1)", "F"},
      {"ratio", 0, 0, G_OPTION_ARG_DOUBLE, &ratio, "NEMA sphere:background activity (default 4)", "R"},
      {"axis", 0, 0, G_OPTION_ARG_STRING, &axis_text,
       "Cylinder/rod axis x, y or z (default z; x for Derenzo on dual-head)", "AXIS"},
      {"max-ring-difference", 0, 0, G_OPTION_ARG_INT, &mrd, "Axial acceptance (default: all)", "N"},
      {"truth", 0, 0, G_OPTION_ARG_FILENAME, &truth,
       "Write the true activity (annihilations per voxel) to .nii/.nii.gz/.raw", "FILE"},
      {"mu", 0, 0, G_OPTION_ARG_FILENAME, &mu_out, "Write the attenuation map (mm^-1)", "FILE"},
      {"exact-count", 0, 0, G_OPTION_ARG_NONE, &exact, "No Poisson draw of the total", NULL},
      {"scatter", 0, 0, G_OPTION_ARG_NONE, &scatter,
       "Compton scatter in the object (single scatter, Klein-Nishina) with the energy window",
       NULL},
      {"energy-window", 0, 0, G_OPTION_ARG_STRING, &window_text,
       "Energy window in keV (default: the scanner's, e.g. 425:650 for dmi)", "LOW:HIGH"},
      {"energy-resolution", 0, 0, G_OPTION_ARG_DOUBLE, &resolution,
       "Energy resolution, FWHM at 511 keV as a fraction (default: the scanner's)", "F"},
      {"efficiency-spread", 0, 0, G_OPTION_ARG_DOUBLE, &spread,
       "Crystal efficiencies drawn 1 + F N(0,1), F in [0, 0.5] (default 0: none)", "F"},
      {"efficiency-seed", 0, 0, G_OPTION_ARG_INT64, &eff_seed,
       "Seed of the efficiency map (default: --seed)", "N"},
      {"efficiencies-out", 0, 0, G_OPTION_ARG_FILENAME, &eff_out,
       "Write the crystal efficiencies used (text, one per crystal)", "FILE"},
      {"activity", 0, 0, G_OPTION_ARG_DOUBLE, &activity,
       "Randoms from singles: decays per second (Bq); with --duration, replaces --events", "BQ"},
      {"duration", 0, 0, G_OPTION_ARG_DOUBLE, &duration, "Acquisition time in seconds", "S"},
      {"coincidence-window", 0, 0, G_OPTION_ARG_DOUBLE, &cwindow,
       "Coincidence window 2 tau in ns (default 4.57)", "NS"},
      {"randoms-truth-out", 0, 0, G_OPTION_ARG_FILENAME, &randoms_out,
       "With --activity: write the true randoms of every pair, 2 tau S_i S_j T from the "
       "simulated singles rates, as a randoms file (recon --randoms FILE)", "FILE"},
      {"threads", 'j', 0, G_OPTION_ARG_INT, &threads, "Worker threads (default: all cores)", "N"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
      {NULL}};
  static const char description[] =
      "Example: tomolab-cli simulate --phantom nema --scanner dmi --events 1e6 -o scan.tlm\n"
      "Formats: docs/formats.md. Same seed, same file, whatever the thread count.";
  GError *error = NULL;
  if (!tl_cli_parse_options("- simulate a PET acquisition (Monte Carlo) into a list-mode file",
                            entries, description, &argc, &argv, &error)) {
    fprintf(stderr, "tomolab-cli simulate: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (!output || argc > 1) {
    fprintf(stderr, "tomolab-cli simulate: %s\n(see --help)\n",
            !output ? "-o FILE is required" : "unexpected arguments");
    return 2;
  }
  const TlCliFile in[] = {{"--scanner", scanner_name && is_scanner_file(scanner_name) ? scanner_name : NULL}};
  const TlCliFile out[] = {{"-o", output}, {"--truth", truth}, {"--mu", mu_out},
                           {"--efficiencies-out", eff_out}, {"--randoms-truth-out", randoms_out}};
  /* flags that need another, or exclude one: usage errors (exit 2) before any work */
  const char *usage = NULL;
  if ((activity != 0) != (duration != 0))
    usage = "--activity and --duration go together (randoms from singles)";
  else if (randoms_out && activity == 0)
    usage = "--randoms-truth-out needs --activity and --duration (randoms from singles)";
  else if (activity != 0 && randoms != 0)
    usage = "--randoms F and --activity exclude each other (a share, or randoms from singles)";
  else if (activity != 0 && decays > 0)
    usage = "--decays and --activity exclude each other (the decays are activity x duration)";
  else if (scatter && no_att)
    usage = "--scatter needs the attenuation map (drop --no-attenuation)";
  else if (eff_seed != 0 && spread == 0)
    usage = "--efficiency-seed needs --efficiency-spread";
  if (usage) {
    fprintf(stderr, "tomolab-cli simulate: %s\n(see --help)\n", usage);
    return 2;
  }
  if (!tl_cli_check_outputs(in, G_N_ELEMENTS(in), out, G_N_ELEMENTS(out), &error))
    return tl_cli_usage_error("simulate", error);
  g_autoptr(TlScanner) scanner = open_scanner(scanner_name ? scanner_name : "dmi", &error);
  if (!scanner) return fail(error);
  if (mrd >= 0) {
    scanner->max_ring_difference = (guint)mrd;
    if (!tl_scanner_validate(scanner, &error)) return fail(error);
  }
  if (window_text || resolution >= 0) { /* overrides, kept in the written file's scanner */
    double w[2], r;
    tl_scanner_energy(scanner, w, &r);
    if (window_text) {
      char *colon = strchr(window_text, ':'), *e1 = NULL, *e2 = NULL;
      gboolean ok = colon && colon != window_text && colon[1];
      if (ok) w[0] = g_ascii_strtod(window_text, &e1), w[1] = g_ascii_strtod(colon + 1, &e2);
      if (!ok || e1 != colon || *e2 || !isfinite(w[0]) || !isfinite(w[1])) {
        fprintf(stderr, "tomolab-cli simulate: --energy-window '%s': expected LOW:HIGH in keV, "
                "e.g. 425:650\n", window_text);
        return 2;
      }
    }
    if (resolution >= 0) r = resolution;
    scanner->energy_window_kev[0] = (float)w[0];
    scanner->energy_window_kev[1] = (float)w[1];
    scanner->energy_resolution = (float)r;
    if (!(w[0] < w[1]) || !tl_scanner_validate(scanner, &error)) {
      if (!error)
        g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "energy window %g-%g keV (expected "
                    "low < high)", w[0], w[1]);
      return fail(error);
    }
  }
  TlImageGrid grid = tl_scanner_default_grid(scanner);
  if (grid_text && !tl_cli_parse_grid(grid_text, &grid, &error)) return fail(error);

  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  po.sphere_ratio = (float)ratio;
  const char *pname = phantom ? phantom : "nema";
  if (scanner->kind == TL_SCANNER_DUAL_HEAD && g_str_has_prefix(pname, "derenzo")) po.axis = 0;
  if (axis_text) {
    if (strlen(axis_text) != 1 || !strchr("xyz", axis_text[0])) {
      fprintf(stderr, "tomolab-cli simulate: --axis '%s': expected x, y or z\n", axis_text);
      return 2;
    }
    po.axis = (guint)(axis_text[0] - 'x');
  }
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset(pname, &po, &grid, &error);
  if (!ph) return fail(error);
  g_autoptr(TlImage) act = NULL, mu = NULL;
  if (!tl_phantom_rasterise(ph, &grid, 0, &act, &mu, &error)) return fail(error);

  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = decays > 0 ? 0 : events;
  sp.decays = decays;
  sp.seed = (guint64)seed;
  sp.tof = tof;
  sp.randoms_fraction = randoms;
  sp.exact_count = exact;
  sp.n_threads = threads > 0 ? (guint)threads : 0;
  sp.scatter = scatter;
  sp.efficiency_spread = spread;
  sp.efficiency_seed = (guint64)eff_seed;
  sp.activity_bq = activity;
  sp.duration_s = duration;
  sp.coincidence_window_ns = cwindow;
  if (activity != 0) sp.events = sp.decays = 0; /* the decays are activity x duration */
  g_autofree float *eff = eff_out ? g_new(float, scanner->n_crystals) : NULL;
  sp.efficiencies_out = eff;
  g_autofree double *singles = randoms_out ? g_new0(double, scanner->n_crystals) : NULL;
  sp.singles_out = singles;
  g_autofree char *gkey = tl_image_grid_key(&grid);
  g_autofree char *desc = g_strdup_printf("phantom=%s ratio=%g %s", pname, ratio, gkey);
  sp.description = desc;
  Progress prog = {0, quiet, isatty(fileno(stderr))};
  TlSimulateStats st;
  g_autoptr(TlListmode) lm =
      tl_simulate(scanner, act, no_att ? NULL : mu, &sp, on_progress, &prog, NULL, &st, &error);
  if (!quiet && prog.tty) fprintf(stderr, "\n");
  if (!lm) return fail(error);
  if (!tl_listmode_save(lm, output, &error)) return fail(error);
  if (!quiet) {
    fprintf(stderr,
            "simulate: %" G_GUINT64_FORMAT " events (%" G_GUINT64_FORMAT " trues, %" G_GUINT64_FORMAT
            " scattered, %" G_GUINT64_FORMAT " randoms) from %.4g annihilations on '%s' in %.2f s "
            "(%.0f events/s)\n", lm->n_events, st.trues, st.scattered, st.randoms, st.decays,
            scanner->name, st.seconds, lm->n_events / MAX(st.seconds, 1e-9));
    if (st.photons) /* the photon path: scatter or singles */
      fprintf(stderr,
              "          photons %" G_GUINT64_FORMAT ": interacted %" G_GUINT64_FORMAT ", absorbed %"
              G_GUINT64_FORMAT ", missed the crystals %" G_GUINT64_FORMAT ", outside the energy "
              "window %" G_GUINT64_FORMAT ", lost to efficiency %" G_GUINT64_FORMAT ", detected %"
              G_GUINT64_FORMAT "; TOF outside the bins %" G_GUINT64_FORMAT "\n", st.photons,
              st.interacted, st.absorbed, st.missed, st.energy_rejected, st.efficiency_rejected,
              st.singles, st.tof_outside);
    else
      fprintf(stderr,
              "          pairs on crystals %" G_GUINT64_FORMAT ", lost to attenuation %"
              G_GUINT64_FORMAT ", photons lost to efficiency %" G_GUINT64_FORMAT
              ", TOF outside the bins %" G_GUINT64_FORMAT "\n", st.geometric, st.attenuated,
              st.efficiency_rejected, st.tof_outside);
    if (activity != 0)
      fprintf(stderr, "          randoms from singles: %.6g expected in %g s (window %g ns), %"
              G_GUINT64_FORMAT " delayed\n", st.randoms_expected, duration, cwindow, st.delayed);
    fprintf(stderr, "simulate: wrote %s\n", output);
    if (st.outside_fraction > 0.01)
      fprintf(stderr, "simulate: warning: %.1f%% of the activity lies outside the scanner (ignored)\n",
              100 * st.outside_fraction);
  }
  if (truth) {
    /* expected annihilations per voxel during this acquisition */
    double sum = tl_image_sum(act) * (1.0 - st.outside_fraction);
    guint64 n = tl_image_grid_n_voxels(&grid);
    for (guint64 i = 0; i < n; i++) act->data[i] = (float)(act->data[i] * st.decays / sum);
    if (!tl_cli_save_image(act, truth, &error)) return fail(error);
  }
  if (mu_out && !tl_cli_save_image(mu, mu_out, &error)) return fail(error);
  if (eff_out && !tl_simulate_save_efficiencies(scanner, eff, &sp, eff_out, &error))
    return fail(error);
  if (randoms_out) {
    /* the randoms of pair (i, j) are 2 tau S_i S_j T: the product form s_i s_j of
     * pet/tl-randoms.h with s_i = S_i sqrt(2 tau T), S_i = singles_i / (the seconds the
     * simulated decays stand for) */
    double tsim = st.decays / activity, k = sqrt(cwindow * 1e-9 * duration);
    TlRandoms r = {.n_crystals = lm->scanner->n_crystals,
                   .factor = g_new(double, lm->scanner->n_crystals)};
    for (guint i = 0; i < r.n_crystals; i++) r.factor[i] = singles[i] / tsim * k;
    gboolean ok = tl_randoms_save(&r, lm->scanner, randoms_out, &error);
    g_free(r.factor);
    if (!ok) return fail(error);
  }
  return 0;
}
