#include "vkblr/io/file_checksums.hpp"

#include <string_view>

#include "vkblr/io/checksum.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/error.hpp"
#include "vkblr/half.hpp"

namespace vkblr::io {
namespace {

constexpr std::string_view kPrefix = "xxh3:";
const std::string kMetadataKey = "xxh3:__metadata__";

bool is_checksum_key(std::string_view key) { return key.starts_with(kPrefix); }

std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
  std::string text;
  for (const auto& [key, value] : metadata) {
    if (is_checksum_key(key)) continue;
    text += key;
    text += '\0';
    text += value;
    text += '\0';
  }
  return checksum_hex(xxh3_64(text));
}

}  // namespace

void ChecksummedWriter::add_bytes(const std::string& name, Dtype dtype, std::vector<std::uint64_t> shape,
                                  std::span<const std::byte> bytes) {
  writer_.add_bytes(name, dtype, std::move(shape), bytes);
  tensor_checksums_[name] = checksum_hex(xxh3_64(bytes));
}

void ChecksummedWriter::add_f32(const std::string& name, std::vector<std::uint64_t> shape,
                                std::span<const float> values) {
  add_bytes(name, Dtype::F32, std::move(shape), std::as_bytes(values));
}

void ChecksummedWriter::add_f16(const std::string& name, std::vector<std::uint64_t> shape,
                                std::span<const float> values) {
  const std::vector<std::uint16_t> halves = to_f16(values);
  add_bytes(name, Dtype::F16, std::move(shape), std::as_bytes(std::span(halves)));
}

void ChecksummedWriter::add_u32(const std::string& name, std::vector<std::uint64_t> shape,
                                std::span<const std::uint32_t> values) {
  add_bytes(name, Dtype::U32, std::move(shape), std::as_bytes(values));
}

void ChecksummedWriter::add_u16(const std::string& name, std::vector<std::uint64_t> shape,
                                std::span<const std::uint16_t> values) {
  add_bytes(name, Dtype::U16, std::move(shape), std::as_bytes(values));
}

void ChecksummedWriter::set_metadata(const std::string& key, std::string value) {
  require(!is_checksum_key(key), "safetensors: metadata key '{}' is reserved for checksums", key);
  metadata_[key] = std::move(value);
}

std::string ChecksummedWriter::header() const {
  std::map<std::string, std::string> all = metadata_;
  for (const auto& [name, checksum] : tensor_checksums_) all[std::string(kPrefix) + name] = checksum;
  all[std::string(kMetadataKey)] = metadata_checksum(metadata_);
  return writer_.header_with(all);
}

std::string ChecksummedWriter::serialize() const {
  std::string out = header();
  writer_.append_data_to(out);
  return out;
}

void verify_checksums(SafetensorsReader& reader) {
  const auto& metadata = reader.metadata();
  const auto stored = metadata.find(kMetadataKey);
  require(stored != metadata.end(), "{}: metadata '{}' is missing: not written by this vkblr-fit, or damaged",
          reader.path(), kMetadataKey);
  const std::string actual_metadata = metadata_checksum(metadata);
  require(stored->second == actual_metadata,
          "{}: the metadata does not match its checksum (recorded {}, the file's {}): the file was changed or "
          "damaged",
          reader.path(), excerpt(stored->second), actual_metadata);
  for (const TensorInfo& t : reader.tensors()) {
    const auto it = metadata.find(std::string(kPrefix) + t.name);
    require(it != metadata.end(), "{}: tensor '{}' has no checksum (metadata '{}{}'): the file was changed or damaged",
            reader.path(), excerpt(t.name), kPrefix, excerpt(t.name));
    const std::string actual = checksum_hex(xxh3_64(reader.read_bytes(t)));
    require(it->second == actual,
            "{}: tensor '{}' does not match its checksum (recorded {}, the file's {}): the file was changed or damaged",
            reader.path(), excerpt(t.name), excerpt(it->second), actual);
  }
  for (const auto& [key, value] : metadata) {
    if (!is_checksum_key(key) || key == kMetadataKey) continue;
    require(reader.find(std::string_view(key).substr(kPrefix.size())) != nullptr,
            "{}: metadata '{}' is the checksum of a tensor the file does not hold: the file was changed or damaged",
            reader.path(), excerpt(key));
  }
}

}  // namespace vkblr::io
