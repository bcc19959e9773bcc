#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The end of the sensitivity image (pet_sens.comp): image_n += 2^-k sum_{g in G} acc_{g(n)}, the
// 64-bit fixed-point partial sum acc (pairs of uints lo, hi) read at the G voxels the scanner's
// symmetries map n to (G = identity only: acc_n). The sum is exact (integer, carries kept);
// the one conversion to float rounds it (hi * 2^32 + lo, within an ulp or two).
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlUints acc;      // 2 uints per voxel: lo, hi
  TlFloats image;   // accumulated into
  uvec3 dims;
  uint group;       // bit c set: transform c is in G. c: bit 2 swap x and y (first),
                    // bit 0 x -> -x, bit 1 y -> -y, bit 3 z -> -z (centred grid: i -> n - 1 - i)
  float inv_scale;  // 2^-k
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint n = pc.tl_base + i;
  uvec3 v = uvec3(n % pc.dims.x, (n / pc.dims.x) % pc.dims.y, n / (pc.dims.x * pc.dims.y));
  uint lo = 0u, hi = 0u;
  for (uint c = 0u; c < 16u; c++) {
    if (((pc.group >> c) & 1u) == 0u) continue;
    uvec3 u = (c & 4u) != 0u ? v.yxz : v;
    if ((c & 1u) != 0u) u.x = pc.dims.x - 1u - u.x;
    if ((c & 2u) != 0u) u.y = pc.dims.y - 1u - u.y;
    if ((c & 8u) != 0u) u.z = pc.dims.z - 1u - u.z;
    uint j = u.x + pc.dims.x * (u.y + pc.dims.y * u.z);
    uint l = pc.acc.v[2u * j];
    uint s = lo + l;
    hi += pc.acc.v[2u * j + 1u] + (s < lo ? 1u : 0u);
    lo = s;
  }
  pc.image.v[n] += (float(hi) * 4294967296.0 + float(lo)) * pc.inv_scale;
}
