#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// CT forward projection, ray-driven: one invocation per detector pixel of the selected views
// (Petit 2020 eq. 2.4, y = A x). The method is specialization constant 1:
// 0 Joseph, 1 Siddon, 2 ray casting with trilinear samples (Siegl et al. 2011 Algorithm 2).
#include "ct_common.glsl"

layout(constant_id = 1) const uint METHOD = 0;

layout(push_constant, scalar) uniform Push { CT_PUSH; } pc;

#include "ct_siddon.glsl"
#include "ct_joseph.glsl"
#include "ct_raycast.glsl"

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint npix = pc.nu * pc.nv;
  uint k = item / npix, pix = item - k * npix;
  CtView w = pc.views.v[pc.first + k * pc.stride];
  bool cone = (pc.flags & CT_CONE) != 0u;
  CtRay r = ct_ray(w, float(pix % pc.nu), float(pix / pc.nu), pc.corner, pc.voxel, cone);
  float s;
  if (METHOD == 0u)
    s = ct_joseph_forward(r, pc.image, pc.dims);
  else if (METHOD == 1u)
    s = ct_siddon_forward(r, pc.image, pc.dims);
  else
    s = ct_raycast_forward(r, pc.image, pc.dims, pc.step);
  if ((pc.flags & CT_ACCUMULATE) != 0u) s += pc.proj.v[item];
  pc.proj.v[item] = s;
}
