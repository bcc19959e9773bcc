/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Helpers shared by the PET benchmarks (bench/pet, bench/pet-extensions): clocks, best-of
 * bookkeeping, the NEMA IEC body simulation of the PET-DMI reference case, and one timed
 * projector operation on the device. */
#pragma once
#include "image/tl-phantom.h"
#include "pet/project/tl-projector.h"
#include "tomolab-compute.h"

G_BEGIN_DECLS

double bench_now(void);     /* wall seconds (monotonic) */
double bench_cpu_now(void); /* CPU seconds of the process: lavapipe's and OpenMP's threads */
/* Prints "<program>: <message>" and exits with 1. */
G_NORETURN void bench_die(GError *error);

typedef struct {
  double wall, cpu, gpu; /* best seen (gpu: of the best wall run) */
} BenchBest;
#define BENCH_BEST_INIT ((BenchBest){G_MAXDOUBLE, G_MAXDOUBLE, 0})
void bench_keep(BenchBest *b, double wall, double cpu, double gpu);

/* The NEMA IEC body phantom at the centre of the DMI scanner, rasterised on `grid` and
 * simulated with attenuation (tl_simulate, seed 1, exactly `events` events; with TOF when
 * `tof`). lm->scanner is the scanner the events belong to. */
typedef struct {
  TlImage *act, *mu;
  TlListmode *lm;
  double seconds; /* simulation wall time */
} PetNema;
gboolean pet_nema_simulate(PetNema *out, const TlImageGrid *grid, double events, gboolean tof,
                           GError **error);
void pet_nema_clear(PetNema *n);

typedef enum { PET_OP_FORWARD, PET_OP_BACK, PET_OP_SUBITER } PetOp;

/* One projector on device arrays: y = A x (forward), img += A^T 1 (back), or one fused
 * sub-iteration c = update(x, em(x)) with sensitivity s (s only used there; c is zeroed
 * before every op). */
typedef struct {
  TlContext *ctx;
  TlProjector *p;
  TlLors lors;
  TlArray *x, *y, *img, *c, *s;
} PetDevice;
/* One device run of op, from recording to completion, kept in b if it is the best. */
void pet_device_run(PetDevice *d, PetOp op, BenchBest *b);

G_END_DECLS
