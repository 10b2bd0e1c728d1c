// vkblr/ops/random.hpp — Gaussian random numbers on the device,
// counter-based: element i depends only on (seed, stream, i), so a draw is
// the same whatever the grid, the dispatch or the count it was made with.
//
// Draw i: two 32-bit words w_j = mix(mix(2i + j) ^ key), j = 0, 1, with
// key = mix(mix(mix(seed_lo) ^ seed_hi) ^ stream) and mix the "lowbias32"
// integer hash the sign optimizer uses (docs/sign-optimizer.md); uniforms
// u_j = ((w_j >> 9) + 0.5) · 2^-23, exact in f32 and inside (0, 1); then
// Box–Muller: √(−2 ln u0) · cos(2π u1), so |draw| < 5.8. The counter is
// hashed before the key enters: two streams' draws are unrelated, where
// mix(key ^ counter) would make every stream the draws of any other at
// XOR-shifted indices.
//
// The device evaluates Box–Muller in f32 (−ln u0 by a series where u0 >
// 15/16, the device's log elsewhere, its cos on (−π, π)): within
// 1e-5 · max(1, |draw|) of gaussian_reference(), the same draw in f64,
// where the device's log and cos are accurate to a few ulp (lavapipe's are;
// Vulkan's minimum for cos is looser). Bit-identical on one device only.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// out f32 at element `offset`: out[offset + i] = scale · draw first + i of
// (seed, stream), for i < count, count >= 1, first + count <= 2^31 (a
// stream's draws: a long draw can be made in pieces). Elements outside
// [offset, offset + count) are not touched.
Dispatch gaussian(Context& ctx, const Buffer& out, std::uint64_t count, std::uint64_t seed, std::uint32_t stream,
                  float scale = 1.0f, std::uint64_t offset = 0, std::uint64_t first = 0);

// Draw i of (seed, stream) on the host, in f64 (the reference of the kernel).
double gaussian_reference(std::uint64_t seed, std::uint32_t stream, std::uint32_t i);

}  // namespace vkblr::ops
