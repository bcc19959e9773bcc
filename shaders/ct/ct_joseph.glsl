// SPDX-License-Identifier: GPL-3.0-or-later
// Joseph's projector (Petit 2020 ch. 3, [Jos82]): the ray is cut by the planes through the voxel
// centres perpendicular to its dominant axis m (the axis it advances along fastest, so it
// moves at most one voxel sideways per plane); on each plane the image is interpolated
// bilinearly from the four nearest voxel centres (zero outside), and each sample is weighted
// by the ray length between two planes, 1 / |d_m| mm. So a_jn = bilinear weight x 1 / |d_m|.
//
// ct_joseph_setup() decides the planes of a ray; forward, the scatter and the gather back
// projectors call it and compute the in-plane position with the same expressions, so the weights are
// identical and the pair is an exact adjoint.

struct CtJoseph {
  int m, u, v;     // dominant and transverse axes
  int klo, khi;    // planes k + 0.5 along m, k in [klo, khi]
  float su, sv;    // d_u / d_m, d_v / d_m
  float wl;        // mm per plane
};

bool ct_joseph_setup(CtRay r, uvec3 dims, out CtJoseph j) {
  vec3 ad = abs(r.d);
  j.m = (ad.x >= ad.y && ad.x >= ad.z) ? 0 : (ad.y >= ad.z ? 1 : 2);
  j.u = j.m == 0 ? 1 : 0;
  j.v = j.m == 2 ? 1 : 2;
  ivec3 n = ivec3(dims);
  // beyond -0.5 .. n + 0.5 on a transverse axis all four neighbours are outside the image
  float t0 = r.t0, t1 = r.t1;
  if (!ct_clip(r.a[j.m], r.d[j.m], 0.0, float(n[j.m]), t0, t1)) return false;
  if (!ct_clip(r.a[j.u], r.d[j.u], -0.5, float(n[j.u]) + 0.5, t0, t1)) return false;
  if (!ct_clip(r.a[j.v], r.d[j.v], -0.5, float(n[j.v]) + 0.5, t0, t1)) return false;
  float c0 = r.a[j.m] + t0 * r.d[j.m], c1 = r.a[j.m] + t1 * r.d[j.m];
  j.klo = int(clamp(ceil(min(c0, c1) - 0.5), 0.0, float(n[j.m])));
  j.khi = int(clamp(floor(max(c0, c1) - 0.5), -1.0, float(n[j.m] - 1)));
  j.su = r.d[j.u] / r.d[j.m];
  j.sv = r.d[j.v] / r.d[j.m];
  j.wl = 1.0 / ad[j.m];
  return j.klo <= j.khi;
}

// In-plane position on plane k relative to the voxel centres: floor and fraction.
void ct_joseph_plane(CtRay r, CtJoseph j, int k, out ivec2 f, out vec2 e) {
  float dm = float(k) + 0.5 - r.a[j.m];
  vec2 p = vec2(r.a[j.u] + dm * j.su, r.a[j.v] + dm * j.sv) - 0.5;
  vec2 fl = floor(p);
  f = ivec2(fl);
  e = p - fl;
}

// The walk of one ray, shared by both directions so their weights are the same expressions:
// back = false returns sum_n a_jn img[n] (forward); back = true adds a_jn y into img[n] for
// every voxel n the ray touches (the scatter adjoint) and returns 0. Callers pass back as a
// constant, so each kernel keeps only its own branch.
float ct_joseph_walk(CtRay r, TlFloats img, uvec3 dims, bool back, float y) {
  CtJoseph j;
  if (!ct_joseph_setup(r, dims, j)) return 0.0;
  ivec3 n = ivec3(dims);
  uvec3 stride = uvec3(1u, dims.x, dims.x * dims.y);
  float acc = 0.0, yw = y * j.wl;
  for (int k = j.klo; k <= j.khi; k++) {
    ivec2 f;
    vec2 e;
    ct_joseph_plane(r, j, k, f, e);
    float s = 0.0;
    for (int c = 0; c < 4; c++) {
      ivec2 q = f + ivec2(c & 1, c >> 1);
      if (q.x < 0 || q.x >= n[j.u] || q.y < 0 || q.y >= n[j.v]) continue;
      float wc = ((c & 1) != 0 ? e.x : 1.0 - e.x) * ((c >> 1) != 0 ? e.y : 1.0 - e.y);
      uint idx = uint(k) * stride[j.m] + uint(q.x) * stride[j.u] + uint(q.y) * stride[j.v];
      if (back) {
        if (wc != 0.0) ct_scatter(img, idx, wc * yw);
      } else {
        s += wc * img.v[idx];
      }
    }
    acc += s;
  }
  return acc * j.wl;
}

float ct_joseph_forward(CtRay r, TlFloats img, uvec3 dims) {
  return ct_joseph_walk(r, img, dims, false, 0.0);
}

// The gather side needs no clipping: a plane whose in-plane position lies within one voxel
// centre of an image voxel is inside the slabs ct_joseph_setup() clips to (up to a rounding
// tie at a slab face, where the weight is ~0), and every voxel lies in front of the source.
float ct_joseph_weight(CtRay r, ivec3 n, uvec3 dims) {
  CtJoseph j;
  vec3 ad = abs(r.d);
  j.m = (ad.x >= ad.y && ad.x >= ad.z) ? 0 : (ad.y >= ad.z ? 1 : 2);
  j.u = j.m == 0 ? 1 : 0;
  j.v = j.m == 2 ? 1 : 2;
  j.su = r.d[j.u] / r.d[j.m];
  j.sv = r.d[j.v] / r.d[j.m];
  ivec2 f;
  vec2 e;
  ct_joseph_plane(r, j, n[j.m], f, e);
  ivec2 o = ivec2(n[j.u], n[j.v]) - f;
  if (o.x < 0 || o.x > 1 || o.y < 0 || o.y > 1) return 0.0;
  return (o.x == 1 ? e.x : 1.0 - e.x) * (o.y == 1 ? e.y : 1.0 - e.y) / ad[j.m];
}
