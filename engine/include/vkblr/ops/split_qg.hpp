// vkblr/ops/split_qg.hpp — per-head query/gate rows split apart and merged
// back (glsl/split_qg.comp).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// qg f32 [m][heads][2·head_dim] holds, per row and head, that head's q
// (head_dim values) followed by its gate (head_dim values). split_qg copies
// them out: q f32 [m][heads·head_dim], gate f32 [m][heads·head_dim].
Dispatch split_qg(Context& ctx, const Buffer& qg, const Buffer& q, const Buffer& gate, std::uint32_t m,
                  std::uint32_t heads, std::uint32_t head_dim);

// The reverse of split_qg (for the gradients): qg = the interleave of q and
// gate, every element of qg written.
Dispatch merge_qg(Context& ctx, const Buffer& q, const Buffer& gate, const Buffer& qg, std::uint32_t m,
                  std::uint32_t heads, std::uint32_t head_dim);

}  // namespace vkblr::ops
