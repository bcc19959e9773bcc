/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli calibrate: the calibration factor F of pet/tl-units.h from a reconstruction of a
 * known, uniform concentration (a phantom scan, or a simulation of one), measured as the mean
 * over a sphere inside it. `recon --calibration F` then writes images in Bq/mL. */
#include "tl-cli.h"
#include "image/tl-roi.h"
#include "pet/correct/tl-units.h"
#include <math.h>
#include <string.h>

int tl_cli_calibrate(int argc, char **argv) {
  double concentration = NAN, duration = NAN, frame_start = 0, radius = 50;
  g_autofree char *isotope_name = NULL, *centre_text = NULL;
  GOptionEntry entries[] = {
      {"concentration", 'c', 0, G_OPTION_ARG_DOUBLE, &concentration,
       "The phantom's activity concentration at the reference time, Bq/mL (required)", "BQML"},
      {"duration", 0, 0, G_OPTION_ARG_DOUBLE, &duration,
       "The frame's duration in s (required)", "S"},
      {"frame-start", 0, 0, G_OPTION_ARG_DOUBLE, &frame_start,
       "The frame's start in s after the reference time (default 0)", "S"},
      {"isotope", 0, 0, G_OPTION_ARG_STRING, &isotope_name,
       "Decay and positron fraction of this isotope (default none: no decay, fraction 1)",
       "NAME"},
      {"centre", 0, 0, G_OPTION_ARG_STRING, &centre_text,
       "Centre of the measuring sphere in mm (default 0,0,0)", "X,Y,Z"},
      {"radius", 0, 0, G_OPTION_ARG_DOUBLE, &radius,
       "Radius of the measuring sphere in mm (default 50): well inside the uniform region", "MM"},
      {NULL}};
  static const char description[] =
      "Reconstruct a scan of a uniform phantom of known concentration as any other scan (same\n"
      "algorithm, iterations and corrections), then:\n"
      "  tomolab-cli calibrate phantom.nii --concentration 5300 --duration 600 --isotope F18\n"
      "prints F = mean DC / (T beta concentration) (docs/pet.md, Units).";
  GError *error = NULL;
  if (!tl_cli_parse_options("IMAGE - the calibration factor for recon --calibration",
                            entries, description, &argc, &argv, &error))
    return tl_cli_usage_error("calibrate", error);
  if (argc != 2) {
    fprintf(stderr, "tomolab-cli calibrate: one image is required (see --help)\n");
    return 2;
  }
  if (isnan(concentration) || isnan(duration)) {
    fprintf(stderr, "tomolab-cli calibrate: --concentration and --duration are required\n");
    return 2;
  }
  TlQuant q = {.calibration = 1, .duration_s = duration, .frame_start_s = frame_start};
  if (isotope_name && !(q.isotope = tl_isotope_find(isotope_name, &error)))
    return tl_cli_usage_error("calibrate", error);
  TlRoi roi = {.kind = TL_ROI_SPHERE, .radius_mm = radius};
  if (centre_text) {
    g_auto(GStrv) parts = g_strsplit(centre_text, ",", -1);
    if (g_strv_length(parts) != 3) {
      fprintf(stderr, "tomolab-cli calibrate: --centre '%s': expected X,Y,Z in mm\n", centre_text);
      return 2;
    }
    for (int d = 0; d < 3; d++)
      if (!tl_cli_parse_double("--centre", g_strstrip(parts[d]), -1e6, 1e6, &roi.centre_mm[d],
                               &error))
        return tl_cli_usage_error("calibrate", error);
  }
  if (!(isfinite(radius) && radius > 0)) {
    fprintf(stderr, "tomolab-cli calibrate: --radius %g: expected a finite radius > 0 mm\n", radius);
    return 2;
  }
  g_autoptr(TlImage) im = tl_cli_load_image(argv[1], &error);
  if (!im) {
    fprintf(stderr, "tomolab-cli calibrate: %s\n", error->message);
    g_error_free(error);
    return 1;
  }
  if (im->unit[0]) {
    fprintf(stderr, "tomolab-cli calibrate: %s is already in %s: expected a reconstruction in "
            "arbitrary units\n", argv[1], im->unit);
    return 1;
  }
  TlRoiStats st;
  tl_roi_stats(&roi, im, &st);
  g_autofree char *where = tl_roi_describe(&roi);
  if (st.n == 0) {
    fprintf(stderr, "tomolab-cli calibrate: the %s holds no voxel of %s\n", where, argv[1]);
    return 1;
  }
  double f = 0;
  if (!tl_quant_calibrate(&q, st.mean, concentration, &f, &error)) {
    fprintf(stderr, "tomolab-cli calibrate: %s: %s\n", argv[1], error->message);
    g_error_free(error);
    return 1;
  }
  printf("calibration factor: %.9g (image value per s per Bq/mL of positron emitters)\n"
         "measured: mean %.9g, sd %.3g (%.2f %%) over %" G_GUINT64_FORMAT " voxels of the %s\n"
         "frame: %g s from %g s, isotope %s, decay correction %.9g\n"
         "use: tomolab-cli recon ... --calibration %.9g\n",
         f, st.mean, st.sd, 100 * st.sd / st.mean, st.n, where, duration, frame_start,
         q.isotope ? q.isotope->name : "none",
         tl_decay_correction(q.isotope, frame_start, duration), f);
  return 0;
}
