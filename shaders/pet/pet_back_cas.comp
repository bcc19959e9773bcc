#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// pet_back without the float-atomic capability, for devices that lack shaderBufferFloat32AtomicAdd.
#define PET_NO_FLOAT_ATOMIC
#include "pet_back.glsl"
