// widen_to_f32 (vkblr/io/widen.hpp) against hand-computed values:
// subnormals, ±0, ±Inf and NaN of every dtype, F64's rounding at f32's
// range ends and at ties, unaligned input, and refusals naming the op.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "support/fit_files.hpp"
#include "vkblr/io/widen.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

namespace {

// The bit patterns of widen_to_f32's output for `stored` values of `dtype`,
// read from one byte past an aligned start.
template <class T>
std::vector<std::uint32_t> widened_bits(Dtype dtype, const std::vector<T>& stored) {
  std::vector<std::byte> bytes(1 + stored.size() * sizeof(T));
  if (!stored.empty()) std::memcpy(bytes.data() + 1, stored.data(), stored.size() * sizeof(T));
  std::vector<float> out(stored.size());
  widen_to_f32(dtype, std::span(bytes).subspan(1), out);
  std::vector<std::uint32_t> bits;
  for (const float v : out) bits.push_back(std::bit_cast<std::uint32_t>(v));
  return bits;
}

std::uint32_t bits_of(float v) { return std::bit_cast<std::uint32_t>(v); }

}  // namespace

TEST_CASE("widen_to_f32: F32 bit for bit, NaN payloads and subnormals kept", "[fit]") {
  const std::vector<std::uint32_t> stored = {0x3f800000u, 0x80000000u, 0x00000001u, 0x7f800000u,
                                             0xff800000u, 0x7f800001u /* signalling NaN */, 0xffc12345u};
  std::vector<float> values;
  for (const std::uint32_t b : stored) values.push_back(std::bit_cast<float>(b));
  CHECK(widened_bits(Dtype::F32, values) == stored);
}

TEST_CASE("widen_to_f32: F16 exactly, its subnormals normal f32s", "[fit]") {
  const std::vector<std::uint16_t> stored = {
      0x3c00,  // 1
      0xc000,  // -2
      0x0001,  // 2^-24, the smallest subnormal
      0x03ff,  // 1023·2^-24, the largest subnormal
      0x0400,  // 2^-14, the smallest normal
      0x7bff,  // 65504, the largest finite
      0x8000,  // -0
      0x7c00,  // +Inf
      0xfc00,  // -Inf
      0x7e00,  // quiet NaN
      0x7c01,  // signalling NaN, payload 1
  };
  CHECK(widened_bits(Dtype::F16, stored) ==
        std::vector<std::uint32_t>{bits_of(1.0f), bits_of(-2.0f), bits_of(std::ldexp(1.0f, -24)),
                                   bits_of(1023 * std::ldexp(1.0f, -24)), bits_of(std::ldexp(1.0f, -14)),
                                   bits_of(65504.0f), 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                   0x7f802000u});
}

TEST_CASE("widen_to_f32: BF16 exactly, the top half of the f32", "[fit]") {
  const std::vector<std::uint16_t> stored = {0x3f80, 0xc0a0, 0x0001, 0x8000, 0x7f80, 0xff80, 0x7fc1};
  CHECK(widened_bits(Dtype::BF16, stored) == std::vector<std::uint32_t>{0x3f800000u, 0xc0a00000u, 0x00010000u,
                                                                        0x80000000u, 0x7f800000u, 0xff800000u,
                                                                        0x7fc10000u});
}

TEST_CASE("widen_to_f32: F64 rounded to nearest even, past f32's range to ±Inf or ±0", "[fit]") {
  const double max = std::numeric_limits<float>::max();  // its ulp is 2^104
  const double min_sub = std::ldexp(1.0, -149);
  const std::vector<double> stored = {
      0.1,                        // nearest f32: 0x3dcccccd
      1 + std::ldexp(1.0, -24),   // a tie between 1 and 1 + 2^-23: the even one, 1
      1 + 3 * std::ldexp(1.0, -24),  // a tie between 1 + 2^-23 and 1 + 2^-22: 1 + 2^-22
      max + std::ldexp(1.0, 102),  // under half an ulp past the largest: the largest
      max + std::ldexp(1.0, 103),  // half an ulp past: the tie goes to infinity
      1e300, -1e300,
      3 * min_sub,                // exact subnormal
      min_sub / 2,                // a tie between 0 and 2^-149: 0
      -min_sub * 0.75,            // nearer 2^-149: -2^-149
      -1e-300,                    // -0
      std::numeric_limits<double>::infinity(),
  };
  CHECK(widened_bits(Dtype::F64, stored) ==
        std::vector<std::uint32_t>{0x3dcccccdu, bits_of(1.0f), bits_of(1 + std::ldexp(1.0f, -22)), 0x7f7fffffu,
                                   0x7f800000u, 0x7f800000u, 0xff800000u, 3u, 0u, 0x80000001u, 0x80000000u,
                                   0x7f800000u});
  const std::vector<std::uint32_t> nan = widened_bits(Dtype::F64, std::vector{std::numeric_limits<double>::quiet_NaN()});
  CHECK(std::isnan(std::bit_cast<float>(nan[0])));
}

TEST_CASE("widen_to_f32: no values from no bytes; other dtypes and sizes refused", "[fit]") {
  std::vector<float> none;
  widen_to_f32(Dtype::F64, {}, none);
  std::vector<std::byte> bytes(8);
  std::vector<float> two(2);
  CHECK_THAT(vkt::error_of([&] { widen_to_f32(Dtype::I32, bytes, two); }),
             ContainsSubstring("widen_to_f32") && ContainsSubstring("I32"));
  CHECK_THAT(vkt::error_of([&] { widen_to_f32(Dtype::F64, bytes, two); }),
             ContainsSubstring("widen_to_f32: 8 bytes of F64 for 2 values"));
  CHECK_THAT(vkt::error_of([&] { widen_to_f32(Dtype::F16, std::span(bytes).first(5), two); }),
             ContainsSubstring("5 bytes of F16"));
  CHECK(widens_to_f32(Dtype::BF16));
  CHECK(!widens_to_f32(Dtype::U16));
}
