/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Simulation and loading for the window (no GTK here: this runs on worker threads). Files
 * are opened by the library's dataset layer (compute/dataset/): detection, kind and defaults
 * are the CLI's and Python's. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include "tl-dataset.h"
#include "image/tl-phantom.h"
#include "pet/simulate/tl-simulate.h"
#include "pet/data/tl-sinogram.h"
#include "ct/tl-ct-simulate.h"
#include "run/tl-run-spec.h"

static void dataset_clear(gpointer data) {
  TlDocument *d = data;
  g_free(d->name);
  g_free(d->phantom);
  g_free(d->path);
  g_free(d->details);
  tl_dataset_free(d->ds); /* lm, ct, image and bins are its */
  tl_image_free(d->truth);
  tl_image_free(d->mu);
  if (d->mu_file) { /* the phantom's mu-map written for runs (tl_document_mu_file) */
    g_autofree char *dir = g_path_get_dirname(d->mu_file);
    g_unlink(d->mu_file);
    g_rmdir(dir);
    g_free(d->mu_file);
  }
}

/* The document's view of its dataset (the borrowed pointers) and the dataset's grid. */
static void adopt(TlDocument *d, TlDataset *ds) {
  d->ds = ds;
  d->lm = ds->lm;
  d->ct = ds->ct;
  d->image = ds->image;
  d->bins = ds->bins;
  d->bin_counts = ds->bin_counts;
  d->format = ds->format;
  d->grid = ds->grid;
}

const char *tl_document_mu_file(TlDocument *d, GError **error) {
  if (!d->mu) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s has no phantom mu-map: "
                "choose a mu-map file for attenuation correction", d->name);
    return NULL;
  }
  if (d->mu_file) return d->mu_file;
  g_autofree char *dir = g_dir_make_tmp("tomolab-phantom-mu-XXXXXX", error);
  if (!dir) return NULL;
  g_autofree char *path = g_build_filename(dir, "mu.nii", NULL);
  if (!tl_image_save(d->mu, path, error)) { /* NIfTI float32: the same values read back */
    g_rmdir(dir);
    return NULL;
  }
  return d->mu_file = g_steal_pointer(&path);
}

gboolean tl_document_find_centre(TlDocument *d, TlContext *ctx, GError **error) {
  return !d->ds || tl_dataset_find_centre(d->ds, ctx, error);
}

static TlDocument *dataset_new(void) { return g_atomic_rc_box_new0(TlDocument); }
TlDocument *tl_document_ref(TlDocument *d) { return g_atomic_rc_box_acquire(d); }
void tl_document_unref(TlDocument *d) {
  if (d)
    g_atomic_rc_box_release_full(d, dataset_clear);
}

static TlScanner *scanner_named(const char *name, GError **error) {
  for (const char *const *p = tl_scanner_preset_names(); *p; p++)
    if (g_strcmp0(*p, name) == 0)
      return tl_scanner_new_preset(name, error);
  return tl_scanner_load(name, error);
}

gboolean tl_document_iterative(const TlDocument *d) { return d && (d->lm || d->ct); }

double tl_document_events(const TlDocument *d) { return d->ds ? tl_dataset_measurements(d->ds) : 0; }

/* A Shepp-Logan CT scan: exact line integrals of the ellipsoids on a circular orbit. */
static TlDocument *simulate_ct(TlContext *ctx, GVariantDict *dict, GError **error) {
  const char *phantom = "shepp-logan", *beam = "cone";
  guint32 size = 64, views = 90, det = 96;
  double i0 = 0;
  guint64 seed = 1;
  g_variant_dict_lookup(dict, "phantom", "&s", &phantom);
  g_variant_dict_lookup(dict, "beam", "&s", &beam);
  g_variant_dict_lookup(dict, "size", "u", &size);
  g_variant_dict_lookup(dict, "views", "u", &views);
  g_variant_dict_lookup(dict, "detector", "u", &det);
  g_variant_dict_lookup(dict, "i0", "d", &i0);
  g_variant_dict_lookup(dict, "seed", "t", &seed);
  if (!ctx) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, "CT simulation needs the device");
    return NULL;
  }
  size = MAX(size, 4);
  det = MAX(det, 4);
  views = MAX(views, 1);
  gboolean parallel = g_strcmp0(beam, "parallel") == 0;
  TlImageGrid grid = tl_image_grid_centred(size, size, size, 1, 1, 1);
  /* The detector covers 1.5 x the volume's side at the isocentre. */
  double pix_iso = 1.5 * size / det, sid = 4.0 * size, sdd = 6.0 * size;
  TlCtOrbit o;
  if (parallel)
    tl_ct_orbit_init_parallel(&o, views, det, det, pix_iso, pix_iso);
  else
    tl_ct_orbit_init_cone(&o, views, sid, sdd, det, det, pix_iso * sdd / sid, pix_iso * sdd / sid);
  g_autoptr(TlCtGeometry) geom = tl_ct_geometry_new_orbit(&o, error);
  g_autoptr(TlCtPhantom) ph = geom ? tl_ct_phantom_new_preset(phantom, error) : NULL;
  if (!ph)
    return NULL;
  const double scale = 0.02; /* mm^-1: water-like */
  g_autoptr(TlImage) truth = tl_ct_phantom_rasterise(ph, &grid, 2, scale, error);
  if (!truth)
    return NULL;
  TlCtSimOptions so;
  tl_ct_sim_options_init(&so);
  so.i0 = i0;
  so.seed = seed;
  TlCtData *data = tl_ct_simulate_phantom(ctx, geom, ph, &grid, scale, &so, error);
  if (!data)
    return NULL;
  data->has_grid = TRUE;
  data->grid = grid;
  TlDataset *ds = tl_dataset_new_take(TL_DATA_CT, data, NULL, error);
  if (!ds)
    return NULL;
  TlDocument *d = dataset_new();
  adopt(d, ds);
  d->name = g_strdup_printf("%s, %s beam, %u views of %u × %u, %u³ voxels%s", phantom,
                            parallel ? "parallel" : "cone", views, det, det, size,
                            i0 > 0 ? ", noisy" : "");
  d->truth = g_steal_pointer(&truth);
  d->grid = grid;
  return d;
}

TlDocument *tl_document_simulate(TlContext *ctx, GVariant *params, GCancellable *cancel, GError **error) {
  const char *modality = "pet";
  {
    GVariantDict dict;
    g_variant_dict_init(&dict, params);
    g_variant_dict_lookup(&dict, "modality", "&s", &modality);
    if (g_strcmp0(modality, "ct") == 0) {
      TlDocument *d = simulate_ct(ctx, &dict, error);
      g_variant_dict_clear(&dict);
      return d;
    }
    g_variant_dict_clear(&dict);
  }
  const char *phantom = "nema", *scanner_name = "dmi";
  /* the dataset layer's defaults (tl-dataset.h), as the dialog, the demo and the CLI's */
  double events = TL_DATASET_SIM_EVENTS;
  guint64 seed = 1;
  guint32 coarsen = TL_DATASET_PET_COARSEN;
  gboolean attenuation = FALSE, tof = FALSE, scatter = FALSE;
  GVariantDict dict;
  g_variant_dict_init(&dict, params);
  g_variant_dict_lookup(&dict, "phantom", "&s", &phantom);
  g_variant_dict_lookup(&dict, "scanner", "&s", &scanner_name);
  g_variant_dict_lookup(&dict, "events", "d", &events);
  g_variant_dict_lookup(&dict, "seed", "t", &seed);
  g_variant_dict_lookup(&dict, "coarsen", "u", &coarsen);
  g_variant_dict_lookup(&dict, "attenuation", "b", &attenuation);
  g_variant_dict_lookup(&dict, "tof", "b", &tof);
  g_variant_dict_lookup(&dict, "scatter", "b", &scatter); /* Compton scatter: with attenuation */
  g_autofree char *phantom_name = g_strdup(phantom);  /* outlives the dictionary */

  g_autoptr(TlScanner) scanner = scanner_named(scanner_name, error);
  if (!scanner) {
    g_variant_dict_clear(&dict);
    return NULL;
  }
  TlImageGrid grid = tl_dataset_grid_coarsened(scanner, MAX(coarsen, 1));
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset(phantom, &po, &grid, error);
  g_autoptr(TlImage) activity = NULL, mu = NULL;
  g_autofree char *desc = g_strdup_printf("%s on %s, %.3g events, seed %" G_GUINT64_FORMAT "%s%s", phantom,
                                          scanner->name, events, seed, attenuation ? (scatter ? ", attenuated and scattered" : ", attenuated") : "",
                                          tof ? ", TOF" : "");
  g_variant_dict_clear(&dict);
  if (!ph || !tl_phantom_rasterise(ph, &grid, 0, &activity, &mu, error))
    return NULL;
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.seed = seed;
  sp.tof = tof;
  sp.scatter = scatter && attenuation;
  sp.description = desc;
  TlListmode *lm = tl_simulate(scanner, activity, attenuation ? mu : NULL, &sp, NULL, NULL, cancel, NULL, error);
  TlDataset *ds = lm ? tl_dataset_new_take(TL_DATA_PET_LISTMODE, lm, NULL, error) : NULL;
  if (!ds)
    return NULL;
  TlDocument *d = dataset_new();
  adopt(d, ds);
  d->name = g_steal_pointer(&desc);
  d->phantom = g_steal_pointer(&phantom_name);
  d->truth = g_steal_pointer(&activity);
  d->mu = g_steal_pointer(&mu);
  d->attenuated = attenuation;
  d->grid = grid;
  return d;
}

TlDocument *tl_document_load(const char *path, GError **error) {
  TlDataset *ds = tl_dataset_open(path, error);
  if (!ds)
    return NULL;
  TlDocument *d = dataset_new();
  adopt(d, ds);
  d->path = g_strdup(path);
  d->name = g_path_get_basename(path);
  /* what `tomolab-cli info` says of the data, then the dataset's defaults */
  GString *details = g_string_new(NULL);
  TlDataKind kinds[] = {TL_DATA_IMAGE, TL_DATA_PET_LISTMODE, TL_DATA_PET_SINOGRAM, TL_DATA_CT};
  if (ds->kind != TL_DATASET_PET_BINS) /* the sinogram itself is not kept */
    tl_data_describe(kinds[ds->kind], ds->kind == TL_DATASET_IMAGE ? (gpointer)ds->image
                                      : ds->kind == TL_DATASET_CT  ? (gpointer)ds->ct
                                                                   : (gpointer)ds->lm,
                     details);
  else if (ds->arc) /* arc-corrected: the sinogram is kept, its STIR fields shown */
    tl_sinogram_describe(ds->arc, details);
  tl_dataset_describe(ds, details);
  d->details = g_string_free(details, FALSE);
  return d;
}

/* An opened image: uploaded once; there is nothing to iterate. */
typedef struct {
  TlJob parent;
  TlArray *array;
} TlImageJob;

static gboolean image_step(TlJob *job, GCancellable *cancel, TlJobStep *out, GError **error) {
  g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
              "An opened image has nothing to reconstruct; open or simulate list-mode or CT data");
  return FALSE;
}
static const TlArray *image_array(TlJob *job) { return ((TlImageJob *)job)->array; }
static void image_free(TlJob *job) {
  tl_array_free(((TlImageJob *)job)->array);
  g_free(job);
}
static const TlJobVTable kImageJob = {image_step, image_array, image_free};

/* The run's centre of rotation (CT parallel beam), as ct-recon reads the key: a column given,
 * "auto" searched, else the dataset's (searched once for formats that store none). The
 * geometry moves there; the dataset keeps it for the next job. */
static gboolean ct_centre(const TlDocument *d, TlContext *ctx, const TlRunSpec *run, GError **error) {
  TlDataset *ds = d->ds;
  if (run->centre && g_str_equal(run->centre, "auto"))
    return tl_dataset_search_centre(ds, ctx, error);
  if (!tl_document_find_centre((TlDocument *)d, ctx, error))
    return FALSE;
  double c = run->centre ? g_ascii_strtod(run->centre, NULL) : NAN; /* checked by the run */
  if (isfinite(c) && !(ds->allows & TL_DATASET_ALLOWS_CENTRE)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "centre = %s: %s is not parallel-beam "
                "CT data (no centre of rotation to set)", run->centre, d->name);
    return FALSE;
  }
  return !isfinite(c) || fabs(c - ds->centre) <= 1e-9 || tl_dataset_set_centre(ds, c, error);
}

/* The grid of a run as the CLI chooses it: the run's grid, else its truth's, else its
 * attenuation map's, else the dataset's. */
static gboolean run_grid(const TlDocument *d, const TlRunSpec *run, const TlImage *truth,
                         const TlImage *mu, TlImageGrid *grid, GError **error) {
  *grid = truth ? truth->grid : mu ? mu->grid : d->grid;
  if (run->grid && !tl_run_parse_grid_any(run->grid, grid, error)) return FALSE;
  /* The window shows a volume as one image (its views, the job's one device array): a grid
   * beyond TlImage's 2^28 voxels (1 GiB, within the 2^30-byte allocation every Vulkan
   * device grants) is refused here; the CLI and Python run it in z-slabs. */
  guint64 nvox = tl_image_grid_n_voxels(grid);
  if (nvox > TL_IMAGE_MAX_VOXELS) {
    g_set_error(error, TL_ERROR, TL_ERROR_OUT_OF_MEMORY,
                "grid = %s: %" G_GUINT64_FORMAT " voxels (%" G_GUINT64_FORMAT " bytes); the "
                "window shows at most 2^28 voxels (%" G_GUINT64_FORMAT " bytes) as one image; "
                "reconstruct it with tomolab-cli ct-recon or Python's tomolab.fdk (z-slabs, "
                "docs/ct.md)", run->grid, nvox, 4 * nvox, 4 * TL_IMAGE_MAX_VOXELS);
    return FALSE;
  }
  if (truth && !tl_image_grid_equal(&truth->grid, grid)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "grid = %s differs from the grid of the "
                "truth %s", run->grid, run->truth);
    return FALSE;
  }
  return TRUE;
}

TlJob *tl_document_new_job(const TlDocument *d, TlContext *ctx, const TlRunSpec *run,
                           GError **error) {
  if (tl_document_iterative(d) && run->modality != (d->ct ? TL_RUN_CT : TL_RUN_PET)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "modality = %s: %s holds %s",
                run->modality == TL_RUN_CT ? "ct" : "pet", d->name,
                tl_dataset_kind_name(d->ds->kind));
    return NULL;
  }
  /* subsets left to the run (auto): the dataset's, as in the CLI */
  g_autoptr(TlRunSpec) r = tl_run_spec_copy(run);
  if (tl_document_iterative(d) && !tl_run_algorithm_direct(tl_run_spec_algorithm(r)) &&
      !r->subsets && tl_run_spec_subsets(r) > 1)
    r->subsets = d->ds->subsets;
  TlImageGrid grid;
  /* the run's truth (RMSE; its grid is the run's), else a simulation's on its grid */
  g_autoptr(TlImage) file_truth = NULL;
  if (r->truth && !(file_truth = tl_image_load(r->truth, error))) {
    g_prefix_error(error, "truth = %s: ", r->truth);
    return NULL;
  }
  if (d->ct) {
    if (!ct_centre(d, ctx, r, error) || !run_grid(d, r, file_truth, NULL, &grid, error))
      return NULL;
    const TlImage *truth = file_truth ? file_truth
                           : d->truth && tl_image_grid_equal(&d->truth->grid, &grid) ? d->truth
                                                                                      : NULL;
    return tl_ct_job_new(ctx, d->ct, truth, &grid, r, error);
  }
  if (d->lm) {
    g_autoptr(TlImage) file_mu = NULL;
    const TlImage *mu = NULL;
    if (r->attenuation) {
      if (!(file_mu = tl_image_load(r->attenuation, error))) {
        g_prefix_error(error, "attenuation = %s: ", r->attenuation);
        return NULL;
      }
      mu = file_mu;
    }
    if (!run_grid(d, r, file_truth, r->attenuation ? mu : NULL, &grid, error))
      return NULL;
    const TlImage *truth = file_truth ? file_truth
                           : d->truth && tl_image_grid_equal(&d->truth->grid, &grid) ? d->truth
                                                                                      : NULL;
    /* arc-corrected bins, or crystal pairs with several rays: lines (the CLI's choice) */
    const TlSinogram *lines =
        d->ds ? tl_dataset_lines(d->ds, r->rays_tangential, r->rays_axial) : NULL;
    return tl_pet_job_new(ctx, d->lm, d->bins, lines, truth, mu, &grid, r, error);
  }
  guint64 n = tl_image_grid_n_voxels(&d->grid);
  TlArray *a = tl_array_new_float(ctx, n, error);
  if (!a || !tl_array_upload(a, d->image->data, error)) {
    if (a)
      tl_array_free(a);
    return NULL;
  }
  TlImageJob *j = g_new0(TlImageJob, 1);
  j->parent = (TlJob){&kImageJob, d->grid, 1, 0};
  g_strlcpy(j->parent.unit, d->image->unit, sizeof j->parent.unit); /* NIfTI's descrip, DICOM's */
  j->array = a;
  return &j->parent;
}
