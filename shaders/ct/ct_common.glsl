// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the CT kernels: the per-view table, the push block and the rays.
//
// Each view is 32 floats (scalar layout), written by tl-ct-projector.c from the normalised
// projection matrix P (tl-ct-geometry.h):
//   P[12]   row-major 3x4: (u w, v w, w) = P (x, y, z, 1), world mm -> detector pixel indices
//   Qa[9], Qd[9]  row-major 3x3: the ray through pixel (u, v) is A + t D with
//           A = Qa (u, v, 1): where it crosses the plane through the volume's centre
//               perpendicular to the central ray (parallel: to D), so points near the volume
//               are held in float, not the distant source
//           D = normalise(Qd (u, v, 1)) (cone: Qd = M^-1; parallel: every ray's direction)
//   wref    cone: the source is at t = -wref |Qd (u, v, 1)| (depth of the plane); rays start
//           there. Parallel: 0 (rays are whole lines).
// The forward projector (ray-driven), the scatter back projector (ray-driven) and the gather
// back projectors compute exactly the same ray for a pixel with ct_ray().
//
// Voxel units: voxel (i, j, k) is the unit cube [i, i+1) x [j, j+1) x [k, k+1); a world point
// X maps to (X - corner) / voxel, corner = outer corner of voxel 0 (pc.corner). t stays in mm.
#include "tl_common.glsl"

struct CtView {
  float P[12];
  float Qa[9];
  float Qd[9];
  float wref;
  float pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer CtViews { CtView v[]; };

#include "tl_constants.glsl"  // the flag bits and block sizes the host shares
#define CT_CONE TL_CT_FLAG_CONE
#define CT_ACCUMULATE TL_CT_FLAG_ACCUMULATE

// 104 bytes. Items: forward = detector pixels of the selected views (view-major, then rows,
// then columns); back = voxels. Views: first + k * stride for k < count; the projection array
// holds only those views, contiguous, in that order.
#define CT_PUSH                                                              \
  TL_PUSH_1D;                                                                \
  TlFloats image;                                                            \
  TlFloats proj;                                                             \
  CtViews views;                                                             \
  uvec3 dims;                                                                \
  vec3 corner;                                                               \
  vec3 voxel;                                                                \
  uint nu, nv;                                                               \
  uint first, stride, count;                                                 \
  float step;       /* ray casting: sample spacing in mm */                  \
  uint flags;                                                                \
  float bound;      /* ct_back_scatter with CT_FIXED: tl_fixed.glsl's amax */ \
  uint pad

const float CT_BIG = 3.0e38;

struct CtRay {
  vec3 a;     // start point A in voxel units
  vec3 d;     // unit direction D (mm) in voxel units per mm
  float t0;   // parameter range allowed by the beam: cone [0, big], parallel [-big, big]
  float t1;
};

vec3 ct_affine(float Q[9], float u, float v) {
  return vec3(Q[0] * u + Q[1] * v + Q[2], Q[3] * u + Q[4] * v + Q[5], Q[6] * u + Q[7] * v + Q[8]);
}

CtRay ct_ray(CtView w, float u, float v, vec3 corner, vec3 voxel, bool cone) {
  vec3 A = ct_affine(w.Qa, u, v), q = ct_affine(w.Qd, u, v);
  float len = length(q);
  CtRay r;
  r.a = (A - corner) / voxel;
  r.d = (q / len) / voxel;
  r.t0 = cone ? -w.wref * len : -CT_BIG;
  r.t1 = CT_BIG;
  return r;
}

// Clips [t0, t1] to the slab lo <= a_k + t d_k <= hi of axis k; false when it becomes empty.
// A ray parallel to the slab is kept iff lo <= a_k < hi (half-open, as voxels are).
bool ct_clip(float a, float d, float lo, float hi, inout float t0, inout float t1) {
  if (d == 0.0) return a >= lo && a < hi;
  float ta = (lo - a) / d, tb = (hi - a) / d;
  t0 = max(t0, min(ta, tb));
  t1 = min(t1, max(ta, tb));
  return t0 <= t1;
}

// Projection of a world point: (u, v); w returned (1 for parallel beam).
vec2 ct_project(CtView w, vec3 x, out float depth) {
  depth = w.P[8] * x.x + w.P[9] * x.y + w.P[10] * x.z + w.P[11];
  float uw = w.P[0] * x.x + w.P[1] * x.y + w.P[2] * x.z + w.P[3];
  float vw = w.P[4] * x.x + w.P[5] * x.y + w.P[6] * x.z + w.P[7];
  return vec2(uw, vw) / depth;
}

uint ct_voxel_index(ivec3 v, uvec3 dims) {
  return uint(v.x) + dims.x * (uint(v.y) + dims.y * uint(v.z));
}

// img[i] += v from many invocations at once (the scatter back projector, ct_back_scatter.glsl).
// A kernel that enabled GL_EXT_shader_atomic_float defines CT_FLOAT_ATOMIC and adds with a
// float atomic; every other build has the compare-and-swap loop on the bits, which needs only
// the 32-bit integer atomics every Vulkan device has (the forward and gather kernels compile
// it too, but never call it).
//
// ct_back_scatter.glsl defines CT_SCATTER_KERNEL: with its constant CT_FIXED = 1 img is a
// 64-bit fixed-point accumulator (tl_fixed.glsl) and the sums come out the same on every run.
#ifdef CT_SCATTER_KERNEL
#include "tl_fixed.glsl"
layout(constant_id = 3) const uint CT_FIXED = 0;
int ct_fixed_k = 0;  // CT_FIXED: the call's scale exponent, set by main
#endif
void ct_scatter(TlFloats img, uint i, float v) {
#ifdef CT_SCATTER_KERNEL
  if (CT_FIXED == 1u) {
    tl_fixed_add(TlUints(img), i, v, ct_fixed_k);
    return;
  }
#endif
#ifdef CT_FLOAT_ATOMIC
  atomicAdd(img.v[i], v);
#else
  TlUints bits = TlUints(img);
  uint seen = bits.v[i];
  for (;;) {
    uint old = seen;
    seen = atomicCompSwap(bits.v[i], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (seen == old) break;
  }
#endif
}
