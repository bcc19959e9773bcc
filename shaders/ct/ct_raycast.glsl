// SPDX-License-Identifier: GPL-3.0-or-later
// Ray casting with trilinear samples (Siegl et al. 2011 sec. 2.3, Algorithm 2 and eq. 3): the
// image is
// sampled at equidistant points A + t_k D, t_k = k * alpha (k integer, alpha = pc.step mm),
// by trilinear interpolation f^ with zero outside, and the line integral is alpha * sum_k
// f^(sp_k). So a_jn = alpha * sum_k (trilinear weight of voxel n at sample k).
//
// The scatter back projector walks the same samples as the forward. Samples sit on a grid fixed
// by the ray alone (multiples of alpha from A), so the gather back
// projector finds the very samples the forward projector took near voxel n, and computes
// their weights with the same expressions: an exact adjoint.

// Samples that can touch the image: centre coordinates (x - 0.5) within (-1, n).
bool ct_raycast_range(CtRay r, uvec3 dims, float alpha, out int k0, out int k1) {
  float t0 = r.t0, t1 = r.t1;
  for (int k = 0; k < 3; k++)
    if (!ct_clip(r.a[k], r.d[k], -0.5, float(dims[k]) + 0.5, t0, t1)) return false;
  k0 = int(ceil(t0 / alpha));
  k1 = int(floor(t1 / alpha));
  return k0 <= k1;
}

// Weight of the corner o (0 or 1 per axis) of the cell whose fractions are e.
float ct_tri_weight(vec3 e, ivec3 o) {
  return (o.x == 1 ? e.x : 1.0 - e.x) * (o.y == 1 ? e.y : 1.0 - e.y) * (o.z == 1 ? e.z : 1.0 - e.z);
}

void ct_raycast_sample(CtRay r, float alpha, int k, out ivec3 f, out vec3 e) {
  vec3 c = r.a + (float(k) * alpha) * r.d - 0.5;
  vec3 fl = floor(c);
  f = ivec3(fl);
  e = c - fl;
}

// The walk of one ray. back = false: returns sum_n a_jn img[n] (forward); back = true: adds
// a_jn y into img[n] at every sample's eight neighbours (the scatter adjoint), returns 0.
float ct_raycast_walk(CtRay r, TlFloats img, uvec3 dims, float alpha, bool back, float y) {
  int k0, k1;
  if (!ct_raycast_range(r, dims, alpha, k0, k1)) return 0.0;
  ivec3 n = ivec3(dims);
  float acc = 0.0, ya = y * alpha;
  for (int k = k0; k <= k1; k++) {
    ivec3 f;
    vec3 e;
    ct_raycast_sample(r, alpha, k, f, e);
    for (int c = 0; c < 8; c++) {
      ivec3 o = ivec3(c & 1, (c >> 1) & 1, c >> 2);
      ivec3 q = f + o;
      if (any(lessThan(q, ivec3(0))) || any(greaterThanEqual(q, n))) continue;
      float wt = ct_tri_weight(e, o);
      if (back) {
        if (wt != 0.0) ct_scatter(img, ct_voxel_index(q, dims), wt * ya);
      } else {
        acc += wt * img.v[ct_voxel_index(q, dims)];
      }
    }
  }
  return acc * alpha;
}

float ct_raycast_forward(CtRay r, TlFloats img, uvec3 dims, float alpha) {
  return ct_raycast_walk(r, img, dims, alpha, false, 0.0);
}

float ct_raycast_weight(CtRay r, ivec3 n, uvec3 dims, float alpha) {
  int k0, k1;
  if (!ct_raycast_range(r, dims, alpha, k0, k1)) return 0.0;
  // samples within the support (n - 1, n + 1) of voxel n, widened by one sample each side
  // against rounding; the exact test is the floor check below
  float t0 = r.t0, t1 = r.t1;
  for (int k = 0; k < 3; k++)
    if (!ct_clip(r.a[k], r.d[k], float(n[k]) - 0.5, float(n[k]) + 1.5, t0, t1)) return 0.0;
  int j0 = max(k0, int(ceil(t0 / alpha)) - 1), j1 = min(k1, int(floor(t1 / alpha)) + 1);
  float acc = 0.0;
  for (int k = j0; k <= j1; k++) {
    ivec3 f;
    vec3 e;
    ct_raycast_sample(r, alpha, k, f, e);
    ivec3 o = n - f;
    if (any(lessThan(o, ivec3(0))) || any(greaterThan(o, ivec3(1)))) continue;
    acc += ct_tri_weight(e, o);
  }
  return acc * alpha;
}

