// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by every Tomolab kernel.
// Arrays are reached through buffer device addresses (GL_EXT_buffer_reference) held in
// push constants, so a single array may exceed maxStorageBufferRange.
// 1-D kernels start their push block with TL_PUSH_1D (base, count) and compute their
// item with tl_item(): the host splits long work into chunks of 2-D workgroup grids.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require

layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer TlFloats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer TlUints { uint v[]; };

#define TL_PUSH_1D uint tl_base; uint tl_count

// Linear index of this invocation within the chunk; >= tl_count means idle.
uint tl_local_item() {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  return group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}
