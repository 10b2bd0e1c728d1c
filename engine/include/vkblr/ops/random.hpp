// vkblr/ops/random.hpp — Gaussian random numbers on the device, the same
// for a seed whatever the device, grid or dispatch (counter-based: element
// i depends only on (seed, stream, i)).
//
// Draw i: two 32-bit words w0 = mix(key ^ 2i), w1 = mix(key ^ (2i + 1))
// (key from seed and stream; mix = the "lowbias32" integer hash the sign
// optimizer uses, docs/sign-optimizer.md), uniforms u = (w >> 8) + 0.5
// times 2^-24 in (0, 1), then Box–Muller: √(−2 ln u0) · cos(2π u1).
// gaussian_reference() computes the same draw on the host in f64; the
// device's f32 log/cos differ from it by a few ulp.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// out f32 [count] at element `offset`: out[offset + i] = scale · draw i of
// (seed, stream), i < count < 2^31.
Dispatch gaussian(Context& ctx, const Buffer& out, std::uint64_t count, std::uint64_t seed, std::uint32_t stream,
                  float scale = 1.0f, std::uint64_t offset = 0);

// Draw i of (seed, stream) on the host, in f64 (the reference of the kernel).
double gaussian_reference(std::uint64_t seed, std::uint32_t stream, std::uint32_t i);

}  // namespace vkblr::ops
