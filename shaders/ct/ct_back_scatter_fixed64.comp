#version 460
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The fixed-point scatter adjoint (ct_back_scatter.glsl with constant 3, CT_FIXED = 1) adding
// each term with one 64-bit integer atomic instead of two 32-bit ones (tl_fixed.glsl,
// TL_FIXED_INT64): the same sums, bit for bit, for devices with shaderBufferInt64Atomics.
// Built without the float-atomic capability, which it never uses.
#define CT_NO_FLOAT_ATOMIC
#define TL_FIXED_INT64
#include "ct_back_scatter.glsl"
