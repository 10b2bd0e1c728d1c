// vkblr/ops/train.hpp — the small kernels of a training step around the
// layers: the squared-error loss gradient and the non-finite guard
// (glsl/mse_grad.comp, finite_guard.comp).
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// dy f32 [n] = (y − target) · scale and partials f32 [64] of Σ (y − target)²
// (in a fixed order for a given n: add them on the host for ‖y − target‖²).
// Two dispatches (the second folds per-workgroup sums, kept in a transient
// of the Ops, into the 64).
// For L = ½·‖y − target‖² / norm, scale = 1 / norm gives dy = ∂L/∂y.
// dy may not alias y or target.
Ops mse_grad(Context& ctx, const Buffer& y, const Buffer& target, const Buffer& dy, std::uint32_t n, float scale,
             const Buffer& partials);

// flag u32 word `flag_word` = 1 when any of values f32 [count] is NaN or
// ±Inf, else 0. With flag_word = a LiveScalars block's word + 2, the step's
// optimizer dispatches that read the block skip (change nothing).
Dispatch finite_guard(Context& ctx, const Buffer& values, std::uint32_t count, const Buffer& flag,
                      std::uint32_t flag_word);

}  // namespace vkblr::ops
