#include "vkblr/io/blr_result.hpp"

#include <charconv>
#include <cmath>
#include <format>
#include <nlohmann/json.hpp>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr/io/file_checksums.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"
#include "vkblr/half.hpp"

namespace vkblr::io {
namespace {

constexpr std::string_view kFormat = "vkblr-blr";

std::string tensor_name(std::size_t path, const char* field) { return std::format("path{}.{}", path, field); }

void check_scales_storable(const std::string& file, const BlrResult& result) {
  for (std::size_t p = 0; p < result.paths.size(); ++p) {
    const BlrPathInit& path = result.paths[p];
    for (const auto& [field, values] : {std::pair{"h", &path.h}, std::pair{"l", &path.l}, std::pair{"g", &path.g}}) {
      for (std::size_t i = 0; i < values->size(); ++i) {
        const float v = (*values)[i];
        require(std::isfinite(v), "{}: scale {}[{}] of path {} is {}: every scale must be finite", file, field, i, p, v);
        require(result.scale_dtype != ScaleDtype::f16 || std::isfinite(f16_to_f32(f32_to_f16(v))),
                "{}: scale {}[{}] of path {} = {} overflows f16: store F32 scales", file, field, i, p, v);
      }
    }
  }
}

std::uint32_t metadata_u32(const SafetensorsReader& reader, const std::string& key) {
  const std::string text = metadata_value(reader, key);
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  require(ec == std::errc{} && end == text.data() + text.size(), "{}: metadata '{}' = '{}' is not a u32", reader.path(),
          key, excerpt(text));
  return value;
}

std::uint64_t metadata_checksum(const SafetensorsReader& reader, const std::string& key) {
  const std::optional<std::uint64_t> value = parse_checksum_hex(metadata_value(reader, key));
  require(value.has_value(), "{}: metadata '{}' is not a checksum (16 lowercase hex digits)", reader.path(), key);
  return *value;
}

}  // namespace

std::string metadata_value(const SafetensorsReader& reader, const std::string& key) {
  const auto it = reader.metadata().find(key);
  require(it != reader.metadata().end(), "{}: metadata '{}' is missing", reader.path(), excerpt(key));
  return it->second;
}

void add_blr_layer(ChecksummedWriter& writer, const std::string& prefix, const BlrResult& result,
                   const std::string& file) {
  const std::string context = "writing " + file;
  check_layer_shape(result.shape, context);
  check_path_sizes(result.shape, result.paths, context);
  check_scales_storable(file, result);
  const LayerShape& s = result.shape;
  const std::uint64_t words = s.rank / 32;
  for (std::size_t p = 0; p < result.paths.size(); ++p) {
    const BlrPathInit& path_init = result.paths[p];
    writer.add_u32(prefix + tensor_name(p, "bits_u"), {s.m, words}, path_init.bits_u);
    writer.add_u32(prefix + tensor_name(p, "bits_v"), {s.n, words}, path_init.bits_v);
    for (const auto& [field, values] : {std::pair{"h", &path_init.h}, std::pair{"l", &path_init.l},
                                        std::pair{"g", &path_init.g}}) {
      if (result.scale_dtype == ScaleDtype::f16) {
        writer.add_f16(prefix + tensor_name(p, field), {values->size()}, *values);
      } else {
        writer.add_f32(prefix + tensor_name(p, field), {values->size()}, *values);
      }
    }
  }
  writer.set_metadata(prefix + "m", std::to_string(s.m));
  writer.set_metadata(prefix + "n", std::to_string(s.n));
  writer.set_metadata(prefix + "rank", std::to_string(s.rank));
  writer.set_metadata(prefix + "paths", std::to_string(s.paths));
  writer.set_metadata(prefix + "scale_dtype", std::string(scale_dtype_name(result.scale_dtype)));
  writer.set_metadata(prefix + "bpw", std::format("{}", bits_per_weight(s, result.scale_dtype).total));
  writer.set_metadata(prefix + "weight_xxh3", checksum_hex(result.inputs.weight));
  writer.set_metadata(prefix + "activations_xxh3", checksum_hex(result.inputs.activations));
}

std::string serialize_blr_result(const std::string& path, const BlrResult& result) {
  ChecksummedWriter writer;
  add_blr_layer(writer, "", result, path);
  writer.set_metadata("format", std::string(kFormat));
  writer.set_metadata("format_version", std::to_string(kBlrResultFormatVersion));
  writer.set_metadata("tool_version", result.tool_version);
  writer.set_metadata("command_line", nlohmann::json(result.command_line).dump());
  return writer.serialize();
}

void write_blr_result(const std::string& path, const BlrResult& result) {
  write_file_atomic(path, serialize_blr_result(path, result));
}

BlrResult read_blr_layer(SafetensorsReader& reader, const std::string& prefix, std::set<std::string>& tensors) {
  const std::string& path = reader.path();
  // "file" or "file: layer 'name'" (the prefix without its final '.')
  const std::string where =
      prefix.empty() ? path
                     : std::format("{}: layer '{}'", path,
                                   excerpt(prefix.ends_with('.') ? prefix.substr(0, prefix.size() - 1) : prefix));
  BlrResult result;
  result.shape = {metadata_u32(reader, prefix + "m"), metadata_u32(reader, prefix + "n"),
                  metadata_u32(reader, prefix + "rank"), metadata_u32(reader, prefix + "paths")};
  check_layer_shape(result.shape, where);
  const std::string scale_dtype_text = metadata_value(reader, prefix + "scale_dtype");
  require(scale_dtype_text == "F16" || scale_dtype_text == "F32", "{}: metadata '{}scale_dtype' = '{}', want F16 or F32",
          path, excerpt(prefix), excerpt(scale_dtype_text));
  result.scale_dtype = scale_dtype_text == "F16" ? ScaleDtype::f16 : ScaleDtype::f32;
  const std::string recorded_bpw = metadata_value(reader, prefix + "bpw");
  const std::string actual_bpw = std::format("{}", bits_per_weight(result.shape, result.scale_dtype).total);
  require(recorded_bpw == actual_bpw, "{}: metadata '{}bpw' = '{}' but its layer takes {} bpw", path, excerpt(prefix),
          excerpt(recorded_bpw), actual_bpw);
  result.inputs = {metadata_checksum(reader, prefix + "weight_xxh3"),
                   metadata_checksum(reader, prefix + "activations_xxh3")};

  const LayerShape& s = result.shape;
  const Dtype stored_scale_dtype = result.scale_dtype == ScaleDtype::f16 ? Dtype::F16 : Dtype::F32;
  const auto take = [&](std::size_t p, const char* field, Dtype dtype, std::vector<std::uint64_t> shape) {
    const std::string name = prefix + tensor_name(p, field);
    tensors.insert(name);
    const TensorInfo& t = reader.tensor(name);
    const TensorInfo want{name, dtype, std::move(shape)};
    require(t.dtype == want.dtype && t.shape == want.shape, "{}: tensor {}, want {}", path, t.describe(),
            want.describe());
    return &t;
  };
  const std::uint64_t words = s.rank / 32;
  for (std::size_t p = 0; p < s.paths; ++p) {
    BlrPathInit path_init;
    path_init.bits_u = reader.read_u32(*take(p, "bits_u", Dtype::U32, {s.m, words}));
    path_init.bits_v = reader.read_u32(*take(p, "bits_v", Dtype::U32, {s.n, words}));
    path_init.h = reader.read_f32(*take(p, "h", stored_scale_dtype, {s.m}));
    path_init.l = reader.read_f32(*take(p, "l", stored_scale_dtype, {s.rank}));
    path_init.g = reader.read_f32(*take(p, "g", stored_scale_dtype, {s.n}));
    result.paths.push_back(std::move(path_init));
  }
  check_scales_storable(where, result);
  return result;
}

void check_vkblr_file(SafetensorsReader& reader, std::string_view format, int version, std::string_view kind) {
  const std::string& path = reader.path();
  const std::string found = metadata_value(reader, "format");
  require(found == format, "{}: not a vkblr-fit {} (metadata 'format' is '{}', want '{}')", path, kind, excerpt(found),
          format);
  const std::string found_version = metadata_value(reader, "format_version");
  require(found_version == std::to_string(version), "{}: {} format version '{}'; this build reads version {}", path,
          kind, excerpt(found_version), version);
  verify_checksums(reader);
}

BlrResult read_blr_result(const std::string& path) {
  SafetensorsReader reader(path);
  check_vkblr_file(reader, kFormat, kBlrResultFormatVersion, "result");

  std::set<std::string> expected;
  BlrResult result = read_blr_layer(reader, "", expected);
  result.tool_version = metadata_value(reader, "tool_version");
  const std::string command_line_where = path + ": metadata 'command_line'";
  const nlohmann::json command_line =
      parse_untrusted_json(metadata_value(reader, "command_line"), kMaxMetadataJsonDepth, command_line_where);
  const JsonField arguments(command_line, command_line_where);
  for (std::size_t i = 0; i < arguments.size(); ++i) result.command_line.push_back(arguments[i].string());
  for (const TensorInfo& t : reader.tensors()) {
    require(expected.contains(t.name), "{}: unexpected tensor '{}' in a {}-path result", path, excerpt(t.name),
            result.shape.paths);
  }
  return result;
}

}  // namespace vkblr::io
