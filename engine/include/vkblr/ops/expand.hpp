// vkblr/ops/expand.hpp — sign bitmaps expanded to f16 ±1 planes, the
// operands of the plane GEMMs (glsl/expand.comp).
//
// A sign bitmap is u32 [rows][words], words = ceil(r / 32): bit j of word w
// of a row is the sign of rank 32w + j, 1 = +1 and 0 = -1; the bits past r
// in a row's last word are ignored. Planes hold exactly ±1 (0x3c00 / 0xbc00).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// plane f16 [rows][r] and plane_t f16 [r][rows] (its transpose) from bits.
Dispatch expand(Context& ctx, const Buffer& bits, const Buffer& plane, const Buffer& plane_t, std::uint32_t rows,
                std::uint32_t r);
// plane f16 [rows][r] only.
Dispatch expand_n(Context& ctx, const Buffer& bits, const Buffer& plane, std::uint32_t rows, std::uint32_t r);
// plane_t f16 [r][rows] only (coalesced stores along its rows).
Dispatch expand_t(Context& ctx, const Buffer& bits, const Buffer& plane_t, std::uint32_t rows, std::uint32_t r);
// expand_n and expand_t into a transient (vkblr/dispatch.hpp), for an op
// that expands a bitmap for its own dispatches (the GEMM without bitmap
// staging).
Dispatch expand_n(Context& ctx, const Buffer& bits, const Transient& plane, std::uint32_t rows, std::uint32_t r);
Dispatch expand_t(Context& ctx, const Buffer& bits, const Transient& plane_t, std::uint32_t rows, std::uint32_t r);

}  // namespace vkblr::ops
