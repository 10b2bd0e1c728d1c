#version 460
// dense_fwd for at most 48 outputs, tiled: OUT[m][r] (+)= A[m][k] · W[r][k]ᵀ.
// A workgroup computes 64 rows × all r outputs; invocation (row group
// ty = tid / 16: rows 4ty..4ty+3, lane tx = tid % 16) owns outputs tx,
// tx + 16 and tx + 32 of its 4 rows. k goes through shared memory in chunks
// of 64 columns, loaded as vec4 (k is a multiple of 4, so every row starts
// on a vec4). Each output sums j = 0..k-1 in order with one fma() per term
// into a precise accumulator, exactly as dense.comp's dense_fwd: the two
// agree bit for bit.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dense.h"

#define CHUNK 64          // columns of k per shared-memory stage
#define PITCH (CHUNK + 1) // padded row pitch of the tiles (no bank conflicts)
#define LANES 16          // invocations across the outputs
#define ROWS_PER_INVOCATION (VKBLR_DENSE_TILE_ROWS / (VKBLR_ELT_WG / LANES))
#define OUTS_PER_INVOCATION (VKBLR_DENSE_TILE_OUTPUTS / LANES)

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer In { vec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer Weight { vec4 w4[]; };
layout(set = 0, binding = 2) buffer Out { float dst[]; };

shared float tile_a[VKBLR_DENSE_TILE_ROWS * PITCH];
shared float tile_w[VKBLR_DENSE_TILE_OUTPUTS * PITCH];

void main() {
  const uint tid = gl_LocalInvocationIndex;
  const uint row0 = gl_WorkGroupID.x * VKBLR_DENSE_TILE_ROWS;
  const uint ty = tid / LANES;
  const uint tx = tid % LANES;
  precise float acc[ROWS_PER_INVOCATION][OUTS_PER_INVOCATION];
  for (uint q = 0; q < ROWS_PER_INVOCATION; ++q) {
    for (uint s = 0; s < OUTS_PER_INVOCATION; ++s) acc[q][s] = 0.0;
  }
  for (uint k0 = 0; k0 < pc.k; k0 += CHUNK) {
    // stage A rows row0..row0+63 and W rows 0..47, columns k0..k0+63 (zeros outside)
    for (uint e = tid; e < VKBLR_DENSE_TILE_ROWS * (CHUNK / 4); e += VKBLR_ELT_WG) {
      const uint rr = e / (CHUNK / 4);
      const uint kq = e % (CHUNK / 4) * 4;
      vec4 v = vec4(0.0);
      if (row0 + rr < pc.m && k0 + kq < pc.k) v = a4[((row0 + rr) * pc.k + k0 + kq) / 4];
      const uint at = rr * PITCH + kq;
      tile_a[at] = v.x;
      tile_a[at + 1] = v.y;
      tile_a[at + 2] = v.z;
      tile_a[at + 3] = v.w;
    }
    for (uint e = tid; e < VKBLR_DENSE_TILE_OUTPUTS * (CHUNK / 4); e += VKBLR_ELT_WG) {
      const uint o = e / (CHUNK / 4);
      const uint kq = e % (CHUNK / 4) * 4;
      vec4 v = vec4(0.0);
      if (o < pc.r && k0 + kq < pc.k) v = w4[(o * pc.k + k0 + kq) / 4];
      const uint at = o * PITCH + kq;
      tile_w[at] = v.x;
      tile_w[at + 1] = v.y;
      tile_w[at + 2] = v.z;
      tile_w[at + 3] = v.w;
    }
    barrier();
    const uint kn = min(uint(CHUNK), pc.k - k0);
    for (uint kk = 0; kk < kn; ++kk) {
      float x[ROWS_PER_INVOCATION];
      float wv[OUTS_PER_INVOCATION];
      for (uint q = 0; q < ROWS_PER_INVOCATION; ++q) x[q] = tile_a[(ty * ROWS_PER_INVOCATION + q) * PITCH + kk];
      for (uint s = 0; s < OUTS_PER_INVOCATION; ++s) wv[s] = tile_w[(tx + s * LANES) * PITCH + kk];
      for (uint q = 0; q < ROWS_PER_INVOCATION; ++q) {
        for (uint s = 0; s < OUTS_PER_INVOCATION; ++s) acc[q][s] = fma(x[q], wv[s], acc[q][s]);
      }
    }
    barrier();
  }
  for (uint q = 0; q < ROWS_PER_INVOCATION; ++q) {
    const uint row = row0 + ty * ROWS_PER_INVOCATION + q;
    for (uint s = 0; s < OUTS_PER_INVOCATION; ++s) {
      const uint o = tx + s * LANES;
      if (row < pc.m && o < pc.r) {
        const uint i = row * pc.r + o;
        dst[i] = pc.accumulate != 0 ? dst[i] + acc[q][s] : acc[q][s];
      }
    }
  }
}
