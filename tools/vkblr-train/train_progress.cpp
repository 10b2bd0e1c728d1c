#include "vkblr-train/train_progress.hpp"

#include <cmath>

#include "vkblr/error.hpp"
#include "vkblr/io/json_input.hpp"

namespace vkblr::train {
namespace {

double finite(const io::JsonField& f) {
  const double v = f.number();
  require(std::isfinite(v), "{} is not a finite number", f.label());
  return v;
}

}  // namespace

HeldOut held_out_figures(const model::HeldOutResult& r, std::uint64_t text_bytes) {
  HeldOut h;
  h.tokens_scored = r.tokens_scored;
  h.windows = r.windows;
  h.bytes = text_bytes;
  h.loss_nats = r.loss_nats;
  h.perplexity = r.perplexity;
  h.bits_per_token = r.bits_per_token;
  h.bits_per_byte = r.loss_nats / (std::log(2.0) * static_cast<double>(text_bytes));
  return h;
}

nlohmann::json to_json(const HeldOut& h) {
  return {{"tokens_scored", h.tokens_scored}, {"windows", h.windows},           {"bytes", h.bytes},
          {"loss_nats", h.loss_nats},         {"perplexity", h.perplexity},     {"bits_per_token", h.bits_per_token},
          {"bits_per_byte", h.bits_per_byte}};
}

HeldOut held_out_from_json(const nlohmann::json& j, const std::string& where) {
  const io::JsonField f(j, where);
  HeldOut h;
  h.tokens_scored = f["tokens_scored"].u64();
  h.windows = f["windows"].u64();
  h.bytes = f["bytes"].u64();
  h.loss_nats = finite(f["loss_nats"]);
  h.perplexity = finite(f["perplexity"]);
  h.bits_per_token = finite(f["bits_per_token"]);
  h.bits_per_byte = finite(f["bits_per_byte"]);
  return h;
}

nlohmann::json to_json(const TrainProgress& p) {
  nlohmann::json curve = nlohmann::json::array();
  for (const CurvePoint& c : p.curve) {
    curve.push_back({{"step", c.step}, {"tokens", c.tokens}, {"train_s", c.train_s}, {"held_out", to_json(c.held_out)}});
  }
  return {{"next_step", p.next_step}, {"applied", p.applied},          {"skipped", p.skipped},
          {"gscale", p.gscale},       {"gscale_clean", p.gscale_clean},
          {"train_s", p.train_s},     {"teacher", to_json(p.teacher)}, {"init", to_json(p.init)},
          {"curve", curve},           {"losses", p.losses}};
}

TrainProgress progress_from_json(const nlohmann::json& j, const std::string& where) {
  const io::JsonField f(j, where);
  TrainProgress p;
  p.next_step = f["next_step"].u32();
  p.applied = f["applied"].u32();
  p.skipped = f["skipped"].u32();
  require(std::uint64_t{p.applied} + p.skipped == p.next_step, "{}: {} applied + {} skipped steps, but next_step is {}",
          where, p.applied, p.skipped, p.next_step);
  if (f.contains("gscale")) {
    const double g = finite(f["gscale"]);
    require(g >= 0 && g <= 3.4e38, "{}: 'gscale' = {} is not a loss scale", where, g);
    p.gscale = static_cast<float>(g);
    p.gscale_clean = f["gscale_clean"].u32();
  }
  p.train_s = finite(f["train_s"]);
  p.teacher = held_out_from_json(f["teacher"].value(), where + ": 'teacher'");
  p.init = held_out_from_json(f["init"].value(), where + ": 'init'");
  const io::JsonField curve = f["curve"];
  std::uint32_t last = 0;
  for (std::size_t i = 0; i < curve.size(); ++i) {
    CurvePoint c;
    c.step = curve[i]["step"].u32();
    require(c.step > last && c.step <= p.next_step,
            "{}: curve point at step {} (after step {}, next_step {}): steps must increase within (0, next_step]",
            where, c.step, last, p.next_step);
    c.tokens = curve[i]["tokens"].u64();
    c.train_s = finite(curve[i]["train_s"]);
    c.held_out = held_out_from_json(curve[i]["held_out"].value(), curve[i].label());
    p.curve.push_back(c);
    last = c.step;
  }
  const io::JsonField losses = f["losses"];
  require(losses.size() == p.next_step, "{}: {} losses for {} steps", where, losses.size(), p.next_step);
  for (std::size_t i = 0; i < losses.size(); ++i) p.losses.push_back(losses[i].number());
  return p;
}

}  // namespace vkblr::train
