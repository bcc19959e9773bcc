#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The end of a deterministic back projection (tl_fixed.glsl): image_i += acc_i 2^-k, with k
// from the accumulator's head and amax as the scattering kernel computed it. One item per
// element.
#include "tl_common.glsl"
#include "tl_fixed.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlUints acc;
  TlFloats image;  // accumulated into
  float amax;      // the most one LOR (ray) puts into one element per unit weight
  uint pad;
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint e = pc.tl_base + i;
  pc.image.v[e] += tl_fixed_value(pc.acc, e, tl_fixed_k(pc.acc, pc.amax));
}
