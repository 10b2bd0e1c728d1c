#include "vkblr-fit/train/best_layer.hpp"

#include <cmath>
#include <format>

#include "vkblr/half.hpp"

namespace vkblr::fit {

std::string_view layer_stage_name(LayerStage stage) {
  switch (stage) {
    case LayerStage::init:
      return "init";
    case LayerStage::refit:
      return "refit";
    case LayerStage::training:
      return "training";
  }
  return "?";
}

std::optional<LayerStage> parse_layer_stage(std::string_view name) {
  for (const LayerStage s : {LayerStage::init, LayerStage::refit, LayerStage::training}) {
    if (layer_stage_name(s) == name) return s;
  }
  return std::nullopt;
}

bool BestLayer::offer(double error, std::uint32_t at_step, LayerStage at_stage,
                      const std::function<std::vector<BlrPathInit>()>& layer_paths) {
  if (!(error <= held_out_error)) return false;
  paths = layer_paths();
  held_out_error = error;
  step = at_step;
  stage = at_stage;
  return true;
}

std::string saved_layer_note(const BestLayer& best, std::span<const CurvePoint> curve) {
  if (curve.empty()) return {};
  const CurvePoint& last = curve.back();
  if (best.stage != LayerStage::training) {
    return std::format(
        "warning: training did not improve on the {0}'s held-out output error {1:.4e} (the last step's: {2:.4e}); "
        "the {0}'s layer is saved",
        layer_stage_name(best.stage), best.held_out_error, last.held_out_error);
  }
  if (best.step == last.step) return {};
  return std::format(
      "note: the layer of step {} is saved, the lowest held-out output error seen ({:.4e}; the last step's: {:.4e})",
      best.step, best.held_out_error, last.held_out_error);
}

std::vector<BlrPathInit> download_paths(const BlrLayer& layer) {
  std::vector<BlrPathInit> out;
  const auto scales = layer.scales.download<float>();
  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    BlrPathInit in;
    in.bits_u = layer.paths[p].bits_u.download<std::uint32_t>();
    in.bits_v = layer.paths[p].bits_v.download<std::uint32_t>();
    auto seg = [&](Scale which) {
      const ScaleSegment g = layer.segment(p, which);
      return std::vector<float>(scales.begin() + g.offset, scales.begin() + g.offset + g.length);
    };
    in.h = seg(Scale::h);
    in.l = seg(Scale::l);
    in.g = seg(Scale::g);
    out.push_back(std::move(in));
  }
  return out;
}

std::vector<BlrPathInit> as_stored(std::vector<BlrPathInit> paths, ScaleDtype dtype) {
  if (dtype == ScaleDtype::f32) return paths;
  for (auto& p : paths) {
    for (auto* v : {&p.h, &p.l, &p.g}) {
      for (float& x : *v) x = f16_to_f32(f32_to_f16(x));
    }
  }
  return paths;
}

double held_out_error(FitTrainer& trainer, std::size_t batches, double target_sq) {
  double sq = 0;
  for (std::size_t b = 0; b < batches; ++b) sq += trainer.eval(b);
  return std::sqrt(sq / target_sq);
}

double held_out_error_as_stored(FitTrainer& trainer, BlrLayer& layer, ScaleDtype dtype, std::size_t batches,
                                double target_sq) {
  if (dtype == ScaleDtype::f32) return held_out_error(trainer, batches, target_sq);
  const std::vector<float> trained = layer.scales.download<float>();
  std::vector<float> stored = trained;
  for (float& x : stored) x = f16_to_f32(f32_to_f16(x));  // the padding between segments stays 0
  layer.scales.upload(stored);
  const double error = held_out_error(trainer, batches, target_sq);
  layer.scales.upload(trained);
  return error;
}

}  // namespace vkblr::fit
