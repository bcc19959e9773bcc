/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli ct-simulate: a CT scan of a phantom into a .tlct file (docs/formats.md "CT"). */
#include "tl-cli-ct-common.h"
#include "ct/tl-ct-simulate.h"
#include "image/tl-phantom.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERB "ct-simulate"

static gboolean is_ct_preset(const char *name) {
  for (const char *const *p = tl_ct_phantom_preset_names(); *p; p++)
    if (strcmp(*p, name) == 0) return TRUE;
  return FALSE;
}

static gboolean is_pet_preset(const char *name) {
  for (const char *const *p = tl_phantom_preset_names(); *p; p++)
    if (strcmp(*p, name) == 0) return TRUE;
  return FALSE;
}

/* A detector that sees the whole volume from every angle of a circular orbit about z, with
 * pixels about one voxel wide at the isocentre. */
static void auto_detector(const TlImageGrid *g, TlCtOrbit *o, gboolean set_pixel) {
  double hx = 0.5 * g->dims[0] * g->voxel_mm[0], hy = 0.5 * g->dims[1] * g->voxel_mm[1];
  double hz = 0.5 * g->dims[2] * g->voxel_mm[2], r = sqrt(hx * hx + hy * hy);
  double mag = o->beam == TL_CT_CONE ? o->sdd_mm / (o->sid_mm - r) : 1.0;
  if (set_pixel) {
    double m0 = o->beam == TL_CT_CONE ? o->sdd_mm / o->sid_mm : 1.0;
    o->pixel_u_mm = g->voxel_mm[0] * m0;
    o->pixel_v_mm = g->voxel_mm[2] * m0;
  }
  if (!o->det_u) o->det_u = (guint)ceil(2 * r * mag / o->pixel_u_mm) + 2;
  /* parallel beam: one row per slice (a 2-D scan for a one-slice grid) */
  if (!o->det_v)
    o->det_v = o->beam == TL_CT_CONE ? (guint)ceil(2 * hz * mag / o->pixel_v_mm) + 2
                                     : (guint)ceil(2 * hz / o->pixel_v_mm - 1e-9);
}

int tl_cli_ct_simulate(int argc, char **argv) {
  g_autofree char *phantom = NULL, *output = NULL, *grid_text = NULL, *beam = NULL;
  g_autofree char *detector = NULL, *pixel = NULL, *offset = NULL, *geometry_path = NULL;
  g_autofree char *projector = NULL, *truth_path = NULL, *save_geometry = NULL, *device = NULL;
  int views = 180;
  double arc = NAN, start = 0, sid = 500, sdd = 800, scale = NAN, i0 = 0, emission = 0;
  gint64 seed = 1;
  gboolean keep_counts = FALSE, quiet = FALSE;
  GOptionEntry entries[] = {
      {"phantom", 'p', 0, G_OPTION_ARG_STRING, &phantom,
       "shepp-logan, modified-shepp-logan (default), ball; a PET phantom's mu-map (nema, "
       "cylinder, ...); or an image file (.nii, .raw) in mm^-1", "NAME|FILE"},
      {"scale", 0, 0, G_OPTION_ARG_DOUBLE, &scale,
       "Attenuation per unit of the phantom, mm^-1 (default 0.02 for the ellipsoid phantoms, "
       "2 for PET mu-maps at 511 keV, 1 for files)", "X"},
      {"grid", 'g', 0, G_OPTION_ARG_FILENAME, &grid_text, /* bytes as given: quoted in messages */
       "Volume grid (default 128x128x128@1)", "NXxNYxNZ@MM"},
      {"beam", 0, 0, G_OPTION_ARG_STRING, &beam, "cone (default) or parallel", "BEAM"},
      {"views", 'n', 0, G_OPTION_ARG_INT, &views, "Views (default 180)", "N"},
      {"arc", 0, 0, G_OPTION_ARG_DOUBLE, &arc, "Arc in degrees (default 360 cone, 180 parallel)",
       "DEG"},
      {"start", 0, 0, G_OPTION_ARG_DOUBLE, &start, "Angle of the first view (default 0)", "DEG"},
      {"sid", 0, 0, G_OPTION_ARG_DOUBLE, &sid, "Source-isocentre distance (default 500)", "MM"},
      {"sdd", 0, 0, G_OPTION_ARG_DOUBLE, &sdd, "Source-detector distance (default 800)", "MM"},
      {"detector", 0, 0, G_OPTION_ARG_STRING, &detector,
       "Detector columns x rows (default: covers the volume)", "NUxNV"},
      {"pixel", 0, 0, G_OPTION_ARG_STRING, &pixel,
       "Pixel size (default: one voxel at the isocentre)", "MM[,MM]"},
      {"offset", 0, 0, G_OPTION_ARG_STRING, &offset, "Detector offsets along u, v", "MM,MM"},
      {"geometry", 0, 0, G_OPTION_ARG_FILENAME, &geometry_path,
       "Projection matrices from a geometry file instead of an orbit", "FILE"},
      {"projector", 0, 0, G_OPTION_ARG_STRING, &projector,
       "analytic (default for ellipsoid phantoms: exact line integrals), joseph (default for "
       "images), siddon or raycast", "NAME"},
      {"i0", 0, 0, G_OPTION_ARG_DOUBLE, &i0,
       "Incident photons per pixel: Poisson noise (Beer-Lambert), then -log(I/I0)", "N"},
      {"keep-counts", 0, 0, G_OPTION_ARG_NONE, &keep_counts,
       "With --i0: store the counts, not line integrals", NULL},
      {"emission", 0, 0, G_OPTION_ARG_DOUBLE, &emission,
       "Emission data instead: Poisson(S x line integral) / S (for MLEM)", "S"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Noise seed (default 1)", "N"},
      {"truth", 't', 0, G_OPTION_ARG_FILENAME, &truth_path,
       "Also write the phantom on the grid (.nii, .nii.gz, .raw)", "FILE"},
      {"save-geometry", 0, 0, G_OPTION_ARG_FILENAME, &save_geometry,
       "Also write the projection matrices as a geometry file", "FILE"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "The scan (.tlct, required)", "FILE"},
      {"device", 'd', 0, G_OPTION_ARG_STRING, &device,
       "Device index or name substring (default: $TOMOLAB_DEVICE, else the best ranked)", "SEL"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
      {NULL}};
  static const char description[] =
      "Example: tomolab-cli ct-simulate --grid 64x64x64@1 --views 180 --sid 200 --sdd 300 \\\n"
      "           --i0 1e5 --truth truth.nii -o scan.tlct\n"
      "Projections of a phantom on a circular orbit about z (or any projection matrices), with\n"
      "optional Poisson noise. File format: docs/formats.md, section CT.";
  GError *error = NULL;
  if (!tl_cli_parse_options("- simulate a CT scan", entries, description,
                            &argc, &argv, &error)) {
    fprintf(stderr, "tomolab-cli " VERB ": %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (argc != 1 || !output) {
    fprintf(stderr, "tomolab-cli " VERB ": %s\n(see --help)\n",
            argc != 1 ? "unexpected argument" : "-o FILE is required");
    return 2;
  }
  const char *ph_name = phantom ? phantom : "modified-shepp-logan";
  gboolean ellipsoids = is_ct_preset(ph_name), pet = !ellipsoids && is_pet_preset(ph_name);
  const TlCliFile in[] = {{"--phantom", ellipsoids || pet ? NULL : ph_name},
                          {"--geometry", geometry_path}};
  const TlCliFile out[] = {{"-o", output}, {"--truth", truth_path}, {"--save-geometry", save_geometry}};
  if (!tl_cli_check_outputs(in, G_N_ELEMENTS(in), out, G_N_ELEMENTS(out), &error))
    return tl_cli_usage_error(VERB, error);

  TlImageGrid grid = tl_image_grid_centred(128, 128, 128, 1, 1, 1);
  if (grid_text && !tl_cli_parse_grid(grid_text, &grid, &error))
    return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlImage) image = NULL;
  if (!ellipsoids && !pet) {
    if (!(image = tl_cli_load_image(ph_name, &error))) return tl_cli_ct_fail(VERB, error);
    grid = image->grid;
  }

  g_autoptr(TlCtGeometry) g = NULL;
  if (geometry_path) {
    if (!(g = tl_ct_geometry_load(geometry_path, &error))) return tl_cli_ct_fail(VERB, error);
  } else {
    TlCtOrbit o;
    gboolean parallel = beam && strcmp(beam, "parallel") == 0;
    if (beam && !parallel && strcmp(beam, "cone") != 0) {
      fprintf(stderr, "tomolab-cli " VERB ": --beam '%s': expected cone or parallel\n", beam);
      return 2;
    }
    if (views < 1) {
      fprintf(stderr, "tomolab-cli " VERB ": --views must be >= 1\n");
      return 2;
    }
    if (parallel) tl_ct_orbit_init_parallel(&o, views, 0, 0, 1, 1);
    else tl_ct_orbit_init_cone(&o, views, sid, sdd, 0, 0, 1, 1);
    if (!isnan(arc)) o.arc_deg = arc;
    o.start_deg = start;
    double two[2];
    if (pixel) {
      if (!tl_cli_ct_parse_pair("--pixel", pixel, two, &error)) return tl_cli_ct_fail(VERB, error);
      o.pixel_u_mm = two[0], o.pixel_v_mm = two[1];
    }
    if (detector) {
      if (!tl_cli_ct_parse_pair("--detector", detector, two, &error))
        return tl_cli_ct_fail(VERB, error);
      if (!(two[0] >= 0 && two[1] >= 0 && two[0] < 1e6 && two[1] < 1e6)) two[0] = two[1] = 0;
      o.det_u = (guint)two[0], o.det_v = (guint)two[1];
      if (!o.det_u || !o.det_v) {
        fprintf(stderr, "tomolab-cli " VERB ": --detector '%s': needs at least 1 x 1 pixels\n",
                detector);
        return 2;
      }
    }
    if (offset) {
      if (!tl_cli_ct_parse_pair("--offset", offset, two, &error)) return tl_cli_ct_fail(VERB, error);
      o.offset_u_mm = two[0], o.offset_v_mm = two[1];
    }
    auto_detector(&grid, &o, !pixel);
    if (!(g = tl_ct_geometry_new_orbit(&o, &error))) return tl_cli_ct_fail(VERB, error);
  }

  TlCtSimOptions so;
  tl_ct_sim_options_init(&so);
  so.i0 = i0, so.keep_counts = keep_counts, so.emission_scale = emission;
  so.seed = (guint64)seed;
  gboolean analytic = ellipsoids && (!projector || strcmp(projector, "analytic") == 0);
  if (projector && !analytic && !tl_ct_method_from_name(projector, &so.projector, &error))
    return tl_cli_ct_fail(VERB, error);
  if (isnan(scale)) scale = ellipsoids ? 0.02 : pet ? 2.0 : 1.0;

  g_autoptr(TlContext) ctx = tl_context_new(device, &error);
  if (!ctx) return tl_cli_ct_fail(VERB, error);
  g_autoptr(TlCtPhantom) ell = ellipsoids ? tl_ct_phantom_new_preset(ph_name, &error) : NULL;
  if (ellipsoids && !ell) return tl_cli_ct_fail(VERB, error);
  if (!image && (!analytic || truth_path)) {
    image = ellipsoids ? tl_ct_phantom_rasterise(ell, &grid, 2, scale, &error)
                       : tl_ct_phantom_mu_map(ph_name, &grid, scale, &error);
    if (!image) return tl_cli_ct_fail(VERB, error);
  } else if (image && scale != 1.0) {
    for (guint64 i = 0; i < tl_image_grid_n_voxels(&grid); i++) image->data[i] *= (float)scale;
  }
  if (!quiet)
    fprintf(stderr, "ct-simulate: %s, %u views of %u x %u, %u x %u x %u voxels of %g mm, %s on %s\n",
            g->beam == TL_CT_CONE ? "cone beam" : "parallel beam", g->n_views, g->det_u, g->det_v,
            grid.dims[0], grid.dims[1], grid.dims[2], grid.voxel_mm[0],
            analytic ? "exact line integrals" : tl_ct_method_name(so.projector),
            tl_context_info(ctx)->name);
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(TlCtData) d = analytic ? tl_ct_simulate_phantom(ctx, g, ell, &grid, scale, &so, &error)
                                   : tl_ct_simulate_image(ctx, g, image, &so, &error);
  if (!d) return tl_cli_ct_fail(VERB, error);
  g_autofree char *noise = d->description;
  d->description = g_strdup_printf("phantom=%s scale=%g projector=%s%s%s", ph_name, scale,
                                   analytic ? "analytic" : tl_ct_method_name(so.projector),
                                   noise ? " " : "", noise ? noise : "");
  if (!tl_ct_data_save(d, output, &error) ||
      (truth_path && !tl_cli_save_image(image, truth_path, &error)) ||
      (save_geometry && !tl_ct_geometry_save(g, save_geometry, &error)))
    return tl_cli_ct_fail(VERB, error);
  if (!quiet)
    fprintf(stderr, "ct-simulate: wrote %s in %.2f s\n", output, (g_get_monotonic_time() - t0) * 1e-6);
  return 0;
}
