// run_manifest.hpp — a whole checkpoint in one run: every layer of a
// manifest (manifest.hpp) fitted in turn on one device, each exactly as a
// single-layer vkblr-fit run with the same flags fits it (run_fit, the
// same bits), and one output for all of them.
//
// Files, for --out PREFIX:
//   PREFIX.layers/           the work directory: each layer's run_fit
//                            outputs and its record (layer_record.hpp)
//   PREFIX.safetensors       every fitted layer under its name (blr_model.hpp)
//   PREFIX.json              the report (manifest_report.hpp)
//   PREFIX.svg               the summary chart (summary_svg.hpp)
// The last three are written as one set once every layer is done
// (fit_outputs.hpp's write_fit_outputs); each layer's files as soon as it
// is. With `resume`, a layer whose record in the work directory matches
// (layer_record.hpp: the same name, settings, inputs' checksums and result
// file) is taken from there, not fitted again; a run resumed after any
// number of layers ends with the same PREFIX.safetensors, byte for byte,
// as a run never interrupted.
//
// With model_bpw (vkblr-fit --model-bpw), the ranks come from one bit
// budget for the whole model (model_allocation.hpp), allocated before the
// first layer is fitted; a layer's allocated rank is part of its record's
// key, so a resumed layer of another rank is fitted again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vkblr-fit/manifest/manifest_report.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct ManifestOptions {
  std::string manifest;               // the manifest file
  std::string out = "vkblr-fit-out";  // PREFIX
  bool resume = false;                // take matching layers from PREFIX.layers/
  bool skip_bad_layers = false;       // skip the bad layers (layer_plan.hpp); false: refuse them
  bool quiet = false;                 // no progress on stderr
  std::optional<double> model_bpw;    // a bit budget for the whole model (model_allocation.hpp)
  std::vector<std::string> command_line;
  // Called after each layer is done (fitted or taken from the work
  // directory), with its row; returning false stops the run there, as if
  // it were killed: the finished layers stay in the work directory, the
  // three outputs are not written and the report says complete: false.
  std::function<bool(const LayerRow&)> after_layer;
};

// Runs the manifest. Throws vkblr::Error before any layer is fitted for a
// bad manifest, a bad layer without skip_bad_layers (every bad layer
// listed), no layer left to fit, a model_bpw out of its bounds, an
// output that is one of the inputs or cannot be created; and, naming the
// layer, for any error of its fit.
ManifestReport run_manifest(Context& ctx, const ManifestOptions& options);

}  // namespace vkblr::fit
