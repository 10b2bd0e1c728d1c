// vkblr/ops/scale.hpp — the output ops of a blr layer: column-scaled
// accumulation of path outputs (glsl/scale_acc.comp) and f16 -> f32
// widening (glsl/f16_to_f32.comp).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// out f32 [m][k] = a[m][k]·col[k] (accumulate: out += a·col, the product
// rounded before the sum); a f32 [m][k], col f32 [k]. out must not be a.
Dispatch scale_acc(Context& ctx, const Buffer& a, const Buffer& col, const Buffer& out, std::uint32_t m,
                   std::uint32_t k, bool accumulate);
// out f32 [m][k] = a0·col0[k] + a1·col1[k] in one pass, rounded exactly as
// scale_acc(a0, col0, overwrite) followed by scale_acc(a1, col1,
// accumulate): fl(fl(a0·col0) + fl(a1·col1)).
Dispatch scale_acc2(Context& ctx, const Buffer& a0, const Buffer& col0, const Buffer& a1, const Buffer& col1,
                    const Buffer& out, std::uint32_t m, std::uint32_t k);
// out f32 [n] = src f16 [n], exactly.
Dispatch f16_to_f32(Context& ctx, const Buffer& src, const Buffer& out, std::uint32_t n);

}  // namespace vkblr::ops
