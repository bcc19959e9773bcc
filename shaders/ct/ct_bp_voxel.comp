#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// FDK's voxel-driven back projector (ct_bp_voxel.glsl), four loads per bilinear sample: the
// build for every device.
#include "ct_bp_voxel.glsl"
