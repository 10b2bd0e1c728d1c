#include "vkblr-fit/manifest/manifest.hpp"

#include <array>
#include <filesystem>
#include <format>
#include <span>

#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/fit_option_checks.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/manifest/layer_settings.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{16} << 20;
// the top object, "layers", an entry (or "defaults")
constexpr std::size_t kMaxManifestDepth = 3;

constexpr std::array<std::string_view, 6> kEntryKeys{"weight", "tensor",      "tensors",
                                                     "name",   "activations", "activations_tensor"};

bool is_entry_key(std::string_view key) {
  for (const std::string_view k : kEntryKeys) {
    if (k == key) return true;
  }
  return false;
}

// "unknown key 'x'" and, when the key is a setting or an entry key
// written with '-' for '_', the name it stands for.
[[noreturn]] void unknown_key(const JsonField& object, const std::string& key, bool entry) {
  std::string near = key;
  for (char& c : near) c = c == '-' ? '_' : c;
  const std::string hint = near != key && (is_layer_setting(near) || (entry && is_entry_key(near)))
                               ? std::format(" (did you mean '{}'?)", near)
                               : "";
  fail("{}: unknown key '{}'{}; the keys are {}{}", object.label(), excerpt(key), hint,
       entry ? "weight, tensor, tensors, name, activations, activations_tensor, and the settings " : "the settings ",
       layer_setting_keys());
}

const std::string& text(const JsonField& field) {
  const std::string& value = field.string();
  require(!value.empty(), "{} is empty", field.label());
  return value;
}

// Applies the settings of `object` (every key a setting, or, in an entry,
// an entry key, skipped here) to `options`; checks them as the flags.
void apply_settings(const JsonField& object, bool entry, FitOptions& options) {
  object.require_object();
  const bool rank = object.contains("rank"), bpw = object.contains("bpw");
  require(!(rank && bpw), "{}: 'rank' and 'bpw' exclude each other (give one)", object.label());
  for (const auto& [key, value] : object.value().items()) {
    if (entry && is_entry_key(key)) continue;
    if (!is_layer_setting(key)) unknown_key(object, key, entry);
    apply_layer_setting(key, object[key], options);
  }
  try {
    check_fit_options(options);
  } catch (const Error& e) {
    fail("{}: {}", object.label(), e.what());
  }
}

ManifestEntry parse_entry(const JsonField& e, std::size_t index, const FitOptions& defaults) {
  ManifestEntry entry;
  entry.label = std::format("layers[{}]", index);
  entry.settings = defaults;
  apply_settings(e, true, entry.settings);
  entry.sized = e.contains("rank") || e.contains("bpw");
  entry.weight_path = text(e["weight"]);
  entry.activations = text(e["activations"]);
  require(!(e.contains("tensor") && e.contains("tensors")), "{}: 'tensor' (one layer) and 'tensors' (a pattern) "
          "exclude each other", e.label());
  if (e.contains("tensors")) {
    entry.is_pattern = true;
    entry.pattern = text(e["tensors"]);
  } else if (e.contains("tensor")) {
    entry.tensor = text(e["tensor"]);
    require(entry.tensor.find('*') == std::string::npos,
            "{}: 'tensor' is '{}': it names one tensor; for a pattern use 'tensors'", e.label(),
            excerpt(entry.tensor));
  }
  if (e.contains("name")) entry.name = text(e["name"]);
  if (e.contains("activations_tensor")) entry.activations_tensor = text(e["activations_tensor"]);
  return entry;
}

}  // namespace

Manifest read_manifest(const std::string& path) {
  const std::string bytes = read_whole_file(path, kMaxManifestBytes, "manifest");
  Manifest m;
  m.path = path;
  m.directory = std::filesystem::path(path).parent_path().string();
  m.checksum = xxh3_64(bytes);
  const nlohmann::json json = parse_untrusted_json(bytes, kMaxManifestDepth, "manifest " + path);
  const JsonField top(json, "manifest " + path);
  top.require_object();
  for (const auto& [key, value] : json.items()) {
    require(key == "defaults" || key == "layers", "manifest {}: unknown key '{}'; the keys are defaults, layers",
            path, excerpt(key));
  }
  FitOptions defaults;
  if (top.contains("defaults")) {
    apply_settings(top["defaults"], false, defaults);
    m.defaults_sized = top["defaults"].contains("rank") || top["defaults"].contains("bpw");
  }
  const JsonField layers = top["layers"];
  require(layers.size() >= 1, "manifest {}: 'layers' is empty: name at least one layer", path);
  for (std::size_t i = 0; i < layers.size(); ++i) m.entries.push_back(parse_entry(layers[i], i, defaults));
  return m;
}

std::string resolve_manifest_path(const Manifest& manifest, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || manifest.directory.empty()) return path;
  return (std::filesystem::path(manifest.directory) / p).string();
}

}  // namespace vkblr::fit
