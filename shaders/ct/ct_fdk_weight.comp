#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// FDK pre-weighting: out = in * cos(angle between the pixel's ray and the principal ray)
// * scale[view]. Cone beam: the ray direction is Qd (u, v, 1) = M^-1 (u, v, 1), whose
// component along the unit principal axis (third row of M) is 1, so the cosine is
// 1 / |Q (u, v, 1)| (Feldkamp's D / sqrt(D^2 + a^2 + b^2)). Parallel beam: 1.
// One invocation per TL_CT_WEIGHT_BLOCK pixels (at most) of a detector row of the selected
// views (laid out as in ct_forward): the view's Qd and scale are loaded once for them, not for
// every pixel (lavapipe loops over the lanes for every load: 10 loads a pixel made this pass
// cost as much as the ramp filter itself).
#include "ct_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  TlFloats scale;  // one per selected view
  CtViews views;
  uint nu, nv;
  uint first, stride;
  uint cone;
  uint segs;  // ceil(nu / CT_WEIGHT_BLOCK): invocations per row
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  // pixels t, t + segs, t + 2 segs, ... of the row: neighbouring invocations touch neighbouring
  // pixels (coalesced on GPUs)
  uint row = item / pc.segs, t = item - row * pc.segs;
  uint k = row / pc.nv, v = row - k * pc.nv, o = row * pc.nu;
  float sc = pc.scale.v[k];
  if (pc.cone != 0u) {
    float Qd[9] = pc.views.v[pc.first + k * pc.stride].Qd;
    for (uint u = t; u < pc.nu; u += pc.segs)
      pc.dst.v[o + u] = pc.src.v[o + u] * (1.0 / length(ct_affine(Qd, float(u), float(v)))) * sc;
  } else {
    for (uint u = t; u < pc.nu; u += pc.segs) pc.dst.v[o + u] = pc.src.v[o + u] * sc;
  }
}
