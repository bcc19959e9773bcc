#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The FFT ramp filter's product in frequency (compute/ct/tl-ct-ramp.c): each row's half
// spectrum (N/2 + 1 complex values, interleaved re, im) times the real DFT of the symmetric
// taps, H[k], which also carries the 1/N of the unnormalised inverse transform.
// One invocation per complex value.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats data;
  TlFloats h;    // N/2 + 1 values
  uint n_freq;   // N/2 + 1
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  float w = pc.h.v[item % pc.n_freq];
  pc.data.v[2u * item] *= w;
  pc.data.v[2u * item + 1u] *= w;
}
