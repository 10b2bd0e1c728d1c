// vkblr/io/file_checksums.hpp — checksums inside vkblr-fit's own safetensors files
// (results and checkpoints), so a changed or damaged file is refused.
//
// Metadata entries (checksum.hpp's 16 hex digits of XXH3-64):
//   "xxh3:T"             of tensor T's stored bytes, one entry per tensor
//   "xxh3:__metadata__"  of every other metadata entry (those not starting
//                        with "xxh3:"), in key order, each as its key, a
//                        NUL byte, its value, a NUL byte
// The header's dtypes, shapes and offsets are checked by the readers
// against what the format expects; with these two, every byte that a
// reader uses is covered.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "vkblr/io/safetensors.hpp"

namespace vkblr::io {

// A SafetensorsWriter that records the checksums above. Throws as
// SafetensorsWriter does; keep_data false as SafetensorsWriter's (the
// checksums are taken all the same).
class ChecksummedWriter {
 public:
  explicit ChecksummedWriter(bool keep_data = true) : writer_(keep_data) {}

  void add_f32(const std::string& name, std::vector<std::uint64_t> shape, std::span<const float> values);
  // Stored as F16, rounded to nearest even.
  void add_f16(const std::string& name, std::vector<std::uint64_t> shape, std::span<const float> values);
  void add_u32(const std::string& name, std::vector<std::uint64_t> shape, std::span<const std::uint32_t> values);
  void add_u16(const std::string& name, std::vector<std::uint64_t> shape, std::span<const std::uint16_t> values);
  // Any dtype from its stored little-endian bytes.
  void add_bytes(const std::string& name, Dtype dtype, std::vector<std::uint64_t> shape,
                 std::span<const std::byte> bytes);
  // Throws vkblr::Error for a key starting with "xxh3:" (the checksums').
  void set_metadata(const std::string& key, std::string value);

  std::string serialize() const;  // the whole file's bytes, checksums included
  std::string header() const;     // its header, checksums included
  void append_data(const AppendBytes& append) const { writer_.append_data(append); }
  std::uint64_t data_bytes() const { return writer_.data_bytes(); }
  // "xxh3:" entries' values by tensor name
  const std::map<std::string, std::string>& tensor_checksums() const { return tensor_checksums_; }

 private:
  SafetensorsWriter writer_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, std::string> tensor_checksums_;  // by tensor name
};

// Throws vkblr::Error naming the file and what differs unless every tensor
// has its checksum entry and matches it, every checksum entry names a
// tensor, and the metadata matches its checksum. Reads every tensor.
void verify_checksums(SafetensorsReader& reader);

}  // namespace vkblr::io
