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

// `text` as comma-separated decimal u32 fields, between `min` and `max` of
// them; nothing when it is not.
std::optional<std::vector<std::uint32_t>> numbers(std::string_view text, std::size_t min, std::size_t max) {
  std::vector<std::uint32_t> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::uint32_t v = 0;
    const char* first = text.data() + start;
    const char* last = text.data() + comma;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (first == last || ec != std::errc() || end != last) return std::nullopt;
    out.push_back(v);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  if (out.size() < min || out.size() > max) return std::nullopt;
  return out;
}

std::optional<GemmTile> tile_from_env() {
  constexpr const char* kName = "VKBLR_GEMM_TILE";
  const std::string_view text = env(kName);
  if (text.empty()) return std::nullopt;
  const auto v = numbers(text, 6, 7);
  require(v.has_value(), "{}={}: expected bm,bn,bk,wm,wn,stages[,prefetch]", kName, text);
  const std::uint32_t prefetch = v->size() == 7 ? (*v)[6] : 0;
  return GemmTile{(*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4], (*v)[5], GemmKernel::plain, prefetch};
}

std::optional<ops::GemmF32Tile> f32_tile_from_env() {
  constexpr const char* kName = "VKBLR_GEMM_F32_TILE";
  const std::string_view text = env(kName);
  if (text.empty()) return std::nullopt;
  const auto v = numbers(text, 5, 5);
  require(v.has_value(), "{}={}: expected bm,bn,bk,tm,tn", kName, text);
  return ops::GemmF32Tile{(*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4]};
}

std::optional<std::uint32_t> splits_from_env() {
  constexpr const char* kName = "VKBLR_GEMM_SPLITK";
  const std::string_view text = env(kName);
  if (text.empty()) return std::nullopt;
  const auto v = numbers(text, 1, 1);
  require(v && (*v)[0] >= 1 && (*v)[0] <= kMaxSplits, "{}={}: expected 1..{} split-K layers", kName, text,
          kMaxSplits);
  return (*v)[0];
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

GemmPolicy gemm_policy_from_env() {
  GemmPolicy p;
  p.tile = tile_from_env();
  p.k_splits = splits_from_env();
  p.coopmat = switch_from_env("VKBLR_MM_COOPMAT", p.coopmat);
  p.coopmat2 = switch_from_env("VKBLR_MM_COOPMAT2", p.coopmat2);
  p.bitmap_staging = switch_from_env("VKBLR_MM_BITS", p.bitmap_staging);
  p.word_groups = switch_from_env("VKBLR_MM_WORD_GROUPS", p.word_groups);
  p.f32_tile = f32_tile_from_env();
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
