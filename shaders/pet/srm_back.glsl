// SPDX-License-Identifier: GPL-3.0-or-later
// x_v += sum_i h(i; v) w_i for the LORs of a group (srm_common.glsl), scattered with float
// atomics (or a compare-and-swap loop without SRM_FLOAT_ATOMIC). SRM_FIXED (srm_back_fixed):
// into a 64-bit fixed-point accumulator at pc.image, its head filled, pc.bound its amax: the
// sums are the same on every run (tl_fixed.glsl).
#ifdef SRM_FLOAT_ATOMIC
#extension GL_EXT_shader_atomic_float : require
#endif
#include "srm_common.glsl"
#include "tl_fixed.glsl"

int srm_fixed_k = 0;  // SRM_FIXED: the call's scale exponent, set by main

void srm_add(uint i, float v) {
#if defined(SRM_FIXED)
  tl_fixed_add(TlUints(pc.image), i, v, srm_fixed_k);
#elif defined(SRM_FLOAT_ATOMIC)
  atomicAdd(pc.image.v[i], v);
#else
  TlUints bits = TlUints(pc.image);
  uint seen = bits.v[i];
  for (;;) {
    uint old = seen;
    seen = atomicCompSwap(bits.v[i], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (seen == old) break;
  }
#endif
}

void main() {
#ifdef SRM_FIXED
  srm_fixed_k = tl_fixed_k(TlUints(pc.image), pc.bound);
#endif
  uint g = srm_group();
  if (g >= pc.n_groups) return;
  uint first = pc.groups.v[4 * g], count = pc.groups.v[4 * g + 1], cls = pc.groups.v[4 * g + 2];
  bool swap = pc.groups.v[4 * g + 3] != 0u;
  SrmLor l[SRM_GROUP];
  float w[SRM_GROUP];
  for (uint j = 0; j < SRM_GROUP; j++) {
    w[j] = 0.0;
    if (j < count) {
      l[j] = srm_lor(pc.lors.v[pc.lor_first + first + j], swap);
      w[j] = pc.data.v[first + j];
    }
  }
  uint k0 = pc.class_ptr.v[cls], k1 = pc.class_ptr.v[cls + 1];
  for (uint k = k0 + gl_LocalInvocationID.x; k < k1; k += gl_WorkGroupSize.x) {
    uint key = pc.keys.v[k];
    float h = pc.vals.v[k];
    int ix, ms, ns;
    srm_key(key, ix, ms, ns);
    bool both = pc.xsym != 0u && ix != int(pc.dims.x) - 1 - ix;
    for (uint j = 0; j < count; j++) {
      if (w[j] == 0.0) continue;
      int v = srm_voxel(l[j], ix, ms, ns, 0u);
      if (v >= 0) srm_add(uint(v), h * w[j]);
      if (both) {
        v = srm_voxel(l[j], ix, ms, ns, 1u);
        if (v >= 0) srm_add(uint(v), h * w[j]);
      }
    }
  }
}
