#include "vkblr-fit/train/trainer_config.hpp"

#include <algorithm>
#include <cmath>

namespace vkblr::fit {

BlrTrainerConfig trainer_config(const FitOptions& o, double loss_norm) {
  BlrTrainerConfig c;
  c.train_signs = o.sign_lr > 0;
  c.sign_init.opt = o.sign_opt;
  c.sign_init.tau = o.sign_tau;
  c.sign_init.state = o.bf16_state ? StateType::bf16 : StateType::f32;
  c.sign_init.seed = o.seed;
  c.sign_init.keep_bits0 = true;
  c.sign_step.beta1 = o.sign_beta1;
  c.sign_step.beta2 = o.sign_beta2;
  c.sign_step.eps = o.sign_eps;
  c.sign_step.clamp = o.sign_clamp;
  c.sign_step.hyst = o.sign_hyst;
  c.sign_step.flip_budget = o.flip_budget;
  c.scale_rel_floor = o.scale_rel_floor;
  c.gscale = o.gscale;
  c.loss_norm = static_cast<float>(loss_norm);
  return c;
}

float scheduled_rate(float base, std::uint32_t s, std::uint32_t steps, std::uint32_t warmup) {
  if (s < warmup) return base * static_cast<float>(s + 1) / static_cast<float>(warmup);
  const double t = static_cast<double>(s - warmup) / std::max<double>(1.0, static_cast<double>(steps - warmup));
  return static_cast<float>(base * 0.5 * (1.0 + std::cos(3.141592653589793 * t)));
}

}  // namespace vkblr::fit
