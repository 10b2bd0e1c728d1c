// layer_plan.hpp — the layers of a manifest run, in order, with their
// inputs and settings, checked before any layer is fitted: an error that
// would stop the run at layer 150 stops it before layer 1.
//
// Each entry of the manifest gives its one layer, or one per tensor its
// pattern matches (in natural order), where the entry stands. A layer
// whose weight itself cannot be a blr layer is a bad layer: the caller
// skips or refuses it (vkblr-fit --on-bad-layer). Everything else that is
// wrong is the manifest's fault and refused here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkblr-fit/fit_options.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/manifest.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct PlannedLayer {
  std::string name;   // in the outputs
  std::string entry;  // the manifest entry that names it ("layers[2]")
  // the entry's settings and this layer's inputs (weight_path, tensor,
  // activations_path, activations_tensor); out, quiet and command_line
  // are the run's to set
  FitOptions options;
  std::string weight_source;  // "file:tensor" (or "file" for .npy)
  std::string stored_shape;   // W's shape as stored, "[4096, 1024]"
  // a fittable layer's shape, its rank from the settings' rank or bpw
  LayerShape shape;
  bool sized = false;  // its entry gives "rank" or "bpw" itself (ManifestEntry::sized)
  // why W cannot be a blr layer (empty when it can): not 2-D, a dtype
  // vkblr-fit does not read, m or n not a multiple of 16, or a rank or bpw
  // the shape does not allow
  std::string bad;
};

// The manifest's layers. Opens the headers of every file it names (not
// the data). Throws vkblr::Error naming the manifest, the entry and what is
// wrong: a file missing or not .safetensors or .npy (or a bad one), a
// tensor the file does not hold, a pattern that matches nothing or names
// tensors of a .npy file, a layer without a name (.npy weights need one),
// a name starting with "xxh3:", two layers of one name, activations that
// are not 2-D, whose column count is not W's n or with fewer tokens than
// the settings use, and settings that contradict each other (tokens not a
// multiple of batch, ...: resolve_fit_defaults with `caps`).
std::vector<PlannedLayer> plan_layers(const Manifest& manifest, const Caps& caps);

}  // namespace vkblr::fit
