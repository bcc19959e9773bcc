#version 460
#extension GL_GOOGLE_include_directive : require
// Ramp filtering along detector rows as an exact linear convolution in the spatial domain:
//   out[r, i] = sum_{j < nu} g[i - j] in[r, j]
// g (2 nu - 1 taps, g[l] at index l + nu - 1) is the band-limited ramp kernel with its window,
// computed on the host in double (tl-ct-fdk.c). A finite row convolved with the kernel's
// taps |l| < nu is the linear convolution itself: no zero padding, no circular wrap.
// One invocation per output pixel; rows are read through the cache, nu taps each.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  TlFloats kernel;
  uint nu;
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint row = item / pc.nu, col = item - row * pc.nu;
  uint r0 = row * pc.nu;
  // g[col - j] sits at kernel index col - j + nu - 1
  uint g0 = col + pc.nu - 1u;
  float acc = 0.0;
  for (uint j = 0u; j < pc.nu; j++) acc += pc.kernel.v[g0 - j] * pc.src.v[r0 + j];
  pc.dst.v[item] = acc;
}
