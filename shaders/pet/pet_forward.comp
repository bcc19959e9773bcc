#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Forward projection, one invocation per LOR: y_j = sum_n a_jn x_n (Kovács (n.d.) eq. 1); with
// PET_ATTEN = 1 y_j = a_j sum_n a_jn x_n (a_j = exp(-integral of mu), van Gendt et al. 2021 eq. 6).
// PET_LOGLIK = 1 keeps no per-LOR value (list mode holds no more than its 12-byte events on
// the device) and writes per-workgroup partial sums of m_j log max(y_j, 1e-30) (the solver's
// floor, compute/recon/tl-solver.c) to aux (pet_loglik.glsl), for the Poisson log-likelihood.
#define PET_NO_FLOAT_ATOMIC  // gathers only
#include "pet_trace.glsl"
#include "pet_loglik.glsl"

void main() {
  uint i = tl_local_item();
  float y = 0.0, ll = 0.0;
  if (i < pc.tl_count) {
    PetLor l;
    bool lor = pet_lor(pc.tl_base + i, l);
    if (lor) y = pet_atten(pc.tl_base + i, l) * pet_trace(l, PET_FORWARD, 0.0, pc.image);
    if (PET_LOGLIK == 0u)
      pc.dst.v[pc.tl_base + i] = y;
    else if (lor && l.m != 0.0)
      ll = l.m * log(max(y, 1e-30));
  }
  if (PET_LOGLIK == 1u) pet_loglik_store(ll);
}
