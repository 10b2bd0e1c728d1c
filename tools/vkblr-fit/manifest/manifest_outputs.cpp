#include "vkblr-fit/manifest/manifest_outputs.hpp"

#include <format>

#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/report/report.hpp"
#include "vkblr-fit/manifest/summary_svg.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {

std::string layer_label(const ManifestJob& job, std::size_t index) {
  return std::format("layer {}/{} '{}'", index + 1, job.layers.size(), excerpt(job.layers[index].name));
}

FileToWrite manifest_model_file(const ManifestJob& job, std::span<const LayerRow> rows) {
  require(rows.size() == job.layers.size(), "manifest_model_file: {} rows for {} layers", rows.size(),
          job.layers.size());
  std::vector<std::size_t> fitted;  // indices into job.layers
  std::vector<std::string> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].skipped.empty()) continue;
    fitted.push_back(i);
    names.push_back(job.layers[i].name);
  }
  // (the job outlives the write: run_manifest writes before it returns)
  const auto load = [&job, rows, fitted](std::size_t k) {
    const std::size_t i = fitted[k];
    const PlannedLayer& l = job.layers[i];
    try {
      BlrResult result = read_blr_result(rows[i].result);
      require(result.shape == l.shape, "{}: the layer is {}x{} of rank {}, not the {}x{} of rank {} planned",
              rows[i].result, result.shape.m, result.shape.n, result.shape.rank, l.shape.m, l.shape.n, l.shape.rank);
      return result;
    } catch (const Error& e) {
      fail("{} ({}): {}", layer_label(job, i), l.entry, e.what());
    }
  };
  return stream_blr_model(job.paths.safetensors, names, load, std::string(vkblr::version()), job.manifest.checksum);
}

void write_manifest_outputs(const ManifestJob& job, const FileToWrite& model, const ManifestReport& report) {
  const ManifestTotals totals = manifest_totals(report.layers);
  const std::string report_text = json_file_text(to_json(report));
  const std::string chart = manifest_summary_svg(
      report.layers, std::format("vkblr-fit {}: {} layers, {:.4f} bpw", job.manifest.path, totals.fitted, totals.bpw));
  const FileToWrite files[] = {model, {job.paths.json, report_text}, {job.paths.svg, chart}};
  write_files_atomic(files);
}

}  // namespace vkblr::fit
