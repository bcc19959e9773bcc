#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// One pass of the separable Gaussian (compute/pet/tl-filter.c): dst = src convolved along
// one axis with the symmetric kernel w[0..radius] (w[|t|] is the tap at offset t), edges
// replicated by clamping the index. The axis is a push constant so the three passes share
// one pipeline; the weights live in a small array so the radius is not bound by the
// 128-byte push block.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  TlFloats w;
  uint dims[3];
  uint axis;   // 0 = x, 1 = y, 2 = z
  uint radius;
} pc;

void main() {
  uint li = tl_local_item();
  if (li >= pc.tl_count) return;
  uint i = pc.tl_base + li;
  uint nx = pc.dims[0], ny = pc.dims[1];
  uint c[3] = uint[3](i % nx, (i / nx) % ny, i / (nx * ny));
  uint stride = pc.axis == 0 ? 1u : pc.axis == 1 ? nx : nx * ny;
  int pos = int(c[pc.axis]);
  int last = int(pc.dims[pc.axis]) - 1;
  uint line0 = i - uint(pos) * stride; // voxel 0 of this line
  int r = int(pc.radius);
  float acc = pc.w.v[0] * pc.src.v[i];
  for (int t = 1; t <= r; t++) {
    float a = pc.src.v[line0 + uint(clamp(pos - t, 0, last)) * stride];
    float b = pc.src.v[line0 + uint(clamp(pos + t, 0, last)) * stride];
    acc += pc.w.v[t] * (a + b);
  }
  pc.dst.v[i] = acc;
}
