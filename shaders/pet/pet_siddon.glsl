// Siddon's projector: a_jn = length (mm) of LOR j inside voxel n, exactly (seed 000 eq. 5 uses
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
float pet_siddon(PetLor l, uint mode, float w, TlFloats img) {
  vec3 p0 = l.p0, p1 = l.p1;
  vec3 d = p1 - p0;
  float len_mm = length(d);
  ivec3 n = ivec3(pc.dims);
  vec3 hi = pc.lo + vec3(n) * pc.vox;
  float t0 = 0.0, t1 = 1.0;
  for (int k = 0; k < 3; k++) {
    if (d[k] == 0.0) {
      if (p0[k] < pc.lo[k] || p0[k] >= hi[k]) return 0.0;
    } else {
      float ta = (pc.lo[k] - p0[k]) / d[k], tb = (hi[k] - p0[k]) / d[k];
      t0 = max(t0, min(ta, tb));
      t1 = min(t1, max(ta, tb));
    }
  }
  if (!(t0 < t1)) return 0.0;
  float tw0 = t0, tw1 = t1;
  pet_tof_window(l, len_mm, tw0, tw1);
  if (!(tw0 < tw1)) return 0.0;

  // Voxel just after the entry point (with TOF: where the window opens), the step per axis
  // and that axis' next crossing.
  ivec3 v, step;
  vec3 tn;
  float t = t0;
  for (int k = 0; k < 3; k++) {
    float c = (p0[k] + tw0 * d[k] - pc.lo[k]) / pc.vox[k];
    if (d[k] > 0.0) {
      v[k] = clamp(int(floor(c)), 0, n[k] - 1);
      step[k] = 1;
      tn[k] = (pc.lo[k] + float(v[k] + 1) * pc.vox[k] - p0[k]) / d[k];
    } else if (d[k] < 0.0) {
      v[k] = clamp(int(ceil(c)) - 1, 0, n[k] - 1);
      step[k] = -1;
      tn[k] = (pc.lo[k] + float(v[k]) * pc.vox[k] - p0[k]) / d[k];
    } else {
      v[k] = clamp(int(floor(c)), 0, n[k] - 1);
      step[k] = 0;
      tn[k] = 2.0;  // never crossed (t stays <= 1)
    }
    // TOF: the chord starts where the ray entered this voxel (its plane behind tn[k])
    if (PET_TOF == 1u && step[k] != 0)
      t = max(t, (pc.lo[k] + float(step[k] > 0 ? v[k] : v[k] + 1) * pc.vox[k] - p0[k]) / d[k]);
  }

  float acc = 0.0;
  // At most one segment per crossed plane; the bound only guards against rounding surprises.
  for (int guard = n.x + n.y + n.z + 3; t < tw1 && guard > 0; guard--) {
    float te = max(t, min(min(tn.x, tn.y), min(tn.z, t1)));  // monotone despite rounding
    float lw = (te - t) * len_mm * pet_tof_weight(l, (0.5 * (t + te) - 0.5) * len_mm);
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
        tn[k] = (pc.lo[k] + float(step[k] > 0 ? v[k] + 1 : v[k]) * pc.vox[k] - p0[k]) / d[k];
      }
    }
    if (out_of_image) break;
  }
  return acc;
}
