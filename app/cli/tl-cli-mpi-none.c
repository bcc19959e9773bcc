/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tl-cli-dist.h without MPI (-Dmpi=disabled, or no Open MPI found): always one process. */
#include "tl-cli-dist.h"

gboolean tl_cli_dist_start(int *argc, char ***argv, GError **error) {
  (void)argc;
  (void)argv;
  const char *size = g_getenv("OMPI_COMM_WORLD_SIZE");
  if (size && g_ascii_strtoull(size, NULL, 10) > 1) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED,
                "started by mpirun with %s ranks, but this tomolab-cli was built without MPI "
                "(meson setup -Dmpi=enabled with libopenmpi-dev): each rank would reconstruct "
                "everything and write the same output", size);
    return FALSE;
  }
  return TRUE;
}

gboolean tl_cli_dist_started(void) { return FALSE; }
guint tl_cli_dist_rank(void) { return 0; }
guint tl_cli_dist_size(void) { return 1; }
char *tl_cli_dist_device(void) { return NULL; }
guint tl_cli_dist_pieces(void) { return 1; }
const TlSolverReducer *tl_cli_dist_reducer(void) { return NULL; }
void tl_cli_dist_abort(int code) { (void)code; }
void tl_cli_dist_stats(double *seconds, double *wait, guint *calls, guint64 *bytes) {
  *seconds = 0;
  *wait = 0;
  *calls = 0;
  *bytes = 0;
}
void tl_cli_dist_finish(void) {}
