#include "vkblr-fit/blr_model.hpp"

#include <format>
#include <nlohmann/json.hpp>
#include <set>

#include "vkblr-fit/bpw.hpp"
#include "vkblr-fit/excerpt.hpp"
#include "vkblr-fit/json_input.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

constexpr std::string_view kFormat = "vkblr-blr-model";

}  // namespace

double model_bits_per_weight(std::span<const BlrModelLayer> layers) {
  std::uint64_t bits = 0, weights = 0;
  for (const BlrModelLayer& layer : layers) {
    const BitsPerWeight b = bits_per_weight(layer.result.shape, layer.result.scale_dtype);
    bits += b.sign_bits + b.scale_bits + b.metadata_bits;
    weights += b.weights;
  }
  return weights == 0 ? 0.0 : static_cast<double>(bits) / static_cast<double>(weights);
}

std::string serialize_blr_model(const std::string& path, const BlrModel& model) {
  require(!model.layers.empty(), "writing {}: a model file needs at least one layer", path);
  ChecksummedWriter writer;
  std::set<std::string> names;
  nlohmann::json list = nlohmann::json::array();
  for (const BlrModelLayer& layer : model.layers) {
    require(!layer.name.empty(), "writing {}: a layer without a name", path);
    require(!layer.name.starts_with("xxh3:"), "writing {}: layer name '{}': names starting with 'xxh3:' are the "
            "checksums'", path, excerpt(layer.name));
    require(names.insert(layer.name).second, "writing {}: layer '{}' twice", path, excerpt(layer.name));
    const std::string prefix = layer.name + ".";
    add_blr_layer(writer, prefix, layer.result, path);
    writer.set_metadata(prefix + "tool_version", layer.result.tool_version);
    list.push_back(layer.name);
  }
  writer.set_metadata("format", std::string(kFormat));
  writer.set_metadata("format_version", std::to_string(kBlrModelFormatVersion));
  writer.set_metadata("tool_version", model.tool_version);
  writer.set_metadata("manifest_xxh3", checksum_hex(model.manifest_checksum));
  writer.set_metadata("layers", list.dump());
  writer.set_metadata("bpw", std::format("{}", model_bits_per_weight(model.layers)));
  return writer.serialize();
}

BlrModel read_blr_model(const std::string& path) {
  SafetensorsReader reader(path);
  check_vkblr_file(reader, kFormat, kBlrModelFormatVersion, "model file");

  BlrModel model;
  model.tool_version = metadata_value(reader, "tool_version");
  const std::optional<std::uint64_t> manifest = parse_checksum_hex(metadata_value(reader, "manifest_xxh3"));
  require(manifest.has_value(), "{}: metadata 'manifest_xxh3' is not a checksum (16 lowercase hex digits)", path);
  model.manifest_checksum = *manifest;
  const std::string where = path + ": metadata 'layers'";
  const nlohmann::json list = parse_untrusted_json(metadata_value(reader, "layers"), 1, where);
  const JsonField names(list, where);
  std::set<std::string> tensors, seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name = names[i].string();
    require(!name.empty() && seen.insert(name).second, "{}: layer '{}' is empty or named twice", where,
            excerpt(name));
    BlrResult result = read_blr_layer(reader, name + ".", tensors);
    result.tool_version = metadata_value(reader, name + ".tool_version");
    model.layers.push_back({name, std::move(result)});
  }
  require(!model.layers.empty(), "{}: no layers", where);
  for (const TensorInfo& t : reader.tensors()) {
    require(tensors.contains(t.name), "{}: tensor '{}' belongs to none of its layers", path, excerpt(t.name));
  }
  const std::string recorded_bpw = metadata_value(reader, "bpw");
  const std::string actual_bpw = std::format("{}", model_bits_per_weight(model.layers));
  require(recorded_bpw == actual_bpw, "{}: metadata 'bpw' = '{}' but its layers take {} bpw", path,
          excerpt(recorded_bpw), actual_bpw);
  return model;
}

}  // namespace vkblr::fit
