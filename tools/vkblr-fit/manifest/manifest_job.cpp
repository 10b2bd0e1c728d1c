#include "vkblr-fit/manifest/manifest_job.hpp"

#include <filesystem>
#include <format>

#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/model_allocation.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

namespace fs = std::filesystem;

// Refuses bad layers unless they are to be skipped: all of them in one
// message.
void check_bad_layers(const Manifest& manifest, const std::vector<PlannedLayer>& layers, bool skip) {
  std::string list;
  std::size_t count = 0, fittable = 0;
  for (const PlannedLayer& l : layers) {
    if (l.bad.empty()) {
      ++fittable;
      continue;
    }
    if (++count <= 20) list += std::format("\n  '{}' ({}, {}): {}", excerpt(l.name), l.entry, l.weight_source, l.bad);
  }
  if (count > 20) list += std::format("\n  ... and {} more", count - 20);
  require(skip || count == 0, "manifest {}: {} bad layer(s), which vkblr-fit cannot fit (--on-bad-layer skip skips "
          "them):{}", manifest.path, count, list);
  require(fittable > 0, "manifest {}: no layer to fit: every layer is bad:{}", manifest.path, list);
}

}  // namespace

ManifestJob plan_manifest_job(const std::string& manifest_path, const std::string& out, bool skip_bad_layers,
                              std::optional<double> model_bpw, const Caps& caps) {
  ManifestJob job;
  job.manifest = read_manifest(manifest_path);
  if (model_bpw) size_by_model_bpw(job.manifest, *model_bpw);
  job.layers = plan_layers(job.manifest, caps);
  check_bad_layers(job.manifest, job.layers, skip_bad_layers);
  if (model_bpw) job.budget = check_model_budget(job.layers, *model_bpw);
  FitOptions out_options;
  out_options.out = out;
  job.paths = fit_output_paths(out_options);
  job.work_dir = out + ".layers";
  return job;
}

void prepare_manifest_outputs(const ManifestJob& job, const std::string& out) {
  const FitOutputPaths& paths = job.paths;
  const std::string outputs[] = {paths.safetensors, paths.json, paths.svg, job.work_dir};
  for (const std::string& output : outputs) {
    require(!same_file(output, job.manifest.path), "--out {}: the output {} is the manifest {}: choose another --out",
            out, output, job.manifest.path);
    for (const PlannedLayer& l : job.layers) {
      for (const std::string* input : {&l.options.weight_path, &l.options.activations_path}) {
        require(!same_file(output, *input), "--out {}: the output {} is an input of layer '{}', {}: choose another "
                "--out", out, output, excerpt(l.name), *input);
      }
    }
  }
  for (const std::string& output : {paths.safetensors, paths.json, paths.svg}) check_creatable(output);
  std::error_code ec;
  if (!fs::is_directory(job.work_dir, ec)) {
    require(!fs::exists(job.work_dir, ec), "--out {}: {} is in the way of the work directory: it is not a directory",
            out, job.work_dir);
    check_creatable(job.work_dir);
    fs::create_directory(job.work_dir);
  }
  for (const std::string& output : {paths.safetensors, paths.json, paths.svg}) remove_stale_temporaries(output);
}

}  // namespace vkblr::fit
