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

// Bilinear weight of tap o (0 or 1 along each in-plane axis) at fraction e; 0 off the 2 x 2.
float ct_joseph_tap(ivec2 o, vec2 e) {
  float wu = o.x == 0 ? 1.0 - e.x : (o.x == 1 ? e.x : 0.0);
  float wv = o.y == 0 ? 1.0 - e.y : (o.y == 1 ? e.y : 0.0);
  return wu * wv;
}

// The scatter of two rays at once (ct_back_scatter.glsl's constant PAIR: neighbouring pixels
// of one detector row). Where both cut plane k with 2 x 2 taps within one 3 x 3 patch of voxels,
// each voxel of the patch gets a_An y_A + a_Bn y_B in one add instead of one add per ray: at
// ~2.4 pixels per voxel the two rays share all four taps on ~60 % of the planes and two of them
// on the rest, so about 5 adds where the single walks make 8. The weights are the single walk's
// expressions, so the pair is the same transpose to float rounding; a lone ray's term is the
// single walk's value exactly (adding a zero). Rays with different dominant axes, or whose
// taps are farther apart, are walked one by one.
void ct_joseph_back_pair(CtRay ra, float ya, CtRay rb, float yb, TlFloats img, uvec3 dims) {
  CtJoseph ja, jb;
  bool oka = ya != 0.0 && ct_joseph_setup(ra, dims, ja);
  bool okb = yb != 0.0 && ct_joseph_setup(rb, dims, jb);
  if (!(oka && okb && ja.m == jb.m)) {
    if (oka) ct_joseph_walk(ra, img, dims, true, ya);
    if (okb) ct_joseph_walk(rb, img, dims, true, yb);
    return;
  }
  ivec3 n = ivec3(dims);
  uvec3 stride = uvec3(1u, dims.x, dims.x * dims.y);
  float ywa = ya * ja.wl, ywb = yb * jb.wl;
  for (int k = min(ja.klo, jb.klo); k <= max(ja.khi, jb.khi); k++) {
    bool ina = k >= ja.klo && k <= ja.khi, inb = k >= jb.klo && k <= jb.khi;
    ivec2 fa, fb;
    vec2 ea, eb;
    ct_joseph_plane(ra, ja, k, fa, ea);
    ct_joseph_plane(rb, jb, k, fb, eb);
    ivec2 f0 = min(fa, fb), d = abs(fa - fb);
    if (!ina) f0 = fb;
    if (!inb) f0 = fa;
    if (ina && inb && (d.x > 1 || d.y > 1)) {  // apart: each ray's four taps alone
      for (int c = 0; c < 8; c++) {
        bool b = c >= 4;
        ivec2 o = ivec2(c & 1, (c >> 1) & 1), q = (b ? fb : fa) + o;
        if (q.x < 0 || q.x >= n[ja.u] || q.y < 0 || q.y >= n[ja.v]) continue;
        float wc = ct_joseph_tap(o, b ? eb : ea);
        uint idx = uint(k) * stride[ja.m] + uint(q.x) * stride[ja.u] + uint(q.y) * stride[ja.v];
        if (wc != 0.0) ct_scatter(img, idx, wc * (b ? ywb : ywa));
      }
      continue;
    }
    for (int c = 0; c < 9; c++) {
      ivec2 o = ivec2(c % 3, c / 3), q = f0 + o;
      if (q.x < 0 || q.x >= n[ja.u] || q.y < 0 || q.y >= n[ja.v]) continue;
      float wa = ina ? ct_joseph_tap(q - fa, ea) : 0.0, wb = inb ? ct_joseph_tap(q - fb, eb) : 0.0;
      float t = wa * ywa + wb * ywb;
      uint idx = uint(k) * stride[ja.m] + uint(q.x) * stride[ja.u] + uint(q.y) * stride[ja.v];
      if (wa != 0.0 || wb != 0.0) ct_scatter(img, idx, t);
    }
  }
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
