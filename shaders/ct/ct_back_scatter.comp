#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The scatter adjoint with float atomic adds (ct_back_scatter.glsl).
#include "ct_back_scatter.glsl"
