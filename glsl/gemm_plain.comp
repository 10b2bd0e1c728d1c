#version 460
// The GEMM without cooperative matrices (same interface and staging as
// gemm_coopmat.comp): for devices that lack them, and selectable everywhere
// with VKBLR_MM_COOPMAT=0. Each invocation owns a TM × TN block of the
// BM × BN workgroup block and accumulates it with f32 fma, k in order.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gemm.h"

layout(constant_id = GEMM_SPEC_WG_SIZE) const uint WG_SIZE = 256;
layout(constant_id = GEMM_SPEC_BM) const uint BM = 64;
layout(constant_id = GEMM_SPEC_BN) const uint BN = 64;
layout(constant_id = GEMM_SPEC_BK) const uint BK = 32;
layout(constant_id = GEMM_SPEC_WM) const uint TM = 4;  // rows per invocation
layout(constant_id = GEMM_SPEC_WN) const uint TN = 4;  // columns per invocation
layout(constant_id = GEMM_SPEC_B_MODE) const uint B_MODE = GEMM_B_PLANE;
layout(constant_id = GEMM_SPEC_STAGES) const uint STAGES = 1;
layout(local_size_x_id = GEMM_SPEC_WG_SIZE) in;

layout(set = 0, binding = 0) readonly buffer Act { uvec4 act[]; };
layout(set = 0, binding = 1) readonly buffer Plane { uvec4 plane[]; };
layout(set = 0, binding = 2) readonly buffer Bits { uvec4 bits[]; };  // bitmap words, four per element
layout(set = 0, binding = 3) buffer Out { float outv[]; };

#include "gemm_tile.glsl"

// Half number h of a shared array of uvec4.
float half_at(uint base, uint h) { return float(unpackFloat2x16(smem[base + (h >> 3)][(h >> 1) & 3u])[h & 1u]); }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint tx = gl_LocalInvocationIndex % (BN / TN);
  const uint ty = gl_LocalInvocationIndex / (BN / TN);
  float acc[TM][TN];
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;
  }
  // this layer's K range (split-K) and output
  const uint k_begin = gl_WorkGroupID.z * pc.k_split;
  const uint k_len = pc.k_split == 0u ? pc.k : min(pc.k_split, pc.k - k_begin);
  const uint z_out = gl_WorkGroupID.z * pc.z_stride;
  const uint k_tiles = (k_len + BK - 1) / BK;
  for (uint kt = 0; kt < k_tiles; ++kt) {
    load_tile(m0, n0, k_begin + kt * BK, 0);
    barrier();
    store_tile(0, 0);
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float a[TM];
      float b[TN];
      [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = half_at(a_base_of(0), (ty * TM + i) * SA + kk);
      [[unroll]] for (uint j = 0; j < TN; ++j) {
        const uint n = tx * TN + j;
        b[j] = half_at(b_base_of(0), B_MODE == GEMM_B_BITS_T ? kk * SBT + n : n * SB + kk);
      }
      [[unroll]] for (uint i = 0; i < TM; ++i) {
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
    }
  }
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint row = m0 + ty * TM + i;
    if (row >= pc.m) continue;
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      const uint col = n0 + tx * TN + j;
      if (col >= pc.n) continue;
      const uint o = z_out + row * pc.ldo + pc.ocol + col;
      precise float r = acc[i][j] * pc.oscale;
      if (pc.accumulate != 0u) r = outv[o] + r;
      outv[o] = r;
    }
  }
}
