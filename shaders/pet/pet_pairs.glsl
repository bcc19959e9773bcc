// SPDX-License-Identifier: GPL-3.0-or-later
// Pair buffers of the CPU plane path for Joseph's EM sub-iteration (compute/pet/
// tl-projector-planes.c): on a CPU device every buffer access is a loop over the SIMD lanes,
// so the back projection moves Joseph's two taps along the transverse axis u as one access,
// a dvec2. The sums are in double: summed in float, in the fixed order of the records, the
// correction image was 0.4-8e-6 relative L2 from a double reference, where the fused
// kernel's fixed-point sums are within 7e-7; in double the taps' float products are summed
// with ~1e-16 relative error, so what is left is the walk's float rounding, as in the fused
// kernel (tests/test-pet-em-planes.c). The record stores of pet_em_rec.comp move 64-bit
// words (TlPairs).
//
// A pair buffer along axis u (x or y) has the image's dimensions with one more entry along u;
// its slot with u-coordinate q (0 .. n_u) holds (the part of voxel q - 1, the part of
// voxel q) along u, the other coordinates unchanged; a part outside the image is never read.
// A bilinear sample whose lower tap along u is iu uses slot q = iu + 1 (valid for
// iu = -1 .. n_u - 1). Joseph's u is x for rays along y or z and y for rays along x
// (pet_axes), so two buffers B, along x then along y, serve every ray: pet_back_slabs.comp
// adds into them, then pet_pairs.comp adds voxel n's two halves, B[q = n].y + B[q = n + 1].x,
// to the image.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(buffer_reference, std430, buffer_reference_align = 8) buffer TlPairs { uint64_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer TlPairSums { dvec2 v[]; };

// First slot of the buffer along axis u (0: x, 1: y) in the two-buffer allocation.
uint pet_pairs_base(int u) {
  return u == 0 ? 0u : (pc.dims.x + 1u) * pc.dims.y * pc.dims.z;
}

// Strides of the buffer along u: (along x, along y, along z) in slots. Along y (rays along x)
// x runs fastest, along x (rays along y, and the few along z) y does: the planes across a ray's
// dominant axis, which neighbouring invocations of pet_back_slabs.comp own, are then
// neighbouring slots, one cache line for a subgroup.
uvec3 pet_pairs_strides(int u) {
  if (u == 0) return uvec3(pc.dims.y, 1u, pc.dims.y * (pc.dims.x + 1u));
  return uvec3(1u, pc.dims.x, pc.dims.x * (pc.dims.y + 1u));
}

// Slot of the pair whose u-coordinate is q (0 .. n_u), c holding the other coordinates.
uint pet_pair_slot(int u, ivec3 c, int q) {
  c[u] = q;
  uvec3 st = pet_pairs_strides(u);
  return pet_pairs_base(u) + uint(c.x) * st.x + uint(c.y) * st.y + uint(c.z) * st.z;
}

// The plane walks' form: slot of (plane k along m, q along u, jv along v), with
// st = (stride along m, along u, along v) and base = pet_pairs_base(u), both fixed per ray.
uint pet_pair_slot_mu(uint base, uvec3 st, int k, int q, int jv) {
  return base + uint(k) * st.x + uint(q) * st.y + uint(jv) * st.z;
}

dvec2 pet_pair_load(TlPairSums b, uint slot) { return b.v[slot]; }
void pet_pair_store(TlPairSums b, uint slot, dvec2 v) { b.v[slot] = v; }
