#version 460
#extension GL_GOOGLE_include_directive : require
// srm_back without the float-atomic capability (compare-and-swap loop).
#include "srm_back.glsl"
