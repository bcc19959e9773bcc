#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// out[r] (+)= sum_{k in [ptr[r], ptr[r+1])} val[k] * in[idx[k]]: a compressed-row sparse
// matrix times a vector, one invocation per output row (a gather: no atomics, each output
// summed in entry order, so results are deterministic). The CSR operator's forward runs it
// on a row block (CSR), its adjoint on the block's transpose (CSC, built on the host), with
// ACCUMULATE so x += A_s^T w.
#include "tl_common.glsl"

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlUints ptr;    // rows + 1 offsets into idx / val (absolute)
  TlUints idx;    // column of each entry (into `in`)
  TlFloats val;
  TlFloats vin;
  TlFloats vout;  // one per row
  uint accumulate;
  uint pad;
} pc;

void main() {
  uint i = tl_local_item();
  if (i >= pc.tl_count) return;
  uint r = pc.tl_base + i;
  uint k0 = pc.ptr.v[r], k1 = pc.ptr.v[r + 1];
  float s = 0.0;
  for (uint k = k0; k < k1; k++) s = fma(pc.val.v[k], pc.vin.v[pc.idx.v[k]], s);
  if (pc.accumulate != 0u) s += pc.vout.v[r];
  pc.vout.v[r] = s;
}
