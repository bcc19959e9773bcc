// Joseph's projector (Joseph 1982; seed 001 ch. 3): the ray is cut by the planes through the
// voxel centres perpendicular to its dominant axis m (the axis along which it crosses the most
// voxels, so it moves less than one voxel sideways per plane); on each plane the image is
// interpolated bilinearly from the four nearest voxel centres (zero outside the image), and the
// sample is weighted by the ray length between two planes, len_mm / |d_m| (d in voxel units).
// So a_jn = (bilinear weight of voxel n on its plane) * len_mm / |d_m|.
//
// Only planes between the end points count (t in [0, 1]). Forward and back share this loop, so
// they are exact adjoints.
float pet_joseph(vec3 p0, vec3 p1, uint mode, float w, TlFloats img) {
  // voxel units relative to the image corner
  vec3 a = (p0 - pc.lo) / pc.vox, d = (p1 - p0) / pc.vox, ad = abs(d);
  float len_mm = distance(p0, p1);
  int m = (ad.x >= ad.y && ad.x >= ad.z) ? 0 : (ad.y >= ad.z ? 1 : 2);
  if (ad[m] == 0.0) return 0.0;  // a zero-length LOR
  int u = m == 0 ? 1 : 0, v = m == 2 ? 1 : 2;
  ivec3 n = ivec3(pc.dims);

  // Outside -0.5 < coordinate < n + 0.5 on a transverse axis all four neighbours lie outside
  // the image: clip t to that slab so rays passing beside the image cost nothing.
  float t0 = 0.0, t1 = 1.0;
  for (int j = 0; j < 2; j++) {
    int k = j == 0 ? u : v;
    float lo = -0.5, hi = float(n[k]) + 0.5;
    if (d[k] == 0.0) {
      if (a[k] <= lo || a[k] >= hi) return 0.0;
    } else {
      float ta = (lo - a[k]) / d[k], tb = (hi - a[k]) / d[k];
      t0 = max(t0, min(ta, tb));
      t1 = min(t1, max(ta, tb));
    }
  }
  if (t0 > t1) return 0.0;
  // Planes c = k + 0.5 (k = 0 .. n_m - 1) with a_m + t d_m = c for some t in [t0, t1].
  float c0 = a[m] + t0 * d[m], c1 = a[m] + t1 * d[m];
  float klo = clamp(ceil(min(c0, c1) - 0.5), 0.0, float(n[m]));
  float khi = clamp(floor(max(c0, c1) - 0.5), -1.0, float(n[m] - 1));

  float wl = len_mm / ad[m];
  uvec3 stride = uvec3(1u, pc.dims.x, pc.dims.x * pc.dims.y);
  float su = d[u] / d[m], sv = d[v] / d[m];
  float acc = 0.0;
  for (int k = int(klo); k <= int(khi); k++) {
    float dm = float(k) + 0.5 - a[m];  // = t * d_m
    float pu = a[u] + dm * su - 0.5, pv = a[v] + dm * sv - 0.5;  // relative to voxel centres
    float fu = floor(pu), fv = floor(pv);
    float eu = pu - fu, ev = pv - fv;
    ivec2 i0 = ivec2(fu, fv);
    for (int c = 0; c < 4; c++) {
      ivec2 j = i0 + ivec2(c & 1, c >> 1);
      if (j.x < 0 || j.x >= n[u] || j.y < 0 || j.y >= n[v]) continue;
      float wc = ((c & 1) != 0 ? eu : 1.0 - eu) * ((c >> 1) != 0 ? ev : 1.0 - ev) * wl;
      uint i = uint(k) * stride[m] + uint(j.x) * stride[u] + uint(j.y) * stride[v];
      if (mode == PET_FORWARD)
        acc += wc * img.v[i];
      else if (wc > 0.0)
        pet_scatter(img, i, w * wc);
    }
  }
  return acc;
}
