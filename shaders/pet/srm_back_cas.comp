#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// srm_back without the float-atomic capability (compare-and-swap loop).
#include "srm_back.glsl"
