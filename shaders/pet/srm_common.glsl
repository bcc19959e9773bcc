// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by srm_forward / srm_back: the dual-head system response matrix stored by symmetry
// class (compute/pet/tl-srm.h) applied to groups of LORs. One workgroup per group of up to
// SRM_GROUP LORs of the same class (Chou et al. 2012 Algorithm 3: the LORs of a group share the
// stored responses, read once; each invocation strides over the class's elements and maps
// each element to every LOR of the group through the symmetries).
#include "tl_common.glsl"

#define SRM_GROUP 8
#define SRM_OFF 1024

layout(push_constant, scalar) uniform Push {
  TlUints groups;     // per group: first datum (subset-local), count, class, swap
  TlUints lors;       // per datum: u_a | v_a << 8 | (du + 128) << 16 | (dv + 128) << 24
  TlUints class_ptr;  // n_classes + 1
  TlUints keys;       // ix | (m_y + 1024) << 10 | (m_z + 1024) << 21
  TlFloats vals;
  TlFloats image;     // forward: read; back: accumulated
  TlFloats data;      // forward: written (one per datum); back: read
  uvec3 dims;
  uint D;
  int ey, ez;
  uint interchange, xsym;
  uint n_groups, lor_first;
  float bound;        // srm_back_fixed: tl_fixed.glsl's amax (compute/pet/srm/tl-srm-operator.c)
  uint pad;
} pc;

struct SrmLor {
  int ua, va, du, dv;
  bool swap, ny, nz;
};

SrmLor srm_lor(uint w, bool swap) {
  SrmLor l;
  l.ua = int(w & 255u);
  l.va = int((w >> 8) & 255u);
  l.du = int((w >> 16) & 255u) - 128;
  l.dv = int(w >> 24) - 128;
  l.ny = l.du < 0;
  l.nz = l.dv < 0;
  l.swap = swap;  // y <-> z interchange: same for the whole group (tl_srm_class flags)
  return l;
}

// Voxel index of stored element (ix, ms, ns) for LOR l, mirror 0/1 (x point reflection);
// -1 when outside the grid.
int srm_voxel(SrmLor l, int ix, int ms, int ns, uint mirror) {
  int my = l.swap ? ns : ms, mz = l.swap ? ms : ns;
  if (l.ny) my = -my;
  if (l.nz) mz = -mz;
  int D = int(pc.D);
  if (mirror != 0u) {
    ix = int(pc.dims.x) - 1 - ix;
    my = 2 * l.du * D - my;
    mz = 2 * l.dv * D - mz;
  }
  int iy = (my + pc.ey) / 2 + l.ua * D, iz = (mz + pc.ez) / 2 + l.va * D;
  if (iy < 0 || iz < 0 || iy >= int(pc.dims.y) || iz >= int(pc.dims.z)) return -1;
  return ix + int(pc.dims.x) * (iy + int(pc.dims.y) * iz);
}

uint srm_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
