// SPDX-License-Identifier: GPL-3.0-or-later
// The normalisation n_ab of a crystal pair (compute/pet/tl-norm.h) from the compact tables of
// tl_norm_upload in pc.norm, for the sensitivity image (van Gendt et al. 2021 eq. 7 with n_j a_j:
// s_n = sum over the pairs j of n_j a_j a_jn). The component model
//   n_ab = eps_a eps_b g_ax(ring_a, ring_b) g_tr(d_ab, u_ab)
// with t = id mod C the crystal's place in its ring, d the shorter way round from t_a to t_b
// (0..C/2) and u = t mod B the position in its block of the crystal d is counted from (the
// smaller one when d = C/2); C = 0: no transaxial classes. The table's head: TL_PET_NORM_*
// (tl_constants.glsl).
// The products in the host's order (tl_norm_pair): ((eps_a eps_b) g_ax) g_tr.
layout(constant_id = TL_PET_ID_NORM) const uint PET_NORM = 0;

float pet_norm(uint a, uint b) {
  TlUints h = TlUints(pc.norm);
  uint R = h.v[TL_PET_NORM_RINGS], C = h.v[TL_PET_NORM_PER_RING], B = h.v[TL_PET_NORM_BLOCK];
  float n = pc.norm.v[h.v[TL_PET_NORM_OFF_EFF] + a] * pc.norm.v[h.v[TL_PET_NORM_OFF_EFF] + b];
  uint ax = 0u;
  if (R > 1u) {
    TlUints c = TlUints(pc.crystals);
    ax = c.v[TL_PET_CRYSTAL_WORDS * a + 7u] * R + c.v[TL_PET_CRYSTAL_WORDS * b + 7u];
  }
  n *= pc.norm.v[h.v[TL_PET_NORM_OFF_AXIAL] + ax];
  uint tr = 0u;
  if (C > 0u) {
    uint ta = a % C, tb = b % C;
    uint d = tb >= ta ? tb - ta : tb + C - ta;
    uint u = ta % B;
    if (2u * d > C) {
      d = C - d;
      u = tb % B;
    } else if (2u * d == C) {
      u = min(ta % B, tb % B);
    }
    tr = d * B + u;
  }
  return n * pc.norm.v[h.v[TL_PET_NORM_OFF_TRANS] + tr];
}
