/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab-cli recon over several processes (docs/scale.md) and its checkpoints.
 *
 * tl-cli-mpi.c (built with -Dmpi, Open MPI) or tl-cli-mpi-none.c (without) implement the
 * process side: under `mpirun -n N` every rank runs the same `recon`, reads its share of the
 * events, computes its share of the sensitivity pairs, and the solver sums the shares through
 * the TlSolverReducer made here (MPI_Allreduce in double). The library itself never sees MPI.
 * Run without mpirun (or built without MPI) there is one process: rank 0 of 1, no reducer.
 *
 * tl-cli-checkpoint.c: the state a run needs to go on after a crash, written atomically:
 * the image, the sub-iterations done (hence iteration and subset) and a hash of every option
 * that shapes the image (not the rank count: a run may resume on any number of ranks). */
#pragma once
#include "tl-cli.h"
#include "recon/tl-solver.h"

/* Starts MPI when launched by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE in the environment);
 * else, or without MPI, one process. FALSE + GError: launched by mpirun with several ranks
 * but built without MPI (N copies would each reconstruct everything and race on the output). */
gboolean tl_cli_dist_start(int *argc, char ***argv, GError **error);
/* Whether MPI was started (mpirun, any rank count). */
gboolean tl_cli_dist_started(void);
/* Fixed pair chunks of the sensitivity under mpirun: enough for 64 ranks to share. */
#define TL_CLI_SENS_CHUNKS 64
guint tl_cli_dist_rank(void);
guint tl_cli_dist_size(void);
/* The device for this rank when neither --device nor $TOMOLAB_DEVICE chose one: the
 * (node-local rank mod count)-th of the best-ranked usable devices, as an index string
 * (g_free), or NULL = the default choice (one process, or one such device). */
char *tl_cli_dist_device(void);
/* The reducer for the solver (NULL with one process). */
const TlSolverReducer *tl_cli_dist_reducer(void);
/* Several ranks: MPI_Abort (every rank ends, mpirun exits with `code`); else returns. */
void tl_cli_dist_abort(int code);
/* Pieces an image sum is split into (TOMOLAB_MPI_PIECES, default 2; see tl-cli-mpi.c). */
guint tl_cli_dist_pieces(void);
/* Time spent summing images (seconds, calls, bytes each rank sent per call); with
 * TOMOLAB_MPI_BARRIER=1 (benchmarks) a barrier before each sum separates the wait for the
 * slowest rank (*wait) from the sum itself (*seconds); else *wait is 0 and *seconds both. */
void tl_cli_dist_stats(double *seconds, double *wait, guint *calls, guint64 *bytes);
void tl_cli_dist_finish(void);

typedef struct {
  guint sub_iterations; /* done; the next step runs subset sub_iterations mod subsets */
  guint subsets;
  char hash[65];        /* SHA-256 hex of the options text */
  TlImage *image;
} TlCliCheckpoint;

void tl_cli_checkpoint_clear(TlCliCheckpoint *c);
/* Atomic: a temp file next to `path`, renamed over it (an interrupted write leaves the last
 * checkpoint intact). */
gboolean tl_cli_checkpoint_save(const char *path, const TlImage *image, guint sub_iterations,
                                guint subsets, const char *hash, GError **error);
/* Every field checked: the magic, the keys, counts bounded by the file size, the grid valid. */
gboolean tl_cli_checkpoint_load(const char *path, TlCliCheckpoint *c, GError **error);
