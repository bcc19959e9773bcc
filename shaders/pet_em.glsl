// The fused EM kernel (seed 000 Listing 1), one invocation per LOR j: forward project the
// current image f, form the ratio and back project it into the correction image c,
//   c_n += a_jn m_j / sum_n' a_jn' f_n'
// i.e. the sum over j in seed 000 eq. 5 / seed 002 eq. 2 (m_j = 1 for a list-mode event; the
// measured count g_i of a bin in seed 004 eq. 4). The update f <- f c / s is a separate fused
// array expression (compute/pet/tl-recon.c). Seed 000 splits an event over slice threads that
// meet in shared memory; one invocation walking the whole ray keeps its sum in a register.
#include "pet_trace.glsl"

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  PetLor l;
  if (!pet_lor(pc.tl_base + i, l)) return;
  float y = pet_trace(l, PET_FORWARD, 0.0, pc.image);
  // Guard: an LOR whose expected count is zero sees only zero voxels, which the multiplicative
  // update keeps at zero; it carries nothing to back project, so it is skipped.
  if (!(y > 0.0) || l.m == 0.0) return;
  pet_trace(l, PET_BACK, l.m / y, pc.dst);
}
