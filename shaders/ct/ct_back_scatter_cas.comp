#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The scatter adjoint with a compare-and-swap loop, built without the float-atomic capability,
// for devices that lack shaderBufferFloat32AtomicAdd (ct_back_scatter.glsl).
#define CT_NO_FLOAT_ATOMIC
#include "ct_back_scatter.glsl"
