// layer_settings.hpp — the settings of one layer's fit in a manifest
// (manifest.hpp): the vkblr-fit flags that shape a fit, as JSON keys named
// like the flags without "--" and with "_" for "-" (--sign-lr: "sign_lr").
//
//   integers ≥ 1      rank, tokens, held_out, batch, steps, eval_every
//   integers          micro_batches (1 to 1024), paths (1 to 16), warmup,
//                     refit_sweeps (0 to 100), seed (below 2^64)
//   numbers           bpw, sign_lr, sign_beta1, sign_beta2, sign_eps,
//                     sign_clamp, sign_hyst, tau, latent_rms, flip_budget,
//                     scale_lr, scale_rel_floor, gscale
//   strings           scale_dtype (f16, f32), init (dual-svid, subspace,
//                     best), sign_opt (adam, fact, bop), latent_init
//                     (magnitude, uniform), x_memory (auto, device, host)
//   true or false     bf16_state
// A value is checked as the flag's (check_fit_options' ranges). "rank" and
// "bpw" choose the layer's size: setting one clears the other, so a layer's
// "rank" replaces the defaults' "bpw" and the other way round; one object
// may not hold both.
#pragma once

#include <string>
#include <string_view>

#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {

bool is_layer_setting(std::string_view key);

// Every key above, comma-separated (for messages).
std::string layer_setting_keys();

// Sets the option `key` (is_layer_setting) of `options` from `value`.
// Throws vkblr::Error naming value.label(): a value of the wrong JSON type,
// a count of 0, a string not among those above.
void apply_layer_setting(std::string_view key, const JsonField& value, FitOptions& options);

}  // namespace vkblr::fit
