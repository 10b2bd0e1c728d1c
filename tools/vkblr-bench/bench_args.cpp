#include "bench_args.hpp"

#include <charconv>
#include <format>
#include <stdexcept>

#include "vkblr/error.hpp"
#include "vkblr/gemm_policy.hpp"

namespace bench {

std::vector<std::uint32_t> parse_numbers(std::string_view text, char sep, std::size_t min_count,
                                         std::size_t max_count, std::string_view form) {
  std::vector<std::uint32_t> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t end = std::min(text.find(sep, at), text.size());
    const std::string_view field = text.substr(at, end - at);
    // digits only (no sign, space or empty field); from_chars then says
    // whether the number fits 32 bits
    if (field.empty() || field.find_first_not_of("0123456789") != std::string_view::npos) {
      throw std::invalid_argument(std::format("expected {} (unsigned decimal numbers), got '{}': '{}' is not a number",
                                              form, text, field));
    }
    std::uint32_t v = 0;
    if (std::from_chars(field.data(), field.data() + field.size(), v).ec != std::errc{}) {
      throw std::invalid_argument(std::format("{} in '{}' is beyond 32 bits (at most 4294967295)", field, text));
    }
    out.push_back(v);
    if (end == text.size()) break;
    at = end + 1;
  }
  if (out.size() < min_count || out.size() > max_count) {
    throw std::invalid_argument(std::format("expected {}, got '{}' ({} numbers)", form, text, out.size()));
  }
  return out;
}

GemmSize parse_gemm_shape(std::string_view text) {
  const auto v = parse_numbers(text, 'x', 3, 3, "MxNxK");
  const GemmSize s{v[0], v[1], v[2]};
  auto rule = [&](bool ok, std::string_view what) {
    if (!ok) throw std::invalid_argument(std::format("shape {}: {} (the GEMM's rule, vkblr/gemm.hpp)", text, what));
  };
  rule(s[0] >= 1, "m = 0");
  rule(s[1] > 0 && s[1] % 16 == 0, std::format("n = {} is not a positive multiple of 16", s[1]));
  rule(s[2] > 0 && s[2] % 16 == 0, std::format("k = {} is not a positive multiple of 16", s[2]));
  return s;
}

void check_gemm_mode(const GemmSize& shape, std::string_view mode) {
  if (mode != "plane" && mode != "bits_n" && mode != "bits_t" && mode != "plain") {
    throw std::invalid_argument(std::format("mode '{}' is not one of plane, bits_n, bits_t, plain", mode));
  }
  const auto [m, n, k] = shape;
  if (mode == "bits_n" && k % 32 != 0) {
    throw std::invalid_argument(
        std::format("shape {}x{}x{}, mode bits_n: k = {} is not a multiple of 32 (B is read as k/32 words per row)",
                    m, n, k, k));
  }
  if (mode == "bits_t" && n % 32 != 0) {
    throw std::invalid_argument(
        std::format("shape {}x{}x{}, mode bits_t: n = {} is not a multiple of 32 (B is read as n/32 words per row)",
                    m, n, k, n));
  }
}

vkblr::GemmTile parse_gemm_tile(std::string_view text) {
  try {
    return vkblr::parse_gemm_tile(text);
  } catch (const vkblr::Error& e) {
    throw std::invalid_argument(e.what());
  }
}

GemmSize parse_gemm_f32_shape(std::string_view text) {
  const auto v = parse_numbers(text, 'x', 3, 3, "MxNxK");
  for (std::size_t i = 0; i < 3; ++i) {
    if (v[i] == 0) {
      throw std::invalid_argument(std::format("shape {}: {} = 0 (the f32 GEMM's sizes are >= 1)", text, "mnk"[i]));
    }
  }
  return {v[0], v[1], v[2]};
}

vkblr::ops::GemmF32Tile parse_gemm_f32_tile(std::string_view text) {
  try {
    return vkblr::parse_gemm_f32_tile(text);
  } catch (const vkblr::Error& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace bench
