#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// CT back projection, the exact adjoint of ct_forward (x = A^T y, Petit 2020 eq. 2.5), as a
// gather: one invocation per voxel, no atomics. For each view the voxel's support box is
// projected onto the detector; every pixel inside that footprint has its ray rebuilt exactly
// as ct_forward builds it, and the voxel's weight on that ray (the same a_jn the forward sum
// used) multiplies the pixel's value. Specialization constant 1 = method as in ct_forward.
#include "ct_common.glsl"

layout(constant_id = 1) const uint METHOD = 0;

layout(push_constant, scalar) uniform Push { CT_PUSH; } pc;

#include "ct_siddon.glsl"
#include "ct_joseph.glsl"
#include "ct_raycast.glsl"

// One invocation gathers CT_BACK_BLOCK voxels consecutive along x: their footprints overlap,
// so each pixel's ray is built and its value loaded once for all of them.
#define CT_BACK_BLOCK TL_CT_BACK_BLOCK

float ct_weight(CtRay r, ivec3 n) {
  if (METHOD == 0u) return ct_joseph_weight(r, n, pc.dims);
  if (METHOD == 1u) return ct_siddon_weight(r, n, pc.dims);
  return ct_raycast_weight(r, n, pc.dims, pc.step);
}

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint bx = (pc.dims.x + CT_BACK_BLOCK - 1) / CT_BACK_BLOCK;
  ivec3 n = ivec3((item % bx) * CT_BACK_BLOCK, (item / bx) % pc.dims.y, item / (bx * pc.dims.y));
  int nb = min(CT_BACK_BLOCK, int(pc.dims.x) - n.x);
  bool cone = (pc.flags & CT_CONE) != 0u;
  // Siddon: the voxels themselves; Joseph and trilinear samples reach one voxel centre further
  float lo = METHOD == 1u ? 0.0 : -0.5, hi = METHOD == 1u ? 1.0 : 1.5;
  vec3 b0 = pc.corner + (vec3(n) + lo) * pc.voxel;
  vec3 b1 = pc.corner + (vec3(n) + vec3(float(nb - 1), 0.0, 0.0) + hi) * pc.voxel;
  vec3 c = 0.5 * (b0 + b1), h = 0.5 * (b1 - b0);  // the block's support box, mm
  uint npix = pc.nu * pc.nv;
  float acc[CT_BACK_BLOCK];
  for (int t = 0; t < CT_BACK_BLOCK; t++) acc[t] = 0.0;
  for (uint k = 0u; k < pc.count; k++) {
    CtView w = pc.views.v[pc.first + k * pc.stride];
    // footprint: the box's corners projected; (u w, v w, w) is affine in the point, so each
    // corner is the centre's value plus signed per-axis terms
    vec3 p0 = vec3(w.P[0] * c.x + w.P[1] * c.y + w.P[2] * c.z + w.P[3],
                   w.P[4] * c.x + w.P[5] * c.y + w.P[6] * c.z + w.P[7],
                   w.P[8] * c.x + w.P[9] * c.y + w.P[10] * c.z + w.P[11]);
    vec3 ex = h.x * vec3(w.P[0], w.P[4], w.P[8]), ey = h.y * vec3(w.P[1], w.P[5], w.P[9]),
         ez = h.z * vec3(w.P[2], w.P[6], w.P[10]);
    vec2 fmin = vec2(CT_BIG), fmax = vec2(-CT_BIG);
    for (int q = 0; q < 8; q++) {
      vec3 pq = p0 + ((q & 1) != 0 ? ex : -ex) + ((q & 2) != 0 ? ey : -ey) +
                ((q & 4) != 0 ? ez : -ez);
      vec2 uv = pq.xy / pq.z;
      fmin = min(fmin, uv);
      fmax = max(fmax, uv);
    }
    // pixel centres inside the footprint (a convex box projects inside its corners' hull)
    ivec2 p0i = ivec2(max(ceil(fmin), vec2(0.0)));
    ivec2 p1i = ivec2(min(floor(fmax), vec2(float(pc.nu) - 1.0, float(pc.nv) - 1.0)));
    uint base = k * npix;
    for (int pv = p0i.y; pv <= p1i.y; pv++)
      for (int pu = p0i.x; pu <= p1i.x; pu++) {
        CtRay r = ct_ray(w, float(pu), float(pv), pc.corner, pc.voxel, cone);
        float a[CT_BACK_BLOCK];
        bool any_hit = false;
        for (int t = 0; t < CT_BACK_BLOCK; t++) {
          a[t] = t < nb ? ct_weight(r, n + ivec3(t, 0, 0)) : 0.0;
          any_hit = any_hit || a[t] != 0.0;
        }
        if (!any_hit) continue;
        float y = pc.proj.v[base + uint(pv) * pc.nu + uint(pu)];
        for (int t = 0; t < CT_BACK_BLOCK; t++) acc[t] += a[t] * y;
      }
  }
  for (int t = 0; t < nb; t++) {
    uint idx = uint(n.x + t) + pc.dims.x * (uint(n.y) + pc.dims.y * uint(n.z));
    float v = acc[t];
    if ((pc.flags & CT_ACCUMULATE) != 0u) v += pc.image.v[idx];
    pc.image.v[idx] = v;
  }
}
