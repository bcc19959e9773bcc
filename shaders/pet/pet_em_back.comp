#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The back projection half of the deterministic EM pass (pet_em.glsl with PET_FIXED = 1 writes
// the weights; compute/pet/project/tl-projector-ray.c): pet_back's code adding into a 64-bit
// fixed-point accumulator, which needs no float atomics on any device. A kernel of its own so
// that an edit of pet_back (the separate back projection) and of this pass stay apart.
#define PET_NO_FLOAT_ATOMIC
#include "pet_back.glsl"
