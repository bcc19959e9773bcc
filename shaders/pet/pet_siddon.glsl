// SPDX-License-Identifier: GPL-3.0-or-later
// Siddon's projector: a_jn = length (mm) of LOR j inside voxel n, exactly (van Gendt et al. 2021
// eq. 5 uses
// these intersection lengths l(A_j; r_n)). The ray is walked voxel by voxel (Jacobs'
// incremental form of Siddon's merged plane crossings): at each step the nearest of the three
// next x/y/z plane crossings ends the current segment.
//
// Crossings are t = (plane - p0) / (p1 - p0) in mm, each computed from its plane (never
// accumulated): the subtraction is exact when the plane is near p0, so even a ray almost
// parallel to a plane crosses it where the double-precision reference says. Half-open voxels:
// a ray lying exactly in the image's upper face misses, one in the lower face counts.
// Forward and back share this loop, so they are exact adjoints.
//
// PET_TOF: a_jn times the TOF weight at the middle of the chord. The walk starts in the voxel
// where the TOF window opens and ends with the voxel where it closes, taking each of those
// voxels' whole chords, so the chords (and their middles) are those of the non-TOF walk and
// the TOF weights summed over all bins give back the non-TOF a_jn.
//
// PET_SIDDON_F64 defined before this include (pet_sens_f64.comp): the walk in double. The float
// walk's crossings t in [0, 1] carry ~6e-8 of rounding, times a 760 mm LOR ~4.5e-5 mm per
// chord, and its planes lo + i vox are rounded floats, the same for every ray: the DMI
// sensitivity image, a sum of ~1e5 chords per voxel, ends 4.7e-6 of its maximum (1.5e-5 per
// voxel) from a double-precision sum (bench/README.md, bench/sensitivity), 3.8e-8 walked in
// double. In double both are ~1e-16; the
// chord is rounded to float once, unbiased, before the exact fixed-point sum. Needs the
// device's shaderFloat64; every other kernel keeps the float walk.
#ifdef PET_SIDDON_F64
#define PET_SREAL double
#define PET_SVEC3 dvec3
// The grid's outer corner origin - vox / 2 in double, exactly -n vox / 2 for a centred grid
// (compute/pet/tl-sensitivity.h tl_sensitivity_plane_lo), as two 32-bit halves each: pc.lo is
// its float rounding, up to 1.5e-5 mm off on the DMI, which moves a face slice's sum by ~1e-5
// (a shifted grid, not rounding noise).
layout(constant_id = TL_PET_ID_LO64) const uint PET_LO64_X_LSB = 0u;
layout(constant_id = TL_PET_ID_LO64 + 1) const uint PET_LO64_X_MSB = 0u;
layout(constant_id = TL_PET_ID_LO64 + 2) const uint PET_LO64_Y_LSB = 0u;
layout(constant_id = TL_PET_ID_LO64 + 3) const uint PET_LO64_Y_MSB = 0u;
layout(constant_id = TL_PET_ID_LO64 + 4) const uint PET_LO64_Z_LSB = 0u;
layout(constant_id = TL_PET_ID_LO64 + 5) const uint PET_LO64_Z_MSB = 0u;
#else
#define PET_SREAL float
#define PET_SVEC3 vec3
#endif
float pet_siddon(PetLor l, uint mode, float w, TlFloats img) {
  PET_SVEC3 p0 = PET_SVEC3(l.p0), p1 = PET_SVEC3(l.p1);
  PET_SVEC3 d = p1 - p0;
  PET_SREAL len_mm = length(d);
  ivec3 n = ivec3(pc.dims);
#ifdef PET_SIDDON_F64
  dvec3 lo = dvec3(packDouble2x32(uvec2(PET_LO64_X_LSB, PET_LO64_X_MSB)),
                   packDouble2x32(uvec2(PET_LO64_Y_LSB, PET_LO64_Y_MSB)),
                   packDouble2x32(uvec2(PET_LO64_Z_LSB, PET_LO64_Z_MSB)));
#else
  vec3 lo = pc.lo;
#endif
  PET_SVEC3 vox = PET_SVEC3(pc.vox);
  PET_SVEC3 hi = lo + PET_SVEC3(n) * vox;
  PET_SREAL t0 = 0.0, t1 = 1.0;
  for (int k = 0; k < 3; k++) {
    if (d[k] == 0.0) {
      if (p0[k] < lo[k] || p0[k] >= hi[k]) return 0.0;
    } else {
      PET_SREAL ta = (lo[k] - p0[k]) / d[k], tb = (hi[k] - p0[k]) / d[k];
      t0 = max(t0, min(ta, tb));
      t1 = min(t1, max(ta, tb));
    }
  }
  if (!(t0 < t1)) return 0.0;
  PET_SREAL tw0 = t0, tw1 = t1;
  if (PET_TOF == 1u) {
    float a = float(tw0), b = float(tw1);
    pet_tof_window(l, float(len_mm), a, b);
    tw0 = a;
    tw1 = b;
  }
  if (!(tw0 < tw1)) return 0.0;

  // Voxel just after the entry point (with TOF: where the window opens), the step per axis
  // and that axis' next crossing.
  ivec3 v, step;
  PET_SVEC3 tn;
  PET_SREAL t = t0;
  for (int k = 0; k < 3; k++) {
    PET_SREAL c = (p0[k] + tw0 * d[k] - lo[k]) / vox[k];
    if (d[k] > 0.0) {
      v[k] = clamp(int(floor(c)), 0, n[k] - 1);
      step[k] = 1;
      tn[k] = (lo[k] + PET_SREAL(v[k] + 1) * vox[k] - p0[k]) / d[k];
    } else if (d[k] < 0.0) {
      v[k] = clamp(int(ceil(c)) - 1, 0, n[k] - 1);
      step[k] = -1;
      tn[k] = (lo[k] + PET_SREAL(v[k]) * vox[k] - p0[k]) / d[k];
    } else {
      v[k] = clamp(int(floor(c)), 0, n[k] - 1);
      step[k] = 0;
      tn[k] = 2.0;  // never crossed (t stays <= 1)
    }
    // TOF: the chord starts where the ray entered this voxel (its plane behind tn[k])
    if (PET_TOF == 1u && step[k] != 0)
      t = max(t, (lo[k] + PET_SREAL(step[k] > 0 ? v[k] : v[k] + 1) * vox[k] - p0[k]) / d[k]);
  }

  float acc = 0.0;
  // At most one segment per crossed plane; the bound only guards against rounding surprises.
  for (int guard = n.x + n.y + n.z + 3; t < tw1 && guard > 0; guard--) {
    PET_SREAL te = max(t, min(min(tn.x, tn.y), min(tn.z, t1)));  // monotone despite rounding
    float lw = float((te - t) * len_mm);
    if (PET_TOF == 1u) lw *= pet_tof_weight(l, float((0.5 * (t + te) - 0.5) * len_mm));
    uint i = pet_voxel(v);
    if (mode == PET_FORWARD)
      acc += lw * img.v[i];
    else if (lw > 0.0)
      pet_scatter(img, i, w * lw);
    t = te;
    // Step every axis whose plane lies here (two or three at a voxel edge or corner), or behind:
    // a crossing recomputed from its plane can round 1 ulp below the t it ended (seen on
    // NVIDIA at a voxel corner); with == that axis never stepped, te stayed at t and the walk
    // spun to the guard with the rest of the chord lost (a LOR projected to 0).
    bool out_of_image = false;
    for (int k = 0; k < 3; k++) {
      if (step[k] != 0 && tn[k] <= te) {
        v[k] += step[k];
        out_of_image = out_of_image || v[k] < 0 || v[k] >= n[k];
        tn[k] = (lo[k] + PET_SREAL(step[k] > 0 ? v[k] + 1 : v[k]) * vox[k] - p0[k]) / d[k];
      }
    }
    if (out_of_image) break;
  }
  return acc;
}
#undef PET_SREAL
#undef PET_SVEC3
