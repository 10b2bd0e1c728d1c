#include "vkblr-fit/manifest/manifest_outputs.hpp"

#include <format>

#include "vkblr-fit/blr_model.hpp"
#include "vkblr-fit/excerpt.hpp"
#include "vkblr-fit/manifest/summary_svg.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {

std::string layer_label(const ManifestJob& job, std::size_t index) {
  return std::format("layer {}/{} '{}'", index + 1, job.layers.size(), excerpt(job.layers[index].name));
}

std::string manifest_model_bytes(const ManifestJob& job, std::span<const LayerRow> rows) {
  require(rows.size() == job.layers.size(), "manifest_model_bytes: {} rows for {} layers", rows.size(),
          job.layers.size());
  BlrModel model;
  model.tool_version = std::string(vkblr::version());
  model.manifest_checksum = job.manifest.checksum;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PlannedLayer& l = job.layers[i];
    if (!rows[i].skipped.empty()) continue;
    try {
      BlrResult result = read_blr_result(rows[i].result);
      require(result.shape == l.shape, "{}: the layer is {}x{} of rank {}, not the {}x{} of rank {} planned",
              rows[i].result, result.shape.m, result.shape.n, result.shape.rank, l.shape.m, l.shape.n, l.shape.rank);
      model.layers.push_back({l.name, std::move(result)});
    } catch (const Error& e) {
      fail("{} ({}): {}", layer_label(job, i), l.entry, e.what());
    }
  }
  return serialize_blr_model(job.paths.safetensors, model);
}

void write_manifest_outputs(const ManifestJob& job, const std::string& model_bytes, const ManifestReport& report) {
  const ManifestTotals totals = manifest_totals(report.layers);
  write_fit_outputs(job.paths, model_bytes, json_file_text(to_json(report)),
                    manifest_summary_svg(report.layers, std::format("vkblr-fit {}: {} layers, {:.4f} bpw",
                                                                    job.manifest.path, totals.fitted, totals.bpw)));
}

}  // namespace vkblr::fit
