#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// y_i = sum_v h(i; v) x_v for the LORs of a group (srm_common.glsl): every invocation puts
// its partial sums in shared memory at once, then invocation j adds up LOR j's row (two
// barriers in all: on lavapipe each barrier switches every invocation of the workgroup, so a
// tree reduction per LOR cost more than the products).
#include "srm_common.glsl"

shared float red[SRM_GROUP * TL_SRM_MAX_LOCAL];

void main() {
  uint g = srm_group();
  if (g >= pc.n_groups) return;  // whole workgroups: uniform
  uint first = pc.groups.v[4 * g], count = pc.groups.v[4 * g + 1], cls = pc.groups.v[4 * g + 2];
  bool swap = pc.groups.v[4 * g + 3] != 0u;
  SrmLor l[SRM_GROUP];
  float acc[SRM_GROUP];
  for (uint j = 0; j < SRM_GROUP; j++) {
    acc[j] = 0.0;
    if (j < count) l[j] = srm_lor(pc.lors.v[pc.lor_first + first + j], swap);
  }
  uint k0 = pc.class_ptr.v[cls], k1 = pc.class_ptr.v[cls + 1];
  uint lid = gl_LocalInvocationID.x, ls = gl_WorkGroupSize.x;
  for (uint k = k0 + lid; k < k1; k += ls) {
    uint key = pc.keys.v[k];
    float h = pc.vals.v[k];
    int ix, ms, ns;
    srm_key(key, ix, ms, ns);
    bool both = pc.xsym != 0u && ix != int(pc.dims.x) - 1 - ix;
    for (uint j = 0; j < count; j++) {
      int v = srm_voxel(l[j], ix, ms, ns, 0u);
      if (v >= 0) acc[j] = fma(h, pc.image.v[v], acc[j]);
      if (both) {
        v = srm_voxel(l[j], ix, ms, ns, 1u);
        if (v >= 0) acc[j] = fma(h, pc.image.v[v], acc[j]);
      }
    }
  }
  for (uint j = 0; j < count; j++) red[j * ls + lid] = acc[j];
  barrier();
  if (lid < count) {
    float s = 0.0;
    for (uint i = 0; i < ls; i++) s += red[lid * ls + i];
    pc.data.v[first + lid] = s;
  }
}
