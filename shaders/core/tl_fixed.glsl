// SPDX-License-Identifier: GPL-3.0-or-later
// Scatter-adds whose result does not depend on the order the invocations run in: the back
// projections sum into a 64-bit fixed-point accumulator, since integer addition is exact and
// associative where float atomics round each partial sum in scheduling order (2e-7 to 4e-7
// relative between two runs on lavapipe). Only 32-bit integer atomics are used, which every
// Vulkan device has: the carry out of the low word goes into the high word. Negative terms are
// added in two's complement, so the sum is exact modulo 2^64 and right whenever it fits.
//
// An accumulator (TlUints) is TL_FIXED_HEAD words of head, then two words (lo, hi) per element
// holding round(sum * 2^k) in two's complement. The head (fixed_bound.comp fills it before the
// scatter): word 0 the bits of the largest |w| of the call's weights (atomicMax on the bits
// orders non-negative floats as their values), words 2, 3 S = sum_j |w_j| rounded up, in 64-bit
// fixed point of its own scale, and word 1 e_S, an integer with S < 2^e_S.
//
// The scale: a term is w_j times a weight that the host bounds by amax for everything one LOR
// or ray puts into one element, so every element's |sum| <= S amax < 2^(e_S + e(amax)) and
// k = 62 - e_S - e(amax) keeps it below 2^62 units: no overflow is possible. The unit is
// 2^-k <= 4 S amax 2^-62, and each term is rounded to the nearest unit: an element that
// received c terms is within c/2 units of the exact sum of its float terms (the tests: 1e-8 to
// 9e-8 of the largest element, the final rounding to float). S rather than (LORs x largest
// weight) keeps one large EM ratio from coarsening every voxel's unit. A coarser unit, so that
// most terms fit the low word (one atomic instead of two), was tried and dropped: the sums of
// many terms below the unit (the TOR's Gaussian tails, scaled by an outlying EM ratio) then
// lost 4e-6 of the largest voxel.
//
// A kernel that defines TL_FIXED_INT64 (and enables GL_EXT_shader_atomic_int64, so it runs only
// where the device has shaderBufferInt64Atomics) adds each term with one 64-bit atomic on the
// same (lo, hi) pair, read as one little-endian 64-bit word: the same integer term, added
// modulo 2^64, so the sums are the same bits as the two-word kernel's, on every device.

const uint TL_FIXED_HEAD = 4u;

// 2^e as a float, exact for -126 <= e <= 127.
float tl_pow2(int e) { return uintBitsToFloat(uint(clamp(e, -126, 127) + 127) << 23); }

// e with x < 2^e for finite x >= 0 (a large e for inf/NaN), read from the bits: every kernel
// of a call computes the same e from the same float.
int tl_fixed_exponent(float x) { return int((floatBitsToUint(abs(x)) >> 23) & 0xffu) - 126; }

// The scale exponent of the accumulator's sums, from its head and amax.
int tl_fixed_k(TlUints acc, float amax) {
  return clamp(62 - int(acc.v[1]) - tl_fixed_exponent(amax), -240, 240);
}

#ifdef TL_FIXED_INT64
layout(buffer_reference, std430, buffer_reference_align = 8) buffer TlFixed64 { uint64_t v[]; };

// acc[i] += v as below, with one 64-bit atomic: round(|v| 2^k) is the two-word kernel's
// (hi, lo) as one integer (f < 2^24 rounds to even there too; above it f is an integer).
void tl_fixed_add(TlUints acc, uint i, float v, int k) {
  float f = abs(v) * tl_pow2(k / 2) * tl_pow2(k - k / 2);
  if (!(f >= 0.5)) return;
  f = min(f, 4.0e18);
  uint64_t t = uint64_t(roundEven(f));
  if (v < 0.0) t = ~t + 1ul;
  atomicAdd(TlFixed64(acc).v[TL_FIXED_HEAD / 2u + i], t);
}
#else
// acc[i] += v (v * 2^k rounded to the nearest unit).
void tl_fixed_add(TlUints acc, uint i, float v, int k) {
  // two exact power-of-two factors: 2^k itself may be out of a float's range
  float f = abs(v) * tl_pow2(k / 2) * tl_pow2(k - k / 2);
  if (!(f >= 0.5)) return;             // rounds to nothing (or not a number)
  f = min(f, 4.0e18);                  // only a broken bound gets here; never wrap a word
  float fh = floor(f * (1.0 / 4294967296.0));
  // f is an integer from 2^24 on, so the low part is exact; below 2^32 it rounds here
  uint hi = uint(fh), lo = uint(roundEven(f - fh * 4294967296.0));
  if (v < 0.0) {  // two's complement of (hi, lo)
    lo = ~lo + 1u;
    hi = ~hi + (lo == 0u ? 1u : 0u);
  }
  uint j = TL_FIXED_HEAD + 2u * i;
  uint old = atomicAdd(acc.v[j], lo);
  hi += (old + lo < old) ? 1u : 0u;  // carry: lo wrapped around 2^32
  if (hi != 0u) atomicAdd(acc.v[j + 1u], hi);
}
#endif

// The float value of element i: round(sum * 2^k) * 2^-k.
float tl_fixed_value(TlUints acc, uint i, int k) {
  uint j = TL_FIXED_HEAD + 2u * i;
  uint lo = acc.v[j], hi = acc.v[j + 1u];
  bool neg = (hi >> 31) != 0u;
  if (neg) {
    lo = ~lo + 1u;
    hi = ~hi + (lo == 0u ? 1u : 0u);
  }
  float mag = (float(hi) * 4294967296.0 + float(lo)) * tl_pow2(-(k / 2)) * tl_pow2(-(k - k / 2));
  return neg ? -mag : mag;
}

#ifdef TL_FIXED_MAX
// Head word 0 = max(head word 0, |w|) over the workgroup: every invocation must call it
// (barriers); one global atomic per workgroup. NaN and inf are left out.
shared uint tl_fixed_wg_max;
void tl_fixed_max_store(TlUints acc, float w) {
  if (gl_LocalInvocationIndex == 0u) tl_fixed_wg_max = 0u;
  barrier();
  float a = abs(w);
  if (a > 0.0 && a <= 3.4e38) atomicMax(tl_fixed_wg_max, floatBitsToUint(a));
  barrier();
  if (gl_LocalInvocationIndex == 0u && tl_fixed_wg_max != 0u)
    atomicMax(acc.v[0], tl_fixed_wg_max);
}
#endif
