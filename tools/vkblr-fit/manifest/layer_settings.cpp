#include "vkblr-fit/manifest/layer_settings.hpp"

#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>

#include "vkblr-fit/excerpt.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

std::uint32_t count(const JsonField& v) {
  const std::uint32_t value = v.u32();
  require(value >= 1, "{} is 0: a count here is at least 1 (leave the key out for the default)", v.label());
  return value;
}

std::uint32_t within(const JsonField& v, std::uint32_t low, std::uint32_t high) {
  const std::uint32_t value = v.u32();
  require(value >= low && value <= high, "{} is {}: must be in [{}, {}]", v.label(), value, low, high);
  return value;
}

float single(const JsonField& v) {
  const double value = v.number();
  require(!(std::abs(value) > std::numeric_limits<float>::max()), "{} is {}: beyond a 32-bit float", v.label(),
          value);
  return static_cast<float>(value);
}

bool boolean(const JsonField& v) {
  require(v.value().is_boolean(), "{} is {} ({}), want true or false", v.label(), json_excerpt(v.value()),
          json_type_phrase(v.value()));
  return v.value().get<bool>();
}

// The value if it is one of `allowed`.
const std::string& one_of(const JsonField& v, std::initializer_list<std::string_view> allowed) {
  const std::string& value = v.string();
  std::string names;
  for (const std::string_view a : allowed) {
    if (value == a) return value;
    names += (names.empty() ? "" : ", ") + std::string(a);
  }
  fail("{} is '{}', want one of {}", v.label(), excerpt(value), names);
}

using Setter = void (*)(const JsonField&, FitOptions&);

constexpr auto kSettings = std::to_array<std::pair<std::string_view, Setter>>({
    {"rank", [](const JsonField& v, FitOptions& o) { o.rank = count(v); }},
    {"bpw",
     [](const JsonField& v, FitOptions& o) {
       o.bpw = v.number();
       o.rank = 0;
     }},
    {"paths", [](const JsonField& v, FitOptions& o) { o.paths = within(v, 1, 16); }},
    {"scale_dtype",
     [](const JsonField& v, FitOptions& o) {
       o.scale_dtype = one_of(v, {"f16", "f32"}) == "f16" ? ScaleDtype::f16 : ScaleDtype::f32;
     }},
    {"tokens", [](const JsonField& v, FitOptions& o) { o.tokens = count(v); }},
    {"held_out", [](const JsonField& v, FitOptions& o) { o.held_out = count(v); }},
    {"batch", [](const JsonField& v, FitOptions& o) { o.batch = count(v); }},
    {"micro_batches", [](const JsonField& v, FitOptions& o) { o.micro_batches = within(v, 1, 1024); }},
    {"seed", [](const JsonField& v, FitOptions& o) { o.seed = v.u64(); }},
    {"x_memory", [](const JsonField& v, FitOptions& o) { o.x_memory = one_of(v, {"auto", "device", "host"}); }},
    {"init",
     [](const JsonField& v, FitOptions& o) {
       o.init = init_method_from_string(one_of(v, {"dual-svid", "subspace", "best"}));
     }},
    {"refit_sweeps", [](const JsonField& v, FitOptions& o) { o.refit_sweeps = within(v, 0, 100); }},
    {"steps", [](const JsonField& v, FitOptions& o) { o.steps = count(v); }},
    {"warmup", [](const JsonField& v, FitOptions& o) { o.warmup = v.u32(); }},
    {"sign_opt",
     [](const JsonField& v, FitOptions& o) { o.sign_opt = sign_opt_from_string(one_of(v, {"adam", "fact", "bop"})); }},
    {"sign_lr", [](const JsonField& v, FitOptions& o) { o.sign_lr = single(v); }},
    {"sign_beta1", [](const JsonField& v, FitOptions& o) { o.sign_beta1 = single(v); }},
    {"sign_beta2", [](const JsonField& v, FitOptions& o) { o.sign_beta2 = single(v); }},
    {"sign_eps", [](const JsonField& v, FitOptions& o) { o.sign_eps = single(v); }},
    {"sign_clamp", [](const JsonField& v, FitOptions& o) { o.sign_clamp = single(v); }},
    {"sign_hyst", [](const JsonField& v, FitOptions& o) { o.sign_hyst = single(v); }},
    {"tau", [](const JsonField& v, FitOptions& o) { o.sign_tau = single(v); }},
    {"latent_init", [](const JsonField& v, FitOptions& o) { o.latent_init = one_of(v, {"magnitude", "uniform"}); }},
    {"latent_rms", [](const JsonField& v, FitOptions& o) { o.latent_rms = single(v); }},
    {"flip_budget", [](const JsonField& v, FitOptions& o) { o.flip_budget = single(v); }},
    {"bf16_state", [](const JsonField& v, FitOptions& o) { o.bf16_state = boolean(v); }},
    {"scale_lr", [](const JsonField& v, FitOptions& o) { o.scale_lr = single(v); }},
    {"scale_rel_floor", [](const JsonField& v, FitOptions& o) { o.scale_rel_floor = single(v); }},
    {"eval_every", [](const JsonField& v, FitOptions& o) { o.eval_every = count(v); }},
    {"gscale", [](const JsonField& v, FitOptions& o) { o.gscale = single(v); }},
});

Setter find_setter(std::string_view key) {
  for (const auto& [name, setter] : kSettings) {
    if (name == key) return setter;
  }
  return nullptr;
}

}  // namespace

bool is_layer_setting(std::string_view key) { return find_setter(key) != nullptr; }

std::string layer_setting_keys() {
  std::string keys;
  for (const auto& [name, setter] : kSettings) keys += (keys.empty() ? "" : ", ") + std::string(name);
  return keys;
}

void apply_layer_setting(std::string_view key, const JsonField& value, FitOptions& options) {
  const Setter setter = find_setter(key);
  require(setter != nullptr, "{}: not a layer setting", value.label());
  setter(value, options);
}

}  // namespace vkblr::fit
