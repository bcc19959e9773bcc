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
// ct_back_tiled: tiles of TL_CT_TILE x TL_CT_TILE detector pixels, one workgroup of
// TL_CT_TILE^2 invocations each (the host asks for that local size)
#define TL_CT_TILE 16
// ct_fdk_filter: outputs per invocation; the host pads the filter taps with this many zeros
#define TL_CT_FILTER_BLOCK 8

#endif
