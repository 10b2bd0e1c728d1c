#include "vkblr/io/json_input.hpp"

#include <format>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "vkblr/io/excerpt.hpp"
#include "vkblr/error.hpp"

namespace vkblr::io {
namespace {

using Json = nlohmann::json;

// nlohmann's message without its "[json.exception.parse_error.101] " tag,
// cut short (its "last read: '...'" may quote a whole long token).
std::string parser_message(const Json::exception& e) {
  std::string_view text = e.what();
  if (text.starts_with("[json.exception.")) {
    const std::size_t close = text.find("] ");
    if (close != std::string_view::npos) text.remove_prefix(close + 2);
  }
  return excerpt(text);
}

// Streams through the text, refusing too deep nesting and repeated keys;
// builds nothing. Each open object keeps the keys seen so far.
class StructureCheck final : public nlohmann::json_sax<Json> {
 public:
  StructureCheck(std::size_t max_depth, std::string_view what) : max_depth_(max_depth), what_(what) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    enter();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& name) override {
    if (!keys_.back().insert(name).second) fail("{}: key '{}' appears twice in one object", what_, excerpt(name));
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    enter();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const Json::exception& e) override {
    fail("{}: bad JSON: {}", what_, parser_message(e));
  }

 private:
  void enter() {
    ++depth_;
    require(depth_ <= max_depth_, "{}: JSON nested more than {} levels deep", what_, max_depth_);
  }

  std::size_t max_depth_;
  std::string_view what_;
  std::size_t depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;
};

// Appends `value` as JSON text until `out` is longer than `limit`. Each
// level appends at least one character, so it recurses at most `limit`
// deep whatever the value's nesting.
void append_json(std::string& out, const Json& value, std::size_t limit) {
  if (out.size() > limit) return;
  switch (value.type()) {
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& element : value) {
        if (out.size() > limit) break;
        if (!first) out += ", ";
        first = false;
        append_json(out, element, limit);
      }
      out += ']';
      break;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, element] : value.items()) {
        if (out.size() > limit) break;
        if (!first) out += ", ";
        first = false;
        append_json(out, Json(key.substr(0, limit + 1)), limit);
        out += ": ";
        append_json(out, element, limit);
      }
      out += '}';
      break;
    }
    case Json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      // A cut inside a UTF-8 sequence is written as U+FFFD, not thrown.
      out += Json(text.substr(0, limit + 1)).dump(-1, ' ', false, Json::error_handler_t::replace);
      break;
    }
    default:
      out += value.dump();
  }
}

}  // namespace

Json parse_untrusted_json(std::string_view text, std::size_t max_depth, std::string_view what) {
  StructureCheck check(max_depth, what);
  require(Json::sax_parse(text.begin(), text.end(), &check), "{}: bad JSON", what);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {  // not expected: the check ran the same parser
    fail("{}: bad JSON: {}", what, parser_message(e));
  }
}

std::string json_excerpt(const Json& value) {
  std::string text;
  append_json(text, value, kExcerptBytes);
  return excerpt(text);
}

std::string_view json_type_phrase(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "not a JSON value";
  }
}

JsonField::JsonField(const Json& value, std::string where, std::string name)
    : value_(&value), where_(std::move(where)), name_(std::move(name)) {}

std::string JsonField::label() const { return name_.empty() ? where_ : std::format("{}: '{}'", where_, name_); }

void JsonField::wrong_type(std::string_view expected) const {
  fail("{} is {} ({}), want {}", label(), json_excerpt(*value_), json_type_phrase(*value_), expected);
}

void JsonField::require_object() const {
  if (!value_->is_object()) wrong_type("an object");
}

JsonField JsonField::operator[](std::string_view key) const {
  require_object();
  const std::string name = name_.empty() ? std::string(key) : std::format("{}.{}", name_, key);
  const auto it = value_->find(key);
  require(it != value_->end(), "{}: '{}' is missing", where_, name);
  return JsonField(*it, where_, name);
}

JsonField JsonField::operator[](std::size_t index) const {
  const std::size_t count = size();
  const std::string name = std::format("{}[{}]", name_, index);
  require(index < count, "{}: '{}' is missing (the array has {} elements)", where_, name, count);
  return JsonField((*value_)[index], where_, name);
}

bool JsonField::contains(std::string_view key) const { return value_->is_object() && value_->contains(key); }

std::size_t JsonField::size() const {
  if (!value_->is_array()) wrong_type("an array");
  return value_->size();
}

std::uint64_t JsonField::u64() const {
  if (value_->is_number_unsigned()) return value_->get<std::uint64_t>();
  if (value_->is_number_integer() && value_->get<std::int64_t>() >= 0) return value_->get<std::uint64_t>();
  wrong_type("an integer in [0, 2^64)");
}

std::uint32_t JsonField::u32() const {
  const bool is_u64 = value_->is_number_unsigned() || (value_->is_number_integer() && value_->get<std::int64_t>() >= 0);
  if (is_u64 && value_->get<std::uint64_t>() <= std::numeric_limits<std::uint32_t>::max()) {
    return static_cast<std::uint32_t>(value_->get<std::uint64_t>());
  }
  wrong_type("an integer in [0, 2^32)");
}

double JsonField::number() const {
  if (value_->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!value_->is_number()) wrong_type("a number (or null for NaN)");
  return value_->get<double>();
}

const std::string& JsonField::string() const {
  if (!value_->is_string()) wrong_type("a string");
  return value_->get_ref<const std::string&>();
}

}  // namespace vkblr::io
