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
//
// Odd taps only (even_blocks > 0; Ram-Lak, whose taps at even l != 0 are exactly zero, Kak &
// Slaney eq. 3.61): an output i takes the inputs j of the other parity, i - j odd, plus
// g[0] in[i]. The invocation computes CT_FILTER_BLOCK outputs i = 2 (p0 + t) + P of one parity
// P from the inputs j = 2 q + 1 - P: the tap g[i - j] = g[2 d + 1] with d = p0 + t - q + P - 1
// is kernel index d + nu (the host stores g[2 d + 1] at d + nu, |2 d + 1| < nu, then zeros), so
// the same sliding window runs over half the inputs: half the multiply-adds and loads. The
// sum skips only products with exact zeros; g[0] in[i] is added last.
#include "tl_common.glsl"

#include "tl_constants.glsl"
#define CT_FILTER_BLOCK TL_CT_FILTER_BLOCK

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  TlFloats kernel;
  uint nu;
  uint blocks;       // per row: ceil(nu / CT_FILTER_BLOCK); odd taps: both parities' blocks
  uint even_blocks;  // odd taps only: ceil(outputs of even i / CT_FILTER_BLOCK); else 0
  float center;      // odd taps only: g[0]
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint row = item / pc.blocks, b = item - row * pc.blocks;
  uint r0 = row * pc.nu;
  bool odd_taps = pc.even_blocks > 0u;
  // the outputs c0 + step t; the inputs j0 + step q, q < n_in; window base as below
  uint step = 1u, c0 = b * CT_FILTER_BLOCK, j0 = 0u, n_in = pc.nu, base = c0 + pc.nu;
  if (odd_taps) {
    uint P = b < pc.even_blocks ? 0u : 1u;
    uint p0 = (b - P * pc.even_blocks) * CT_FILTER_BLOCK;
    step = 2u;
    c0 = 2u * p0 + P;
    j0 = 1u - P;
    n_in = (pc.nu + P) / 2u;
    base = p0 + P + pc.nu;
  }
  // taps for output t and input q: index base - 1 + t - q; the window starts one above
  float w[CT_FILTER_BLOCK], acc[CT_FILTER_BLOCK];
  for (int t = 0; t < CT_FILTER_BLOCK; t++) {
    w[t] = pc.kernel.v[base + uint(t)];
    acc[t] = 0.0;
  }
  for (uint q = 0u; q < n_in; q++) {
    // slide the window down by one: w[t] = index base - 1 - q + t
    for (int t = CT_FILTER_BLOCK - 1; t > 0; t--) w[t] = w[t - 1];
    w[0] = pc.kernel.v[base - 1u - q];
    float x = pc.src.v[r0 + j0 + step * q];
    for (int t = 0; t < CT_FILTER_BLOCK; t++) acc[t] += w[t] * x;
  }
  for (int t = 0; t < CT_FILTER_BLOCK; t++) {
    uint c = c0 + step * uint(t);
    if (c < pc.nu) pc.dst.v[r0 + c] = odd_taps ? acc[t] + pc.center * pc.src.v[r0 + c] : acc[t];
  }
}
