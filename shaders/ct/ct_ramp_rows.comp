#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Rows copied between strides for the FFT ramp filter (compute/ct/tl-ct-ramp.c):
//   dst[r * dst_stride + u] = u < n_src ? src[r * src_stride + u] : 0,   u < n_dst
// Pad: the weighted rows of nu pixels into the FFT buffer's rows of 2 (N/2 + 1) floats, the
// zeros after them making the circular convolution linear. Crop: the first nu samples of
// each filtered row back to rows of nu. One invocation per destination sample.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  uint src_stride, dst_stride;
  uint n_src, n_dst;
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint r = item / pc.n_dst, u = item - r * pc.n_dst;
  pc.dst.v[r * pc.dst_stride + u] = u < pc.n_src ? pc.src.v[r * pc.src_stride + u] : 0.0;
}
