#include "vkblr-fit/manifest/layer_plan.hpp"

#include <algorithm>
#include <filesystem>
#include <format>
#include <map>
#include <optional>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/manifest/name_pattern.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// The tensors of an input file, from its header (a .npy file's one array
// has the name ""). Files are read once however many layers name them.
struct FileTensors {
  bool npy = false;
  std::vector<TensorInfo> tensors;
};

class HeaderCache {
 public:
  // `what` names the input in messages ("weight", "activations").
  const FileTensors& get(const std::string& path, const char* what) {
    const auto it = files_.find(path);
    if (it != files_.end()) return it->second;
    const std::string ext = std::filesystem::path(path).extension().string();
    FileTensors f;
    if (ext == ".npy") {
      const NpyHeader h = read_npy_header(path);
      f.npy = true;
      f.tensors.push_back({"", h.dtype, {h.rows, h.cols}});
    } else {
      require(ext == ".safetensors", "{} file {}: expected .safetensors or .npy", what, path);
      f.tensors = SafetensorsReader(path).tensors();
    }
    return files_.emplace(path, std::move(f)).first->second;
  }

 private:
  std::map<std::string, FileTensors> files_;
};

// The tensor `name` of the file (empty: its only one); throws the
// reader's message (which lists the file's tensors) when there is none.
const TensorInfo& find_tensor(const std::string& path, const FileTensors& file, const std::string& name) {
  if (file.npy) return file.tensors.front();
  for (const TensorInfo& t : file.tensors) {
    if (t.name == name || (name.empty() && file.tensors.size() == 1)) return t;
  }
  SafetensorsReader(path).choose(name);  // throws, naming what the file holds
  fail("{}: no tensor '{}'", path, excerpt(name));
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Why W cannot be a blr layer of `o`'s settings, or empty; sets `shape`.
std::string weight_problem(const TensorInfo& w, const FitOptions& o, LayerShape& shape) {
  if (w.shape.size() != 2) return std::format("W is {}-D {}: a layer's weight is 2-D", w.shape.size(), shape_text(w.shape));
  if (w.dtype != Dtype::F32 && w.dtype != Dtype::F16 && w.dtype != Dtype::BF16 && w.dtype != Dtype::F64) {
    return std::format("W is {}: vkblr-fit reads F32, F16, BF16 or F64 values", dtype_name(w.dtype));
  }
  const std::uint64_t m = w.shape[0], n = w.shape[1];
  if (m == 0 || n == 0 || m % 16 != 0 || n % 16 != 0 || m > 0xffffffffu || n > 0xffffffffu) {
    return std::format("W is {}x{}: a blr layer's m and n are positive multiples of 16", m, n);
  }
  shape = {static_cast<std::uint32_t>(m), static_cast<std::uint32_t>(n), o.rank, o.paths};
  try {
    if (shape.rank == 0) shape.rank = rank_for_bpw(shape.m, shape.n, shape.paths, o.scale_dtype, o.bpw);
    check_layer_shape(shape, "rank");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Refuses activations that do not fit the layer.
void check_activations(const PlannedLayer& layer, const TensorInfo& x, const std::string& source, const Caps& caps) {
  FitOptions resolved = layer.options;
  resolve_fit_defaults(resolved, caps);
  const std::uint64_t need = std::uint64_t{resolved.tokens} + resolved.held_out;
  require(x.shape.size() == 2, "activations {} are {}-D {}: X is [T][n]", source, x.shape.size(),
          shape_text(x.shape));
  require(x.shape[1] == layer.shape.n, "activations {} have {} columns but W has n = {} (X must be [T][n])", source,
          x.shape[1], layer.shape.n);
  require(x.shape[0] >= need, "activations {} have {} tokens; {} training + {} held-out are needed (tokens, held_out)",
          source, x.shape[0], resolved.tokens, resolved.held_out);
}

}  // namespace

std::vector<PlannedLayer> plan_layers(const Manifest& manifest, const Caps& caps) {
  HeaderCache headers;
  std::vector<PlannedLayer> layers;
  std::map<std::string, std::string> named_by;  // layer name -> its entry
  for (const ManifestEntry& entry : manifest.entries) {
    const std::string where = std::format("manifest {}: {}", manifest.path, entry.label);
    try {
      const std::string weight_path = resolve_manifest_path(manifest, entry.weight_path);
      const FileTensors& weights = headers.get(weight_path, "weight");
      // the tensors of this entry, each with what its pattern's stars matched
      std::vector<std::pair<const TensorInfo*, std::vector<std::string>>> matched;
      if (entry.is_pattern) {
        require(!weights.npy, "'tensors' is a pattern over tensor names, but {} is .npy (one unnamed array)",
                weight_path);
        for (const TensorInfo& t : weights.tensors) {
          if (auto captures = match_name_pattern(entry.pattern, t.name)) matched.emplace_back(&t, std::move(*captures));
        }
        if (matched.empty()) {
          fail("'tensors' pattern '{}' matches no tensor of {}; its tensors are:{}", excerpt(entry.pattern),
               weight_path, SafetensorsReader(weight_path).tensor_list());
        }
        std::ranges::sort(matched, [](const auto& a, const auto& b) { return natural_less(a.first->name, b.first->name); });
      } else {
        require(!weights.npy || entry.tensor.empty(), "{} is .npy: it has no tensor names (drop 'tensor')",
                weight_path);
        matched.emplace_back(&find_tensor(weight_path, weights, entry.tensor), std::vector<std::string>{});
      }
      for (const auto& [w, captures] : matched) {
        PlannedLayer layer;
        layer.entry = entry.label;
        layer.sized = entry.sized;
        layer.options = entry.settings;
        layer.options.weight_path = weight_path;
        layer.options.tensor = weights.npy ? "" : w->name;
        layer.weight_source = weights.npy ? weight_path : weight_path + ":" + w->name;
        layer.stored_shape = shape_text(w->shape);
        require(!entry.name.empty() || !weights.npy, "{} is .npy: the layer needs a 'name'", weight_path);
        layer.name = expand_name_template(entry.name.empty() ? "{tensor}" : entry.name, w->name, captures, "'name'");
        require(!layer.name.empty(), "'name' '{}' makes an empty name for {}", excerpt(entry.name), layer.weight_source);
        require(!layer.name.starts_with("xxh3:"), "layer name '{}': names starting with 'xxh3:' are the checksums'",
                excerpt(layer.name));
        const auto [at, fresh] = named_by.emplace(layer.name, entry.label);
        require(fresh, "layer '{}' is named twice: by {} and by {}", excerpt(layer.name), at->second, entry.label);
        layer.options.activations_path = resolve_manifest_path(
            manifest, expand_name_template(entry.activations, w->name, captures, "'activations'"));
        layer.options.activations_tensor =
            expand_name_template(entry.activations_tensor, w->name, captures, "'activations_tensor'");
        layer.bad = weight_problem(*w, layer.options, layer.shape);
        if (layer.bad.empty()) {
          const FileTensors& acts = headers.get(layer.options.activations_path, "activations");
          require(!acts.npy || layer.options.activations_tensor.empty(),
                  "activations file {} is .npy: it has no tensor names (drop 'activations_tensor')",
                  layer.options.activations_path);
          const TensorInfo& x = find_tensor(layer.options.activations_path, acts, layer.options.activations_tensor);
          const std::string source = acts.npy ? layer.options.activations_path
                                              : layer.options.activations_path + ":" + x.name;
          try {
            check_activations(layer, x, source, caps);
          } catch (const Error& e) {
            fail("layer '{}': {}", excerpt(layer.name), e.what());
          }
        }
        layers.push_back(std::move(layer));
      }
    } catch (const Error& e) {
      fail("{}: {}", where, e.what());
    }
  }
  return layers;
}

}  // namespace vkblr::fit
