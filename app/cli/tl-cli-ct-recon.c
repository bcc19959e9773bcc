/* tomolab-cli ct-recon: FDK, FBP, SIRT, (OS-)SART, CGLS or MLEM of a CT scan (any CT format of the
 * format table: .tlct, Data Exchange HDF5...) into an image. */
#include "tl-cli-ct-common.h"
#include "ct/tl-ct-centre.h"
#include "ct/tl-ct-fdk.h"
#include "ct/tl-ct-recon.h"
#include "ct/tl-ct-simulate.h"
#include "image/tl-file.h"
#include "tl-cli.h"
#include "tl-formats.h"
#include "tl-registry.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define VERB "ct-recon"

typedef struct {
  guint iterations;
  gboolean quiet;
} Progress;

static void on_progress(const TlCtReconProgress *p, gpointer data) {
  Progress *pr = data;
  if (!pr->quiet) {
    fprintf(stderr, "ct-recon: iteration %u/%u", p->iteration, pr->iterations);
    if (p->n_subsets > 1) fprintf(stderr, " subset %u/%u", p->subset + 1, p->n_subsets);
    if (!isnan(p->objective)) fprintf(stderr, "  objective %.10g", p->objective);
    if (!isnan(p->rmse)) fprintf(stderr, "  RMSE %.6g", p->rmse);
    fprintf(stderr, "  %.2f s\n", p->seconds);
  }
}

static double rmse(const TlImage *a, const TlImage *b) {
  guint64 n = tl_image_grid_n_voxels(&a->grid);
  double s = 0;
  for (guint64 i = 0; i < n; i++) s += ((double)a->data[i] - b->data[i]) * (a->data[i] - b->data[i]);
  return sqrt(s / n);
}

/* Parallel beam: detector pixels of `mm` (files such as Data Exchange store no size, so
 * their loader assumed 1 mm): rows 0 and 1 of each matrix and the suggested grid scale. */
static gboolean tl_cli_ct_set_pixel_size(TlCtData *d, double mm, GError **error) {
  TlCtGeometry *g = d->geometry;
  const double *P0 = tl_ct_geometry_matrix(g, 0);
  double old = 1.0 / sqrt(P0[0] * P0[0] + P0[1] * P0[1] + P0[2] * P0[2]);
  for (guint k = 0; k < g->n_views; k++) {
    double *P = g->matrices + 12 * (gsize)k;
    for (int r = 0; r < 2; r++)
      for (int i = 0; i < 3; i++) P[4 * r + i] *= old / mm;
  }
  if (d->has_grid)
    for (int i = 0; i < 3; i++) {
      d->grid.voxel_mm[i] *= (float)(mm / old);
      d->grid.origin_mm[i] *= (float)(mm / old);
    }
  return tl_ct_geometry_validate(g, error);
}

/* Parallel beam: keep detector rows [first, end) only, one slice per row: v -> v - first
 * (row 1 of each matrix -= first x row 2) and the suggested grid's z range cut to match. */
static gboolean tl_cli_ct_keep_rows(TlCtData *d, const char *text, GError **error) {
  TlCtGeometry *g = d->geometry;
  guint64 a = 0, b = 0;
  char *end = NULL;
  a = g_ascii_strtoull(text, &end, 10);
  gboolean ok = end != text && *end == ':';
  if (ok) {
    const char *t = end + 1;
    b = g_ascii_strtoull(t, &end, 10);
    ok = end != t && *end == 0;
  }
  if (!ok || a >= b || b > g->det_v) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "--slices '%s': expected FIRST:END with 0 <= FIRST < END <= %u (detector rows)",
                text, g->det_v);
    return FALSE;
  }
  guint nu = g->det_u, nv = (guint)(b - a);
  for (guint k = 0; k < g->n_views; k++) {
    memmove(d->proj + (gsize)k * nv * nu, d->proj + ((gsize)k * g->det_v + a) * nu,
            (gsize)nv * nu * sizeof(float));
    double *P = g->matrices + 12 * (gsize)k;
    for (int i = 0; i < 4; i++) P[4 + i] -= (double)a * P[8 + i];
  }
  g->det_v = nv;
  if (d->has_grid) {
    d->grid.origin_mm[2] += (float)a * d->grid.voxel_mm[2];
    d->grid.dims[2] = nv;
  }
  return tl_ct_geometry_validate(g, error);
}

int tl_cli_ct_recon(int argc, char **argv) {
  g_autofree char *algo = NULL, *projector = NULL, *output = NULL, *truth_path = NULL;
  g_autofree char *grid_text = NULL, *device = NULL, *filter = NULL, *objective = NULL;
  int subsets = 0, iterations = 10, batch = 0;
  double relaxation = 1.0, beta = 0, gamma = NAN, epsilon = NAN;
  g_autofree char *prior = NULL, *centre = NULL, *slices = NULL;
  double pixel_size = 0;
  gboolean profile = FALSE, nonneg = FALSE, quiet = FALSE;
  g_autofree char *algo_reg = tl_cli_registry_help("algorithm", FALSE);
  g_autofree char *algo_help = g_strdup_printf("fdk (default, direct; cone or parallel beam), fbp "
                                               "(direct, parallel beam), or an iterative %s",
                                               algo_reg);
  g_autofree char *prior_help = tl_cli_registry_help("prior", FALSE);
  GOptionEntry entries[] = {
      {"algo", 'a', 0, G_OPTION_ARG_STRING, &algo, algo_help, "ALGO"},
      {"prior", 0, 0, G_OPTION_ARG_STRING, &prior, prior_help, "NAME"},
      {"beta", 0, 0, G_OPTION_ARG_DOUBLE, &beta, "Prior strength beta (default 0)", "B"},
      {"gamma", 0, 0, G_OPTION_ARG_DOUBLE, &gamma, "rdp: gamma >= 0 (default 2)", "G"},
      {"epsilon", 0, 0, G_OPTION_ARG_DOUBLE, &epsilon, "rdp / tv: epsilon > 0 (default 1e-3)",
       "E"},
      {"filter", 'f', 0, G_OPTION_ARG_STRING, &filter,
       "FDK/FBP ramp filter window: ram-lak (default), shepp-logan, hann, cosine", "NAME"},
      {"iterations", 'n', 0, G_OPTION_ARG_INT, &iterations, "Full iterations (default 10)", "N"},
      {"subsets", 's', 0, G_OPTION_ARG_INT, &subsets,
       "Ordered subsets for sart/mlem (default: sart 10, mlem 1)", "S"},
      {"relaxation", 0, 0, G_OPTION_ARG_DOUBLE, &relaxation,
       "SIRT/SART relaxation lambda in (0, 2) (default 1)", "L"},
      {"nonneg", 0, 0, G_OPTION_ARG_NONE, &nonneg, "SIRT/SART: clamp the image at 0", NULL},
      {"projector", 'p', 0, G_OPTION_ARG_STRING, &projector,
       "joseph (default), siddon or raycast", "NAME"},
      {"grid", 'g', 0, G_OPTION_ARG_FILENAME, &grid_text,
       "Image grid (default: the truth's, else the one the scan suggests)", "NXxNYxNZ@MM"},
      {"truth", 't', 0, G_OPTION_ARG_FILENAME, &truth_path,
       "Ground truth image: RMSE after each sub-iteration", "FILE"},
      {"objective", 0, 0, G_OPTION_ARG_STRING, &objective,
       "When to compute the objective: never, iteration (default), subiteration", "WHEN"},
      {"centre", 'c', 0, G_OPTION_ARG_STRING, &centre,
       "Parallel beam: column the rotation axis projects onto, or 'auto' to search it "
       "(default: the file's geometry)", "auto|PIXELS"},
      {"pixel-size", 0, 0, G_OPTION_ARG_DOUBLE, &pixel_size,
       "Parallel beam: detector pixel size in mm for files that store none (default: the "
       "file's, 1 mm for Data Exchange); scales the suggested grid too", "MM"},
      {"slices", 0, 0, G_OPTION_ARG_STRING, &slices,
       "Parallel beam: reconstruct detector rows FIRST to END-1 only (one slice per row)",
       "FIRST:END"},
      {"batch", 0, 0, G_OPTION_ARG_INT, &batch, "FDK: views per batch (default: auto)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "Image to write: .nii, .nii.gz or .raw (required)", "FILE"},
      {"profile", 0, 0, G_OPTION_ARG_NONE, &profile, "Print GPU time per kernel at the end", NULL},
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device,
       "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)", "SEL"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("SCAN - reconstruct a CT scan (.tlct, Data Exchange .h5)");
  g_option_context_add_main_entries(oc, entries, NULL);
  g_option_context_set_description(oc,
      "Example: tomolab-cli ct-recon scan.tlct --algo cgls --iterations 20 -t truth.nii \\\n"
      "           -o img.nii --profile\n"
      "         tomolab-cli ct-recon tooth.h5 --centre auto -o tooth.nii\n"
      "FDK/FBP (ramp filter by FFT where built with VkFFT, voxel-driven back projection) or an\n"
      "iterative solver on the Vulkan device; every vector operation is one fused array expression. Ctrl-C\n"
      "writes the last complete image. Formulas: docs/ct.md.");
  GError *error = NULL;
  if (!tl_cli_reject_zero(argc, argv, "subsets", 's', &error)) return tl_cli_usage_error(VERB, error);
  if (!g_option_context_parse(oc, &argc, &argv, &error)) {
    fprintf(stderr, "tomolab-cli " VERB ": %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (argc != 2 || !output) {
    fprintf(stderr, "tomolab-cli " VERB ": %s\n(see --help)\n",
            argc < 2 ? "a CT scan (.tlct, .h5) is required" : argc > 2 ? "one scan only"
                                                                 : "-o FILE is required");
    return 2;
  }
  /* before any work: no output over an input, every output writable */
  if (!tl_cli_check_outputs((const TlCliFile[]){{"input", argv[1]}, {"--truth", truth_path}}, 2,
                            (const TlCliFile[]){{"-o", output}}, 1, &error))
    return tl_cli_usage_error(VERB, error);
  gboolean fbp = algo && strcmp(algo, "fbp") == 0;
  gboolean fdk = !algo || strcmp(algo, "fdk") == 0 || fbp;
  TlCtReconOptions o;
  tl_ct_recon_options_init(&o);
  TlCtFilter window = TL_CT_FILTER_RAM_LAK;
  const TlAlgorithmClass *ak = fdk ? NULL : tl_registry_algorithm(algo, &error);
  if (!fdk && !ak) return tl_cli_ct_fail(VERB, error);
  if (ak) {
    o.algorithm = tl_algorithm_name(ak);
    /* the old names keep their meaning: sart / mlem with subsets are OS-SART / OSEM */
    tl_ct_algo_from_name(o.algorithm, &o.algo, NULL);
    if (g_str_equal(o.algorithm, "os-sart")) o.algo = TL_CT_SART;
  }
  if (prior && (!ak || !(tl_algorithm_flags(ak) & TL_ALGO_PRIOR))) {
    fprintf(stderr, "tomolab-cli " VERB ": --prior needs --algo osl or bsrem\n");
    return 2;
  }
  if (!prior && (beta != 0 || !isnan(gamma) || !isnan(epsilon))) {
    fprintf(stderr, "tomolab-cli " VERB ": --beta, --gamma and --epsilon need --prior\n");
    return 2;
  }
  o.prior = prior;
  o.beta = beta;
  if (!isnan(gamma)) o.prior_params.gamma = gamma;
  if (!isnan(epsilon)) o.prior_params.epsilon = epsilon;
  if ((prior && !tl_registry_prior(prior, &error)) ||
      (filter && !tl_ct_filter_from_name(filter, &window, &error)) ||
      (projector && !tl_ct_method_from_name(projector, &o.projector, &error)))
    return tl_cli_ct_fail(VERB, error);
  if (iterations < 1 || subsets < 0 || batch < 0) {
    fprintf(stderr, "tomolab-cli " VERB ": --iterations must be >= 1, --subsets and --batch >= 0\n");
    return 2;
  }
  o.iterations = (guint)iterations;
  o.subsets = subsets                                                ? (guint)subsets
              : ak && (tl_algorithm_flags(ak) & TL_ALGO_SUBSETS) && o.algo != TL_CT_MLEM ? 10
                                                                                          : 1;
  o.relaxation = (float)relaxation;
  o.nonnegative = nonneg;
  if (objective) {
    if (strcmp(objective, "never") == 0) o.objective = TL_CT_OBJECTIVE_NEVER;
    else if (strcmp(objective, "subiteration") == 0) o.objective = TL_CT_OBJECTIVE_SUBITERATION;
    else if (strcmp(objective, "iteration") != 0) {
      fprintf(stderr, "tomolab-cli " VERB ": --objective '%s': expected never, iteration or "
                      "subiteration\n", objective);
      return 2;
    }
  }

  double centre_px = NAN;
  gboolean centre_auto = centre && strcmp(centre, "auto") == 0;
  if (centre && !centre_auto) {
    char *end = NULL;
    centre_px = g_ascii_strtod(centre, &end);
    if (!end || *end || end == centre || !isfinite(centre_px)) {
      fprintf(stderr, "tomolab-cli " VERB ": --centre '%s': expected 'auto' or a column number\n",
              centre);
      return 2;
    }
  }
  if (pixel_size < 0 || (pixel_size > 0 && !isfinite(pixel_size))) {
    fprintf(stderr, "tomolab-cli " VERB ": --pixel-size %g: expected a size > 0 mm\n", pixel_size);
    return 2;
  }

  /* "no such file" / "is a directory" before content detection's less direct complaint */
  if (!tl_file_check_input(argv[1], "CT scan", &error)) return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlCtData) d = tl_format_load_kind(argv[1], TL_DATA_CT, &error);
  if (!d) return tl_cli_ct_fail(VERB, error);
  if ((centre || pixel_size > 0 || slices) && d->geometry->beam != TL_CT_PARALLEL) {
    fprintf(stderr, "tomolab-cli " VERB ": --centre, --pixel-size and --slices apply to parallel-beam "
                    "scans; '%s' is cone beam\n", argv[1]);
    return 2;
  }
  if (pixel_size > 0 && !tl_cli_ct_set_pixel_size(d, pixel_size, &error))
    return tl_cli_ct_fail(VERB, error);
  if (slices && !tl_cli_ct_keep_rows(d, slices, &error)) return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlImage) truth = NULL;
  if (truth_path && !(truth = tl_image_load(truth_path, &error))) return tl_cli_ct_fail(VERB, error);
  TlImageGrid grid;
  if (grid_text) {
    if (!tl_cli_parse_grid(grid_text, &grid, &error)) return tl_cli_ct_fail(VERB, error);
  } else if (truth) {
    grid = truth->grid;
  } else if (d->has_grid) {
    grid = d->grid;
  } else {
    fprintf(stderr, "tomolab-cli " VERB ": the scan suggests no grid: give --grid or --truth\n");
    return 2;
  }
  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return tl_cli_ct_fail(VERB, error);
  if (centre_auto) {
    TlCtCentre c;
    guint row = d->geometry->det_v / 2;
    if (!tl_ct_centre_search(ctx, d, row, &c, &error)) return tl_cli_ct_fail(VERB, error);
    /* the result goes to stderr even with --quiet: it is what the run found */
    fprintf(stderr, "ct-recon: centre of rotation %.3f px (sharpness %.6g on row %u; opposed "
            "views guessed %.2f; %u slices tried)\n", c.centre, c.metric, row, c.first_guess,
            c.evaluations);
    centre_px = c.centre;
  }
  if (!isnan(centre_px) &&
      !tl_ct_geometry_shift_u(d->geometry, centre_px - tl_ct_geometry_axis_u(d->geometry), &error))
    return tl_cli_ct_fail(VERB, error);
  const TlCtGeometry *g = d->geometry;
  if (!quiet)
    fprintf(stderr, "ct-recon: %s, %u views of %u x %u, %u x %u x %u voxels of %g x %g x %g mm, "
            "%s on %s\n", g->beam == TL_CT_CONE ? "cone beam" : "parallel beam", g->n_views,
            g->det_u, g->det_v, grid.dims[0], grid.dims[1], grid.dims[2], grid.voxel_mm[0],
            grid.voxel_mm[1], grid.voxel_mm[2],
            fbp ? "FBP" : fdk ? "FDK" : o.algorithm, tl_context_info(ctx)->name);
  g_autoptr(TlArray) proj = tl_ct_data_upload(ctx, d, &error);
  if (!proj) return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlImage) img = NULL;
  g_autoptr(TlProfile) prof = tl_profile_new();
  gint64 t1 = g_get_monotonic_time();
  gboolean cancelled = FALSE;

  if (fdk) {
    g_autoptr(TlCtFdk) f = fbp ? tl_ct_fbp_new(ctx, g, &grid, window, (guint)batch, &error)
                               : tl_ct_fdk_new(ctx, g, &grid, window, (guint)batch, &error);
    g_autoptr(TlArray) x = f ? tl_array_new_float(ctx, tl_image_grid_n_voxels(&grid), &error) : NULL;
    g_autoptr(TlStream) s = x ? tl_stream_new(ctx, &error) : NULL;
    if (!s) return tl_cli_ct_fail(VERB, error);
    tl_stream_set_profile(s, prof);
    img = tl_image_new(&grid);
    if (!tl_ct_fdk_run(f, s, proj, x, &error) || !tl_stream_finish(s, &error) ||
        !tl_array_download(x, img->data, &error))
      return tl_cli_ct_fail(VERB, error);
    if (!quiet && truth && tl_image_grid_equal(&truth->grid, &grid))
      fprintf(stderr, "ct-recon: %s RMSE %.6g\n", fbp ? "FBP" : "FDK", rmse(img, truth));
  } else {
    g_autoptr(TlCtRecon) r = tl_ct_recon_new(ctx, g, &grid, proj, &o, &error);
    if (!r) return tl_cli_ct_fail(VERB, error);
    g_clear_pointer(&proj, tl_array_free); /* copied per subset */
    if (truth && !tl_ct_recon_set_truth(r, truth, &error)) return tl_cli_ct_fail(VERB, error);
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    Progress pr = {o.iterations, quiet};
    tl_ct_recon_set_callback(r, on_progress, &pr);
    tl_ct_recon_set_cancellable(r, cancel);
    /* Ctrl-C: finish nothing more, keep the last complete image and write it. */
    TlCliInterrupt *sigint = tl_cli_interrupt_begin(cancel);
    gboolean ok = tl_ct_recon_run(r, &error);
    tl_cli_interrupt_end(sigint);
    cancelled = !ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    if (!ok && !cancelled) return tl_cli_ct_fail(VERB, error);
    g_clear_error(&error);
    if (cancelled && !quiet)
      fprintf(stderr, "ct-recon: interrupted after %u sub-iterations; writing the last complete "
                      "image\n", tl_ct_recon_sub_iterations(r));
    if (!(img = tl_ct_recon_image(r, &error))) return tl_cli_ct_fail(VERB, error);
    tl_profile_merge(prof, tl_ct_recon_profile(r));
  }
  if (!tl_image_save(img, output, &error)) return tl_cli_ct_fail(VERB, error);
  if (!quiet)
    fprintf(stderr, "ct-recon: done in %.2f s; wrote %s\n", (g_get_monotonic_time() - t1) * 1e-6,
            output);
  if (profile) {
    g_autofree char *table = tl_profile_format(prof);
    printf("%s", table);
  }
  return cancelled ? 130 : 0;
}
