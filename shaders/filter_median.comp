#version 460
#extension GL_GOOGLE_include_directive : require
// Exact median over a (2R+1)^3 neighbourhood (R = specialization constant 1: 1 -> 3^3,
// 2 -> 5^3), edges replicated by clamping the index (compute/pet/tl-filter.c).
// The window goes into a private array and a partial selection sort stops at the middle
// element: the result is always one of the inputs, so it matches a CPU reference exactly.
#include "tl_common.glsl"

layout(constant_id = 1) const int R = 1;
const int W = 2 * R + 1;
const int N = W * W * W;

layout(push_constant, scalar) uniform Push {
  TL_PUSH_1D;
  TlFloats src;
  TlFloats dst;
  uint dims[3];
} pc;

void main() {
  uint li = tl_local_item();
  if (li >= pc.tl_count) return;
  uint i = pc.tl_base + li;
  int nx = int(pc.dims[0]), ny = int(pc.dims[1]), nz = int(pc.dims[2]);
  int x = int(i % uint(nx)), y = int((i / uint(nx)) % uint(ny)), z = int(i / uint(nx * ny));
  float v[N];
  int n = 0;
  for (int dz = -R; dz <= R; dz++) {
    uint oz = uint(clamp(z + dz, 0, nz - 1)) * uint(ny);
    for (int dy = -R; dy <= R; dy++) {
      uint oy = (oz + uint(clamp(y + dy, 0, ny - 1))) * uint(nx);
      for (int dx = -R; dx <= R; dx++) v[n++] = pc.src.v[oy + uint(clamp(x + dx, 0, nx - 1))];
    }
  }
  // after step k, v[0..k] hold the k+1 smallest values in order
  const int mid = N / 2;
  for (int k = 0; k <= mid; k++) {
    int m = k;
    for (int j = k + 1; j < N; j++)
      if (v[j] < v[m]) m = j;
    float t = v[k];
    v[k] = v[m];
    v[m] = t;
  }
  pc.dst.v[i] = v[mid];
}
