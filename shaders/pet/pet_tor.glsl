// SPDX-License-Identifier: GPL-3.0-or-later
// Tube of response (Kovács (n.d.) sec. 2.2 item 3: "We use a Tube Of Response (TOR or projection
// tube) for every event to model the positron range effect. The event's contribution to the
// voxels in the TOR is weighted with a Gaussian function"), walked plane by plane across the
// dominant axis like Joseph's projector (Kovács (n.d.) processes events grouped by dominant
// direction slice by slice; the slice's direction is the group's dominant axis).
//
// Weight: Joseph's bilinear hat H(x) = max(0, 1 - |x|) convolved with the Gaussian of the
// tube, per transverse axis of the plane:
//   a_jn = T_u(p_u - n_u) T_v(p_v - n_v) len_mm / |d_m| / (S_u S_v),
//   T(x) = (H * N(0, s^2))(x) = (x+1) Phi((x+1)/s) - 2x Phi(x/s) + (x-1) Phi((x-1)/s)
//          + s^2 [g(x+1) - 2 g(x) + g(x-1)],   g = N(0, s^2) density, Phi its CDF at s = 1,
// so as the width goes to 0 the weights become Joseph's. The tube's Gaussian has sigma
// PET_TOR_SIGMA (mm) in the distance perpendicular to the LOR; the plane cuts it in an
// ellipse whose marginal along transverse axis u has s_u = sigma sqrt(1 + (d_u / d_m)^2)
// (d in mm; in voxels: / vox_u); the weight is the product of the two marginals (their correlation,
// present when the LOR is oblique in both axes, is left out). Taps reach R = 1 + 3 s voxels
// from the sample; S_u = sum of T_u over those taps (in or out of the image) renormalises the
// truncated kernel, so every plane carries exactly Joseph's len_mm / |d_m| and a uniform
// image projects as with Joseph. Forward and back share this loop: exact adjoints.

const int PET_TOR_TAPS = 32;  // 2R + 1 <= 32: compute/pet/tl-tor.c bounds the width

// T(x) evaluated as the hat plus a remainder. With r(y) = max(0, y), H(x) = r(x+1) - 2 r(x)
// + r(x-1), and T is the same combination of f(y) = E[r(y + Z)], Z ~ N(0, s^2):
//   f(y) = y Phi(y/s) + s^2 g(y),   f(y) - r(y) = e(|y|),   e(a) = s phi(a/s) - a Q(a/s),
// phi, Q the standard normal density and upper tail. So
//   T(x) = H(x) + e(|x+1|) - 2 e(|x|) + e(|x-1|),
// where every e is small and positive: the closed form above, evaluated as written, cancels
// terms of size |x| (up to 15 voxels) down to taps of 1e-3 and lost 1.7e-5 of the largest
// value on NVIDIA (test-pet-tor's limit is 1e-5). Q(z) = erfc(z / sqrt 2) / 2 is taken from
// pet_erfc_pos, with no 1 - erf cancellation either.
float pet_tor_excess(float a, float s) {
  float z = a / s;
  return exp(-0.5 * z * z) * (0.39894228 * s) - 0.5 * a * pet_erfc_pos(z * 0.70710678);
}

float pet_tor_tap(float x, float s) {
  float h = max(0.0, 1.0 - abs(x));
  if (s < 1e-4) return h;
  return max(0.0, h + pet_tor_excess(abs(x + 1.0), s) - 2.0 * pet_tor_excess(abs(x), s) +
                      pet_tor_excess(abs(x - 1.0), s));
}

float pet_tor(PetLor l, uint mode, float w, TlFloats img) {
  vec3 d = l.p1 - l.p0;  // mm: the ellipse's marginals are slopes in mm
  ivec3 ax = pet_axes(d / pc.vox);
  int m = ax.x, u = ax.y, v = ax.z;
  if (d[m] == 0.0) return 0.0;
  // |d_u / d_m| <= vox_u / vox_m, so s_u <= sigma sqrt 2 / min(vox) (the bound of tl-tor.c)
  vec2 s = vec2(sqrt(1.0 + (d[u] / d[m]) * (d[u] / d[m])) / pc.vox[u],
                sqrt(1.0 + (d[v] / d[m]) * (d[v] / d[m])) / pc.vox[v]) * PET_TOR_SIGMA;
  vec2 reach = min(vec2(1.0) + 3.0 * s, vec2(float(PET_TOR_TAPS / 2 - 1)));
  PetPlanes P;
  if (!pet_planes(l, reach.x, reach.y, P)) return 0.0;
  ivec3 n = ivec3(pc.dims);
  float tu[PET_TOR_TAPS], tv[PET_TOR_TAPS];
  float acc = 0.0;
  for (int k = P.k0; k <= P.k1; k++) {
    float wl;
    vec2 p = pet_plane_sample(l, P, k, wl);
    ivec2 j0 = ivec2(ceil(p - reach)), j1 = ivec2(floor(p + reach));
    j1 = min(j1, j0 + ivec2(PET_TOR_TAPS - 1));
    float su = 0.0, sv = 0.0;
    for (int j = j0.x; j <= j1.x; j++) {
      tu[j - j0.x] = pet_tor_tap(p.x - float(j), s.x);
      su += tu[j - j0.x];
    }
    for (int j = j0.y; j <= j1.y; j++) {
      tv[j - j0.y] = pet_tor_tap(p.y - float(j), s.y);
      sv += tv[j - j0.y];
    }
    if (!(su > 0.0 && sv > 0.0)) continue;
    float scale = wl / (su * sv);
    for (int ju = max(j0.x, 0); ju <= min(j1.x, n[P.u] - 1); ju++) {
      float wu = tu[ju - j0.x] * scale;
      if (wu == 0.0) continue;
      for (int jv = max(j0.y, 0); jv <= min(j1.y, n[P.v] - 1); jv++) {
        float wc = wu * tv[jv - j0.y];
        uint i = pet_plane_index(P, k, ju, jv);
        if (mode == PET_FORWARD)
          acc += wc * img.v[i];
        else if (wc > 0.0)
          pet_scatter(img, i, w * wc);
      }
    }
  }
  return acc;
}
