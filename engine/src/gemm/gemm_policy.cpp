// The GEMM policy: read from the environment, checked, written out.
#include "vkblr/gemm_policy.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <format>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkblr/error.hpp"

namespace vkblr {
namespace {

constexpr std::uint32_t kMaxSplits = 64;

// The variable's value; empty when unset.
std::string_view env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

// `text` as comma-separated unsigned decimal u32 fields, `min` to `max` of
// them. Throws vkblr::Error naming `form` ("bm,bn,bk,tm,tn"), the text and
// the field that is not a number (a sign, a space, an empty field) or is
// beyond 32 bits, or the count.
std::vector<std::uint32_t> decimal_fields(std::string_view text, std::size_t min, std::size_t max,
                                          std::string_view form) {
  std::vector<std::uint32_t> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view field = text.substr(start, comma - start);
    require(!field.empty() && field.find_first_not_of("0123456789") == std::string_view::npos,
            "expected {} (unsigned decimal numbers), got '{}': '{}' is not a number", form, text, field);
    std::uint32_t v = 0;
    require(std::from_chars(field.data(), field.data() + field.size(), v).ec == std::errc(),
            "expected {} (unsigned decimal numbers), got '{}': {} is beyond 32 bits (at most 4294967295)", form,
            text, field);
    out.push_back(v);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  require(out.size() >= min && out.size() <= max, "expected {}, got '{}' ({} numbers)", form, text, out.size());
  return out;
}

// The parse of variable `name`'s value, when set; its errors name it.
template <typename Parse>
auto from_env(const char* name, Parse parse) -> std::optional<decltype(parse(std::string_view()))> {
  const std::string_view text = env(name);
  if (text.empty()) return std::nullopt;
  try {
    return parse(text);
  } catch (const Error& e) {
    fail("{}={}: {}", name, text, e.what());
  }
}

std::optional<std::uint32_t> splits_from_env() {
  constexpr const char* kName = "VKBLR_GEMM_SPLITK";
  const std::string_view text = env(kName);
  if (text.empty()) return std::nullopt;
  std::uint32_t v = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, v);
  require(ec == std::errc() && end == last && v >= 1 && v <= kMaxSplits, "{}={}: expected 1..{} split-K layers",
          kName, text, kMaxSplits);
  return v;
}

// A switch: 0 or 1; unset or empty: `fallback`.
bool switch_from_env(const char* name, bool fallback) {
  const std::string_view text = env(name);
  if (text.empty()) return fallback;
  require(text == "0" || text == "1", "{}={}: expected 0 or 1", name, text);
  return text == "1";
}

std::string tile_fields(const GemmTile& t) {
  return std::format("{},{},{},{},{},{}{}", t.bm, t.bn, t.bk, t.wm, t.wn, t.stages,
                     t.prefetch ? std::format(",{}", t.prefetch) : "");
}

const char* bit(bool on) { return on ? "1" : "0"; }

}  // namespace

GemmTile parse_gemm_tile(std::string_view text) {
  const auto v = decimal_fields(text, 6, 7, "bm,bn,bk,wm,wn,stages[,prefetch]");
  const std::uint32_t prefetch = v.size() == 7 ? v[6] : 0;
  return GemmTile{v[0], v[1], v[2], v[3], v[4], v[5], GemmKernel::plain, prefetch};
}

ops::GemmF32Tile parse_gemm_f32_tile(std::string_view text) {
  const auto v = decimal_fields(text, 5, 5, "bm,bn,bk,tm,tn");
  return ops::GemmF32Tile{v[0], v[1], v[2], v[3], v[4]};
}

GemmPolicy gemm_policy_from_env() {
  GemmPolicy p;
  p.tile = from_env("VKBLR_GEMM_TILE", parse_gemm_tile);
  p.k_splits = splits_from_env();
  p.coopmat = switch_from_env("VKBLR_MM_COOPMAT", p.coopmat);
  p.coopmat2 = switch_from_env("VKBLR_MM_COOPMAT2", p.coopmat2);
  p.bitmap_staging = switch_from_env("VKBLR_MM_BITS", p.bitmap_staging);
  p.word_groups = switch_from_env("VKBLR_MM_WORD_GROUPS", p.word_groups);
  p.f32_tile = from_env("VKBLR_GEMM_F32_TILE", parse_gemm_f32_tile);
  return p;
}

void check_gemm_policy(const GemmPolicy& policy) {
  if (const auto s = policy.k_splits) {
    require(*s >= 1 && *s <= kMaxSplits, "gemm policy: k_splits = {} (1..{}; unset: by shape)", *s, kMaxSplits);
  }
}

std::vector<std::pair<std::string, std::string>> gemm_policy_fields(const GemmPolicy& p) {
  return {{"tile", p.tile ? tile_fields(*p.tile) : "auto"},
          {"k_splits", p.k_splits ? std::to_string(*p.k_splits) : "auto"},
          {"coopmat", bit(p.coopmat)},
          {"coopmat2", bit(p.coopmat2)},
          {"bitmap_staging", bit(p.bitmap_staging)},
          {"word_groups", bit(p.word_groups)},
          {"f32_tile", p.f32_tile ? p.f32_tile->to_string() : "auto"}};
}

std::string to_string(const GemmPolicy& policy) {
  std::string out;
  for (const auto& [name, value] : gemm_policy_fields(policy)) {
    out += std::format("{}{} {}", out.empty() ? "" : ", ", name, value);
  }
  return out;
}

}  // namespace vkblr
