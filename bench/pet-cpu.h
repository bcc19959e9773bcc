/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET projectors of shaders/pet/pet_siddon.glsl and pet_joseph.glsl in plain C + OpenMP, the
 * CPU baseline bench/pet measures the device against: same algorithms, same float
 * arithmetic, events in parallel; back projection into per-thread images that are summed at
 * the end (what a CPU code does instead of atomics). */
#pragma once
#include <glib.h>
#include "image/tl-image.h"
#include "pet/scanner/tl-listmode.h"
#include "pet/project/tl-projector.h"

typedef enum { PET_CPU_SIDDON, PET_CPU_JOSEPH } PetCpuKind;

/* out[i] = (A x)_i for the events' LORs (crystal centres). */
void pet_cpu_forward(PetCpuKind kind, const TlImageGrid *g, const TlScanner *s,
                     const TlEvent *ev, guint64 n, const float *x, float *out);
/* img += A^T w (w NULL = all ones). */
void pet_cpu_back(PetCpuKind kind, const TlImageGrid *g, const TlScanner *s, const TlEvent *ev,
                  guint64 n, const float *w, float *img);

/* The same with time of flight (TlTof of tl-projector.h): each event's weights times its TOF
 * bin's kernel h_b at the sample point, only the planes / voxels inside the bin's window
 * visited. tof NULL = the non-TOF functions above. */
void pet_cpu_forward_tof(PetCpuKind kind, const TlImageGrid *g, const TlScanner *s,
                         const TlEvent *ev, guint64 n, const TlTof *tof, const float *x,
                         float *out);
void pet_cpu_back_tof(PetCpuKind kind, const TlImageGrid *g, const TlScanner *s,
                      const TlEvent *ev, guint64 n, const TlTof *tof, const float *w, float *img);
