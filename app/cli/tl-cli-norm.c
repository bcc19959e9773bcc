/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli norm-estimate: the component-based normalisation (pet/tl-norm.h) from a list-mode
 * scan of a uniform cylinder of known size and place, into a .tln file. */
#include "tl-cli.h"
#include "dataset/tl-formats.h"
#include "tl-registry.h"
#include "image/tl-phantom.h"
#include "pet/tl-norm-estimate.h"
#include "pet/project/tl-projector.h"
#include "image/tl-file.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int fail(GError *error) {
  fprintf(stderr, "tomolab-cli norm-estimate: %s\n", error->message);
  g_error_free(error);
  return 1;
}

typedef struct {
  gboolean quiet;
} Progress;

static void on_round(guint round, double change, double loglik, gpointer data) {
  const Progress *p = data;
  if (!p->quiet)
    fprintf(stderr, "norm-estimate: round %u  largest change %.3e  log-likelihood %.10g\n", round,
            change, loglik);
}

/* "X,Y,Z" in mm, each a strict decimal. */
static gboolean parse_centre(const char *text, double c[3], GError **error) {
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  if (g_strv_length(parts) != 3) {
    g_autofree char *q = tl_text_quote(text, -1, 80);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "--centre '%s': expected X,Y,Z in mm", q);
    return FALSE;
  }
  for (int k = 0; k < 3; k++)
    if (!tl_cli_parse_double("--centre", parts[k], -1e4, 1e4, &c[k], error)) return FALSE;
  return TRUE;
}

int tl_cli_norm_estimate(int argc, char **argv) {
  g_autofree char *output = NULL, *grid_text = NULL, *radius_text = NULL, *length_text = NULL;
  g_autofree char *centre_text = NULL, *mu_text = NULL, *projector = NULL, *device = NULL;
  gboolean no_axial = FALSE, no_transaxial = FALSE, quiet = FALSE;
  int rounds = 0;
  /* the projectors from the registry that project list-mode pairs (not the dual-head matrix) */
  g_autofree char *projector_list = tl_registry_projector_help(TL_PROJECTOR_LISTMODE);
  g_autofree char *projector_help = g_strdup_printf("%s: the expected counts' projector",
                                                    projector_list);
  GOptionEntry entries[] = {
      {"radius", 'r', 0, G_OPTION_ARG_STRING, &radius_text,
       "The cylinder's radius in mm (required)", "MM"},
      {"length", 'l', 0, G_OPTION_ARG_STRING, &length_text,
       "The cylinder's length along z in mm (required)", "MM"},
      {"centre", 'c', 0, G_OPTION_ARG_STRING, &centre_text,
       "The cylinder's centre in mm (default 0,0,0)", "X,Y,Z"},
      {"mu", 0, 0, G_OPTION_ARG_STRING, &mu_text,
       "The cylinder's attenuation coefficient in mm^-1 (water 0.0096; default 0: none)", "MU"},
      {"grid", 'g', 0, G_OPTION_ARG_FILENAME, &grid_text,
       "Grid the cylinder is projected from (default: the scanner's)", "NXxNYxNZ@MM"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &projector, projector_help, "NAME"},
      {"no-axial", 0, 0, G_OPTION_ARG_NONE, &no_axial, "No axial (ring pair) factors", NULL},
      {"no-transaxial", 0, 0, G_OPTION_ARG_NONE, &no_transaxial,
       "No transaxial (radial x block position) factors", NULL},
      {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds,
       "At most this many alternations of efficiencies and factors (default 50)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Normalisation file to write (.tln)", "FILE"},
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device,
       "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)", "SEL"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
      {NULL}};
  static const char description[] =
      "Example: tomolab-cli norm-estimate cyl.tlm --radius 300 --length 250 -o dmi.tln\n"
      "Crystal efficiencies by maximum-likelihood fan sums and geometric factors (ring pairs;\n"
      "radial position x place in the block) from the counts of each crystal pair against\n"
      "the cylinder's projection (docs/pet.md). The cylinder must lie inside the grid. Use it\n"
      "with tomolab-cli recon --norm FILE.";
  GError *error = NULL;
  if (!tl_cli_reject_zero(argc, argv, "rounds", 0, &error))
    return tl_cli_usage_error("norm-estimate", error);
  if (!tl_cli_parse_options("SCAN - estimate the normalisation from a scan of a uniform cylinder",
                            entries, description, &argc, &argv, &error))
    return tl_cli_usage_error("norm-estimate", error);
  if (argc != 2 || !output || !radius_text || !length_text) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "%s (see --help)",
                argc < 2    ? "a list-mode scan is required"
                : argc > 2  ? "one scan only"
                : !output   ? "-o FILE is required"
                            : "--radius and --length are required");
    return tl_cli_usage_error("norm-estimate", error);
  }
  double radius, length, centre[3] = {0, 0, 0}, mu = 0;
  if (!tl_cli_parse_double("--radius", radius_text, 1e-3, 1e5, &radius, &error) ||
      !tl_cli_parse_double("--length", length_text, 1e-3, 1e5, &length, &error) ||
      (centre_text && !parse_centre(centre_text, centre, &error)) ||
      (mu_text && !tl_cli_parse_double("--mu", mu_text, 0, TL_MU_WATER * 5, &mu, &error)))
    return tl_cli_usage_error("norm-estimate", error);
  if (rounds < 0 || rounds > 10000) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "--rounds %d: expected 1 to 10000", rounds);
    return tl_cli_usage_error("norm-estimate", error);
  }
  if (no_axial && no_transaxial && !quiet)
    fprintf(stderr, "norm-estimate: crystal efficiencies only (--no-axial --no-transaxial)\n");
  const TlCliFile in = {"SCAN", argv[1]}, out = {"-o", output};
  if (!tl_cli_check_outputs(&in, 1, &out, 1, &error))
    return tl_cli_usage_error("norm-estimate", error);

  TlDataKind kind;
  gpointer data = tl_format_load_any(argv[1], &kind, NULL, &error);
  if (!data) return fail(error);
  if (kind != TL_DATA_PET_LISTMODE) {
    fprintf(stderr, "tomolab-cli norm-estimate: %s holds %s: expected PET list mode\n", argv[1],
            tl_data_kind_name(kind));
    tl_data_free(kind, data);
    return 1;
  }
  g_autoptr(TlListmode) lm = data;
  const TlScanner *sc = lm->scanner;
  TlImageGrid grid = tl_scanner_default_grid(sc);
  if (grid_text && !tl_cli_parse_grid(grid_text, &grid, &error)) return fail(error);
  /* the cylinder inside the grid: voxels outside it would be lost from the expected counts */
  for (int k = 0; k < 3; k++) {
    double lo = grid.origin_mm[k] - 0.5 * grid.voxel_mm[k];
    double hi = lo + grid.dims[k] * (double)grid.voxel_mm[k];
    double half = k < 2 ? radius : 0.5 * length;
    if (centre[k] - half < lo || centre[k] + half > hi) {
      g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "the cylinder (radius %g mm, length %g mm, centre %g, %g, %g mm) reaches %g to "
                  "%g mm along %c, beyond the grid's %g to %g mm (--grid)", radius, length,
                  centre[0], centre[1], centre[2], centre[k] - half, centre[k] + half, 'x' + k,
                  lo, hi);
      return tl_cli_usage_error("norm-estimate", error);
    }
  }
  guint64 outside = 0;
  g_autofree float *counts = tl_norm_pair_counts(sc, lm->events, lm->n_events, &outside, &error);
  if (!counts) return fail(error);
  if (!quiet)
    fprintf(stderr, "norm-estimate: %" G_GUINT64_FORMAT " events of scanner '%s' (%u crystals, %"
            G_GUINT64_FORMAT " crystal pairs)%s\n", lm->n_events - outside, sc->name,
            sc->n_crystals, tl_pair_count(sc->n_crystals),
            outside ? ", some outside the acceptance (ignored)" : "");

  g_autoptr(TlPhantom) ph = tl_phantom_new("cylinder");
  TlShape cyl = {.kind = TL_SHAPE_CYLINDER, .radius = (float)radius,
                 .half_length = (float)(0.5 * length), .axis = 2, .activity = 1.0f,
                 .mu = (float)mu, .flags = TL_SHAPE_SETS_ACTIVITY | TL_SHAPE_SETS_MU};
  for (int k = 0; k < 3; k++) cyl.centre[k] = (float)centre[k];
  tl_phantom_add(ph, &cyl);
  g_autoptr(TlImage) act = NULL, mumap = NULL;
  if (!tl_phantom_rasterise(ph, &grid, 0, &act, mu > 0 ? &mumap : NULL, &error)) return fail(error);

  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return fail(error);
  const char *pname = projector ? projector : "siddon";
  guint64 pairs = tl_pair_count(sc->n_crystals);
  g_autofree float *expected = g_try_new(float, MAX(pairs, 1));
  if (!expected) {
    g_set_error(&error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY, "no memory for the expected counts of %"
                G_GUINT64_FORMAT " crystal pairs", pairs);
    return fail(error);
  }
  gint64 t0 = g_get_monotonic_time();
  if (!quiet)
    fprintf(stderr, "norm-estimate: projecting the cylinder (radius %g mm, length %g mm, centre "
            "%g, %g, %g mm%s) over every pair with %s on %s\n", radius, length, centre[0],
            centre[1], centre[2], mu > 0 ? ", attenuated" : "", pname, tl_context_info(ctx)->name);
  if (!tl_norm_expected(ctx, pname, sc, act, mumap, expected, &error)) return fail(error);
  if (!quiet)
    fprintf(stderr, "norm-estimate: expected counts in %.2f s\n",
            (g_get_monotonic_time() - t0) * 1e-6);
  Progress pr = {quiet};
  TlNormEstimateOptions o;
  tl_norm_estimate_options_init(&o);
  o.axial = !no_axial;
  o.transaxial = !no_transaxial;
  if (rounds > 0) o.rounds = (guint)rounds;
  o.progress = on_round;
  o.user_data = &pr;
  TlNormReport rep;
  g_autoptr(TlNorm) n = tl_norm_estimate(sc, counts, expected, &o, &rep, &error);
  if (!n) return fail(error);
  g_autofree char *base = g_path_get_basename(argv[1]);
  g_free(n->description);
  n->description = g_strdup_printf("norm-estimate of %s: cylinder radius %g mm length %g mm "
                                   "centre %g,%g,%g mm mu %g mm^-1, projector %s, %.0f counts, "
                                   "chi2/dof %.4f", base, radius, length, centre[0], centre[1],
                                   centre[2], mu, pname, rep.counts, rep.chi2_dof);
  if (!tl_norm_update(n, NULL, &error) || !tl_norm_save(n, output, &error)) return fail(error);
  if (!quiet) {
    g_autofree char *said = tl_norm_report_describe(&rep);
    g_autoptr(GString) d = g_string_new(NULL);
    tl_norm_describe(n, d);
    fprintf(stderr, "norm-estimate: %s\n%snorm-estimate: wrote %s in %.2f s\n", said, d->str,
            output, (g_get_monotonic_time() - t0) * 1e-6);
  }
  return 0;
}
