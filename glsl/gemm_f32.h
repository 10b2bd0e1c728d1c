// gemm_f32.h — push constants and specialization constants of the f32 GEMM
// (gemm_f32.comp): out[m][n] (+)= alpha · op(A) · op(B), vkblr/ops/gemm_f32.hpp.
#ifndef VKBLR_GEMM_F32_H
#define VKBLR_GEMM_F32_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(GemmF32Push) {
  uint m;           // rows of op(A) and out
  uint n;           // columns of op(B) and out
  uint k;           // the reduction length
  uint lda;         // row stride of A as stored ([m][lda], or [k][lda] transposed), floats
  uint ldb;         // row stride of B as stored ([k][ldb], or [n][ldb] transposed), floats
  uint ldo;         // row stride of out, floats
  uint a_offset;    // first element of A, of B, of out in its bound range
  uint b_offset;
  uint out_offset;
  float alpha;      // product multiplier, applied to each finished sum
  uint accumulate;  // 1: out += alpha·sum, 0: out = alpha·sum
} VKBLR_PUSH_END(pc)

// Specialization constants (ids shared with engine/src/ops/gemm_f32.cpp).
#define GEMM_F32_SPEC_WG_SIZE 0  // invocations: (BM / TM) · (BN / TN)
#define GEMM_F32_SPEC_BM 1       // workgroup tile: BM × BN outputs
#define GEMM_F32_SPEC_BN 2
#define GEMM_F32_SPEC_BK 3       // K per shared-memory tile
#define GEMM_F32_SPEC_TM 4       // outputs per invocation: TM × TN (4 or 8 each)
#define GEMM_F32_SPEC_TN 5
#define GEMM_F32_SPEC_TRANS_A 6  // 1: A stored [k][lda]
#define GEMM_F32_SPEC_TRANS_B 7  // 1: B stored [n][ldb]

VKBLR_SHADER_END
#endif
