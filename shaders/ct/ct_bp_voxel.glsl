// SPDX-License-Identifier: GPL-3.0-or-later
// Voxel-driven back projection of Siegl et al. 2011 (RabbitCT), eq. 1 and Algorithm 1:
//   f(x, y, z) = sum_n 1 / w_n(x, y, z)^2 * p^_n(u_n(x, y, z), v_n(x, y, z))
//   u_n = (a0 x + a3 y + a6 z + a9) / w_n,  v_n = (a1 x + a4 y + a7 z + a10) / w_n,
//   w_n = a2 x + a5 y + a8 z + a11
// with (x, y, z) the voxel centre in mm, A_n the view's projection matrix (normalised, so w
// is the depth in mm; parallel beam: w = 1) and p^_n bilinear interpolation in projection n
// with a zero boundary. One invocation per voxel loops over the selected views (gather, no
// atomics). This is FDK's back projector; it is not the adjoint of a forward projector.
#include "ct_common.glsl"

layout(push_constant, scalar) uniform Push { CT_PUSH; } pc;
// The view table read as vec4 rows: P's three rows are the first three of each record's eight.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer CtVec4s { vec4 v[]; };

// One invocation back-projects CT_BP_BLOCK voxels consecutive along x: (u w, v w, w) is affine
// in x, so the view's matrix is read once for all of them and each voxel adds one step.
#define CT_BP_BLOCK TL_CT_BP_BLOCK

// Eq. 1's bilinear sample p^_n(u, v) with a zero boundary. Taps outside the detector weigh 0;
// their addresses are clamped so the four loads need no branches.
#ifdef CT_BP_INT64
// ct_bp_voxel64 (devices with shaderInt64, detectors of 2 columns or more): each row's two taps
// are read as one 64-bit word from column c = clamp(f.x, 0, nu - 2), so two loads instead of
// four; lavapipe makes each load a loop over the SIMD lanes, so the loop count halves. Column c
// weighs (1 - e.x) where it is f.x, e.x where it is f.x + 1, else 0 (the detector's edges); in
// the interior the sum is the four-load expression term for term.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer CtPair64 { uint64_t v; };
vec2 ct_pair(TlFloats pr, uint o) {
  uint64_t b = CtPair64(uint64_t(pr) + 4ul * uint64_t(o)).v;
  return vec2(uintBitsToFloat(uint(b)), uintBitsToFloat(uint(b >> 32)));
}
float ct_bilinear(TlFloats pr, uint base, vec2 uv, int nu, int nv) {
  vec2 fl = floor(uv);
  ivec2 f = ivec2(fl);
  vec2 e = uv - fl;
  if (f.x < -1 || f.x >= nu || f.y < -1 || f.y >= nv) return 0.0;
  int c = clamp(f.x, 0, nu - 2);
  float wc0 = c == f.x ? 1.0 - e.x : (c == f.x + 1 ? e.x : 0.0);
  float wc1 = c + 1 == f.x ? 1.0 - e.x : (c + 1 == f.x + 1 ? e.x : 0.0);
  int y0 = clamp(f.y, 0, nv - 1), y1 = clamp(f.y + 1, 0, nv - 1);
  float wy0 = y0 == f.y ? 1.0 - e.y : 0.0, wy1 = y1 == f.y + 1 ? e.y : 0.0;
  vec2 a = ct_pair(pr, base + uint(y0) * uint(nu) + uint(c));
  vec2 b = ct_pair(pr, base + uint(y1) * uint(nu) + uint(c));
  return wy0 * (wc0 * a.x + wc1 * a.y) + wy1 * (wc0 * b.x + wc1 * b.y);
}
#else
float ct_bilinear(TlFloats pr, uint base, vec2 uv, int nu, int nv) {
  vec2 fl = floor(uv);
  ivec2 f = ivec2(fl);
  vec2 e = uv - fl;
  if (f.x < -1 || f.x >= nu || f.y < -1 || f.y >= nv) return 0.0;
  ivec2 top = ivec2(nu - 1, nv - 1);
  ivec2 q0 = clamp(f, ivec2(0), top), q1 = clamp(f + 1, ivec2(0), top);
  vec2 w0 = vec2(equal(q0, f)) * (1.0 - e), w1 = vec2(equal(q1, f + 1)) * e;
  uint o0 = base + uint(q0.y) * uint(nu), o1 = base + uint(q1.y) * uint(nu);
  return w0.y * (w0.x * pr.v[o0 + uint(q0.x)] + w1.x * pr.v[o0 + uint(q1.x)]) +
         w1.y * (w0.x * pr.v[o1 + uint(q0.x)] + w1.x * pr.v[o1 + uint(q1.x)]);
}
#endif

// Constant 1, ROWS = 1: every voxel projects onto the centre of a detector row in every view
// (the host decides from the matrices, tl-ct-projector.c: parallel beam about the detector's v
// axis with the slices on its rows, as a scan reconstructed row by row or the centre search's
// one-row slices). There v's fraction is 0, so eq. 1's row weights are 1 and 0 and the sample
// is the linear interpolation along that row: two loads instead of four (ct_bp_voxel64: one),
// the same value.
layout(constant_id = 1) const uint ROWS = 0;
float ct_linear_row(TlFloats pr, uint base, vec2 uv, int nu, int nv) {
  int iv = int(round(uv.y));
  float fl = floor(uv.x);
  int f = int(fl);
  float e = uv.x - fl;
  if (f < -1 || f >= nu || iv < 0 || iv >= nv) return 0.0;
#ifdef CT_BP_INT64
  // the two taps as one 64-bit word from column c (weights as ct_bilinear's)
  int c = clamp(f, 0, nu - 2);
  float wc0 = c == f ? 1.0 - e : (c == f + 1 ? e : 0.0);
  float wc1 = c + 1 == f ? 1.0 - e : (c + 1 == f + 1 ? e : 0.0);
  vec2 a = ct_pair(pr, base + uint(iv) * uint(nu) + uint(c));
  return wc0 * a.x + wc1 * a.y;
#else
  int q0 = clamp(f, 0, nu - 1), q1 = clamp(f + 1, 0, nu - 1);
  float w0 = q0 == f ? 1.0 - e : 0.0, w1 = q1 == f + 1 ? e : 0.0;
  uint o = base + uint(iv) * uint(nu);
  return w0 * pr.v[o + uint(q0)] + w1 * pr.v[o + uint(q1)];
#endif
}

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint item = pc.tl_base + i;
  uint bx = (pc.dims.x + CT_BP_BLOCK - 1) / CT_BP_BLOCK;
  uvec3 n = uvec3((item % bx) * CT_BP_BLOCK, (item / bx) % pc.dims.y, item / (bx * pc.dims.y));
  // pc.bound > 0 (tl_ct_projector_set_disc): the squared radius, in voxels, of the disc about
  // the slice's centre column outside which voxels are not back-projected but set to 0; a
  // block is skipped when its voxel nearest the centre is outside.
  bool skip = false;
  if (pc.bound > 0.0) {
    vec2 c = 0.5 * vec2(pc.dims.xy) - 0.5;
    float dx = clamp(c.x, float(n.x), float(n.x + CT_BP_BLOCK - 1u)) - c.x, dy = float(n.y) - c.y;
    skip = dx * dx + dy * dy > pc.bound;
  }
  vec4 x0 = vec4(pc.corner + (vec3(n) + 0.5) * pc.voxel, 1.0);  // first voxel's centre, mm
  int nu = int(pc.nu), nv = int(pc.nv);
  uint npix = pc.nu * pc.nv;
  float acc[CT_BP_BLOCK];
  for (int t = 0; t < CT_BP_BLOCK; t++) acc[t] = 0.0;
  CtVec4s w4 = CtVec4s(pc.views);
  for (uint k = 0u; k < (skip ? 0u : pc.count); k++) {
    uint vb = (pc.first + k * pc.stride) * 8u;
    vec4 r0 = w4.v[vb], r1 = w4.v[vb + 1u], r2 = w4.v[vb + 2u];
    // (u_n w_n, v_n w_n, w_n) at the first voxel and its step along x (eq. 1, a_k = P)
    vec3 p = vec3(dot(r0, x0), dot(r1, x0), dot(r2, x0));
    vec3 dp = pc.voxel.x * vec3(r0.x, r1.x, r2.x);
    for (int t = 0; t < CT_BP_BLOCK; t++) {
      vec3 q = p + float(t) * dp;
      if (!(q.z > 0.0)) continue;  // behind the source
      float r = 1.0 / q.z;
      vec2 uv = q.xy * r;
      float s = ROWS == 1u ? ct_linear_row(pc.proj, k * npix, uv, nu, nv)
                           : ct_bilinear(pc.proj, k * npix, uv, nu, nv);
      acc[t] += s * (r * r);
    }
  }
  for (int t = 0; t < CT_BP_BLOCK; t++) {
    if (n.x + uint(t) >= pc.dims.x) break;
    uint idx = n.x + uint(t) + pc.dims.x * (n.y + pc.dims.y * n.z);
    float v = acc[t];
    if (skip && (pc.flags & CT_ACCUMULATE) != 0u) break;  // left as it is
    if ((pc.flags & CT_ACCUMULATE) != 0u) v += pc.image.v[idx];
    pc.image.v[idx] = v;
  }
}
