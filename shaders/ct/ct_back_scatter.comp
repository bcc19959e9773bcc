#version 460
#extension GL_GOOGLE_include_directive : require
// The scatter adjoint with float atomic adds (ct_back_scatter.glsl).
#include "ct_back_scatter.glsl"
