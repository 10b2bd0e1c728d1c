// input_range.hpp — the magnitudes of W and X that vkblr-fit can carry.
//
// The targets y* = X·Wᵀ are computed on the device from W and X staged to
// f16, and the layer's forward and backward stage X (times the scales g) to
// f16. A |value| above f16's largest, 65504, overflows; a matrix whose
// largest |value| is below f16's smallest normal, 2^-14 ≈ 6.1e-5, keeps
// only a few bits of each value in f16, or none (below 2^-25 every value
// becomes 0). Both are refused with the advice to rescale: the fit of
// c·W is c times the fit of W.
#pragma once

#include <cstdint>
#include <string_view>

namespace vkblr::fit {

inline constexpr double kF16Max = 65504.0;
inline constexpr double kF16MinNormal = 6.103515625e-05;  // 2^-14

// Throws vkblr::Error naming `what` ("W (w.safetensors:q)") when a
// matrix is all zero (`largest`, its largest |value|, is 0), or `largest`
// (at [row][col]) is above kF16Max or below kF16MinNormal.
void check_f16_magnitude(double largest, std::uint64_t row, std::uint64_t col, std::string_view what);

// Throws vkblr::Error unless `squared_norm`, ‖X·Wᵀ‖² of the `tokens`
// ("training", "held-out") tokens as the device computed it, is finite
// and positive; `inputs` names W and X in the message.
void check_target_norm(double squared_norm, std::string_view tokens, std::string_view inputs);

}  // namespace vkblr::fit
