// calibration.hpp — the activations' second-moment matrix on the device,
// the statistic of the output-aware init choice and refit:
// C = XᵀX / T [n][n] over the training tokens.
#pragma once

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// gram_acc over chunks of training tokens in order (f16 operands — the
// tokens are f16 already —, f32 accumulation, the same bits run after run),
// then scaled by 1/T. f32 [n][n].
DeviceMatrix calibration_gram(Context& ctx, const DeviceData& data);

}  // namespace vkblr::fit
