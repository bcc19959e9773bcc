#version 460
#extension GL_GOOGLE_include_directive : require
// The sensitivity image with the float tracers (pet_sens.glsl says what it computes).
#include "pet_sens.glsl"
