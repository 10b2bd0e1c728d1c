// vkblr/ops/add.hpp — elementwise f32 sums and a plain copy (glsl/add.comp):
// the residual adds of a transformer block where no other op fuses them,
// the sum of two gradients of one parameter (a tied embedding), and the
// copy whose rate is the bandwidth ceiling of the row-wise ops.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// out f32 [n] = a[n] + b[n], one f32 addition per element. out must not
// overlap a or b (add_into is the in-place form).
Dispatch add(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, std::uint32_t n);

// out f32 [n] += a[n] (read and written in place): the same bits as
// add(out, a) into a third buffer. a must not overlap out.
Dispatch add_into(Context& ctx, const Buffer& a, const Buffer& out, std::uint32_t n);

// out f32 [n] = a[n], through the shader cores (not a transfer command):
// what an elementwise kernel that reads and writes n floats can reach.
Dispatch copy(Context& ctx, const Buffer& a, const Buffer& out, std::uint32_t n);

}  // namespace vkblr::ops
