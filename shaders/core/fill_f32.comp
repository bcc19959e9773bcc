#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// a[i] = value for i in [0, n): the simplest 1-D kernel, used by the core tests.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats a;
  float value;
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  pc.a.v[pc.tl_base + i] = pc.value;
}
