// SPDX-License-Identifier: GPL-3.0-or-later
// CT back projection, ray-driven (x = A^T y, Petit 2020 eq. 2.5): one invocation per detector
// pixel of the selected views, as ct_forward, walking the same ray with the same code (the
// *_walk functions of ct_joseph, ct_siddon and ct_raycast.glsl with back = true) and adding
// a_jn y_j into every voxel n it touches. It is the transpose of ct_forward term by term, so
// the pair is adjoint to float rounding; the additions race, hence atomics: a float atomic add
// where the device has shaderBufferFloat32AtomicAdd (ct_back_scatter.comp), else a
// compare-and-swap loop (ct_back_scatter_cas.comp defines CT_NO_FLOAT_ATOMIC). The host zeroes
// the image first unless accumulating. Specialization constant 1 = method as in ct_forward.
// Constant 3, CT_FIXED = 1 (ct_common.glsl): pc.image is a fixed-point accumulator with its
// head filled, pc.bound amax (tl-ct-projector.c), and the additions are deterministic
// (tl_fixed.glsl).
#define CT_SCATTER_KERNEL
#ifndef CT_NO_FLOAT_ATOMIC
#extension GL_EXT_shader_atomic_float : require
#define CT_FLOAT_ATOMIC
#endif
#include "ct_common.glsl"

layout(constant_id = 1) const uint METHOD = 0;
// Constant 2, the order of the items: 0 as ct_forward (views, then rows, then columns: the
// neighbouring rays of a workgroup add into the same voxels), 1 views fastest (a workgroup's
// rays come from different views, so their adds rarely meet). Chosen by measurement
// (tl-ct-projector.c).
layout(constant_id = 2) const uint ORDER = 0;

layout(push_constant, scalar) uniform Push { CT_PUSH; } pc;

#include "ct_siddon.glsl"
#include "ct_joseph.glsl"
#include "ct_raycast.glsl"

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  if (CT_FIXED == 1u) ct_fixed_k = tl_fixed_k(TlUints(pc.image), pc.bound);
  uint item = pc.tl_base + i;
  uint npix = pc.nu * pc.nv, k, pix;
  if (ORDER == 1u) {
    pix = item / pc.count;
    k = item - pix * pc.count;
  } else {
    k = item / npix;
    pix = item - k * npix;
  }
  float y = pc.proj.v[k * npix + pix];
  if (y == 0.0) return;  // adds nothing (most of a sinogram's border)
  CtView w = pc.views.v[pc.first + k * pc.stride];
  bool cone = (pc.flags & CT_CONE) != 0u;
  CtRay r = ct_ray(w, float(pix % pc.nu), float(pix / pc.nu), pc.corner, pc.voxel, cone);
  if (METHOD == 0u)
    ct_joseph_walk(r, pc.image, pc.dims, true, y);
  else if (METHOD == 1u)
    ct_siddon_walk(r, pc.image, pc.dims, true, y);
  else
    ct_raycast_walk(r, pc.image, pc.dims, pc.step, true, y);
}
