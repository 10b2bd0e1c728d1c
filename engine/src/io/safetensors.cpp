#include "vkblr/io/safetensors.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/widen.hpp"
#include "vkblr/io/json_input.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"
#include "vkblr/half.hpp"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian: a port needs byte swaps");

namespace vkblr::io {
namespace {

struct DtypeEntry {
  Dtype dtype;
  std::string_view name;
  unsigned bits;
};

constexpr std::array kDtypes = {
    DtypeEntry{Dtype::BOOL, "BOOL", 8},       DtypeEntry{Dtype::U8, "U8", 8},
    DtypeEntry{Dtype::I8, "I8", 8},           DtypeEntry{Dtype::F8_E5M2, "F8_E5M2", 8},
    DtypeEntry{Dtype::F8_E4M3, "F8_E4M3", 8}, DtypeEntry{Dtype::F8_E8M0, "F8_E8M0", 8},
    DtypeEntry{Dtype::F4, "F4", 4},           DtypeEntry{Dtype::F6_E2M3, "F6_E2M3", 6},
    DtypeEntry{Dtype::F6_E3M2, "F6_E3M2", 6}, DtypeEntry{Dtype::I16, "I16", 16},
    DtypeEntry{Dtype::U16, "U16", 16},        DtypeEntry{Dtype::F16, "F16", 16},
    DtypeEntry{Dtype::BF16, "BF16", 16},      DtypeEntry{Dtype::I32, "I32", 32},
    DtypeEntry{Dtype::U32, "U32", 32},        DtypeEntry{Dtype::F32, "F32", 32},
    DtypeEntry{Dtype::I64, "I64", 64},        DtypeEntry{Dtype::U64, "U64", 64},
    DtypeEntry{Dtype::F64, "F64", 64},
};

const DtypeEntry& entry_of(Dtype dtype) {
  for (const auto& e : kDtypes) {
    if (e.dtype == dtype) return e;
  }
  fail("safetensors: dtype enumerator {} has no entry", static_cast<int>(dtype));
}

std::string known_dtypes() {
  std::string s;
  for (const auto& e : kDtypes) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

// "[4096, 1024]"; a shape of a great many dimensions is cut short ("…").
std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (s.size() > kExcerptBytes) {
      s += ", …";
      break;
    }
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

// Elements of `shape`, or nullopt when the product overflows u64.
std::optional<std::uint64_t> checked_element_count(const std::vector<std::uint64_t>& shape) {
  std::uint64_t count = 1;
  for (const std::uint64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
    count *= d;
  }
  return count;
}

// Bytes that `count` elements of `dtype` fill, or nullopt when they do not
// fill whole bytes or overflow.
std::optional<std::uint64_t> byte_count(Dtype dtype, std::uint64_t count) {
  const std::uint64_t bits = dtype_bits(dtype);
  if (count > std::numeric_limits<std::uint64_t>::max() / bits || count * bits % 8 != 0) return std::nullopt;
  return count * bits / 8;
}

constexpr std::uint64_t kMaxHeaderBytes = 100ull << 20;  // as the reference implementation
// The header object, a tensor entry, its shape or data_offsets array.
constexpr std::size_t kMaxHeaderDepth = 3;
// tensor_list() names at most this many (a model shard has hundreds).
constexpr std::size_t kMaxListedTensors = 1000;

// `name` and every value quoted from the header are cut short (excerpt);
// messages whose arguments take work are built only on failure.
TensorInfo parse_entry(const std::string& path, const std::string& full_name, const nlohmann::json& j) {
  const std::string name = excerpt(full_name);
  if (!j.is_object()) fail("{}: header entry '{}' is {}, not an object", path, name, json_excerpt(j));
  const auto dtype_it = j.find("dtype");
  const auto shape_it = j.find("shape");
  const auto offsets_it = j.find("data_offsets");
  require(dtype_it != j.end() && shape_it != j.end() && offsets_it != j.end(),
          "{}: tensor '{}' lacks one of \"dtype\", \"shape\", \"data_offsets\"", path, name);
  require(dtype_it->is_string(), "{}: tensor '{}' has a dtype that is not a string", path, name);
  const auto& dtype_str = dtype_it->get_ref<const std::string&>();
  const auto dtype = parse_dtype(dtype_str);
  if (!dtype)
    fail("{}: tensor '{}' has unknown dtype '{}' (known: {})", path, name, excerpt(dtype_str), known_dtypes());
  TensorInfo info;
  info.name = full_name;
  info.dtype = *dtype;
  require(shape_it->is_array(), "{}: tensor '{}' has a shape that is not an array", path, name);
  for (const auto& d : *shape_it) {
    if (!d.is_number_unsigned()) {
      fail("{}: tensor '{}' has shape {}: dimensions must be non-negative integers", path, name,
           json_excerpt(*shape_it));
    }
    info.shape.push_back(d.get<std::uint64_t>());
  }
  if (!offsets_it->is_array() || offsets_it->size() != 2 || !(*offsets_it)[0].is_number_unsigned() ||
      !(*offsets_it)[1].is_number_unsigned()) {
    fail("{}: tensor '{}' has data_offsets {}: want [begin, end], non-negative integers", path, name,
         json_excerpt(*offsets_it));
  }
  info.begin = (*offsets_it)[0].get<std::uint64_t>();
  info.end = (*offsets_it)[1].get<std::uint64_t>();
  require(info.begin <= info.end, "{}: tensor '{}' has data_offsets [{}, {}]: begin after end", path, name,
          info.begin, info.end);
  const auto count = checked_element_count(info.shape);
  const auto bytes = count ? byte_count(info.dtype, *count) : std::nullopt;
  if (!bytes) {
    fail("{}: tensor '{}' has shape {} of {}: not a whole number of bytes, or too large", path, name,
         shape_text(info.shape), dtype_str);
  }
  if (*bytes != info.end - info.begin) {
    fail("{}: tensor '{}' is {} {}: {} bytes, but its data_offsets [{}, {}] hold {} bytes", path, name, dtype_str,
         shape_text(info.shape), *bytes, info.begin, info.end, info.end - info.begin);
  }
  return info;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const nlohmann::json& j) {
  if (!j.is_object()) fail("{}: __metadata__ is {}, not an object of strings", path, json_excerpt(j));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) fail("{}: __metadata__ '{}' is {}, not a string", path, excerpt(key), json_excerpt(value));
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// The byte ranges must tile [0, data_bytes) exactly.
void check_layout(const std::string& path, const std::vector<TensorInfo>& tensors, std::uint64_t data_bytes) {
  for (const auto& t : tensors) {
    if (t.end > data_bytes) {
      fail(
          "{}: tensor '{}' has data_offsets [{}, {}] past the end of the data ({} bytes): the file is truncated "
          "or corrupt",
          path, excerpt(t.name), t.begin, t.end, data_bytes);
    }
  }
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : tensors) by_offset.push_back(&t);
  std::ranges::sort(by_offset, [](const TensorInfo* a, const TensorInfo* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  std::uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* t : by_offset) {
    if (previous != nullptr && t->begin < previous->end) {
      fail("{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", path, excerpt(previous->name), previous->begin,
           previous->end, excerpt(t->name), t->begin, t->end);
    }
    require(t->begin == covered, "{}: data bytes [{}, {}) belong to no tensor", path, covered, t->begin);
    covered = t->end;
    previous = t;
  }
  require(covered == data_bytes, "{}: data bytes [{}, {}) after the last tensor belong to no tensor", path, covered,
          data_bytes);
}

template <class T>
std::vector<T> bytes_as(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

std::string_view dtype_name(Dtype dtype) { return entry_of(dtype).name; }

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const auto& e : kDtypes) {
    if (e.name == name) return e.dtype;
  }
  return std::nullopt;
}

unsigned dtype_bits(Dtype dtype) { return entry_of(dtype).bits; }

std::uint64_t TensorInfo::element_count() const { return checked_element_count(shape).value_or(0); }

std::string TensorInfo::describe() const {
  return excerpt(name) + " " + std::string(dtype_name(dtype)) + " " + shape_text(shape);
}

SafetensorsReader::SafetensorsReader(std::string path) : file_(std::move(path)) {
  const std::string& p = file_.path();
  require(file_.size() >= 8, "{}: truncated: {} bytes, but a safetensors file starts with an 8-byte header length", p,
          file_.size());
  std::array<std::byte, 8> length_bytes{};
  file_.read_at(0, length_bytes, "the header length");
  std::uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, length_bytes.data(), 8);
  require(header_bytes <= file_.size() - 8,
          "{}: header length {} is past the end of the file ({} bytes): truncated, or not a safetensors file", p,
          header_bytes, file_.size());
  require(header_bytes <= kMaxHeaderBytes, "{}: header length {} is absurd (over {} bytes): not a safetensors file?",
          p, header_bytes, kMaxHeaderBytes);
  std::string header(header_bytes, '\0');
  file_.read_at(8, std::as_writable_bytes(std::span(header)), "the header");
  require(!header.empty() && header[0] == '{', "{}: the header does not start with '{{': not a safetensors file?", p);
  const nlohmann::json j = parse_untrusted_json(header, kMaxHeaderDepth, p + ": header");
  require(j.is_object(), "{}: the header is not a JSON object", p);
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      metadata_ = parse_metadata(p, value);
    } else {
      tensors_.push_back(parse_entry(p, key, value));
    }
  }
  data_start_ = 8 + header_bytes;
  check_layout(p, tensors_, file_.size() - data_start_);
}

const TensorInfo* SafetensorsReader::find(std::string_view name) const {
  const auto it = std::ranges::find(tensors_, name, &TensorInfo::name);
  return it == tensors_.end() ? nullptr : &*it;
}

std::string SafetensorsReader::tensor_list() const {
  std::string s;
  for (std::size_t i = 0; i < tensors_.size() && i < kMaxListedTensors; ++i) s += "\n  " + tensors_[i].describe();
  if (tensors_.size() > kMaxListedTensors) s += std::format("\n  ... and {} more", tensors_.size() - kMaxListedTensors);
  return s;
}

const TensorInfo& SafetensorsReader::tensor(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (t == nullptr) {
    if (tensors_.empty()) fail("{} has no tensor '{}': it holds no tensors", path(), name);
    fail("{} has no tensor '{}'; its tensors are:{}", path(), name, tensor_list());
  }
  return *t;
}

const TensorInfo& SafetensorsReader::choose(std::string_view name) const {
  if (!name.empty()) return tensor(name);
  require(!tensors_.empty(), "{} holds no tensors", path());
  if (tensors_.size() != 1) {
    fail("{} holds {} tensors: name one (--tensor NAME); its tensors are:{}", path(), tensors_.size(), tensor_list());
  }
  return tensors_.front();
}

std::vector<std::byte> SafetensorsReader::read_bytes(const TensorInfo& tensor) {
  std::vector<std::byte> bytes(tensor.end - tensor.begin);
  file_.read_at(data_start_ + tensor.begin, bytes, "tensor '" + excerpt(tensor.name) + "'");
  return bytes;
}

void SafetensorsReader::check_widens(const TensorInfo& tensor) const {
  if (!widens_to_f32(tensor.dtype)) {
    fail("{}: tensor '{}' is {}: vkblr-fit reads F32, F16, BF16 or F64 values", path(), excerpt(tensor.name),
         dtype_name(tensor.dtype));
  }
}

void SafetensorsReader::check_matrix(const TensorInfo& tensor) const {
  if (tensor.shape.size() != 2) {
    fail("{}: tensor '{}' has shape {} ({}-D); a matrix must be 2-D", path(), excerpt(tensor.name),
         shape_text(tensor.shape), tensor.shape.size());
  }
  check_widens(tensor);
}

std::vector<float> SafetensorsReader::read_f32(const TensorInfo& tensor) {
  check_widens(tensor);
  return widen_to_f32(tensor.dtype, read_bytes(tensor));
}

Matrix SafetensorsReader::read_matrix(const TensorInfo& tensor) {
  check_matrix(tensor);
  Matrix m;
  m.rows = tensor.shape[0];
  m.cols = tensor.shape[1];
  m.values = read_f32(tensor);
  return m;
}

std::vector<std::uint32_t> SafetensorsReader::read_u32(const TensorInfo& tensor) {
  if (tensor.dtype != Dtype::U32) {
    fail("{}: tensor '{}' is {}, not U32", path(), excerpt(tensor.name), dtype_name(tensor.dtype));
  }
  return bytes_as<std::uint32_t>(read_bytes(tensor));
}

std::vector<std::uint16_t> SafetensorsReader::read_u16(const TensorInfo& tensor) {
  if (tensor.dtype != Dtype::U16) {
    fail("{}: tensor '{}' is {}, not U16", path(), excerpt(tensor.name), dtype_name(tensor.dtype));
  }
  return bytes_as<std::uint16_t>(read_bytes(tensor));
}

void SafetensorsWriter::add_bytes(std::string name, Dtype dtype, std::vector<std::uint64_t> shape,
                                  std::span<const std::byte> bytes) {
  require(name != "__metadata__", "safetensors: '__metadata__' is reserved, not a tensor name");
  require(std::ranges::none_of(entries_, [&](const Entry& e) { return e.info.name == name; }),
          "safetensors: tensor '{}' added twice", name);
  const auto count = checked_element_count(shape);
  const auto want = count ? byte_count(dtype, *count) : std::nullopt;
  require(want.has_value() && *want == bytes.size(), "safetensors: tensor '{}' is {} {} but has {} bytes", name,
          dtype_name(dtype), shape_text(shape), bytes.size());
  const std::uint64_t begin = entries_.empty() ? 0 : entries_.back().info.end;
  entries_.push_back({TensorInfo{std::move(name), dtype, std::move(shape), begin, begin + bytes.size()},
                      keep_data_ ? std::vector<std::byte>(bytes.begin(), bytes.end()) : std::vector<std::byte>{}});
}

void SafetensorsWriter::add_f32(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values) {
  add_bytes(std::move(name), Dtype::F32, std::move(shape), std::as_bytes(values));
}

void SafetensorsWriter::add_f16(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values) {
  const auto halves = to_f16(values);
  add_bytes(std::move(name), Dtype::F16, std::move(shape), std::as_bytes(std::span(halves)));
}

void SafetensorsWriter::add_u32(std::string name, std::vector<std::uint64_t> shape,
                                std::span<const std::uint32_t> values) {
  add_bytes(std::move(name), Dtype::U32, std::move(shape), std::as_bytes(values));
}

void SafetensorsWriter::add_u16(std::string name, std::vector<std::uint64_t> shape,
                                std::span<const std::uint16_t> values) {
  add_bytes(std::move(name), Dtype::U16, std::move(shape), std::as_bytes(values));
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }

std::string SafetensorsWriter::header_with(const std::map<std::string, std::string>& metadata) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (const auto& e : entries_) {
    header[e.info.name] = {{"dtype", std::string(dtype_name(e.info.dtype))},
                           {"shape", e.info.shape},
                           {"data_offsets", nlohmann::json::array({e.info.begin, e.info.end})}};
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');  // the data starts 8-byte aligned
  const std::uint64_t header_bytes = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &header_bytes, 8);
  return out + text;
}

void SafetensorsWriter::append_data(const AppendBytes& append) const {
  require(keep_data_, "safetensors: this writer keeps no tensor bytes (its header only)");
  for (const auto& e : entries_) append(e.bytes);
}

void SafetensorsWriter::append_data_to(std::string& out) const {
  out.reserve(out.size() + data_bytes());
  append_data([&](std::span<const std::byte> piece) {
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  });
}

std::string SafetensorsWriter::serialize() const {
  std::string out = header();
  append_data_to(out);
  return out;
}

void SafetensorsWriter::write(const std::string& path) const { write_file_atomic(path, serialize()); }

}  // namespace vkblr::io
