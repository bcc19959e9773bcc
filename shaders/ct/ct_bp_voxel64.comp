#version 460
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// SPDX-License-Identifier: GPL-3.0-or-later
// FDK's voxel-driven back projector (ct_bp_voxel.glsl) reading each row's two taps as one 64-bit
// word (CT_BP_INT64): for devices with shaderInt64.
#define CT_BP_INT64
#include "ct_bp_voxel.glsl"
