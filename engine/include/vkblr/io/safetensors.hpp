// vkblr/io/safetensors.hpp — reading and writing safetensors files
// (https://github.com/huggingface/safetensors).
//
// Layout: u64 little-endian N, then N bytes of JSON header, then the data.
// The header maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} (byte offsets into the data, which follows the header), and
// may hold "__metadata__": a string → string map. The tensors' byte ranges
// must tile the data exactly: no overlap, no gap, nothing past the end.
//
// Every failure throws vkblr::Error with a message that starts with the
// file's path: missing file, truncated file, a header length past the end
// (or over 100 MiB), bad JSON, a malformed entry, an unknown dtype, a
// dtype/shape/byte-count mismatch, overlapping or uncovered data, a missing
// tensor (the message lists the file's tensors), a dtype that cannot be
// read as asked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr/file_io.hpp"

namespace vkblr::io {

// The dtypes of the safetensors format. F4 and F6_* pack several elements
// per byte (a tensor of them must fill whole bytes).
enum class Dtype : std::uint8_t {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F4, F6_E2M3, F6_E3M2,
  I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64,
};

std::string_view dtype_name(Dtype dtype);               // "F32", "BF16", ...
std::optional<Dtype> parse_dtype(std::string_view name);  // exact, case-sensitive
unsigned dtype_bits(Dtype dtype);                        // bits per element

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::uint64_t> shape;  // [] is a scalar (one element)
  std::uint64_t begin = 0, end = 0;  // byte range in the data section

  std::uint64_t element_count() const;
  std::string describe() const;  // "name F32 [4096, 1024]"
};

class SafetensorsReader {
 public:
  // Opens `path` and validates its header and data layout (reads no data).
  explicit SafetensorsReader(std::string path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // by name
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const TensorInfo* find(std::string_view name) const;  // null when absent
  // The tensor `name`; throws, listing the file's tensors, when absent.
  const TensorInfo& tensor(std::string_view name) const;
  // `name`, or with an empty name the file's only tensor; throws, listing
  // the tensors, when the name is absent or empty in a file of several.
  const TensorInfo& choose(std::string_view name) const;
  // One line per tensor, "  name DTYPE [shape]", for messages.
  std::string tensor_list() const;

  // The tensor's values as f32, converted by widen_to_f32 (io/widen.hpp:
  // F32 as stored, F16/BF16 exactly, F64 rounded to nearest). Other dtypes
  // throw.
  std::vector<float> read_f32(const TensorInfo& tensor);
  // A 2-D tensor as a Matrix [shape[0]][shape[1]] (read_f32's dtypes);
  // throws for another rank.
  Matrix read_matrix(const TensorInfo& tensor);
  // Throws as read_matrix does, reading nothing, unless `tensor` is 2-D of
  // one of read_f32's dtypes (the check of a matrix read another way).
  void check_matrix(const TensorInfo& tensor) const;
  // The stored values of a U32 / U16 tensor, bit for bit; throws for
  // another dtype.
  std::vector<std::uint32_t> read_u32(const TensorInfo& tensor);
  std::vector<std::uint16_t> read_u16(const TensorInfo& tensor);
  // The tensor's bytes as stored (little-endian).
  std::vector<std::byte> read_bytes(const TensorInfo& tensor);
  // Where the tensor's bytes start in the file, and the file's size (for a
  // memory map of the data).
  std::uint64_t data_offset(const TensorInfo& tensor) const { return data_start_ + tensor.begin; }
  std::uint64_t file_bytes() const { return file_.size(); }

 private:
  void check_widens(const TensorInfo& tensor) const;  // throws unless read_f32 reads its dtype

  InputFile file_;
  std::uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Builds a safetensors file in memory and writes it atomically. Tensors are
// laid out in the order added; the header is padded with spaces to a
// multiple of 8 bytes. Throws vkblr::Error for a duplicate or reserved name,
// or values whose count does not match the shape.
//
// With keep_data false the writer records each tensor's name, dtype, shape
// and place but not its bytes: header() of a file whose data is appended
// piece by piece elsewhere (blr_model.hpp); serialize, write and
// append_data then throw.
class SafetensorsWriter {
 public:
  explicit SafetensorsWriter(bool keep_data = true) : keep_data_(keep_data) {}

  void add_f32(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values);
  // Stored as F16, rounded to nearest even (overflow becomes infinity).
  void add_f16(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values);
  void add_u32(std::string name, std::vector<std::uint64_t> shape, std::span<const std::uint32_t> values);
  void add_u16(std::string name, std::vector<std::uint64_t> shape, std::span<const std::uint16_t> values);
  // Any dtype from its stored little-endian bytes.
  void add_bytes(std::string name, Dtype dtype, std::vector<std::uint64_t> shape, std::span<const std::byte> bytes);

  void set_metadata(std::string key, std::string value);

  std::string serialize() const;          // the whole file's bytes
  void write(const std::string& path) const;  // atomic (vkblr::write_file_atomic)

  // The 8-byte length and the padded JSON header, with `metadata` as its
  // __metadata__ (header(): this writer's own).
  std::string header_with(const std::map<std::string, std::string>& metadata) const;
  std::string header() const { return header_with(metadata_); }
  // Appends every tensor's stored bytes, in the file's order.
  void append_data(const AppendBytes& append) const;
  void append_data_to(std::string& out) const;  // the same, onto `out`
  std::uint64_t data_bytes() const { return entries_.empty() ? 0 : entries_.back().info.end; }

 private:
  struct Entry {
    TensorInfo info;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
  bool keep_data_ = true;
};

}  // namespace vkblr::io
