/* tomolab-cli recon: list-mode (or binned) MLEM/OSEM of a .tlm file into an image. */
#include "tl-cli.h"
#include "tl-cli-dist.h"
#include "tl-formats.h"
#include "pet/tl-sinogram.h"
#include "ct/tl-ct-data.h"
#include "image/tl-filter.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/tl-sss.h"
#include "pet/tl-units.h"
#include "tl-registry.h"
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  guint iterations;
  gboolean quiet;
  /* --checkpoint (rank 0 writes it): every `every` sub-iterations; a failed write cancels */
  const char *checkpoint;
  guint every;
  const char *hash;
  TlRecon *recon;
  GCancellable *cancel;
  GError *error;
} Progress;

static void save_checkpoint(const TlReconProgress *p, Progress *pr) {
  if (!pr->checkpoint || tl_cli_dist_rank() != 0 || p->sub_iterations % pr->every != 0 ||
      pr->error)
    return;
  g_autoptr(TlImage) img = tl_recon_image(pr->recon, &pr->error);
  if (!img || !tl_cli_checkpoint_save(pr->checkpoint, img, p->sub_iterations, p->n_subsets,
                                      pr->hash, &pr->error)) {
    g_cancellable_cancel(pr->cancel);
    return;
  }
  if (!pr->quiet)
    fprintf(stderr, "recon: checkpoint %s after %u sub-iterations\n", pr->checkpoint,
            p->sub_iterations);
}

static void on_progress(const TlReconProgress *p, gpointer data) {
  Progress *pr = data;
  save_checkpoint(p, pr);
  if (!pr->quiet) {
    fprintf(stderr, "recon: iteration %u/%u", p->iteration, pr->iterations);
    if (p->n_subsets > 1) fprintf(stderr, " subset %u/%u", p->subset + 1, p->n_subsets);
    if (!isnan(p->loglik)) fprintf(stderr, "  log-likelihood %.10g", p->loglik);
    if (!isnan(p->rmse)) fprintf(stderr, "  RMSE %.6g", p->rmse);
    fprintf(stderr, "  %.2f s%s\n", p->seconds, p->filtered ? "  filtered" : "");
  }
}

/* --scatter sss: one line per round */
static void on_scatter_round(const TlScatterRoundInfo *i, gpointer data) {
  const double *prompts = data;
  double total = i->fit.total_estimate * i->fit.scale;
  fprintf(stderr, "recon: scatter round %u/%u: SSS %u scatter points x %u x %u detectors on "
          "%ux%ux%u voxels of %g mm (%.2f s); tail fit k = %.6g from %" G_GUINT64_FORMAT
          " pairs with %.0f prompts, %.0f randoms; scatter %.0f (%.1f %% of the prompts); "
          "%.2f s in all\n", i->round, i->rounds, i->sss.scatter_points, i->sss.n_t, i->sss.n_r,
          i->sss.coarse_dims[0], i->sss.coarse_dims[1], i->sss.coarse_dims[2],
          i->sss.coarse_mm[0], i->sss.seconds_legs + i->sss.seconds_pairs, i->fit.scale,
          i->fit.tail_pairs, i->fit.tail_counts, i->fit.tail_randoms, total,
          100.0 * total / MAX(*prompts, 1), i->seconds);
}

/* --filter: the final image goes up to the device once more, is filtered there (the same
 * kernels a filter between iterations will use) and comes back; timings join `prof`. */
static gboolean post_filter(TlContext *ctx, const TlFilter *f, TlImage *img, TlProfile *prof,
                            GError **error) {
  if (f->kind == TL_FILTER_NONE) return TRUE;
  g_autoptr(TlArray) a = tl_array_new_float(ctx, tl_image_grid_n_voxels(&img->grid), error);
  g_autoptr(TlStream) s = a ? tl_stream_new(ctx, error) : NULL;
  if (!s) return FALSE;
  tl_stream_set_profile(s, prof);
  return tl_array_upload(a, img->data, error) &&
         tl_filter_apply(ctx, s, f, &img->grid, a, NULL, error) &&
         tl_array_download(a, img->data, error);
}

/* --tof, --tof-nsigma, --tor-fwhm, --filter-every into `o`: NULL, or what is wrong with
 * the combination (the values themselves are checked again by TlRecon). */
static const char *check_extensions(TlReconOptions *o, gboolean binned, gboolean tof,
                                    double tof_nsigma, double tor_fwhm, const TlFilter *filter,
                                    int filter_every) {
  if (tof && binned) return "--tof needs list mode: the bins of --binned have no TOF";
  if (!isnan(tof_nsigma) && !tof) return "--tof-nsigma needs --tof";
  if (!isnan(tof_nsigma) && !(tof_nsigma > 0)) return "--tof-nsigma must be > 0";
  if (!isnan(tor_fwhm) && strcmp(o->projector, "tor") != 0)
    return "--tor-fwhm needs --projector tor";
  if (!isnan(tor_fwhm) && !(tor_fwhm >= 0 && isfinite(tor_fwhm)))
    return "--tor-fwhm must be >= 0 mm";
  if (filter_every != G_MININT && filter->kind == TL_FILTER_NONE)
    return "--filter-every needs --filter";
  if (filter_every != G_MININT && filter_every < 1) return "--filter-every must be >= 1";
  o->tof = tof;
  o->tof_n_sigma = isnan(tof_nsigma) ? TL_TOF_N_SIGMA : tof_nsigma;
  if (!isnan(tor_fwhm)) o->tor_fwhm_mm = tor_fwhm;
  if (filter_every > 0) {
    o->filter = *filter;
    o->filter_every = (guint)filter_every;
  }
  return NULL;
}

/* Under mpirun a failure on one rank ends every rank (MPI_Abort): the others may be waiting
 * in a sum that would never come. */
static int fail(GError *error) {
  if (tl_cli_dist_size() > 1)
    fprintf(stderr, "tomolab-cli recon: rank %u: %s\n", tl_cli_dist_rank(), error->message);
  else
    fprintf(stderr, "tomolab-cli recon: %s\n", error->message);
  g_error_free(error);
  tl_cli_dist_abort(1);
  return 1;
}

/* The SHA-256 of every option that shapes the image (not the rank count, not --iterations:
 * a resumed run may use any number of ranks and go on for more iterations). */
static char *options_hash(const char *input, guint64 n_events, const TlScanner *scanner,
                          const TlImageGrid *grid, const TlReconOptions *o, const TlImage *mu,
                          const TlNorm *norm, const char *filter_text, char **kernels,
                          const char *scatter_file) {
  g_autofree char *sk = tl_scanner_key(scanner), *gk = tl_image_grid_key(grid);
  g_autofree char *mh = mu ? g_compute_checksum_for_data(
                                 G_CHECKSUM_SHA256, (const guchar *)mu->data,
                                 tl_image_grid_n_voxels(&mu->grid) * sizeof(float))
                           : g_strdup("none");
  g_autofree char *base = g_path_get_basename(input);
  g_autofree char *text = g_strdup_printf(
      "tomolab recon checkpoint 1\ninput %s events %" G_GUINT64_FORMAT "\nscanner %s\n"
      "grid %s\nalgorithm %s subsets %u projector %s tor %.9g tof %d nsigma %.9g\n"
      "attenuation %s\nprior %s beta %.17g gamma %.17g epsilon %.17g relaxation %.9g\n"
      "filter %s every %u\nrandoms %.17g\n", base, n_events, sk, gk, o->algorithm, o->subsets,
      o->projector,
      o->tor_fwhm_mm, o->tof, o->tof_n_sigma, mh, o->prior ? o->prior : "none", o->beta,
      o->prior_params.gamma, o->prior_params.epsilon, (double)o->relaxation,
      filter_text ? filter_text : "none", o->filter_every, o->randoms ? o->randoms->total : 0.0);
  /* --kernel replacements change the image too: their sources enter the hash; so does a
   * normalisation (a line only with one: checkpoints without stay resumable) */
  g_autoptr(GString) all = g_string_new(text);
  if (norm) g_string_append_printf(all, "normalisation %s\n", norm->sha256);
  if (scatter_file) { /* --scatter FILE: the estimate's bytes (already read) */
    g_autofree char *src = NULL;
    gsize len = 0;
    g_file_get_contents(scatter_file, &src, &len, NULL);
    g_autofree char *h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)src,
                                                     src ? len : 0);
    g_string_append_printf(all, "scatter %s\n", h);
  }
  for (guint i = 0; kernels && kernels[i]; i++) {
    g_autofree char *src = NULL;
    gsize len = 0;
    g_file_get_contents(kernels[i], &src, &len, NULL); /* already read by --kernel */
    g_autofree char *h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)src,
                                                     src ? len : 0);
    g_string_append_printf(all, "kernel %s\n", h);
  }
  return g_compute_checksum_for_string(G_CHECKSUM_SHA256, all->str, -1);
}

/* This rank's events: whole blocks of S (the subset count) so that local event i and file
 * event first + i fall in the same subset (event j -> subset j mod S, tl-pet-operator.h). */
static void share(guint64 n, guint S, guint rank, guint size, guint64 *first, guint64 *count) {
  guint64 blocks = (n + S - 1) / S;
  guint64 b0 = blocks * rank / size, b1 = blocks * (rank + 1) / size;
  *first = MIN(b0 * S, n);
  *count = MIN(b1 * S, n) - *first;
}

static int recon_main(int argc, char **argv);

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int tl_cli_recon(int argc, char **argv) {
  /* A CT scan (any CT format of the table) goes to ct-recon, with its own options (docs/ct.md). */
  for (int i = 1; i < argc; i++) {
    const TlFormatClass *f = argv[i][0] != '-' && g_file_test(argv[i], G_FILE_TEST_IS_REGULAR)
                                 ? tl_format_detect(argv[i], NULL)
                                 : NULL;
    if (f && f->kind == TL_DATA_CT) return tl_cli_ct_recon(argc, argv);
  }
  GError *error = NULL;
  if (!tl_cli_dist_start(&argc, &argv, &error)) return fail(error);
  int code = recon_main(argc, argv);
  tl_cli_dist_finish();
  return code;
}

static int recon_main(int argc, char **argv) {
  g_autofree char *algo = NULL, *projector = NULL, *output = NULL, *truth_path = NULL;
  g_autofree char *grid_text = NULL, *device = NULL, *loglik = NULL, *filter_text = NULL;
  g_autofree char *mu_path = NULL, *prior = NULL, *checkpoint = NULL, *resume = NULL;
  g_autofree char *norm_path = NULL;
  int checkpoint_every = 0;
  g_auto(GStrv) kernels = NULL;
  double beta = 0, gamma = NAN, epsilon = NAN, relaxation = NAN;
  int subsets = 0, iterations = 3, filter_every = G_MININT;
  /* NAN / G_MININT = not given: tells "--tor-fwhm 2" from the default when checking
   * combinations. */
  double tof_nsigma = NAN, tor_fwhm = NAN;
  gboolean profile = FALSE, binned = FALSE, no_cache = FALSE, quiet = FALSE, tof = FALSE;
  g_autofree char *randoms_from = NULL, *randoms_out = NULL, *isotope_name = NULL;
  g_autofree char *scatter_from = NULL, *scatter_out = NULL;
  int scatter_rounds = 0;
  /* Bq/mL (pet/tl-units.h): strict numbers (no nan), NULL / NAN = not given */
  g_autofree char *calibration_text = NULL, *duration_text = NULL, *frame_start_text = NULL;
  double calibration = NAN, duration = NAN, frame_start = NAN;
  g_autofree char *tor_help = g_strdup_printf(
      "With --projector tor: FWHM across the tube in mm (default %g; 0 = Joseph)",
      TL_TOR_FWHM_DEFAULT);
  g_autofree char *nsigma_help = g_strdup_printf(
      "With --tof: truncate the TOF kernel at this many sigmas (default %g)", TL_TOF_N_SIGMA);
  g_autofree char *algo_help = tl_cli_registry_help("algorithm", TRUE);
  g_autofree char *prior_help = tl_cli_registry_help("prior", TRUE);
  GOptionEntry entries[] = {
      {"algo", 'a', 0, G_OPTION_ARG_STRING, &algo, algo_help, "ALGO"},
      {"kernel", 'k', 0, G_OPTION_ARG_FILENAME_ARRAY, &kernels,
       "Replace built-in kernel NAME by the GLSL in FILE (repeatable; tomolab-cli kernel)",
       "NAME=FILE"},
      {"subsets", 's', 0, G_OPTION_ARG_INT, &subsets,
       "Subsets for the algorithms that use them (default 10)", "S"},
      {"prior", 0, 0, G_OPTION_ARG_STRING, &prior, prior_help, "NAME"},
      {"beta", 0, 0, G_OPTION_ARG_DOUBLE, &beta, "Prior strength beta (default 0)", "B"},
      {"gamma", 0, 0, G_OPTION_ARG_DOUBLE, &gamma,
       "rdp: edge preservation gamma >= 0 (default 2)", "G"},
      {"epsilon", 0, 0, G_OPTION_ARG_DOUBLE, &epsilon,
       "rdp / tv: smoothing epsilon > 0 (default 1e-3)", "E"},
      {"relaxation", 0, 0, G_OPTION_ARG_DOUBLE, &relaxation,
       "bsrem: alpha_0 in (0, 1]; sirt / os-sart: lambda in (0, 2) (default 1)", "X"},
      {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "Full iterations (default 3)", "N"},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &projector,
       "siddon (default), joseph or tor (tube of response); with --binned on a dual-head "
       "scanner also srm (precomputed system response matrix with crystal penetration)", "NAME"},
      {"tor-fwhm", 0, 0, G_OPTION_ARG_DOUBLE, &tor_fwhm,
       tor_help, "MM"},
      {"tof", 0, 0, G_OPTION_ARG_NONE, &tof,
       "Time of flight: weight each event by its TOF bin (the file must have TOF bins)", NULL},
      {"tof-nsigma", 0, 0, G_OPTION_ARG_DOUBLE, &tof_nsigma,
       nsigma_help, "X"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "Image to write: .nii, .nii.gz or .raw (required)", "FILE"},
      {"truth", 't', 0, G_OPTION_ARG_FILENAME, &truth_path,
       "Ground truth image: RMSE after each sub-iteration; its grid is the default grid", "FILE"},
      {"grid", 'g', 0, G_OPTION_ARG_FILENAME, &grid_text,
       "Image grid, e.g. 215x215x71@2.78 (default: the truth's, else the mu-map's, else the "
       "scanner's)",
       "NXxNYxNZ@MM"},
      {"attenuation", 0, 0, G_OPTION_ARG_FILENAME, &mu_path,
       "Attenuation correction with this mu-map (mm^-1, 0..0.05, on the image grid)", "MU.nii"},
      {"norm", 0, 0, G_OPTION_ARG_FILENAME, &norm_path,
       "Normalisation: per-pair efficiency factors from a .tln file (tomolab-cli norm-estimate) "
       "for the data's scanner", "FILE.tln"},
      {"randoms", 0, 0, G_OPTION_ARG_FILENAME, &randoms_from,
       "Randoms correction: 'delayeds' estimates each pair's randoms from the file's delayed "
       "coincidences by fan sums (variance-reduced), 'singles' from its singles rates (2 tau "
       "S_i S_j T), FILE reads an estimate (a randoms file: --randoms-out); each is added to "
       "the model", "delayeds|singles|FILE"},
      {"randoms-out", 0, 0, G_OPTION_ARG_FILENAME, &randoms_out,
       "With --randoms: write the estimate used to FILE (a randoms file)", "FILE"},
      {"calibration", 0, 0, G_OPTION_ARG_STRING, &calibration_text,
       "Write the image in Bq/mL: the scanner's calibration factor F (image value per second "
       "per Bq/mL of positron emitters; tomolab-cli calibrate finds it)", "F"},
      {"isotope", 0, 0, G_OPTION_ARG_STRING, &isotope_name,
       "With --calibration: decay correction to the reference time and the positron fraction "
       "of this isotope (F18, C11, N13, O15, Ga68, Rb82, Cu64, Zr89; default none)", "NAME"},
      {"duration", 0, 0, G_OPTION_ARG_STRING, &duration_text,
       "With --calibration: the frame's duration in s (default: the file's)", "S"},
      {"frame-start", 0, 0, G_OPTION_ARG_STRING, &frame_start_text,
       "With --calibration: the frame's start in s after the reference time (default: the "
       "file's start, else 0)", "S"},
      {"scatter", 0, 0, G_OPTION_ARG_FILENAME, &scatter_from,
       "Scatter correction: 'sss' estimates it by single scatter simulation from the current "
       "image and --attenuation's mu-map, scaled to the data on the lines outside the object "
       "(tail fit), for --scatter-rounds rounds; or a scatter estimate FILE (--scatter-out)",
       "sss|FILE"},
      {"scatter-rounds", 0, 0, G_OPTION_ARG_INT, &scatter_rounds,
       "With --scatter sss: rounds of estimate + --iterations more iterations after the first "
       "reconstruction (default 2)", "N"},
      {"scatter-out", 0, 0, G_OPTION_ARG_FILENAME, &scatter_out,
       "With --scatter sss: write the last estimate (scaled: expected scatter per crystal pair "
       "and TOF bin) to FILE", "FILE"},
      {"binned", 'b', 0, G_OPTION_ARG_NONE, &binned,
       "Histogram the events per crystal pair and reconstruct the bins", NULL},
      {"loglik", 0, 0, G_OPTION_ARG_STRING, &loglik,
       "When to compute the Poisson log-likelihood: never, iteration (default), subiteration",
       "WHEN"},
      {"filter", 'f', 0, G_OPTION_ARG_STRING, &filter_text,
       "Filter the final image (or, with --filter-every, between iterations): median3, median5 "
       "or gauss:FWHM (mm) (default none)", "FILTER"},
      {"filter-every", 0, 0, G_OPTION_ARG_INT, &filter_every,
       "With --filter: filter inside the reconstruction after every N-th sub-iteration instead "
       "of the final image (N = subsets: once per iteration)", "N"},
      {"profile", 0, 0, G_OPTION_ARG_NONE, &profile, "Print GPU time per kernel at the end", NULL},
      {"no-cache", 0, 0, G_OPTION_ARG_NONE, &no_cache,
       "Recompute the sensitivity image instead of using $XDG_CACHE_HOME/tomolab", NULL},
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device,
       "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)", "SEL"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
      {"checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint,
       "Write the image and the progress to FILE (atomically) every --checkpoint-every "
       "sub-iterations", "FILE"},
      {"checkpoint-every", 0, 0, G_OPTION_ARG_INT, &checkpoint_every,
       "With --checkpoint: every N sub-iterations (default: the subsets, once per iteration)",
       "N"},
      {"resume", 0, 0, G_OPTION_ARG_FILENAME, &resume,
       "Go on from a checkpoint of a run with the same options (any number of MPI ranks)",
       "FILE"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("SCAN.tlm|SCAN.tlct - reconstruct PET list mode (or a CT scan)");
  g_option_context_add_main_entries(oc, entries, NULL);
  g_option_context_set_description(oc,
      "Example: tomolab-cli recon scan.tlm --algo osem --subsets 10 --iterations 3 \\\n"
      "           --projector joseph -o img.nii --profile\n"
      "Penalised (MAP): tomolab-cli recon scan.tlm --algo bsrem --subsets 10 --iterations 5 \\\n"
      "           --prior rdp --beta 0.05 --gamma 2 -o img.nii\n"
      "With every PET extension: tomolab-cli recon scan.tlm --algo osem --subsets 10 \\\n"
      "           --iterations 3 --tof --attenuation mu.nii --norm dmi.tln --filter median3 \\\n"
      "           --filter-every 10 -o img.nii\n"
      "List-mode MLEM/OSEM on the Vulkan device: one fused kernel per event (forward projection,\n"
      "ratio, back projection), then one fused array expression for the update. The sensitivity\n"
      "image is cached in $XDG_CACHE_HOME/tomolab. Ctrl-C writes the last complete image.\n"
      "A CT scan (.tlct) is reconstructed by ct-recon instead (tomolab-cli ct-recon --help).");
  GError *error = NULL;
  if (!tl_cli_reject_zero(argc, argv, "subsets", 's', &error)) return tl_cli_usage_error("recon", error);
  if (!g_option_context_parse(oc, &argc, &argv, &error)) {
    fprintf(stderr, "tomolab-cli recon: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (argc != 2 || !output) {
    fprintf(stderr, "tomolab-cli recon: %s\n(see --help)\n",
            argc < 2 ? "a list-mode file is required" : argc > 2 ? "one list-mode file only"
                                                               : "-o FILE is required");
    return 2;
  }
  if (checkpoint_every < 0 || (checkpoint_every && !checkpoint)) {
    fprintf(stderr, "tomolab-cli recon: --checkpoint-every needs --checkpoint and N >= 1\n");
    return 2;
  }
  gboolean randoms_delayeds = g_strcmp0(randoms_from, "delayeds") == 0;
  gboolean randoms_singles = g_strcmp0(randoms_from, "singles") == 0;
  if (randoms_from && !randoms_delayeds && !randoms_singles &&
      !g_file_test(randoms_from, G_FILE_TEST_EXISTS)) {
    fprintf(stderr, "tomolab-cli recon: --randoms '%s': expected delayeds (the randoms "
            "estimated from the file's delayed coincidences), singles (from its singles rates) or "
            "a randoms file (no such file)\n",
            randoms_from);
    return 2;
  }
  gboolean sss = scatter_from && strcmp(scatter_from, "sss") == 0;
  const char *scatter_file = scatter_from && !sss ? scatter_from : NULL;
  if (sss && !mu_path) {
    fprintf(stderr, "tomolab-cli recon: --scatter sss needs --attenuation MU (the mu-map gives "
            "the scattering medium and the object's outline for the tail fit)\n");
    return 2;
  }
  if ((scatter_rounds || scatter_out) && !sss) {
    fprintf(stderr, "tomolab-cli recon: --scatter-rounds and --scatter-out need --scatter sss\n");
    return 2;
  }
  if (scatter_rounds < 0 || scatter_rounds > 100) {
    fprintf(stderr, "tomolab-cli recon: --scatter-rounds %d: expected 1 to 100\n", scatter_rounds);
    return 2;
  }
  if (sss && (checkpoint || resume)) {
    fprintf(stderr, "tomolab-cli recon: --checkpoint and --resume do not go with --scatter sss "
            "(the scatter term changes between rounds); save the estimate with --scatter-out "
            "and use --scatter FILE\n");
    return 2;
  }
  if (randoms_out && !randoms_from) {
    fprintf(stderr, "tomolab-cli recon: --randoms-out needs --randoms\n");
    return 2;
  }
  if ((calibration_text && !tl_cli_parse_double("--calibration", calibration_text, 0, 1e300,
                                                &calibration, &error)) ||
      (duration_text && !tl_cli_parse_double("--duration", duration_text, 0, 1e9, &duration,
                                             &error)) ||
      (frame_start_text && !tl_cli_parse_double("--frame-start", frame_start_text, 0, 1e9,
                                                &frame_start, &error)))
    return tl_cli_usage_error("recon", error);
  if (isnan(calibration) && (isotope_name || !isnan(duration) || !isnan(frame_start))) {
    fprintf(stderr, "tomolab-cli recon: --isotope, --duration and --frame-start need "
            "--calibration\n");
    return 2;
  }
  TlQuant quant = {.calibration = calibration, .duration_s = duration,
                   .frame_start_s = frame_start};
  if (isotope_name && !(quant.isotope = tl_isotope_find(isotope_name, &error)))
    return tl_cli_usage_error("recon", error);
  guint size = tl_cli_dist_size(), rank = tl_cli_dist_rank();
  if (rank != 0) quiet = TRUE; /* rank 0 reports and writes */
  if (size > 1 && scatter_from) {
    fprintf(stderr, "tomolab-cli recon: --scatter runs on one process for now (the tail fit needs "
            "every event)\n");
    return 2;
  }
  if (size > 1 && randoms_from) {
    fprintf(stderr, "tomolab-cli recon: --randoms runs on one process for now (the ranks read "
            "shares of the prompts, not the delayeds)\n");
    return 2;
  }
  if (size > 1 && binned) {
    fprintf(stderr, "tomolab-cli recon: --binned runs on one process (the ranks share list-mode "
            "events; binned subsets have their own pairs)\n");
    return 2;
  }
  /* before any work: no output over an input, every output writable; --resume may name the
   * --checkpoint file (it is read before the first checkpoint is written) */
  gboolean resume_same = resume && checkpoint && g_strcmp0(resume, checkpoint) == 0;
  if (!tl_cli_check_outputs((const TlCliFile[]){{"input", argv[1]}, {"--truth", truth_path},
                                                {"--attenuation", mu_path},
                                                {"--norm", norm_path},
                                                {"--resume", resume_same ? NULL : resume},
                                                {"--randoms", randoms_delayeds ? NULL
                                                                               : randoms_from},
                                                {"--scatter", scatter_file}},
                            7,
                            (const TlCliFile[]){{"-o", output}, {"--checkpoint", checkpoint},
                                                {"--randoms-out", randoms_out},
                                                {"--scatter-out", scatter_out}},
                            4, &error))
    return tl_cli_usage_error("recon", error);
  TlReconOptions o;
  tl_recon_options_init(&o);
  const TlAlgorithmClass *ak = tl_registry_algorithm(algo ? algo : "mlem", &error);
  if (!ak) {
    fprintf(stderr, "tomolab-cli recon: --algo: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  guint aflags = tl_algorithm_flags(ak);
  o.algorithm = tl_algorithm_name(ak);
  if (aflags & TL_ALGO_SUBSETS) {
    o.algo = TL_RECON_OSEM;
    o.subsets = subsets > 0 ? (guint)subsets : 10;
  } else if (subsets > 1) {
    fprintf(stderr, "tomolab-cli recon: --subsets: %s uses all data at once\n", o.algorithm);
    return 2;
  }
  if (iterations < 1 || subsets < 0) {
    fprintf(stderr, "tomolab-cli recon: --iterations must be >= 1 and --subsets >= 1\n");
    return 2;
  }
  if ((aflags & TL_ALGO_NEEDS_DATA) && !binned) {
    fprintf(stderr, "tomolab-cli recon: --algo %s needs binned data (--binned): list-mode "
            "events are no data vector\n", o.algorithm);
    return 2;
  }
  if (prior && !tl_registry_prior(prior, &error)) {
    fprintf(stderr, "tomolab-cli recon: --prior: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (prior && !(aflags & TL_ALGO_PRIOR)) {
    fprintf(stderr, "tomolab-cli recon: --prior needs --algo osl or bsrem (%s takes none)\n",
            o.algorithm);
    return 2;
  }
  if (!prior && (beta != 0 || !isnan(gamma) || !isnan(epsilon))) {
    fprintf(stderr, "tomolab-cli recon: --beta, --gamma and --epsilon need --prior\n");
    return 2;
  }
  o.prior = prior;
  o.beta = beta;
  if (!isnan(gamma)) o.prior_params.gamma = gamma;
  if (!isnan(epsilon)) o.prior_params.epsilon = epsilon;
  if (!isnan(relaxation)) o.relaxation = (float)relaxation;
  o.iterations = (guint)iterations;
  o.projector = projector ? projector : "siddon";
  o.use_cache = !no_cache;
  if (loglik) {
    if (strcmp(loglik, "never") == 0)
      o.loglik = TL_LOGLIK_NEVER;
    else if (strcmp(loglik, "subiteration") == 0)
      o.loglik = TL_LOGLIK_SUBITERATION;
    else if (strcmp(loglik, "iteration") != 0) {
      fprintf(stderr, "tomolab-cli recon: --loglik '%s': expected never, iteration or subiteration\n",
              loglik);
      return 2;
    }
  }

  TlFilter filter = {TL_FILTER_NONE, 0};
  if (filter_text && !tl_filter_parse(filter_text, &filter, &error)) {
    fprintf(stderr, "tomolab-cli recon: --filter: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  const char *bad = check_extensions(&o, binned, tof, tof_nsigma, tor_fwhm, &filter, filter_every);
  if (bad) {
    fprintf(stderr, "tomolab-cli recon: %s\n", bad);
    return 2;
  }

  /* several ranks: each reads only its share of the events, by file offset (Tomolab .tlm
   * only: other formats are converted first); one process: list mode of any format, or a
   * sinogram (STIR projection data): its bins as crystal pairs of its cylindrical scanner,
   * reconstructed binned (docs/formats.md) */
  guint64 n_total = 0, first = 0, count = 0;
  g_autoptr(TlListmode) lm = NULL;
  g_autoptr(GArray) sino_bins = NULL;
  if (size > 1) {
    if (!tl_listmode_count_events(argv[1], &n_total, &error)) {
      g_prefix_error(&error, "under mpirun each rank reads its share of a Tomolab list-mode "
                     "file (.tlm) by offset; convert other formats with tomolab-cli convert: ");
      return fail(error);
    }
    share(n_total, o.subsets, rank, size, &first, &count);
    if (count == 0) {
      fprintf(stderr, "tomolab-cli recon: %u ranks for %" G_GUINT64_FORMAT " events in blocks "
              "of %u (the subsets): rank %u would hold none; use fewer ranks\n", size, n_total,
              o.subsets, rank);
      tl_cli_dist_abort(2);
      return 2;
    }
    if (!(lm = tl_listmode_load_range(argv[1], first, count, &error))) return fail(error);
  } else {
    TlDataKind kind;
    gpointer data = tl_format_load_any(argv[1], &kind, NULL, &error);
    if (!data) return fail(error);
    if (kind == TL_DATA_PET_SINOGRAM) {
      g_autoptr(TlSinogram) sino = data;
      TlScanner *sc = tl_sinogram_scanner(sino, &error);
      if (!sc || !(sino_bins = tl_sinogram_to_bins(sino, FALSE, &error))) {
        if (sc) tl_scanner_free(sc);
        return fail(error);
      }
      lm = tl_listmode_new(sc, 0);
      if (tof) {
        fprintf(stderr, "tomolab-cli recon: --tof: %s is a sinogram without TOF bins\n", argv[1]);
        return 2;
      }
      binned = TRUE;
    } else if (kind == TL_DATA_PET_LISTMODE) {
      lm = data;
    } else {
      fprintf(stderr, "tomolab-cli recon: %s holds %s: expected PET list mode or a sinogram (CT "
              "data go to ct-recon)\n", argv[1], tl_data_kind_name(kind));
      tl_data_free(kind, data);
      return 1;
    }
    n_total = lm->n_events;
    count = lm->n_events;
  }
  if (!isnan(calibration)) {
    /* the frame from the file where not given; checked before any work */
    if (isnan(quant.duration_s)) quant.duration_s = lm->duration_s;
    if (isnan(quant.frame_start_s)) quant.frame_start_s = lm->duration_s > 0 ? lm->start_s : 0;
    if (!tl_quant_validate(&quant, &error)) {
      g_prefix_error(&error, "--calibration with %s%s: ", argv[1],
                     isnan(duration) && !(lm->duration_s > 0)
                         ? " (the file states no duration: give --duration)" : "");
      return tl_cli_usage_error("recon", error);
    }
  }
  g_autoptr(TlRandoms) randoms = NULL;
  if (randoms_singles) {
    if (!lm->singles) {
      fprintf(stderr, "tomolab-cli recon: --randoms singles: %s carries no singles rates "
              "(simulate --activity writes them; or --randoms delayeds or FILE)\n", argv[1]);
      return 1;
    }
    if (!(randoms = tl_randoms_from_singles(lm->scanner, lm->singles, lm->coincidence_window_ns,
                                            lm->duration_s, argv[1], &error)))
      return fail(error);
    o.randoms = randoms;
  } else if (randoms_from && !randoms_delayeds) {
    if (!(randoms = tl_randoms_load(randoms_from, lm->scanner, &error))) return fail(error);
    o.randoms = randoms;
  } else if (randoms_from) {
    if (lm->n_delayed == 0) {
      fprintf(stderr, "tomolab-cli recon: --randoms delayeds: %s holds no delayed "
              "coincidences\n", argv[1]);
      return 1;
    }
    if (!(randoms = tl_randoms_from_delayeds(lm->scanner, lm->delayed, lm->n_delayed, &error)))
      return fail(error);
    o.randoms = randoms;
  }
  if (randoms_out && !tl_randoms_save(randoms, lm->scanner, randoms_out, &error))
    return fail(error);
  if (randoms) {
    if (!quiet) {
      g_autofree char *d = tl_randoms_describe(randoms);
      fprintf(stderr, "recon: %s (%.1f %% of the %" G_GUINT64_FORMAT " prompts)\n", d,
              100.0 * randoms->total / MAX(n_total, 1), n_total);
    }
  }
  g_autoptr(TlScatterEstimate) scatter = NULL;
  if (scatter_file) {
    if (!(scatter = tl_scatter_estimate_load(scatter_file, &error))) return fail(error);
    if (!tl_scatter_estimate_check_scanner(scatter, lm->scanner, scatter_file, &error))
      return fail(error);
    o.scatter_estimate = scatter;
    if (!quiet) {
      g_autofree char *d = tl_scatter_estimate_describe(scatter);
      fprintf(stderr, "recon: scatter from %s: %s\n", scatter_file, d);
    }
  }
  g_autoptr(TlNorm) norm = NULL;
  if (norm_path) {
    /* for the data's scanner, else an error naming both */
    if (!(norm = tl_norm_load(norm_path, lm->scanner, &error))) return fail(error);
    o.norm = norm;
  }
  g_autoptr(TlImage) truth = NULL;
  if (truth_path && !(truth = tl_cli_load_image(truth_path, &error))) return fail(error);
  g_autoptr(TlImage) mu = NULL;
  if (mu_path && !(mu = tl_cli_load_image(mu_path, &error))) return fail(error);
  o.attenuation = mu; /* checked against the grid by the reconstruction */
  TlImageGrid grid = truth ? truth->grid : mu ? mu->grid : tl_scanner_default_grid(lm->scanner);
  if (grid_text && !tl_cli_parse_grid(grid_text, &grid, &error)) return fail(error);
  if (truth && !tl_image_grid_equal(&truth->grid, &grid)) {
    fprintf(stderr, "tomolab-cli recon: --grid differs from the grid of the truth %s\n", truth_path);
    return 2;
  }
  if (!device && !g_getenv("TOMOLAB_DEVICE")) device = tl_cli_dist_device();
  o.parts = size;
  o.part = rank;
  /* under mpirun (any rank count, 1 included): the sensitivity from fixed pair chunks summed
   * in double, so 1, 2 or N ranks give the same image (tl-pet-operator.h) */
  if (tl_cli_dist_started()) o.sens_chunks = TL_CLI_SENS_CHUNKS;
  o.reducer = tl_cli_dist_reducer();
  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return fail(error);
  if (!tl_cli_apply_kernels(ctx, kernels, &error)) return fail(error);
  for (guint i = 0; kernels && kernels[i] && !quiet; i++)
    fprintf(stderr, "recon: kernel %s\n", kernels[i]);

  gint64 t0 = g_get_monotonic_time();
  double counts = (double)n_total; /* every rank's events, not this rank's share */
  for (guint i = 0; sino_bins && i < sino_bins->len; i++) counts += g_array_index(sino_bins, TlBin, i).count;
  if (!quiet)
    fprintf(stderr, "recon: %.0f %s, scanner '%s', %u x %u x %u voxels of "
            "%g x %g x %g mm, %s, %s on %s\n", counts, sino_bins ? "counts (sinogram)" : "events",
            lm->scanner->name, grid.dims[0],
            grid.dims[1], grid.dims[2], grid.voxel_mm[0], grid.voxel_mm[1], grid.voxel_mm[2],
            o.algorithm, o.projector, tl_context_info(ctx)->name);
  if (size > 1 && !quiet)
    fprintf(stderr, "recon: %u MPI ranks, rank 0 holds events %" G_GUINT64_FORMAT " to %"
            G_GUINT64_FORMAT "; image sums in %u piece(s)\n", size, first, first + count,
            tl_cli_dist_pieces());
  if (prior && !quiet)
    fprintf(stderr, "recon: prior %s, beta %g, gamma %g, epsilon %g\n", prior, beta,
            o.prior_params.gamma, o.prior_params.epsilon);
  if (mu && !quiet) fprintf(stderr, "recon: attenuation correction with %s\n", mu_path);
  if (norm && !quiet)
    fprintf(stderr, "recon: normalisation %s (%s)\n", norm_path,
            norm->description && norm->description[0] ? norm->description : "no description");
  if (o.tof && !quiet)
    fprintf(stderr, "recon: time of flight, %u bins of %g mm, kernel truncated at %g sigma\n",
            lm->scanner->tof_bins, lm->scanner->tof_bin_mm, o.tof_n_sigma);
  if (strcmp(o.projector, "tor") == 0 && !quiet)
    fprintf(stderr, "recon: tube of response FWHM %g mm\n", o.tor_fwhm_mm);
  if (filter.kind != TL_FILTER_NONE && !quiet) {
    if (o.filter_every)
      fprintf(stderr, "recon: filter %s every %u sub-iterations%s\n", filter_text, o.filter_every,
              o.filter_every > o.subsets * o.iterations ? " (never: more than the run makes)" : "");
    else
      fprintf(stderr, "recon: filter %s on the final image\n", filter_text);
  }
  g_autoptr(TlRecon) r = NULL;
  if (binned) {
    g_autoptr(GArray) bins = sino_bins ? g_steal_pointer(&sino_bins) : tl_listmode_histogram(lm);
    if (!quiet) fprintf(stderr, "recon: %u bins\n", bins->len);
    r = tl_recon_new_binned(ctx, lm->scanner, (const TlBin *)bins->data, bins->len, &grid, &o,
                            &error);
  } else {
    r = tl_recon_new_listmode(ctx, lm, &grid, &o, &error);
    g_clear_pointer(&lm->events, g_free); /* on the device now: the host copy goes */
  }
  if (!r) return fail(error);
  /* an edit of a kernel the run never calls would change nothing: refused before the run,
   * from the configured path (the sensitivity kernels count where the set-up ran them) */
  for (guint i = 0; kernels && kernels[i]; i++) {
    g_autofree char *name = g_strndup(kernels[i], strcspn(kernels[i], "="));
    gboolean set_up = !tl_recon_sensitivity_cached(r) && g_str_has_prefix(name, "pet_sens");
    if (!set_up && !tl_solver_check_kernel(tl_recon_solver(r), name, &error)) {
      g_prefix_error(&error, "--kernel %s: ", kernels[i]);
      return fail(error);
    }
  }
  if (!quiet)
    fprintf(stderr, "recon: sensitivity image %s, set up in %.2f s\n",
            tl_recon_sensitivity_cached(r) ? "from the cache"
            : no_cache                      ? "computed"
                                            : "computed and cached",
            (g_get_monotonic_time() - t0) * 1e-6);
  if (truth && !tl_recon_set_truth(r, truth, &error)) return fail(error);

  g_autofree char *hash = options_hash(argv[1], n_total, lm->scanner, &grid, &o, mu, norm,
                                       filter_text, kernels, scatter_file);
  if (resume) {
    TlCliCheckpoint cp;
    if (!tl_cli_checkpoint_load(resume, &cp, &error)) return fail(error);
    gboolean same = strcmp(cp.hash, hash) == 0 && cp.subsets == o.subsets;
    if (!same) {
      tl_cli_checkpoint_clear(&cp);
      g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "--resume %s: the checkpoint is of a run with other options or data (options "
                  "sha256 %s, this run %s): resume with the options it was made with", resume,
                  cp.hash, hash);
      return fail(error);
    }
    gboolean ok = tl_solver_resume(tl_recon_solver(r), cp.image, cp.sub_iterations, &error);
    tl_cli_checkpoint_clear(&cp);
    if (!ok) return fail(error);
    if (!quiet)
      fprintf(stderr, "recon: resumed from %s after %u sub-iterations\n", resume,
              tl_recon_sub_iterations(r));
  }

  g_autoptr(GCancellable) cancel = g_cancellable_new();
  guint rounds = sss ? (scatter_rounds ? (guint)scatter_rounds : 2) : 0;
  Progress pr = {o.iterations * (rounds + 1), quiet, checkpoint,
                 checkpoint_every ? (guint)checkpoint_every : o.subsets, hash, r, cancel};
  tl_recon_set_callback(r, on_progress, &pr);
  tl_recon_set_cancellable(r, cancel);
  /* Ctrl-C: finish nothing more, keep the last complete image and write it. Under mpirun,
   * mpirun owns the signals (Ctrl-C ends every rank); a cancel on one rank alone would leave
   * the others waiting in a sum. */
  TlCliInterrupt *sigint = size == 1 ? tl_cli_interrupt_begin(cancel) : NULL;
  double sec0, wait0, cpu0 = cpu_seconds();
  guint calls0;
  guint64 bytes0;
  tl_cli_dist_stats(&sec0, &wait0, &calls0, &bytes0); /* the set-up's sums are not the run's */
  gint64 t1 = g_get_monotonic_time();
  gboolean ok = tl_recon_run(r, &error);
  g_autoptr(TlScatterEstimate) estimate = NULL;
  if (ok && sss) {
    TlScatterRounds so;
    tl_scatter_rounds_init(&so);
    so.rounds = rounds;
    so.iterations = o.iterations;
    double prompts = counts;
    so.callback = quiet ? NULL : on_scatter_round;
    so.user_data = &prompts;
    so.cancel = cancel;
    if (!quiet)
      fprintf(stderr, "recon: scatter by SSS, %u rounds of %u iterations\n", rounds,
              o.iterations);
    estimate = tl_recon_scatter_rounds(r, mu, &so, &error);
    ok = estimate != NULL;
  }
  if (sigint) tl_cli_interrupt_end(sigint);
  if (pr.error) {
    g_clear_error(&error);
    return fail(pr.error);
  }
  gboolean cancelled = !ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  if (!ok && !cancelled) return fail(error);
  g_clear_error(&error);
  if (cancelled && !quiet)
    fprintf(stderr, "recon: interrupted after %u sub-iterations; writing the last complete image\n",
            tl_recon_sub_iterations(r));
  /* rank 0 writes; the others hold the same image */
  g_autoptr(TlImage) img = rank == 0 ? tl_recon_image(r, &error) : NULL;
  g_autoptr(TlProfile) prof = tl_profile_new();
  tl_profile_merge(prof, tl_recon_profile(r));
  /* With --filter-every the filter already ran inside the reconstruction. */
  TlFilter post = o.filter_every ? (TlFilter){TL_FILTER_NONE, 0} : filter;
  if (rank == 0 && (!img || !post_filter(ctx, &post, img, prof, &error) ||
                    (!isnan(calibration) && !tl_quant_apply(&quant, img, &error)) ||
                    !tl_cli_save_image(img, output, &error)))
    return fail(error);
  if (scatter_out && estimate) {
    if (!tl_scatter_estimate_save(estimate, scatter_out, &error)) return fail(error);
    if (!quiet) fprintf(stderr, "recon: wrote the scatter estimate %s\n", scatter_out);
  }
  if (rank == 0 && !isnan(calibration) && !quiet)
    fprintf(stderr, "recon: image in Bq/mL: calibration %g, frame %g s from %g s, isotope %s "
            "(decay correction %.6g), scale %.6g\n", quant.calibration, quant.duration_s,
            quant.frame_start_s, quant.isotope ? quant.isotope->name : "none",
            tl_decay_correction(quant.isotope, quant.frame_start_s, quant.duration_s),
            tl_quant_scale(&quant));
  if (tl_cli_dist_started()) {
    double sec, wait, run = (g_get_monotonic_time() - t1) * 1e-6, cpu = cpu_seconds() - cpu0;
    guint calls;
    guint64 bytes;
    tl_cli_dist_stats(&sec, &wait, &calls, &bytes);
    /* CPU seconds of the loop over every rank: the work, whatever else shares the cores */
    if (size > 1 && !tl_cli_dist_reducer()->scalars(&cpu, 1, NULL, &error)) return fail(error);
    if (!quiet && size > 1) {
      fprintf(stderr, "recon: mpi: %u ranks, image sums %.3f s in %u calls (%.1f%% of the "
              "sub-iterations' %.3f s), %.2f MB per rank per sum", size, sec - sec0,
              calls - calls0, run > 0 ? 100 * (sec - sec0) / run : 0.0, run, bytes / 1e6);
      if (g_strcmp0(g_getenv("TOMOLAB_MPI_BARRIER"), "1") == 0)
        fprintf(stderr, "; waiting for the slowest rank %.3f s", wait - wait0);
      fprintf(stderr, "\n");
    }
    if (!quiet)
      fprintf(stderr, "recon: mpi: the sub-iterations took %.3f CPU s over %u rank(s)\n", cpu,
              size);
  }
  if (!quiet)
    fprintf(stderr, "recon: %u sub-iterations in %.2f s; wrote %s\n", tl_recon_sub_iterations(r),
            (g_get_monotonic_time() - t1) * 1e-6, output);
  if (profile) {
    g_autofree char *table = tl_profile_format(prof);
    printf("%s", table);
  }
  return cancelled ? 130 : 0;
}
