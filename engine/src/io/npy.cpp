#include "vkblr/io/npy.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <format>
#include <limits>
#include <map>
#include <span>
#include <utility>
#include <string_view>
#include <variant>
#include <vector>

#include "vkblr/io/binary_file.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr/io/widen.hpp"
#include "vkblr/error.hpp"

static_assert(std::endian::native == std::endian::little, "npy '<' data is read as native: a port needs byte swaps");

namespace vkblr::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// numpy's own limit (numpy.lib.format's max_header_size): a float array's
// header is about 120 bytes; a longer one is refused before it is read.
constexpr std::uint32_t kMaxHeaderBytes = 10000;

// A value of the header dict: a string, a bool, or a tuple of integers.
using HeaderValue = std::variant<std::string, bool, std::vector<std::uint64_t>>;

// Parses the dict literal that numpy writes: {'key': value, ...} with
// values 'string', True/False or (int, ...). Throws naming the file; its
// messages quote the header's first kExcerptBytes bytes at most.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  std::map<std::string, HeaderValue> dict() {
    std::map<std::string, HeaderValue> out;
    expect('{');
    while (!accept('}')) {
      std::string key = quoted();
      expect(':');
      out[key] = value();
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) bad("text after the dict", pos_);
    return out;
  }

 private:
  [[noreturn]] void bad(std::string_view what, std::size_t column) const {
    fail("{}: bad .npy header: {} at column {}: {}", path_, what, column, excerpt(text_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) bad(std::format("expected '{}'", c), pos_);
  }
  std::string quoted() {
    skip_space();
    if (pos_ == text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) bad("expected a string", pos_);
    const char quote = text_[pos_++];
    const std::size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) bad("unterminated string", pos_ - 1);
    std::string s(text_.substr(pos_, close - pos_));
    pos_ = close + 1;
    return s;
  }
  std::uint64_t integer() {
    skip_space();
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const auto digit = static_cast<std::uint64_t>(text_[pos_++] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) bad("a dimension overflows", start);
      v = v * 10 + digit;
    }
    if (pos_ == start) bad("expected a non-negative integer", start);
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2's long suffix
    return v;
  }
  HeaderValue value() {
    skip_space();
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) return quoted();
    if (text_.substr(pos_).starts_with("True")) {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_).starts_with("False")) {
      pos_ += 5;
      return false;
    }
    if (!accept('(')) bad("expected a string, True, False or a tuple", pos_);
    std::vector<std::uint64_t> tuple;
    while (!accept(')')) {
      tuple.push_back(integer());
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return tuple;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

template <class T>
const T& field(const std::map<std::string, HeaderValue>& dict, const char* key, const char* kind,
               const std::string& path) {
  const auto it = dict.find(key);
  require(it != dict.end(), "{}: bad .npy header: no '{}'", path, key);
  const T* v = std::get_if<T>(&it->second);
  require(v != nullptr, "{}: bad .npy header: '{}' is not {}", path, key, kind);
  return *v;
}

// What every accepted .npy file has, whatever its dtype and rank: the
// dtype without its byte-order mark, the shape, where the data starts.
struct NpyLayout {
  std::string descr;  // as the header gives it ('<f4')
  std::vector<std::uint64_t> shape;
  std::uint64_t data_offset = 0;

  // descr without its byte-order mark ('f4')
  std::string_view type() const {
    std::string_view t = descr;
    if (t.starts_with('<') || t.starts_with('=') || t.starts_with('|')) t.remove_prefix(1);
    return t;
  }
};

// The dtypes a reader accepts (bytes per element by type) and how its
// messages name what it wants.
struct NpyWant {
  std::span<const std::pair<std::string_view, std::size_t>> types;  // {"f4", 4}, ...
  std::string_view types_text;                                      // "'<f4', '<f2' or '<f8'"
  std::string_view example;                                         // "'<f4'"
};

// Bytes per element of `type` among `want`'s; 0 when it is not one of them.
std::size_t item_bytes(const NpyWant& want, std::string_view type) {
  for (const auto& [name, bytes] : want.types) {
    if (name == type) return bytes;
  }
  return 0;
}

// Reads and checks the magic, version, header and dict; refuses another
// dtype than `want`'s, big-endian data and Fortran order. The shape and the
// data's size are the caller's to check (check_data_size).
NpyLayout parse_layout(InputFile& file, const NpyWant& want) {
  const std::string& path = file.path();
  std::array<std::byte, 8> prefix{};
  require(file.size() >= prefix.size(), "{}: truncated: {} bytes, not a .npy file", path, file.size());
  file.read_at(0, prefix, "the magic string");
  require(std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) == 0,
          "{}: not a .npy file (it does not start with \"\\x93NUMPY\")", path);
  const auto major = static_cast<unsigned>(prefix[6]), minor = static_cast<unsigned>(prefix[7]);
  require((major == 1 || major == 2 || major == 3) && minor == 0,
          "{}: .npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)", path, major, minor);
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::array<std::byte, 4> length_field{};
  file.read_at(8, std::span(length_field).first(length_bytes), "the header length");
  std::uint32_t header_bytes = 0;
  std::memcpy(&header_bytes, length_field.data(), length_bytes);
  const std::uint64_t header_start = 8 + length_bytes;
  require(header_bytes <= file.size() - header_start,
          "{}: header length {} is past the end of the file ({} bytes): truncated?", path, header_bytes, file.size());
  require(header_bytes <= kMaxHeaderBytes, "{}: header length {} is over numpy's limit of {} bytes: not a float array?",
          path, header_bytes, kMaxHeaderBytes);
  std::string header(header_bytes, '\0');
  file.read_at(header_start, std::as_writable_bytes(std::span(header)), "the header");

  const auto dict = HeaderParser(header, path).dict();
  for (const auto& [key, value] : dict) {
    require(key == "descr" || key == "fortran_order" || key == "shape", "{}: bad .npy header: unknown key '{}'", path,
            excerpt(key));
  }
  NpyLayout layout;
  layout.descr = field<std::string>(dict, "descr", "a string (a structured dtype?)", path);
  const bool fortran = field<bool>(dict, "fortran_order", "True or False", path);
  layout.shape = field<std::vector<std::uint64_t>>(dict, "shape", "a tuple", path);

  require(!layout.descr.starts_with('>'), "{}: dtype '{}' is big-endian: save the array as little-endian ({})",
          path, excerpt(layout.descr), want.example);
  require(item_bytes(want, layout.type()) != 0, "{}: dtype '{}' is not supported (want {})", path,
          excerpt(layout.descr), want.types_text);
  require(!fortran, "{}: the array is in Fortran order: save it in C order (numpy.ascontiguousarray)", path);
  layout.data_offset = header_start + header_bytes;
  return layout;
}


// Refuses data shorter or longer than `elements` items of `item` bytes;
// `shape_text` is the shape as messages show it ("(6, 4)").
void check_data_size(const InputFile& file, const NpyLayout& layout, std::uint64_t elements, std::size_t item,
                     std::string_view shape_text) {
  const std::string& path = file.path();
  require(elements <= std::numeric_limits<std::uint64_t>::max() / item, "{}: shape {} is too large", path,
          shape_text);
  const std::uint64_t data_bytes = elements * item;
  const std::uint64_t present = file.size() - layout.data_offset;
  require(present >= data_bytes, "{}: truncated: shape {} of '{}' needs {} data bytes, the file has {}", path,
          shape_text, layout.descr, data_bytes, present);
  require(present == data_bytes, "{}: {} bytes follow the array's data: not a single .npy array?", path,
          present - data_bytes);
}

constexpr std::array<std::pair<std::string_view, std::size_t>, 3> kFloatTypes{{{"f4", 4}, {"f2", 2}, {"f8", 8}}};
constexpr NpyWant kFloatWant{kFloatTypes, "'<f4', '<f2' or '<f8'", "'<f4'"};

constexpr std::array<std::pair<std::string_view, std::size_t>, 5> kTokenTypes{
    {{"u2", 2}, {"u4", 4}, {"i4", 4}, {"i8", 8}, {"u8", 8}}};
constexpr NpyWant kTokenWant{kTokenTypes, "'<u2', '<u4', '<u8', '<i4' or '<i8'", "'<u4'"};

NpyHeader parse_header(InputFile& file) {
  const std::string& path = file.path();
  const NpyLayout layout = parse_layout(file, kFloatWant);
  const auto& shape = layout.shape;
  require(shape.size() == 2, "{}: the array is {}-D; a matrix must be 2-D", path, shape.size());
  const std::size_t item = item_bytes(kFloatWant, layout.type());
  require(shape[1] == 0 || shape[0] <= std::numeric_limits<std::uint64_t>::max() / shape[1] / item,
          "{}: shape ({}, {}) is too large", path, shape[0], shape[1]);
  check_data_size(file, layout, shape[0] * shape[1], item, std::format("({}, {})", shape[0], shape[1]));

  NpyHeader h;
  h.rows = shape[0];
  h.cols = shape[1];
  h.dtype = item == 4 ? Dtype::F32 : item == 2 ? Dtype::F16 : Dtype::F64;
  h.data_offset = layout.data_offset;
  h.file_bytes = file.size();
  return h;
}

}  // namespace

NpyHeader read_npy_header(const std::string& path) {
  InputFile file(path);
  return parse_header(file);
}

Matrix read_npy_matrix(const std::string& path) {
  InputFile file(path);
  const NpyHeader h = parse_header(file);
  std::vector<std::byte> bytes(h.file_bytes - h.data_offset);
  file.read_at(h.data_offset, bytes, "the data");
  Matrix m;
  m.rows = h.rows;
  m.cols = h.cols;
  m.values = widen_to_f32(h.dtype, bytes);
  return m;
}

}  // namespace vkblr::io

namespace vkblr::io {

namespace {

// The ids of a token file whose layout was parsed with kTokenWant: its
// shape (1-D or 2-D, every side > 0) and data size checked, every id
// converted and checked against the vocabulary.
TokenArray read_tokens(InputFile& file, const NpyLayout& layout, std::uint32_t vocab_size) {
  const std::string& path = file.path();
  const auto& shape = layout.shape;
  const bool matrix = shape.size() == 2;
  const std::string shape_text = matrix ? std::format("({}, {})", shape[0], shape[1]) : std::format("({},)", shape[0]);
  require(matrix ? shape[0] > 0 && shape[1] > 0 : shape[0] > 0, "{}: no token ids (shape {})", path, shape_text);
  require(!matrix || shape[0] <= std::numeric_limits<std::uint64_t>::max() / shape[1], "{}: shape {} is too large",
          path, shape_text);
  const std::uint64_t count = matrix ? shape[0] * shape[1] : shape[0];
  const std::size_t item = item_bytes(kTokenWant, layout.type());
  check_data_size(file, layout, count, item, shape_text);

  const bool unsigned_type = layout.type().starts_with('u');
  TokenArray out;
  out.shape = shape;
  out.ids.resize(count);
  // Read in pieces: the file's integers are converted as they come.
  constexpr std::uint64_t kPiece = 1u << 20;
  std::vector<std::byte> bytes;
  for (std::uint64_t first = 0; first < count; first += kPiece) {
    const std::uint64_t n = std::min(kPiece, count - first);
    bytes.resize(n * item);
    file.read_at(layout.data_offset + first * item, bytes, "the token ids");
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* at = bytes.data() + i * item;
      std::int64_t value = 0;  // every accepted type fits, but u8 above 2^63 reads as negative: refused too
      if (item == 2) {
        std::uint16_t v;
        std::memcpy(&v, at, 2);
        value = v;
      } else if (item == 4 && unsigned_type) {
        std::uint32_t v;
        std::memcpy(&v, at, 4);
        value = v;
      } else if (item == 4) {
        std::int32_t v;
        std::memcpy(&v, at, 4);
        value = v;
      } else {
        std::memcpy(&value, at, 8);
      }
      const std::uint64_t k = first + i;
      if (value < 0 || value >= static_cast<std::int64_t>(vocab_size)) {
        fail("{}: token {}{} is {}, outside the vocabulary of {} (0 to {})", path, k,
             matrix ? std::format(" (row {}, column {})", k / shape[1], k % shape[1]) : std::string(),
             unsigned_type && item == 8 ? std::format("{}", static_cast<std::uint64_t>(value))
                                        : std::format("{}", value),
             vocab_size, vocab_size - 1);
      }
      out.ids[k] = static_cast<std::uint32_t>(value);
    }
  }
  return out;
}

}  // namespace

std::vector<std::uint32_t> read_npy_token_ids(const std::string& path, std::uint32_t vocab_size) {
  InputFile file(path);
  const NpyLayout layout = parse_layout(file, kTokenWant);
  require(layout.shape.size() == 1, "{}: the array is {}-D; token ids must be 1-D", path, layout.shape.size());
  return read_tokens(file, layout, vocab_size).ids;
}

TokenArray read_npy_token_array(const std::string& path, std::uint32_t vocab_size) {
  InputFile file(path);
  const NpyLayout layout = parse_layout(file, kTokenWant);
  require(layout.shape.size() == 1 || layout.shape.size() == 2,
          "{}: the array is {}-D; token ids must be 1-D (a stream) or 2-D (rows of tokens)", path,
          layout.shape.size());
  return read_tokens(file, layout, vocab_size);
}

}  // namespace vkblr::io
