// manifest.hpp — a vkblr-fit manifest: the layers of a checkpoint to
// compress, each with its weight, its calibration activations and its
// settings (vkblr-fit --manifest FILE).
//
// A JSON object (at most 3 levels deep; a key twice in one object, or a
// key not listed here, is refused, naming it):
//   "defaults"  optional: settings of every layer (layer_settings.hpp)
//   "layers"    an array of at least one entry
// An entry is an object that names one layer, or with a pattern several:
//   "weight"              W's file, .safetensors or .npy (required)
//   "tensor"              W's tensor: one layer. May be left out for a file
//                         of one tensor (and must be, for .npy)
//   "tensors"             a pattern (name_pattern.hpp): a layer for every
//                         tensor of the weight file it matches, in natural
//                         order (name_pattern.hpp); not with "tensor"
//   "name"                the layer's name in the outputs, a template
//                         (name_pattern.hpp); default "{tensor}"; required
//                         for a .npy weight
//   "activations"         X's file, .safetensors or .npy, a template: one
//                         file for all layers, or one per layer
//                         ("acts/{module}.npy") (required)
//   "activations_tensor"  X's tensor in a .safetensors file, a template
//                         ("{module}.input"); may be left out for a file of
//                         one tensor
//   any setting           overrides "defaults" for this entry's layers
// With vkblr-fit --model-bpw (model_allocation.hpp) an entry's own "rank"
// or "bpw" sizes its layers, which keep that size; the budget sizes the
// others, and "defaults" may hold neither.
// Strings are not empty. A relative file path is relative to the
// manifest's directory. The "tensor" of an entry is one name: a '*' in it
// is refused with a hint to "tensors".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkblr-fit/fit_options.hpp"

namespace vkblr::fit {

struct ManifestEntry {
  std::string label;        // "layers[2]", for messages
  std::string weight_path;  // relative paths resolved (resolve_manifest_path)
  std::string tensor;       // one layer: W's tensor (empty: the file's only one)
  std::string pattern;      // several layers: the pattern over W's tensor names
  bool is_pattern = false;
  std::string name;                // template; empty: "{tensor}"
  std::string activations;         // template of X's path (resolved once expanded)
  std::string activations_tensor;  // template; empty: the file's only tensor
  FitOptions settings;             // FitOptions' defaults, then "defaults", then the entry's
  bool sized = false;              // the entry gives "rank" or "bpw" itself
};

struct Manifest {
  std::string path;
  std::string directory;  // where relative paths start
  std::uint64_t checksum = 0;  // XXH3-64 of the file's bytes
  bool defaults_sized = false;  // "defaults" gives "rank" or "bpw"
  std::vector<ManifestEntry> entries;
};

// Reads and checks the manifest `path` (at most 16 MiB). Throws
// vkblr::Error naming the file, the entry ("layers[2]") and the key: bad
// JSON, an unknown or missing key, a value of the wrong type or out of its
// setting's range, "tensor" with "tensors", an empty string. Files are not
// opened here (layer_plan.hpp does).
Manifest read_manifest(const std::string& path);

// `path` as given when absolute, else relative to the manifest's directory.
std::string resolve_manifest_path(const Manifest& manifest, const std::string& path);

}  // namespace vkblr::fit
