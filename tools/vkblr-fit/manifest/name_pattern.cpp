#include "vkblr-fit/manifest/name_pattern.hpp"

#include <charconv>

#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

std::vector<std::string_view> split_at_stars(std::string_view pattern) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= pattern.size(); ++i) {
    if (i == pattern.size() || pattern[i] == '*') {
      parts.push_back(pattern.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<std::vector<std::string>> match_name_pattern(std::string_view pattern, std::string_view name) {
  const std::vector<std::string_view> parts = split_at_stars(pattern);
  if (parts.size() == 1) {
    if (name != pattern) return std::nullopt;
    return std::vector<std::string>{};
  }
  // the literal parts between the stars: the first a prefix, the last a
  // suffix, the middle ones each at its first place after the one before
  // (which leaves every star its shortest capture, left to right)
  const std::string_view first = parts.front(), last = parts.back();
  if (name.size() < first.size() + last.size() || !name.starts_with(first) || !name.ends_with(last)) {
    return std::nullopt;
  }
  const std::size_t end = name.size() - last.size();
  std::size_t at = first.size();
  std::vector<std::string> captures;
  for (std::size_t i = 1; i + 1 < parts.size(); ++i) {
    const std::size_t found = name.substr(0, end).find(parts[i], at);
    if (found == std::string_view::npos) return std::nullopt;
    captures.emplace_back(name.substr(at, found - at));
    at = found + parts[i].size();
  }
  captures.emplace_back(name.substr(at, end - at));
  return captures;
}

std::string expand_name_template(std::string_view text, std::string_view tensor,
                                 const std::vector<std::string>& captures, std::string_view what) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') fail("{}: '{}': a '}}' without '{{'", what, excerpt(text));
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    const std::size_t close = text.find('}', i);
    if (close == std::string_view::npos) fail("{}: '{}': a '{{' without '}}'", what, excerpt(text));
    const std::string_view key = text.substr(i + 1, close - i - 1);
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
    if (key == "tensor") {
      out += tensor;
    } else if (key == "module") {
      out += tensor.ends_with(".weight") ? tensor.substr(0, tensor.size() - 7) : tensor;
    } else if (ec == std::errc{} && end == key.data() + key.size() && !key.empty() && key[0] != '0') {
      require(index <= captures.size(), "{}: '{}': {{{}}} but the pattern has {} '*'", what, excerpt(text), key,
              captures.size());
      out += captures[index - 1];
    } else {
      fail("{}: '{}': unknown placeholder {{{}}} (known: {{tensor}}, {{module}}, {{1}}, {{2}}, ... for the text "
           "each '*' of the pattern matched)",
           what, excerpt(text), excerpt(key));
    }
    i = close;
  }
  return out;
}

bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      // compare the two runs of digits by value: without leading zeros,
      // the longer is larger, else the first differing digit decides
      std::size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      std::size_t si = i, sj = j;
      while (si + 1 < ei && a[si] == '0') ++si;
      while (sj + 1 < ej && b[sj] == '0') ++sj;
      const std::string_view da = a.substr(si, ei - si), db = b.substr(sj, ej - sj);
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if (i < a.size() || j < b.size()) return i == a.size();  // a prefix first
  return a < b;
}

}  // namespace vkblr::fit
