#version 460
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_ballot : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Stage 2 of the CPU plane path of Joseph's EM sub-iteration (compute/pet/
// tl-projector-planes.c): the back projection c_n += a_jn w_j of the chunk's records
// (pet_em_rec.comp) without atomics. Workgroup g owns PET_SLAB_PLANES consecutive planes
// across one axis m (one invocation per plane, PET_SLAB_PLANES / local size passes) and walks
// every record of that axis in order, adding to its own planes only: no two invocations ever
// write the same voxel, so plain loads and stores replace the four atomic adds per plane that
// cost most of the event-parallel kernel on a CPU device, and the sums come out the same on
// every run. The record's words are loaded once per subgroup, one 64-bit word per lane, and
// handed round with subgroupBroadcast (the workgroup is one subgroup; the host checks).
// The host keeps a chunk small enough that this loop over its records, with the inner loops,
// stays under the 65 535 iterations llvmpipe lets one invocation run (tl-projector-planes.c).
//
// Push block (pet_common.glsl's, fields reused): pc.lors the records, pc.norm the chunk's
// range words, pc.dst the pair buffers B (pet_pairs.glsl), pc.flags the part: 0 = planes
// across x (workgroups 0 .. ceil(nx / S) - 1) then across y, which write different buffers;
// 1 = planes across z, which share B along x with the y planes and so run after them.
#define PET_NO_FLOAT_ATOMIC
#include "pet_common.glsl"
#include "pet_tof.glsl"
#include "pet_planes.glsl"
#include "pet_pairs.glsl"

layout(constant_id = TL_PET_ID_SLAB_PLANES) const uint PET_SLAB_PLANES = TL_PET_SLAB_PLANES;
layout(constant_id = TL_PET_ID_REC_WORDS) const uint PET_REC_WORDS = TL_PET_REC_WORDS;

uvec2 rec_word(uvec2 mine, uint j) { return subgroupBroadcast(mine, j); }

void main() {
  uint S = PET_SLAB_PLANES;
  // part 0 interleaves the x and y slabs (even workgroups x, odd y): a chunk's events mostly
  // share one dominant axis (TlRecon groups them so), and lavapipe hands each of its threads a
  // contiguous block of workgroups, so blocks of x then y slabs left one thread idle
  int m = pc.flags == 0u ? int(gl_WorkGroupID.x & 1u) : 2;
  uint g = pc.flags == 0u ? gl_WorkGroupID.x >> 1 : gl_WorkGroupID.x;
  ivec3 n = ivec3(pc.dims);
  if (g * S >= uint(n[m])) return;
  int u = m == 0 ? 1 : 0, v = m == 2 ? 1 : 2;  // pet_axes
  int nu = n[u], nv = n[v];
  uvec3 ps = pet_pairs_strides(u);
  uvec3 st = uvec3(ps[m], ps[u], ps[v]);
  uint base = pet_pairs_base(u);
  TlUints rg = TlUints(pc.norm);
  uint first = ~rg.v[m], end = rg.v[3 + m];
  if (rg.v[m] == 0u) return;  // no record along m in this chunk
  int s0 = int(g * S), s1 = int(min(g * S + S, uint(n[m]))) - 1;
  uint lane = gl_SubgroupInvocationID, half_words = PET_REC_WORDS / 2u;
  TlPairs recs = TlPairs(pc.lors);
  TlPairSums B = TlPairSums(pc.dst);
  PetLor l;
  l.m = 1.0;
  for (uint e = first; e < end; e++) {
    uvec2 mine = unpack32(recs.v[e * half_words + min(lane, half_words - 1u)]);
    uvec2 w3 = rec_word(mine, 3u);
    uint kw = w3.y;
    const uint kb = TL_PET_REC_PLANE_BITS, kmask = (1u << kb) - 1u;
    if (int(kw >> (2u * kb)) != m) continue;
    int k0 = int(kw & kmask), k1 = int((kw >> kb) & kmask);
    if (k1 < s0 || k0 > s1) continue;
    vec2 w0 = uintBitsToFloat(rec_word(mine, 0u)), w1 = uintBitsToFloat(rec_word(mine, 1u));
    vec2 w2 = uintBitsToFloat(rec_word(mine, 2u));
    float w = uintBitsToFloat(w3.x), d_m = 1.0, len_mm = 1.0;
    l.tof_c = 0.0;
    if (PET_TOF == 1u) {
      vec2 w4 = uintBitsToFloat(rec_word(mine, 4u)), w5 = uintBitsToFloat(rec_word(mine, 5u));
      d_m = w4.x;
      len_mm = w4.y;
      l.tof_c = w5.x;
    }
    for (uint pass = 0u; pass < S; pass += gl_WorkGroupSize.x) {
      int k = s0 + int(pass + gl_LocalInvocationID.x);
      if (k < k0 || k > k1) continue;
      float wk;
      vec2 p = pet_plane_sample_at(l, w0.x, w0.y, w1.x, w1.y, w2.x, w2.y, d_m, len_mm, k, wk);
      vec2 f = floor(p), fe = p - f;
      ivec2 i0 = ivec2(f);
      if (i0.x < -1 || i0.x >= nu) continue;
      for (int r = 0; r < 2; r++) {
        int jv = i0.y + r;
        if (jv < 0 || jv >= nv) continue;
        // the weights of pet_joseph's taps c = 2r and 2r + 1, times w as pet_scatter gets them
        float fv = r != 0 ? fe.y : 1.0 - fe.y;
        uint slot = pet_pair_slot_mu(base, st, k, i0.x + 1, jv);
        vec2 add = vec2(w * ((1.0 - fe.x) * fv * wk), w * (fe.x * fv * wk));
        pet_pair_store(B, slot, pet_pair_load(B, slot) + dvec2(add));
      }
    }
  }
}
