#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The sensitivity image with Siddon's walk in double (pet_siddon.glsl PET_SIDDON_F64), for
// devices with shaderFloat64: within ~1e-7 of a double-precision sum where the float walk is
// 3e-5 from it on the DMI (bench/README.md, bench/sensitivity). pet_sens.glsl says what it
// computes; Joseph and the TOR keep their float walks here.
#define PET_SIDDON_F64
#include "pet_sens.glsl"
