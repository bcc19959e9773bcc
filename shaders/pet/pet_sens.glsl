// SPDX-License-Identifier: GPL-3.0-or-later
// The sensitivity image s_n = sum over the detectable crystal pairs j of a_jn (van Gendt et al.
// 2021
// eq. 7 with attenuation: s'_n = sum_j a_j a_jn), accumulated exactly in 64-bit fixed point
// (pet_common.glsl PET_FIXED_SCATTER; pet_sens_finish.comp turns it into floats). Only 32-bit
// integer atomics: no device feature is needed. PET_LORS is "all pairs" (3).
//
// PET_SYM = 1: the scanner and the grid share a group G of exact symmetries (quarter turns,
// mirror planes x = 0, y = 0, z = 0; compute/pet/tl-sensitivity-sym.c finds them) and the
// pairs to trace are a list in pc.aux (pair numbers): the smallest of each orbit, all fixed by
// the same number |G_p| of symmetries in one dispatch, whose weight 1 / |G_p| is
// uintBitsToFloat(pc.pad); the finishing pass sums the |G| images of this partial sum under
// the symmetries, which counts every pair of every orbit once:
//   sum_p B(p) = sum over orbits O of sum_{q in O} B(q) = sum_{g in G} g(sum_{p listed} B(p) / |G_p|).
// PET_SYM = 0: every allowed pair p = item * stride + first.
// PET_NORM = 1: each pair also weighted by its normalisation n_ab (pet_norm.glsl): van Gendt et
// al. 2021
// eq. 7 with n_j a_j. With PET_SYM the host keeps only the symmetries that leave n unchanged
// (tl_norm_invariant), so the listed pair's n is its whole orbit's.
#define PET_NO_FLOAT_ATOMIC
#define PET_FIXED_SCATTER
#include "pet_trace.glsl"
#include "pet_norm.glsl"

layout(constant_id = TL_PET_ID_SYM) const uint PET_SYM = 0;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint n = pc.n_crystals, p;
  float w = 1.0;
  if (PET_SYM == 1u) {
    p = TlUints(pc.aux).v[pc.first + pc.tl_base + i];
    w = uintBitsToFloat(pc.pad);
  } else {
    p = (pc.tl_base + i) * pc.stride + pc.first;
    if (p >= pc.n_pairs) return;
  }
  // pet_lor's decoding (pet_common.glsl) with one division: llvmpipe has no vector division
  uint row = p / n;
  uint a = p - row * n;
  uint b = a + row + 1u;
  if (b >= n) b -= n;
  if (PET_SYM == 0u && !pet_pair_allowed(a, b)) return;  // the list holds allowed pairs only
  PetLor l;
  l.p0 = pet_crystal(a);
  l.p1 = pet_crystal(b);
  l.m = 1.0;
  l.tof_c = 0.0;
  w *= pet_atten(pc.tl_base + i, l);
  if (PET_NORM == 1u) w *= pet_norm(a, b);
  if (w != 0.0) pet_trace(l, PET_BACK, w, pc.dst);
}
