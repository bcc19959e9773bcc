/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDataset: a file opened through the format table, typed, with its defaults (tl-dataset.h). */
#include "dataset/tl-dataset.h"
#include "image/tl-file.h"
#include "pet/data/tl-sinogram.h"
#include "ct/tl-ct-formats.h"
#include <math.h>


const char *tl_dataset_kind_name(TlDatasetKind kind) {
  switch (kind) {
  case TL_DATASET_IMAGE: return "image";
  case TL_DATASET_PET_LISTMODE: return "PET list mode";
  case TL_DATASET_PET_BINS: return "PET bins (sinogram)";
  case TL_DATASET_CT: return "CT projections";
  default: return "unknown";
  }
}

TlImageGrid tl_dataset_grid_coarsened(const TlScanner *scanner, guint factor) {
  TlImageGrid g = tl_scanner_default_grid(scanner);
  if (factor <= 1) return g;
  guint n[3];
  for (int k = 0; k < 3; k++) {
    n[k] = (g.dims[k] + factor - 1) / factor;
    /* the fine grid's parity: an odd count puts a voxel centre, not a voxel plane, on the axis,
     * and crystals on a plane through the axis (the mMR's at x = 0) would cost the sensitivity
     * image its mirror symmetries (pet/tl-sensitivity-sym.c): 615 s instead of about a minute
     * for the mMR on lavapipe */
    if ((n[k] & 1) != (g.dims[k] & 1)) n[k]++;
  }
  return tl_image_grid_centred(n[0], n[1], n[2], g.voxel_mm[0] * factor, g.voxel_mm[1] * factor,
                               g.voxel_mm[2] * factor);
}

TlImageGrid tl_dataset_pet_grid(const TlScanner *scanner) {
  return tl_dataset_grid_coarsened(scanner, TL_DATASET_PET_COARSEN);
}

void tl_dataset_free(TlDataset *ds) {
  if (!ds) return;
  g_free(ds->path);
  tl_image_free(ds->image);
  tl_listmode_free(ds->lm);
  if (ds->bins) g_array_unref(ds->bins);
  tl_ct_data_free(ds->ct);
  tl_sinogram_free(ds->arc);
  tl_sinogram_free(ds->pair_sinogram);
  g_free(ds);
}

static void pet_defaults(TlDataset *ds) {
  const TlListmode *lm = ds->lm;
  ds->grid = tl_dataset_pet_grid(lm->scanner);
  ds->start_s = lm->start_s;
  ds->duration_s = lm->duration_s;
  ds->allows |= TL_DATASET_ALLOWS_ATTENUATION | TL_DATASET_ALLOWS_NORM;
  if (lm->n_delayed > 0) ds->allows |= TL_DATASET_ALLOWS_RANDOMS_DELAYEDS;
  if (lm->singles) ds->allows |= TL_DATASET_ALLOWS_RANDOMS_SINGLES;
  if (lm->has_tof && lm->scanner->tof_bins > 0) {
    ds->allows |= TL_DATASET_ALLOWS_TOF;
    ds->tof_bins = lm->scanner->tof_bins;
  }
  if (lm->duration_s > 0) ds->allows |= TL_DATASET_ALLOWS_QUANT;
  ds->subsets = tl_dataset_pet_subsets(ds->bins || ds->arc ? ds->bin_counts : (double)lm->n_events);
  /* arc-corrected lines: no crystal pairs for a normalisation yet, and subsets by view
   * (tl_pet_lines_operator_new_arc), at most one per view */
  if (ds->arc) {
    ds->allows &= ~(guint)TL_DATASET_ALLOWS_NORM;
    ds->subsets = MIN(ds->subsets, ds->arc->n_views);
  }
}

guint tl_dataset_pet_subsets(double counts) {
  if (!isfinite(counts) || !(counts >= TL_DATASET_EVENTS_PER_SUBSET)) return 1;
  double k = floor(counts / TL_DATASET_EVENTS_PER_SUBSET);
  return k >= TL_DATASET_SUBSETS ? TL_DATASET_SUBSETS : (guint)k;
}

static void ct_defaults(TlDataset *ds) {
  const TlCtData *d = ds->ct;
  if (d->has_grid) {
    ds->grid = d->grid;
  } else {
    guint n = MAX(d->geometry->det_u * 2 / 3, 4);
    ds->grid = tl_image_grid_centred(n, n, n, 1, 1, 1);
  }
  ds->subsets = MIN(TL_DATASET_SUBSETS, MAX(d->geometry->n_views, 1));
  ds->centre = NAN;
  if (d->geometry->beam == TL_CT_PARALLEL) {
    ds->allows |= TL_DATASET_ALLOWS_CENTRE;
    ds->centre = tl_ct_geometry_axis_u(d->geometry);
  }
  /* Data Exchange and TIFF stacks store no centre: their readers put the middle column */
  ds->centre_known = ds->format != &tl_format_dxchange && ds->format != &tl_format_tiff_stack;
}

static TlDataset *dataset_new(TlDataKind kind, gpointer data, const char *path,
                              const TlFormatClass *format, GError **error) {
  g_autoptr(TlDataset) ds = g_new0(TlDataset, 1);
  ds->path = g_strdup(path);
  ds->format = format;
  ds->centre = NAN;
  switch (kind) {
  case TL_DATA_IMAGE:
    ds->kind = TL_DATASET_IMAGE;
    ds->image = data;
    ds->grid = ds->image->grid;
    ds->subsets = 1;
    break;
  case TL_DATA_PET_LISTMODE:
    ds->kind = TL_DATASET_PET_LISTMODE;
    ds->lm = data;
    pet_defaults(ds);
    break;
  case TL_DATA_PET_SINOGRAM: {
    /* reconstructed binned: its crystal pairs on its cylindrical scanner */
    g_autoptr(TlSinogram) s = data;
    ds->kind = TL_DATASET_PET_BINS;
    TlScanner *sc = tl_sinogram_scanner(s, error);
    if (!sc) return NULL;
    ds->lm = tl_listmode_new(sc, 0);
    if (s->arc_corrected) {
      /* lines, not crystal pairs: the sinogram is kept for the pet-lines operator */
      double total = 0;
      for (guint64 i = 0; i < s->n_bins; i++) {
        if (!(s->data[i] >= 0) || !isfinite(s->data[i])) {
          g_autofree char *q = path ? tl_text_quote(path, -1, 200) : g_strdup("(data)");
          g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': arc-corrected bin %" G_GUINT64_FORMAT
                      " holds %g (expected counts: finite, >= 0)", q, i, s->data[i]);
          return NULL;
        }
        total += s->data[i];
      }
      ds->bin_counts = total;
      ds->arc = g_steal_pointer(&s);
      pet_defaults(ds);
      break;
    }
    if (!(ds->bins = tl_sinogram_to_bins(s, FALSE, error))) return NULL;
    for (guint i = 0; i < ds->bins->len; i++) ds->bin_counts += g_array_index(ds->bins, TlBin, i).count;
    /* kept for rays per pair (tl_dataset_lines): 4 bytes a bin beside the bins' 12 a counted
     * pair, rather than reading the file again when a run asks for rays */
    ds->pair_sinogram = g_steal_pointer(&s);
    pet_defaults(ds);
    break;
  }
  case TL_DATA_CT:
    ds->kind = TL_DATASET_CT;
    ds->ct = data;
    ct_defaults(ds);
    break;
  default: {
    g_autofree char *q = path ? tl_text_quote(path, -1, 200) : g_strdup("(data)");
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "'%s' holds %s: expected an image, PET list mode, a PET sinogram or CT "
                "projections", q, tl_data_kind_name(kind));
    tl_data_free(kind, data);
    return NULL;
  }
  }
  return g_steal_pointer(&ds);
}

TlDataset *tl_dataset_new_take(TlDataKind kind, gpointer data, const char *path, GError **error) {
  return dataset_new(kind, data, path, NULL, error);
}

TlDataset *tl_dataset_open(const char *path, GError **error) {
  TlDataKind kind;
  const TlFormatClass *format = NULL;
  gpointer data = tl_format_load_any(path, &kind, &format, error);
  if (!data) return NULL;
  return dataset_new(kind, data, path, format, error);
}

gboolean tl_dataset_needs_centre(const TlDataset *ds) {
  return ds->kind == TL_DATASET_CT && (ds->allows & TL_DATASET_ALLOWS_CENTRE) &&
         !ds->centre_known && !ds->centre_found;
}

gboolean tl_dataset_set_centre(TlDataset *ds, double centre, GError **error) {
  if (!(ds->allows & TL_DATASET_ALLOWS_CENTRE)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation %g: %s holds %s%s, which has no centre to set", centre,
                ds->path ? ds->path : "the data", tl_dataset_kind_name(ds->kind),
                ds->kind == TL_DATASET_CT ? " in cone beam" : "");
    return FALSE;
  }
  double nu = ds->ct->geometry->det_u;
  if (!isfinite(centre) || centre < 0 || centre > nu - 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation %g: expected a detector column in [0, %g]", centre, nu - 1);
    return FALSE;
  }
  if (!tl_ct_geometry_shift_u(ds->ct->geometry, centre - tl_ct_geometry_axis_u(ds->ct->geometry),
                              error))
    return FALSE;
  ds->centre = centre;
  ds->centre_known = TRUE; /* a user's value or the search's: find_centre keeps it */
  return TRUE;
}

gboolean tl_dataset_search_centre(TlDataset *ds, TlContext *ctx, GError **error) {
  if (ds->centre_found) return TRUE;
  if (!(ds->allows & TL_DATASET_ALLOWS_CENTRE)) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "centre of rotation search: %s holds %s%s; the search is for parallel-beam CT",
                ds->path ? ds->path : "the data", tl_dataset_kind_name(ds->kind),
                ds->kind == TL_DATASET_CT ? " in cone beam" : "");
    return FALSE;
  }
  TlCtCentre c;
  /* the middle row: the search's one slice, as the CLI's --centre auto always used */
  guint row = ds->ct->geometry->det_v / 2;
  if (!tl_ct_centre_search(ctx, ds->ct, row, &c, error) || !tl_dataset_set_centre(ds, c.centre, error))
    return FALSE;
  ds->search = c;
  ds->centre_found = TRUE;
  return TRUE;
}

gboolean tl_dataset_find_centre(TlDataset *ds, TlContext *ctx, GError **error) {
  return !tl_dataset_needs_centre(ds) || tl_dataset_search_centre(ds, ctx, error);
}

void tl_dataset_update_defaults(TlDataset *ds) {
  gboolean known = ds->centre_known;
  ds->allows = 0;
  if (ds->kind == TL_DATASET_CT) ct_defaults(ds); /* the centre: the geometry's axis, moved or not */
  else if (ds->kind != TL_DATASET_IMAGE) pet_defaults(ds);
  else ds->grid = ds->image->grid;
  ds->centre_known |= known; /* a centre set or found stays: find_centre must not search again */
}

const TlSinogram *tl_dataset_lines(const TlDataset *ds, guint rays_t, guint rays_z) {
  if (ds->arc) return ds->arc;
  return MAX(rays_t, 1) * MAX(rays_z, 1) > 1 ? ds->pair_sinogram : NULL;
}

double tl_dataset_measurements(const TlDataset *ds) {
  switch (ds->kind) {
  case TL_DATASET_PET_LISTMODE: return (double)ds->lm->n_events;
  case TL_DATASET_PET_BINS: return ds->bin_counts;
  case TL_DATASET_CT: return (double)tl_ct_data_n_values(ds->ct);
  default: return 0;
  }
}

void tl_dataset_describe(const TlDataset *ds, GString *out) {
  g_string_append_printf(out, "dataset: %s\n", tl_dataset_kind_name(ds->kind));
  if (ds->format) g_string_append_printf(out, "format: %s\n", ds->format->name);
  if (ds->duration_s > 0)
    g_string_append_printf(out, "frame: %g s from %g s\n", ds->duration_s, ds->start_s);
  static const char *const names[] = {"randoms from delayeds", "randoms from singles", "TOF",
                                      "attenuation", "normalisation", "Bq/mL", "centre of rotation"};
  GString *a = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (ds->allows & (1u << i)) g_string_append_printf(a, "%s%s", a->len ? ", " : "", names[i]);
  if (a->len) g_string_append_printf(out, "allows: %s\n", a->str);
  g_string_free(a, TRUE);
  const TlImageGrid *g = &ds->grid;
  g_string_append_printf(out, "default grid: %u x %u x %u voxels of %g x %g x %g mm\n",
                         g->dims[0], g->dims[1], g->dims[2], g->voxel_mm[0], g->voxel_mm[1],
                         g->voxel_mm[2]);
  if (ds->kind != TL_DATASET_IMAGE)
    g_string_append_printf(out, "default subsets: %u\n", ds->subsets);
  if (!isnan(ds->centre))
    g_string_append_printf(out, "centre of rotation: %.3f px (%s)\n", ds->centre,
                           ds->centre_found ? "searched"
                           : ds->centre_known ? "the file's geometry"
                                              : "the middle column until searched");
}

gboolean tl_dataset_info(const char *path, gboolean defaults, GString *out, GError **error) {
  if (!tl_format_describe_file(path, out, error)) return FALSE;
  const TlFormatClass *f = tl_format_detect(path, error);
  if (!f) return FALSE;
  gboolean data = f->kind == TL_DATA_IMAGE || f->kind == TL_DATA_PET_LISTMODE ||
                  f->kind == TL_DATA_PET_SINOGRAM || f->kind == TL_DATA_CT;
  if (data) {
    g_autoptr(TlDataset) ds = tl_dataset_open(path, error);
    if (!ds) {
      g_prefix_error(error, "does not load: ");
      return FALSE;
    }
    if (defaults) tl_dataset_describe(ds, out);
    return TRUE;
  }
  if (defaults) {
    g_autofree char *q = tl_text_quote(path, -1, 200);
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG, "--defaults: '%s' holds %s, not data a "
                "reconstruction reads", q, tl_data_kind_name(f->kind));
    return FALSE;
  }
  if (!f->describe) return TRUE; /* the description above loaded it already */
  gpointer loaded = f->load(path, error);
  if (!loaded) {
    g_prefix_error(error, "does not load: ");
    return FALSE;
  }
  tl_data_free(f->kind, loaded);
  return TRUE;
}
