#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Ramp filtering along detector rows as an exact linear convolution in the spatial domain:
//   out[r, i] = sum_{j < nu} g[i - j] in[r, j]
// g (the band-limited ramp kernel with its window, computed on the host in double,
// tl-ct-ramp.c) has g[l] at index l + nu - 1 for |l| < nu, followed by CT_FILTER_BLOCK zeros.
// A finite row convolved with the taps |l| < nu is the linear convolution itself: no zero
// padding, no circular wrap.
//
// One invocation computes CT_FILTER_BLOCK consecutive outputs of a row: each input sample is
// loaded once for all of them and the taps slide through registers (one new tap per input),
// so a multiply-add costs 2 / CT_FILTER_BLOCK loads instead of 2.
#include "tl_common.glsl"

#include "tl_constants.glsl"
#define CT_FILTER_BLOCK TL_CT_FILTER_BLOCK

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  TlFloats kernel;
  uint nu;
  uint blocks;  // ceil(nu / CT_FILTER_BLOCK) per row
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint row = item / pc.blocks, c0 = (item - row * pc.blocks) * CT_FILTER_BLOCK;
  uint r0 = row * pc.nu;
  // taps for outputs c0 + t and input j: g[c0 + t - j] at index c0 + t - j + nu - 1
  float w[CT_FILTER_BLOCK], acc[CT_FILTER_BLOCK];
  uint base = c0 + pc.nu;  // index for j = 0, t = 0 is base - 1; the window starts one above
  for (int t = 0; t < CT_FILTER_BLOCK; t++) {
    w[t] = pc.kernel.v[base + uint(t)];
    acc[t] = 0.0;
  }
  for (uint j = 0u; j < pc.nu; j++) {
    // slide the window down by one: w[t] = g index (c0 - j + nu - 1) + t
    for (int t = CT_FILTER_BLOCK - 1; t > 0; t--) w[t] = w[t - 1];
    w[0] = pc.kernel.v[base - 1u - j];
    float x = pc.src.v[r0 + j];
    for (int t = 0; t < CT_FILTER_BLOCK; t++) acc[t] += w[t] * x;
  }
  for (int t = 0; t < CT_FILTER_BLOCK; t++)
    if (c0 + uint(t) < pc.nu) pc.dst.v[r0 + c0 + uint(t)] = acc[t];
}
