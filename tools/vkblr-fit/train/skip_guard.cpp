#include "vkblr-fit/train/skip_guard.hpp"

#include <algorithm>

#include "vkblr/error.hpp"

namespace vkblr::fit {

std::uint32_t max_skipped_steps(std::uint32_t steps) { return std::max<std::uint32_t>(3, steps / 100); }

void SkipGuard::after_step(std::uint32_t step, bool applied, std::uint32_t skipped) {
  in_a_row_ = applied ? 0 : in_a_row_ + 1;
  if (in_a_row_ < kMaxSkippedInARow && skipped <= max_skipped_steps(options_.steps)) return;
  fail(
      "stopped at step {} of {}: {} steps skipped for NaN or Inf in the gradients ({} in a row; at most {} in a row "
      "and {} in all are tolerated). Likely causes: a learning rate too large (--scale-lr {}, --sign-lr {}), "
      "--gscale {} too large (the gradients staged to f16 overflow), or W or X with values out of range",
      step + 1, options_.steps, skipped, in_a_row_, kMaxSkippedInARow - 1, max_skipped_steps(options_.steps),
      options_.scale_lr, options_.sign_lr, options_.gscale);
}

}  // namespace vkblr::fit
