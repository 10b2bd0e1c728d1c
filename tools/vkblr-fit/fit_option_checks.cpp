#include "vkblr-fit/fit_option_checks.hpp"

#include <cmath>
#include <string_view>

#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

void require_finite_flag(std::string_view flag, double value) {
  require(std::isfinite(value), "{} {}: must be a finite number", flag, value);
}

void require_at_least(std::string_view flag, double value, double low) {
  require_finite_flag(flag, value);
  require(value >= low, "{} {}: must be at least {}", flag, value, low);
}

void require_within(std::string_view flag, double value, double low, double high) {
  require_finite_flag(flag, value);
  require(value >= low && value <= high, "{} {}: must be in [{}, {}]", flag, value, low, high);
}

}  // namespace

void check_fit_options(const FitOptions& o) {
  require_within("--activation-decay", o.activation_decay, 0.0, 4.0);
  require(o.synthetic_m <= kMaxSyntheticSide && o.synthetic_n <= kMaxSyntheticSide,
          "--synthetic-m {} / --synthetic-n {}: at most {} each", o.synthetic_m, o.synthetic_n, kMaxSyntheticSide);
  require(o.micro_batches >= 1 && o.micro_batches <= 1024, "--micro-batches {}: must be in [1, 1024]", o.micro_batches);
  if (o.rank == 0) {
    require_finite_flag("--bpw", o.bpw);
    require(o.bpw > 0, "--bpw {}: must be positive", o.bpw);
  }
  require(o.paths >= 1 && o.paths <= 16, "--paths {}: must be in [1, 16]", o.paths);
  require_at_least("--sign-lr", o.sign_lr, 0.0);
  require_at_least("--scale-lr", o.scale_lr, 0.0);
  require_finite_flag("--sign-beta1", o.sign_beta1);
  require(o.sign_beta1 >= 0 && o.sign_beta1 < 1, "--sign-beta1 {}: must be in [0, 1)", o.sign_beta1);
  require_finite_flag("--sign-beta2", o.sign_beta2);
  require(o.sign_beta2 >= 0 && o.sign_beta2 < 1, "--sign-beta2 {}: must be in [0, 1)", o.sign_beta2);
  require_at_least("--sign-eps", o.sign_eps, 0.0);
  require_finite_flag("--sign-clamp", o.sign_clamp);
  require(o.sign_clamp > 0, "--sign-clamp {}: must be positive", o.sign_clamp);
  require_at_least("--sign-hyst", o.sign_hyst, 0.0);
  require_at_least("--tau", o.sign_tau, 0.0);
  require(o.latent_init == "magnitude" || o.latent_init == "uniform",
          "--latent-init {}: must be magnitude or uniform", o.latent_init);
  require_at_least("--latent-rms", o.latent_rms, 0.0);
  require_within("--flip-budget", o.flip_budget, 0.0, 1.0);
  require_at_least("--scale-rel-floor", o.scale_rel_floor, 0.0);
  int exponent = 0;
  require(std::isfinite(o.gscale) && o.gscale > 0 && std::frexp(o.gscale, &exponent) == 0.5f,
          "--gscale {}: must be a power of two", o.gscale);
  require(o.gscale >= kMinGscale && o.gscale <= kMaxGscale, "--gscale {}: must be in [{}, {}] (2^0 to 2^24)", o.gscale,
          kMinGscale, kMaxGscale);
  require(o.refit_sweeps <= 100, "--refit-sweeps {}: must be in [0, 100]", o.refit_sweeps);
}

}  // namespace vkblr::fit
