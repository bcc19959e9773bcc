#version 460
#extension GL_GOOGLE_include_directive : require
// Voxel-driven back projection of seed 003 (RabbitCT), eq. 1 and Algorithm 1:
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

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint idx = pc.tl_base + i;
  uvec3 n = uvec3(idx % pc.dims.x, (idx / pc.dims.x) % pc.dims.y, idx / (pc.dims.x * pc.dims.y));
  vec3 x = pc.corner + (vec3(n) + 0.5) * pc.voxel;  // voxel centre, mm
  int nu = int(pc.nu), nv = int(pc.nv);
  uint npix = pc.nu * pc.nv;
  float acc = 0.0;
  for (uint k = 0u; k < pc.count; k++) {
    CtVec4s w4 = CtVec4s(pc.views);
    uint vb = (pc.first + k * pc.stride) * 8u;
    vec4 xh = vec4(x, 1.0);
    float depth = dot(w4.v[vb + 2u], xh);  // w_n
    if (!(depth > 0.0)) continue;          // behind the source
    vec2 uv = vec2(dot(w4.v[vb], xh), dot(w4.v[vb + 1u], xh)) / depth;  // u_n, v_n
    vec2 fl = floor(uv);
    ivec2 f = ivec2(fl);
    vec2 e = uv - fl;
    if (f.x < -1 || f.x >= nu || f.y < -1 || f.y >= nv) continue;
    // taps outside the detector weigh 0 (zero boundary); their addresses are clamped so the
    // four loads need no branches
    ivec2 top = ivec2(nu - 1, nv - 1);
    ivec2 q0 = clamp(f, ivec2(0), top), q1 = clamp(f + 1, ivec2(0), top);
    vec2 w0 = vec2(equal(q0, f)) * (1.0 - e), w1 = vec2(equal(q1, f + 1)) * e;
    TlFloats pr = pc.proj;
    uint o0 = k * npix + uint(q0.y) * pc.nu, o1 = k * npix + uint(q1.y) * pc.nu;
    float s = w0.y * (w0.x * pr.v[o0 + uint(q0.x)] + w1.x * pr.v[o0 + uint(q1.x)]) +
              w1.y * (w0.x * pr.v[o1 + uint(q0.x)] + w1.x * pr.v[o1 + uint(q1.x)]);
    acc += s / (depth * depth);
  }
  if ((pc.flags & CT_ACCUMULATE) != 0u) acc += pc.image.v[idx];
  pc.image.v[idx] = acc;
}
