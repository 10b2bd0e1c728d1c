// poisoned.hpp — device buffers filled with a poison pattern (host.hpp's
// kPoison32, kPoison16x2): an op's outputs start as NaNs, so an element it
// failed to write shows in the comparison.
#pragma once

#include <cstddef>

#include "support/host.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"

namespace vkt {

// Outputs a test must see written: a device buffer of `words` 32-bit words
// (f32, u32), each kPoison32 (an f32 NaN).
inline vkblr::Buffer poisoned(vkblr::Context& ctx, std::size_t words) {
  vkblr::Buffer b = ctx.buffer(words * 4);
  b.fill(kPoison32);
  return b;
}

// The same for `halves` f16 or bf16 values (rounded up to whole words),
// each half kPoison16x2's (an f16 NaN).
inline vkblr::Buffer poisoned16(vkblr::Context& ctx, std::size_t halves) {
  vkblr::Buffer b = ctx.buffer((halves + 1) / 2 * 4);
  b.fill(kPoison16x2);
  return b;
}

}  // namespace vkt
