#include "vkblr/io/blr_model.hpp"

#include <format>
#include <nlohmann/json.hpp>
#include <memory>
#include <set>
#include <span>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr/error.hpp"

namespace vkblr::io {
namespace {

constexpr std::string_view kFormat = "vkblr-blr-model";

// Σ bits and Σ m·n of the layers, for the model's bpw.
struct ModelBits {
  std::uint64_t bits = 0, weights = 0;
  void add(const BlrResult& result) {
    const BitsPerWeight b = bits_per_weight(result.shape, result.scale_dtype);
    bits += b.sign_bits + b.scale_bits + b.metadata_bits;
    weights += b.weights;
  }
  double bpw() const { return weights == 0 ? 0.0 : static_cast<double>(bits) / static_cast<double>(weights); }
};

// One layer's tensors and its tool_version, under "NAME.".
void add_model_layer(ChecksummedWriter& writer, const std::string& name, const BlrResult& result,
                     const std::string& path) {
  const std::string prefix = name + ".";
  add_blr_layer(writer, prefix, result, path);
  writer.set_metadata(prefix + "tool_version", result.tool_version);
}

}  // namespace

double model_bits_per_weight(std::span<const BlrModelLayer> layers) {
  ModelBits sum;
  for (const BlrModelLayer& layer : layers) sum.add(layer.result);
  return sum.bpw();
}

FileToWrite stream_blr_model(const std::string& path, const std::vector<std::string>& names,
                             const std::function<BlrResult(std::size_t)>& load, const std::string& tool_version,
                             std::uint64_t manifest_checksum) {
  require(!names.empty(), "writing {}: a model file needs at least one layer", path);
  auto head = std::make_shared<ChecksummedWriter>(false);
  std::set<std::string> seen;
  nlohmann::json list = nlohmann::json::array();
  ModelBits sum;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    require(!name.empty(), "writing {}: a layer without a name", path);
    require(!name.starts_with("xxh3:"), "writing {}: layer name '{}': names starting with 'xxh3:' are the "
            "checksums'", path, excerpt(name));
    require(seen.insert(name).second, "writing {}: layer '{}' twice", path, excerpt(name));
    const BlrResult result = load(i);
    add_model_layer(*head, name, result, path);
    sum.add(result);
    list.push_back(name);
  }
  head->set_metadata("format", std::string(kFormat));
  head->set_metadata("format_version", std::to_string(kBlrModelFormatVersion));
  head->set_metadata("tool_version", tool_version);
  head->set_metadata("manifest_xxh3", checksum_hex(manifest_checksum));
  head->set_metadata("layers", list.dump());
  head->set_metadata("bpw", std::format("{}", sum.bpw()));

  FileToWrite file{.path = path};
  file.produce = [path, names, load, head, header = head->header()](const AppendBytes& append) {
    append(std::as_bytes(std::span(header)));
    std::uint64_t written = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      ChecksummedWriter layer;
      add_model_layer(layer, names[i], load(i), path);
      for (const auto& [tensor, checksum] : layer.tensor_checksums()) {
        const auto it = head->tensor_checksums().find(tensor);
        require(it != head->tensor_checksums().end() && it->second == checksum,
                "writing {}: layer '{}' is not what it was when the file's header was made (tensor '{}')", path,
                excerpt(names[i]), excerpt(tensor));
      }
      layer.append_data(append);
      written += layer.data_bytes();
    }
    require(written == head->data_bytes(), "writing {}: {} bytes of tensors for a header of {}", path, written,
            head->data_bytes());
  };
  return file;
}

std::string serialize_blr_model(const std::string& path, const BlrModel& model) {
  std::vector<std::string> names;
  for (const BlrModelLayer& layer : model.layers) names.push_back(layer.name);
  const FileToWrite file = stream_blr_model(
      path, names, [&](std::size_t i) { return model.layers[i].result; }, model.tool_version,
      model.manifest_checksum);
  std::string out;
  file.produce([&](std::span<const std::byte> piece) {
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  });
  return out;
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

}  // namespace vkblr::io
