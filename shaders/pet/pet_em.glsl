// SPDX-License-Identifier: GPL-3.0-or-later
// The fused EM kernel (van Gendt et al. 2021 Listing 1), one invocation per LOR j: forward project
// the
// current image f, form the ratio and back project it into the correction image c,
//   c_n += a_jn m_j / sum_n' a_jn' f_n'
// i.e. the sum over j in van Gendt et al. 2021 eq. 5 / Kovács (n.d.) eq. 2 (m_j = 1 for a
// list-mode event; the
// measured count g_i of a bin in Chou et al. 2012 eq. 4). The update f <- f c / s is a separate
// fused
// array expression (compute/pet/tl-recon.c). van Gendt et al. 2021 splits an event over slice
// threads that
// meet in shared memory; one invocation walking the whole ray keeps its sum in a register.
//
// PET_ATTEN = 1 (van Gendt et al. 2021 eq. 6): the forward model is ybar_j = a_j sum_n a_jn f_n
// and the
// back projection of m_j / ybar_j carries a_j too (A' = diag(a) A, so A'^T (m / A' f)):
//   c_n += a_j a_jn m_j / (a_j sum_n' a_jn' f_n')
// The a_j cancel here, so attenuation reaches the update only through the sensitivity
// s'_n = sum_j a_j a_jn (eq. 7) -- but they are kept so the kernel stays the model ybar = A' f
// (and stays right once additive terms such as randoms enter ybar).
//
// PET_LOGLIK = 1: the same pass also sums the Poisson log-likelihood data term
//   sum_j m_j log ybar_j  over ybar_j > 0
// from the forward value it already has, into per-workgroup partials (pet_loglik.glsl), so
// OSEM's convergence plot needs no separate log-likelihood projection per sub-iteration. It
// is the log-likelihood at the image this pass reads (before its update).
//
// PET_FIXED = 1: the back projection is left to pet_em_back (pet_back.glsl), whose sums are
// deterministic (pet_common.glsl): this pass writes w_j = a_j m_j / ybar_j (0 where skipped)
// to pc.dst, one per LOR of the call, and their largest value into the accumulator's head at
// pc.norm.
#define TL_FIXED_MAX
#include "pet_trace.glsl"
#include "pet_loglik.glsl"

float pet_em_w = 0.0;  // PET_FIXED: this LOR's back-projection weight

// Back projects w along l into dst, or with PET_FIXED keeps w for pet_em_back.
void pet_em_back(PetLor l, float w, TlFloats dst) {
  if (PET_FIXED == 1u)
    pet_em_w = w;
  else
    pet_trace(l, PET_BACK, w, dst);
}

void main() {
  uint i = tl_local_item();
  float ll = 0.0;
  // no early return: the log-likelihood variant's reduction needs every invocation
  if (i < pc.tl_count) {
    PetLor l;
    if (pet_lor(pc.tl_base + i, l)) {
      float a = pet_atten(pc.tl_base + i, l);
      float y = a * pet_trace(l, PET_FORWARD, 0.0, pc.image);
      // Guard: an LOR whose expected count is zero sees only zero voxels, which the
      // multiplicative update keeps at zero; it carries nothing to back project, so it is
      // skipped. Its count still scores m log 1e-30 (ybar floored as the solver's objective,
      // compute/recon/tl-solver.c), not 0.
      if (y > 0.0 && l.m != 0.0) pet_em_back(l, a * l.m / y, pc.dst);
      if (PET_LOGLIK == 1u && l.m != 0.0) ll = l.m * log(max(y, 1e-30));
    }
    if (PET_FIXED == 1u) pc.dst.v[pc.tl_base + i] = pet_em_w;
  }
  if (PET_FIXED == 1u) tl_fixed_max_store(TlUints(pc.norm), pet_em_w);
  if (PET_LOGLIK == 1u) pet_loglik_store(ll);
}
