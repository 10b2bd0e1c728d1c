// vkblr/ops/gemm_f32.hpp — the f32 GEMM of the host-side linear algebra
// moved to the GPU (orthonormalisation, Gram matrices, small products of
// vkblr-fit's init and refit), where f16 operands are not accurate enough.
//
//   out[m][n] (+)= alpha · op(A) · op(B)
//
// op(A) is [m][k]: A stored [m][lda] (trans_a = false) or its transpose,
// A stored [k][lda] (trans_a = true). op(B) is [k][n]: B stored [k][ldb]
// (trans_b = false) or B stored [n][ldb] (trans_b = true). out is [m][ldo].
// Leading dimensions 0 mean packed (the row length); offsets are in
// elements from the start of each buffer, so blocks of larger matrices are
// addressed without views. All f32.
//
// Every output is alpha·(Σ_{k ascending} a·b, an fma chain in f32), then
// added to out when accumulating: the same bits whatever the tile or grid,
// for any m, n, k >= 1 (edges are bounds-checked). out must not overlap A
// or B. Bad shapes or buffers too small throw vkblr::Error naming
// "gemm_f32" and the value.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

struct GemmF32 {
  std::uint32_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::uint32_t lda = 0, ldb = 0, ldo = 0;  // 0: packed
  std::uint64_t a_offset = 0, b_offset = 0, out_offset = 0;  // elements
  float alpha = 1.0f;
  bool accumulate = false;  // out += alpha·op(A)·op(B)
};

Dispatch gemm_f32(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, const GemmF32& shape);

}  // namespace vkblr::ops
