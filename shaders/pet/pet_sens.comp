#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The sensitivity image with the float tracers (pet_sens.glsl says what it computes).
#include "pet_sens.glsl"
