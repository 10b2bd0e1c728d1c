#include "vkblr-fit/manifest/layer_settings.hpp"

#include <array>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <utility>

#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
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

// The settings read as the same kind of value, by the option they set.
template <class T>
using Fields = std::initializer_list<std::pair<std::string_view, T FitOptions::*>>;
constexpr Fields<std::uint32_t> kCounts{{"rank", &FitOptions::rank},     {"tokens", &FitOptions::tokens},
                                        {"held_out", &FitOptions::held_out}, {"batch", &FitOptions::batch},
                                        {"steps", &FitOptions::steps},   {"eval_every", &FitOptions::eval_every}};
constexpr Fields<float> kFloats{{"sign_lr", &FitOptions::sign_lr},         {"sign_beta1", &FitOptions::sign_beta1},
                                {"sign_beta2", &FitOptions::sign_beta2},   {"sign_eps", &FitOptions::sign_eps},
                                {"sign_clamp", &FitOptions::sign_clamp},   {"sign_hyst", &FitOptions::sign_hyst},
                                {"tau", &FitOptions::sign_tau},            {"latent_rms", &FitOptions::latent_rms},
                                {"flip_budget", &FitOptions::flip_budget}, {"scale_lr", &FitOptions::scale_lr},
                                {"scale_rel_floor", &FitOptions::scale_rel_floor},
                                {"gscale", &FitOptions::gscale}};

// The settings of their own kind.
using Setter = void (*)(const JsonField&, FitOptions&);
constexpr auto kOthers = std::to_array<std::pair<std::string_view, Setter>>({
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
    {"micro_batches", [](const JsonField& v, FitOptions& o) { o.micro_batches = within(v, 1, 1024); }},
    {"seed", [](const JsonField& v, FitOptions& o) { o.seed = v.u64(); }},
    {"x_memory", [](const JsonField& v, FitOptions& o) { o.x_memory = one_of(v, {"auto", "device", "host"}); }},
    {"init",
     [](const JsonField& v, FitOptions& o) {
       o.init = init_method_from_string(one_of(v, {"dual-svid", "subspace", "best"}));
     }},
    {"refit_sweeps", [](const JsonField& v, FitOptions& o) { o.refit_sweeps = within(v, 0, 100); }},
    {"warmup", [](const JsonField& v, FitOptions& o) { o.warmup = v.u32(); }},
    {"sign_opt",
     [](const JsonField& v, FitOptions& o) { o.sign_opt = sign_opt_from_string(one_of(v, {"adam", "fact", "bop"})); }},
    {"latent_init", [](const JsonField& v, FitOptions& o) { o.latent_init = one_of(v, {"magnitude", "uniform"}); }},
    {"bf16_state", [](const JsonField& v, FitOptions& o) { o.bf16_state = boolean(v); }},
});

// What sets the option `key` from a value; empty when `key` is no setting.
std::function<void(const JsonField&, FitOptions&)> setter_of(std::string_view key) {
  for (const auto& [name, field] : kCounts) {
    if (name == key) return [field](const JsonField& v, FitOptions& o) { o.*field = count(v); };
  }
  for (const auto& [name, field] : kFloats) {
    if (name == key) return [field](const JsonField& v, FitOptions& o) { o.*field = single(v); };
  }
  for (const auto& [name, setter] : kOthers) {
    if (name == key) return setter;
  }
  return {};
}

}  // namespace

bool is_layer_setting(std::string_view key) { return static_cast<bool>(setter_of(key)); }

std::string layer_setting_keys() {
  std::string keys;
  const auto add = [&](std::string_view name) { keys += (keys.empty() ? "" : ", ") + std::string(name); };
  for (const auto& [name, field] : kCounts) add(name);
  for (const auto& [name, field] : kFloats) add(name);
  for (const auto& [name, setter] : kOthers) add(name);
  return keys;
}

void apply_layer_setting(std::string_view key, const JsonField& value, FitOptions& options) {
  const auto setter = setter_of(key);
  require(static_cast<bool>(setter), "{}: not a layer setting", value.label());
  setter(value, options);
}

}  // namespace vkblr::fit
