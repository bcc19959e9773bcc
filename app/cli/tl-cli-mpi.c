/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tl-cli-dist.h with Open MPI (-Dmpi=auto|enabled). Only this file includes mpi.h: the
 * library sums the shares through TlSolverReducer (recon/tl-solver.h) and never sees MPI.
 *
 * Image sums: the float image comes to the host, is widened to double and summed with
 * MPI_Allreduce(MPI_SUM) in place, then narrowed and uploaded. Double keeps the sum
 * independent of the rank count: each rank's share is a float sum over its events, and the
 * double sum of N such shares differs from one float sum over all events by float rounding
 * only (relative ~1e-7 per voxel), whatever N. Every rank then applies the same update to the
 * same image; priors and filters run identically on every rank (no broadcast: they are
 * deterministic functions of that image, and a broadcast of the image would cost another
 * image volume on the wire per sub-iteration).
 *
 * Overlap: the image is summed in TOMOLAB_MPI_PIECES pieces (default 2, 1 = one blocking
 * MPI_Allreduce): piece i's MPI_Iallreduce runs while piece i+1 is downloaded and widened and
 * piece i-1 narrowed and uploaded (MPI_Test between them drives Open MPI's progress). The
 * fused EM pass fills every voxel until its last event, so the sum cannot start before the
 * pass ends; docs/scale.md has the measurement and what would overlap more.
 *
 * A rank that dies: Open MPI's default error handler (MPI_ERRORS_ARE_FATAL) and mpirun end
 * every rank; a rank that fails with a GError calls MPI_Abort so none waits in a collective. */
#include "tl-cli-dist.h"
#include <mpi.h>
#include <string.h>

#define MAX_PIECES 64

static struct {
  gboolean started;
  int rank, size, local_rank;
  guint pieces;
  TlSolverReducer reducer;
  float *hf;
  double *hd;
  guint64 n;
  double seconds, wait;
  gboolean barrier;
  guint calls;
  guint64 bytes;
} mpi = {.size = 1, .pieces = 2};

gboolean tl_cli_dist_start(int *argc, char ***argv, GError **error) {
  if (!g_getenv("OMPI_COMM_WORLD_SIZE")) return TRUE; /* not started by mpirun */
  int provided;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    g_set_error(error, TL_ERROR, TL_ERROR_UNSUPPORTED, "MPI_Init failed");
    return FALSE;
  }
  mpi.started = TRUE;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mpi.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &mpi.local_rank);
  MPI_Comm_free(&local);
  mpi.barrier = g_strcmp0(g_getenv("TOMOLAB_MPI_BARRIER"), "1") == 0;
  const char *p = g_getenv("TOMOLAB_MPI_PIECES");
  if (p) {
    guint64 v = 0;
    if (!tl_cli_parse_uint("TOMOLAB_MPI_PIECES", p, 1, MAX_PIECES, &v, error)) return FALSE;
    mpi.pieces = (guint)v;
  }
  return TRUE;
}

gboolean tl_cli_dist_started(void) { return mpi.started; }
guint tl_cli_dist_rank(void) { return (guint)mpi.rank; }
guint tl_cli_dist_size(void) { return (guint)mpi.size; }
guint tl_cli_dist_pieces(void) { return mpi.pieces; }

char *tl_cli_dist_device(void) {
  if (mpi.size <= 1) return NULL;
  g_autoptr(GArray) devs = tl_enumerate_devices(NULL);
  if (!devs) return NULL;
  int best = G_MININT;
  guint count = 0;
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    if (d->usable) best = MAX(best, tl_device_type_rank(d->type));
  }
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    count += d->usable && tl_device_type_rank(d->type) == best;
  }
  if (count <= 1) return NULL;
  guint want = (guint)mpi.local_rank % count;
  for (guint i = 0; i < devs->len; i++) {
    const TlDeviceInfo *d = &g_array_index(devs, TlDeviceInfo, i);
    if (d->usable && tl_device_type_rank(d->type) == best && want-- == 0)
      return g_strdup_printf("%u", d->index);
  }
  return NULL;
}

static gboolean mpi_failed(int rc, const char *what, GError **error) {
  if (rc == MPI_SUCCESS) return FALSE;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  g_set_error(error, TL_ERROR, TL_ERROR_IO, "%s: %s", what, msg);
  return TRUE;
}

static gboolean reduce_image(TlContext *ctx, TlArray *a, gpointer data, GError **error) {
  (void)ctx;
  (void)data;
  gint64 t0 = g_get_monotonic_time();
  if (mpi.barrier) {
    MPI_Barrier(MPI_COMM_WORLD);
    gint64 t = g_get_monotonic_time();
    mpi.wait += (t - t0) * 1e-6;
    t0 = t;
  }
  guint64 n = tl_array_length(a);
  if (n != mpi.n) {
    g_free(mpi.hf);
    g_free(mpi.hd);
    mpi.hf = g_new(float, n);
    mpi.hd = g_new(double, n);
    mpi.n = n;
  }
  guint P = (guint)MIN((guint64)mpi.pieces, MAX(n, 1));
  while (P < MAX_PIECES && n / P >= G_MAXINT) P++; /* MPI counts are int */
  MPI_Request req[MAX_PIECES];
  guint64 first[MAX_PIECES + 1];
  for (guint i = 0; i <= P; i++) first[i] = n * i / P;
  for (guint i = 0; i < P; i++) {
    guint64 f = first[i], m = first[i + 1] - f;
    if (!tl_array_download_range(a, f, m, mpi.hf + f, error)) return FALSE;
    for (guint64 j = f; j < f + m; j++) mpi.hd[j] = mpi.hf[j];
    if (mpi_failed(MPI_Iallreduce(MPI_IN_PLACE, mpi.hd + f, (int)m, MPI_DOUBLE, MPI_SUM,
                                  MPI_COMM_WORLD, &req[i]),
                   "MPI_Iallreduce", error))
      return FALSE;
    int done;
    for (guint k = 0; k < i; k++) MPI_Test(&req[k], &done, MPI_STATUS_IGNORE);
  }
  for (guint i = 0; i < P; i++) {
    guint64 f = first[i], m = first[i + 1] - f;
    if (mpi_failed(MPI_Wait(&req[i], MPI_STATUS_IGNORE), "MPI_Wait", error)) return FALSE;
    for (guint64 j = f; j < f + m; j++) mpi.hf[j] = (float)mpi.hd[j];
    if (!tl_array_upload_range(a, f, m, mpi.hf + f, error)) return FALSE;
  }
  mpi.seconds += (g_get_monotonic_time() - t0) * 1e-6;
  mpi.calls++;
  mpi.bytes = n * sizeof(double);
  return TRUE;
}

static gboolean reduce_scalars(double *v, guint n, gpointer data, GError **error) {
  (void)data;
  return !mpi_failed(MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_SUM,
                                   MPI_COMM_WORLD),
                     "MPI_Allreduce", error);
}

const TlSolverReducer *tl_cli_dist_reducer(void) {
  if (mpi.size <= 1) return NULL;
  mpi.reducer = (TlSolverReducer){.image = reduce_image, .scalars = reduce_scalars};
  return &mpi.reducer;
}

void tl_cli_dist_abort(int code) {
  if (mpi.started && mpi.size > 1) {
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
}

void tl_cli_dist_stats(double *seconds, double *wait, guint *calls, guint64 *bytes) {
  *seconds = mpi.seconds;
  *wait = mpi.wait;
  *calls = mpi.calls;
  *bytes = mpi.bytes;
}

void tl_cli_dist_finish(void) {
  g_clear_pointer(&mpi.hf, g_free);
  g_clear_pointer(&mpi.hd, g_free);
  if (mpi.started) MPI_Finalize();
  mpi.started = FALSE;
}
