#version 460
#extension GL_GOOGLE_include_directive : require
#define SRM_FLOAT_ATOMIC
#include "srm_back.glsl"
