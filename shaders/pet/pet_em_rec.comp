#version 460
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Stage 1 of the CPU plane path of Joseph's EM sub-iteration (compute/pet/
// tl-projector-planes.c; stage 2 is pet_back_slabs.comp). One invocation per event of a
// chunk: the forward projection (pet_joseph.glsl, the image in pc.image), the ratio
// w_j = a_j m_j / ybar_j of van Gendt et al. 2021 Listing 1 (pet_em.glsl) and the event's plane
// walk, written
// as one record so stage 2 can walk the same planes without the crystals:
//   words 0-7: a_m a_u a_v su sv wl w kw   (PetPlanes of pet_planes.glsl; kw = k0 | k1 << b |
//              m << 2b, b = TL_PET_REC_PLANE_BITS, m = 3: nothing to back project)
//   words 8-10 (PET_TOF): d_m len_mm tof_c; word 11 is padding (TL_PET_REC_WORDS_TOF).
// pc.dst: the records (record i of the chunk at word i * PET_REC_WORDS); pc.norm: this
// chunk's TL_PET_RANGE_WORDS range words, zero before the chunk: word m holds ~(first record along axis m),
// word 3 + m one past its last, so stage 2 scans only the records of its axis.
// pc.aux: log-likelihood partials with PET_LOGLIK = 1 (as pet_em).
#define PET_NO_FLOAT_ATOMIC  // no scatter here
#include "pet_trace.glsl"
#include "pet_loglik.glsl"
#include "pet_pairs.glsl"  // 64-bit stores of the record

layout(constant_id = TL_PET_ID_REC_WORDS) const uint PET_REC_WORDS = TL_PET_REC_WORDS;

void main() {
  uint i = tl_local_item();
  float ll = 0.0;
  int axis = 3;  // the dominant axis of an event with something to back project
  if (i < pc.tl_count) {
    uint e = pc.tl_base + i;
    float rec[11];
    for (int j = 0; j < 11; j++) rec[j] = 0.0;
    uint kw = 3u << (2u * TL_PET_REC_PLANE_BITS);
    PetLor l;
    PetPlanes P;
    bool lor = pet_lor(e, l);
    float y = 0.0;
    if (lor && pet_planes(l, 1.0, 1.0, P)) {
      float a = pet_atten(e, l);
      y = a * pet_joseph_walk(l, P, PET_FORWARD, 0.0, pc.image);
      // as pet_em: an LOR with zero expected count carries nothing to back project
      if (y > 0.0 && l.m != 0.0) {
        rec[0] = P.a[P.m];
        rec[1] = P.a[P.u];
        rec[2] = P.a[P.v];
        rec[3] = P.su;
        rec[4] = P.sv;
        rec[5] = P.wl;
        rec[6] = a * l.m / y;
        rec[8] = P.d[P.m];
        rec[9] = P.len_mm;
        rec[10] = l.tof_c;
        kw = uint(P.k0) | uint(P.k1) << TL_PET_REC_PLANE_BITS |
             uint(P.m) << (2u * TL_PET_REC_PLANE_BITS);
        axis = P.m;
      }
    }
    // as pet_em: a count on a line of ybar = 0 (or missing the planes) scores m log 1e-30
    if (PET_LOGLIK == 1u && lor && l.m != 0.0) ll = l.m * log(max(y, 1e-30));
    // 64-bit stores: one lane loop per two words on a CPU device
    TlPairs out64 = TlPairs(pc.dst);
    uint r = e * (PET_REC_WORDS / 2u);
    out64.v[r] = pack64(uvec2(floatBitsToUint(rec[0]), floatBitsToUint(rec[1])));
    out64.v[r + 1u] = pack64(uvec2(floatBitsToUint(rec[2]), floatBitsToUint(rec[3])));
    out64.v[r + 2u] = pack64(uvec2(floatBitsToUint(rec[4]), floatBitsToUint(rec[5])));
    out64.v[r + 3u] = pack64(uvec2(floatBitsToUint(rec[6]), kw));
    if (PET_TOF == 1u) {
      out64.v[r + 4u] = pack64(uvec2(floatBitsToUint(rec[8]), floatBitsToUint(rec[9])));
      out64.v[r + 5u] = pack64(uvec2(floatBitsToUint(rec[10]), 0u));
    }
  }
  // the chunk's first and end record per axis: reduced over the subgroup first, so the two
  // CPU threads of lavapipe meet at these words once per subgroup and axis, not per event
  TlUints rg = TlUints(pc.norm);
  uint e = pc.tl_base + i;
  for (int m = 0; m < 3; m++) {
    uint lo = subgroupMax(axis == m ? ~e : 0u), hi = subgroupMax(axis == m ? e + 1u : 0u);
    if (subgroupElect() && hi != 0u) {
      atomicMax(rg.v[m], lo);
      atomicMax(rg.v[3 + m], hi);
    }
  }
  if (PET_LOGLIK == 1u) pet_loglik_store(ll);
}
