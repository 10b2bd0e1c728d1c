// vkblr/ops.hpp — builders of the elementwise, staging and reduction ops.
//
// Each builder checks its arguments (shapes, buffer sizes) and returns the
// Dispatch (or Ops) that computes the op; record it with a Recorder. Bad
// arguments throw vkblr::Error naming the op and the value. Layouts are
// row-major; "f32" buffers hold floats, "f16" buffers IEEE halves. What each
// op computes, exactly, is in docs/kernels.md.
#pragma once

#include <cstdint>
#include <span>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// ---- staging: f32 -> f16 --------------------------------------------------

// dst f16 [rows][k] = src f32 [m][k] · scale, rows m..rows-1 zero (rows >= m;
// 0 = m).
Dispatch cvt(Context& ctx, const Buffer& src, const Buffer& dst, std::uint32_t m, std::uint32_t k, float scale,
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

// ---- diagnostics ----------------------------------------------------------

// One cooperative-matrix fragment product with the device's f16 fragment
// (Caps::f16_fragment(), M×N×K): c f32 [M][N] = a f16 [M][K] · b f16 [K][N].
// Throws when the device has no cooperative matrices.
Dispatch coopmat_probe(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& c);

}  // namespace vkblr::ops
