#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The head of a fixed-point accumulator (tl_fixed.glsl) from the call's weights x (n floats),
// in three dispatches, each needing the one before complete:
//   mode 0  word 0 = the largest |x_i| (skipped where the scattering pass stored it itself)
//   mode 1  words 2, 3 += each workgroup's sum of |x_i|, summed in float by a fixed tree (the
//           same on every run), raised by 2^-16 to bound its rounding and rounded up in units
//           of 2^-ks, ks = 61 - e(n) - e(max): the total stays below 2^62 units
//   mode 2  one item: word 1 = e_S with S < 2^e_S (unit: every weight 1, S = n)
#define TL_FIXED_MAX
#include "tl_common.glsl"
#include "tl_fixed.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats x;
  TlUints acc;
  float n;     // weights (LORs, rays) of the call
  uint mode;
  uint unit;   // 1: every weight is 1 (x unused)
  uint pad;
} pc;

shared float s_sum[gl_WorkGroupSize.x];

int sum_bits() {
  return clamp(61 - tl_fixed_exponent(pc.n) - tl_fixed_exponent(uintBitsToFloat(pc.acc.v[0])),
               -240, 240);
}

void main() {
  uint i = tl_local_item();
  float a = i < pc.tl_count && pc.unit == 0u ? abs(pc.x.v[pc.tl_base + i]) : 0.0;
  if (!(a <= 3.4e38)) a = 0.0;  // NaN, inf: left out (they poison the image anyway)
  // no early return: the reductions' barriers need every invocation
  if (pc.mode == 0u) {
    tl_fixed_max_store(pc.acc, a);
  } else if (pc.mode == 1u) {
    uint lid = gl_LocalInvocationIndex, n = gl_WorkGroupSize.x;
    s_sum[lid] = a;
    barrier();
    for (uint h = 1u << uint(findMSB(max(n - 1u, 1u))); h > 0u; h >>= 1u) {
      if (lid < h && lid + h < n) s_sum[lid] += s_sum[lid + h];
      barrier();
    }
    if (lid == 0u && s_sum[0] > 0.0) {
      int ks = sum_bits();
      float f = s_sum[0] * (1.0 + 1.0 / 65536.0) * tl_pow2(ks / 2) * tl_pow2(ks - ks / 2);
      f = min(ceil(f), 4.0e18);
      float fh = floor(f * (1.0 / 4294967296.0));
      uint hi = uint(fh), lo = uint(f - fh * 4294967296.0);
      uint old = atomicAdd(pc.acc.v[2], lo);
      hi += (old + lo < old) ? 1u : 0u;
      if (hi != 0u) atomicAdd(pc.acc.v[3], hi);
    }
  } else if (i == 0u) {
    int e;
    if (pc.unit != 0u) {
      e = tl_fixed_exponent(pc.n);
    } else {
      uint lo = pc.acc.v[2], hi = pc.acc.v[3];
      // S < 2^(bits of the integer) units of 2^-ks; S = 0 (every weight 0): nothing to add
      int bits = hi != 0u ? findMSB(hi) + 33 : findMSB(lo) + 1;
      e = bits == 0 ? -200 : bits - sum_bits();
    }
    pc.acc.v[1] = uint(e);
  }
}
