#version 460
#extension GL_GOOGLE_include_directive : require
// SPDX-License-Identifier: GPL-3.0-or-later
// Exact median over a (2R+1)^3 neighbourhood (R = specialization constant 1: 1 -> 3^3,
// 2 -> 5^3), edges replicated by clamping the index (compute/pet/tl-filter.c).
// Forgetful selection: with N = 2m+1 values, a buffer of B = m+2 and u values not yet
// read, the buffer's min and max are never the middle of (buffer + unread) while
// B_now >= u + 2; dropping both keeps that middle, and B_now - u stays 3 as each drop is
// followed by reading one value. So: fill B, then (drop min and max, read one) until all
// are read, drop min and max of the last 3. About 2100 comparisons on 64 floats for 5^3
// instead of ~5900 on 125 for a partial selection sort. The result is always one of the
// inputs, so it matches a CPU reference exactly.
#include "tl_common.glsl"

layout(constant_id = 1) const int R = 1;
const int W = 2 * R + 1;
const int N = W * W * W;
const int B = N / 2 + 2;

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  uint dims[3];
} pc;

int nx, ny, nz, x, y, z;

// Neighbour n of the window, x fastest, clamped to the grid.
float fetch(int n) {
  int dx = n % W - R, dy = (n / W) % W - R, dz = n / (W * W) - R;
  uint xi = uint(clamp(x + dx, 0, nx - 1)), yi = uint(clamp(y + dy, 0, ny - 1));
  uint zi = uint(clamp(z + dz, 0, nz - 1));
  return pc.src.v[xi + uint(nx) * (yi + uint(ny) * zi)];
}

void main() {
  uint li = tl_local_item();
  if (li >= pc.tl_count) return;
  uint i = pc.tl_base + li;
  nx = int(pc.dims[0]); ny = int(pc.dims[1]); nz = int(pc.dims[2]);
  x = int(i % uint(nx)); y = int((i / uint(nx)) % uint(ny)); z = int(i / uint(nx * ny));
  float v[B];
  for (int n = 0; n < B; n++) v[n] = fetch(n);
  int s = B;
  for (int next = B; next <= N; next++) {
    int imin = 0, imax = 0;
    for (int j = 1; j < s; j++) {
      if (v[j] < v[imin]) imin = j;
      if (v[j] > v[imax]) imax = j;
    }
    if (imin == imax) imax = imin == 0 ? 1 : 0; // all equal: any other one is a max too
    // move the min to s-1 and the max to s-2, then forget both
    float t = v[imin]; v[imin] = v[s - 1]; v[s - 1] = t;
    if (imax == s - 1) imax = imin;
    t = v[imax]; v[imax] = v[s - 2]; v[s - 2] = t;
    s -= 2;
    if (next == N) break; // the last 3 have lost their min and max
    v[s++] = fetch(next);
  }
  pc.dst.v[i] = v[0];
}
