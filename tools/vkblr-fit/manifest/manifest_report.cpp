#include "vkblr-fit/manifest/manifest_report.hpp"

#include "vkblr-fit/bpw.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

nlohmann::json text_or_null(const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); }

ErrorSummary errors_from_json(const JsonField& e) {
  return {e["weight"].number(), e["output"].number(), e["activation_weighted"].number()};
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
  j["bits"] = b.sign_bits + b.scale_bits + b.metadata_bits;
  j["errors"] = {{"init", to_json(row.init)}, {"trained", to_json(row.trained)}};
  j["stages"] = row.stages;
  j["wall_s"] = json_number(row.wall_s);
  j["resumed"] = row.resumed;
  j["result"] = row.result;
  j["mpi_rank"] = row.mpi_rank < 0 ? nlohmann::json(nullptr) : nlohmann::json(row.mpi_rank);
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
    t.bits += b.sign_bits + b.scale_bits + b.metadata_bits;
    t.fit_wall_s += row.wall_s;
  }
  t.bpw = t.weights == 0 ? 0.0 : static_cast<double>(t.bits) / static_cast<double>(t.weights);
  return t;
}

nlohmann::json to_json(const ManifestReport& report) {
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
            {"wall_s", json_number(report.wall_s)},
            {"fit_wall_s", json_number(t.fit_wall_s)},
            {"mpi_ranks", report.mpi_ranks}}}};
}

}  // namespace vkblr::fit
