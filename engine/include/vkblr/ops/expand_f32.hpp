// vkblr/ops/expand_f32.hpp — a sign bitmap as a scaled f32 matrix: the
// factors diag(h)·S_U·diag(ℓ) and diag(g)·S_V of a blr path, for the f32
// GEMMs of vkblr-fit's init and refit.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// plane f32 [rows][r] (row stride ldp, 0 = r; from element `offset`) =
// row_scale[i] · s_ik · col_scale[k], s_ik = ±1 from bits u32 [rows][r/32]
// (bit k%32 of word k/32 of row i, 1 = +1; docs/kernels.md). row_scale f32
// [rows] and col_scale f32 [r] may be null (1). r a multiple of 32. Each
// value is one f32 product (row_scale·s)·col_scale, rounded once per
// multiply, in that order.
Dispatch expand_f32(Context& ctx, const Buffer& bits, const Buffer* row_scale, const Buffer* col_scale,
                    const Buffer& plane, std::uint32_t rows, std::uint32_t r, std::uint32_t ldp = 0,
                    std::uint64_t offset = 0);

}  // namespace vkblr::ops
