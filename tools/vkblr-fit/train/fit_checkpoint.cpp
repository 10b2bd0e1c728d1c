#include "vkblr-fit/train/fit_checkpoint.hpp"

#include <bit>
#include <cmath>
#include <format>
#include <set>
#include <string_view>

#include "vkblr/io/checkpoint.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"
#include "vkblr/half.hpp"

namespace vkblr::fit {
namespace {

using nlohmann::json;

std::string bits_name(const char* prefix, std::size_t path, const char* field) {
  return std::format("{}path{}.{}", prefix, path, field);
}

// A finite number >= 0 (an error or a time).
double measure(const JsonField& field) {
  const double v = field.number();
  require(std::isfinite(v) && v >= 0, "{} is {}, want a finite number >= 0", field.label(), json_excerpt(field.value()));
  return v;
}

// An array of exactly `size` elements.
JsonField array_of(const JsonField& field, std::size_t size) {
  require(field.value().is_array() && field.size() == size, "{} is {}, want an array of {}", field.label(),
          json_excerpt(field.value()), size);
  return field;
}

// How a trainer state buffer's words are read (BlrTrainer::state() names:
// "scales.adam_m1", "path0.u.w", ...): floating point, or integer data
// (bitmaps, counters) that any bits are valid for.
struct StateKind {
  bool floating = false;
  bool bf16 = false;           // two bf16 values per word
  bool second_moment = false;  // must not be negative
};

StateKind state_kind(std::string_view name, bool bf16_state) {
  const std::string_view field = name.substr(name.rfind('.') + 1);
  if (field == "adam_m1" || field == "kept") return {true, false, false};
  if (field == "adam_m2" || field == "row_v" || field == "col_v") return {true, false, true};
  if (field == "w" || field == "m") return {true, bf16_state, false};
  if (field == "v") return {true, bf16_state, true};
  return {};
}

// Throws unless every value of `words` (read as `kind` says) is finite, and
// not negative for a second moment.
void check_floats(const std::string& path, const std::string& name, const std::vector<std::uint32_t>& words,
                  StateKind kind) {
  if (!kind.floating) return;
  const std::size_t per_word = kind.bf16 ? 2 : 1;
  for (std::size_t i = 0; i < words.size() * per_word; ++i) {
    const std::uint32_t w = words[i / per_word];
    const float v =
        kind.bf16 ? bf16_to_f32(static_cast<std::uint16_t>(i % 2 ? w >> 16 : w & 0xffffu)) : std::bit_cast<float>(w);
    require(std::isfinite(v), "checkpoint {}: {}[{}] is {}: every value must be finite", path, name, i, v);
    require(!kind.second_moment || v >= 0, "checkpoint {}: {}[{}] = {} is a negative second moment", path, name, i, v);
  }
}

void check_scales(const std::string& path, const std::string& name, const std::vector<float>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    require(std::isfinite(values[i]), "checkpoint {}: {}[{}] is {}: every scale must be finite", path, name, i,
            values[i]);
  }
}

FitProgress read_progress(const std::string& path, const json& metadata, const FitOptions& o,
                          std::uint32_t* applied, std::uint32_t* skipped) {
  const JsonField md(metadata, path + ": checkpoint metadata");
  FitProgress p;
  const std::uint32_t next = md["next_step"].u32();
  require(next >= 1 && next < o.steps, "checkpoint {}: next_step {} is outside [1, {}) (--steps {})", path, next,
          o.steps, o.steps);
  p.next_step = next;
  const std::uint64_t a = md["applied"].u32(), s = md["skipped"].u32();
  require(a + s == next, "checkpoint {}: {} applied + {} skipped steps, but next_step is {}", path, a, s, next);
  *applied = static_cast<std::uint32_t>(a);
  *skipped = static_cast<std::uint32_t>(s);
  std::uint64_t last = 0;
  const JsonField curve = md["curve"];
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const JsonField point = curve[i];
    const std::uint64_t step = point[0].u32();
    require(step > last && step <= next,
            "checkpoint {}: curve point at step {} (after step {}, next_step {}): steps must increase within "
            "(0, next_step]",
            path, step, last, next);
    p.curve.push_back({step, measure(point[1])});
    last = step;
  }
  const JsonField init = array_of(md["init"], 3);
  p.init = {measure(init[0]), measure(init[1]), measure(init[2])};
  p.train_s = measure(md["train_s"]);
  const JsonField best = md["best"];
  const std::optional<LayerStage> stage = parse_layer_stage(best["stage"].string());
  require(stage.has_value(), "{} is {}, want \"init\", \"refit\" or \"training\"", best["stage"].label(),
          json_excerpt(best["stage"].value()));
  p.best.stage = *stage;
  const std::uint32_t best_step = best["step"].u32();
  require(*stage == LayerStage::training ? best_step >= 1 && best_step <= next : best_step == 0,
          "checkpoint {}: the best layer's step {} does not fit its origin '{}' (next_step {})", path, best_step,
          layer_stage_name(*stage), next);
  p.best.step = best_step;
  p.best.held_out_error = measure(best["held_out_error"]);
  return p;
}

}  // namespace

std::string key_differences(const json& recorded, const json& wanted) {
  std::set<std::string> names;
  for (const auto& [name, value] : wanted.items()) names.insert(name);
  for (const auto& [name, value] : recorded.items()) names.insert(name);
  std::string out;
  std::size_t count = 0;
  for (const std::string& name : names) {
    const json none = "(none)";
    const json& a = recorded.contains(name) ? recorded.at(name) : none;
    const json& b = wanted.contains(name) ? wanted.at(name) : none;
    if (a == b) continue;
    if (++count <= 12) {
      out += std::format("{}{} {} (this run: {})", out.empty() ? "" : "; ", excerpt(name, 60), json_excerpt(a), json_excerpt(b));
    }
  }
  if (count > 12) out += std::format("; and {} more", count - 12);
  return out;
}

nlohmann::json resume_key(const FitOptions& o, const LayerShape& shape, const InputChecksums& inputs) {
  return {{"m", shape.m},
          {"n", shape.n},
          {"rank", shape.rank},
          {"paths", shape.paths},
          {"scale_dtype", std::string(scale_dtype_name(o.scale_dtype))},
          {"batch", o.batch},
          {"tokens", o.tokens},
          {"held_out", o.held_out},
          {"steps", o.steps},
          {"warmup", o.warmup.value_or(0)},
          {"eval_every", o.eval_every},
          {"seed", o.seed},
          {"init", init_method_name(o.init)},
          {"refit_sweeps", o.refit_sweeps},
          {"sign_opt", to_string(o.sign_opt)},
          {"sign_lr", o.sign_lr},
          {"sign_beta1", o.sign_beta1},
          {"sign_beta2", o.sign_beta2},
          {"sign_eps", o.sign_eps},
          {"sign_clamp", o.sign_clamp},
          {"sign_hyst", o.sign_hyst},
          {"tau", o.sign_tau},
          {"latent_init", o.latent_init},
          {"latent_rms", o.latent_rms},
          {"flip_budget", o.flip_budget},
          {"bf16_state", o.bf16_state},
          {"scale_lr", o.scale_lr},
          {"scale_rel_floor", o.scale_rel_floor},
          {"gscale", o.gscale},
          {"activation_decay", o.activations_path.empty() ? json(o.activation_decay) : json(nullptr)},
          {"weight", o.weight_path},
          {"tensor", o.tensor},
          {"activations", o.activations_path},
          {"activations_tensor", o.activations_tensor},
          {"weight_xxh3", checksum_hex(inputs.weight)},
          {"activations_xxh3", checksum_hex(inputs.activations)}};
}

void write_fit_checkpoint(const std::string& path, const nlohmann::json& key, BlrLayer& layer, BlrTrainer& trainer,
                          const FitProgress& p) {
  Checkpoint ck;
  json curve = json::array();
  for (const CurvePoint& c : p.curve) curve.push_back({c.step, c.held_out_error});
  ck.metadata = {
      {"key", key},
      {"next_step", p.next_step},
      {"applied", trainer.steps()},
      {"skipped", trainer.skipped()},
      {"curve", curve},
      {"init", {p.init.weight, p.init.output, p.init.activation_weighted}},
      {"train_s", p.train_s},
      {"best",
       {{"step", p.best.step}, {"stage", layer_stage_name(p.best.stage)}, {"held_out_error", p.best.held_out_error}}}};
  for (std::size_t i = 0; i < layer.paths.size(); ++i) {
    ck.u32[bits_name("", i, "bits_u")] = layer.paths[i].bits_u.download<std::uint32_t>();
    ck.u32[bits_name("", i, "bits_v")] = layer.paths[i].bits_v.download<std::uint32_t>();
  }
  ck.u32["layer.scales"] = layer.scales.download<std::uint32_t>();
  for (auto& [name, buffer] : trainer.state()) ck.u32["state." + name] = buffer->download<std::uint32_t>();
  for (std::size_t i = 0; i < p.best.paths.size(); ++i) {
    const BlrPathInit& b = p.best.paths[i];
    ck.u32[bits_name("best.", i, "bits_u")] = b.bits_u;
    ck.u32[bits_name("best.", i, "bits_v")] = b.bits_v;
    ck.f32[bits_name("best.", i, "h")] = b.h;
    ck.f32[bits_name("best.", i, "l")] = b.l;
    ck.f32[bits_name("best.", i, "g")] = b.g;
  }
  write_checkpoint(path, ck);
}

FitProgress restore_fit_checkpoint(const std::string& path, const nlohmann::json& key, const FitOptions& o,
                                   const LayerShape& shape, BlrLayer& layer, BlrTrainer& trainer) {
  const Checkpoint ck = read_checkpoint(path);
  const JsonField key_field = JsonField(ck.metadata, path + ": checkpoint metadata")["key"];
  key_field.require_object();
  const json& recorded = key_field.value();
  require(recorded == key, "checkpoint {} was made by another configuration or other inputs: {}", path,
          key_differences(recorded, key));
  std::uint32_t applied = 0, skipped = 0;
  FitProgress p = read_progress(path, ck.metadata, o, &applied, &skipped);

  // every array present, with its size, and no other; values checked
  // before anything is uploaded
  std::set<std::string> expected;
  std::vector<std::pair<const std::vector<std::uint32_t>*, Buffer*>> uploads;
  auto take = [&](const std::string& name, Buffer& b, StateKind kind) {
    expected.insert(name);
    const auto it = ck.u32.find(name);
    require(it != ck.u32.end(), "checkpoint {} lacks the array {}", path, name);
    require(it->second.size() * 4 == b.size(), "checkpoint {}: {} holds {} words, the run has {}", path, name,
            it->second.size(), b.size() / 4);
    check_floats(path, name, it->second, kind);
    uploads.emplace_back(&it->second, &b);
  };
  for (std::size_t i = 0; i < layer.paths.size(); ++i) {
    take(bits_name("", i, "bits_u"), layer.paths[i].bits_u, {});
    take(bits_name("", i, "bits_v"), layer.paths[i].bits_v, {});
  }
  take("layer.scales", layer.scales, {true, false, false});
  for (auto& [name, buffer] : trainer.state()) take("state." + name, *buffer, state_kind(name, o.bf16_state));
  for (std::size_t i = 0; i < shape.paths; ++i) {
    BlrPathInit b;
    auto u32 = [&](const char* field, std::vector<std::uint32_t>& out) {
      const std::string name = bits_name("best.", i, field);
      expected.insert(name);
      const auto it = ck.u32.find(name);
      require(it != ck.u32.end(), "checkpoint {} lacks the array {}", path, name);
      out = it->second;
    };
    auto f32 = [&](const char* field, std::vector<float>& out) {
      const std::string name = bits_name("best.", i, field);
      expected.insert(name);
      const auto it = ck.f32.find(name);
      require(it != ck.f32.end(), "checkpoint {} lacks the array {}", path, name);
      check_scales(path, name, it->second);
      out = it->second;
    };
    u32("bits_u", b.bits_u);
    u32("bits_v", b.bits_v);
    f32("h", b.h);
    f32("l", b.l);
    f32("g", b.g);
    p.best.paths.push_back(std::move(b));
  }
  check_path_sizes(shape, p.best.paths, "checkpoint " + path + ": the best layer");
  const auto refuse_unexpected = [&](const auto& arrays) {
    for (const auto& [name, values] : arrays) {
      require(expected.contains(name), "checkpoint {}: unexpected array '{}'", path, name);
    }
  };
  refuse_unexpected(ck.u32);
  refuse_unexpected(ck.f32);
  refuse_unexpected(ck.u16);

  for (const auto& [values, buffer] : uploads) buffer->upload(*values);
  trainer.set_steps(applied, skipped);
  return p;
}

}  // namespace vkblr::fit
