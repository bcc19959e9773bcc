#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Penalties R(x) of compute/recon/tl-prior.h on the 3 x 3 x 3 neighbourhood, one invocation per
// voxel. KIND (specialization constant 1) picks the prior, VALUE (constant 2) what is written:
//   VALUE = 0  out[j] = dR/dx_j
//   VALUE = 1  out[g] = sum over workgroup g's voxels of their share of R (the host adds the
//              partials in double)
//   VALUE = 2  out[j] = d^2 R / dx_j^2, the Hessian's diagonal (quadratic and rdp)
// With use_kappa, every pair term of quadratic and rdp is weighted by kappa_j kappa_k (the
// per-voxel penalty strengths of Tsai et al. 2020, as STIR's and PETRIC's RDP).
// Voxels outside the grid do not exist: a pair with one of them is skipped, and TV's forward
// difference across the far face is 0.
#include "tl_common.glsl"

layout(constant_id = 1) const uint KIND = 0;  // 0 quadratic, 1 rdp, 2 tv (TlPriorClass.kind)
layout(constant_id = 2) const uint VALUE = 0;

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats x;
  TlFloats out_;   // gradient (one per voxel) or partials (one per workgroup)
  TlFloats kappa;  // per-voxel weights (read only with use_kappa)
  uint dims[3];
  float voxel[3];  // mm
  float gamma;     // rdp
  float eps;       // rdp (image units), tv (per mm)
  uint use_kappa;
} pc;

shared float part[gl_WorkGroupSize.x];

int nx, ny, nz;
ivec3 c;          // this voxel
float xj;

float at(ivec3 p) { return pc.x.v[uint(p.x + nx * (p.y + ny * p.z))]; }

// w_jk = 1 / (distance between centres in units of the smallest voxel edge)
float weight(ivec3 d) {
  vec3 v = vec3(pc.voxel[0], pc.voxel[1], pc.voxel[2]);
  vec3 r = vec3(d) * v / min(v.x, min(v.y, v.z));
  return 1.0 / sqrt(dot(r, r));
}

// Pair terms of the double sum over j and k in N_j, as functions of a = x_j, b = x_k:
//   quadratic  value 1/4 (a-b)^2,  d/da (a-b) (the 1/4 of R, times 2 visits of the pair)
//   rdp        value 1/2 (a-b)^2 / D with D = a + b + gamma |a-b| + eps, and
//              d/da [(a-b)^2 / D] = (a-b) (a + 3b + gamma |a-b| + 2 eps) / D^2
//              (Nuyts et al. 2002: with r = a/b and eps = 0 this is their
//              (r-1)(gamma |r-1| + r + 3) / (r + 1 + gamma |r-1|)^2)
float pair_value(float a, float b) {
  float d = a - b;
  if (KIND == 0) return 0.25 * d * d;
  return 0.5 * d * d / (a + b + pc.gamma * abs(d) + pc.eps);
}

float pair_grad(float a, float b) {
  float d = a - b;
  if (KIND == 0) return d;
  float den = a + b + pc.gamma * abs(d) + pc.eps;
  return d * (a + 3.0 * b + pc.gamma * abs(d) + 2.0 * pc.eps) / (den * den);
}

//   second derivatives d^2/da^2 of the pair terms (the Hessian's diagonal):
//   quadratic  1
//   rdp        2 (2b + eps)^2 / D^3   (with d = a-b, D' = 1 + gamma sign(d):
//              D - d D' = 2b + eps, so d^2/da^2 (d^2/D) = 2 (D - d D')^2 / D^3 away from d = 0)
float pair_hess(float a, float b) {
  if (KIND == 0) return 1.0;
  float den = a + b + pc.gamma * abs(a - b) + pc.eps;
  float t = 2.0 * b + pc.eps;
  return 2.0 * t * t / (den * den * den);
}

float pairs(uint what) {
  float kj = pc.use_kappa != 0u ? pc.kappa.v[uint(c.x + nx * (c.y + ny * c.z))] : 1.0;
  float s = 0.0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        ivec3 d = ivec3(dx, dy, dz);
        ivec3 p = c + d;
        if (d == ivec3(0) || any(lessThan(p, ivec3(0))) ||
            any(greaterThanEqual(p, ivec3(nx, ny, nz))))
          continue;
        float xk = at(p);
        float w = weight(d);
        if (pc.use_kappa != 0u) w *= kj * pc.kappa.v[uint(p.x + nx * (p.y + ny * p.z))];
        s += w * (what == 1u ? pair_value(xj, xk)
                             : what == 0u ? pair_grad(xj, xk) : pair_hess(xj, xk));
      }
  return s;
}

// TV: forward differences in mm at voxel p, 0 across the far face.
vec3 fgrad(ivec3 p) {
  float v = at(p);
  vec3 g = vec3(0.0);
  if (p.x + 1 < nx) g.x = (at(p + ivec3(1, 0, 0)) - v) / pc.voxel[0];
  if (p.y + 1 < ny) g.y = (at(p + ivec3(0, 1, 0)) - v) / pc.voxel[1];
  if (p.z + 1 < nz) g.z = (at(p + ivec3(0, 0, 1)) - v) / pc.voxel[2];
  return g;
}

// sqrt(|g|^2 + eps^2) - eps, written as |g|^2 / (sqrt(|g|^2 + eps^2) + eps) so that small
// gradients do not cancel in float.
float tv_value() {
  vec3 g = fgrad(c);
  float q = dot(g, g);
  return q / (sqrt(q + pc.eps * pc.eps) + pc.eps);
}

// dR/dx_m = sum_a [ g_{m-e_a,a} / S_{m-e_a} - g_{m,a} / S_m ] / v_a, S = sqrt(|g|^2 + eps^2):
// x_m enters its own forward differences with -1/v_a and those of its back neighbours with
// +1/v_a (a back neighbour outside the grid has no term).
float tv_grad() {
  vec3 v = vec3(pc.voxel[0], pc.voxel[1], pc.voxel[2]);
  vec3 g = fgrad(c);
  float r = -dot(g / v, vec3(1.0)) / sqrt(dot(g, g) + pc.eps * pc.eps);
  for (int a = 0; a < 3; a++) {
    if (c[a] == 0) continue;
    ivec3 p = c;
    p[a] -= 1;
    vec3 h = fgrad(p);
    r += h[a] / (v[a] * sqrt(dot(h, h) + pc.eps * pc.eps));
  }
  return r;
}

void main() {
  uint li = tl_local_item();
  bool live = li < pc.tl_count;
  uint i = pc.tl_base + li;
  nx = int(pc.dims[0]); ny = int(pc.dims[1]); nz = int(pc.dims[2]);
  c = ivec3(int(i % uint(nx)), int((i / uint(nx)) % uint(ny)), int(i / uint(nx * ny)));
  if (VALUE != 1) {
    if (!live) return;
    xj = pc.x.v[i];
    pc.out_.v[i] = KIND == 2 ? (VALUE == 0 ? tv_grad() : 0.0) : pairs(VALUE);
    return;
  }
  // Value: every term is >= 0 (for x >= 0), so a pairwise tree in float loses at most about
  // log2(workgroup size) roundings relative to the partial.
  uint lane = gl_LocalInvocationID.x;
  float r = 0.0;
  if (live) {
    xj = pc.x.v[i];
    r = KIND == 2 ? tv_value() : pairs(1u);
  }
  part[lane] = r;
  barrier();
  const uint WG = gl_WorkGroupSize.x;
  uint h = 1u;
  while (h < WG) h <<= 1;  // works for a workgroup size that is not a power of two
  for (h >>= 1; h > 0u; h >>= 1) {
    if (lane < h && lane + h < WG) part[lane] += part[lane + h];
    barrier();
  }
  // lane 0 of a group past the end (the 2-D grid may round up) writes nothing
  if (lane == 0u && live) pc.out_.v[pc.tl_base / WG + gl_WorkGroupID.y * gl_NumWorkGroups.x +
                                    gl_WorkGroupID.x] = part[0];
}
