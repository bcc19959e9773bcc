// SPDX-License-Identifier: GPL-3.0-or-later
// The Poisson log-likelihood data term sum_j m_j log ybar_j (over ybar_j > 0) as float
// partial sums, one per workgroup, written to pc.aux. Shared by pet_forward (a projection
// that keeps only this sum) and pet_em (the same sum from the EM pass's own forward values,
// so a convergence plot needs no second projection per sub-iteration). Only kernels built
// with PET_LOGLIK = 1 call it: its barriers then cost nothing in the other variants.

shared float pet_ll[gl_WorkGroupSize.x];

// ll: this invocation's m_j log ybar_j (0 when idle or ybar_j <= 0). Every invocation of the
// workgroup must call it (barriers). Chunks start at multiples of the workgroup size, so
// tl_base / size + the group within the chunk numbers workgroups across the whole dispatch.
void pet_loglik_store(float ll) {
  uint lid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  pet_ll[lid] = ll;
  barrier();
  // pairwise tree over the next power of two (partners past n are absent): log2(n) rounding
  // steps instead of n in a serial sum
  for (uint h = 1u << uint(findMSB(max(n - 1u, 1u))); h > 0u; h >>= 1u) {
    if (lid < h && lid + h < n) pet_ll[lid] += pet_ll[lid + h];
    barrier();
  }
  if (lid == 0u) pc.aux.v[pc.tl_base / n + tl_local_item() / n] = pet_ll[0];
}
