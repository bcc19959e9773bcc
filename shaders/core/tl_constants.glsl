// SPDX-License-Identifier: GPL-3.0-or-later
// Constants that a kernel and its host code must agree on, written once: this file is GLSL
// (kernels include it as "tl_constants.glsl") and C (compute/ includes it as
// "core/tl_constants.glsl"), so it holds #defines of plain integer literals only. A value
// changed here changes both sides at the next build; one spelled in two places could drift
// (the item counts and workgroup sizes below decide which voxels and pixels get computed).
#ifndef TL_CONSTANTS_GLSL
#define TL_CONSTANTS_GLSL

// CT projections (shaders/ct, compute/ct/tl-ct-projector.c): the push block's flag bits
#define TL_CT_FLAG_CONE 1u        // cone beam (else parallel)
#define TL_CT_FLAG_ACCUMULATE 2u  // add to the output instead of overwriting it
// voxels along x that one invocation of the gather back projections (ct_back, ct_bp_voxel)
// computes: the host dispatches ceil(nx / TL_CT_BACK_BLOCK) x ny x nz items
#define TL_CT_BACK_BLOCK 4
// the same for the voxel-driven back projector (ct_bp_voxel, FDK's): its view's matrix is
// read once per block, and each further voxel costs one step (bench/README.md "bench/ct")
#define TL_CT_BP_BLOCK 8
// ct_back_tiled: tiles of TL_CT_TILE x TL_CT_TILE detector pixels, one workgroup of
// TL_CT_TILE^2 invocations each (the host asks for that local size)
#define TL_CT_TILE 16
// ct_fdk_filter: outputs per invocation; the host pads the filter taps with this many zeros.
// lavapipe, 1920 rows of 312, core-s Ram-Lak / Shepp-Logan: 8 0.056 / 0.102, 16 0.037 / 0.070,
// 32 0.026 / 0.047, 48 0.28 / 0.49, 64 0.28 / 0.47 (the registers spill)
#define TL_CT_FILTER_BLOCK 32
// ct_fdk_weight: pixels of a detector row per invocation
#define TL_CT_WEIGHT_BLOCK 32

// PET ray kernels (shaders/pet/pet_common.glsl and the kernels named below; the host in
// compute/pet/project/tl-projector-ray.c and tl-projector-planes.c). Specialization constant
// ids: id 0 is the workgroup size (tl_common.glsl); the host's value array holds id i at
// [i - 1] (core/tl-pipeline.h), so its length is the highest id a kernel declares.
#define TL_PET_ID_TRACER 1       // TL_PET_TRACER_*
#define TL_PET_ID_LORS 2         // TL_PET_LORS_*
#define TL_PET_ID_ATOMIC 3       // 1 float atomicAdd, 0 compare-and-swap loop
#define TL_PET_ID_ATTEN 4        // 1 attenuation factors
#define TL_PET_ID_LOGLIK 5       // 1 log-likelihood partial sums (pet_loglik.glsl)
#define TL_PET_ID_TOF 6          // 1 time of flight; its three floats follow
#define TL_PET_ID_TOF_SIGMA 7
#define TL_PET_ID_TOF_BIN 8
#define TL_PET_ID_TOF_NSIGMA 9
#define TL_PET_ID_TOR_SIGMA 10   // tube of response: Gaussian sigma across the tube, mm
#define TL_PET_ID_FIXED_SCALE 11 // pet_sens: the fixed-point scale (a power of two)
#define TL_PET_ID_SYM 12         // pet_sens: 1 the symmetric method's pair list
#define TL_PET_ID_NORM 13        // pet_sens: 1 normalisation tables (pet_norm.glsl)
#define TL_PET_ID_SLAB_PLANES 14 // pet_back_slabs: planes per workgroup
#define TL_PET_ID_REC_WORDS 15   // pet_em_rec, pet_back_slabs: words per record
#define TL_PET_ID_LO64 16        // pet_sens_f64 (pet_siddon.glsl): ids 16..21 the grid's corner
                                 // in double, x y z, each as its low then high 32 bits
#define TL_PET_ID_FIXED 22       // 1 deterministic sums (tl_fixed.glsl)
#define TL_PET_N_IDS 22          // the highest id

// PET_TRACER values (pet_trace.glsl; the classes in compute/pet/project/tl-siddon.c, ...)
#define TL_PET_TRACER_SIDDON 0u
#define TL_PET_TRACER_JOSEPH 1u
#define TL_PET_TRACER_TOR 2u
// PET_LORS values: list-mode events, bins (crystal pair + count), explicit end points, every
// allowed crystal pair (the sensitivity image)
#define TL_PET_LORS_EVENTS 0u
#define TL_PET_LORS_BINS 1u
#define TL_PET_LORS_END_POINTS 2u
#define TL_PET_LORS_ALL_PAIRS 3u
// 32-bit words per crystal of the device's crystal table (TlCrystal), per event or bin
// record (TlEvent, TlBin), per LOR of explicit end points
#define TL_PET_CRYSTAL_WORDS 8u
#define TL_PET_RECORD_WORDS 3u
#define TL_PET_END_POINT_WORDS 6u
// The sensitivity image's symmetry transforms (compute/pet/project/tl-sensitivity-sym.c,
// pet_sens_finish.comp): transform c of TL_PET_SYM_TRANSFORMS is the bit set c, applied as
// the swap of x and y first, then the mirrors
#define TL_PET_SYM_FLIP_X 1u
#define TL_PET_SYM_FLIP_Y 2u
#define TL_PET_SYM_SWAP_XY 4u
#define TL_PET_SYM_FLIP_Z 8u
#define TL_PET_SYM_TRANSFORMS 16u

// The normalisation tables on the device (compute/pet/correct/tl-norm.c tl_norm_upload,
// pet_norm.glsl): a head of TL_PET_NORM_HEAD_WORDS words (these indices), then the tables
// at the offsets the head holds
#define TL_PET_NORM_CRYSTALS 0   // crystals
#define TL_PET_NORM_RINGS 1      // R
#define TL_PET_NORM_PER_RING 2   // C, crystals per ring (0: no transaxial classes)
#define TL_PET_NORM_BLOCK 3      // B, crystals per block
#define TL_PET_NORM_RADIAL 4     // D, radial classes
#define TL_PET_NORM_OFF_EFF 5    // offset of the crystal efficiencies
#define TL_PET_NORM_OFF_AXIAL 6  // of the axial factors (R x R)
#define TL_PET_NORM_OFF_TRANS 7  // of the transaxial factors (D x B)
#define TL_PET_NORM_HEAD_WORDS 8

// The CPU plane path of Joseph's EM sub-iteration (compute/pet/project/tl-projector-planes.c,
// pet_em_rec.comp, pet_back_slabs.comp): words per event record (PET_REC_WORDS) without and
// with TOF; planes owned by one workgroup of pet_back_slabs (PET_SLAB_PLANES, at most) without
// and with TOF; range words per chunk (first and end record per axis, padded to 8)
#define TL_PET_REC_WORDS 8u
#define TL_PET_REC_WORDS_TOF 12u
#define TL_PET_SLAB_PLANES 16u
#define TL_PET_SLAB_PLANES_TOF 32u
#define TL_PET_RANGE_WORDS 8u
// a record's plane word: first plane | last plane << bits | axis << 2 bits (axis 3: nothing
// to back project), so image dimensions stay below 2^TL_PET_REC_PLANE_BITS
#define TL_PET_REC_PLANE_BITS 15

// The dual-head system matrix (shaders/pet/srm_common.glsl, compute/pet/srm/): LORs per
// workgroup of srm_forward and srm_back; the largest workgroup (srm_forward's reduction)
#define TL_SRM_GROUP 8u
#define TL_SRM_MAX_LOCAL 256u
// element key: ix | (m_y + off) << x bits | (m_z + off) << (x bits + m bits), off = 2^(m bits - 1)
#define TL_SRM_KEY_X_BITS 10
#define TL_SRM_KEY_M_BITS 11
// LOR word: u_a | v_a << 8 | (du + 2^7) << 16 | (dv + 2^7) << 24: 8 bits each
#define TL_SRM_LOR_BITS 8

#endif
