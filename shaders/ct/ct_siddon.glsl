// SPDX-License-Identifier: GPL-3.0-or-later
// Siddon's projector (Petit 2020 ch. 3, [Sid85]): a_jn = length in mm of ray j inside voxel n,
// exactly. Forward walks the ray voxel by voxel (the incremental form of Siddon's merged
// plane crossings: the nearest next x/y/z plane ends each segment), and so does the scatter
// back projector with the same segments; the gather back
// projector intersects the ray with one voxel's box. Both compute every plane crossing as
// (plane - a) / d from the same ray, so their weights agree to rounding and the pair is an
// exact adjoint. Voxels are half-open boxes, as in ct_clip().

// The walk of one ray. back = false: returns sum_n a_jn img[n] (forward); back = true: adds
// a_jn y into img[n] for every voxel n the ray crosses (the scatter adjoint), returns 0.
float ct_siddon_walk(CtRay r, TlFloats img, uvec3 dims, bool back, float y) {
  ivec3 n = ivec3(dims);
  float t0 = r.t0, t1 = r.t1;
  for (int k = 0; k < 3; k++)
    if (!ct_clip(r.a[k], r.d[k], 0.0, float(n[k]), t0, t1)) return 0.0;
  if (!(t0 < t1)) return 0.0;

  ivec3 v, step;
  vec3 tn;
  for (int k = 0; k < 3; k++) {
    float x = r.a[k] + t0 * r.d[k];
    if (r.d[k] > 0.0) {
      v[k] = clamp(int(floor(x)), 0, n[k] - 1);
      step[k] = 1;
      tn[k] = (float(v[k] + 1) - r.a[k]) / r.d[k];
    } else if (r.d[k] < 0.0) {
      v[k] = clamp(int(ceil(x)) - 1, 0, n[k] - 1);
      step[k] = -1;
      tn[k] = (float(v[k]) - r.a[k]) / r.d[k];
    } else {
      v[k] = int(floor(r.a[k]));
      step[k] = 0;
      tn[k] = CT_BIG;
    }
  }
  float acc = 0.0, t = t0;
  // one segment per crossed plane; the guard only bounds rounding surprises
  for (int guard = n.x + n.y + n.z + 3; t < t1 && guard > 0; guard--) {
    float te = max(t, min(min(tn.x, tn.y), min(tn.z, t1)));
    if (back) {
      if (te > t) ct_scatter(img, ct_voxel_index(v, dims), (te - t) * y);
    } else {
      acc += (te - t) * img.v[ct_voxel_index(v, dims)];
    }
    t = te;
    bool out_of_image = false;
    // Every axis whose crossing is here or (by 1 ulp of rounding) behind: see pet_siddon.glsl.
    for (int k = 0; k < 3; k++) {
      if (step[k] != 0 && tn[k] <= te) {
        v[k] += step[k];
        out_of_image = out_of_image || v[k] < 0 || v[k] >= n[k];
        tn[k] = (float(step[k] > 0 ? v[k] + 1 : v[k]) - r.a[k]) / r.d[k];
      }
    }
    if (out_of_image) break;
  }
  return acc;
}

float ct_siddon_forward(CtRay r, TlFloats img, uvec3 dims) {
  return ct_siddon_walk(r, img, dims, false, 0.0);
}

// Length of the ray inside voxel n (its box [n, n + 1) in voxel units).
float ct_siddon_weight(CtRay r, ivec3 n, uvec3 dims) {
  float t0 = r.t0, t1 = r.t1;
  for (int k = 0; k < 3; k++)
    if (!ct_clip(r.a[k], r.d[k], float(n[k]), float(n[k] + 1), t0, t1)) return 0.0;
  return max(t1 - t0, 0.0);
}

