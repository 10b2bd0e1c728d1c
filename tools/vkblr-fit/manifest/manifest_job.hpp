// manifest_job.hpp — the planning of a manifest run (run_manifest.hpp):
// the manifest read, its layers planned and checked, the paths of the
// outputs; then, by the one process that writes them, the outputs checked
// and the work directory made.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vkblr-fit/fit_outputs.hpp"
#include "vkblr-fit/manifest/layer_plan.hpp"
#include "vkblr-fit/manifest/manifest.hpp"
#include "vkblr-fit/manifest/rank_allocation.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct ManifestJob {
  Manifest manifest;
  std::vector<PlannedLayer> layers;  // in the manifest's order, bad ones included
  FitOutputPaths paths;              // PREFIX.safetensors, .json, .svg
  std::string work_dir;              // PREFIX.layers
  std::optional<ModelBudget> budget; // with --model-bpw (model_allocation.hpp)
};

// Reads and plans the manifest (plan_layers with `caps`) for the outputs
// of --out `out`. Throws vkblr::Error, before anything is written, for a
// bad manifest, a bad layer unless `skip_bad_layers` (every bad layer
// listed), no layer left to fit, a bad --out, a `model_bpw` the manifest
// cannot meet (model_allocation.hpp: the layers it sizes are planned at
// rank 32 until allocate_model_ranks sets their ranks).
ManifestJob plan_manifest_job(const std::string& manifest_path, const std::string& out, bool skip_bad_layers,
                              std::optional<double> model_bpw, const Caps& caps);

// Checks the outputs (and the work directory) as prepare_fit_outputs does
// one layer's: none of them is the manifest or an input of a layer, each
// can be created; makes the work directory when it is missing and removes
// the outputs' stale temporaries. Throws vkblr::Error naming --out `out`
// and the path.
void prepare_manifest_outputs(const ManifestJob& job, const std::string& out);

}  // namespace vkblr::fit
