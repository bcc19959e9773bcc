// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the PET ray kernels (pet_forward, pet_back, pet_em): the push block, where a
// line of response (LOR) comes from, and the scatter-add into an image.
//
// Variants are specialization constants (ids and values in tl_constants.glsl, which the host,
// compute/pet/project/tl-projector-ray.c, includes too):
//   PET_TRACER    Siddon (pet_siddon.glsl), Joseph (pet_joseph.glsl), TOR (pet_tor.glsl)
//   PET_LORS      list-mode events, bins (crystal pair + count), explicit end points,
//                 every allowed crystal pair (the sensitivity image)
//   PET_ATOMIC    1 float atomicAdd, 0 compare-and-swap loop on the bits
//   PET_ATTEN     1 attenuation (van Gendt et al. 2021 eq. 6-7): LOR j carries the factor a_j =
//                 exp(-integral of mu along j). Events/bins/end points read a_j from
//                 pc.atten[first + i] (computed once per dataset); all pairs (the sensitivity
//                 image) integrate the mu-map in pc.image along the pair first.
//   PET_LOGLIK    1 (pet_forward, pet_em) also write per-workgroup partial sums of the
//                 log-likelihood data term m_j log ybar_j to pc.aux (pet_loglik.glsl)
//   PET_TOF       1 time of flight (list-mode events: word 2 of a record is the TOF bin);
//   then          its Gaussian sigma and bin width along the LOR (mm) and truncation (sigmas)
//                 (pet_tof.glsl; compute/pet/tl-projector.h TlTof)
//   PET_TOR_SIGMA tube-of-response tracer: Gaussian sigma across the tube, mm
//   pet_sens only: PET_FIXED_SCALE, PET_SYM, PET_NORM (pet_sens.comp, pet_norm.glsl)
//   PET_FIXED     1 deterministic sums (tl_fixed.glsl): pet_back adds into a 64-bit fixed-point
//                 accumulator at pc.dst; pet_em only forwards, writing each LOR's back-projection
//                 weight to pc.dst and their largest |w| into the accumulator's head at pc.norm
//                 (compute/pet/project/tl-projector-ray.c runs pet_back on them after it)
// A kernel built with PET_NO_FLOAT_ATOMIC defined never declares the float-atomic capability,
// so it also runs on devices without shaderBufferFloat32AtomicAdd.
#ifndef PET_NO_FLOAT_ATOMIC
#extension GL_EXT_shader_atomic_float : require
#endif
#include "tl_common.glsl"
#include "tl_constants.glsl"
#include "tl_fixed.glsl"

layout(constant_id = TL_PET_ID_TRACER) const uint PET_TRACER = TL_PET_TRACER_SIDDON;
layout(constant_id = TL_PET_ID_LORS) const uint PET_LORS = TL_PET_LORS_EVENTS;
layout(constant_id = TL_PET_ID_ATOMIC) const uint PET_ATOMIC = 1;
layout(constant_id = TL_PET_ID_ATTEN) const uint PET_ATTEN = 0;
layout(constant_id = TL_PET_ID_LOGLIK) const uint PET_LOGLIK = 0;
layout(constant_id = TL_PET_ID_TOF) const uint PET_TOF = 0;
layout(constant_id = TL_PET_ID_TOF_SIGMA) const float PET_TOF_SIGMA = 1.0;
layout(constant_id = TL_PET_ID_TOF_BIN) const float PET_TOF_BIN = 1.0;
layout(constant_id = TL_PET_ID_TOF_NSIGMA) const float PET_TOF_NSIGMA = 3.0;
layout(constant_id = TL_PET_ID_TOR_SIGMA) const float PET_TOR_SIGMA = 0.0;
layout(constant_id = TL_PET_ID_FIXED) const uint PET_FIXED = 0;
int pet_fixed_k = 0;  // PET_FIXED: the call's scale exponent (tl_fixed_k), set by main

const uint PET_LORS_EVENTS = TL_PET_LORS_EVENTS;
const uint PET_LORS_BINS = TL_PET_LORS_BINS;
const uint PET_LORS_END_POINTS = TL_PET_LORS_END_POINTS;
const uint PET_LORS_ALL_PAIRS = TL_PET_LORS_ALL_PAIRS;

// Matches TlPetPush in compute/pet/tl-projector-ray.c (scalar layout, 128 bytes: Vulkan's
// guaranteed minimum of maxPushConstantsSize).
layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlUints lors;        // events/bins: TL_PET_RECORD_WORDS each; end points: 6 floats each
  TlFloats crystals;   // TlCrystal table: TL_PET_CRYSTAL_WORDS each (centre xyz, group,
                       // normal xyz, ring)
  TlFloats image;      // image read by forward projection; all pairs + PET_ATTEN: the mu-map
  TlFloats dst;        // forward: one value per LOR; back: image accumulated; em: correction
  TlFloats aux;        // back: per-LOR weights (flags bit 0); PET_LOGLIK: partial sums
  uvec3 dims;          // image voxels
  uint first;          // first record of the range; all pairs: subset offset
  vec3 lo;             // outer corner of voxel (0,0,0), mm
  uint flags;          // bit 0: aux holds back-projection weights
  vec3 vox;            // voxel size, mm
  uint n_crystals;
  uint stride;         // all pairs: pair p = item * stride + first (subsets of Chou et al. 2012 eq. 4)
  uint max_ring_diff;
  uint n_pairs;        // all pairs: n (n - 1) / 2
  uint pad;
  TlFloats atten;      // PET_ATTEN, LORs from records: a_j per record (absolute record index)
  TlFloats norm;       // pet_sens with PET_NORM: the normalisation tables (pet_norm.glsl)
} pc;

struct PetLor {
  vec3 p0, p1;  // end points, mm (events and bins: crystal a, crystal b)
  float m;      // measured count of the LOR (1 for a list-mode event)
  float tof_c;  // PET_TOF: centre of the event's TOF bin, mm from the midpoint towards p1
};

vec3 pet_crystal(uint c) {
  uint k = TL_PET_CRYSTAL_WORDS * c;
  return vec3(pc.crystals.v[k], pc.crystals.v[k + 1u], pc.crystals.v[k + 2u]);
}

// The pair rule of compute/pet/tl-scanner.h: different groups (polygon side / head) and
// at most max_ring_diff rings apart.
bool pet_pair_allowed(uint a, uint b) {
  TlUints c = TlUints(pc.crystals);
  uint ga = c.v[TL_PET_CRYSTAL_WORDS * a + 3u], gb = c.v[TL_PET_CRYSTAL_WORDS * b + 3u];
  int ra = int(c.v[TL_PET_CRYSTAL_WORDS * a + 7u]), rb = int(c.v[TL_PET_CRYSTAL_WORDS * b + 7u]);
  return ga != gb && uint(abs(ra - rb)) <= pc.max_ring_diff;
}

// LOR of item i (0-based within the dispatch range); false = nothing to trace.
bool pet_lor(uint i, out PetLor l) {
  l.m = 1.0;
  l.tof_c = 0.0;
  if (PET_LORS == PET_LORS_END_POINTS) {
    TlFloats e = TlFloats(pc.lors);
    uint k = TL_PET_END_POINT_WORDS * (pc.first + i);
    l.p0 = vec3(e.v[k], e.v[k + 1u], e.v[k + 2u]);
    l.p1 = vec3(e.v[k + 3u], e.v[k + 4u], e.v[k + 5u]);
    return true;
  }
  uint a, b;
  if (PET_LORS == PET_LORS_ALL_PAIRS) {
    // Pair index p <-> unordered pair without a square root: a = p mod n, b = a + d (mod n)
    // with d = p / n + 1 in 1..n/2; for even n the last row (d = n/2) holds only a < n/2,
    // so every pair appears exactly once for p < n (n - 1) / 2.
    uint p = i * pc.stride + pc.first;
    if (p >= pc.n_pairs) return false;
    uint n = pc.n_crystals;
    a = p % n;
    b = (a + p / n + 1u) % n;
    if (!pet_pair_allowed(a, b)) return false;
  } else {
    uint k = TL_PET_RECORD_WORDS * (pc.first + i);
    a = pc.lors.v[k];
    b = pc.lors.v[k + 1u];
    if (a >= pc.n_crystals || b >= pc.n_crystals) return false;  // validated on load; never trust
    if (PET_LORS == PET_LORS_BINS) l.m = uintBitsToFloat(pc.lors.v[k + 2u]);
    // docs/formats.md: bin b is centred b * bin width from the midpoint, positive towards b
    if (PET_TOF == 1u && PET_LORS == PET_LORS_EVENTS)
      l.tof_c = float(int(pc.lors.v[k + 2u])) * PET_TOF_BIN;
  }
  l.p0 = pet_crystal(a);
  l.p1 = pet_crystal(b);
  return true;
}

#ifdef PET_FIXED_SCATTER
// The sensitivity kernel (pet_sens.comp) accumulates in 64-bit fixed point: voxel i is the
// pair of uints (lo, hi) at 2i, 2i + 1 holding round-down(sum * PET_FIXED_SCALE), a power of two
// the host picks so the largest possible sum stays below 2^62 (compute/pet/tl-sensitivity-sym.c).
// Integer addition is exact and associative, so the sum no longer depends on the order of the
// 10^8 atomics (float atomics lose ~1e-5 of a sum of ~10^5 terms); only 32-bit integer atomics,
// which every Vulkan device has, are used: the carry out of lo goes into hi.
layout(constant_id = TL_PET_ID_FIXED_SCALE) const float PET_FIXED_SCALE = 1073741824.0;
void pet_scatter_fixed(TlUints acc, uint i, float v) {
  // v * scale is exact (a power of two); its integer part splits exactly into hi * 2^32 + lo
  float f = v * PET_FIXED_SCALE;
  if (!(f >= 1.0)) return;  // below one unit (or not a number): nothing to add
  float fh = floor(f * (1.0 / 4294967296.0));
  uint hi = uint(fh), lo = uint(f - fh * 4294967296.0);
  uint old = atomicAdd(acc.v[2u * i], lo);
  hi += (old + lo < old) ? 1u : 0u;  // carry: lo wrapped around 2^32
  if (hi != 0u) atomicAdd(acc.v[2u * i + 1u], hi);
}
#endif

// img[i] += v from many invocations at once.
void pet_scatter(TlFloats img, uint i, float v) {
#ifdef PET_FIXED_SCATTER
  pet_scatter_fixed(TlUints(img), i, v);
  return;
#endif
  if (PET_FIXED == 1u) {
    tl_fixed_add(TlUints(img), i, v, pet_fixed_k);
    return;
  }
#ifndef PET_NO_FLOAT_ATOMIC
  if (PET_ATOMIC == 1u) {
    atomicAdd(img.v[i], v);
    return;
  }
#endif
  TlUints bits = TlUints(img);
  uint seen = bits.v[i];
  for (;;) {
    uint old = seen;
    seen = atomicCompSwap(bits.v[i], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (seen == old) break;
  }
}

// Image index of voxel (x, y, z), x fastest (compute/pet/tl-image.h).
uint pet_voxel(ivec3 v) {
  return uint(v.x) + pc.dims.x * (uint(v.y) + pc.dims.y * uint(v.z));
}

// What a tracer does at each voxel it visits: forward sums weight * img; back adds w * weight.
const uint PET_FORWARD = 0u;
const uint PET_BACK = 1u;
