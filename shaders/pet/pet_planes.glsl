// SPDX-License-Identifier: GPL-3.0-or-later
// The plane walk shared by Joseph's projector and the tube of response: the ray is cut by the
// planes through the voxel centres perpendicular to its dominant axis m (the axis along which
// it crosses the most voxels, so it moves at most one voxel sideways per plane), and each
// plane's sample stands for the ray length between two planes, len_mm / |d_m| (d in voxels).

struct PetPlanes {
  int m, u, v;      // dominant axis and the two transverse axes
  vec3 a, d;        // p0 and p1 - p0 in voxel units relative to the image corner
  int k0, k1;       // planes k (centre coordinate k + 0.5) to visit, inclusive
  float wl;         // len_mm / |d_m|: ray length per plane
  float su, sv;     // transverse step per plane, voxels
  float len_mm;
};

// (m, u, v): the dominant axis of d (voxel units) and the two others in increasing order.
ivec3 pet_axes(vec3 d) {
  vec3 ad = abs(d);
  int m = (ad.x >= ad.y && ad.x >= ad.z) ? 0 : (ad.y >= ad.z ? 1 : 2);
  return ivec3(m, m == 0 ? 1 : 0, m == 2 ? 1 : 2);
}

// reach_u, reach_v: how far (voxels) from a voxel centre a sample still gives it weight
// (1 for the bilinear hat). Planes whose sample is farther than that from every voxel of the
// image, and with TOF those outside the TOF window, are left out. False: nothing to visit.
bool pet_planes(PetLor l, float reach_u, float reach_v, out PetPlanes P) {
  P.a = (l.p0 - pc.lo) / pc.vox;
  P.d = (l.p1 - l.p0) / pc.vox;
  P.len_mm = distance(l.p0, l.p1);
  ivec3 ax = pet_axes(P.d);
  P.m = ax.x;
  P.u = ax.y;
  P.v = ax.z;
  P.k0 = 0;
  P.k1 = -1;
  if (P.d[P.m] == 0.0) return false;  // a zero-length LOR
  ivec3 n = ivec3(pc.dims);
  float t0 = 0.0, t1 = 1.0;
  for (int j = 0; j < 2; j++) {
    int k = j == 0 ? P.u : P.v;
    float r = j == 0 ? reach_u : reach_v;
    float lo = 0.5 - r, hi = float(n[k]) - 0.5 + r;  // centres are at 0.5 .. n - 0.5
    if (P.d[k] == 0.0) {
      if (P.a[k] <= lo || P.a[k] >= hi) return false;
    } else {
      float ta = (lo - P.a[k]) / P.d[k], tb = (hi - P.a[k]) / P.d[k];
      t0 = max(t0, min(ta, tb));
      t1 = min(t1, max(ta, tb));
    }
  }
  pet_tof_window(l, P.len_mm, t0, t1);
  if (t0 > t1) return false;
  // planes c = k + 0.5 (k = 0 .. n_m - 1) with a_m + t d_m = c for some t in [t0, t1]
  float c0 = P.a[P.m] + t0 * P.d[P.m], c1 = P.a[P.m] + t1 * P.d[P.m];
  P.k0 = int(clamp(ceil(min(c0, c1) - 0.5), 0.0, float(n[P.m])));
  P.k1 = int(clamp(floor(max(c0, c1) - 0.5), -1.0, float(n[P.m] - 1)));
  P.wl = P.len_mm / abs(P.d[P.m]);
  P.su = P.d[P.u] / P.d[P.m];
  P.sv = P.d[P.v] / P.d[P.m];
  return true;
}

// Plane k: the sample's transverse coordinates relative to voxel centres (voxel j's centre
// at j), and the ray length it stands for times the TOF weight at the sample. The arithmetic
// lives in pet_plane_sample_at, which the CPU plane path's back projection
// (pet_back_slabs.comp) calls with the same numbers from a record, so both sides compute
// bit-identical weights.
vec2 pet_plane_sample_at(PetLor l, float a_m, float a_u, float a_v, float su, float sv,
                         float wl, float d_m, float len_mm, int k, out float wk) {
  float dm = float(k) + 0.5 - a_m;  // = t d_m
  wk = wl * pet_tof_weight(l, (dm / d_m - 0.5) * len_mm);
  return vec2(a_u + dm * su - 0.5, a_v + dm * sv - 0.5);
}

vec2 pet_plane_sample(PetLor l, PetPlanes P, int k, out float wk) {
  return pet_plane_sample_at(l, P.a[P.m], P.a[P.u], P.a[P.v], P.su, P.sv, P.wl, P.d[P.m],
                             P.len_mm, k, wk);
}

uint pet_plane_index(PetPlanes P, int k, int ju, int jv) {
  uvec3 stride = uvec3(1u, pc.dims.x, pc.dims.x * pc.dims.y);
  return uint(k) * stride[P.m] + uint(ju) * stride[P.u] + uint(jv) * stride[P.v];
}
