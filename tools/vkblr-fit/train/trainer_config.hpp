// trainer_config.hpp — the BlrTrainer settings of a vkblr-fit run, from
// its options, and the learning-rate schedule of its steps.
#pragma once

#include <cstdint>

#include "vkblr-fit/fit_options.hpp"
#include "vkblr/trainer.hpp"

namespace vkblr::fit {

// The trainer of options `o` (resolved) for targets whose mean squared
// norm per training batch is `loss_norm` (FitBatches::train_target_sq):
// the loss is ½‖y − y*‖² / loss_norm, and BlrTrainer scales the sign
// gradients back to the raw squared error, where bop's tau and Adam's eps
// have a meaning independent of the target's size. --sign-lr 0 keeps the signs:
// no sign gradients or steps.
BlrTrainerConfig trainer_config(const FitOptions& o, double loss_norm);

// The learning rate of step `s` of `steps`: a linear warm-up over the
// first `warmup` steps to `base`, then a cosine decay to zero.
float scheduled_rate(float base, std::uint32_t s, std::uint32_t steps, std::uint32_t warmup);

}  // namespace vkblr::fit
