#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// srm_back summed in 64-bit fixed point: deterministic, on every device (srm_back.glsl).
#define SRM_FIXED
#include "srm_back.glsl"
