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
// Every output is one chain over k ascending from +0 of the device's f32
// fma() (fused on a GPU with an fma instruction; a rounded product then a
// rounded sum on lavapipe), then alpha·sum, then out + that when
// accumulating: the same bits whatever the tile or grid on one device, for
// any m, n, k >= 1 (edges are bounds-checked). Leading dimensions must be at least the stored row
// length (k or m for A, n or k for B, n for out). Each block must span
// fewer than 2^32 elements from its first (blocks far into large buffers
// are bound from an aligned offset near their first element). out's span
// (first to last element) must not overlap A's or B's in the same buffer;
// A and B may be the same (a Gram matrix AᵀA). Bad shapes or buffers too
// small throw vkblr::Error naming "gemm_f32" and the value.
#pragma once

#include <cstdint>
#include <string>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"
#include "vkblr/gemm_tile.hpp"

namespace vkblr::ops {

struct GemmF32 {
  std::uint32_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::uint32_t lda = 0, ldb = 0, ldo = 0;  // 0: packed
  std::uint64_t a_offset = 0, b_offset = 0, out_offset = 0;  // elements
  float alpha = 1.0f;
  bool accumulate = false;  // out += alpha·op(A)·op(B)
};

// The tile vkblr uses for an m × n output on this device: 64×64 of 4×4 per
// invocation on discrete GPUs, 32×32 elsewhere (lavapipe); the same for
// every shape today. The context's GemmPolicy::f32_tile overrides it.
GemmF32Tile gemm_f32_tile_for(const Context& ctx, std::uint32_t m, std::uint32_t n);
// Throws Error when `tile` cannot run on this device (shapes, invocations,
// shared memory), naming the broken rule.
void check_gemm_f32_tile(const Context& ctx, const GemmF32Tile& tile);

// `tile` = nullptr: gemm_f32_tile_for. Any tile gives the same bits.
Dispatch gemm_f32(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, const GemmF32& shape,
                  const GemmF32Tile* tile = nullptr);

}  // namespace vkblr::ops
