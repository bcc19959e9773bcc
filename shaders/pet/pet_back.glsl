// SPDX-License-Identifier: GPL-3.0-or-later
// Back projection, one invocation per LOR: x_n += sum_j a_jn w_j, the exact adjoint of
// pet_forward (same tracer loop). w_j = aux[j] when flags bit 0 is set, else 1. With
// PET_LORS = all pairs this is the sensitivity image, s_n = sum over detectable pairs of a_jn
// (Kovács (n.d.)'s precomputed "Denom"): pairs are decoded from their index here, on the device.
// PET_ATTEN = 1 multiplies w by the LOR's attenuation factor a_j (pet_atten): back projection
// of A' = diag(a) A, and with all pairs van Gendt et al. 2021 eq. 7, s'_n = sum_j a_j a_jn.
//
// PET_FIXED = 1 (pet_common.glsl): pc.dst is a fixed-point accumulator (tl_fixed.glsl) with
// its head filled; pc.pad the bits of amax, the most one LOR adds to one voxel per unit weight
// (tl-projector-ray.c), whose margin also covers the attenuation factors a_j <= 1.
#include "pet_trace.glsl"

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  if (PET_FIXED == 1u) pet_fixed_k = tl_fixed_k(TlUints(pc.dst), uintBitsToFloat(pc.pad));
  PetLor l;
  if (!pet_lor(pc.tl_base + i, l)) return;
  float w = (pc.flags & 1u) != 0u ? pc.aux.v[pc.tl_base + i] : 1.0;
  if (w != 0.0) w *= pet_atten(pc.tl_base + i, l);
  if (w != 0.0) pet_trace(l, PET_BACK, w, pc.dst);
}
