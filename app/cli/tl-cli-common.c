/* Option parsing shared by the verbs. */
#include "tl-cli.h"
#include <stdio.h>

/* "NXxNYxNZ@V" or "NXxNYxNZ@VX,VY,VZ" (mm), centred on the scanner / isocentre. */
gboolean tl_cli_parse_grid(const char *text, TlImageGrid *g, GError **error) {
  guint n[3];
  float v[3];
  char tail;
  int k = sscanf(text, "%ux%ux%u@%f,%f,%f%c", &n[0], &n[1], &n[2], &v[0], &v[1], &v[2], &tail);
  if (k == 4) v[1] = v[2] = v[0];
  if (k != 4 && k != 6) {
    g_set_error(error, TL_ERROR, TL_ERROR_INVALID_ARG,
                "--grid '%s': expected NXxNYxNZ@VOXEL_MM or NXxNYxNZ@VX,VY,VZ (e.g. 215x215x71@2.78)",
                text);
    return FALSE;
  }
  *g = tl_image_grid_centred(n[0], n[1], n[2], v[0], v[1], v[2]);
  return tl_image_grid_validate(g, error);
}
