// SPDX-License-Identifier: GPL-3.0-or-later
// Joseph's projector (Joseph 1982; Petit 2020 ch. 3) on the plane walk of pet_planes.glsl: on
// each plane the image is interpolated bilinearly from the four nearest voxel centres (zero
// outside the image), so a_jn = (bilinear weight of voxel n on its plane) * len_mm / |d_m|
// (times the TOF weight of the plane's sample with PET_TOF).
//
// Only planes between the end points count (t in [0, 1]). Forward and back share this loop, so
// they are exact adjoints.
float pet_joseph_walk(PetLor l, PetPlanes P, uint mode, float w, TlFloats img) {
  ivec3 n = ivec3(pc.dims);
  float acc = 0.0;
  for (int k = P.k0; k <= P.k1; k++) {
    float wl;
    vec2 p = pet_plane_sample(l, P, k, wl);
    vec2 f = floor(p), e = p - f;
    ivec2 i0 = ivec2(f);
    for (int c = 0; c < 4; c++) {
      ivec2 j = i0 + ivec2(c & 1, c >> 1);
      if (j.x < 0 || j.x >= n[P.u] || j.y < 0 || j.y >= n[P.v]) continue;
      float wc = ((c & 1) != 0 ? e.x : 1.0 - e.x) * ((c >> 1) != 0 ? e.y : 1.0 - e.y) * wl;
      uint i = pet_plane_index(P, k, j.x, j.y);
      if (mode == PET_FORWARD)
        acc += wc * img.v[i];
      else if (wc > 0.0)
        pet_scatter(img, i, w * wc);
    }
  }
  return acc;
}

float pet_joseph(PetLor l, uint mode, float w, TlFloats img) {
  PetPlanes P;
  if (!pet_planes(l, 1.0, 1.0, P)) return 0.0;
  return pet_joseph_walk(l, P, mode, w, img);
}
