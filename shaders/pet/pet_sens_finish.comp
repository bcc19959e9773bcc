#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The end of the sensitivity image (pet_sens.comp): image_n += 2^-k sum_{g in G} acc_{g(n)}, the
// 64-bit fixed-point partial sum acc (pairs of uints lo, hi) read at the G voxels the scanner's
// symmetries map n to (G = identity only: acc_n). The sum is exact (integer, carries kept);
// the one conversion to float rounds it (hi * 2^32 + lo, within an ulp or two).
#include "tl_common.glsl"
#include "tl_constants.glsl"  // the transforms' bits (TL_PET_SYM_*)

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlUints acc;      // 2 uints per voxel: lo, hi
  TlFloats image;   // accumulated into
  uvec3 dims;
  uint group;       // bit c set: transform c (TL_PET_SYM_*) is in G; a mirror on a centred
                    // grid maps i -> n - 1 - i
  float inv_scale;  // 2^-k
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint n = pc.tl_base + i;
  uvec3 v = uvec3(n % pc.dims.x, (n / pc.dims.x) % pc.dims.y, n / (pc.dims.x * pc.dims.y));
  uint lo = 0u, hi = 0u;
  for (uint c = 0u; c < TL_PET_SYM_TRANSFORMS; c++) {
    if (((pc.group >> c) & 1u) == 0u) continue;
    uvec3 u = (c & TL_PET_SYM_SWAP_XY) != 0u ? v.yxz : v;
    if ((c & TL_PET_SYM_FLIP_X) != 0u) u.x = pc.dims.x - 1u - u.x;
    if ((c & TL_PET_SYM_FLIP_Y) != 0u) u.y = pc.dims.y - 1u - u.y;
    if ((c & TL_PET_SYM_FLIP_Z) != 0u) u.z = pc.dims.z - 1u - u.z;
    uint j = u.x + pc.dims.x * (u.y + pc.dims.y * u.z);
    uint l = pc.acc.v[2u * j];
    uint s = lo + l;
    hi += pc.acc.v[2u * j + 1u] + (s < lo ? 1u : 0u);
    lo = s;
  }
  pc.image.v[n] += (float(hi) * 4294967296.0 + float(lo)) * pc.inv_scale;
}
