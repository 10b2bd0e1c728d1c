// vkblr/ops/probe.hpp — diagnostic kernels (glsl/coopmat_probe.comp).
#pragma once

#include <cstdint>
#include <span>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// One cooperative-matrix fragment product with the device's f16 fragment
// (Caps::f16_fragment(), M×N×K): c f32 [M][N] = a f16 [M][K] · b f16 [K][N].
// Throws when the device has no cooperative matrices.
Dispatch coopmat_probe(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& c);

}  // namespace vkblr::ops
