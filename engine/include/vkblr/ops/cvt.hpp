// vkblr/ops/cvt.hpp — staging of GEMM operands: f32 -> f16, scaled per
// column and by a power of two (glsl/cvt.comp, cvt_multi.comp, cvt_t.comp).
#pragma once

#include <cstdint>
#include <span>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// dst f16 [rows][k] = src f32 [m][k] · scale, rows m..rows-1 zero (rows >= m;
// 0 = m).
Dispatch cvt(Context& ctx, const Buffer& src, const Buffer& dst, std::uint32_t m, std::uint32_t k, float scale,
             std::uint32_t rows = 0);
// The same into a transient (an op's own staging copy, e.g. attention's f16
// operands).
Dispatch cvt(Context& ctx, const Buffer& src, const Transient& dst, std::uint32_t m, std::uint32_t k, float scale,
             std::uint32_t rows = 0);
// dst f16 [rows][k] = src [m][k] · col[k] · scale, rows past m zero.
Dispatch cvt_col(Context& ctx, const Buffer& src, const Buffer& col, const Buffer& dst, std::uint32_t m,
                 std::uint32_t k, float scale, std::uint32_t rows = 0);
// dst f16 [rows][k] = columns col0..col0+k of src f32 [m][stride] · scale.
Dispatch cvt_cols(Context& ctx, const Buffer& src, const Buffer& dst, std::uint32_t m, std::uint32_t k,
                  std::uint32_t stride, std::uint32_t col0, float scale, std::uint32_t rows = 0);
// cvt_col of one src into 1..4 outputs: dsts[j] = src · cols[j] · scale.
Dispatch cvt_multi(Context& ctx, const Buffer& src, std::span<const Buffer* const> cols,
                   std::span<const Buffer* const> dsts, std::uint32_t m, std::uint32_t k, float scale,
                   std::uint32_t rows = 0);
// Transposed staging: dst f16 [k_rows][tok_rows] = (src f32 [m][k] (· col[k]) · scale)ᵀ,
// zero for tokens >= m and rows >= k; k_rows, tok_rows multiples of 32
// (0 = round k / m up to 32). col may be null. Bit for bit the values cvt /
// cvt_col stage.
Dispatch cvt_t(Context& ctx, const Buffer& src, const Buffer* col, const Buffer& dst, std::uint32_t m, std::uint32_t k,
               float scale, std::uint32_t k_rows = 0, std::uint32_t tok_rows = 0);
// cvt_t (no col) that also writes the row-major staging cvt makes, rows f16
// [m][k] = f16(src · scale), from the same read of src.
Dispatch cvt_t_rows(Context& ctx, const Buffer& src, const Buffer& dst, const Buffer& rows, std::uint32_t m,
                    std::uint32_t k, float scale, std::uint32_t k_rows = 0, std::uint32_t tok_rows = 0);

}  // namespace vkblr::ops
