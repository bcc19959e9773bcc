#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
#extension GL_EXT_shader_atomic_float : require
// Joseph's scatter adjoint by tiles, for GPUs: a workgroup takes a tile of CT_TILE x CT_TILE
// detector pixels of one view and walks their rays plane by plane in step. On each plane the
// tile's rays fall in a small patch of voxels (neighbouring rays are a fraction of a voxel
// apart), so their adds are summed in shared memory first and each patch voxel reaches the
// image with one float atomic add: ~10x fewer global atomics than ct_back_scatter, whose rays
// each add into four voxels per plane. The weights are ct_joseph.glsl's (the same setup and
// plane position per ray), so the pair stays the transpose of ct_forward. Fixed workgroup of
// CT_TILE^2 = 256 invocations (the host asks for that local size); items = views x tiles x 256.
#define CT_FLOAT_ATOMIC
#include "ct_common.glsl"

layout(push_constant, scalar) uniform Push { CT_PUSH; } pc;

#include "ct_joseph.glsl"

#define CT_TILE TL_CT_TILE
#define CT_PATCH 16  // patch edge in voxels: CT_PATCH^2 = the workgroup, one entry each

shared uint s_axes;
shared int s_klo, s_khi;
shared uint s_patch[CT_PATCH * CT_PATCH];

// s_patch[i] += v (float bits; a compare-and-swap loop needs no shared float-atomic feature)
void ct_patch_add(uint i, float v) {
  uint seen = s_patch[i];
  for (;;) {
    uint old = seen;
    seen = atomicCompSwap(s_patch[i], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (seen == old) break;
  }
}

void main() {
  uint i = tl_local_item();
  uint l = gl_LocalInvocationID.x;
  uint item = pc.tl_base + i;
  uint tu = (pc.nu + CT_TILE - 1) / CT_TILE, tv = (pc.nv + CT_TILE - 1) / CT_TILE;
  uint g = item / (CT_TILE * CT_TILE);  // the same for the whole workgroup
  uint k = g / (tu * tv), t = g - k * (tu * tv);
  bool live = i < pc.tl_count && k < pc.count;  // uniform too
  k = min(k, pc.count - 1u);
  int u0 = int((t % tu) * CT_TILE), v0 = int((t / tu) * CT_TILE);
  int u1 = min(u0 + CT_TILE, int(pc.nu)) - 1, v1 = min(v0 + CT_TILE, int(pc.nv)) - 1;
  int pu = u0 + int(l % CT_TILE), pv = v0 + int(l / CT_TILE);
  live = live && pu <= u1 && pv <= v1;
  CtView w = pc.views.v[pc.first + k * pc.stride];
  bool cone = (pc.flags & CT_CONE) != 0u;
  float y = live ? pc.proj.v[k * pc.nu * pc.nv + uint(pv) * pc.nu + uint(pu)] : 0.0;
  CtRay r = ct_ray(w, float(pu), float(pv), pc.corner, pc.voxel, cone);
  CtJoseph j;
  bool ok = y != 0.0 && ct_joseph_setup(r, pc.dims, j);

  if (l == 0u) {
    s_axes = 0u;
    s_klo = 0x7fffffff;
    s_khi = -1;
  }
  barrier();
  if (ok) {
    atomicOr(s_axes, 1u << uint(j.m));
    atomicMin(s_klo, j.klo);
    atomicMax(s_khi, j.khi);
  }
  barrier();
  uint axes = s_axes;
  int klo = s_klo, khi = s_khi;
  if (axes == 0u) return;  // nothing to add (uniform)
  if (bitCount(axes) > 1) {
    // the tile straddles a change of dominant axis: no common planes, each ray adds directly
    if (ok) ct_joseph_walk(r, pc.image, pc.dims, true, y);
    return;  // uniform
  }
  int m = findLSB(axes), au = m == 0 ? 1 : 0, av = m == 2 ? 1 : 2;
  // The tile's corner rays bound every ray's position on a plane: pixel -> point on the plane
  // is a projective map (affine for parallel beams) with no point at infinity (d_m keeps its
  // sign over the tile), so the tile's image is the convex hull of its corners' images. A
  // voxel of rounding margin; a tap outside the patch still adds directly (always correct).
  vec2 ca[4], cs[4];
  float cm[4];
  for (int c = 0; c < 4; c++) {
    CtRay rc = ct_ray(w, float((c & 1) != 0 ? u1 : u0), float((c & 2) != 0 ? v1 : v0), pc.corner,
                      pc.voxel, cone);
    cm[c] = rc.a[m];
    ca[c] = vec2(rc.a[au], rc.a[av]);
    cs[c] = vec2(rc.d[au], rc.d[av]) / rc.d[m];
  }
  ivec3 n = ivec3(pc.dims);
  uvec3 stride = uvec3(1u, pc.dims.x, pc.dims.x * pc.dims.y);
  float yw = ok ? y * j.wl : 0.0;
  for (int kk = klo; kk <= khi; kk++) {
    vec2 pmin = vec2(CT_BIG);
    for (int c = 0; c < 4; c++) pmin = min(pmin, ca[c] + (float(kk) + 0.5 - cm[c]) * cs[c]);
    ivec2 o = ivec2(floor(pmin - 0.5)) - 1;  // the patch's first voxel (u, v)
    s_patch[l] = 0u;
    barrier();
    if (ok && kk >= j.klo && kk <= j.khi) {
      ivec2 f;
      vec2 e;
      ct_joseph_plane(r, j, kk, f, e);
      for (int c = 0; c < 4; c++) {
        ivec2 q = f + ivec2(c & 1, c >> 1);
        if (q.x < 0 || q.x >= n[au] || q.y < 0 || q.y >= n[av]) continue;
        float wc = ((c & 1) != 0 ? e.x : 1.0 - e.x) * ((c >> 1) != 0 ? e.y : 1.0 - e.y);
        if (wc == 0.0) continue;
        ivec2 pq = q - o;
        if (pq.x >= 0 && pq.x < CT_PATCH && pq.y >= 0 && pq.y < CT_PATCH)
          ct_patch_add(uint(pq.y * CT_PATCH + pq.x), wc * yw);
        else
          ct_scatter(pc.image, uint(kk) * stride[m] + uint(q.x) * stride[au] + uint(q.y) * stride[av],
                     wc * yw);
      }
    }
    barrier();
    // flush: entry l of the patch (read, then cleared by this same invocation next plane)
    float v = uintBitsToFloat(s_patch[l]);
    ivec2 q = o + ivec2(int(l % CT_PATCH), int(l / CT_PATCH));
    if (v != 0.0 && q.x >= 0 && q.x < n[au] && q.y >= 0 && q.y < n[av])
      ct_scatter(pc.image, uint(kk) * stride[m] + uint(q.x) * stride[au] + uint(q.y) * stride[av], v);
  }
}
