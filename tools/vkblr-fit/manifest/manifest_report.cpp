#include "vkblr-fit/manifest/manifest_report.hpp"

#include "vkblr/io/bpw.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

nlohmann::json text_or_null(const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); }

ErrorSummary errors_from_json(const JsonField& e) {
  return {e["weight"].number(), e["output"].number(), e["activation_weighted"].number()};
}

nlohmann::json to_json(const LayerAllocation& a, const LayerRow& row) {
  nlohmann::json curve = nlohmann::json::array();
  for (std::size_t k = 0; k < a.curve.size(); ++k) {
    const std::uint32_t rank = static_cast<std::uint32_t>(32 * (k + 1));
    curve.push_back({{"rank", rank},
                     {"bpw", bits_per_weight({row.shape.m, row.shape.n, rank, row.shape.paths}, row.scale_dtype).total},
                     {"error", json_number(a.curve[k])}});
  }
  return {{"by", a.by_manifest ? "manifest" : "budget"},
          {"rank", row.shape.rank},
          {"curve", curve},
          {"curve_mpi_rank", a.curve_mpi_rank < 0 ? nlohmann::json(nullptr) : nlohmann::json(a.curve_mpi_rank)}};
}

nlohmann::json to_json(const ModelAllocationSummary& s) {
  const auto per_weight = [&](std::uint64_t bits) {
    return static_cast<double>(bits) / static_cast<double>(s.budget.weights);
  };
  return {{"model_bpw", s.budget.model_bpw},
          {"bpw", s.allocation.bpw},
          {"bits", s.allocation.bits},
          {"budget_bits", s.budget.budget_bits},
          {"weights", s.budget.weights},
          {"least_bpw", per_weight(s.budget.least_bits)},
          {"most_bpw", per_weight(s.budget.most_bits)},
          {"layers_by_budget", s.by_budget},
          {"layers_by_manifest", s.by_manifest},
          {"steps", s.allocation.steps},
          {"curve_rounds", s.curve_rounds},
          {"method", kAllocationMethod}};
}

}  // namespace

nlohmann::json to_json(const LayerRow& row) {
  nlohmann::json j = {{"name", row.name},
                      {"entry", row.entry},
                      {"weight", row.weight_source},
                      {"activations", row.activation_source},
                      {"stored_shape", row.stored_shape},
                      {"skipped", text_or_null(row.skipped)}};
  if (!row.skipped.empty()) return j;
  const BitsPerWeight b = bits_per_weight(row.shape, row.scale_dtype);
  j["m"] = row.shape.m;
  j["n"] = row.shape.n;
  j["rank"] = row.shape.rank;
  j["paths"] = row.shape.paths;
  j["scale_dtype"] = std::string(scale_dtype_name(row.scale_dtype));
  j["bpw"] = b.total;
  j["bits"] = b.bits();
  j["errors"] = {{"init", to_json(row.init)}, {"trained", to_json(row.trained)}};
  j["stages"] = row.stages;
  j["wall_s"] = json_number(row.wall_s);
  j["resumed"] = row.resumed;
  j["result"] = row.result;
  j["mpi_rank"] = row.mpi_rank < 0 ? nlohmann::json(nullptr) : nlohmann::json(row.mpi_rank);
  if (row.allocation) j["allocation"] = to_json(*row.allocation, row);
  return j;
}

LayerRow layer_row_from_json(const JsonField& j) {
  LayerRow row;
  row.name = j["name"].string();
  row.entry = j["entry"].string();
  row.weight_source = j["weight"].string();
  row.activation_source = j["activations"].string();
  row.stored_shape = j["stored_shape"].string();
  require(j["skipped"].value().is_null(), "{}: 'skipped' is not null: a record is of a fitted layer", j.label());
  row.shape = {j["m"].u32(), j["n"].u32(), j["rank"].u32(), j["paths"].u32()};
  check_layer_shape(row.shape, j.label());
  const std::string dtype = j["scale_dtype"].string();
  require(dtype == "F16" || dtype == "F32", "{}: 'scale_dtype' is '{}', want F16 or F32", j.label(), dtype);
  row.scale_dtype = dtype == "F16" ? ScaleDtype::f16 : ScaleDtype::f32;
  row.init = errors_from_json(j["errors"]["init"]);
  row.trained = errors_from_json(j["errors"]["trained"]);
  const JsonField stages = j["stages"];
  stages.require_object();
  for (const auto& [stage, times] : stages.value().items()) {
    stages[stage]["wall_s"].number();
    stages[stage]["device_s"].number();
  }
  row.stages = stages.value();
  row.wall_s = j["wall_s"].number();
  row.result = j["result"].string();
  return row;
}

ManifestTotals manifest_totals(std::span<const LayerRow> rows) {
  ManifestTotals t;
  for (const LayerRow& row : rows) {
    ++t.layers;
    if (!row.skipped.empty()) {
      ++t.skipped;
      continue;
    }
    ++t.fitted;
    if (row.resumed) ++t.resumed;
    const BitsPerWeight b = bits_per_weight(row.shape, row.scale_dtype);
    t.weights += b.weights;
    t.bits += b.bits();
    t.fit_wall_s += row.wall_s;
    t.weighted_init_error += static_cast<double>(b.weights) * row.init.output;
    t.weighted_trained_error += static_cast<double>(b.weights) * row.trained.output;
  }
  if (t.weights == 0) return t;
  const double weights = static_cast<double>(t.weights);
  t.bpw = static_cast<double>(t.bits) / weights;
  t.weighted_init_error /= weights;
  t.weighted_trained_error /= weights;
  return t;
}

namespace {

// The report but for --model-bpw's fields.
nlohmann::json report_json(const ManifestReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const LayerRow& row : report.layers) rows.push_back(to_json(row));
  const ManifestTotals t = manifest_totals(report.layers);
  return {{"tool_version", report.tool_version},
          {"command_line", report.command_line},
          {"device", report.device},
          {"manifest", report.manifest},
          {"manifest_xxh3", checksum_hex(report.manifest_checksum)},
          {"complete", report.complete},
          {"layers", rows},
          {"totals",
           {{"layers", t.layers},
            {"fitted", t.fitted},
            {"resumed", t.resumed},
            {"skipped", t.skipped},
            {"weights", t.weights},
            {"bits", t.bits},
            {"bpw", t.bpw},
            {"weighted_output_error",
             {{"init", json_number(t.weighted_init_error)}, {"trained", json_number(t.weighted_trained_error)}}},
            {"wall_s", json_number(report.wall_s)},
            {"fit_wall_s", json_number(t.fit_wall_s)},
            {"mpi_ranks", report.mpi_ranks}}}};
}

}  // namespace

nlohmann::json to_json(const ManifestReport& report) {
  nlohmann::json j = report_json(report);
  if (report.allocation) {
    j["totals"]["allocation"] = to_json(*report.allocation);
    j["stages"] = report.stages;
  }
  return j;
}

}  // namespace vkblr::fit
