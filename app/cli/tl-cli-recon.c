/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli recon: list-mode (or binned) MLEM/OSEM of a .tlm file into an image. */
#include "tl-cli.h"
#include "tl-cli-dist.h"
#include "dataset/tl-formats.h"
#include "dataset/tl-dataset.h"
#include "pet/data/tl-sinogram.h"
#include "ct/tl-ct-data.h"
#include "image/tl-filter.h"
#include "image/tl-phantom.h"
#include "pet/tl-recon.h"
#include "pet/correct/tl-sss.h"
#include "pet/correct/tl-units.h"
#include "tl-registry.h"
#include "tl-cli-run.h"
#include "run/tl-run-sidecar.h"
#include "pet/project/tl-projector.h"
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
                          const char *scatter_file, const char *kappa_file) {
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
  /* a line only when set: checkpoints of runs from subset 0 stay resumable */
  if (o->start_subset) g_string_append_printf(all, "start subset %u\n", o->start_subset);
  if (o->zero_end_planes) g_string_append(all, "zero end planes\n");
  if (norm) g_string_append_printf(all, "normalisation %s\n", norm->sha256);
  if (o->rays_tangential > 1 || o->rays_axial > 1)
    g_string_append_printf(all, "rays %u x %u\n", o->rays_tangential, o->rays_axial);
  if (o->sensitivity) { /* a sensitivity image given: its values */
    g_autofree char *h = g_compute_checksum_for_data(
        G_CHECKSUM_SHA256, (const guchar *)o->sensitivity->data,
        tl_image_grid_n_voxels(&o->sensitivity->grid) * sizeof(float));
    g_string_append_printf(all, "sensitivity %s\n", h);
  }
  if (scatter_file) { /* --scatter FILE: the estimate's bytes (already read) */
    g_autofree char *src = NULL;
    gsize len = 0;
    g_file_get_contents(scatter_file, &src, &len, NULL);
    g_autofree char *h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)src,
                                                     src ? len : 0);
    g_string_append_printf(all, "scatter %s\n", h);
  }
  /* the PETRIC keys: the stochastic order's seed, the OSEM warm start, the prior's per-voxel
   * weights (the file's bytes, read already by the kappa key); lines only where they differ
   * from the defaults, so checkpoints made before them stay resumable */
  if (o->seed != 1) g_string_append_printf(all, "seed %u\n", o->seed);
  if (o->warm_epochs) g_string_append_printf(all, "osem epochs %u\n", o->warm_epochs);
  if (kappa_file) {
    g_autofree char *src = NULL;
    gsize len = 0;
    g_file_get_contents(kappa_file, &src, &len, NULL);
    g_autofree char *h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)src,
                                                     src ? len : 0);
    g_string_append_printf(all, "kappa %s\n", h);
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
  TlRunModality m;
  if (tl_cli_run_peek_modality(argc, argv, &m) && m == TL_RUN_CT) return tl_cli_ct_recon(argc, argv);
  GError *error = NULL;
  if (!tl_cli_dist_start(&argc, &argv, &error)) return fail(error);
  int code = recon_main(argc, argv);
  tl_cli_dist_finish();
  return code;
}

#define RUN_OPT(l, s, help, arg) {l, s, 0, G_OPTION_ARG_CALLBACK, (gpointer)tl_cli_run_option, help, arg}
#define RUN_FLAG(l, s, help) \
  {l, s, G_OPTION_FLAG_NO_ARG, G_OPTION_ARG_CALLBACK, (gpointer)tl_cli_run_option, help, NULL}

static int recon_spec(const TlRunSpec *sp);

/* Option parsing only: every option sets a key of the run (tl-cli-run.h); the run is made from
 * the TlRunSpec by recon_spec. */
static int recon_main(int argc, char **argv) {
  g_autofree char *tor_help = g_strdup_printf(
      "With --projector tor: FWHM across the tube in mm (default %g; 0 = Joseph)",
      TL_TOR_FWHM_DEFAULT);
  g_autofree char *nsigma_help = g_strdup_printf(
      "With --tof: truncate the TOF kernel at this many sigmas (default %g)", TL_TOF_N_SIGMA);
  g_autofree char *algo_help = tl_cli_registry_help("algorithm", TRUE);
  g_autofree char *prior_help = tl_cli_registry_help("prior", TRUE);
  /* the projectors from the registry (compute/tl-registry.h) */
  g_autofree char *proj_names = tl_registry_projector_help(0);
  g_autofree char *proj_help =
      g_strdup_printf("%s (`tomolab-cli info` says what each does)", proj_names);
  GOptionEntry entries[] = {
      RUN_OPT("run", 0, "Read the run from FILE: key = value lines (docs/formats.md, \"Run "
              "files\") or an image's .json sidecar; the options given here override its values",
              "FILE"),
      RUN_OPT("save-run", 0, "Write the run (every key) to FILE before reconstructing", "FILE"),
      RUN_OPT("algo", 'a', algo_help, "ALGO"),
      RUN_OPT("kernel", 'k',
              "Replace built-in kernel NAME by the GLSL in FILE (repeatable; tomolab-cli kernel)",
              "NAME=FILE"),
      RUN_OPT("subsets", 's', "Subsets for the algorithms that use them (default 10)", "S"),
      RUN_OPT("prior", 0, prior_help, "NAME"),
      RUN_OPT("beta", 0, "Prior strength beta, relative to the data (docs/recon.md; rdp: about 1e-3 to 0.1; default 0)", "B"),
      RUN_OPT("gamma", 0, "rdp: edge preservation gamma >= 0 (default 2)", "G"),
      RUN_OPT("epsilon", 0, "rdp / tv: smoothing epsilon > 0 (default auto: for rdp 1e-3 x the "
              "largest voxel of an OSEM image, as PETRIC; tv 1e-3)", "E"),
      RUN_OPT("kappa", 0, "The prior's per-voxel weights: an image on the grid (PETRIC's kappa)",
              "IMAGE"),
      RUN_OPT("seed", 0, "svrg / saga: the seed of the random subset order (default 1)", "N"),
      RUN_OPT("osem-epochs", 0,
              "This many OSEM epochs first, then the algorithm from their image (a warm start, "
              "as PETRIC's entrants; default 0)", "N"),
      RUN_OPT("relaxation", 0,
              "bsrem: alpha_0 in (0, 1]; sirt / os-sart: lambda in (0, 2) (default 1)", "X"),
      RUN_OPT("iterations", 'n', "Full iterations (default 3)", "N"),
      RUN_OPT("projector", 'p', proj_help, "NAME"),
      RUN_OPT("tor-fwhm", 0, tor_help, "MM"),
      RUN_FLAG("tof", 0,
               "Time of flight: weight each event by its TOF bin (the file must have TOF bins)"),
      RUN_OPT("tof-nsigma", 0, nsigma_help, "X"),
      RUN_OPT("output", 'o', "Image to write: .nii, .nii.gz or .raw (required); a .json "
              "provenance sidecar is written beside it", "FILE"),
      RUN_OPT("truth", 't',
              "Ground truth image: RMSE after each sub-iteration; its grid is the default grid",
              "FILE"),
      RUN_OPT("start", 0, "Start image (on the grid; default: the algorithm's)", "FILE"),
      RUN_OPT("grid", 'g',
              "Image grid, e.g. 215x215x71@2.78 (default: the truth's, else the mu-map's, else "
              "the dataset's: voxels of one crystal width, e.g. the mMR's 133x133x66@4)",
              "NXxNYxNZ@MM"),
      RUN_OPT("attenuation", 0,
              "Attenuation correction with this mu-map (mm^-1, 0..0.05, on the image grid)",
              "MU.nii"),
      RUN_OPT("norm", 0,
              "Normalisation: per-pair efficiency factors from a .tln file (tomolab-cli "
              "norm-estimate) for the data's scanner", "FILE.tln"),
      RUN_OPT("randoms", 0,
              "Randoms correction: 'delayeds' estimates each pair's randoms from the file's "
              "delayed coincidences by fan sums (variance-reduced), 'singles' from its singles "
              "rates (2 tau S_i S_j T), FILE reads an estimate (a randoms file: --randoms-out); "
              "each is added to the model", "delayeds|singles|FILE"),
      RUN_OPT("randoms-out", 0, "With --randoms: write the estimate used to FILE (a randoms file)",
              "FILE"),
      RUN_OPT("calibration", 0,
              "Write the image in Bq/mL: the scanner's calibration factor F (image value per "
              "second per Bq/mL of positron emitters; tomolab-cli calibrate finds it)", "F"),
      RUN_OPT("isotope", 0,
              "With --calibration: decay correction to the reference time and the positron "
              "fraction of this isotope (F18, C11, N13, O15, Ga68, Rb82, Cu64, Zr89; default "
              "none)", "NAME"),
      RUN_OPT("duration", 0, "With --calibration: the frame's duration in s (default: the file's)",
              "S"),
      RUN_OPT("frame-start", 0,
              "With --calibration: the frame's start in s after the reference time (default: "
              "the file's start, else 0)", "S"),
      RUN_OPT("scatter", 0,
              "Scatter correction: 'sss' estimates it by single scatter simulation from the "
              "current image and --attenuation's mu-map, scaled to the data on the lines outside "
              "the object (tail fit), for --scatter-rounds rounds; or a scatter estimate FILE "
              "(--scatter-out)", "sss|FILE"),
      RUN_OPT("scatter-rounds", 0,
              "With --scatter sss: rounds of estimate + --iterations more iterations after the "
              "first reconstruction (default 2): (1 + N) x --iterations iterations in all", "N"),
      RUN_FLAG("scatter-restart", 0,
               "With --scatter sss: after the last estimate, start the image again from the "
               "uniform image for its --iterations (the image STIR and SIRF users reconstruct "
               "after their scatter estimation); the count in all stays the same"),
      RUN_OPT("scatter-out", 0,
              "With --scatter sss: write the last estimate (scaled: expected scatter per crystal "
              "pair and TOF bin) to FILE", "FILE"),
      RUN_FLAG("binned", 'b', "Histogram the events per crystal pair and reconstruct the bins"),
      RUN_OPT("loglik", 0,
              "When to compute the Poisson log-likelihood: never, iteration (default), "
              "subiteration", "WHEN"),
      RUN_OPT("filter", 'f',
              "Filter the final image (or, with --filter-every, between iterations): median3, "
              "median5, gauss:FWHM (mm) or metz:FWHM:N (STIR's Metz filter of power N) (default none)",
              "FILTER"),
      RUN_OPT("filter-every", 0,
              "With --filter: filter inside the reconstruction after every N-th sub-iteration "
              "instead of the final image (N = subsets: once per iteration)", "N"),
      RUN_OPT("start-subset", 0,
              "The subset of the first sub-iteration, 0 to subsets - 1 (STIR's start subset; "
              "default 0)", "K"),
      RUN_FLAG("zero-end-planes", 0,
               "Leave out the data of the first and last direct planes (both crystals in the first "
               "or both in the last ring; STIR's zero end planes of segment 0)"),
      RUN_OPT("rays-tangential", 0,
              "Arc-corrected sinograms: rays per line across the bin (STIR's number of rays in "
              "tangential direction; default 1)", "N"),
      RUN_OPT("rays-axial", 0, "Arc-corrected sinograms: rays per line across a ring's width "
              "(default 1)", "N"),
      RUN_OPT("sensitivity", 0,
              "Use this sensitivity image (on the grid) instead of computing it (STIR's "
              "sensitivity filename; with S subsets each subset's is the image / S)", "IMAGE"),
      RUN_OPT("sensitivity-out", 0, "Write the sensitivity image the run uses to IMAGE",
              "IMAGE"),
      RUN_FLAG("profile", 0, "Print GPU time per kernel at the end"),
      RUN_FLAG("no-cache", 0,
               "Recompute the sensitivity image instead of using $XDG_CACHE_HOME/tomolab"),
      RUN_OPT("device", 'd',
              "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)",
              "SEL"),
      RUN_FLAG("quiet", 'q', "No progress on stderr"),
      RUN_OPT("checkpoint", 0,
              "Write the image and the progress to FILE (atomically) every --checkpoint-every "
              "sub-iterations", "FILE"),
      RUN_OPT("checkpoint-every", 0,
              "With --checkpoint: every N sub-iterations (default: the subsets, once per "
              "iteration)", "N"),
      RUN_OPT("resume", 0,
              "Go on from a checkpoint of a run with the same options (any number of MPI ranks)",
              "FILE"),
      {NULL}};
  TlCliRunArgs args;
  tl_cli_run_args_init(&args, FALSE);
  g_autoptr(GOptionContext) oc = g_option_context_new(
      "[SCAN] - reconstruct PET list mode or a sinogram (or a CT scan)");
  GOptionGroup *group = g_option_group_new("recon", "recon", "recon", &args, NULL);
  g_option_group_add_entries(group, entries);
  g_option_context_set_main_group(oc, group);
  g_option_context_set_description(oc,
      "Example: tomolab-cli recon scan.tlm --algo osem --subsets 10 --iterations 3 \\\n"
      "           --projector joseph -o img.nii --profile\n"
      "Penalised (MAP): tomolab-cli recon scan.tlm --algo bsrem --subsets 10 --iterations 5 \\\n"
      "           --prior rdp --beta 0.05 --gamma 2 -o img.nii\n"
      "With every PET extension: tomolab-cli recon scan.tlm --algo osem --subsets 10 \\\n"
      "           --iterations 3 --tof --attenuation mu.nii --norm dmi.tln --filter median3 \\\n"
      "           --filter-every 10 -o img.nii\n"
      "From a run file, or again from an image's sidecar: tomolab-cli recon --run run.txt\n"
      "           tomolab-cli recon --run img.json -o again.nii\n"
      "List-mode MLEM/OSEM on the Vulkan device: one fused kernel per event (forward projection,\n"
      "ratio, back projection), then one fused array expression for the update. The sensitivity\n"
      "image is cached in $XDG_CACHE_HOME/tomolab. Ctrl-C writes the last complete image.\n"
      "Each image gets a JSON sidecar (IMAGE.json): the run, the inputs' SHA-256, the version\n"
      "and the device, with BIDS-PET keys (docs/formats.md).\n"
      "A CT scan (.tlct) is reconstructed by ct-recon instead (tomolab-cli ct-recon --help).");
  GError *error = NULL;
  if (!tl_cli_reject_zero(argc, argv, "subsets", 's', &error)) {
    tl_cli_run_args_clear(&args);
    return tl_cli_usage_error("recon", error);
  }
  gboolean parsed = g_option_context_parse(oc, &argc, &argv, &error);
  g_autoptr(TlRunSpec) spec = parsed && argc <= 2
                                  ? tl_cli_run_build(&args, argc == 2 ? argv[1] : NULL, &error)
                                  : NULL;
  tl_cli_run_args_clear(&args);
  if (!parsed || (argc <= 2 && !spec)) return tl_cli_usage_error("recon", error);
  if (argc > 2 || !spec->data || !spec->output) {
    fprintf(stderr, "tomolab-cli recon: %s\n(see --help)\n",
            argc > 2       ? "one list-mode file only"
            : !spec->data ? "a list-mode file is required (or data = FILE in --run)"
                          : "-o FILE is required (or output = FILE in --run)");
    return 2;
  }
  return recon_spec(spec);
}

/* The run, from its description. */
static int recon_spec(const TlRunSpec *sp) {
  GError *error = NULL;
  const char *input = sp->data, *output = sp->output, *truth_path = sp->truth;
  const char *mu_path = sp->attenuation, *norm_path = sp->norm, *grid_text = sp->grid;
  const char *checkpoint = sp->checkpoint, *resume = sp->resume, *prior = sp->prior;
  const char *randoms_out = sp->randoms_out, *scatter_out = sp->scatter_out;
  char **kernels = sp->kernels;
  g_autofree char *device = g_strdup(sp->device);
  gboolean binned = sp->binned, tof = sp->tof, quiet = sp->quiet, profile = sp->profile;
  gboolean no_cache = !sp->cache;
  guint checkpoint_every = sp->checkpoint_every;
  gboolean randoms_delayeds = sp->randoms == TL_RUN_RANDOMS_DELAYEDS;
  gboolean randoms_singles = sp->randoms == TL_RUN_RANDOMS_SINGLES;
  const char *randoms_from = sp->randoms == TL_RUN_RANDOMS_NONE ? NULL
                             : randoms_delayeds                 ? "delayeds"
                             : randoms_singles                  ? "singles"
                                                                : sp->randoms_file;
  gboolean sss = sp->scatter == TL_RUN_SCATTER_SSS;
  const char *scatter_file = sp->scatter_file;
  double calibration = sp->calibration, duration = sp->duration_s;
  TlQuant quant = {.calibration = calibration, .duration_s = duration,
                   .frame_start_s = sp->frame_start_s};
  if (sp->isotope && !(quant.isotope = tl_isotope_find(sp->isotope, &error)))
    return tl_cli_usage_error("recon", error);
  guint size = tl_cli_dist_size(), rank = tl_cli_dist_rank();
  if (rank != 0) quiet = TRUE; /* rank 0 reports and writes */
  if (size > 1 && sp->scatter != TL_RUN_SCATTER_NONE) {
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
  g_autofree char *sidecar = tl_run_sidecar_path(output);
  if (!tl_cli_check_outputs((const TlCliFile[]){{"input", input}, {"--truth", truth_path},
                                                {"--attenuation", mu_path},
                                                {"--norm", norm_path},
                                                {"--resume", resume_same ? NULL : resume},
                                                {"--randoms", sp->randoms_file},
                                                {"--scatter", scatter_file},
                                                {"--start", sp->start},
                                                {"--kappa", sp->kappa},
                                                {"--sensitivity", sp->sensitivity}},
                            10,
                            (const TlCliFile[]){{"-o", output}, {"--checkpoint", checkpoint},
                                                {"--randoms-out", randoms_out},
                                                {"--scatter-out", scatter_out},
                                                {"the image's sidecar", sidecar},
                                                {"--sensitivity-out", sp->sensitivity_out}},
                            6, &error))
    return tl_cli_usage_error("recon", error);
  TlReconOptions o;
  TlFilter filter, post_filter_kind;
  if (!tl_run_spec_to_recon_options(sp, &o, &post_filter_kind, &error))
    return tl_cli_usage_error("recon", error);
  filter = sp->filter;
  g_autofree char *filter_text = filter.kind == TL_FILTER_NONE ? NULL : tl_filter_to_string(&filter);

  /* several ranks: each reads only its share of the events, by file offset (Tomolab .tlm
   * only: other formats are converted first); one process: list mode of any format, or a
   * sinogram (STIR projection data): its bins as crystal pairs of its cylindrical scanner,
   * reconstructed binned (docs/formats.md) */
  guint64 n_total = 0, first = 0, count = 0;
  g_autoptr(TlListmode) lm = NULL;
  TlImageGrid default_grid = {{0}};
  g_autoptr(GArray) sino_bins = NULL;
  g_autoptr(TlSinogram) arc = NULL;
  double arc_counts = 0;
  if (size > 1) {
    if (!tl_listmode_count_events(input, &n_total, &error)) {
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
    if (!(lm = tl_listmode_load_range(input, first, count, &error))) return fail(error);
    default_grid = tl_dataset_pet_grid(lm->scanner); /* the dataset's rule, on a share */
  } else {
    /* the dataset layer: detection, the sinogram's bins and the defaults of every door */
    g_autoptr(TlDataset) ds = tl_dataset_open(input, &error);
    if (!ds) return fail(error);
    if (ds->kind == TL_DATASET_PET_BINS) {
      if (tof) {
        fprintf(stderr, "tomolab-cli recon: --tof: %s is a sinogram without TOF bins\n", input);
        return 2;
      }
      binned = TRUE;
      sino_bins = g_steal_pointer(&ds->bins);
      /* arc-corrected, or crystal pairs with several rays each: lines (tl_dataset_lines) */
      if (tl_dataset_lines(ds, o.rays_tangential, o.rays_axial)) {
        arc = ds->arc ? g_steal_pointer(&ds->arc) : g_steal_pointer(&ds->pair_sinogram);
        arc_counts = ds->bin_counts; /* crystal-pair bins are summed from sino_bins */
        g_clear_pointer(&sino_bins, g_array_unref);
      }
    } else if (ds->kind != TL_DATASET_PET_LISTMODE) {
      fprintf(stderr, "tomolab-cli recon: %s holds %s: expected PET list mode or a sinogram (CT "
              "data go to ct-recon)\n", input, tl_dataset_kind_name(ds->kind));
      return 1;
    }
    lm = g_steal_pointer(&ds->lm);
    default_grid = ds->grid;
    if (!sp->subsets && o.subsets > 1) o.subsets = ds->subsets; /* auto: the dataset's */
    n_total = lm->n_events;
    count = lm->n_events;
  }
  if (!isnan(calibration)) {
    /* the frame from the file where not given; checked before any work */
    if (isnan(quant.duration_s)) quant.duration_s = lm->duration_s;
    if (isnan(quant.frame_start_s)) quant.frame_start_s = lm->duration_s > 0 ? lm->start_s : 0;
    if (!tl_quant_validate(&quant, &error)) {
      g_prefix_error(&error, "--calibration with %s%s: ", input,
                     isnan(duration) && !(lm->duration_s > 0)
                         ? " (the file states no duration: give --duration)" : "");
      return tl_cli_usage_error("recon", error);
    }
  }
  g_autoptr(TlRandoms) randoms = NULL;
  if (randoms_singles) {
    if (!lm->singles) {
      fprintf(stderr, "tomolab-cli recon: --randoms singles: %s carries no singles rates "
              "(simulate --activity writes them; or --randoms delayeds or FILE)\n", input);
      return 1;
    }
    if (!(randoms = tl_randoms_from_singles(lm->scanner, lm->singles, lm->coincidence_window_ns,
                                            lm->duration_s, input, &error)))
      return fail(error);
    o.randoms = randoms;
  } else if (randoms_from && !randoms_delayeds) {
    if (!(randoms = tl_randoms_load(randoms_from, lm->scanner, &error))) return fail(error);
    o.randoms = randoms;
  } else if (randoms_from) {
    if (lm->n_delayed == 0) {
      fprintf(stderr, "tomolab-cli recon: --randoms delayeds: %s holds no delayed "
              "coincidences\n", input);
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
  TlImageGrid grid = truth ? truth->grid : mu ? mu->grid : default_grid;
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
  counts += arc_counts;
  if (!quiet)
    fprintf(stderr, "recon: %.0f %s, scanner '%s', %u x %u x %u voxels of "
            "%g x %g x %g mm, %s, %s on %s\n", counts, arc ? (arc->arc_corrected ? "counts (arc-corrected sinogram)" : "counts (sinogram)") : sino_bins ? "counts (sinogram)" : "events",
            lm->scanner->name, grid.dims[0],
            grid.dims[1], grid.dims[2], grid.voxel_mm[0], grid.voxel_mm[1], grid.voxel_mm[2],
            o.algorithm, o.projector, tl_context_info(ctx)->name);
  if (size > 1 && !quiet)
    fprintf(stderr, "recon: %u MPI ranks, rank 0 holds events %" G_GUINT64_FORMAT " to %"
            G_GUINT64_FORMAT "; image sums in %u piece(s)\n", size, first, first + count,
            tl_cli_dist_pieces());
  if (prior && !quiet)
    fprintf(stderr, "recon: prior %s, beta %g, gamma %g, epsilon %g\n", prior, o.beta,
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
  /* the run's sensitivity image (the key `sensitivity`), checked against the grid */
  g_autoptr(TlImage) sens = NULL;
  if (!tl_run_spec_load_sensitivity(sp, &grid, &sens, &error)) return fail(error);
  o.sensitivity = sens;
  if (sens && !quiet) fprintf(stderr, "recon: sensitivity image %s\n", sp->sensitivity);
  g_autoptr(TlRecon) r = NULL;
  if (arc) {
    if (!quiet)
      fprintf(stderr, "recon: %" G_GUINT64_FORMAT " %s bins as lines, %u x %u rays each\n",
              arc->n_bins, arc->arc_corrected ? "arc-corrected" : "crystal-pair",
              MAX(o.rays_tangential, 1), MAX(o.rays_axial, 1));
    r = tl_recon_new_lines(ctx, arc, &grid, &o, &error);
  } else if (binned) {
    g_autoptr(GArray) bins = sino_bins ? g_steal_pointer(&sino_bins) : tl_listmode_histogram(lm);
    if (!quiet) fprintf(stderr, "recon: %u bins\n", bins->len);
    r = tl_recon_new_binned(ctx, lm->scanner, (const TlBin *)bins->data, bins->len, &grid, &o,
                            &error);
  } else {
    r = tl_recon_new_listmode(ctx, lm, &grid, &o, &error);
    g_clear_pointer(&lm->events, g_free); /* on the device now: the host copy goes */
  }
  if (!r || !tl_run_spec_apply_kappa(sp, tl_recon_solver(r), &error)) return fail(error);
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
            sens                            ? "from the file"
            : tl_recon_sensitivity_cached(r) ? "from the cache"
            : no_cache || arc               ? "computed" /* lines: no disk cache */
                                            : "computed and cached",
            (g_get_monotonic_time() - t0) * 1e-6);
  if (truth && !tl_recon_set_truth(r, truth, &error)) return fail(error);
  if (rank == 0 && !tl_run_spec_write_sensitivity(sp, r, &error)) return fail(error);

  g_autofree char *hash = options_hash(input, n_total, lm->scanner, &grid, &o, mu, norm,
                                       filter_text, kernels, scatter_file,
                                       sp->kappa);
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
    /* the options hash leaves the iterations out (a run may be resumed for more), so a
     * count beyond what this run does is caught here: its iterations, with SSS's rounds */
    guint64 run_steps = (guint64)tl_run_spec_total_iterations(sp) * o.subsets;
    if (cp.sub_iterations > run_steps) {
      g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG,
                  "--resume %s: the checkpoint claims %u sub-iterations done, but this run has "
                  "only %" G_GUINT64_FORMAT " (%u iterations x %u subsets%s)", resume,
                  cp.sub_iterations, run_steps, o.iterations, o.subsets,
                  sss ? ", with the scatter rounds" : "");
      tl_cli_checkpoint_clear(&cp);
      return fail(error);
    }
    gboolean ok = tl_solver_resume(tl_recon_solver(r), cp.image, cp.sub_iterations, &error);
    tl_cli_checkpoint_clear(&cp);
    if (!ok) return fail(error);
    if (!quiet)
      fprintf(stderr, "recon: resumed from %s after %u sub-iterations\n", resume,
              tl_recon_sub_iterations(r));
  }
  if (sp->start) { /* on the grid, else the solver's error names both */
    g_autoptr(TlImage) x0 = tl_cli_load_image(sp->start, &error);
    if (!x0 || !tl_solver_set_image(tl_recon_solver(r), x0, &error)) {
      g_prefix_error(&error, "--start %s: ", sp->start);
      return fail(error);
    }
    if (!quiet) fprintf(stderr, "recon: start image %s\n", sp->start);
  }

  g_autoptr(GCancellable) cancel = g_cancellable_new();
  guint rounds = sss ? sp->scatter_rounds : 0;
  Progress pr = {tl_run_spec_total_iterations(sp), quiet, checkpoint,
                 checkpoint_every ? checkpoint_every : o.subsets, hash, r, cancel};
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
    so.final_iterations = sp->scatter_restart ? o.iterations : 0;
    double prompts = counts;
    so.callback = quiet ? NULL : on_scatter_round;
    so.user_data = &prompts;
    so.cancel = cancel;
    if (!quiet)
      fprintf(stderr, "recon: scatter by SSS: %u rounds of an estimate + %u iterations each "
              "(%u iterations in all with the first %u)%s\n", rounds, o.iterations,
              tl_run_spec_total_iterations(sp), o.iterations,
              sp->scatter_restart ? "; the last round starts again from the uniform image" : "");
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
  TlFilter post = post_filter_kind;
  if (rank == 0 && (!img || !post_filter(ctx, &post, img, prof, &error) ||
                    (!isnan(calibration) && !tl_quant_apply(&quant, img, &error)) ||
                    !tl_cli_save_image(img, output, &error) ||
                    !tl_run_sidecar_write(output, sp, tl_context_info(ctx)->name, img->unit,
                                          &error)))
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
