#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// FDK pre-weighting: out = in * cos(angle between the pixel's ray and the principal ray)
// * scale[view]. Cone beam: the ray direction is Qd (u, v, 1) = M^-1 (u, v, 1), whose
// component along the unit principal axis (third row of M) is 1, so the cosine is
// 1 / |Q (u, v, 1)| (Feldkamp's D / sqrt(D^2 + a^2 + b^2)). Parallel beam: 1.
// One invocation per pixel of the selected views (laid out as in ct_forward).
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
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint npix = pc.nu * pc.nv;
  uint k = item / npix, pix = item - k * npix;
  float c = 1.0;
  if (pc.cone != 0u) {
    CtView w = pc.views.v[pc.first + k * pc.stride];
    float u = float(pix % pc.nu), v = float(pix / pc.nu);
    c = 1.0 / length(ct_affine(w.Qd, u, v));
  }
  pc.dst.v[item] = pc.src.v[item] * c * pc.scale.v[k];
}
