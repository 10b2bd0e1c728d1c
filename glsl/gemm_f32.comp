#version 460
// The f32 GEMM (vkblr/ops/gemm_f32.hpp): OUT[m][n] (+)= alpha · op(A) · op(B),
// A, B, OUT f32 with row strides and element offsets (gemm_f32.h).
//
// A workgroup computes a BM × BN block of OUT over K tiles of BK. Per tile it
// copies op(A)[m0 .. m0+BM)[k0 .. k0+BK) and op(B)[k0 .. k0+BK)[n0 .. n0+BN)
// into shared memory, both K-major (a row per k: sa[k][m], sb[k][n], rows
// padded by 16 bytes), with consecutive invocations reading consecutive
// addresses of the matrix as stored (along k for A and for transposed B,
// along m for transposed A, along n for B): every transpose loads coalesced.
// The next tile is loaded into registers while the current one is multiplied
// from the other of two shared-memory stages.
//
// Invocation (tx, ty) owns TM × TN outputs: rows (g·(BM/TM) + ty)·4 + c
// (g < TM/4, c < 4) and likewise columns, so its operands are 16-byte shared
// loads that neighbouring invocations take from neighbouring addresses.
//
// Summation order, whatever the tile: each output is one chain of fma() over
// k ascending from +0 (the last, partial K tile runs only its k < K, so no
// padding term enters the chain), then alpha · sum, then out + that when
// accumulating, each rounded on its own (`precise`). Every tile compiles the
// same fma() per term, so a device rounds the chain the same way whatever
// the tile: fused where the driver emits an fma instruction, a rounded
// product then a rounded sum on lavapipe (measured). (glslang does not mark
// fma() NoContraction, so `precise` cannot pin it.) Elements past m, n or k
// are staged as zeros and never written.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "gemm_f32.h"

layout(constant_id = GEMM_F32_SPEC_WG_SIZE) const uint WG_SIZE = 256;
layout(constant_id = GEMM_F32_SPEC_BM) const uint BM = 128;
layout(constant_id = GEMM_F32_SPEC_BN) const uint BN = 128;
layout(constant_id = GEMM_F32_SPEC_BK) const uint BK = 8;
layout(constant_id = GEMM_F32_SPEC_TM) const uint TM = 8;
layout(constant_id = GEMM_F32_SPEC_TN) const uint TN = 8;
layout(constant_id = GEMM_F32_SPEC_TRANS_A) const uint TRANS_A = 0;
layout(constant_id = GEMM_F32_SPEC_TRANS_B) const uint TRANS_B = 0;
layout(local_size_x_id = GEMM_F32_SPEC_WG_SIZE) in;

layout(set = 0, binding = 0) restrict readonly buffer A { float a_[]; };
layout(set = 0, binding = 1) restrict readonly buffer B { float b_[]; };
layout(set = 0, binding = 2) restrict buffer Out { float out_[]; };

const uint THREADS_M = BM / TM;  // invocations along m and n (C++ checks the divisions)
const uint THREADS_N = BN / TN;
const uint GROUPS_M = TM / 4;  // 4-row groups per invocation
const uint GROUPS_N = TN / 4;
const uint SA = BM / 4 + 1;  // vec4 per shared row (one of padding)
const uint SB = BN / 4 + 1;
const uint A_LOADS = BM * BK / WG_SIZE;  // elements per invocation and tile
const uint B_LOADS = BN * BK / WG_SIZE;

shared vec4 sa[2 * BK * SA];
shared vec4 sb[2 * BK * SB];

float a_next[A_LOADS];  // the next tile, between its global load and its store
float b_next[B_LOADS];
float acc[TM][TN];

// Element v of the A tile as (m, k) within the tile: consecutive v follow A's
// rows as stored.
uvec2 a_element(uint v) { return TRANS_A != 0 ? uvec2(v % BM, v / BM) : uvec2(v / BK, v % BK); }
// Element v of the B tile as (n, k) within the tile, likewise.
uvec2 b_element(uint v) { return TRANS_B != 0 ? uvec2(v / BK, v % BK) : uvec2(v % BN, v / BN); }

void load_tile(uint m0, uint n0, uint k0) {
  [[unroll]] for (uint i = 0; i < A_LOADS; ++i) {
    const uvec2 e = a_element(gl_LocalInvocationIndex + i * WG_SIZE);
    const uint row = m0 + e.x, k = k0 + e.y;
    const uint at = TRANS_A != 0 ? k * pc.lda + row : row * pc.lda + k;
    a_next[i] = row < pc.m && k < pc.k ? a_[pc.a_offset + at] : 0.0;
  }
  [[unroll]] for (uint i = 0; i < B_LOADS; ++i) {
    const uvec2 e = b_element(gl_LocalInvocationIndex + i * WG_SIZE);
    const uint col = n0 + e.x, k = k0 + e.y;
    const uint at = TRANS_B != 0 ? col * pc.ldb + k : k * pc.ldb + col;
    b_next[i] = col < pc.n && k < pc.k ? b_[pc.b_offset + at] : 0.0;
  }
}

void store_tile(uint stage) {
  [[unroll]] for (uint i = 0; i < A_LOADS; ++i) {
    const uvec2 e = a_element(gl_LocalInvocationIndex + i * WG_SIZE);
    sa[(stage * BK + e.y) * SA + e.x / 4][e.x % 4] = a_next[i];
  }
  [[unroll]] for (uint i = 0; i < B_LOADS; ++i) {
    const uvec2 e = b_element(gl_LocalInvocationIndex + i * WG_SIZE);
    sb[(stage * BK + e.y) * SB + e.x / 4][e.x % 4] = b_next[i];
  }
}

// acc += op(A)[rows][k] · op(B)[k][columns] for the k at row kk of `stage`.
void multiply(uint stage, uint kk, uint tx, uint ty) {
  vec4 a[GROUPS_M];
  vec4 b[GROUPS_N];
  [[unroll]] for (uint g = 0; g < GROUPS_M; ++g) a[g] = sa[(stage * BK + kk) * SA + g * THREADS_M + ty];
  [[unroll]] for (uint g = 0; g < GROUPS_N; ++g) b[g] = sb[(stage * BK + kk) * SB + g * THREADS_N + tx];
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = fma(a[i / 4][i % 4], b[j / 4][j % 4], acc[i][j]);
  }
}

void main() {
  const uint tx = gl_LocalInvocationIndex % THREADS_N;
  const uint ty = gl_LocalInvocationIndex / THREADS_N;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;
  }
  const uint tiles = (pc.k + BK - 1) / BK;
  const uint last_k = pc.k - (tiles - 1) * BK;  // k rows of the last tile, 1..BK
  load_tile(m0, n0, 0);
  store_tile(0);
  barrier();
  for (uint t = 0; t < tiles; ++t) {
    const uint stage = t & 1u;
    const bool more = t + 1 < tiles;
    if (more) load_tile(m0, n0, (t + 1) * BK);
    if (more || last_k == BK) {
      [[unroll]] for (uint kk = 0; kk < BK; ++kk) multiply(stage, kk, tx, ty);
    } else {
      for (uint kk = 0; kk < last_k; ++kk) multiply(stage, kk, tx, ty);
    }
    if (more) store_tile(stage ^ 1u);
    barrier();
  }
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint row = m0 + ((i / 4) * THREADS_M + ty) * 4 + i % 4;
    if (row >= pc.m) continue;
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      const uint col = n0 + ((j / 4) * THREADS_N + tx) * 4 + j % 4;
      if (col >= pc.n) continue;
      const uint o = pc.out_offset + row * pc.ldo + col;
      precise float r = pc.alpha * acc[i][j];
      if (pc.accumulate != 0u) r = out_[o] + r;
      out_[o] = r;
    }
  }
}
