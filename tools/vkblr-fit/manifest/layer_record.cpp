#include "vkblr-fit/manifest/layer_record.hpp"

#include <filesystem>
#include <format>

#include "vkblr/io/binary_file.hpp"
#include "vkblr-fit/train/fit_checkpoint.hpp"
#include "vkblr-fit/io/matrix_source.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

constexpr std::string_view kFormat = "vkblr-fit-layer-record";
constexpr int kFormatVersion = 1;
constexpr std::size_t kMaxStem = 200;
// the record, its row, the row's errors and stages, an error or a stage
constexpr std::size_t kMaxRecordDepth = 4;
constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{1} << 20;

bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// The whole file's bytes (at most `limit`), or nullopt when it is missing.
std::optional<std::string> read_whole(const std::string& path, std::uint64_t limit, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return read_whole_file(path, limit, what);
}

std::uint64_t file_checksum(const std::string& path) {
  const std::optional<std::string> bytes = read_whole(path, std::uint64_t{1} << 40, "layer result");
  require(bytes.has_value(), "{} does not exist", path);
  return xxh3_64(*bytes);
}

}  // namespace

std::string layer_file_stem(const std::string& name) {
  bool plain = !name.empty() && name.size() <= kMaxStem && name.front() != '.';
  std::string stem;
  for (const char c : name) {
    plain = plain && plain_char(c);
    if (stem.size() < kMaxStem) stem += plain_char(c) ? c : '_';
  }
  if (plain) return name;
  if (!stem.empty() && stem.front() == '.') stem.front() = '_';
  return stem + "-" + checksum_hex(xxh3_64(name));
}

LayerFiles layer_files(const std::string& work_dir, const std::string& name) {
  const std::string prefix = (std::filesystem::path(work_dir) / layer_file_stem(name)).string();
  return {prefix, prefix + ".safetensors", prefix + ".done.json"};
}

nlohmann::json layer_key(const std::string& name, const FitOptions& resolved, const LayerShape& shape,
                         const InputChecksums& inputs) {
  nlohmann::json key = resume_key(resolved, shape, inputs);
  // the inputs count by their checksums, not by where they are: a manifest
  // run from another directory, or data moved, resumes all the same
  for (const char* path : {"weight", "tensor", "activations", "activations_tensor"}) key.erase(path);
  key["name"] = name;
  key["micro_batches"] = resolved.micro_batches;
  return key;
}

InputChecksums input_checksums(const FitOptions& o) {
  const MatrixSource w(o.weight_path, o.tensor, "weight");
  const MatrixSource x(o.activations_path, o.activations_tensor, "activations");
  const std::uint64_t need = std::uint64_t{o.tokens} + o.held_out;
  require(x.rows() >= need, "activations {} have {} tokens; {} are needed", x.source(), x.rows(), need);
  return {xxh3_64(w.bytes(0, w.rows())), xxh3_64(x.bytes(0, need))};
}

void write_layer_record(const LayerFiles& files, const std::string& name, const nlohmann::json& key,
                        const LayerRow& row) {
  const nlohmann::json record = {{"format", kFormat},
                                 {"format_version", kFormatVersion},
                                 {"name", name},
                                 {"key", key},
                                 {"result_xxh3", checksum_hex(file_checksum(files.result))},
                                 {"row", to_json(row)}};
  write_file_atomic(files.record, json_file_text(record));
}

std::optional<LayerRow> find_layer_record(const LayerFiles& files, const std::string& name, const nlohmann::json& key,
                                          std::string& why) {
  const std::optional<std::string> text = read_whole(files.record, kMaxRecordBytes, "layer record");
  if (!text) {
    why = std::format("no record {}", files.record);
    return std::nullopt;
  }
  try {
    const std::string where = "layer record " + files.record;
    const nlohmann::json record = parse_untrusted_json(*text, kMaxRecordDepth, where);
    const JsonField r(record, where);
    require(r["format"].string() == kFormat && r["format_version"].u32() == kFormatVersion,
            "{}: not a {} of version {}", where, kFormat, kFormatVersion);
    if (r["name"].string() != name) {
      why = std::format("{} is the record of layer '{}'", files.record, r["name"].string());
      return std::nullopt;
    }
    r["key"].require_object();
    if (r["key"].value() != key) {
      why = "fitted with other settings or inputs: " + key_differences(r["key"].value(), key);
      return std::nullopt;
    }
    const std::optional<std::uint64_t> recorded = parse_checksum_hex(r["result_xxh3"].string());
    require(recorded.has_value(), "{}: 'result_xxh3' is not a checksum", where);
    const std::optional<std::string> result = read_whole(files.result, std::uint64_t{1} << 40, "layer result");
    if (!result || xxh3_64(*result) != *recorded) {
      why = std::format("{} is {} the one its record names", files.result, result ? "not" : "missing, not");
      return std::nullopt;
    }
    LayerRow row = layer_row_from_json(r["row"]);
    require(row.name == name, "{}: its row is of layer '{}'", where, row.name);
    return row;
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

}  // namespace vkblr::fit
