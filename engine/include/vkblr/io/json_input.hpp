// vkblr/io/json_input.hpp — reading JSON that comes from a file: safetensors headers,
// and the JSON that vkblr-fit keeps in metadata strings (a checkpoint's
// state, a result's command line).
//
// parse_untrusted_json first streams through the text with nlohmann's SAX
// parser (which does not recurse) and refuses, before any value is built,
// nesting deeper than a bound and a key that appears twice in one object
// (nlohmann's own parse would keep the last silently). Building, comparing,
// dumping and destroying a parsed value recurse over its nesting, so the
// bound is what keeps them off the end of the stack. (nlohmann's parse
// callback could count the depth too, but its parser then searches the
// enclosing object at every closing brace: quadratic in a header of many
// entries.)
//
// JsonField reads fields of a parsed value with messages that name the file,
// the field and what was expected, where nlohmann's own accessors would
// throw "[json.exception.type_error...]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vkblr::io {

// Nesting allowed in the JSON of metadata strings: vkblr-fit writes at most
// 3 levels (a checkpoint's {"curve": [[step, error], ...]}); 16 leaves room
// for what later versions add, and no more.
inline constexpr std::size_t kMaxMetadataJsonDepth = 16;

// Parses `text`, allowing at most `max_depth` levels of arrays and objects
// (a top-level object is level 1). Throws vkblr::Error:
//   "{what}: bad JSON: {the parser's message, cut short}"
//   "{what}: JSON nested more than {max_depth} levels deep"
//   "{what}: key '{key}' appears twice in one object"
nlohmann::json parse_untrusted_json(std::string_view text, std::size_t max_depth, std::string_view what);

// The JSON text of `value` for a message, cut after about kExcerptBytes
// characters ("…" marks the cut); never builds more text than that.
std::string json_excerpt(const nlohmann::json& value);

// "null", "a boolean", "a number", "a string", "an array", "an object".
std::string_view json_type_phrase(const nlohmann::json& value);

// A value inside parsed JSON and where it is, for messages. `where` names
// the file and the JSON ("ck.ckpt: checkpoint metadata"); the field's name
// grows as it is indexed ("curve[3][1]"). Every accessor throws vkblr::Error
//   "{where}: '{name}' is {excerpt} ({type}), want {what was expected}"
// or "{where}: '{name}' is missing". The referenced value must outlive it.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string where, std::string name = {});

  // The member `key` of an object.
  JsonField operator[](std::string_view key) const;
  // Element `index` of an array.
  JsonField operator[](std::size_t index) const;
  // True when this is an object with a member `key`.
  bool contains(std::string_view key) const;
  // The elements of an array.
  std::size_t size() const;

  // An integer in [0, 2³²) / [0, 2⁶⁴) (not 1.0, not "1").
  std::uint32_t u32() const;
  std::uint64_t u64() const;
  // A number, or null as NaN: vkblr-fit writes NaN and infinity as null.
  double number() const;
  const std::string& string() const;
  // Throws unless this is an object.
  void require_object() const;

  const nlohmann::json& value() const { return *value_; }
  // "{where}: '{name}'" (just `where` at the top).
  std::string label() const;

 private:
  [[noreturn]] void wrong_type(std::string_view expected) const;

  const nlohmann::json* value_;
  std::string where_, name_;
};

}  // namespace vkblr::io
