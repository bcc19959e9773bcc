/* tomolab-cli convert IN OUT: any file a format reads into any format that writes the same kind
 * of data (compute/tl-formats.h); the input's format is detected by content, the output's by
 * its extension or --format. */
#include "tl-cli.h"
#include "tl-formats.h"

int tl_cli_convert(int argc, char **argv) {
  const char *format = NULL;
  GOptionEntry entries[] = {
      {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
       "Output format by name (default: from OUT's extension; 'tomolab-cli info --formats')",
       "NAME"},
      {NULL}};
  g_autoptr(GOptionContext) oc = g_option_context_new("IN OUT - convert a data file");
  g_option_context_add_main_entries(oc, entries, NULL);
  g_option_context_set_description(
      oc, "Example: tomolab-cli convert image.hv image.nii.gz\n"
          "The input's format is detected by content; OUT must hold the same kind of data\n"
          "(image, PET list mode, sinogram, CT projections, scanner). OUT is written atomically\n"
          "and never over IN.");
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &error)) return tl_cli_usage_error("convert", error);
  if (argc != 3) {
    g_set_error(&error, TL_ERROR, TL_ERROR_INVALID_ARG, "expected IN and OUT, got %d file(s)",
                argc - 1);
    return tl_cli_usage_error("convert", error);
  }
  const TlCliFile in = {"IN", argv[1]}, out = {"OUT", argv[2]};
  if (!tl_cli_check_outputs(&in, 1, &out, 1, &error)) return tl_cli_usage_error("convert", error);
  const TlFormatClass *from = tl_format_detect(in.path, &error);
  if (!from) goto fail;
  const TlFormatClass *to = tl_format_for_output(out.path, from->kind, format, &error);
  if (!to) return tl_cli_usage_error("convert", error);
  gpointer data = from->load(in.path, &error);
  if (!data) goto fail;
  gboolean ok = tl_format_save(to, data, out.path, &error);
  tl_data_free(from->kind, data);
  if (!ok) goto fail;
  fprintf(stderr, "tomolab-cli convert: %s (%s) -> %s (%s)\n", in.path, from->name, out.path,
          to->name);
  return 0;
fail:
  fprintf(stderr, "tomolab-cli convert: %s\n", error->message);
  return 1;
}
