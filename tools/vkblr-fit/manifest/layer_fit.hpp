// layer_fit.hpp — one layer of a manifest run (run_manifest.hpp), on the
// process that holds it: taken from the work directory when --resume finds
// its record there, else fitted exactly as the single-layer run of its
// settings (run_fit on one process: the same bits), its result and record
// written into the work directory as soon as it is done.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "vkblr-fit/manifest/layer_plan.hpp"
#include "vkblr-fit/manifest/manifest_report.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct LayerFitSettings {
  std::string work_dir;  // PREFIX.layers
  bool resume = false;   // take the layer from the work directory when its record matches
  bool quiet = false;    // run_fit's own progress off
  std::vector<std::string> command_line;
  // prints a progress line ("LABEL: fitting it again: ...")
  std::function<void(const std::string&)> say;
};

// A fittable layer (l.bad empty); `label` names it in progress lines. The
// row is the fit's (resumed: false) or the record's (resumed: true).
// Throws vkblr::Error for any error of the fit or of writing its files
// (the caller names the layer).
LayerRow fit_manifest_layer(Context& ctx, const PlannedLayer& l, const LayerFitSettings& settings,
                            const std::string& label);

// A row of what the plan knows of a layer (a skipped layer's whole row).
LayerRow planned_row(const PlannedLayer& l);

}  // namespace vkblr::fit
