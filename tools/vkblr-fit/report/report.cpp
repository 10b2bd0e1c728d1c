#include "vkblr-fit/report/report.hpp"

#include <cmath>

#include "vkblr/file_io.hpp"

namespace vkblr::fit {
nlohmann::json json_number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json to_json(const ErrorSummary& e) {
  return {{"weight", json_number(e.weight)}, {"output", json_number(e.output)},
          {"activation_weighted", json_number(e.activation_weighted)}};
}

nlohmann::json to_json(const FitReport& report) {
  const BitsPerWeight& b = report.bpw;
  nlohmann::json curve = nlohmann::json::array();
  for (const CurvePoint& p : report.curve) curve.push_back({{"step", p.step}, {"held_out_error", json_number(p.held_out_error)}});
  return {
      {"tool_version", report.tool_version},
      {"command_line", report.command_line},
      {"device", report.device},
      {"weight_source", report.weight_source},
      {"activation_source", report.activation_source},
      {"layer",
       {{"m", b.shape.m}, {"n", b.shape.n}, {"rank", b.shape.rank}, {"paths", b.shape.paths},
        {"scale_dtype", std::string(scale_dtype_name(b.scale_dtype))}}},
      {"bpw",
       {{"sign", b.sign_bpw}, {"scales", b.scale_bpw}, {"metadata", b.metadata_bpw}, {"total", b.total},
        {"sign_bits", b.sign_bits}, {"scale_bits", b.scale_bits}, {"metadata_bits", b.metadata_bits},
        {"formula", b.formula()}}},
      {"errors",
       {{"init", to_json(report.init)},
        {"trained", to_json(report.trained)},
        {"output_improvement", json_number(report.init.output / report.trained.output)}}},
      {"training",
       {{"steps", report.steps}, {"tokens", report.tokens}, {"tokens_per_s", json_number(report.tokens_per_s)},
        {"wall_s", json_number(report.wall_s)}, {"flips", report.flips}, {"oscillations", report.oscillations},
        {"settings", report.settings}, {"parallel", report.parallel}}},
      {"saved",
       {{"step", report.saved_step}, {"stage", report.saved_stage},
        {"held_out_error", json_number(report.saved_held_out_error)}}},
      {"inputs",
       {{"weight_xxh3", checksum_hex(report.inputs.weight)},
        {"activations_xxh3", checksum_hex(report.inputs.activations)}}},
      {"stages", report.stages},
      {"curve", curve},
  };
}

std::string json_file_text(const nlohmann::json& value) { return value.dump(2) + "\n"; }

void write_json_file(const std::string& path, const nlohmann::json& value) {
  write_file_atomic(path, json_file_text(value));
}

}  // namespace vkblr::fit
