#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// The last step of the CPU plane path (pet_pairs.glsl), one invocation per voxel n:
// pc.dst[n] += the halves of n in the pair buffers B (pc.image), along x, then along y.
#define PET_NO_FLOAT_ATOMIC
#include "pet_common.glsl"
#include "pet_pairs.glsl"

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint n = pc.tl_base + i;
  ivec3 c = ivec3(int(n % pc.dims.x), int((n / pc.dims.x) % pc.dims.y),
                  int(n / (pc.dims.x * pc.dims.y)));
  TlPairSums pairs = TlPairSums(pc.image);
  double s = double(pc.dst.v[n]);  // one rounding to float, at the end
  for (int u = 0; u < 2; u++)
    s += pet_pair_load(pairs, pet_pair_slot(u, c, c[u])).y +
         pet_pair_load(pairs, pet_pair_slot(u, c, c[u] + 1)).x;
  pc.dst.v[n] = float(s);
}
