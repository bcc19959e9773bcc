/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli convert IN OUT: any file a format reads into any format that writes the same kind
 * of data (compute/tl-formats.h); the input's format is detected by content, the output's by
 * its extension or --format. */
#include "tl-cli.h"
#include "dataset/tl-formats.h"
#include "pet/data/tl-sinogram-hist.h"
#include "pet/data/tl-format-castor.h"

int tl_cli_convert(int argc, char **argv) {
  g_autofree char *format = NULL, *norm_path = NULL; /* GOption allocates them */
  int max_rd = -1, span = 1;
  GOptionEntry entries[] = {
      {"max-ring-difference", 0, 0, G_OPTION_ARG_INT, &max_rd,
       "List mode into a sinogram: ring differences kept (default: the scanner's acceptance)",
       "N"},
      {"span", 0, 0, G_OPTION_ARG_INT, &span,
       "List mode into a sinogram: ring differences per segment (odd; default 1, one segment "
       "each; 11 is Siemens' mMR layout)", "N"},
      {"norm", 0, 0, G_OPTION_ARG_FILENAME, &norm_path,
       "List mode into CASToR (.cdh): each event's normalization correction factor 1/n from "
       "this normalisation (.tln, for the data's scanner)", "FILE.tln"},
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
       "Output format by name (default: from OUT's extension; 'tomolab-cli info --formats')",
       "NAME"},
      {NULL}};
  static const char description[] =
      "Example: tomolab-cli convert image.hv image.nii.gz\n"
      "The input's format is detected by content; OUT must hold the same kind of data\n"
      "(image, PET list mode, sinogram, CT projections, scanner, normalisation); PET list\n"
      "mode into CASToR with --norm carries each event's normalisation; PET list mode into a\n"
      "sinogram format (.hs) is histogrammed in the scanner's own geometry as STIR writes it\n"
      "(the mMR: 'Siemens mMR', 504 detectors with block gaps, 252 views x 344; --span,\n"
      "--max-ring-difference). OUT is written atomically and never over IN.";
  g_autoptr(GError) error = NULL;
  if (!tl_cli_parse_options("IN OUT - convert a data file", entries, description,
                            &argc, &argv, &error))
    return tl_cli_usage_error("convert", error);
  if (max_rd < -1) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "--max-ring-difference %d: expected >= 0",
                max_rd);
    return tl_cli_usage_error("convert", error);
  }
  if (span < 1 || span % 2 == 0) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "--span %d: expected an odd number >= 1",
                span);
    return tl_cli_usage_error("convert", error);
  }
  if (argc != 3) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "expected IN and OUT, got %d file(s)",
                argc - 1);
    return tl_cli_usage_error("convert", error);
  }
  const TlCliFile in[] = {{"IN", argv[1]}, {"--norm", norm_path}}, out = {"OUT", argv[2]};
  if (!tl_cli_check_outputs(in, 2, &out, 1, &error)) return tl_cli_usage_error("convert", error);
  const TlFormatClass *from = tl_format_detect(in[0].path, &error);
  if (!from) goto fail;
  /* list mode into a sinogram format: histogrammed (pet/tl-sinogram-hist.h) */
  gboolean histogram = FALSE;
  const TlFormatClass *to = NULL;
  if (from->kind == TL_DATA_PET_LISTMODE) {
    g_autoptr(GError) e2 = NULL;
    to = tl_format_for_output(out.path, TL_DATA_PET_SINOGRAM, format, &e2);
    histogram = to != NULL;
  }
  if (!to && !(to = tl_format_for_output(out.path, from->kind, format, &error)))
    return tl_cli_usage_error("convert", error);
  if (norm_path && (from->kind != TL_DATA_PET_LISTMODE || to != &tl_format_castor)) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "--norm: only PET list mode into CASToR "
                "(.cdh) carries normalisation factors (%s -> %s)", from->name, to->name);
    return tl_cli_usage_error("convert", error);
  }
  gpointer data = from->load(in[0].path, &error);
  if (!data) goto fail;
  gboolean ok;
  if (histogram) {
    const TlListmode *lm = data;
    guint64 outside = 0;
    g_autoptr(TlSinogram) sino = tl_sinogram_new_stir(lm->scanner, (guint)span,
                                                      max_rd < 0 ? G_MAXUINT : (guint)max_rd, &error);
    ok = sino && tl_sinogram_add_events(sino, lm, &outside, &error) &&
         tl_format_save(to, sino, out.path, &error);
    if (ok)
      fprintf(stderr, "tomolab-cli convert: %" G_GUINT64_FORMAT " events histogrammed into %u "
              "segments x %u views x %u tangential positions (%s, span %d, %.1f MB)\n",
              lm->n_events - outside, sino->n_segments, sino->n_views, sino->n_tangential,
              sino->name, span, sino->n_bins * 4e-6);
    if (ok && outside)
      fprintf(stderr, "tomolab-cli convert: %" G_GUINT64_FORMAT " events outside the sinogram "
              "(ring differences beyond --max-ring-difference, or beyond the tangential positions)\n", outside);
  } else if (norm_path) {
    const TlListmode *lm = data;
    g_autoptr(TlNorm) norm = tl_norm_load(norm_path, lm->scanner, &error);
    ok = norm && tl_castor_save_listmode(lm, norm, out.path, &error);
    if (ok)
      fprintf(stderr, "tomolab-cli convert: each event's normalization correction factor is "
              "1/n from %s\n", norm_path);
  } else {
    ok = tl_format_save(to, data, out.path, &error);
  }
  tl_data_free(from->kind, data);
  if (!ok) goto fail;
  fprintf(stderr, "tomolab-cli convert: %s (%s) -> %s (%s)\n", in[0].path, from->name, out.path,
          to->name);
  return 0;
fail:
  fprintf(stderr, "tomolab-cli convert: %s\n", error->message);
  return 1;
}
