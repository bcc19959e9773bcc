// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by srm_forward / srm_back: the dual-head system response matrix stored by symmetry
// class (compute/pet/tl-srm.h) applied to groups of LORs. One workgroup per group of up to
// SRM_GROUP LORs of the same class (Chou et al. 2012 Algorithm 3: the LORs of a group share the
// stored responses, read once; each invocation strides over the class's elements and maps
// each element to every LOR of the group through the symmetries).
#include "tl_common.glsl"
#include "tl_constants.glsl"  // the group, key and LOR word layouts the host shares

#define SRM_GROUP TL_SRM_GROUP
#define SRM_OFF int(1u << (TL_SRM_KEY_M_BITS - 1u))  // m_y, m_z offset in a key

layout(push_constant, scalar) uniform Push {
  TlUints groups;     // per group: first datum (subset-local), count, class, swap
  TlUints lors;       // per datum: u_a, v_a, du, dv (TL_SRM_LOR_BITS each; srm_lor)
  TlUints class_ptr;  // n_classes + 1
  TlUints keys;       // ix, m_y, m_z (TL_SRM_KEY_*_BITS; srm_key)
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
  const uint b = TL_SRM_LOR_BITS, mask = (1u << b) - 1u;
  const int off = int(1u << (b - 1u));
  l.ua = int(w & mask);
  l.va = int((w >> b) & mask);
  l.du = int((w >> (2u * b)) & mask) - off;
  l.dv = int(w >> (3u * b)) - off;
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

// An element key's voxel column ix and offsets m_y, m_z (tl_srm.c's packing).
void srm_key(uint key, out int ix, out int ms, out int ns) {
  const uint xb = TL_SRM_KEY_X_BITS, mb = TL_SRM_KEY_M_BITS;
  ix = int(key & ((1u << xb) - 1u));
  ms = int((key >> xb) & ((1u << mb) - 1u)) - SRM_OFF;
  ns = int(key >> (xb + mb)) - SRM_OFF;
}

uint srm_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
