// skip_guard.hpp — stops a fit whose steps keep being skipped.
//
// BlrTrainer skips a step whose gradients hold NaN or Inf: nothing changes
// (vkblr/trainer.hpp). One now and then is harmless; many mean the run goes
// nowhere, usually for a learning rate or --gscale too large (the staged
// gradients overflow f16) or inputs out of range. The guard stops the run
// once kMaxSkippedInARow steps in a row, or more than
// max_skipped_steps(steps) in all, were skipped.
#pragma once

#include <cstdint>

#include "vkblr-fit/fit_options.hpp"

namespace vkblr::fit {

inline constexpr std::uint32_t kMaxSkippedInARow = 3;

// max(3, 1 % of the steps)
std::uint32_t max_skipped_steps(std::uint32_t steps);

class SkipGuard {
 public:
  // `options` resolved (resolve_fit_defaults): the message quotes them.
  explicit SkipGuard(const FitOptions& options) : options_(options) {}

  // After step `step` (counted from 0), applied or skipped, with `skipped`
  // steps skipped in all (a resumed run's earlier ones included). Throws
  // vkblr::Error naming the likely causes when the limits above are passed.
  void after_step(std::uint32_t step, bool applied, std::uint32_t skipped);

 private:
  const FitOptions& options_;
  std::uint32_t in_a_row_ = 0;
};

}  // namespace vkblr::fit
